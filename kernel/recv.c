// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine's receive stage: take a receive WQE (from the RQ or the
 * SRQ), deliver a message into it (local path; the wire path calls
 * urdma_recv_msg() too), and complete it.
 *
 * Locks: rq_lock (a QP's RQ), srq->lock and cq->lock.  The engine never
 * holds two of them at once: a receive WQE is taken under its queue's lock,
 * which is dropped before its CQE is pushed under the CQ's.  (Resizing a
 * ring nests them under the context's mem_lock mutex: cq.c, srq.c.)  All
 * three are spinlocks taken with interrupts off, because kernel consumers
 * post and poll from any context.  No lock is held while data is copied.
 */
#include <linux/atomic.h>
#include <linux/ip.h>
#include <net/ip.h>

#include "urdma.h"
#include "exec.h"

/* ---- receive WQEs ----------------------------------------------------------- */

/* The bytes the SGEs of the receive WQE in the scratch area describe. */
static u64 urdma_rwqe_room(const struct urdma_scratch *s, u32 max_sge)
{
	const struct urdma_sge *sge = (const void *)(&s->rwqe.hdr + 1);
	u32 i, n = min_t(u32, s->rwqe.hdr.num_sge, max_sge);
	u64 room = 0;

	for (i = 0; i < n; i++)
		room += sge[i].length;
	return room;
}

/* A receive queue: a QP's RQ or an SRQ, and where its indexes are. */
struct urdma_rq_ref {
	struct urdma_ring *ring;
	spinlock_t *lock;	/* the queue's: srq->lock or qp->rq_lock */
	u32 *cons;
	u32 *db_cons;
	u32 *db_prod;
	struct urdma_srq *srq;
	u32 gen;	/* the SRQ's resizes at the peek */
};

static int urdma_rq_ref(struct urdma_qp *qp, struct urdma_srq *srq,
			struct urdma_rq_ref *rq, u32 *max_sge)
{
	rq->srq = srq;
	if (srq) {
		struct urdma_srq_db *db = srq->db.kva;

		rq->ring = &srq->ring;
		rq->lock = &srq->lock;
		rq->cons = &srq->cons;
		rq->db_cons = &db->cons;
		rq->db_prod = &db->prod;
		*max_sge = srq->max_sge;
	} else {
		struct urdma_qp_db *db = qp->db.kva;

		rq->ring = &qp->rq;
		rq->lock = &qp->rq_lock;
		rq->cons = &qp->rq_cons;
		rq->db_cons = &db->rq_cons;
		rq->db_prod = &db->rq_prod;
		*max_sge = qp->cap.max_recv_sge;
		if (!rq->ring->nent)	/* XRC: a message that names no SRQ */
			return -EINVAL;
	}
	return 0;
}

/*
 * Copy the receive WQE at the head of @rq into the scratch area, and leave
 * it there: *@slot is its index, for urdma_rq_commit().  Return: as for
 * urdma_take_recv().
 */
static int urdma_rq_peek(struct urdma_engine *eng, struct urdma_rq_ref *rq,
			 u32 max_sge, u64 need, u32 *slot)
{
	struct urdma_scratch *s = eng->scratch;
	unsigned long flags;
	int ret = 0;
	u32 prod;

	spin_lock_irqsave(rq->lock, flags);
	/* Pairs with the poster's release: WQEs before the index. */
	prod = smp_load_acquire(rq->db_prod);
	*slot = *rq->cons;
	if (rq->srq)
		rq->gen = rq->srq->resizes;
	if (prod == *slot) {
		ret = -EAGAIN;
	} else if (prod - *slot > rq->ring->nent) {
		ret = -EINVAL;
	} else {
		memcpy(s->rwqe.raw, urdma_ring_entry(rq->ring, *slot),
		       rq->ring->stride);
		if (need && s->rwqe.hdr.num_sge <= max_sge &&
		    urdma_rwqe_room(s, max_sge) < need)
			ret = -EMSGSIZE;
	}
	spin_unlock_irqrestore(rq->lock, flags);
	return ret;
}

/*
 * Take the WQE urdma_rq_peek() copied from @slot.  Return: false if it is
 * gone: another engine took it (an SRQ, or a UD QP's RQ, has many senders).
 */
static bool urdma_rq_commit(struct urdma_rq_ref *rq, u32 slot)
{
	struct urdma_srq *srq = rq->srq;
	bool limit_event = false;
	unsigned long flags;
	u32 prod;

	spin_lock_irqsave(rq->lock, flags);
	/* A resize restarts the indexes at 0: the same slot, another WQE. */
	if (*rq->cons != slot || (srq && srq->resizes != rq->gen)) {
		spin_unlock_irqrestore(rq->lock, flags);
		return false;
	}
	(*rq->cons)++;
	/* The copy is taken: the slot may be reused. */
	smp_store_release(rq->db_cons, *rq->cons);
	/* Only a count (for the limit event): no WQE is read behind it. */
	prod = READ_ONCE(*rq->db_prod);
	if (srq && srq->limit && prod - *rq->cons < srq->limit) {
		srq->limit = 0;
		limit_event = true;
	}
	spin_unlock_irqrestore(rq->lock, flags);

	if (limit_event && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = srq->ibsrq.device,
			.element.srq = &srq->ibsrq,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return true;
}

/**
 * urdma_take_recv - take the next receive WQE of @qp (its RQ or an SRQ)
 * @eng: the engine; the WQE is copied into its scratch area
 * @qp: the receiving QP
 * @srq: the SRQ to take it from: @qp's, or the XRC SRQ a message names;
 *	NULL: @qp's RQ
 * @max_sge: set to the SGEs a WQE of that queue may hold
 * @need: if not 0, bytes the WQE must hold (a UD message with its GRH)
 *
 * A UD message that a WQE cannot hold is dropped and leaves the WQE where
 * it is, as a lost datagram would: a sender, any sender with the Q_Key,
 * must not be able to fail the receiver's QP (or its WQEs) with it.
 *
 * Return: 0; -EAGAIN if there is none; -EINVAL if the ring's producer
 * index is garbage; -EMSGSIZE if the WQE is smaller than @need.
 */
int urdma_take_recv(struct urdma_engine *eng, struct urdma_qp *qp,
		    struct urdma_srq *srq, u32 *max_sge, u64 need)
{
	struct urdma_rq_ref rq;
	u32 slot;
	int ret;

	ret = urdma_rq_ref(qp, srq, &rq, max_sge);
	while (!ret) {
		ret = urdma_rq_peek(eng, &rq, *max_sge, need, &slot);
		if (!ret && urdma_rq_commit(&rq, slot))
			break;
	}
	return ret;
}

/*
 * Is the receive WQE copied from its ring well formed for a queue whose
 * WQEs hold @max_sge SGEs?  (Its keys are checked later.)  The one check,
 * for the local path and the wire alike, as urdma_wqe_valid() is for send
 * WQEs: reserved fields must be zero, so that they can gain a meaning.
 */
bool urdma_rwqe_valid(const struct urdma_recv_wqe *rwqe, u32 max_sge)
{
	return rwqe->num_sge <= max_sge && !rwqe->reserved_48 &&
	       !rwqe->reserved_50 && !rwqe->reserved_60;
}

/* The SRQ of @qp, if it has one. */
struct urdma_srq *urdma_qp_srq(const struct urdma_qp *qp)
{
	return qp->ibqp.srq ? to_usrq(qp->ibqp.srq) : NULL;
}

/*
 * A receive completion at the responder, for a WQE taken from @srq (NULL:
 * the RQ): to the XRC SRQ's CQ, or the QP's receive CQ.
 */
void urdma_complete_recv(struct urdma_engine *eng, struct urdma_qp *qp,
			 struct urdma_srq *srq, struct urdma_cqe *cqe,
			 bool solicited)
{
	struct urdma_cq *cq = srq && srq->cq ? srq->cq :
			      to_ucq(qp->ibqp.recv_cq);

	cqe->qp_num = qp->ibqp.qp_num;
	/* In ERROR before the consumer can see why. */
	if (cqe->status != IB_WC_SUCCESS)
		urdma_qp_set_error(qp);
	if (!urdma_cq_push(eng, cq, cqe, solicited))
		urdma_qp_set_error(qp);
}

/* The 40 bytes a UD receive starts with: a GRH, or 20 zeros and IPv4. */
void urdma_build_grh(u8 *grh, const struct urdma_av *av, u32 len)
{
	u32 udp_len = sizeof(struct udphdr) + 12 + 8 + len + 4;
	struct iphdr *ip = (struct iphdr *)(grh + 20);
	bool ipv6 = av->net_type != RDMA_NETWORK_IPV4;

	memset(grh, 0, URDMA_GRH_LEN);
	urdma_put_ip(ipv6 ? grh : grh + 20, av, ipv6, av->traffic_class,
		     udp_len);
	if (!ipv6)
		ip->check = ip_fast_csum((u8 *)ip, ip->ihl);
}

/*
 * The receive WQE urdma_rq_peek() copied, for message @m: its fields, its
 * keys (in PD @pdn), its room, and the pages the message will write and
 * read, all before it is taken.  *@ndst: the scatter list, in s->dst.
 * Return: IB_WC_SUCCESS, the receiver's error, or URDMA_WC_ODP_WAIT.
 */
static u8 urdma_recv_check(struct urdma_engine *eng, struct urdma_dev *rdev,
			   u32 pdn, u32 max_sge, const struct urdma_msg *m,
			   int *ndst)
{
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_recv_wqe *rwqe = &s->rwqe.hdr;
	u64 need = (m->grh ? URDMA_GRH_LEN : 0) + (m->src ? m->len : 0);
	u64 room;
	u8 status;

	if (!urdma_rwqe_valid(rwqe, max_sge))
		return IB_WC_LOC_QP_OP_ERR;
	status = urdma_lkey_sgl(rdev, pdn, (const struct urdma_sge *)(rwqe + 1),
				rwqe->num_sge, IB_ACCESS_LOCAL_WRITE, s->dst,
				ndst, &room);
	if (status)
		return status;
	if (need > room)
		return IB_WC_LOC_LEN_ERR;
	return urdma_ready_status(urdma_sgl_ready(s->dst, *ndst, need, true) ?:
				  urdma_sgl_ready(m->src, m->nsrc,
						  m->src ? m->len : 0, false));
}

/*
 * Message @m into the taken WQE's scatter list (@ndst entries in s->dst),
 * and the rest of its CQE.  The pages were found in this pass: they are
 * still there.
 */
static void urdma_recv_place(struct urdma_engine *eng,
			     const struct urdma_msg *m, int ndst,
			     struct urdma_cqe *cqe)
{
	struct urdma_sg *dst = eng->scratch->dst;

	if (m->grh) {
		struct urdma_sg grh = { .kva = (void *)m->grh,
					.len = URDMA_GRH_LEN };

		__urdma_copy(dst, ndst, &grh, 1, URDMA_GRH_LEN);
		urdma_sgl_skip(dst, ndst, URDMA_GRH_LEN);
		cqe->flags |= URDMA_CQE_GRH;
		cqe->flags |= m->net_type << URDMA_CQE_NET_SHIFT;
		cqe->sl = m->sl;
	}
	if (m->src && m->len)
		__urdma_copy(dst, ndst, m->src, m->nsrc, m->len);
	cqe->byte_len = (m->grh ? URDMA_GRH_LEN : 0) + m->len;
	cqe->flags |= m->cqe_flags;
	cqe->ex = m->ex;
}

/**
 * urdma_recv_msg - deliver a message that consumes a receive WQE
 * @eng: the engine
 * @rqp: the receiving QP
 * @rdev: its device
 * @m: the message: SEND*, or the immediate of RDMA_WRITE_WITH_IMM
 *
 * The receive WQE is taken only once the message can land whole: when the
 * pages of an ODP receive buffer (or of the data, on the local path) are
 * not there yet, it stays in its queue and the message waits.
 *
 * Return: the requester's status (RC only; unreliable senders do not
 * learn of the receiver's errors), -EAGAIN for an RNR NAK, -EMSGSIZE for
 * a UD message dropped because the receive WQE could not hold it, or
 * -EBUSY while ODP pages are faulted in (RC; nothing was taken or
 * written).
 */
int urdma_recv_msg(struct urdma_engine *eng, struct urdma_qp *rqp,
		   struct urdma_dev *rdev, const struct urdma_msg *m)
{
	struct urdma_scratch *s = eng->scratch;
	struct urdma_cqe cqe = {};
	struct urdma_srq *srq = m->srq ?: urdma_qp_srq(rqp);
	/* An XRC SRQ's PD checks its WQEs' keys (its QP has none). */
	u32 pdn = m->srq ? m->srq->pdn : urdma_qp_pdn(rqp);
	u32 max_sge, slot;
	struct urdma_rq_ref rq;
	int ndst, ret;
	u8 status;

	ret = urdma_rq_ref(rqp, srq, &rq, &max_sge);
again:
	if (!ret)
		ret = urdma_rq_peek(eng, &rq, max_sge,
				    m->grh ? URDMA_GRH_LEN + m->len : 0,
				    &slot);
	if (ret == -EMSGSIZE)
		return ret;	/* UD: dropped */
	if (ret == -EAGAIN)
		return m->rc ? -EAGAIN : IB_WC_SUCCESS;
	if (ret) {
		/* The responder's ring is garbage: it fails, not us. */
		urdma_qp_fatal(rqp);
		return m->rc ? IB_WC_REM_OP_ERR : IB_WC_SUCCESS;
	}

	cqe.wr_id = s->rwqe.hdr.wr_id;
	cqe.src_qp = m->src_qp;
	cqe.opcode = m->cqe_opcode;
	status = urdma_recv_check(eng, rdev, pdn, max_sge, m, &ndst);
	/*
	 * Pages it needs are faulted in.  A reliable sender waits for them;
	 * an unreliable message is lost, as on the wire, so that a receiver
	 * cannot hold its sender up.
	 */
	if (status == URDMA_WC_ODP_WAIT)
		return m->rc ? -EBUSY : IB_WC_SUCCESS;
	if (status)
		goto fail;
	if (!urdma_rq_commit(&rq, slot))
		goto again;	/* another engine took it */
	/*
	 * SEND_WITH_INV (local path): its key goes with the WQE taken; a
	 * bad key completes the WQE in error, as on the wire.
	 */
	if (m->invalidate && !urdma_invalidate(rqp, pdn, m->ex, true)) {
		cqe.status = IB_WC_REM_INV_REQ_ERR;
		urdma_complete_recv(eng, rqp, srq, &cqe, false);
		return IB_WC_REM_INV_REQ_ERR;
	}
	urdma_recv_place(eng, m, ndst, &cqe);
	urdma_complete_recv(eng, rqp, srq, &cqe, m->solicited);
	return IB_WC_SUCCESS;

fail:
	/* The WQE completes with the receiver's error. */
	if (!urdma_rq_commit(&rq, slot)) {
		ret = 0;
		goto again;
	}
	cqe.status = status;
	urdma_complete_recv(eng, rqp, srq, &cqe, false);
	if (!m->rc)
		return IB_WC_SUCCESS;
	return status == IB_WC_LOC_LEN_ERR ? IB_WC_REM_INV_REQ_ERR :
					     IB_WC_REM_OP_ERR;
}

/* A message on the local path: from the WQE in the scratch area. */
int urdma_deliver(struct urdma_engine *eng, struct urdma_qp *qp,
		  const struct urdma_peer *peer,
		  const struct urdma_send_wqe *wqe, struct urdma_sg *src,
		  int nsrc, u64 len)
{
	struct urdma_msg m = {
		.src = src,
		.nsrc = nsrc,
		.len = len,
		.src_qp = qp->ibqp.qp_num,
		.cqe_opcode = wqe->opcode == URDMA_WQE_RDMA_WRITE_IMM ?
			      URDMA_CQE_RECV_RDMA_IMM : URDMA_CQE_RECV,
		.solicited = wqe->flags & URDMA_WQE_SOLICITED,
		.rc = urdma_is_reliable(qp),
		.srq = peer->srq,
	};
	int ret;

	if (urdma_is_ud(qp)) {
		urdma_build_grh(eng->scratch->grh, &peer->av, len);
		m.grh = eng->scratch->grh;
		m.net_type = peer->av.net_type;
		m.sl = peer->av.sl;
	}
	if (wqe->opcode == URDMA_WQE_SEND_IMM ||
	    wqe->opcode == URDMA_WQE_RDMA_WRITE_IMM) {
		m.cqe_flags = URDMA_CQE_IMM;
		m.ex = wqe->ex;
	} else if (wqe->opcode == URDMA_WQE_SEND_INV) {
		m.cqe_flags = URDMA_CQE_INV;
		m.ex = wqe->ex;
		m.invalidate = true;
	}
	ret = urdma_recv_msg(eng, peer->qp, peer->dev, &m);
	return ret == -EMSGSIZE ? IB_WC_SUCCESS : ret;	/* UD: lost */
}
