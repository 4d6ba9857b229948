// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: device matching and context lifecycle.  The verbs live in
 * verbs.c (query, PD, MR, MW), cq.c, qp.c, srq.c, ah.c and post.c (the
 * data path: post_send, post_recv, post_srq_recv, bind_mw and the ibv_wr_*
 * API); verbs not listed in urdma_ctx_ops are not implemented and
 * libibverbs answers them with EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static const struct verbs_context_ops urdma_ctx_ops = {
	.advise_mr = ibv_cmd_advise_mr,
	.alloc_dm = urdma_alloc_dm,
	.alloc_mw = urdma_alloc_mw,
	.alloc_parent_domain = urdma_alloc_parent_domain,
	.alloc_pd = urdma_alloc_pd,
	.attach_mcast = ibv_cmd_attach_mcast,
	.bind_mw = urdma_bind_mw,
	.close_xrcd = urdma_close_xrcd,
	.create_ah = urdma_create_ah,
	.create_cq = urdma_create_cq,
	.create_cq_ex = urdma_create_cq_ex,
	.create_qp = urdma_create_qp,
	.create_qp_ex = urdma_create_qp_ex,
	.create_srq = urdma_create_srq,
	.create_srq_ex = urdma_create_srq_ex,
	.dealloc_mw = urdma_dealloc_mw,
	.dealloc_pd = urdma_dealloc_pd,
	.dereg_mr = urdma_dereg_mr,
	.free_dm = urdma_free_dm,
	.destroy_ah = urdma_destroy_ah,
	.destroy_cq = urdma_destroy_cq,
	.destroy_qp = urdma_destroy_qp,
	.destroy_srq = urdma_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = urdma_free_context,
	.get_srq_num = urdma_get_srq_num,
	.modify_qp = urdma_modify_qp,
	.modify_srq = urdma_modify_srq,
	.open_qp = urdma_open_qp,
	.open_xrcd = urdma_open_xrcd,
	.poll_cq = urdma_poll_cq,
	.post_recv = urdma_post_recv,
	.post_send = urdma_post_send,
	.post_srq_recv = urdma_post_srq_recv,
	.query_device_ex = urdma_query_device_ex,
	.query_port = urdma_query_port,
	.query_qp = urdma_query_qp,
	.query_rt_values = urdma_query_rt_values,
	.query_srq = urdma_query_srq,
	.reg_dm_mr = urdma_reg_dm_mr,
	.reg_dmabuf_mr = urdma_reg_dmabuf_mr,
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

	/* A kernel without the engine state page leaves this 0. */
	if (!resp->num_engines || resp->num_engines > URDMA_MAX_ENGINES) {
		verbs_err(&ctx->ibvctx, "bad num_engines %u\n",
			  resp->num_engines);
		return EPROTO;
	}
	ctx->num_engines = resp->num_engines;
	return 0;
}

/*
 * Map the engine state page read-only: posting reads the asleep flag of
 * the QP's engine to decide whether to kick (doorbell elision).
 */
static int urdma_map_engine_state(struct urdma_context *ctx, int cmd_fd,
				  uint64_t offset)
{
	void *page;

	page = mmap(NULL, URDMA_ENGINE_PAGE_SIZE, PROT_READ, MAP_SHARED,
		    cmd_fd, offset);
	if (page == MAP_FAILED) {
		int err = errno;

		verbs_err(&ctx->ibvctx,
			  "mapping the engine state page failed: %d\n", err);
		return err;
	}
	ctx->engine_state = page;
	return 0;
}

/*
 * Whether a poll that finds its CQ empty offers the CPU to an awake
 * engine (urdma_cq_idle()): on a machine with one CPU online, by default.
 * There the engine thread can only make the completion the consumer spins
 * for while the consumer is off the CPU, so a spin until the scheduler
 * preempts it, up to a time slice, is all lost (docs/performance.md, "Two
 * guests").  With more CPUs the engine runs beside the consumer and a poll
 * stays in user space.  URDMA_POLL_YIELD=0 or 1 overrides.
 */
static bool urdma_want_yield(void)
{
	const char *env = getenv("URDMA_POLL_YIELD");

	if (env && (!strcmp(env, "0") || !strcmp(env, "1")))
		return env[0] == '1';
	return sysconf(_SC_NPROCESSORS_ONLN) == 1;
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

	err = urdma_map_engine_state(ctx, cmd_fd, resp.engine_mmap_offset);
	if (err)
		goto err_free_ctx;

	ctx->yield_idle = urdma_want_yield();
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

	munmap(ctx->engine_state, URDMA_ENGINE_PAGE_SIZE);
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
