// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: the data path.  post_send, post_recv, post_srq_recv,
 * bind_mw (type 1 windows) and the ibv_wr_* API (struct ibv_qp_ex).
 *
 * Posting writes WQEs into the ring slots from the queue's head on, then
 * publishes the new head as the doorbell record's producer index, after a
 * release barrier (udma_to_device_barrier).  The engine finds the work by
 * polling the doorbell records.
 *
 * Doorbell elision (see the uapi comment above struct urdma_engine_state):
 * after publishing, a full barrier orders the producer index before the
 * read of the asleep flag of the QP's engine; only if the engine sleeps
 * does the provider "kick" it with a zero-WR POST_SEND (SQ) or POST_RECV
 * (RQ) command.  The engine sets asleep, issues a full barrier and polls
 * every doorbell once more before it sleeps, so either it sees the new
 * producer index or the provider sees asleep.  Receives kick only while
 * one of the engine's QPs is in ERROR (urdma_kick_rq).  SRQs belong to
 * no engine: posting to one kicks with a zero-WR POST_SRQ_RECV if any
 * engine sleeps.
 *
 * The consumer indices of the doorbell record are the engine's, and are
 * only used to tell whether a queue is full: slots are addressed by the
 * provider's own head modulo nent, so a garbage consumer index can make
 * posting fail with ENOMEM but never makes it write outside the ring.
 *
 * Locking: each work queue's spinlock (urdma_wq.lock) is held while WQEs
 * are written and the producer index is published; the ibv_wr_* API holds
 * the SQ's from wr_start to wr_complete or wr_abort.  Kicks are issued
 * after the lock is dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <util/udma_barrier.h>

#include "urdma.h"

/* ibv_send_wr.send_flags that urdma understands. */
#define URDMA_SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
			  IBV_SEND_SOLICITED | IBV_SEND_INLINE)
/*
 * ibv_qp_ex.wr_flags: the same, but IBV_SEND_INLINE means nothing there
 * (inline data comes from wr_set_inline_data*) and is ignored.
 */
#define URDMA_WR_FLAGS URDMA_SEND_FLAGS

/* The ibv_wr_* builders per QP type; the same opcodes as post_send. */
#define URDMA_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define URDMA_UC_SEND_OPS (URDMA_UD_SEND_OPS | \
			   IBV_QP_EX_WITH_RDMA_WRITE | \
			   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			   IBV_QP_EX_WITH_LOCAL_INV | \
			   IBV_QP_EX_WITH_BIND_MW)
#define URDMA_RC_SEND_OPS (URDMA_UC_SEND_OPS | \
			   IBV_QP_EX_WITH_SEND_WITH_INV | \
			   IBV_QP_EX_WITH_RDMA_READ | \
			   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
			   IBV_QP_EX_WITH_ATOMIC_WRITE | \
			   IBV_QP_EX_WITH_FLUSH)

/* The flush type and level are the verbs' values (the uapi says so). */
#define URDMA_SAME_VALUE(urdma, ibv) \
	static_assert((int)(urdma) == (int)(ibv), #urdma " != " #ibv)

URDMA_SAME_VALUE(URDMA_FLUSH_GLOBAL, IBV_FLUSH_GLOBAL);
URDMA_SAME_VALUE(URDMA_FLUSH_PERSISTENT, IBV_FLUSH_PERSISTENT);
URDMA_SAME_VALUE(URDMA_FLUSH_RANGE, IBV_FLUSH_RANGE);
URDMA_SAME_VALUE(URDMA_FLUSH_MR, IBV_FLUSH_MR);
/* So are urdma_wqe_ops[]' QP types and access flags. */
URDMA_SAME_VALUE(URDMA_WOP_QP_RC, 1 << IBV_QPT_RC);
URDMA_SAME_VALUE(URDMA_WOP_QP_UC, 1 << IBV_QPT_UC);
URDMA_SAME_VALUE(URDMA_WOP_QP_UD & (1 << IBV_QPT_UD), 1 << IBV_QPT_UD);
URDMA_SAME_VALUE(URDMA_QPT_RC, IBV_QPT_RC);
URDMA_SAME_VALUE(URDMA_QPT_XRC_INI, IBV_QPT_XRC_SEND);
URDMA_SAME_VALUE(URDMA_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
URDMA_SAME_VALUE(URDMA_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
URDMA_SAME_VALUE(URDMA_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
URDMA_SAME_VALUE(URDMA_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);

uint64_t urdma_qp_send_ops(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:
		return URDMA_RC_SEND_OPS;
	case IBV_QPT_UC:
		return URDMA_UC_SEND_OPS;
	case IBV_QPT_UD:
		return URDMA_UD_SEND_OPS;
	default:
		return 0;
	}
}

/* ---- rings and doorbells ------------------------------------------------- */

/* head - cons >= nent, cons being the engine's consumer index. */
static inline bool urdma_wq_full(const struct urdma_wq *wq, uint32_t head,
				 uint32_t *cons)
{
	/* The engine copied a slot before it released the index past it. */
	return head - atomic_load_explicit((_Atomic(uint32_t) *)cons,
					   memory_order_acquire) >= wq->nent;
}

/* Publish the WQEs before head to the engine. */
static inline void urdma_publish(uint32_t *prod, uint32_t head)
{
	udma_to_device_barrier();
	atomic_store_explicit((_Atomic(uint32_t) *)prod, head,
			      memory_order_release);
}

/*
 * A POST_SEND with zero WRs through write(2), uverbs' original command
 * ABI, which the kernel keeps beside the ioctl() one that
 * ibv_cmd_post_send() takes: the ioctl path parses an attribute bundle and
 * passes the LSM's ioctl hook, about 0.7 us of each kick under TCG
 * (docs/performance.md).  Return: whether the kernel took it.
 */
static bool urdma_kick_write(struct urdma_qp *qp)
{
	struct ib_uverbs_post_send_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req = {
		.hdr = {
			.command = IB_USER_VERBS_CMD_POST_SEND,
			.in_words = sizeof(req) / 4,
			.out_words = sizeof(resp) / 4,
		},
		.cmd = {
			.response = (uintptr_t)&resp,
			.qp_handle = qp->vqp.qp.handle,
			.wqe_size = sizeof(struct ib_uverbs_send_wr),
		},
	};

	return write(qp->vqp.qp.context->cmd_fd, &req, sizeof(req)) ==
	       sizeof(req);
}

/* Wake the QP's engine if it sleeps: a POST_SEND with zero WRs. */
static int urdma_kick_sq(struct urdma_qp *qp)
{
	struct urdma_context *ctx = to_urdma_ctx(qp->vqp.qp.context);
	struct ibv_send_wr *bad_wr;

	if (!urdma_engine_asleep(ctx, qp->engine) || urdma_kick_write(qp))
		return 0;
	/*
	 * uverbs refuses write(2) to a process that changed its security
	 * context since it opened the device, or one that is gone: the
	 * ioctl() path, which also reports the error.
	 */
	return ibv_cmd_post_send(&qp->vqp.qp, NULL, &bad_wr);
}

/*
 * The same for receives: a POST_RECV with zero WRs.  A sleeping engine
 * needs it only to flush the receive, in a QP in ERROR: a sender's engine
 * reads the RQ's producer index itself.  So with URDMA_DEVICE_CAP_ERR_QPS
 * it is left out while none of the engine's QPs is in ERROR (the provider
 * cannot tell which are: the engine moves a QP there on its own).  The
 * load is ordered after the producer index by urdma_engine_asleep()'s
 * barrier, as the asleep flag is.
 */
static int urdma_kick_rq(struct urdma_qp *qp)
{
	struct urdma_context *ctx = to_urdma_ctx(qp->vqp.qp.context);
	struct ibv_recv_wr *bad_wr;

	if (!urdma_engine_asleep(ctx, qp->engine))
		return 0;
	if ((ctx->device_caps & URDMA_DEVICE_CAP_ERR_QPS) &&
	    !atomic_load_explicit(
		    (_Atomic(uint32_t) *)&ctx->engine_state[qp->engine].err_qps,
		    memory_order_relaxed))
		return 0;
	return ibv_cmd_post_recv(&qp->vqp.qp, NULL, &bad_wr);
}

/* ---- send WQEs ------------------------------------------------------------ */

/*
 * Which opcodes a QP type may post, and which carry inline data: the
 * table the engine checks WQEs against (urdma_wqe_ops[]), less the
 * kernel's own operations.
 */
static bool urdma_opcode_valid(enum ibv_qp_type type, unsigned int op)
{
	return urdma_wqe_op_allowed(op, type) &&
	       !(urdma_wqe_op(op)->flags & URDMA_WOP_KERNEL);
}

static bool urdma_opcode_inline(unsigned int op)
{
	return urdma_wqe_op(op)->flags & URDMA_WOP_INLINE;
}

/*
 * The WQE opcode of a post_send opcode, or -1.  FLUSH and ATOMIC_WRITE
 * have no fields in struct ibv_send_wr (the ibv_wr_* API posts them), TSO
 * is for raw packet QPs.
 */
static int urdma_wr_opcode(enum ibv_wr_opcode opcode)
{
	switch (opcode) {
	case IBV_WR_RDMA_WRITE:
		return URDMA_WQE_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return URDMA_WQE_RDMA_WRITE_IMM;
	case IBV_WR_SEND:
		return URDMA_WQE_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return URDMA_WQE_SEND_IMM;
	case IBV_WR_SEND_WITH_INV:
		return URDMA_WQE_SEND_INV;
	case IBV_WR_RDMA_READ:
		return URDMA_WQE_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return URDMA_WQE_ATOMIC_CMP_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return URDMA_WQE_ATOMIC_FETCH_ADD;
	case IBV_WR_LOCAL_INV:
		return URDMA_WQE_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return URDMA_WQE_BIND_MW;
	default:
		return -1;
	}
}

/* The IBTA makes posting to the SQ of a QP not yet in RTS an error. */
static bool urdma_sq_ready(enum ibv_qp_state state)
{
	return state != IBV_QPS_RESET && state != IBV_QPS_INIT &&
	       state != IBV_QPS_RTR;
}

/* imm_data is kept big endian, as the bytes appear on the wire. */
static inline uint32_t urdma_be32_raw(__be32 v)
{
	uint32_t raw;

	memcpy(&raw, &v, sizeof(raw));
	return raw;
}

/* Clear the header of the WQE in slot idx and fill in the common part. */
static struct urdma_send_wqe *urdma_send_wqe_init(struct urdma_qp *qp,
						  uint32_t idx, uint64_t wr_id,
						  unsigned int op,
						  unsigned int send_flags)
{
	struct urdma_send_wqe *wqe = urdma_wq_entry(&qp->sq, idx);

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr_id;
	wqe->opcode = op;
	if ((send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		wqe->flags |= URDMA_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		wqe->flags |= URDMA_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		wqe->flags |= URDMA_WQE_FENCE;
	return wqe;
}

/* num <= qp->sq.max_sge SGEs after the header. */
static void urdma_send_wqe_sges(struct urdma_send_wqe *wqe,
				const struct ibv_sge *sg_list, uint32_t num)
{
	struct urdma_sge *sge = (struct urdma_sge *)(wqe + 1);
	uint32_t i;

	for (i = 0; i < num; i++) {
		sge[i].addr = sg_list[i].addr;
		sge[i].length = sg_list[i].length;
		sge[i].lkey = sg_list[i].lkey;
	}
	wqe->flags &= ~URDMA_WQE_INLINE;
	wqe->inline_len = 0;
	wqe->num_sge = num;
}

/* Inline data from the SGEs' buffers: EINVAL beyond max_inline. */
static int urdma_send_wqe_inline(struct urdma_qp *qp,
				 struct urdma_send_wqe *wqe,
				 const struct ibv_sge *sg_list, uint32_t num)
{
	uint8_t *data = (uint8_t *)(wqe + 1);
	uint32_t len = 0, i;

	for (i = 0; i < num; i++) {
		uint32_t n = sg_list[i].length;

		if (n > qp->sq.max_inline - len)
			return EINVAL;
		memcpy(data + len, (void *)(uintptr_t)sg_list[i].addr, n);
		len += n;
	}
	wqe->flags |= URDMA_WQE_INLINE;
	wqe->inline_len = len;
	wqe->num_sge = 0;
	return 0;
}

static void urdma_send_wqe_bind(struct urdma_send_wqe *wqe, uint32_t new_rkey,
				const struct ibv_mw_bind_info *info)
{
	wqe->bind.addr = info->addr;
	wqe->bind.length = info->length;
	/* No MR only to unbind (length 0); ibv_bind_mw checks that. */
	wqe->bind.mr_lkey = info->mr ? info->mr->lkey : 0;
	wqe->bind.new_rkey = new_rkey;
	/* IBV_ACCESS_* and IB_ACCESS_* share their values. */
	wqe->bind.access = info->mw_access_flags;
}

/* Build the WQE for wr in SQ slot idx.  Returns an errno. */
static int urdma_build_send(struct urdma_qp *qp, uint32_t idx,
			    const struct ibv_send_wr *wr)
{
	enum ibv_qp_type type = qp->vqp.qp.qp_type;
	const struct urdma_wqe_op *o;
	struct urdma_send_wqe *wqe;
	int op = urdma_wr_opcode(wr->opcode);

	if (op < 0 || !urdma_opcode_valid(type, op))
		return EINVAL;
	if (!check_comp_mask(wr->send_flags, URDMA_SEND_FLAGS))
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) && !urdma_opcode_inline(op))
		return EINVAL;
	if (type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;

	wqe = urdma_send_wqe_init(qp, idx, wr->wr_id, op, wr->send_flags);

	o = urdma_wqe_op(op);
	if (o->flags & URDMA_WOP_IMM)
		wqe->ex = urdma_be32_raw(wr->imm_data);
	else if (o->flags & URDMA_WOP_INV)
		wqe->ex = wr->invalidate_rkey;

	if (op == URDMA_WQE_BIND_MW) {
		/* Type 2: the caller chose the key (ibv_inc_rkey). */
		urdma_send_wqe_bind(wqe, wr->bind_mw.rkey,
				    &wr->bind_mw.bind_info);
		return 0;
	}
	if (o->flags & URDMA_WOP_LOCAL)
		return 0;
	if (o->flags & URDMA_WOP_ATOMIC) {
		wqe->atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->atomic.rkey = wr->wr.atomic.rkey;
		wqe->atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->atomic.swap = wr->wr.atomic.swap;
	} else if (o->remote_access) {
		wqe->rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->rdma.rkey = wr->wr.rdma.rkey;
	}

	if (type == IBV_QPT_UD) {
		wqe->ud.remote_qpn = wr->wr.ud.remote_qpn;
		wqe->ud.remote_qkey = wr->wr.ud.remote_qkey;
		wqe->ud.ah_num = to_urdma_ah(wr->wr.ud.ah)->ah_num;
	} else if (type == IBV_QPT_XRC_SEND) {
		if (wr->qp_type.xrc.remote_srqn > URDMA_QPN_MASK)
			return EINVAL;
		wqe->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	}

	if (wr->send_flags & IBV_SEND_INLINE)
		return urdma_send_wqe_inline(qp, wqe, wr->sg_list,
					     wr->num_sge);
	urdma_send_wqe_sges(wqe, wr->sg_list, wr->num_sge);
	return 0;
}

int urdma_post_send(struct ibv_qp *ibvqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct urdma_qp *qp = to_urdma_qp(ibvqp);
	struct urdma_wq *sq = &qp->sq;
	bool posted;
	uint32_t head;
	int err = 0, kerr;

	/* (No SQ: an XRC_RECV QP, created or opened, in any state.) */
	if (!sq->nent || !urdma_sq_ready(ibvqp->state)) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&sq->lock);
	head = sq->head;
	for (; wr; wr = wr->next) {
		if (urdma_wq_full(sq, head, &qp->db->sq_cons)) {
			err = ENOMEM;
			break;
		}
		err = urdma_build_send(qp, head, wr);
		if (err)
			break;
		head++;
	}
	posted = head != sq->head;
	if (posted) {
		sq->head = head;
		urdma_publish(&qp->db->sq_prod, head);
	}
	pthread_spin_unlock(&sq->lock);

	if (err)
		*bad_wr = wr;
	if (!posted)
		return err;

	/* The WRs are posted; a failed kick means the device is gone. */
	kerr = urdma_kick_sq(qp);
	if (kerr && !err) {
		*bad_wr = NULL;
		err = kerr;
	}
	return err;
}

/*
 * Bind a type 1 window: a BIND_MW WQE whose new key is the window's key
 * with the next variant.  mw->rkey changes now; if the bind completes in
 * error, the caller has to undo that (as with rxe).
 */
int urdma_bind_mw(struct ibv_qp *ibvqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {}, *bad_wr = NULL;
	int err;

	/* Only type 2 windows can be zero based. */
	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;

	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;

	err = urdma_post_send(ibvqp, &wr, &bad_wr);
	/* Without a bad WR, only the kick failed: the bind is posted. */
	if (!err || !bad_wr)
		mw->rkey = wr.bind_mw.rkey;
	return err;
}

/* ---- receive WQEs --------------------------------------------------------- */

static int urdma_build_recv(struct urdma_wq *wq, uint32_t idx,
			    const struct ibv_recv_wr *wr)
{
	struct urdma_recv_wqe *wqe;
	struct urdma_sge *sge;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge)
		return EINVAL;

	wqe = urdma_wq_entry(wq, idx);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	sge = (struct urdma_sge *)(wqe + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	return 0;
}

/*
 * Post a chain of receive WRs to an RQ or SRQ.  Returns an errno, with
 * *bad_wr the first WR not posted; *posted says whether any was.
 */
static int urdma_post_recv_wq(struct urdma_wq *wq, uint32_t *db_prod,
			      uint32_t *db_cons, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr, bool *posted)
{
	uint32_t head;
	int err = 0;

	pthread_spin_lock(&wq->lock);
	head = wq->head;
	for (; wr; wr = wr->next) {
		if (urdma_wq_full(wq, head, db_cons)) {
			err = ENOMEM;
			break;
		}
		err = urdma_build_recv(wq, head, wr);
		if (err)
			break;
		head++;
	}
	*posted = head != wq->head;
	if (*posted) {
		wq->head = head;
		urdma_publish(db_prod, head);
	}
	pthread_spin_unlock(&wq->lock);

	if (err)
		*bad_wr = wr;
	return err;
}

int urdma_post_recv(struct ibv_qp *ibvqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct urdma_qp *qp = to_urdma_qp(ibvqp);
	bool posted;
	int err, kerr;

	/* No RQ with an SRQ; C10-97.2.1: none in RESET either. */
	if (!qp->rq.nent || ibvqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}

	err = urdma_post_recv_wq(&qp->rq, &qp->db->rq_prod, &qp->db->rq_cons,
				 wr, bad_wr, &posted);
	if (!posted)
		return err;

	/* The engine flushes receives posted to a QP in ERROR. */
	kerr = urdma_kick_rq(qp);
	if (kerr && !err) {
		*bad_wr = NULL;
		err = kerr;
	}
	return err;
}

int urdma_post_srq_recv(struct ibv_srq *ibvsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct urdma_srq *srq = to_urdma_srq(ibvsrq);
	bool posted;
	int err;

	err = urdma_post_recv_wq(&srq->rq, &srq->db->prod, &srq->db->cons, wr,
				 bad_wr, &posted);
	/*
	 * No kick: SRQ receives are consumed by senders' engines, and a
	 * sender waiting for one retries on its RNR timer.
	 */
	(void)posted;
	return err;
}

/* ---- the ibv_wr_* API ----------------------------------------------------- */

/*
 * Builders (wr_send, wr_rdma_write, ...) take the next SQ slot and make it
 * wr_cur; setters (wr_set_*) fill in wr_cur's data.  The first error is
 * kept in wr_err and turns every later call into a no-op; wr_complete
 * then discards the whole batch and returns it.
 */
static void urdma_wr_fail(struct urdma_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
	qp->wr_cur = NULL;
}

static struct urdma_send_wqe *urdma_wr_new(struct ibv_qp_ex *ibvqp,
					   unsigned int op)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);
	struct urdma_send_wqe *wqe;

	if (qp->wr_err)
		return NULL;
	if (!check_comp_mask(ibvqp->wr_flags, URDMA_WR_FLAGS)) {
		urdma_wr_fail(qp, EINVAL);
		return NULL;
	}
	if (!urdma_opcode_valid(ibvqp->qp_base.qp_type, op)) {
		urdma_wr_fail(qp, EINVAL);
		return NULL;
	}
	if (urdma_wq_full(&qp->sq, qp->wr_head, &qp->db->sq_cons)) {
		urdma_wr_fail(qp, ENOMEM);
		return NULL;
	}

	wqe = urdma_send_wqe_init(qp, qp->wr_head, ibvqp->wr_id, op,
				  ibvqp->wr_flags);
	qp->wr_head++;
	qp->wr_cur = wqe;
	return wqe;
}

/* The WQE the setters apply to, or NULL (and an error) if none. */
static struct urdma_send_wqe *urdma_wr_cur(struct urdma_qp *qp)
{
	if (qp->wr_err)
		return NULL;
	if (!qp->wr_cur)
		urdma_wr_fail(qp, EINVAL);
	return qp->wr_cur;
}

static void urdma_wr_send(struct ibv_qp_ex *ibvqp)
{
	urdma_wr_new(ibvqp, URDMA_WQE_SEND);
}

static void urdma_wr_send_imm(struct ibv_qp_ex *ibvqp, __be32 imm_data)
{
	struct urdma_send_wqe *wqe = urdma_wr_new(ibvqp, URDMA_WQE_SEND_IMM);

	if (wqe)
		wqe->ex = urdma_be32_raw(imm_data);
}

static void urdma_wr_send_inv(struct ibv_qp_ex *ibvqp,
			      uint32_t invalidate_rkey)
{
	struct urdma_send_wqe *wqe = urdma_wr_new(ibvqp, URDMA_WQE_SEND_INV);

	if (wqe)
		wqe->ex = invalidate_rkey;
}

static void urdma_wr_rdma(struct ibv_qp_ex *ibvqp, unsigned int op,
			  uint32_t rkey, uint64_t remote_addr, __be32 imm_data)
{
	struct urdma_send_wqe *wqe = urdma_wr_new(ibvqp, op);

	if (!wqe)
		return;
	wqe->rdma.remote_addr = remote_addr;
	wqe->rdma.rkey = rkey;
	if (op == URDMA_WQE_RDMA_WRITE_IMM)
		wqe->ex = urdma_be32_raw(imm_data);
}

static void urdma_wr_rdma_write(struct ibv_qp_ex *ibvqp, uint32_t rkey,
				uint64_t remote_addr)
{
	urdma_wr_rdma(ibvqp, URDMA_WQE_RDMA_WRITE, rkey, remote_addr, 0);
}

static void urdma_wr_rdma_write_imm(struct ibv_qp_ex *ibvqp, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	urdma_wr_rdma(ibvqp, URDMA_WQE_RDMA_WRITE_IMM, rkey, remote_addr,
		      imm_data);
}

static void urdma_wr_rdma_read(struct ibv_qp_ex *ibvqp, uint32_t rkey,
			       uint64_t remote_addr)
{
	urdma_wr_rdma(ibvqp, URDMA_WQE_RDMA_READ, rkey, remote_addr, 0);
}

static void urdma_wr_atomic(struct ibv_qp_ex *ibvqp, unsigned int op,
			    uint32_t rkey, uint64_t remote_addr,
			    uint64_t compare_add, uint64_t swap)
{
	struct urdma_send_wqe *wqe = urdma_wr_new(ibvqp, op);

	if (!wqe)
		return;
	wqe->atomic.remote_addr = remote_addr;
	wqe->atomic.rkey = rkey;
	wqe->atomic.compare_add = compare_add;
	wqe->atomic.swap = swap;
}

static void urdma_wr_atomic_cmp_swp(struct ibv_qp_ex *ibvqp, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	urdma_wr_atomic(ibvqp, URDMA_WQE_ATOMIC_CMP_SWP, rkey, remote_addr,
			compare, swap);
}

static void urdma_wr_atomic_fetch_add(struct ibv_qp_ex *ibvqp, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	urdma_wr_atomic(ibvqp, URDMA_WQE_ATOMIC_FETCH_ADD, rkey, remote_addr,
			add, 0);
}

/* The 8 bytes at atomic_wr, as they are, in compare_add. */
static void urdma_wr_atomic_write(struct ibv_qp_ex *ibvqp, uint32_t rkey,
				  uint64_t remote_addr, const void *atomic_wr)
{
	uint64_t data;

	memcpy(&data, atomic_wr, sizeof(data));
	urdma_wr_atomic(ibvqp, URDMA_WQE_ATOMIC_WRITE, rkey, remote_addr,
			data, 0);
}

static void urdma_wr_flush(struct ibv_qp_ex *ibvqp, uint32_t rkey,
			   uint64_t remote_addr, size_t len, uint8_t type,
			   uint8_t level)
{
	struct urdma_send_wqe *wqe = urdma_wr_new(ibvqp, URDMA_WQE_FLUSH);

	if (!wqe)
		return;
	wqe->flush.remote_addr = remote_addr;
	wqe->flush.rkey = rkey;
	wqe->flush.length = len;
	wqe->flush.type = type;
	wqe->flush.level = level;
}

static void urdma_wr_local_inv(struct ibv_qp_ex *ibvqp,
			       uint32_t invalidate_rkey)
{
	struct urdma_send_wqe *wqe = urdma_wr_new(ibvqp, URDMA_WQE_LOCAL_INV);

	if (wqe)
		wqe->ex = invalidate_rkey;
}

/* A type 2 window: rkey is the key after the bind. */
static void urdma_wr_bind_mw(struct ibv_qp_ex *ibvqp, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct urdma_send_wqe *wqe = urdma_wr_new(ibvqp, URDMA_WQE_BIND_MW);

	if (wqe)
		urdma_send_wqe_bind(wqe, rkey, bind_info);
}

static void urdma_wr_set_ud_addr(struct ibv_qp_ex *ibvqp, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);
	struct urdma_send_wqe *wqe = urdma_wr_cur(qp);

	if (!wqe)
		return;
	if (ibvqp->qp_base.qp_type != IBV_QPT_UD || !ah) {
		urdma_wr_fail(qp, EINVAL);
		return;
	}
	wqe->ud.remote_qpn = remote_qpn;
	wqe->ud.remote_qkey = remote_qkey;
	wqe->ud.ah_num = to_urdma_ah(ah)->ah_num;
}

/* XRC_SEND: the XRC SRQ of the target that receives the WQE. */
static void urdma_wr_set_xrc_srqn(struct ibv_qp_ex *ibvqp,
				  uint32_t remote_srqn)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);
	struct urdma_send_wqe *wqe = urdma_wr_cur(qp);

	if (!wqe)
		return;
	if (ibvqp->qp_base.qp_type != IBV_QPT_XRC_SEND ||
	    remote_srqn > URDMA_QPN_MASK) {
		urdma_wr_fail(qp, EINVAL);
		return;
	}
	wqe->xrc_srqn = remote_srqn;
}

/* SGEs are the data of every opcode but LOCAL_INV and BIND_MW. */
static struct urdma_send_wqe *urdma_wr_cur_data(struct urdma_qp *qp)
{
	struct urdma_send_wqe *wqe = urdma_wr_cur(qp);

	if (wqe && (wqe->opcode == URDMA_WQE_LOCAL_INV ||
		    wqe->opcode == URDMA_WQE_BIND_MW)) {
		urdma_wr_fail(qp, EINVAL);
		return NULL;
	}
	return wqe;
}

static void urdma_wr_set_sge(struct ibv_qp_ex *ibvqp, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);
	struct urdma_send_wqe *wqe = urdma_wr_cur_data(qp);
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	if (!wqe)
		return;
	if (!qp->sq.max_sge) {
		urdma_wr_fail(qp, EINVAL);
		return;
	}
	urdma_send_wqe_sges(wqe, &sge, 1);
}

static void urdma_wr_set_sge_list(struct ibv_qp_ex *ibvqp, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);
	struct urdma_send_wqe *wqe = urdma_wr_cur_data(qp);

	if (!wqe)
		return;
	if (num_sge > qp->sq.max_sge) {
		urdma_wr_fail(qp, EINVAL);
		return;
	}
	urdma_send_wqe_sges(wqe, sg_list, num_sge);
}

static void urdma_wr_set_inline_data_list(struct ibv_qp_ex *ibvqp,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);
	struct urdma_send_wqe *wqe = urdma_wr_cur_data(qp);
	uint8_t *data;
	size_t len = 0, i;

	if (!wqe)
		return;
	if (!urdma_opcode_inline(wqe->opcode)) {
		urdma_wr_fail(qp, EINVAL);
		return;
	}

	data = (uint8_t *)(wqe + 1);
	for (i = 0; i < num_buf; i++) {
		size_t n = buf_list[i].length;

		if (n > qp->sq.max_inline - len) {
			urdma_wr_fail(qp, EINVAL);
			return;
		}
		memcpy(data + len, buf_list[i].addr, n);
		len += n;
	}
	wqe->flags |= URDMA_WQE_INLINE;
	wqe->inline_len = len;
	wqe->num_sge = 0;
}

static void urdma_wr_set_inline_data(struct ibv_qp_ex *ibvqp, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	urdma_wr_set_inline_data_list(ibvqp, 1, &buf);
}

static void urdma_wr_start(struct ibv_qp_ex *ibvqp)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_head = qp->sq.head;
	qp->wr_cur = NULL;
	qp->wr_err = qp->sq.nent && urdma_sq_ready(ibvqp->qp_base.state) ?
		     0 : EINVAL;
}

static int urdma_wr_complete(struct ibv_qp_ex *ibvqp)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);
	int err = qp->wr_err;
	bool posted = false;

	qp->wr_cur = NULL;
	if (!err && qp->wr_head != qp->sq.head) {
		qp->sq.head = qp->wr_head;
		urdma_publish(&qp->db->sq_prod, qp->sq.head);
		posted = true;
	}
	pthread_spin_unlock(&qp->sq.lock);

	if (posted)
		err = urdma_kick_sq(qp);
	return err;
}

static void urdma_wr_abort(struct ibv_qp_ex *ibvqp)
{
	struct urdma_qp *qp = qp_ex_to_urdma_qp(ibvqp);

	/* The slots from sq.head on were never published. */
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/* Install the builders asked for (checked against urdma_qp_send_ops). */
void urdma_qp_set_wr_ops(struct urdma_qp *qp, uint64_t flags)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	if (flags & IBV_QP_EX_WITH_SEND)
		qpx->wr_send = urdma_wr_send;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
		qpx->wr_send_imm = urdma_wr_send_imm;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		qpx->wr_send_inv = urdma_wr_send_inv;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE)
		qpx->wr_rdma_write = urdma_wr_rdma_write;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		qpx->wr_rdma_write_imm = urdma_wr_rdma_write_imm;
	if (flags & IBV_QP_EX_WITH_RDMA_READ)
		qpx->wr_rdma_read = urdma_wr_rdma_read;
	if (flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		qpx->wr_atomic_cmp_swp = urdma_wr_atomic_cmp_swp;
	if (flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		qpx->wr_atomic_fetch_add = urdma_wr_atomic_fetch_add;
	if (flags & IBV_QP_EX_WITH_ATOMIC_WRITE)
		qpx->wr_atomic_write = urdma_wr_atomic_write;
	if (flags & IBV_QP_EX_WITH_FLUSH)
		qpx->wr_flush = urdma_wr_flush;
	if (flags & IBV_QP_EX_WITH_LOCAL_INV)
		qpx->wr_local_inv = urdma_wr_local_inv;
	if (flags & IBV_QP_EX_WITH_BIND_MW)
		qpx->wr_bind_mw = urdma_wr_bind_mw;

	qpx->wr_set_ud_addr = urdma_wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = urdma_wr_set_xrc_srqn;
	qpx->wr_set_sge = urdma_wr_set_sge;
	qpx->wr_set_sge_list = urdma_wr_set_sge_list;
	qpx->wr_set_inline_data = urdma_wr_set_inline_data;
	qpx->wr_set_inline_data_list = urdma_wr_set_inline_data_list;

	qpx->wr_start = urdma_wr_start;
	qpx->wr_complete = urdma_wr_complete;
	qpx->wr_abort = urdma_wr_abort;
}
