// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: device matching and context lifecycle.  The verbs live in
 * verbs.c (query, PD, MR, MW), cq.c, qp.c, srq.c and ah.c; verbs not listed
 * in urdma_ctx_ops are not implemented yet and libibverbs answers them with
 * EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "urdma.h"

static void urdma_free_context(struct ibv_context *ibvctx);

/*
 * urdma is a software device with driver_id RDMA_DRIVER_UNKNOWN, so it can
 * only be matched by its name prefix.
 */
static const struct verbs_match_ent urdma_table[] = {
	VERBS_NAME_MATCH("urdma", NULL),
	{}
};

/* post_send, post_recv and post_srq_recv come with the engine. */
static const struct verbs_context_ops urdma_ctx_ops = {
	.alloc_mw = urdma_alloc_mw,
	.alloc_pd = urdma_alloc_pd,
	.create_ah = urdma_create_ah,
	.create_cq = urdma_create_cq,
	.create_cq_ex = urdma_create_cq_ex,
	.create_qp = urdma_create_qp,
	.create_qp_ex = urdma_create_qp_ex,
	.create_srq = urdma_create_srq,
	.dealloc_mw = urdma_dealloc_mw,
	.dealloc_pd = urdma_dealloc_pd,
	.dereg_mr = urdma_dereg_mr,
	.destroy_ah = urdma_destroy_ah,
	.destroy_cq = urdma_destroy_cq,
	.destroy_qp = urdma_destroy_qp,
	.destroy_srq = urdma_destroy_srq,
	.free_context = urdma_free_context,
	.modify_qp = urdma_modify_qp,
	.modify_srq = urdma_modify_srq,
	.poll_cq = urdma_poll_cq,
	.query_device_ex = urdma_query_device_ex,
	.query_port = urdma_query_port,
	.query_qp = urdma_query_qp,
	.query_srq = urdma_query_srq,
	.reg_mr = urdma_reg_mr,
	.req_notify_cq = urdma_req_notify_cq,
	.rereg_mr = urdma_rereg_mr,
	.resize_cq = urdma_resize_cq,
};

static int urdma_ctx_set_limits(struct urdma_context *ctx,
				const struct urdma_cmd_alloc_ucontext_resp *resp)
{
	long cpu_page = sysconf(_SC_PAGESIZE);

	/* Rings and doorbell pages are aligned to page_size. */
	if (resp->page_shift < 12 || resp->page_shift > 30) {
		verbs_err(&ctx->ibvctx, "bad page_shift %u\n",
			  resp->page_shift);
		return EPROTO;
	}
	ctx->page_size = 1UL << resp->page_shift;
	if (cpu_page > 0 && (size_t)cpu_page > ctx->page_size)
		ctx->page_size = cpu_page;

	ctx->device_caps = resp->device_caps;
	ctx->max_qp_wr = resp->max_qp_wr;
	ctx->max_sge = resp->max_sge;
	ctx->max_inline_data = resp->max_inline_data;
	ctx->max_cqe = resp->max_cqe;
	ctx->max_srq_wr = resp->max_srq_wr;
	ctx->page_shift = resp->page_shift;
	return 0;
}

static struct verbs_context *urdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct urdma_cmd_alloc_ucontext_resp resp = {};
	struct urdma_cmd_alloc_ucontext cmd = {};
	struct urdma_context *ctx;
	int err;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibvctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	err = ibv_cmd_get_context(&ctx->ibvctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(&ctx->ibvctx, "get_context failed: %d\n", err);
		goto err_free_ctx;
	}

	err = urdma_ctx_set_limits(ctx, &resp);
	if (err)
		goto err_free_ctx;

	urdma_db_init(ctx);
	verbs_set_ops(&ctx->ibvctx, &urdma_ctx_ops);
	return &ctx->ibvctx;

err_free_ctx:
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
	errno = err;
	return NULL;
}

static void urdma_free_context(struct ibv_context *ibvctx)
{
	struct urdma_context *ctx = to_urdma_ctx(ibvctx);

	/* Closes the command fd: the kernel unpins what the objects held. */
	verbs_uninit_context(&ctx->ibvctx);
	urdma_db_cleanup(ctx);
	free(ctx);
}

static struct verbs_device *urdma_device_alloc(struct verbs_sysfs_dev *unused)
{
	struct urdma_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;

	return &dev->vdev;
}

static void urdma_uninit_device(struct verbs_device *vdev)
{
	struct urdma_device *dev = container_of(vdev, struct urdma_device, vdev);

	free(dev);
}

static const struct verbs_device_ops urdma_dev_ops = {
	.name = "urdma",
	.match_min_abi_version = URDMA_ABI_VERSION,
	.match_max_abi_version = URDMA_ABI_VERSION,
	.match_table = urdma_table,
	.alloc_device = urdma_device_alloc,
	.uninit_device = urdma_uninit_device,
	.alloc_context = urdma_alloc_context,
};

PROVIDER_DRIVER(urdma, urdma_dev_ops);
