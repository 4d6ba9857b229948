// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Posting work requests on kernel QPs and SRQs (GSI, kernel ULPs).  A WR
 * becomes a WQE in the ring, in the format user space writes, and the
 * doorbell record's producer index is released after it.  User QPs post in
 * user space (liburdma); they come here only to kick a sleeping engine.
 */
#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

static int urdma_wr_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_RDMA_WRITE:
		return URDMA_WQE_RDMA_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return URDMA_WQE_RDMA_WRITE_IMM;
	case IB_WR_SEND:
		return URDMA_WQE_SEND;
	case IB_WR_SEND_WITH_IMM:
		return URDMA_WQE_SEND_IMM;
	case IB_WR_RDMA_READ:
		return URDMA_WQE_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return URDMA_WQE_ATOMIC_CMP_SWP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return URDMA_WQE_ATOMIC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return URDMA_WQE_LOCAL_INV;
	case IB_WR_SEND_WITH_INV:
		return URDMA_WQE_SEND_INV;
	case IB_WR_REG_MR:
		return URDMA_WQE_REG_MR;
#if URDMA_HAVE_FLUSH_ATOMIC_WRITE
	case IB_WR_ATOMIC_WRITE:
		return URDMA_WQE_ATOMIC_WRITE;
	case IB_WR_FLUSH:
		return URDMA_WQE_FLUSH;
#endif
	default:
		return -EINVAL;
	}
}

static void urdma_write_sges(struct urdma_sge *dst, const struct ib_sge *src,
			     int num)
{
	int i;

	for (i = 0; i < num; i++) {
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
}

/* Kernel inline data: the SGEs' addresses are kernel virtual addresses. */
static int urdma_write_inline(struct urdma_qp *qp, struct urdma_send_wqe *wqe,
			      const struct ib_send_wr *wr)
{
	u8 *dst = (u8 *)(wqe + 1);
	u32 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > qp->cap.max_inline_data - len)
			return -EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	wqe->inline_len = len;
	return 0;
}

static int urdma_write_send_wqe(struct urdma_qp *qp,
				struct urdma_send_wqe *wqe,
				const struct ib_send_wr *wr)
{
	int op = urdma_wr_opcode(wr->opcode);
	const struct urdma_wqe_op *o = urdma_wqe_op(op);

	if (op < 0 || !urdma_wqe_op_allowed(op, qp->ibqp.qp_type))
		return -EINVAL;
	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge)
		return -EINVAL;
	if ((wr->send_flags & IB_SEND_INLINE) && !(o->flags & URDMA_WOP_INLINE))
		return -EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = op;
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sq_sig_all)
		wqe->flags |= URDMA_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= URDMA_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= URDMA_WQE_FENCE;
	if (o->flags & URDMA_WOP_IMM)
		wqe->ex = (__force u32)wr->ex.imm_data;
	else if (o->flags & URDMA_WOP_INV)
		wqe->ex = wr->ex.invalidate_rkey;

	if (op == URDMA_WQE_REG_MR) {
		const struct ib_reg_wr *reg = reg_wr(wr);

		wqe->reg.iova = reg->mr->iova;
		wqe->reg.length = reg->mr->length;
		wqe->reg.mr_key = reg->mr->lkey;
		wqe->reg.new_key = reg->key;
		wqe->reg.access = reg->access;
		return 0;
	}
	if (o->flags & URDMA_WOP_LOCAL)
		return 0;
	if (o->flags & URDMA_WOP_ATOMIC) {
		wqe->atomic.remote_addr = atomic_wr(wr)->remote_addr;
		wqe->atomic.rkey = atomic_wr(wr)->rkey;
		wqe->atomic.compare_add = atomic_wr(wr)->compare_add;
		wqe->atomic.swap = atomic_wr(wr)->swap;
	} else if (o->remote_access) {
		/* urdma_wqe_rdma and _atomic start alike (ATOMIC_WRITE). */
		wqe->rdma.remote_addr = rdma_wr(wr)->remote_addr;
		wqe->rdma.rkey = rdma_wr(wr)->rkey;
	}

	if (urdma_is_ud(qp)) {
		wqe->ud.remote_qpn = ud_wr(wr)->remote_qpn;
		wqe->ud.remote_qkey = ud_wr(wr)->remote_qkey;
		wqe->ud.ah_num = to_uah(ud_wr(wr)->ah)->ahn;
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		wqe->flags |= URDMA_WQE_INLINE;
		return urdma_write_inline(qp, wqe, wr);
	}
	wqe->num_sge = wr->num_sge;
	urdma_write_sges((struct urdma_sge *)(wqe + 1), wr->sg_list,
			 wr->num_sge);
	return 0;
}

int urdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct urdma_qp *qp = to_uqp(ibqp);
	struct urdma_qp_db *db = qp->db.kva;
	enum ib_qp_state state;
	unsigned long flags;
	int ret = 0;

	/*
	 * An XRC_TGT QP is a kernel QP that user space reaches through
	 * uverbs' post_send; it sends nothing.
	 */
	if (ibqp->qp_type == IB_QPT_XRC_TGT) {
		*bad_wr = wr;
		return wr ? -EINVAL : 0;
	}
	/*
	 * User QPs post in user space; a zero-WR post from there is the kick
	 * that wakes the engine.  WRs are never accepted through here.
	 */
	if (qp->sq.umem) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		urdma_engine_kick_user(qp->eng, true);
		return 0;
	}
	state = READ_ONCE(qp->attr.qp_state);
	if (state < IB_QPS_RTS) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->sq_lock, flags);
	for (; wr; wr = wr->next) {
		if (qp->sq_prod - READ_ONCE(db->sq_cons) >= qp->sq.nent) {
			ret = -ENOMEM;
			break;
		}
		ret = urdma_write_send_wqe(qp, urdma_ring_entry(&qp->sq,
								qp->sq_prod),
					   wr);
		if (ret)
			break;
		qp->sq_prod++;
	}
	/* The WQEs before the index that publishes them. */
	smp_store_release(&db->sq_prod, qp->sq_prod);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	urdma_engine_notify(qp->eng);
	if (ret)
		*bad_wr = wr;
	return ret;
}

static int urdma_write_recv_wqe(struct urdma_ring *ring, u32 idx, u32 max_sge,
				const struct ib_recv_wr *wr)
{
	struct urdma_recv_wqe *wqe = urdma_ring_entry(ring, idx);

	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	urdma_write_sges((struct urdma_sge *)(wqe + 1), wr->sg_list,
			 wr->num_sge);
	return 0;
}

/**
 * urdma_post_recv_ring - post receive WRs to a kernel RQ or SRQ ring
 * @ring: the ring
 * @prod: the poster's producer index; the caller holds the queue's lock
 * @db_prod: the doorbell record's producer index, published here
 * @db_cons: the record's consumer index, written by the engine
 * @max_sge: SGEs the ring's stride holds
 * @wr: the chain of WRs
 * @bad_wr: set to the first WR not posted
 *
 * Return: 0, -ENOMEM when the ring is full or -EINVAL for too many SGEs.
 */
int urdma_post_recv_ring(struct urdma_ring *ring, u32 *prod, u32 *db_prod,
			 const u32 *db_cons, u32 max_sge,
			 const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	int ret = 0;

	for (; wr; wr = wr->next) {
		if (*prod - READ_ONCE(*db_cons) >= ring->nent) {
			ret = -ENOMEM;
			break;
		}
		ret = urdma_write_recv_wqe(ring, *prod, max_sge, wr);
		if (ret)
			break;
		(*prod)++;
	}
	/* The WQEs before the index that publishes them. */
	smp_store_release(db_prod, *prod);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int urdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct urdma_qp *qp = to_uqp(ibqp);
	struct urdma_qp_db *db = qp->db.kva;
	unsigned long flags;
	int ret;

	if (qp->sq.umem) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		urdma_engine_kick_user(qp->eng, false);
		return 0;
	}
	/* (No RQ: a QP with an SRQ, and XRC's.) */
	if (!qp->rq.nent || READ_ONCE(qp->attr.qp_state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->rq_lock, flags);
	ret = urdma_post_recv_ring(&qp->rq, &qp->rq_prod, &db->rq_prod,
				   &db->rq_cons, qp->cap.max_recv_sge, wr,
				   bad_wr);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	/* Receives matter to the engine only in ERROR (to flush them). */
	if (READ_ONCE(qp->attr.qp_state) == IB_QPS_ERR)
		urdma_engine_notify(qp->eng);
	return ret;
}
