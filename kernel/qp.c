// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Verbs: queue pairs.
 *
 * A QP is an SQ ring of send WQEs, an RQ ring of receive WQEs (unless it
 * uses an SRQ) and a doorbell record (struct urdma_qp_db), in pinned user
 * memory for user QPs and kernel memory for kernel QPs.  Its state machine
 * is the IBTA's, through ib_modify_qp_is_ok(); attributes are checked
 * against their architected ranges before anything changes.
 *
 * XRC: an XRC_INI QP is a send-only RC requester whose WQEs each name
 * the XRC SRQ that receives them.  An XRC_TGT QP is a receive-only RC
 * responder of an XRC domain, with no PD, no CQ and no ring of its own;
 * the core creates it as a kernel QP and shares it between processes.
 *
 * QP numbers: 1 is the kernel's GSI QP; every other QP gets a number in
 * 2..2^24-2, handed out cyclically so that a number is not reused soon.
 * 2^24-1 is the multicast QPN: packets to it go to a group, not a QP.
 */
#include <kunit/visibility.h>

#include "urdma.h"
#include "exec.h"
#include "../uapi/rdma/urdma-abi.h"

#define URDMA_MAX_PSN		(BIT(24) - 1)
#define URDMA_MAX_QPN		(BIT(24) - 1)
/* The multicast QPN (IBTA 10.5.2.4); never a QP's number. */
#define URDMA_MCAST_QPN		URDMA_MAX_QPN
#define URDMA_GSI_QPN		1
/*
 * IB_ACCESS_ON_DEMAND says nothing about a QP, but rdma-core's ODP tests
 * give it to their QPs too (mlx5 ignores it there): accepted and ignored.
 */
#define URDMA_QP_ACCESS		(IB_ACCESS_LOCAL_WRITE | \
				 IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_MW_BIND | URDMA_ACCESS_FLUSH | \
				 (URDMA_HAVE_ODP ? IB_ACCESS_ON_DEMAND : 0) | \
				 URDMA_QP_ACCESS_IGNORED)

/* The stride a send WQE with these capacities needs. */
u32 urdma_send_stride(u32 max_sge, u32 max_inline)
{
	return round_up(URDMA_WQE_BLOCK +
			max(max_sge * URDMA_SGE_SIZE, max_inline),
			URDMA_WQE_BLOCK);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_send_stride);

u32 urdma_recv_stride(u32 max_sge)
{
	return round_up(sizeof(struct urdma_recv_wqe) +
			max_sge * URDMA_SGE_SIZE, URDMA_WQE_BLOCK);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_recv_stride);

/* A ring's stride: whole blocks, room for @min_stride, at most the max. */
bool urdma_stride_ok(u32 stride, u32 min_stride)
{
	return IS_ALIGNED(stride, URDMA_WQE_BLOCK) && stride >= min_stride &&
	       stride <= URDMA_MAX_STRIDE;
}

/* The SGEs a receive WQE of @stride bytes holds (RQ and SRQ). */
u32 urdma_recv_stride_sges(u32 stride)
{
	return min_t(u32, URDMA_MAX_SGE,
		     (stride - sizeof(struct urdma_recv_wqe)) / URDMA_SGE_SIZE);
}

/* Report what the rings hold, which may be more than was asked for. */
static void urdma_qp_set_caps(struct urdma_qp *qp, bool no_rq)
{
	struct ib_qp_cap *cap = &qp->cap;
	u32 room = qp->sq.stride - URDMA_WQE_BLOCK;

	cap->max_send_wr = qp->sq.nent;
	cap->max_send_sge = min_t(u32, URDMA_MAX_SGE, room / URDMA_SGE_SIZE);
	cap->max_inline_data = min_t(u32, URDMA_MAX_INLINE, room);
	if (no_rq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	} else {
		cap->max_recv_wr = qp->rq.nent;
		cap->max_recv_sge = urdma_recv_stride_sges(qp->rq.stride);
	}
}

/* QPs without a receive ring: those with an SRQ, and XRC's. */
static bool urdma_init_no_rq(const struct ib_qp_init_attr *init)
{
	return init->srq || init->qp_type == IB_QPT_XRC_INI ||
	       init->qp_type == IB_QPT_XRC_TGT;
}

static int urdma_qp_user_init(struct urdma_qp *qp, struct ib_qp_init_attr
			      *init, struct ib_udata *udata)
{
	struct urdma_ucontext *uctx = urdma_udata_uctx(udata);
	const struct ib_qp_cap *cap = &init->cap;
	struct urdma_create_qp_resp resp = {};
	struct urdma_create_qp_cmd cmd;
	int ret;

	ret = urdma_udata_get_cmd(udata, &cmd, sizeof(cmd), sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.comp_mask || cmd.reserved_20)
		return -EINVAL;
	if (!urdma_ring_size_ok(cmd.sq_nent, max(cap->max_send_wr, 1U),
				URDMA_MAX_QP_WR) ||
	    !urdma_stride_ok(cmd.sq_stride,
			     urdma_send_stride(cap->max_send_sge,
					       cap->max_inline_data)))
		return -EINVAL;
	if (urdma_init_no_rq(init)) {
		if (cmd.rq_nent || cmd.rq_stride || cmd.rq_buf_addr)
			return -EINVAL;
	} else if (!urdma_ring_size_ok(cmd.rq_nent, max(cap->max_recv_wr, 1U),
				       URDMA_MAX_QP_WR) ||
		   !urdma_stride_ok(cmd.rq_stride,
				    urdma_recv_stride(cap->max_recv_sge))) {
		return -EINVAL;
	}

	ret = urdma_ring_init_user(uctx, &qp->sq, cmd.sq_buf_addr,
				   cmd.sq_nent, cmd.sq_stride);
	if (ret)
		return ret;
	if (!urdma_init_no_rq(init)) {
		ret = urdma_ring_init_user(uctx, &qp->rq, cmd.rq_buf_addr,
					   cmd.rq_nent, cmd.rq_stride);
		if (ret)
			goto err;
	}
	ret = urdma_db_init_user(uctx, &qp->db, cmd.db_addr);
	if (ret)
		goto err;

	resp.engine = qp->eng->idx;
	ret = urdma_udata_put_resp(udata, &resp, sizeof(resp));
	if (ret)
		goto err;
	return 0;

err:	/* each is a no-op on what was not set up (the QP came zeroed) */
	urdma_db_destroy(&qp->db);
	urdma_ring_destroy(&qp->rq);
	urdma_ring_destroy(&qp->sq);
	return ret;
}

static int urdma_qp_kernel_init(struct urdma_qp *qp,
				struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;
	int ret;

	/* XRC_TGT sends nothing: a one-slot SQ that nobody posts to. */
	if (init->qp_type == IB_QPT_XRC_TGT)
		return urdma_queue_init(NULL, &qp->sq, &qp->db, 0, 1,
					urdma_send_stride(0, 0), 0);
	ret = urdma_queue_init(NULL, &qp->sq, &qp->db, 0,
			       roundup_pow_of_two(max(cap->max_send_wr, 1U)),
			       urdma_send_stride(cap->max_send_sge,
						 cap->max_inline_data), 0);
	if (ret || urdma_init_no_rq(init))
		return ret;
	ret = urdma_ring_init_kernel(&qp->rq,
				     roundup_pow_of_two(max(cap->max_recv_wr,
							    1U)),
				     urdma_recv_stride(cap->max_recv_sge));
	if (ret)
		urdma_queue_destroy(&qp->sq, &qp->db);
	return ret;
}

static int urdma_qp_check_init(const struct ib_qp_init_attr *init,
			       bool user)
{
	const struct ib_qp_cap *cap = &init->cap;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_XRC_INI:
		/* A kernel ib_send_wr cannot name the remote XRC SRQ. */
		if (!user)
			return -EOPNOTSUPP;
		break;
	case IB_QPT_XRC_TGT:
		/* The core creates it, for user space, as a kernel QP. */
		if (!init->xrcd)
			return -EINVAL;
		return init->create_flags ? -EOPNOTSUPP : 0;
	case IB_QPT_GSI:
		if (!user)
			break;
		fallthrough;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > URDMA_MAX_QP_WR ||
	    cap->max_send_sge > URDMA_MAX_SGE ||
	    cap->max_inline_data > URDMA_MAX_INLINE)
		return -EINVAL;
	if (!urdma_init_no_rq(init) &&
	    (cap->max_recv_wr > URDMA_MAX_QP_WR ||
	     cap->max_recv_sge > URDMA_MAX_SGE))
		return -EINVAL;
	return 0;
}

int urdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibqp->device);
	bool gsi = init->qp_type == IB_QPT_GSI;
	struct urdma_qp *qp = to_uqp(ibqp);
	u32 qpn;
	int ret;

	ret = urdma_qp_check_init(init, !!udata);
	if (ret)
		return ret;
	if (atomic_inc_return(&udev->nr_qp) > URDMA_MAX_QP) {
		ret = -ENOMEM;
		goto err_count;
	}

	mutex_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	qp->attr.qp_state = IB_QPS_RESET;
	qp->attr.port_num = init->port_num ? init->port_num : 1;
	qp->attr.path_mtu = IB_MTU_1024;
	qp->attr.path_mig_state = IB_MIG_MIGRATED;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;

	/*
	 * Reserve the number (a NULL entry that lookups do not see): it
	 * picks the engine, which the receive handler finds without a
	 * lookup (net.c).
	 */
	if (gsi) {
		qpn = URDMA_GSI_QPN;
		ret = xa_insert_irq(&udev->qps, qpn, NULL, GFP_KERNEL);
	} else {
		ret = xa_alloc_cyclic_irq(&udev->qps, &qpn, NULL,
					  XA_LIMIT(URDMA_GSI_QPN + 1,
						   URDMA_MCAST_QPN - 1),
					  &udev->next_qpn, GFP_KERNEL);
	}
	if (ret < 0)
		goto err_count;
	qp->eng = urdma_qpn_engine(udev, qpn);

	if (udata)
		ret = urdma_qp_user_init(qp, init, udata);
	else
		ret = urdma_qp_kernel_init(qp, init);
	if (ret)
		goto err_qpn;
	urdma_qp_set_caps(qp, urdma_init_no_rq(init));
	if (init->qp_type == IB_QPT_XRC_TGT) {
		memset(&qp->cap, 0, sizeof(qp->cap));
		qp->xrcd = init->xrcd;
	}

	qp->serial = atomic64_inc_return(&udev->qp_serials);
	/* Publish last: from here on the QP can be found by number. */
	ibqp->qp_num = qpn;
	init->cap = qp->cap;
	xa_store_irq(&udev->qps, qpn, qp, GFP_KERNEL);
	urdma_engine_attach(qp);
	return 0;

err_qpn:
	xa_erase_irq(&udev->qps, qpn);
err_count:
	atomic_dec(&udev->nr_qp);
	mutex_destroy(&qp->state_lock);
	return ret;
}

int urdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibqp->device);
	struct urdma_qp *qp = to_uqp(ibqp);

	/* Unpublish, wait until no engine pass can hold it, then unpin. */
	urdma_engine_detach(qp);
	xa_erase_irq(&udev->qps, ibqp->qp_num);
	if (ibqp->qp_type == IB_QPT_UD)
		urdma_mcast_qp_gone(qp);
	urdma_engine_sync();
	urdma_engine_count_err(qp, true);
	urdma_wire_free(qp);
	urdma_ring_destroy(&qp->rq);
	urdma_queue_destroy(&qp->sq, &qp->db);
	atomic_dec(&udev->nr_qp);
	mutex_destroy(&qp->state_lock);
	return 0;
}

/**
 * urdma_qp_check_attr - check modify_qp attributes against their ranges
 * @attr: the attributes
 * @mask: which of them are given (IB_QP_*)
 *
 * Which attributes a transition takes is ib_modify_qp_is_ok()'s business;
 * this checks the values.  Return: 0, -EINVAL, or -EOPNOTSUPP for what
 * urdma does not implement (alternate paths).
 */
int urdma_qp_check_attr(const struct ib_qp_attr *attr, int mask)
{
	if (mask & IB_QP_ALT_PATH)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PATH_MIG_STATE) &&
	    attr->path_mig_state != IB_MIG_MIGRATED)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= URDMA_MAX_PKEYS)
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~URDMA_QP_ACCESS))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > URDMA_RETRY_MAX)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > URDMA_RETRY_MAX)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_RQ_PSN) && attr->rq_psn > URDMA_MAX_PSN)
		return -EINVAL;
	if ((mask & IB_QP_SQ_PSN) && attr->sq_psn > URDMA_MAX_PSN)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > URDMA_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > URDMA_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > URDMA_MAX_QPN)
		return -EINVAL;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_qp_check_attr);

/*
 * Back to RESET: empty rings, for the engine and for the provider.  The
 * state is RESET already; once no engine pass can still be working on the
 * QP (or consuming its RQ for a sender), the indices start over.
 */
static void urdma_qp_reset(struct urdma_qp *qp)
{
	struct urdma_qp_db *db = qp->db.kva;

	urdma_engine_sync();
	/* A pass that was running may have moved it to ERROR meanwhile. */
	WRITE_ONCE(qp->attr.qp_state, IB_QPS_RESET);
	qp->sq_cons = 0;
	qp->rq_cons = 0;
	qp->waiting = false;
	qp->tries_set = false;
	qp->last_wqe_told = false;
	WRITE_ONCE(qp->peer_serial, 0);
	urdma_wire_reset(qp);
	WRITE_ONCE(qp->use_wire, false);

	spin_lock_irq(&qp->sq_lock);
	qp->sq_prod = 0;
	spin_unlock_irq(&qp->sq_lock);
	spin_lock_irq(&qp->rq_lock);
	qp->rq_prod = 0;
	spin_unlock_irq(&qp->rq_lock);
	WRITE_ONCE(db->sq_prod, 0);
	WRITE_ONCE(db->rq_prod, 0);
	WRITE_ONCE(db->sq_cons, 0);
	WRITE_ONCE(db->rq_cons, 0);
}

static void urdma_qp_apply(struct urdma_qp *qp, const struct ib_qp_attr *attr,
			   int mask, const struct urdma_av *av)
{
	struct ib_qp_attr *cur = &qp->attr;

	if (mask & IB_QP_PKEY_INDEX)
		cur->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		cur->port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		cur->qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		cur->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU)
		cur->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		cur->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		cur->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		cur->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		cur->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_RQ_PSN)
		cur->rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN) {
		cur->sq_psn = attr->sq_psn;
		WRITE_ONCE(qp->req_psn, attr->sq_psn & URDMA_PSN_MASK);
	}
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		cur->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		cur->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		cur->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		cur->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IB_QP_PATH_MIG_STATE)
		cur->path_mig_state = attr->path_mig_state;
	if (mask & IB_QP_AV) {
		qp->av = *av;
		qp->av_valid = true;
	}
}

/*
 * At RTR an RC or UC QP whose peer is not a urdma device of this host
 * takes the wire path (wire_rc.c), for good: the engine reads use_wire
 * only once the state is RTR, which is published after it.
 */
static int urdma_qp_wire_setup(struct urdma_qp *qp,
			       const struct ib_qp_attr *attr, int mask,
			       const struct urdma_av *av)
{
	const struct urdma_av *path = (mask & IB_QP_AV) ? av : &qp->av;
	int ret;

	if (urdma_is_ud(qp))
		return 0;
	if (path->peer) {
		/* The QP it connects to, by serial (urdma_conn_accepts()). */
		WRITE_ONCE(qp->peer_serial,
			   urdma_local_peer_serial(path,
						   (mask & IB_QP_DEST_QPN) ?
						   attr->dest_qp_num :
						   qp->attr.dest_qp_num));
		WRITE_ONCE(qp->use_wire, false);
		return 0;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	ret = urdma_wire_alloc(qp);
	if (ret)
		return ret;
	qp->wire->resp.epsn = ((mask & IB_QP_RQ_PSN) ? attr->rq_psn :
			       qp->attr.rq_psn) & URDMA_PSN_MASK;
	WRITE_ONCE(qp->use_wire, true);
	return 0;
}

/*
 * The state changes last, with cmpxchg: the engine may have moved the QP
 * to ERROR meanwhile.  Return: false if it did and the change was not
 * to ERROR or RESET (the caller's transition no longer applies).
 */
static bool urdma_qp_set_state(struct urdma_qp *qp, enum ib_qp_state cur,
			       enum ib_qp_state new)
{
	enum ib_qp_state was = cmpxchg(&qp->attr.qp_state, cur, new);

	if (was != cur) {
		if (was != IB_QPS_ERR ||
		    (new != IB_QPS_ERR && new != IB_QPS_RESET))
			return false;
		WRITE_ONCE(qp->attr.qp_state, new);
	}
	if (new == IB_QPS_RESET)
		urdma_qp_reset(qp);
	if (new == IB_QPS_RESET || new == IB_QPS_ERR)
		urdma_engine_count_err(qp, false);
	/* Work posted before RTS, or to flush: the engine must look. */
	if (new == IB_QPS_RTS || new == IB_QPS_ERR)
		urdma_engine_notify(qp->eng);
	return true;
}

int urdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct urdma_qp *qp = to_uqp(ibqp);
	enum ib_qp_state cur, new;
	struct urdma_av av;
	int ret;

	ret = urdma_udata_no_cmd(udata);
	if (ret)
		return ret;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_lock);
	cur = READ_ONCE(qp->attr.qp_state);
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		ret = -EINVAL;
		goto out_unlock;
	}
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (new > IB_QPS_ERR ||
	    !ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	ret = urdma_qp_check_attr(attr, mask);
	if (ret)
		goto out_unlock;
	if (mask & IB_QP_AV) {
		ret = urdma_av_from_attr(&av, &attr->ah_attr);
		if (ret)
			goto out_unlock;
	}
	if ((mask & IB_QP_STATE) && new == IB_QPS_RTR && cur != IB_QPS_RTR) {
		ret = urdma_qp_wire_setup(qp, attr, mask, &av);
		if (ret)
			goto out_unlock;
	}
	urdma_qp_apply(qp, attr, mask, &av);
	if ((mask & IB_QP_STATE) && !urdma_qp_set_state(qp, cur, new))
		ret = -EINVAL;
out_unlock:
	mutex_unlock(&qp->state_lock);
	return ret;
}

static void urdma_av_to_attr(const struct urdma_av *av,
			     struct rdma_ah_attr *attr)
{
	union ib_gid dgid = av->dgid;

	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_grh(attr, &dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	ether_addr_copy(attr->roce.dmac, av->dmac);
}

int urdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct urdma_qp *qp = to_uqp(ibqp);

	mutex_lock(&qp->state_lock);
	*attr = qp->attr;
	attr->cur_qp_state = attr->qp_state;
	attr->cap = qp->cap;
	if (qp->av_valid)
		urdma_av_to_attr(&qp->av, &attr->ah_attr);
	else
		memset(&attr->ah_attr, 0, sizeof(attr->ah_attr));
	memset(&attr->alt_ah_attr, 0, sizeof(attr->alt_ah_attr));
	mutex_unlock(&qp->state_lock);

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->xrcd = qp->xrcd;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	init->port_num = qp->attr.port_num;
	return 0;
}
