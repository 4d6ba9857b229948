// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: queue pairs.
 *
 * The SQ and RQ rings are user memory (see db.c) that the kernel pins; the
 * doorbell record holds the producer indices the provider writes and the
 * consumer indices the engine writes.  A QP with an SRQ has no RQ ring.
 * Posting (post_send, post_recv and the ibv_wr_* API) lives in post.c;
 * the per-queue state it needs (ring, nent, stride, head, lock) is set up
 * here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urdma.h"

enum {
	URDMA_QP_SUP_COMP_MASK = IBV_QP_INIT_ATTR_PD |
				 IBV_QP_INIT_ATTR_XRCD |
				 IBV_QP_INIT_ATTR_CREATE_FLAGS |
				 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	/* Known to libibverbs, so EOPNOTSUPP rather than EINVAL. */
	URDMA_QP_KNOWN_COMP_MASK = IBV_QP_INIT_ATTR_PD |
				   IBV_QP_INIT_ATTR_XRCD |
				   IBV_QP_INIT_ATTR_CREATE_FLAGS |
				   IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				   IBV_QP_INIT_ATTR_IND_TABLE |
				   IBV_QP_INIT_ATTR_RX_HASH |
				   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	URDMA_MAX_STRIDE = URDMA_MAX_WQE_BLOCKS * URDMA_WQE_BLOCK,
};

/*
 * Set up a work queue of nent WQEs of stride bytes; nent 0 (the RQ of a
 * QP with an SRQ) gets no ring.  Returns an errno.
 */
int urdma_wq_init(struct urdma_context *ctx, struct urdma_pd *pd,
		  uint64_t res_type, struct urdma_wq *wq,
		  uint32_t nent, uint32_t stride)
{
	int err;

	err = pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	if (err)
		return err;

	if (nent) {
		err = urdma_alloc_buf(ctx, &wq->ring, (size_t)nent * stride,
				      pd, res_type);
		if (err) {
			pthread_spin_destroy(&wq->lock);
			return err;
		}
	}

	wq->nent = nent;
	wq->stride = stride;
	wq->head = 0;
	return 0;
}

void urdma_wq_destroy(struct urdma_wq *wq)
{
	urdma_free_buf(&wq->ring);
	pthread_spin_destroy(&wq->lock);
}

static void urdma_wq_reset(struct urdma_wq *wq)
{
	pthread_spin_lock(&wq->lock);
	wq->head = 0;
	pthread_spin_unlock(&wq->lock);
}

static uint32_t urdma_send_stride(const struct ibv_qp_cap *cap)
{
	return align(sizeof(struct urdma_send_wqe) +
		     max_t(uint32_t, cap->max_send_sge * URDMA_SGE_SIZE,
			   cap->max_inline_data),
		     URDMA_WQE_BLOCK);
}

/*
 * The ibv_wr_* builders this QP type can post (see post.c).  ATOMIC_WRITE
 * and FLUSH also need a kernel whose RDMA core has them (6.2 on): the
 * device's capabilities say whether its engine executes them.
 */
static int urdma_qp_check_send_ops(struct urdma_context *ctx,
				   const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops = attr->send_ops_flags;
	struct ibv_device_attr_ex dev_attr = {};
	uint64_t caps;
	int err;

	if (!check_comp_mask(ops, urdma_qp_send_ops(attr->qp_type)))
		return EOPNOTSUPP;
	if (!(ops & (IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_FLUSH)))
		return 0;

	err = urdma_query_device_ex(&ctx->ibvctx.context, NULL, &dev_attr,
				    sizeof(dev_attr));
	if (err)
		return err;
	caps = dev_attr.device_cap_flags_ex;
	if ((ops & IBV_QP_EX_WITH_ATOMIC_WRITE) &&
	    !(caps & IB_UVERBS_DEVICE_ATOMIC_WRITE))
		return EOPNOTSUPP;
	if ((ops & IBV_QP_EX_WITH_FLUSH) &&
	    !(caps & (IB_UVERBS_DEVICE_FLUSH_GLOBAL |
		      IB_UVERBS_DEVICE_FLUSH_PERSISTENT)))
		return EOPNOTSUPP;
	return 0;
}

/* QPs with no RQ ring: those with an SRQ, and XRC_SEND. */
static bool urdma_qp_no_rq(const struct ibv_qp_init_attr_ex *attr)
{
	return attr->srq || attr->qp_type == IBV_QPT_XRC_SEND;
}

static int urdma_qp_check_attr(struct urdma_context *ctx,
			       const struct ibv_qp_init_attr_ex *attr)
{
	const struct ibv_qp_cap *cap = &attr->cap;

	if (!check_comp_mask(attr->comp_mask, URDMA_QP_KNOWN_COMP_MASK))
		return EINVAL;
	if (!check_comp_mask(attr->comp_mask, URDMA_QP_SUP_COMP_MASK))
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return EOPNOTSUPP;
	/* XRC_RECV: a domain's, with no PD, no CQ, no ring of its own. */
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) && attr->xrcd ?
		       0 : EINVAL;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;

	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
		break;
	default:
		return EOPNOTSUPP;
	}

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		int err = urdma_qp_check_send_ops(ctx, attr);

		if (err)
			return err;
	}

	if (cap->max_send_wr > ctx->max_qp_wr ||
	    cap->max_send_sge > ctx->max_sge ||
	    cap->max_inline_data > ctx->max_inline_data)
		return EINVAL;
	if (urdma_send_stride(cap) > URDMA_MAX_STRIDE)
		return EINVAL;

	/* Without an RQ, the receive capabilities are ignored. */
	if (urdma_qp_no_rq(attr))
		return 0;
	if (cap->max_recv_wr > ctx->max_qp_wr ||
	    cap->max_recv_sge > ctx->max_sge)
		return EINVAL;
	if (urdma_recv_stride(cap->max_recv_sge) > URDMA_MAX_STRIDE)
		return EINVAL;
	return 0;
}

/* The rings of a QP: entries and strides of its SQ and RQ. */
struct urdma_qp_geom {
	uint32_t sq_nent, sq_stride, rq_nent, rq_stride;
};

static void urdma_qp_geom(struct ibv_qp_init_attr_ex *attr,
			  struct urdma_qp_geom *g)
{
	struct ibv_qp_cap *cap = &attr->cap;

	g->sq_nent = roundup_pow_of_two(max_t(uint32_t, cap->max_send_wr, 1));
	g->sq_stride = urdma_send_stride(cap);
	if (urdma_qp_no_rq(attr)) {
		/* The kernel reports 0 for these; ask for what we get. */
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		g->rq_nent = 0;
		g->rq_stride = 0;
	} else {
		g->rq_nent = roundup_pow_of_two(max_t(uint32_t,
						      cap->max_recv_wr, 1));
		g->rq_stride = urdma_recv_stride(cap->max_recv_sge);
	}
}

/* The SQ, the RQ and the doorbell record of @qp.  Returns an errno. */
static int urdma_qp_alloc_rings(struct urdma_context *ctx,
				struct urdma_pd *pd, struct urdma_qp *qp,
				const struct urdma_qp_geom *g)
{
	int err;

	err = urdma_wq_init(ctx, pd, URDMA_RES_TYPE_QP, &qp->sq, g->sq_nent,
			    g->sq_stride);
	if (err)
		return err;
	err = urdma_wq_init(ctx, pd, URDMA_RES_TYPE_QP, &qp->rq, g->rq_nent,
			    g->rq_stride);
	if (err)
		goto err_destroy_sq;
	qp->db = urdma_alloc_db(ctx);
	if (!qp->db) {
		err = errno;
		goto err_destroy_rq;
	}
	return 0;

err_destroy_rq:
	urdma_wq_destroy(&qp->rq);
err_destroy_sq:
	urdma_wq_destroy(&qp->sq);
	return err;
}

static void urdma_qp_free_rings(struct urdma_context *ctx,
				struct urdma_qp *qp)
{
	urdma_free_db(ctx, qp->db);
	urdma_wq_destroy(&qp->rq);
	urdma_wq_destroy(&qp->sq);
}

/* Never more than the strides hold, whatever the kernel reported. */
static void urdma_qp_limits(struct urdma_qp *qp, const struct ibv_qp_cap *cap,
			    const struct urdma_qp_geom *g)
{
	uint32_t room = g->sq_stride - sizeof(struct urdma_send_wqe);

	qp->sq.max_sge = min_t(uint32_t, cap->max_send_sge,
			       room / URDMA_SGE_SIZE);
	qp->sq.max_inline = min_t(uint32_t, cap->max_inline_data, room);
	qp->rq.max_sge = g->rq_nent ?
			 min_t(uint32_t, cap->max_recv_sge,
			       urdma_recv_stride_sge(g->rq_stride)) : 0;
}

/*
 * An XRC_RECV QP, created or opened: the kernel makes it a QP of the
 * domain, not of this context, with no ring (its messages go to the XRC
 * SRQs they name).  Its queues are empty ones, so that posting finds no
 * room.
 */
static struct urdma_qp *urdma_qp_alloc_ringless(void)
{
	struct urdma_qp *qp = calloc(1, sizeof(*qp));
	int err;

	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = urdma_wq_init(NULL, NULL, URDMA_RES_TYPE_QP, &qp->sq, 0, 0);
	if (err)
		goto err_free;
	err = urdma_wq_init(NULL, NULL, URDMA_RES_TYPE_QP, &qp->rq, 0, 0);
	if (err)
		goto err_sq;
	return qp;

err_sq:
	urdma_wq_destroy(&qp->sq);
err_free:
	free(qp);
	errno = err;
	return NULL;
}

static void urdma_qp_free_ringless(struct urdma_qp *qp, int err)
{
	urdma_wq_destroy(&qp->rq);
	urdma_wq_destroy(&qp->sq);
	free(qp);
	errno = err;
}

static struct urdma_qp *urdma_qp_create_xrc_recv(struct ibv_context *ibvctx,
						 struct ibv_qp_init_attr_ex
						 *attr)
{
	struct urdma_cmd_create_qp_resp resp = {};
	struct urdma_cmd_create_qp cmd = {};
	struct urdma_qp *qp = urdma_qp_alloc_ringless();
	int err;

	if (!qp)
		return NULL;
	err = ibv_cmd_create_qp_ex2(ibvctx, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		urdma_qp_free_ringless(qp, err);
		return NULL;
	}
	memset(&attr->cap, 0, sizeof(attr->cap));
	return qp;
}

static struct urdma_qp *urdma_qp_create(struct ibv_context *ibvctx,
					struct ibv_qp_init_attr_ex *attr)
{
	struct urdma_context *ctx = to_urdma_ctx(ibvctx);
	struct urdma_cmd_create_qp_resp resp = {};
	struct urdma_cmd_create_qp cmd = {};
	struct urdma_qp_geom g;
	struct urdma_qp *qp;
	int err;

	err = urdma_qp_check_attr(ctx, attr);
	if (err) {
		errno = err;
		return NULL;
	}
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return urdma_qp_create_xrc_recv(ibvctx, attr);
	urdma_qp_geom(attr, &g);
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = urdma_qp_alloc_rings(ctx, to_urdma_pd(attr->pd), qp, &g);
	if (err)
		goto err_free_qp;

	cmd.sq_buf_addr = (uintptr_t)qp->sq.ring.buf;
	cmd.rq_buf_addr = (uintptr_t)qp->rq.ring.buf;
	cmd.db_addr = (uintptr_t)qp->db;
	cmd.sq_nent = g.sq_nent;
	cmd.sq_stride = g.sq_stride;
	cmd.rq_nent = g.rq_nent;
	cmd.rq_stride = g.rq_stride;
	/* Writes the capabilities the kernel granted back into attr->cap. */
	err = ibv_cmd_create_qp_ex2(ibvctx, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err_free_rings;
	if (resp.engine >= ctx->num_engines) {
		verbs_err(&ctx->ibvctx, "QP %u: bad engine %u\n",
			  qp->vqp.qp.qp_num, resp.engine);
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		err = EPROTO;
		goto err_free_rings;
	}
	qp->engine = resp.engine;
	qp->sq_sig_all = attr->sq_sig_all;
	urdma_qp_limits(qp, &attr->cap, &g);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		urdma_qp_set_wr_ops(qp, attr->send_ops_flags);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return qp;

err_free_rings:
	urdma_qp_free_rings(ctx, qp);
err_free_qp:
	free(qp);
	errno = err;
	return NULL;
}

struct ibv_qp *urdma_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct urdma_qp *qp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd;
	qp = urdma_qp_create(pd->context, &attr_ex);
	if (!qp)
		return NULL;

	attr->cap = attr_ex.cap;
	return &qp->vqp.qp;
}

struct ibv_qp *urdma_create_qp_ex(struct ibv_context *ibvctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct urdma_qp *qp;

	qp = urdma_qp_create(ibvctx, attr);
	return qp ? &qp->vqp.qp : NULL;
}

/*
 * An XRC_RECV QP opened by number: another process's (or this one's) QP
 * of the domain, which this context may modify, query and close.
 */
struct ibv_qp *urdma_open_qp(struct ibv_context *ibvctx,
			     struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp = {};
	struct ibv_open_qp cmd = {};
	struct urdma_qp *qp = urdma_qp_alloc_ringless();
	int err;

	if (!qp)
		return NULL;
	err = ibv_cmd_open_qp(ibvctx, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		urdma_qp_free_ringless(qp, err);
		return NULL;
	}
	return &qp->vqp.qp;
}

/*
 * The QP's completions nobody polled are stale once it restarts or goes.
 * XRC: an XRC_SEND QP has no receive CQ and an XRC_RECV QP no CQ at all,
 * whatever libibverbs copied from the caller's attributes (a CQ the
 * kernel holds no reference for, which may be gone).
 */
static void urdma_qp_clean_cqs(struct urdma_qp *qp)
{
	struct ibv_qp *ibvqp = &qp->vqp.qp;

	if (ibvqp->qp_type == IBV_QPT_XRC_RECV)
		return;
	urdma_cq_clean(to_urdma_cq(ibvqp->send_cq), ibvqp->qp_num);
	if (ibvqp->qp_type != IBV_QPT_XRC_SEND &&
	    ibvqp->recv_cq != ibvqp->send_cq)
		urdma_cq_clean(to_urdma_cq(ibvqp->recv_cq), ibvqp->qp_num);
}

/*
 * Moving to RESET zeroes the engine's indices and the doorbell record;
 * the provider starts over too, without the QP's unpolled completions.
 */
int urdma_modify_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		    int attr_mask)
{
	struct urdma_qp *qp = to_urdma_qp(ibvqp);
	struct ibv_modify_qp cmd = {};
	int err;

	err = ibv_cmd_modify_qp(ibvqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (err)
		return err;

	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		urdma_qp_clean_cqs(qp);
		urdma_wq_reset(&qp->sq);
		urdma_wq_reset(&qp->rq);
	}
	return 0;
}

int urdma_query_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibvqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int urdma_destroy_qp(struct ibv_qp *ibvqp)
{
	struct urdma_context *ctx = to_urdma_ctx(ibvqp->context);
	struct urdma_qp *qp = to_urdma_qp(ibvqp);
	int err;

	err = ibv_cmd_destroy_qp(ibvqp);
	if (err)
		return err;

	urdma_qp_clean_cqs(qp);
	urdma_qp_free_rings(ctx, qp);
	free(qp);
	return 0;
}
