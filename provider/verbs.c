// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: verbs.  Every verb returns a positive errno (or NULL with
 * errno set), as the ibv_* man pages promise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "urdma.h"

int urdma_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int err;

	err = ibv_cmd_query_device_any(ibvctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err)
		return err;

	/* fw_ver is major.minor.sub_minor in bits 47:32, 31:16 and 15:0. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

/*
 * The device clock is CLOCK_MONOTONIC in nanoseconds (hca_core_clock 1
 * GHz): the raw value goes in tv_nsec, as mlx5 reports its cycle count.
 */
int urdma_query_rt_values(struct ibv_context *ibvctx,
			  struct ibv_values_ex *values)
{
	struct timespec now;

	if (!check_comp_mask(values->comp_mask, IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		if (clock_gettime(CLOCK_MONOTONIC, &now))
			return errno;
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = now.tv_sec * 1000000000L +
					    now.tv_nsec;
	}
	return 0;
}

int urdma_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibvctx, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *urdma_alloc_pd(struct ibv_context *ibvctx)
{
	struct urdma_cmd_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct urdma_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_alloc_pd(ibvctx, &pd->ibvpd, &cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err_free_pd;

	pd->pdn = resp.pdn;
	return &pd->ibvpd;

err_free_pd:
	free(pd);
	errno = err;
	return NULL;
}

/*
 * A parent domain: see struct urdma_pd.  No thread domains (there is no
 * per-thread doorbell to give one).
 */
struct ibv_pd *urdma_alloc_parent_domain(struct ibv_context *ibvctx,
					 struct ibv_parent_domain_init_attr *attr)
{
	struct urdma_pd *protection, *pd;

	if (ibv_check_alloc_parent_domain(attr))
		return NULL;
	if (!check_comp_mask(attr->comp_mask,
			     IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->td) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	protection = to_urdma_pd(attr->pd);
	if (protection->protection ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free))) {
		errno = EINVAL;
		return NULL;
	}

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ibv_initialize_parent_domain(&pd->ibvpd, &protection->ibvpd);
	pd->pdn = protection->pdn;
	pd->protection = protection;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	atomic_fetch_add(&protection->refs, 1);
	return &pd->ibvpd;
}

int urdma_dealloc_pd(struct ibv_pd *ibvpd)
{
	struct urdma_pd *pd = to_urdma_pd(ibvpd);
	int err;

	/* Rings from its allocator, or parent domains on it. */
	if (atomic_load(&pd->refs))
		return EBUSY;
	if (pd->protection) {
		atomic_fetch_sub(&pd->protection->refs, 1);
		free(pd);
		return 0;
	}
	err = ibv_cmd_dealloc_pd(ibvpd);
	if (err)
		return err;

	free(pd);
	return 0;
}

/* The MR of a registration command that returned @err, or NULL. */
static struct ibv_mr *urdma_reg_result(struct verbs_mr *vmr, int err)
{
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

struct ibv_mr *urdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	return urdma_reg_result(vmr, err);
}

struct ibv_mr *urdma_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				   size_t length, uint64_t iova, int fd,
				   int access)
{
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr,
				    NULL);
	return urdma_reg_result(vmr, err);
}

/* An MR on device memory (dm.c): zero based, as the core requires. */
struct ibv_mr *urdma_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access)
{
	struct verbs_dm *vdm = container_of(ibdm, struct verbs_dm, dm);
	struct verbs_mr *vmr;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	return urdma_reg_result(vmr, ibv_cmd_reg_dm_mr(pd, vdm, dm_offset,
						       length, access, vmr,
						       NULL));
}

int urdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

int urdma_dereg_mr(struct verbs_mr *vmr)
{
	int err;

	err = ibv_cmd_dereg_mr(vmr);
	if (err)
		return err;

	free(vmr);
	return 0;
}

struct ibv_mw *urdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int err;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	return mw;
}

int urdma_dealloc_mw(struct ibv_mw *mw)
{
	int err;

	err = ibv_cmd_dealloc_mw(mw);
	if (err)
		return err;

	free(mw);
	return 0;
}

/* An XRC domain: named by a file (shared between processes) or not. */
struct ibv_xrcd *urdma_open_xrcd(struct ibv_context *ibvctx,
				 struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp = {};
	struct ibv_open_xrcd cmd = {};
	struct verbs_xrcd *xrcd;
	int err;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_open_xrcd(ibvctx, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(xrcd);
		errno = err;
		return NULL;
	}
	return &xrcd->xrcd;
}

int urdma_close_xrcd(struct ibv_xrcd *ibvxrcd)
{
	struct verbs_xrcd *xrcd = container_of(ibvxrcd, struct verbs_xrcd,
					       xrcd);
	int err;

	err = ibv_cmd_close_xrcd(xrcd);
	if (err)
		return err;
	free(xrcd);
	return 0;
}
