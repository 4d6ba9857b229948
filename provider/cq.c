// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: completion queues.
 *
 * The CQ ring is user memory: nent (a power of two) urdma_cqe entries that
 * the engine fills, writing owner last with release semantics.  Entry
 * cons is valid when its owner bit is 1 on even passes over the ring and 0
 * on odd ones.  The consumer index is free-running; it is published to
 * the doorbell record (db->cons) with release semantics once the CQEs
 * before it were read, which hands their slots back to the engine.
 *
 * One spinlock per CQ serializes the consumers: poll_cq, the cq_ex polling
 * functions (held from a successful start_poll to end_poll) and
 * resize_cq, which holds it across the command so that the kernel moves
 * the CQEs from a consumer index that cannot change under it.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "urdma.h"

/* urdma_cqe.opcode and .status carry the ibv_wc values as they are. */
#define URDMA_SAME_OPCODE(cqe, wc) \
	static_assert((int)(cqe) == (int)(wc), #cqe " != " #wc)

URDMA_SAME_OPCODE(URDMA_CQE_SEND, IBV_WC_SEND);
URDMA_SAME_OPCODE(URDMA_CQE_RDMA_WRITE, IBV_WC_RDMA_WRITE);
URDMA_SAME_OPCODE(URDMA_CQE_RDMA_READ, IBV_WC_RDMA_READ);
URDMA_SAME_OPCODE(URDMA_CQE_COMP_SWAP, IBV_WC_COMP_SWAP);
URDMA_SAME_OPCODE(URDMA_CQE_FETCH_ADD, IBV_WC_FETCH_ADD);
URDMA_SAME_OPCODE(URDMA_CQE_BIND_MW, IBV_WC_BIND_MW);
URDMA_SAME_OPCODE(URDMA_CQE_LOCAL_INV, IBV_WC_LOCAL_INV);
URDMA_SAME_OPCODE(URDMA_CQE_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE);
URDMA_SAME_OPCODE(URDMA_CQE_FLUSH, IBV_WC_FLUSH);
URDMA_SAME_OPCODE(URDMA_CQE_RECV, IBV_WC_RECV);
URDMA_SAME_OPCODE(URDMA_CQE_RECV_RDMA_IMM, IBV_WC_RECV_RDMA_WITH_IMM);

#define URDMA_CQE_SHIFT 5
#define URDMA_CQE_TS_SHIFT 6
static_assert(1 << URDMA_CQE_SHIFT == URDMA_CQE_SIZE, "CQE size");
static_assert(1 << URDMA_CQE_TS_SHIFT == URDMA_CQE_TS_SIZE, "CQE size");

enum {
	URDMA_CQ_TS_WC_FLAGS = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	/* Every field of struct ibv_wc has a reader, and the timestamps. */
	URDMA_CQ_SUP_WC_FLAGS = IBV_WC_STANDARD_FLAGS | URDMA_CQ_TS_WC_FLAGS,
	/* Not IBV_CQ_INIT_ATTR_MASK_PD: there are no parent domains. */
	URDMA_CQ_SUP_COMP_MASK = IBV_CQ_INIT_ATTR_MASK_FLAGS |
				 IBV_CQ_INIT_ATTR_MASK_PD,
	/* A hint; the CQ is locked anyway. */
	URDMA_CQ_SUP_FLAGS = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
};

/* The CQE at free-running index idx, filled or not. */
static inline struct urdma_cqe *urdma_cq_at(struct urdma_cq *cq, uint32_t idx)
{
	return (struct urdma_cqe *)((char *)cq->cqes +
				    ((size_t)(idx & (cq->nent - 1)) <<
				     cq->cqe_shift));
}

/* Is the CQE at free-running index idx filled? */
static inline struct urdma_cqe *urdma_cq_valid_at(struct urdma_cq *cq,
						  uint32_t idx)
{
	struct urdma_cqe *cqe = urdma_cq_at(cq, idx);
	uint8_t owner;

	/* Pairs with the engine's release store of owner. */
	owner = atomic_load_explicit((_Atomic(uint8_t) *)&cqe->owner,
				     memory_order_acquire);
	/* Valid when owner & 1 == ((idx / nent) & 1) ^ 1. */
	if ((owner & 1) == !!(idx & cq->nent))
		return NULL;
	return cqe;
}

/* The CQE at the consumer index, or NULL if the engine has not filled it. */
static inline struct urdma_cqe *urdma_cq_peek(struct urdma_cq *cq)
{
	return urdma_cq_valid_at(cq, cq->cons);
}

/* Hand the slots before cq->cons back to the engine. */
static inline void urdma_cq_publish(struct urdma_cq *cq)
{
	atomic_store_explicit((_Atomic(uint32_t) *)&cq->db->cons, cq->cons,
			      memory_order_release);
}

/*
 * Drop the CQEs of QP qpn that nobody consumed yet, as mlx5 does when a QP
 * goes back to RESET or is destroyed: stale completions (flushes above
 * all) must not surface after the QP was restarted.  The kernel has
 * stopped producing CQEs for the QP by then.  The other QPs' CQEs move up
 * towards the producer end, keeping their order, and the consumer index
 * skips the freed slots; the engine only ever writes past the last valid
 * CQE, so the two never meet.  A moved CQE lands on a slot that held a
 * valid CQE of the same pass, so its owner bit is already right.
 */
void urdma_cq_clean(struct urdma_cq *cq, uint32_t qpn)
{
	uint32_t n = 0, k, nfreed = 0;

	pthread_spin_lock(&cq->lock);
	while (n < cq->nent && urdma_cq_valid_at(cq, cq->cons + n))
		n++;
	for (k = n; k-- > 0;) {
		struct urdma_cqe *cqe = urdma_cq_at(cq, cq->cons + k);

		if (cqe->qp_num == qpn) {
			nfreed++;
		} else if (nfreed) {
			struct urdma_cqe *dst = urdma_cq_at(cq, cq->cons + k +
							    nfreed);

			/* All but the owner byte (timestamps follow it). */
			memcpy(dst, cqe, offsetof(struct urdma_cqe, owner));
			memcpy(dst + 1, cqe + 1,
			       (1u << cq->cqe_shift) - sizeof(*cqe));
		}
	}
	if (nfreed) {
		cq->cons += nfreed;
		urdma_cq_publish(cq);
	}
	pthread_spin_unlock(&cq->lock);
}

/* imm_data (big endian) or the invalidated rkey, as the engine wrote it. */
static inline __be32 urdma_cqe_ex(const struct urdma_cqe *cqe)
{
	__be32 ex;

	memcpy(&ex, &cqe->ex, sizeof(ex));
	return ex;
}

static inline unsigned int urdma_cqe_wc_flags(const struct urdma_cqe *cqe)
{
	unsigned int flags = 0;

	if (cqe->flags & URDMA_CQE_GRH)
		flags |= IBV_WC_GRH;
	if (cqe->flags & URDMA_CQE_IMM)
		flags |= IBV_WC_WITH_IMM;
	if (cqe->flags & URDMA_CQE_INV)
		flags |= IBV_WC_WITH_INV;
	return flags;
}

/*
 * The SL of a completion.  RoCE carries no SL; for a UD receive a RoCE
 * adapter reports there what kind of frame arrived (IBTA Annex A17.4.5.1:
 * IPv4 or IPv6), encoded as mlx5 does and as UCX's ud_verbs reads it to
 * find the destination address in the GRH area: bit 3 for RoCEv2 (UDP),
 * bits 2:0 1 for IPv6 and 2 for IPv4.  UCX drops every UD packet whose
 * SL says otherwise.
 */
static inline uint8_t urdma_cqe_sl(const struct urdma_cqe *cqe)
{
	if (!(cqe->flags & URDMA_CQE_GRH))
		return cqe->sl;
	switch ((cqe->flags & URDMA_CQE_NET_MASK) >> URDMA_CQE_NET_SHIFT) {
	case URDMA_CQE_NET_IPV4:
		return 0x8 | 0x2;
	case URDMA_CQE_NET_IPV6:
		return 0x8 | 0x1;
	default:
		return cqe->sl;
	}
}

static inline void urdma_cqe_to_wc(const struct urdma_cqe *cqe,
				   struct ibv_wc *wc)
{
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	/* Also sets invalidated_rkey, its union partner. */
	wc->imm_data = urdma_cqe_ex(cqe);
	wc->qp_num = cqe->qp_num;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = urdma_cqe_wc_flags(cqe);
	wc->pkey_index = cqe->pkey_index;
	wc->slid = 0;
	wc->sl = urdma_cqe_sl(cqe);
	wc->dlid_path_bits = 0;
}

/*
 * An empty poll: with ctx->yield_idle (one CPU), yield it if an engine of
 * the context is awake, as it then has work that the spinning consumer
 * keeps off the CPU.  With every engine asleep there is nothing to wait
 * for but the network, and the poll stays in user space.
 */
static void urdma_cq_idle(struct urdma_cq *cq)
{
	struct urdma_context *ctx = to_urdma_ctx(cq->vcq.cq.context);
	uint32_t i;

	if (!ctx->yield_idle)
		return;
	for (i = 0; i < ctx->num_engines; i++) {
		if (!urdma_engine_asleep(ctx, i)) {
			sched_yield();
			return;
		}
	}
}

int urdma_poll_cq(struct ibv_cq *ibvcq, int ne, struct ibv_wc *wc)
{
	struct urdma_cq *cq = to_urdma_cq(ibvcq);
	struct urdma_cqe *cqe;
	int n;

	pthread_spin_lock(&cq->lock);
	for (n = 0; n < ne; n++) {
		cqe = urdma_cq_peek(cq);
		if (!cqe)
			break;
		urdma_cqe_to_wc(cqe, &wc[n]);
		cq->cons++;
	}
	if (n)
		urdma_cq_publish(cq);
	pthread_spin_unlock(&cq->lock);
	if (!n && ne > 0)
		urdma_cq_idle(cq);
	return n;
}

/*
 * Extended polling.  cq->cur is the CQE returned by the last successful
 * start_poll/next_poll; it is consumed (cons advanced and published) by
 * the following next_poll or end_poll, so the read_* functions can read
 * it in place.
 */
static inline void urdma_cq_set_cur(struct urdma_cq *cq,
				    struct urdma_cqe *cqe)
{
	cq->cur = cqe;
	cq->vcq.cq_ex.status = cqe->status;
	cq->vcq.cq_ex.wr_id = cqe->wr_id;
}

static int urdma_start_poll(struct ibv_cq_ex *ibvcq,
			    struct ibv_poll_cq_attr *attr)
{
	struct urdma_cq *cq = cq_ex_to_urdma_cq(ibvcq);
	struct urdma_cqe *cqe;

	if (attr->comp_mask)
		return EINVAL;

	pthread_spin_lock(&cq->lock);
	cqe = urdma_cq_peek(cq);
	if (!cqe) {
		pthread_spin_unlock(&cq->lock);
		urdma_cq_idle(cq);
		return ENOENT;
	}
	urdma_cq_set_cur(cq, cqe);
	return 0;
}

static int urdma_next_poll(struct ibv_cq_ex *ibvcq)
{
	struct urdma_cq *cq = cq_ex_to_urdma_cq(ibvcq);
	struct urdma_cqe *cqe;

	if (cq->cur) {
		cq->cur = NULL;
		cq->cons++;
		urdma_cq_publish(cq);
	}

	cqe = urdma_cq_peek(cq);
	if (!cqe)
		return ENOENT;
	urdma_cq_set_cur(cq, cqe);
	return 0;
}

static void urdma_end_poll(struct ibv_cq_ex *ibvcq)
{
	struct urdma_cq *cq = cq_ex_to_urdma_cq(ibvcq);

	if (cq->cur) {
		cq->cur = NULL;
		cq->cons++;
		urdma_cq_publish(cq);
	}
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode urdma_read_opcode(struct ibv_cq_ex *ibvcq)
{
	return cq_ex_to_urdma_cq(ibvcq)->cur->opcode;
}

static uint32_t urdma_read_vendor_err(struct ibv_cq_ex *ibvcq)
{
	return cq_ex_to_urdma_cq(ibvcq)->cur->vendor_err;
}

static uint32_t urdma_read_byte_len(struct ibv_cq_ex *ibvcq)
{
	return cq_ex_to_urdma_cq(ibvcq)->cur->byte_len;
}

/* Also ibv_wc_read_invalidated_rkey's backend. */
static __be32 urdma_read_imm_data(struct ibv_cq_ex *ibvcq)
{
	return urdma_cqe_ex(cq_ex_to_urdma_cq(ibvcq)->cur);
}

static uint32_t urdma_read_qp_num(struct ibv_cq_ex *ibvcq)
{
	return cq_ex_to_urdma_cq(ibvcq)->cur->qp_num;
}

static uint32_t urdma_read_src_qp(struct ibv_cq_ex *ibvcq)
{
	return cq_ex_to_urdma_cq(ibvcq)->cur->src_qp;
}

static unsigned int urdma_read_wc_flags(struct ibv_cq_ex *ibvcq)
{
	return urdma_cqe_wc_flags(cq_ex_to_urdma_cq(ibvcq)->cur);
}

/* RoCE has no LIDs. */
static uint32_t urdma_read_slid(struct ibv_cq_ex *ibvcq)
{
	return 0;
}

static uint8_t urdma_read_sl(struct ibv_cq_ex *ibvcq)
{
	return urdma_cqe_sl(cq_ex_to_urdma_cq(ibvcq)->cur);
}

static uint8_t urdma_read_dlid_path_bits(struct ibv_cq_ex *ibvcq)
{
	return 0;
}

/* The timestamps that follow the CQE in a CQ created with them. */
static const struct urdma_cqe_ts *urdma_cur_ts(struct ibv_cq_ex *ibvcq)
{
	return (const struct urdma_cqe_ts *)cq_ex_to_urdma_cq(ibvcq)->cur;
}

static uint64_t urdma_read_completion_ts(struct ibv_cq_ex *ibvcq)
{
	return urdma_cur_ts(ibvcq)->ts_raw;
}

static uint64_t urdma_read_completion_wallclock_ns(struct ibv_cq_ex *ibvcq)
{
	return urdma_cur_ts(ibvcq)->ts_wall;
}

static void urdma_cq_set_ex_ops(struct urdma_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *cq_ex = &cq->vcq.cq_ex;

	cq_ex->start_poll = urdma_start_poll;
	cq_ex->next_poll = urdma_next_poll;
	cq_ex->end_poll = urdma_end_poll;
	cq_ex->read_opcode = urdma_read_opcode;
	cq_ex->read_vendor_err = urdma_read_vendor_err;
	cq_ex->read_wc_flags = urdma_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cq_ex->read_byte_len = urdma_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		cq_ex->read_imm_data = urdma_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cq_ex->read_qp_num = urdma_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cq_ex->read_src_qp = urdma_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		cq_ex->read_slid = urdma_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		cq_ex->read_sl = urdma_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cq_ex->read_dlid_path_bits = urdma_read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cq_ex->read_completion_ts = urdma_read_completion_ts;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		cq_ex->read_completion_wallclock_ns =
			urdma_read_completion_wallclock_ns;
}

/* The ring size for cqe entries, or 0 (errno EINVAL) if out of range. */
static uint32_t urdma_cq_nent(struct urdma_context *ctx, int cqe)
{
	if (cqe < 1 || (uint32_t)cqe > ctx->max_cqe) {
		errno = EINVAL;
		return 0;
	}
	return roundup_pow_of_two(cqe);
}

static int urdma_cq_check_attr(const struct ibv_cq_init_attr_ex *attr)
{
	if (!check_comp_mask(attr->comp_mask, URDMA_CQ_SUP_COMP_MASK))
		return EINVAL;
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		if (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)
			return EOPNOTSUPP;
		if (!check_comp_mask(attr->flags, URDMA_CQ_SUP_FLAGS))
			return EINVAL;
	}
	if (!check_comp_mask(attr->wc_flags, URDMA_CQ_SUP_WC_FLAGS))
		return EOPNOTSUPP;
	/* The PD of a CQ is a parent domain, for its allocators. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain ||
	     !to_urdma_pd(attr->parent_domain)->protection))
		return EINVAL;
	return 0;
}

static struct urdma_cq *urdma_cq_create(struct ibv_context *ibvctx,
					struct ibv_cq_init_attr_ex *attr,
					bool ex)
{
	struct urdma_context *ctx = to_urdma_ctx(ibvctx);
	struct urdma_cmd_create_cq_resp resp = {};
	struct urdma_cmd_create_cq cmd = {};
	struct urdma_cq *cq;
	uint32_t nent;
	int err;

	err = urdma_cq_check_attr(attr);
	if (err) {
		errno = err;
		return NULL;
	}

	nent = urdma_cq_nent(ctx, attr->cqe);
	if (!nent)
		return NULL;

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}

	err = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (err)
		goto err_free_cq;

	/* The kernel makes the entries 64 bytes when asked for timestamps. */
	cq->cqe_shift = attr->wc_flags & URDMA_CQ_TS_WC_FLAGS ?
			URDMA_CQE_TS_SHIFT : URDMA_CQE_SHIFT;
	err = urdma_alloc_buf(ctx, &cq->ring, (size_t)nent << cq->cqe_shift,
			      attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD ?
			      to_urdma_pd(attr->parent_domain) : NULL,
			      URDMA_RES_TYPE_CQ);
	if (err)
		goto err_destroy_lock;

	cq->db = urdma_alloc_db(ctx);
	if (!cq->db) {
		err = errno;
		goto err_free_ring;
	}

	cq->cqes = cq->ring.buf;
	cq->nent = nent;

	cmd.nent = nent;
	cmd.buf_addr = (uintptr_t)cq->ring.buf;
	cmd.db_addr = (uintptr_t)cq->db;
	err = ibv_cmd_create_cq_ex(ibvctx, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (err)
		goto err_free_db;

	cq->cqn = resp.cqn;
	if (ex)
		urdma_cq_set_ex_ops(cq, attr->wc_flags);
	return cq;

err_free_db:
	urdma_free_db(ctx, cq->db);
err_free_ring:
	urdma_free_buf(&cq->ring);
err_destroy_lock:
	pthread_spin_destroy(&cq->lock);
err_free_cq:
	free(cq);
	errno = err;
	return NULL;
}

struct ibv_cq *urdma_create_cq(struct ibv_context *ibvctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe,
		.channel = channel,
		.comp_vector = comp_vector,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct urdma_cq *cq;

	cq = urdma_cq_create(ibvctx, &attr, false);
	return cq ? &cq->vcq.cq : NULL;
}

struct ibv_cq_ex *urdma_create_cq_ex(struct ibv_context *ibvctx,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct urdma_cq *cq;

	cq = urdma_cq_create(ibvctx, attr, true);
	return cq ? &cq->vcq.cq_ex : NULL;
}

/*
 * The kernel moves the CQEs not yet consumed to entries 0.. of the new
 * ring and sets db->cons to 0; the old ring is ours to free afterwards.
 */
int urdma_resize_cq(struct ibv_cq *ibvcq, int cqe)
{
	struct urdma_context *ctx = to_urdma_ctx(ibvcq->context);
	struct urdma_cq *cq = to_urdma_cq(ibvcq);
	struct urdma_cmd_resize_cq_resp resp = {};
	struct urdma_cmd_resize_cq cmd = {};
	struct urdma_buf ring, old;
	uint32_t nent;
	int err;

	nent = urdma_cq_nent(ctx, cqe);
	if (!nent)
		return errno;

	err = urdma_alloc_buf(ctx, &ring, (size_t)nent << cq->cqe_shift,
			      cq->ring.pd, URDMA_RES_TYPE_CQ);
	if (err)
		return err;

	cmd.nent = nent;
	cmd.buf_addr = (uintptr_t)ring.buf;

	pthread_spin_lock(&cq->lock);
	err = ibv_cmd_resize_cq(ibvcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err) {
		pthread_spin_unlock(&cq->lock);
		urdma_free_buf(&ring);
		return err;
	}

	old = cq->ring;
	cq->ring = ring;
	cq->cqes = ring.buf;
	cq->nent = nent;
	cq->cons = 0;
	cq->cur = NULL;
	pthread_spin_unlock(&cq->lock);

	urdma_free_buf(&old);
	return 0;
}

int urdma_destroy_cq(struct ibv_cq *ibvcq)
{
	struct urdma_context *ctx = to_urdma_ctx(ibvcq->context);
	struct urdma_cq *cq = to_urdma_cq(ibvcq);
	int err;

	err = ibv_cmd_destroy_cq(ibvcq);
	if (err)
		return err;

	urdma_free_db(ctx, cq->db);
	urdma_free_buf(&cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/*
 * Arm the CQ: bits 31:2 of db->arm count the arm requests, so that the
 * engine tells a new request from one it already answered.  The release
 * store also orders it after the consumer index published by a previous
 * poll.  No lock: a thread may arm a CQ that another one is polling.
 *
 * No kick: the engine reads arm when it writes a CQE, so a sleeping
 * engine (which writes none) has nothing to notice until work wakes it.
 */
int urdma_req_notify_cq(struct ibv_cq *ibvcq, int solicited_only)
{
	struct urdma_cq *cq = to_urdma_cq(ibvcq);
	uint32_t sn;

	sn = atomic_fetch_add_explicit(&cq->arm_sn, 1,
				       memory_order_relaxed) + 1;
	atomic_store_explicit((_Atomic(uint32_t) *)&cq->db->arm,
			      (sn << URDMA_CQ_ARM_SN_SHIFT) |
			      (solicited_only ? URDMA_CQ_ARM_SOLICITED :
						URDMA_CQ_ARM_NEXT),
			      memory_order_release);
	return 0;
}
