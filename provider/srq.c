// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: shared receive queues.  The ring holds receive WQEs in
 * the RQ format; post_srq_recv lives in post.c.
 */
#include <errno.h>
#include <stdlib.h>

#include "urdma.h"

struct ibv_srq *urdma_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct urdma_context *ctx = to_urdma_ctx(pd->context);
	struct urdma_cmd_create_srq_resp resp = {};
	struct urdma_cmd_create_srq cmd = {};
	struct urdma_srq *srq;
	uint32_t nent, stride;
	int err;

	if (!attr->attr.max_wr || attr->attr.max_wr > ctx->max_srq_wr ||
	    attr->attr.max_sge > ctx->max_sge) {
		errno = EINVAL;
		return NULL;
	}

	nent = roundup_pow_of_two(attr->attr.max_wr);
	stride = urdma_recv_stride(attr->attr.max_sge);
	if (stride > URDMA_MAX_WQE_BLOCKS * URDMA_WQE_BLOCK) {
		errno = EINVAL;
		return NULL;
	}

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}

	err = urdma_wq_init(ctx, to_urdma_pd(pd), URDMA_RES_TYPE_SRQ, &srq->rq,
			    nent, stride);
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
	err = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
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
