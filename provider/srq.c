// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: shared receive queues, basic and XRC.  The ring holds
 * receive WQEs in the RQ format; post_srq_recv lives in post.c.  An XRC
 * SRQ has its own CQ, where the receives of every XRC_RECV QP of its
 * domain that take its WQEs complete.
 */
#include <errno.h>
#include <stdlib.h>

#include "urdma.h"

enum {
	URDMA_SRQ_SUP_COMP_MASK = IBV_SRQ_INIT_ATTR_TYPE |
				  IBV_SRQ_INIT_ATTR_PD |
				  IBV_SRQ_INIT_ATTR_XRCD |
				  IBV_SRQ_INIT_ATTR_CQ,
};

static int urdma_srq_check_attr(struct urdma_context *ctx,
				const struct ibv_srq_init_attr_ex *attr)
{
	enum ibv_srq_type type = IBV_SRQT_BASIC;

	if (!check_comp_mask(attr->comp_mask, URDMA_SRQ_SUP_COMP_MASK))
		return EOPNOTSUPP;
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
		type = attr->srq_type;
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	switch (type) {
	case IBV_SRQT_BASIC:
		break;
	case IBV_SRQT_XRC:
		/* Its domain, and its own CQ: XRC_RECV QPs have none. */
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ||
		    !attr->xrcd || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
		    !attr->cq)
			return EINVAL;
		break;
	default:
		return EOPNOTSUPP;
	}
	if (!attr->attr.max_wr || attr->attr.max_wr > ctx->max_srq_wr ||
	    attr->attr.max_sge > ctx->max_sge)
		return EINVAL;
	if (urdma_recv_stride(attr->attr.max_sge) >
	    URDMA_MAX_WQE_BLOCKS * URDMA_WQE_BLOCK)
		return EINVAL;
	return 0;
}

struct ibv_srq *urdma_create_srq_ex(struct ibv_context *ibvctx,
				    struct ibv_srq_init_attr_ex *attr)
{
	struct urdma_context *ctx = to_urdma_ctx(ibvctx);
	struct urdma_cmd_create_srq_resp resp = {};
	struct urdma_cmd_create_srq cmd = {};
	struct urdma_srq *srq;
	uint32_t nent, stride;
	int err;

	err = urdma_srq_check_attr(ctx, attr);
	if (err) {
		errno = err;
		return NULL;
	}
	nent = roundup_pow_of_two(attr->attr.max_wr);
	stride = urdma_recv_stride(attr->attr.max_sge);

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}

	err = urdma_wq_init(ctx, to_urdma_pd(attr->pd), URDMA_RES_TYPE_SRQ,
			    &srq->rq, nent, stride);
	if (err)
		goto err_free_srq;

	srq->db = urdma_alloc_db(ctx);
	if (!srq->db) {
		err = errno;
		goto err_destroy_rq;
	}

	cmd.nent = nent;
	cmd.buf_addr = (uintptr_t)srq->rq.ring.buf;
	cmd.db_addr = (uintptr_t)srq->db;
	cmd.stride = stride;
	/* Writes the granted max_wr and max_sge back into attr->attr. */
	err = ibv_cmd_create_srq_ex(ibvctx, &srq->vsrq, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err_free_db;

	srq->srqn = resp.srqn;
	/* Never more than the stride holds, whatever was reported. */
	srq->rq.max_sge = min_t(uint32_t, attr->attr.max_sge,
				urdma_recv_stride_sge(stride));
	return &srq->vsrq.srq;

err_free_db:
	urdma_free_db(ctx, srq->db);
err_destroy_rq:
	urdma_wq_destroy(&srq->rq);
err_free_srq:
	free(srq);
	errno = err;
	return NULL;
}

struct ibv_srq *urdma_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex attr_ex = {
		.srq_context = attr->srq_context,
		.attr = attr->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_BASIC,
		.pd = pd,
	};
	struct ibv_srq *srq = urdma_create_srq_ex(pd->context, &attr_ex);

	if (srq)
		attr->attr = attr_ex.attr;
	return srq;
}

/* The number XRC_SEND WQEs name an XRC SRQ by. */
int urdma_get_srq_num(struct ibv_srq *ibvsrq, uint32_t *srq_num)
{
	struct urdma_srq *srq = to_urdma_srq(ibvsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = srq->srqn;
	return 0;
}

/*
 * Resizing (IBV_SRQ_MAX_WR) hands the kernel a new ring; it moves the WQEs
 * not yet consumed to its start and sets the doorbell record's producer
 * index to their number, where posting goes on.  The SRQ's lock keeps
 * posters out meanwhile.
 */
static int urdma_resize_srq(struct urdma_srq *srq, struct ibv_srq_attr *attr,
			    int attr_mask)
{
	struct urdma_context *ctx = to_urdma_ctx(srq->vsrq.srq.context);
	struct urdma_cmd_modify_srq cmd = {};
	struct urdma_buf ring;
	uint32_t nent;
	int err;

	if (!attr->max_wr || attr->max_wr > ctx->max_srq_wr)
		return EINVAL;
	nent = roundup_pow_of_two(attr->max_wr);
	err = urdma_alloc_buf(ctx, &ring, (size_t)nent * srq->rq.stride,
			      srq->rq.ring.pd, URDMA_RES_TYPE_SRQ);
	if (err)
		return err;
	cmd.nent = nent;
	cmd.buf_addr = (uintptr_t)ring.buf;

	pthread_spin_lock(&srq->rq.lock);
	err = ibv_cmd_modify_srq(&srq->vsrq.srq, attr, attr_mask,
				 &cmd.ibv_cmd, sizeof(cmd));
	if (!err) {
		struct urdma_buf old = srq->rq.ring;

		srq->rq.ring = ring;
		srq->rq.nent = nent;
		srq->rq.head = atomic_load_explicit(
			(_Atomic(uint32_t) *)&srq->db->prod,
			memory_order_acquire);
		ring = old;
	}
	pthread_spin_unlock(&srq->rq.lock);
	urdma_free_buf(&ring);
	return err;
}

int urdma_modify_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr,
		     int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	if (attr_mask & IBV_SRQ_MAX_WR)
		return urdma_resize_srq(to_urdma_srq(ibvsrq), attr, attr_mask);
	return ibv_cmd_modify_srq(ibvsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int urdma_query_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibvsrq, attr, &cmd, sizeof(cmd));
}

int urdma_destroy_srq(struct ibv_srq *ibvsrq)
{
	struct urdma_context *ctx = to_urdma_ctx(ibvsrq->context);
	struct urdma_srq *srq = to_urdma_srq(ibvsrq);
	int err;

	err = ibv_cmd_destroy_srq(ibvsrq);
	if (err)
		return err;

	urdma_free_db(ctx, srq->db);
	urdma_wq_destroy(&srq->rq);
	free(srq);
	return 0;
}
