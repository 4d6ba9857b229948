// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine's execution stage: a send WQE, validated and executed on the
 * local path.  The other stages: sched.c (a QP's turn: the SQ, timers,
 * flush), recv.c (receive WQEs and delivery), complete.c (CQEs), mem.c
 * (keys, copies, windows, atomics); the wire path is wire.c and wire_rc.c.
 *
 * The local path.  When the destination QP lives on a urdma device of this
 * host, the requester's thread plays both ends: it checks the responder's
 * keys and receive WQEs as an IBTA responder would and copies the bytes
 * directly between the two MRs' pinned pages.  Nothing is touched until
 * every key, bound and access right of both sides has been checked, so an
 * error completion means no data moved.
 *
 * Ring memory is hostile.  A WQE is copied out of the ring once, into the
 * thread's scratch area, and only the copy is validated and used.  Indices
 * that user space writes are requests: a producer index that runs more than
 * a ring ahead of the engine's consumer index puts the QP in ERROR.
 */
#include <linux/atomic.h>
#include <rdma/ib_mad.h>

#include "urdma.h"
#include "exec.h"

struct urdma_scratch *urdma_scratch_alloc(void)
{
	return kzalloc(sizeof(struct urdma_scratch), GFP_KERNEL);
}

/* A QP's PD number; an XRC_TGT QP has no PD, and no key matches it. */
u32 urdma_qp_pdn(const struct urdma_qp *qp)
{
	return qp->ibqp.pd ? to_upd(qp->ibqp.pd)->pdn : U32_MAX;
}

void urdma_count_add(struct urdma_engine *eng, enum urdma_counter c, u64 n)
{
	WRITE_ONCE(eng->cnt[c], eng->cnt[c] + n);
}

void urdma_count(struct urdma_engine *eng, enum urdma_counter c)
{
	urdma_count_add(eng, c, 1);
}

/* ---- the responder of a WQE on the local path ------------------------------- */

/* QP types that can talk to each other: requester @a, responder @b. */
static bool urdma_types_match(enum ib_qp_type a, enum ib_qp_type b)
{
	if (a == IB_QPT_XRC_INI)
		return b == IB_QPT_XRC_TGT;
	if (a == IB_QPT_GSI)
		a = IB_QPT_UD;
	if (b == IB_QPT_GSI)
		b = IB_QPT_UD;
	return a == b;
}

/* States in which a QP's responder accepts packets. */
bool urdma_state_receives(enum ib_qp_state state)
{
	return state >= IB_QPS_RTR && state != IB_QPS_ERR;
}

/**
 * urdma_ud_qkey_ok - may a UD or GSI QP take a message with @qkey?
 * @qp: the receiving QP
 * @qkey: the Q_Key the message carries (urdma_wqe_qkey() on the local path,
 *	the DETH's on the wire)
 *
 * QP1 takes only the GSI Q_Key (IBTA 13.4.6.4), any other UD QP only its
 * own.  The local path, the wire and multicast all ask here.
 */
bool urdma_ud_qkey_ok(const struct urdma_qp *qp, u32 qkey)
{
	if (qp->ibqp.qp_type == IB_QPT_GSI)
		return qkey == IB_QP1_QKEY;
	return qkey == READ_ONCE(qp->attr.qkey);
}

/**
 * urdma_find_ah - the address vector of the AH a UD WQE names
 * @udev: the sending QP's device
 * @ahn: the AH number from the WQE
 * @pdn: the sending QP's PD: an AH of another PD (another process's,
 *	say) does not count (as in rxe_get_av())
 * @av: filled in
 *
 * Return: whether there is such an AH.
 */
static bool urdma_find_ah(struct urdma_dev *udev, u32 ahn, u32 pdn,
			  struct urdma_av *av)
{
	struct urdma_ah *ah;
	unsigned long flags;
	bool found = false;

	xa_lock_irqsave(&udev->ahs, flags);
	ah = xa_load(&udev->ahs, ahn);
	if (ah && ah->pdn == pdn) {
		*av = ah->av;
		found = true;
	}
	xa_unlock_irqrestore(&udev->ahs, flags);
	return found;
}

/*
 * Whether responder @pqp of an RC or UC requester @qp on device @udev is
 * connected back to it: its address vector names @qp's device and source
 * GID, its destination QP is @qp, and @qp is the same QP it was connected
 * to (its serial: QP numbers are reused, so a QP that later gets the
 * number of a destroyed peer does not count).  A local-path request is
 * accepted only from the QP the responder is connected to, as a wire
 * packet only from its address (urdma_rx_conn()).  The fields are read
 * after the state, which modify_qp publishes after them (RTR).
 */
static bool urdma_conn_accepts(struct urdma_qp *pqp,
			       const struct urdma_dev *udev,
			       const struct urdma_qp *qp)
{
	u64 serial;

	if (!READ_ONCE(pqp->av_valid) ||
	    READ_ONCE(pqp->attr.dest_qp_num) != qp->ibqp.qp_num ||
	    READ_ONCE(pqp->av.peer) != udev->id ||
	    memcmp(&pqp->av.dgid, &qp->av.sgid, sizeof(qp->av.sgid)))
		return false;
	/* Not learnt at RTR (the peer did not exist yet): the first one. */
	serial = READ_ONCE(pqp->peer_serial);
	if (!serial)
		serial = cmpxchg64(&pqp->peer_serial, 0, qp->serial) ?:
			 qp->serial;
	return serial == qp->serial;
}

/**
 * urdma_local_peer_serial - the serial of the QP a connection names
 * @av: an RC or UC QP's path to a urdma device of this host
 * @dqpn: its destination QP
 *
 * Process context (modify_qp, at RTR).  Return: the serial of QP @dqpn of
 * that device, 0 if there is none (yet).
 */
u64 urdma_local_peer_serial(const struct urdma_av *av, u32 dqpn)
{
	struct urdma_dev *pdev;
	struct urdma_qp *pqp;
	unsigned long flags;
	u64 serial = 0;

	rcu_read_lock();	/* the device stays (urdma_devtab_del()) */
	pdev = urdma_devtab_get(av->peer);
	if (pdev) {
		/* The QP stays while it is in the table (destroy erases first). */
		xa_lock_irqsave(&pdev->qps, flags);
		pqp = xa_load(&pdev->qps, dqpn);
		if (pqp)
			serial = pqp->serial;
		xa_unlock_irqrestore(&pdev->qps, flags);
	}
	rcu_read_unlock();
	return serial;
}

/**
 * urdma_wqe_route - local or wire: decided here, once per WQE
 * @qp: the sender
 * @wqe: the WQE
 * @peer: ->av is filled in for UD (the AH's address vector)
 * @devid: the id of the urdma device the WQE goes to; 0: the wire
 *
 * A destination is on the local path if a urdma device of this host, in
 * the sender's network namespace, has its GID: ->peer of its address
 * vector, found when the vector was made (urdma_devtab_find_gid()).  An
 * RC or UC QP's transport state lives with its connection, so the
 * scheduler gives the whole turn of a QP whose path was on the wire at
 * RTR to urdma_wire_run(); its WQEs never come here.
 *
 * Return: 0; -ENOENT if an RC or UC QP has no path; -EINVAL if a UD WQE
 * names no AH of its PD.
 */
static int urdma_wqe_route(struct urdma_qp *qp,
			   const struct urdma_send_wqe *wqe,
			   struct urdma_peer *peer, u32 *devid)
{
	if (urdma_is_ud(qp)) {
		if (!urdma_find_ah(to_udev(qp->ibqp.device), wqe->ud.ah_num,
				   urdma_qp_pdn(qp), &peer->av))
			return -EINVAL;
		*devid = peer->av.peer;
		return 0;
	}
	if (!qp->av_valid)
		return -ENOENT;
	*devid = READ_ONCE(qp->av.peer);
	return 0;
}

/*
 * The responder QP of a WQE on the local path, on device @devid.  Return:
 * 0, or -ENOENT if nobody answers (no such QP, a QP that does not receive,
 * or an RC or UC QP that is not connected to this one).
 */
static int urdma_peer_qp(struct urdma_qp *qp, const struct urdma_send_wqe *wqe,
			 u32 devid, struct urdma_peer *peer)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	bool ud = urdma_is_ud(qp);
	struct urdma_qp *pqp;
	u32 qpn;

	qpn = ud ? wqe->ud.remote_qpn & IB_QPN_MASK : qp->attr.dest_qp_num;
	peer->dev = urdma_devtab_get(devid);
	if (!peer->dev)
		return -ENOENT;
	/* A netdev moved to another namespace takes its device with it. */
	if (!net_eq(dev_net(peer->dev->ndev), dev_net(udev->ndev)))
		return -ENOENT;
	pqp = xa_load(&peer->dev->qps, qpn);
	if (!pqp || !urdma_types_match(qp->ibqp.qp_type, pqp->ibqp.qp_type))
		return -ENOENT;
	/* The state before the fields it publishes; pairs with modify_qp. */
	if (!urdma_state_receives(smp_load_acquire(&pqp->attr.qp_state)))
		return -ENOENT;
	if (!ud && !urdma_conn_accepts(pqp, udev, qp))
		return -ENOENT;
	peer->qp = pqp;
	peer->srq = NULL;
	peer->pdn = urdma_qp_pdn(pqp);
	/* XRC: the SRQ the WQE names, of the target's domain, and its PD. */
	if (pqp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		peer->srq = urdma_xrc_srq(peer->dev, wqe->xrc_srqn, pqp->xrcd);
		if (peer->srq)
			peer->pdn = peer->srq->pdn;
	}
	return 0;
}

/* The responder of a WQE on the local path.  Return: 0 or -errno. */
int urdma_find_peer(struct urdma_qp *qp, const struct urdma_send_wqe *wqe,
		    struct urdma_peer *peer)
{
	u32 devid;
	int ret = urdma_wqe_route(qp, wqe, peer, &devid);

	if (ret)
		return ret;
	return devid ? urdma_peer_qp(qp, wqe, devid, peer) : -ENOENT;
}

/* ---- a send WQE: its checks and its local side ------------------------------ */

/*
 * What a QP type may carry (urdma_wqe_ops[]), less what user rings may
 * not: the kernel's operations (REG_MR), and ATOMIC_WRITE and FLUSH before
 * 6.2.
 */
static bool urdma_wqe_opcode_ok(const struct urdma_qp *qp, u8 op)
{
	if (qp->sq.umem && urdma_wop(op, URDMA_WOP_KERNEL))
		return false;
	if (!URDMA_HAVE_FLUSH_ATOMIC_WRITE &&
	    (op == URDMA_WQE_ATOMIC_WRITE || op == URDMA_WQE_FLUSH))
		return false;
	return urdma_wqe_op_allowed(op, qp->ibqp.qp_type);
}

/* urdma_wqe_ops[] speaks of QP types and access rights in the IB values. */
static_assert(BIT(IB_QPT_RC) == URDMA_WOP_QP_RC);
static_assert(BIT(IB_QPT_UC) == URDMA_WOP_QP_UC);
static_assert((BIT(IB_QPT_UD) | BIT(IB_QPT_GSI)) == URDMA_WOP_QP_UD);
static_assert((int)URDMA_ACCESS_LOCAL_WRITE == (int)IB_ACCESS_LOCAL_WRITE);
static_assert((int)URDMA_ACCESS_REMOTE_WRITE == (int)IB_ACCESS_REMOTE_WRITE);
static_assert((int)URDMA_ACCESS_REMOTE_READ == (int)IB_ACCESS_REMOTE_READ);
static_assert((int)URDMA_ACCESS_REMOTE_ATOMIC == (int)IB_ACCESS_REMOTE_ATOMIC);

#define URDMA_WQE_FLAGS (URDMA_WQE_SIGNALED | URDMA_WQE_SOLICITED | \
			 URDMA_WQE_FENCE | URDMA_WQE_INLINE)

/*
 * The bytes a WQE copied from a ring says it moves: its inline data, or
 * its SGEs' lengths (before any check: what a kick would charge).
 */
static u64 urdma_wqe_bytes(const struct urdma_send_wqe *wqe)
{
	const struct urdma_sge *sge = (const struct urdma_sge *)(wqe + 1);
	u32 i, n = min_t(u32, wqe->num_sge, URDMA_MAX_SGE);
	u64 len = 0;

	if (wqe->flags & URDMA_WQE_INLINE)
		return min_t(u32, wqe->inline_len, URDMA_MAX_INLINE);
	for (i = 0; i < n; i++)
		len += sge[i].length;
	return len;
}

/* Is the copied WQE well formed for @qp?  (Its keys are checked later.) */
bool urdma_wqe_valid(const struct urdma_qp *qp,
		     const struct urdma_send_wqe *wqe)
{
	if (!urdma_wqe_opcode_ok(qp, wqe->opcode) ||
	    (wqe->flags & ~URDMA_WQE_FLAGS))
		return false;
	if ((wqe->flags & URDMA_WQE_INLINE) &&
	    !urdma_wop(wqe->opcode, URDMA_WOP_INLINE))
		return false;
	/* Reserved fields must be zero, so that they can gain a meaning. */
	if (wqe->reserved_58 || wqe->reserved_1c0)
		return false;
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI ?
	    wqe->xrc_srqn > IB_QPN_MASK : wqe->xrc_srqn)
		return false;
	if (wqe->flags & URDMA_WQE_INLINE)
		return wqe->inline_len <= qp->cap.max_inline_data;
	return wqe->num_sge <= qp->cap.max_send_sge;
}

/* The local gather list of a WQE: its inline data or its SGEs. */
u8 urdma_wqe_gather(struct urdma_engine *eng, struct urdma_qp *qp,
		    int access, int *nsrc, u64 *len)
{
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = &s->swqe.hdr;

	if (wqe->flags & URDMA_WQE_INLINE) {
		s->src[0] = (struct urdma_sg){ .kva = (void *)(wqe + 1),
					       .len = wqe->inline_len };
		*nsrc = wqe->inline_len ? 1 : 0;
		*len = wqe->inline_len;
		return IB_WC_SUCCESS;
	}
	return urdma_lkey_sgl(to_udev(qp->ibqp.device), urdma_qp_pdn(qp),
			      (const struct urdma_sge *)(wqe + 1),
			      wqe->num_sge, access, s->src, nsrc, len);
}

/* A UD WQE's Q_Key; IBTA 10.2.5: the high bit says "the QP's own". */
u32 urdma_wqe_qkey(const struct urdma_qp *qp, const struct urdma_send_wqe *wqe)
{
	u32 qkey = wqe->ud.remote_qkey;

	return (qkey & BIT(31)) ? qp->attr.qkey : qkey;
}

/*
 * urdma_exec_local - a WQE that stays on this side: LOCAL_INV, BIND_MW or
 * REG_MR (URDMA_WOP_LOCAL), on the local path and the wire path alike.
 * Return: its completion status.
 */
u8 urdma_exec_local(struct urdma_qp *qp, const struct urdma_send_wqe *wqe)
{
	switch (wqe->opcode) {
	case URDMA_WQE_LOCAL_INV:
		return urdma_invalidate(qp, urdma_qp_pdn(qp), wqe->ex, false) ?
		       IB_WC_SUCCESS : IB_WC_LOC_QP_OP_ERR;
	case URDMA_WQE_BIND_MW:
		return urdma_bind_mw(qp, wqe);
	case URDMA_WQE_REG_MR:
		return urdma_reg_mr(qp, wqe);
	default:
		WARN_ON_ONCE(1);
		return IB_WC_LOC_QP_OP_ERR;
	}
}

/* The local side of a WQE: what it sends, or where its results land. */
static u8 urdma_exec_gather(struct urdma_engine *eng, struct urdma_qp *qp,
			    int *nsrc, u64 *len)
{
	const struct urdma_send_wqe *wqe = &eng->scratch->swqe.hdr;
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	int access = urdma_wqe_op(wqe->opcode)->local_access;
	u8 status;

	*nsrc = 0;
	*len = 0;
	if (wqe->opcode == URDMA_WQE_ATOMIC_WRITE ||
	    wqe->opcode == URDMA_WQE_FLUSH)
		return IB_WC_SUCCESS;
	status = urdma_wqe_gather(eng, qp, access, nsrc, len);
	if (status)
		return status;
	if (urdma_is_ud(qp) &&
	    *len > ib_mtu_enum_to_int(urdma_mtu_from_netdev(udev->ndev->mtu)))
		return IB_WC_LOC_LEN_ERR;
	/* The local side's ODP pages, there for the rest of the pass. */
	return urdma_ready_status(urdma_sgl_ready(eng->scratch->src, *nsrc,
						  *len,
						  access & IB_ACCESS_LOCAL_WRITE));
}

/*
 * The responder's side of each opcode on the local path.  Each returns a
 * completion status, -EAGAIN for RNR (no receive WQE yet), or -EBUSY
 * while the responder's ODP pages are faulted in (nothing was done).  The
 * local side's pages were found by urdma_exec_gather().  @nsrc and
 * @len describe the local side, in the scratch area; *@byte_len is the
 * completion's length (@len unless the handler says otherwise).
 */
typedef int (*urdma_exec_fn)(struct urdma_engine *eng, struct urdma_qp *qp,
			     const struct urdma_peer *peer, int nsrc, u64 len,
			     u32 *byte_len);

static int urdma_exec_send(struct urdma_engine *eng, struct urdma_qp *qp,
			   const struct urdma_peer *peer, int nsrc, u64 len,
			   u32 *byte_len)
{
	const struct urdma_send_wqe *wqe = &eng->scratch->swqe.hdr;

	/* (SEND_WITH_INV invalidates in urdma_recv_msg().) */
	return urdma_deliver(eng, qp, peer, wqe, eng->scratch->src, nsrc, len);
}

/* RDMA WRITE (with or without immediate) or READ. */
static int urdma_exec_rdma(struct urdma_engine *eng, struct urdma_qp *qp,
			   const struct urdma_peer *peer, int nsrc, u64 len,
			   u32 *byte_len)
{
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = &s->swqe.hdr;
	bool read = wqe->opcode == URDMA_WQE_RDMA_READ;
	struct urdma_sg rsg;
	int ret = 0;

	if (len && !urdma_rkey_sg(peer, wqe->rdma.rkey, wqe->rdma.remote_addr,
				  len, urdma_wqe_op(wqe->opcode)->remote_access,
				  &rsg))
		return IB_WC_REM_ACCESS_ERR;
	if (len && read)
		ret = urdma_copy(s->src, nsrc, &rsg, 1, len);
	else if (len)
		ret = urdma_copy(&rsg, 1, s->src, nsrc, len);
	if (ret == -EAGAIN)
		return -EBUSY;
	if (ret)
		return IB_WC_REM_ACCESS_ERR;
	/*
	 * The immediate consumes a receive WQE after the data landed, as the
	 * last packet of the message would; an RNR NAK makes the retry write
	 * the same bytes again.
	 */
	if (urdma_wop(wqe->opcode, URDMA_WOP_RECV))
		return urdma_deliver(eng, qp, peer, wqe, NULL, 0, len);
	return IB_WC_SUCCESS;
}

static int urdma_exec_atomic(struct urdma_engine *eng, struct urdma_qp *qp,
			     const struct urdma_peer *peer, int nsrc, u64 len,
			     u32 *byte_len)
{
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = &s->swqe.hdr;
	struct urdma_sg rsg = { .kva = &s->atomic_orig, .len = 8 };
	u64 *target;
	u8 status;

	if (len < 8)
		return IB_WC_LOC_LEN_ERR;
	target = urdma_atomic_target(peer, wqe->atomic.remote_addr,
				     wqe->atomic.rkey, IB_ACCESS_REMOTE_ATOMIC,
				     &status);
	if (!target)
		return status == URDMA_WC_ODP_WAIT ? -EBUSY : status;
	/* Atomic against the CPUs and every other engine thread. */
	if (wqe->opcode == URDMA_WQE_ATOMIC_CMP_SWP)
		s->atomic_orig = cmpxchg64(target, wqe->atomic.compare_add,
					   wqe->atomic.swap);
	else
		s->atomic_orig = atomic64_fetch_add(wqe->atomic.compare_add,
						    (atomic64_t *)target);
	/* The local side's pages were found (urdma_exec_gather()). */
	__urdma_copy(s->src, nsrc, &rsg, 1, 8);
	*byte_len = 8;
	return IB_WC_SUCCESS;
}

static int urdma_exec_atomic_write(struct urdma_engine *eng,
				   struct urdma_qp *qp,
				   const struct urdma_peer *peer, int nsrc,
				   u64 len, u32 *byte_len)
{
	const struct urdma_wqe_atomic *a = &eng->scratch->swqe.hdr.atomic;
	int ret = urdma_atomic_write(peer, a->remote_addr, a->rkey,
				     a->compare_add);

	if (ret == IB_WC_SUCCESS)
		*byte_len = 8;
	return ret == URDMA_WC_ODP_WAIT ? -EBUSY : ret;
}

static int urdma_exec_flush(struct urdma_engine *eng, struct urdma_qp *qp,
			    const struct urdma_peer *peer, int nsrc, u64 len,
			    u32 *byte_len)
{
	const struct urdma_wqe_flush *f = &eng->scratch->swqe.hdr.flush;

	return urdma_flush(peer, f->type, f->level, f->rkey, f->remote_addr,
			   f->length);
}

/* The handler of each opcode that goes to a responder. */
static const urdma_exec_fn urdma_exec_ops[URDMA_WQE_NUM_OPCODES] = {
	[URDMA_WQE_SEND] = urdma_exec_send,
	[URDMA_WQE_SEND_IMM] = urdma_exec_send,
	[URDMA_WQE_SEND_INV] = urdma_exec_send,
	[URDMA_WQE_RDMA_WRITE] = urdma_exec_rdma,
	[URDMA_WQE_RDMA_WRITE_IMM] = urdma_exec_rdma,
	[URDMA_WQE_RDMA_READ] = urdma_exec_rdma,
	[URDMA_WQE_ATOMIC_CMP_SWP] = urdma_exec_atomic,
	[URDMA_WQE_ATOMIC_FETCH_ADD] = urdma_exec_atomic,
	[URDMA_WQE_ATOMIC_WRITE] = urdma_exec_atomic_write,
	[URDMA_WQE_FLUSH] = urdma_exec_flush,
};

/* The opcode's handler.  *@byte_len: the completion's length. */
static int urdma_exec_op(struct urdma_engine *eng, struct urdma_qp *qp,
			 const struct urdma_peer *peer, int nsrc, u64 len,
			 u32 *byte_len)
{
	u8 op = eng->scratch->swqe.hdr.opcode;

	*byte_len = len;
	if (op >= URDMA_WQE_NUM_OPCODES || !urdma_exec_ops[op])
		return IB_WC_LOC_QP_OP_ERR;
	return urdma_exec_ops[op](eng, qp, peer, nsrc, len, byte_len);
}

/*
 * The WQE in the scratch area at its responder @peer, on the local path:
 * the responder's checks, then the opcode's handler.  As urdma_exec().
 */
static enum urdma_exec_result
urdma_exec_at_peer(struct urdma_engine *eng, struct urdma_qp *qp,
		   const struct urdma_peer *peer, int nsrc, u64 len,
		   u8 *status, u32 *byte_len)
{
	const struct urdma_send_wqe *wqe = &eng->scratch->swqe.hdr;
	int access = urdma_wqe_op(wqe->opcode)->remote_access;
	int ret;

	if (peer->qp->ibqp.qp_type == IB_QPT_XRC_TGT && !peer->srq)
		ret = IB_WC_REM_INV_REQ_ERR;	/* no such XRC SRQ: invalid XRCETH */
	else if (access && !(READ_ONCE(peer->qp->attr.qp_access_flags) & access))
		ret = IB_WC_REM_INV_REQ_ERR;
	else
		ret = urdma_exec_op(eng, qp, peer, nsrc, len, byte_len);
	if (ret == -EAGAIN)
		return URDMA_EXEC_RNR;
	if (ret == -EBUSY) {
		/*
		 * The responder's ODP pages are being faulted in: what its
		 * RNR NAK says on the wire (the retries count), or for an
		 * unreliable QP the message is lost.  Only a WQE's own pages
		 * (urdma_exec_gather()) make it wait outside the budget.
		 */
		urdma_count(eng, URDMA_CNT_ODP_WAITS);
		if (urdma_is_reliable(qp))
			return URDMA_EXEC_RNR;
		*status = IB_WC_SUCCESS;
		*byte_len = len;
		return URDMA_EXEC_DONE;
	}
	if (ret == IB_WC_REM_ACCESS_ERR || ret == IB_WC_REM_INV_REQ_ERR)
		urdma_qp_set_error(peer->qp);
	*status = ret;
	return URDMA_EXEC_DONE;
}

/*
 * Execute the WQE in the scratch area.  @status is the requester's
 * completion status for URDMA_EXEC_DONE; @byte_len its length.
 */
enum urdma_exec_result urdma_exec(struct urdma_engine *eng,
				  struct urdma_qp *qp, u8 *status,
				  u32 *byte_len)
{
	const struct urdma_send_wqe *wqe = &eng->scratch->swqe.hdr;
	struct urdma_peer peer;
	int nsrc, ret;
	u32 devid;
	u64 len;

	*byte_len = 0;
	/* Nothing has happened yet: the thread can start it over. */
	if (!urdma_engine_charge(eng, urdma_wqe_bytes(wqe)))
		return URDMA_EXEC_DEFER;
	if (!urdma_wqe_valid(qp, wqe)) {
		urdma_count(eng, URDMA_CNT_BAD_WQES);
		*status = IB_WC_LOC_QP_OP_ERR;
		return URDMA_EXEC_DONE;
	}
	if (urdma_wop(wqe->opcode, URDMA_WOP_LOCAL)) {
		*status = urdma_exec_local(qp, wqe);
		return URDMA_EXEC_DONE;
	}
	*status = urdma_exec_gather(eng, qp, &nsrc, &len);
	if (*status == URDMA_WC_ODP_WAIT)
		return URDMA_EXEC_FAULT;
	if (*status)
		return URDMA_EXEC_DONE;

	ret = urdma_wqe_route(qp, wqe, &peer, &devid);
	if (ret == -EINVAL) {
		urdma_count(eng, URDMA_CNT_BAD_WQES);
		*status = IB_WC_LOC_QP_OP_ERR;
		return URDMA_EXEC_DONE;
	}
	if (!ret && !devid && urdma_is_ud(qp)) {
		if (urdma_gid_is_mcast(&peer.av.dgid))
			urdma_mcast_local(eng, qp, wqe, &peer.av, nsrc, len);
		*status = urdma_ud_xmit(eng, qp, wqe, &peer.av, nsrc, len);
		*byte_len = len;
		return URDMA_EXEC_DONE;
	}
	/* (!devid: an RC or UC path that left this host after RTR.) */
	if (!ret)
		ret = devid ? urdma_peer_qp(qp, wqe, devid, &peer) : -ENOENT;
	if (ret && urdma_is_reliable(qp))
		return URDMA_EXEC_NO_PEER;
	/*
	 * Unreliable, and nobody answers; or UD with the wrong Q_Key (IBTA
	 * 10.2.5): the message is simply lost.
	 */
	if (ret || (urdma_is_ud(peer.qp) &&
		    !urdma_ud_qkey_ok(peer.qp, urdma_wqe_qkey(qp, wqe)))) {
		*status = IB_WC_SUCCESS;
		*byte_len = len;
		return URDMA_EXEC_DONE;
	}
	return urdma_exec_at_peer(eng, qp, &peer, nsrc, len, status,
				  byte_len);
}
