/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * urdma provider: device, context and object types.
 */
#ifndef __URDMA_H__
#define __URDMA_H__

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ccan/list.h>
#include <ccan/minmax.h>
#include <infiniband/driver.h>
#include <util/util.h>

#include "urdma-abi.h"

struct urdma_device {
	struct verbs_device vdev;
};

/*
 * Limits the kernel enforces on user queues, from
 * struct urdma_alloc_ucontext_resp, and the engine state page (mapped
 * read-only, num_engines entries).  Read-only after alloc_context.
 * db_pages (the doorbell-record pages, see db.c) is protected by db_mutex.
 */
struct urdma_context {
	struct verbs_context ibvctx;
	uint32_t device_caps;		/* URDMA_DEVICE_CAP_* */
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_inline_data;
	uint32_t max_cqe;
	uint32_t max_srq_wr;
	uint32_t page_shift;		/* ring and doorbell alignment */
	size_t page_size;		/* 1 << page_shift, at least a CPU page */
	uint32_t num_engines;		/* entries of engine_state */
	struct urdma_engine_state *engine_state; /* PROT_READ mapping */
	bool yield_idle;		/* an empty poll yields: one CPU */

	pthread_mutex_t db_mutex;
	struct list_head db_pages;	/* struct urdma_db_page */
};

/* A ring: page-aligned, a whole number of pages, zeroed, MADV_DONTFORK. */
struct urdma_pd;

/*
 * The resource_type a parent domain's allocator is called with (providers
 * number their own; mlx5's are in mlx5dv.h).  Every ring is page-aligned.
 */
#define URDMA_RES_TYPE_QP	((uint64_t)1)	/* an SQ or RQ ring */
#define URDMA_RES_TYPE_SRQ	((uint64_t)2)
#define URDMA_RES_TYPE_CQ	((uint64_t)3)

/*
 * A ring.  @pd is set when a parent domain's allocator made it (and frees
 * it); then the parent domain cannot be deallocated before the ring is.
 */
struct urdma_buf {
	void *buf;
	size_t size;
	struct urdma_pd *pd;
	uint64_t res_type;		/* URDMA_RES_TYPE_* for @pd's allocator */
};

/*
 * A CQ.  lock serializes the consumer (poll_cq, the cq_ex polling
 * functions from start_poll to end_poll, resize_cq).  cons is the
 * free-running consumer index, published to db->cons with release
 * semantics; cur is the CQE that the cq_ex read_* functions look at.
 */
struct urdma_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	struct urdma_buf ring;
	void *cqes;			/* ring.buf */
	uint32_t nent;			/* a power of two */
	uint32_t cqe_shift;		/* log2 of the entry size */
	uint32_t cons;
	struct urdma_cq_db *db;
	uint32_t cqn;
	atomic_uint arm_sn;		/* arm requests, URDMA_CQ_ARM_SN_SHIFT */
	struct urdma_cqe *cur;
};

/*
 * A work queue (SQ, RQ, SRQ): nent WQEs of stride bytes.  head counts the
 * WQEs posted (free-running, mirrored into the doorbell record's producer
 * index).  lock serializes the posting verbs: it protects head, the ring
 * slots from head on and the producer index of the doorbell record.
 * max_sge and max_inline are what the stride holds (never more, whatever
 * the kernel reported), so a WQE never leaves its slot.
 */
struct urdma_wq {
	struct urdma_buf ring;
	uint32_t nent;			/* a power of two */
	uint32_t stride;		/* a multiple of URDMA_WQE_BLOCK */
	uint32_t head;
	uint32_t max_sge;
	uint32_t max_inline;		/* SQ only */
	pthread_spinlock_t lock;
};

/*
 * A QP.  rq is unused (no ring) when the QP has an SRQ.  engine is the
 * engine thread serving the QP (an index into ctx->engine_state).
 *
 * The ibv_wr_* state (wr_head, wr_cur, wr_err) belongs to the thread
 * between wr_start and wr_complete/wr_abort, which holds sq.lock
 * throughout: wr_head is the SQ head including the WQEs built so far,
 * wr_cur the last one built (the one the wr_set_* setters fill), wr_err
 * the first error, which makes wr_complete discard the batch.
 */
struct urdma_qp {
	struct verbs_qp vqp;
	struct urdma_wq sq;
	struct urdma_wq rq;
	struct urdma_qp_db *db;
	uint32_t engine;
	bool sq_sig_all;

	uint32_t wr_head;
	struct urdma_send_wqe *wr_cur;
	int wr_err;
};

struct urdma_srq {
	struct verbs_srq vsrq;
	struct urdma_wq rq;
	struct urdma_srq_db *db;
	uint32_t srqn;
};

struct urdma_ah {
	struct ibv_ah ibvah;
	uint32_t ah_num;		/* names the AH in UD send WQEs */
};

/*
 * A protection domain, or a parent domain (@protection set): a PD of its
 * own in user space only, which stands for @protection in every command
 * (it has @protection's handle) and may bring allocators for the rings of
 * the QPs, SRQs and CQs created on it.  @refs counts what keeps the PD
 * alive in user space: a protection domain's parent domains, a parent
 * domain's rings.
 */
struct urdma_pd {
	struct ibv_pd ibvpd;
	uint32_t pdn;
	atomic_int refs;
	struct urdma_pd *protection;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

static inline struct urdma_context *to_urdma_ctx(struct ibv_context *ibvctx)
{
	return container_of(ibvctx, struct urdma_context, ibvctx.context);
}

static inline struct urdma_pd *to_urdma_pd(struct ibv_pd *ibvpd)
{
	return container_of(ibvpd, struct urdma_pd, ibvpd);
}

/* Whether the engine sleeps (the engine state page's flag). */
static inline bool urdma_engine_asleep(struct urdma_context *ctx,
				       uint32_t engine)
{
	/*
	 * For a poster: the producer index before the flag; pairs with the
	 * engine's full barrier between setting asleep and its last doorbell
	 * poll.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(
		(_Atomic(uint32_t) *)&ctx->engine_state[engine].asleep,
		memory_order_relaxed);
}

static inline struct urdma_cq *to_urdma_cq(struct ibv_cq *ibvcq)
{
	return container_of(ibvcq, struct urdma_cq, vcq.cq);
}

static inline struct urdma_cq *cq_ex_to_urdma_cq(struct ibv_cq_ex *ibvcq)
{
	return container_of(ibvcq, struct urdma_cq, vcq.cq_ex);
}

static inline struct urdma_qp *to_urdma_qp(struct ibv_qp *ibvqp)
{
	return container_of(ibvqp, struct urdma_qp, vqp.qp);
}

static inline struct urdma_qp *qp_ex_to_urdma_qp(struct ibv_qp_ex *ibvqp)
{
	return container_of(ibvqp, struct urdma_qp, vqp.qp_ex);
}

static inline struct urdma_srq *to_urdma_srq(struct ibv_srq *ibvsrq)
{
	return container_of(ibvsrq, struct urdma_srq, vsrq.srq);
}

static inline struct urdma_ah *to_urdma_ah(struct ibv_ah *ibvah)
{
	return container_of(ibvah, struct urdma_ah, ibvah);
}

/* db.c */
void urdma_db_init(struct urdma_context *ctx);
void urdma_db_cleanup(struct urdma_context *ctx);
void *urdma_alloc_db(struct urdma_context *ctx);
void urdma_free_db(struct urdma_context *ctx, void *db);
int urdma_alloc_buf(struct urdma_context *ctx, struct urdma_buf *buf,
		    size_t size, struct urdma_pd *pd, uint64_t res_type);
void urdma_free_buf(struct urdma_buf *buf);

/* cq.c */
void urdma_cq_clean(struct urdma_cq *cq, uint32_t qpn);
struct ibv_cq *urdma_create_cq(struct ibv_context *ibvctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
struct ibv_cq_ex *urdma_create_cq_ex(struct ibv_context *ibvctx,
				     struct ibv_cq_init_attr_ex *attr);
int urdma_resize_cq(struct ibv_cq *ibvcq, int cqe);
int urdma_destroy_cq(struct ibv_cq *ibvcq);
int urdma_poll_cq(struct ibv_cq *ibvcq, int ne, struct ibv_wc *wc);
int urdma_req_notify_cq(struct ibv_cq *ibvcq, int solicited_only);

/* The stride of an RQ or SRQ whose WQEs hold max_sge SGEs. */
static inline uint32_t urdma_recv_stride(uint32_t max_sge)
{
	return align(sizeof(struct urdma_recv_wqe) + max_sge * URDMA_SGE_SIZE,
		     URDMA_WQE_BLOCK);
}

/* The SGEs a receive WQE of stride bytes holds. */
static inline uint32_t urdma_recv_stride_sge(uint32_t stride)
{
	return (stride - sizeof(struct urdma_recv_wqe)) / URDMA_SGE_SIZE;
}

/* Entry idx (free-running) of a work queue's ring. */
static inline void *urdma_wq_entry(struct urdma_wq *wq, uint32_t idx)
{
	return (uint8_t *)wq->ring.buf +
	       (size_t)(idx & (wq->nent - 1)) * wq->stride;
}

/* QP and SRQ numbers are 24 bits. */
#define URDMA_QPN_MASK 0xffffffu

/* qp.c */
int urdma_wq_init(struct urdma_context *ctx, struct urdma_pd *pd,
		  uint64_t res_type, struct urdma_wq *wq,
		  uint32_t nent, uint32_t stride);
void urdma_wq_destroy(struct urdma_wq *wq);
struct ibv_qp *urdma_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *urdma_create_qp_ex(struct ibv_context *ibvctx,
				  struct ibv_qp_init_attr_ex *attr);
int urdma_modify_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		    int attr_mask);
int urdma_query_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr);
int urdma_destroy_qp(struct ibv_qp *ibvqp);
struct ibv_qp *urdma_open_qp(struct ibv_context *ibvctx,
			     struct ibv_qp_open_attr *attr);

/* post.c */
int urdma_post_send(struct ibv_qp *ibvqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int urdma_post_recv(struct ibv_qp *ibvqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
int urdma_post_srq_recv(struct ibv_srq *ibvsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);
int urdma_bind_mw(struct ibv_qp *ibvqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);
uint64_t urdma_qp_send_ops(enum ibv_qp_type type);
void urdma_qp_set_wr_ops(struct urdma_qp *qp, uint64_t send_ops_flags);

/* srq.c */
struct ibv_srq *urdma_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr);
struct ibv_srq *urdma_create_srq_ex(struct ibv_context *ibvctx,
				    struct ibv_srq_init_attr_ex *attr);
int urdma_get_srq_num(struct ibv_srq *ibvsrq, uint32_t *srq_num);
int urdma_modify_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr,
		     int attr_mask);
int urdma_query_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr);
int urdma_destroy_srq(struct ibv_srq *ibvsrq);

/* ah.c */
struct ibv_ah *urdma_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int urdma_destroy_ah(struct ibv_ah *ibvah);

/* verbs.c */
int urdma_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int urdma_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *attr);
struct ibv_pd *urdma_alloc_pd(struct ibv_context *ibvctx);
int urdma_dealloc_pd(struct ibv_pd *ibvpd);
struct ibv_pd *urdma_alloc_parent_domain(struct ibv_context *ibvctx,
					 struct ibv_parent_domain_init_attr *attr);
struct ibv_dm *urdma_alloc_dm(struct ibv_context *ctx,
			      struct ibv_alloc_dm_attr *attr);
int urdma_free_dm(struct ibv_dm *ibdm);
struct ibv_mr *urdma_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access);
struct ibv_mr *urdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int urdma_query_rt_values(struct ibv_context *ibvctx,
			  struct ibv_values_ex *values);
struct ibv_mr *urdma_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				   size_t length, uint64_t iova, int fd,
				   int access);
int urdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access);
int urdma_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *urdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int urdma_dealloc_mw(struct ibv_mw *mw);
struct ibv_xrcd *urdma_open_xrcd(struct ibv_context *ibvctx,
				 struct ibv_xrcd_init_attr *attr);
int urdma_close_xrcd(struct ibv_xrcd *ibvxrcd);

#endif /* __URDMA_H__ */
