// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: device matching and context lifecycle.  The verbs live in
 * verbs.c; verbs not listed in urdma_ctx_ops are not implemented yet and
 * libibverbs answers them with EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>

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

static const struct verbs_context_ops urdma_ctx_ops = {
	.alloc_mw = urdma_alloc_mw,
	.alloc_pd = urdma_alloc_pd,
	.dealloc_mw = urdma_dealloc_mw,
	.dealloc_pd = urdma_dealloc_pd,
	.dereg_mr = urdma_dereg_mr,
	.free_context = urdma_free_context,
	.query_device_ex = urdma_query_device_ex,
	.query_port = urdma_query_port,
	.reg_mr = urdma_reg_mr,
	.rereg_mr = urdma_rereg_mr,
};

static void urdma_ctx_set_limits(struct urdma_context *ctx,
				 const struct urdma_cmd_alloc_ucontext_resp *resp)
{
	ctx->device_caps = resp->device_caps;
	ctx->max_qp_wr = resp->max_qp_wr;
	ctx->max_sge = resp->max_sge;
	ctx->max_inline_data = resp->max_inline_data;
	ctx->max_cqe = resp->max_cqe;
	ctx->max_srq_wr = resp->max_srq_wr;
	ctx->page_shift = resp->page_shift;
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

	urdma_ctx_set_limits(ctx, &resp);
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

	verbs_uninit_context(&ctx->ibvctx);
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
