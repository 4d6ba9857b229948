// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Verbs: shared receive queues.  An SRQ is a ring of receive WQEs and a
 * doorbell record (struct urdma_srq_db).  Setting srq_limit arms the limit
 * event, which the engine raises once when fewer WQEs than the limit are
 * left, disarming it (IBTA 10.2.9.4).
 *
 * An XRC SRQ belongs to an XRC domain and has its own CQ.  No QP holds it:
 * the requester names it in each WQE (xrc_srqn), and the XRC_TGT QP that
 * takes the message hands it the SRQ of that number, if the SRQ is of the
 * QP's domain (urdma_xrc_srq()).  Its PD checks the keys of the message.
 */
#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

static int urdma_srq_user_init(struct urdma_srq *srq,
			       const struct ib_srq_init_attr *init,
			       struct ib_udata *udata)
{
	struct urdma_ucontext *uctx = urdma_udata_uctx(udata);
	struct urdma_create_srq_resp resp = {};
	struct urdma_create_srq_cmd cmd;
	int ret;

	ret = urdma_udata_get_cmd(udata, &cmd, sizeof(cmd),
				  offsetofend(typeof(cmd), stride));
	if (ret)
		return ret;
	if (cmd.comp_mask || cmd.reserved_e0 ||
	    !urdma_ring_size_ok(cmd.nent, init->attr.max_wr,
				URDMA_MAX_SRQ_WR) ||
	    !urdma_stride_ok(cmd.stride, urdma_recv_stride(init->attr.max_sge)))
		return -EINVAL;

	ret = urdma_queue_init(uctx, &srq->ring, &srq->db, cmd.buf_addr,
			       cmd.nent, cmd.stride, cmd.db_addr);
	if (ret)
		return ret;

	resp.srqn = srq->srqn;
	ret = urdma_udata_put_resp(udata, &resp, sizeof(resp));
	if (ret)
		urdma_queue_destroy(&srq->ring, &srq->db);
	return ret;
}

int urdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibsrq->device);
	struct urdma_srq *srq = to_usrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	int ret;

	if (init->srq_type == IB_SRQT_XRC) {
		if (!init->ext.xrc.xrcd || !init->ext.cq)
			return -EINVAL;
		srq->xrcd = init->ext.xrc.xrcd;
		srq->cq = to_ucq(init->ext.cq);
	} else if (init->srq_type != IB_SRQT_BASIC) {
		return -EOPNOTSUPP;
	}
	if (attr->max_wr < 1 || attr->max_wr > URDMA_MAX_SRQ_WR ||
	    attr->max_sge > URDMA_MAX_SRQ_SGE)
		return -EINVAL;

	if (atomic_inc_return(&udev->nr_srq) > URDMA_MAX_SRQ) {
		ret = -ENOMEM;
		goto err_count;
	}
	/*
	 * Reserved (NULL) until it is ready: lookups do not see it.  Numbers
	 * are handed out cyclically, from 1: an XRC requester that still
	 * names a destroyed SRQ does not soon reach a new one, and a WQE
	 * that names none (0) reaches none.
	 */
	ret = xa_alloc_cyclic_irq(&udev->srqs, &srq->srqn, NULL,
				  XA_LIMIT(1, URDMA_MAX_SRQN), &udev->next_srqn,
				  GFP_KERNEL);
	if (ret < 0)
		goto err_count;
	spin_lock_init(&srq->lock);
	srq->pdn = to_upd(ibsrq->pd)->pdn;
	srq->serial = atomic64_inc_return(&udev->qp_serials);

	if (udata)
		ret = urdma_srq_user_init(srq, init, udata);
	else
		ret = urdma_queue_init(NULL, &srq->ring, &srq->db, 0,
				       roundup_pow_of_two(attr->max_wr),
				       urdma_recv_stride(attr->max_sge), 0);
	if (ret)
		goto err_srqn;

	srq->max_sge = urdma_recv_stride_sges(srq->ring.stride);
	/* The limit is not armed at creation (IBTA o10-28). */
	srq->limit = 0;
	attr->max_wr = srq->ring.nent;
	attr->max_sge = srq->max_sge;
	ibsrq->ext.xrc.srq_num = srq->srqn;
	xa_store_irq(&udev->srqs, srq->srqn, srq, GFP_KERNEL);
	return 0;

err_srqn:
	xa_erase_irq(&udev->srqs, srq->srqn);
err_count:
	atomic_dec(&udev->nr_srq);
	return ret;
}

/*
 * Move the WQEs not yet consumed to the start of @new.  Called with the
 * SRQ's lock held.  Return: how many, or -EINVAL if they do not fit.
 */
static int urdma_srq_move_wqes(struct urdma_srq *srq, struct urdma_ring *new,
			       u32 prod)
{
	u32 n = prod - srq->cons, i;

	if (n > srq->ring.nent || n > new->nent)
		return -EINVAL;
	for (i = 0; i < n; i++)
		memcpy(urdma_ring_entry(new, i),
		       urdma_ring_entry(&srq->ring, srq->cons + i),
		       srq->ring.stride);
	return n;
}

/* IB_SRQ_MAX_WR: a new ring (urdma_modify_srq_cmd for user SRQs). */
static int urdma_srq_resize(struct urdma_srq *srq, u32 max_wr,
			    struct ib_udata *udata)
{
	struct urdma_ucontext *uctx = urdma_udata_uctx(udata);
	struct urdma_srq_db *db = srq->db.kva;
	struct urdma_modify_srq_cmd cmd;
	struct urdma_ring new = {}, old;
	int moved, ret;

	if (!max_wr || max_wr > URDMA_MAX_SRQ_WR)
		return -EINVAL;
	if (uctx) {
		ret = urdma_udata_get_cmd(udata, &cmd, sizeof(cmd),
					  sizeof(cmd));
		if (ret)
			return ret;
		if (cmd.comp_mask ||
		    !urdma_ring_size_ok(cmd.nent, max_wr, URDMA_MAX_SRQ_WR))
			return -EINVAL;
		ret = urdma_ring_init_user(uctx, &new, cmd.buf_addr, cmd.nent,
					   srq->ring.stride);
	} else {
		ret = urdma_ring_init_kernel(&new, roundup_pow_of_two(max_wr),
					     srq->ring.stride);
	}
	if (ret)
		return ret;

	/* Lock order: mem_lock -> srq->lock (the engine takes it too). */
	if (uctx)
		mutex_lock(&uctx->mem_lock);
	spin_lock_irq(&srq->lock);
	moved = urdma_srq_move_wqes(srq, &new,
				    uctx ? READ_ONCE(db->prod) : srq->prod);
	if (moved >= 0) {
		urdma_ring_swap(uctx, &srq->ring, &new, &old);
		srq->cons = 0;
		srq->resizes++;
		srq->prod = moved;
		WRITE_ONCE(db->cons, 0);
		WRITE_ONCE(db->prod, moved);
		if (srq->limit > srq->ring.nent)
			srq->limit = 0;
	}
	spin_unlock_irq(&srq->lock);
	if (uctx)
		mutex_unlock(&uctx->mem_lock);

	if (moved < 0) {
		urdma_ring_destroy(&new);
		return moved;
	}
	urdma_ring_destroy(&old);
	return 0;
}

int urdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct urdma_srq *srq = to_usrq(ibsrq);
	int ret;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR) {
		ret = urdma_srq_resize(srq, attr->max_wr, udata);
		if (ret)
			return ret;
	} else {
		ret = urdma_udata_no_cmd(udata);
		if (ret)
			return ret;
	}
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->ring.nent)
			return -EINVAL;
		spin_lock_irq(&srq->lock);
		WRITE_ONCE(srq->limit, attr->srq_limit);
		spin_unlock_irq(&srq->lock);
	}
	return 0;
}

int urdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct urdma_srq *srq = to_usrq(ibsrq);

	attr->max_wr = srq->ring.nent;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int urdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibsrq->device);
	struct urdma_srq *srq = to_usrq(ibsrq);

	/*
	 * Unpublish, and wait until no engine pass can hold it: an XRC SRQ
	 * is found by number, not through a QP that the core keeps alive.
	 */
	xa_erase_irq(&udev->srqs, srq->srqn);
	if (srq->xrcd)
		urdma_engine_sync();
	urdma_queue_destroy(&srq->ring, &srq->db);
	atomic_dec(&udev->nr_srq);
	return 0;
}

/**
 * urdma_xrc_srq - the XRC SRQ an XRC message names
 * @udev: the responder's device
 * @srqn: the number the requester's WQE (or the packet's XRCETH) carries
 * @xrcd: the domain of the XRC_TGT QP that took the message
 *
 * Engine context: the SRQ stays while the pass runs (urdma_destroy_srq()).
 * Return: the SRQ, or NULL if there is no XRC SRQ of that number in that
 * domain (a NAK: invalid request).
 */
struct urdma_srq *urdma_xrc_srq(struct urdma_dev *udev, u32 srqn,
				const struct ib_xrcd *xrcd)
{
	struct urdma_srq *srq;
	unsigned long flags;

	xa_lock_irqsave(&udev->srqs, flags);
	srq = xa_load(&udev->srqs, srqn);
	if (srq && (!srq->xrcd || srq->xrcd != xrcd))
		srq = NULL;
	xa_unlock_irqrestore(&udev->srqs, flags);
	return srq;
}

/* Kernel SRQs only; user SRQs post in user space. */
int urdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct urdma_srq *srq = to_usrq(ibsrq);
	struct urdma_srq_db *db = srq->db.kva;
	unsigned long flags;
	int ret;

	/* User SRQs post in user space; nothing waits on a kick for them. */
	if (srq->ring.umem) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		return 0;
	}
	spin_lock_irqsave(&srq->lock, flags);
	ret = urdma_post_recv_ring(&srq->ring, &srq->prod, &db->prod, &db->cons,
				   srq->max_sge, wr, bad_wr);
	spin_unlock_irqrestore(&srq->lock, flags);
	return ret;
}
