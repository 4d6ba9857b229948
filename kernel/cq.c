// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Verbs: completion queues.
 *
 * A CQ is a ring of struct urdma_cqe plus a doorbell record (struct
 * urdma_cq_db), in pinned user memory for user CQs and in kernel memory,
 * same format, for kernel CQs.  The engine produces CQEs under cq->lock;
 * user space consumes them without entering the kernel; kernel consumers
 * use urdma_poll_cq().
 */
#include <linux/time_namespace.h>
#include <kunit/visibility.h>

#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

/* Bytes per entry of a user CQ created with @flags. */
static u32 urdma_cq_stride(u32 flags)
{
	return flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION ?
	       URDMA_CQE_TS_SIZE : URDMA_CQE_SIZE;
}

static int urdma_cq_user_init(struct urdma_cq *cq, const struct ib_cq_init_attr
			      *attr, struct ib_udata *udata)
{
	struct urdma_ucontext *uctx = urdma_udata_uctx(udata);
	struct urdma_create_cq_resp resp = {};
	struct timespec64 ts_offset = {};
	struct urdma_create_cq_cmd cmd;
	int ret;

	ret = urdma_udata_get_cmd(udata, &cmd, sizeof(cmd), sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.comp_mask ||
	    !urdma_ring_size_ok(cmd.nent, attr->cqe, URDMA_MAX_CQE))
		return -EINVAL;

	ret = urdma_queue_init(uctx, &cq->ring, &cq->db, cmd.buf_addr,
			       cmd.nent, urdma_cq_stride(attr->flags),
			       cmd.db_addr);
	if (ret)
		return ret;
	/* Stamps on the monotonic clock that the creator's vDSO reads. */
	timens_add_monotonic(&ts_offset);
	cq->ts_offset = timespec64_to_ns(&ts_offset);

	resp.cqn = cq->cqn;
	ret = urdma_udata_put_resp(udata, &resp, sizeof(resp));
	if (ret)
		urdma_queue_destroy(&cq->ring, &cq->db);
	return ret;
}

int urdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    urdma_create_cq_attrs_t *attrs)
{
	struct ib_udata *udata = urdma_create_cq_udata(attrs);
	struct urdma_dev *udev = to_udev(ibcq->device);
	struct urdma_cq *cq = to_ucq(ibcq);
	int ret, id;

	/* Timestamps are for user CQs: struct ib_wc has no place for them. */
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION ||
	    (attr->flags && !udata))
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > URDMA_MAX_CQE ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;

	if (atomic_inc_return(&udev->nr_cq) > URDMA_MAX_CQ) {
		ret = -ENOMEM;
		goto err_count;
	}
	id = ida_alloc_max(&udev->cq_ida, URDMA_MAX_CQ - 1, GFP_KERNEL);
	if (id < 0) {
		ret = id;
		goto err_count;
	}
	cq->cqn = id;
	spin_lock_init(&cq->lock);

	if (udata)
		ret = urdma_cq_user_init(cq, attr, udata);
	else
		ret = urdma_queue_init(NULL, &cq->ring, &cq->db, 0,
				       roundup_pow_of_two(attr->cqe),
				       URDMA_CQE_SIZE, 0);
	if (ret)
		goto err_cqn;

	ibcq->cqe = cq->ring.nent;
	return 0;

err_cqn:
	ida_free(&udev->cq_ida, cq->cqn);
err_count:
	atomic_dec(&udev->nr_cq);
	return ret;
}

int urdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibcq->device);
	struct urdma_cq *cq = to_ucq(ibcq);

	urdma_queue_destroy(&cq->ring, &cq->db);
	ida_free(&udev->cq_ida, cq->cqn);
	atomic_dec(&udev->nr_cq);
	return 0;
}

/*
 * Move the CQEs not yet consumed to the start of @new, with @new's
 * first-pass owner bit.  Called with cq->lock held.  @cons is the
 * consumer's index, untrusted for user CQs.
 * Return: the number moved, or -EINVAL if they do not fit.
 */
static int urdma_cq_move_cqes(struct urdma_cq *cq, struct urdma_ring *new,
			      u32 cons)
{
	u32 n = cq->prod - cons, i;

	if (n > cq->ring.nent || n > new->nent)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct urdma_cqe *dst = urdma_ring_entry(new, i);

		memcpy(dst, urdma_ring_entry(&cq->ring, cons + i),
		       cq->ring.stride);
		dst->owner = urdma_ring_phase(new, i);
	}
	return n;
}

/*
 * Before resizing, give the engine a moment (at most half a second) to
 * retire the send WQEs already posted to QPs that complete on @cq, so that
 * the CQEs they produce are counted against the new size rather than
 * overrunning it afterwards.  Hardware is that fast; the engine may lag.
 */
static void urdma_cq_settle(struct urdma_dev *udev, struct urdma_cq *cq)
{
	unsigned long deadline = jiffies + HZ / 2;
	struct urdma_qp *qp;
	unsigned long idx;
	bool busy;

	do {
		busy = false;
		/* A QP seen under the lock is not freed yet (destroy erases first). */
		xa_lock_irq(&udev->qps);
		xa_for_each(&udev->qps, idx, qp) {
			struct urdma_qp_db *db = qp->db.kva;

			if (qp->ibqp.send_cq != &cq->ibcq ||
			    READ_ONCE(qp->attr.qp_state) != IB_QPS_RTS)
				continue;
			if (READ_ONCE(db->sq_prod) != READ_ONCE(db->sq_cons)) {
				busy = true;
				break;
			}
		}
		xa_unlock_irq(&udev->qps);
		if (busy)
			usleep_range(100, 200);
	} while (busy && time_before(jiffies, deadline));
}

int urdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct urdma_ucontext *uctx = urdma_udata_uctx(udata);
	struct urdma_resize_cq_resp resp = {};
	struct urdma_cq *cq = to_ucq(ibcq);
	struct urdma_cq_db *db = cq->db.kva;
	struct urdma_resize_cq_cmd cmd;
	struct urdma_ring new = {}, old;
	int moved, ret;
	u32 cons;

	if (cqe < 1 || cqe > URDMA_MAX_CQE)
		return -EINVAL;

	if (udata) {
		ret = urdma_udata_get_cmd(udata, &cmd, sizeof(cmd),
					  sizeof(cmd));
		if (ret)
			return ret;
		if (cmd.comp_mask ||
		    !urdma_ring_size_ok(cmd.nent, cqe, URDMA_MAX_CQE))
			return -EINVAL;
		ret = urdma_ring_init_user(uctx, &new, cmd.buf_addr, cmd.nent,
					   cq->ring.stride);
	} else {
		ret = urdma_ring_init_kernel(&new, roundup_pow_of_two(cqe),
					     URDMA_CQE_SIZE);
	}
	if (ret)
		return ret;
	urdma_cq_settle(to_udev(ibcq->device), cq);

	/* Lock order: mem_lock -> cq->lock. */
	if (udata)
		mutex_lock(&uctx->mem_lock);
	spin_lock_irq(&cq->lock);
	cons = udata ? READ_ONCE(db->cons) : cq->kcons;
	moved = urdma_cq_move_cqes(cq, &new, cons);
	if (moved >= 0) {
		urdma_ring_swap(uctx, &cq->ring, &new, &old);
		cq->prod = moved;
		cq->kcons = 0;
		WRITE_ONCE(db->cons, 0);
	}
	spin_unlock_irq(&cq->lock);
	if (udata)
		mutex_unlock(&uctx->mem_lock);

	if (moved < 0) {
		urdma_ring_destroy(&new);
		return moved;
	}
	urdma_ring_destroy(&old);
	ibcq->cqe = cq->ring.nent;

	resp.moved = moved;
	return urdma_udata_put_resp(udata, &resp, sizeof(resp));
}

int urdma_cqe_to_wc_opcode(u8 opcode)
{
	switch (opcode) {
	case URDMA_CQE_SEND:
		return IB_WC_SEND;
	case URDMA_CQE_RDMA_WRITE:
		return IB_WC_RDMA_WRITE;
	case URDMA_CQE_RDMA_READ:
		return IB_WC_RDMA_READ;
	case URDMA_CQE_COMP_SWAP:
		return IB_WC_COMP_SWAP;
	case URDMA_CQE_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case URDMA_CQE_BIND_MW:
		return IB_WC_BIND_MW;
	case URDMA_CQE_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case URDMA_CQE_REG_MR:
		return IB_WC_REG_MR;
#if URDMA_HAVE_FLUSH_ATOMIC_WRITE
	case URDMA_CQE_FLUSH:
		return IB_WC_FLUSH;
	case URDMA_CQE_ATOMIC_WRITE:
		return IB_WC_ATOMIC_WRITE;
#endif
	case URDMA_CQE_RECV:
		return IB_WC_RECV;
	case URDMA_CQE_RECV_RDMA_IMM:
		return IB_WC_RECV_RDMA_WITH_IMM;
	default:
		return -EINVAL;
	}
}
EXPORT_SYMBOL_IF_KUNIT(urdma_cqe_to_wc_opcode);

static void urdma_cqe_to_wc(struct urdma_dev *udev, const struct urdma_cqe *cqe,
			    struct ib_wc *wc)
{
	int opcode = urdma_cqe_to_wc_opcode(cqe->opcode);

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	if (opcode < 0) {
		/* The engine never writes one; keep the consumer sane. */
		wc->status = IB_WC_GENERAL_ERR;
		opcode = IB_WC_SEND;
	}
	wc->opcode = opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->qp = xa_load(&udev->qps, cqe->qp_num);
	wc->src_qp = cqe->src_qp;
	wc->pkey_index = cqe->pkey_index;
	wc->sl = cqe->sl;
	wc->port_num = 1;
	if (cqe->flags & URDMA_CQE_GRH)
		wc->wc_flags |= IB_WC_GRH;
	if (cqe->flags & URDMA_CQE_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = (__force __be32)cqe->ex;
	} else if (cqe->flags & URDMA_CQE_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = cqe->ex;
	}
	BUILD_BUG_ON((int)URDMA_CQE_NET_IPV4 != (int)RDMA_NETWORK_IPV4 ||
		     (int)URDMA_CQE_NET_IPV6 != (int)RDMA_NETWORK_IPV6);
	wc->network_hdr_type = (cqe->flags & URDMA_CQE_NET_MASK) >>
			       URDMA_CQE_NET_SHIFT;
	wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
}

/* Kernel CQs only; user CQs are polled in user space. */
int urdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct urdma_dev *udev = to_udev(ibcq->device);
	struct urdma_cq *cq = to_ucq(ibcq);
	struct urdma_cq_db *db = cq->db.kva;
	unsigned long flags;
	int n;

	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num_entries; n++) {
		struct urdma_cqe *cqe = urdma_ring_entry(&cq->ring, cq->kcons);

		/* Pairs with the engine's release of owner. */
		if ((smp_load_acquire(&cqe->owner) & 1) !=
		    urdma_ring_phase(&cq->ring, cq->kcons))
			break;
		urdma_cqe_to_wc(udev, cqe, &wc[n]);
		cq->kcons++;
	}
	WRITE_ONCE(db->cons, cq->kcons);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/* Kernel CQs: arm in the doorbell record, as user space does. */
int urdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct urdma_cq *cq = to_ucq(ibcq);
	struct urdma_cq_db *db = cq->db.kva;
	unsigned long irqflags;
	u32 arm, bit;
	int ret = 0;

	bit = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      URDMA_CQ_ARM_SOLICITED : URDMA_CQ_ARM_NEXT;

	spin_lock_irqsave(&cq->lock, irqflags);
	arm = READ_ONCE(db->arm);
	arm += 1 << URDMA_CQ_ARM_SN_SHIFT;
	WRITE_ONCE(db->arm, (arm & ~(URDMA_CQ_ARM_NEXT |
				     URDMA_CQ_ARM_SOLICITED)) | bit);
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->prod != cq->kcons)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}
