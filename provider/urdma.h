/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * urdma provider: device, context and object types.
 */
#ifndef __URDMA_H__
#define __URDMA_H__

#include <stdint.h>

#include <infiniband/driver.h>
#include <util/util.h>

#include "urdma-abi.h"

struct urdma_device {
	struct verbs_device vdev;
};

/*
 * Limits the kernel enforces on user queues, from
 * struct urdma_alloc_ucontext_resp.  Read-only after alloc_context.
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
};

struct urdma_pd {
	struct ibv_pd ibvpd;
	uint32_t pdn;
};

static inline struct urdma_context *to_urdma_ctx(struct ibv_context *ibvctx)
{
	return container_of(ibvctx, struct urdma_context, ibvctx.context);
}

static inline struct urdma_pd *to_urdma_pd(struct ibv_pd *ibvpd)
{
	return container_of(ibvpd, struct urdma_pd, ibvpd);
}

/* verbs.c */
int urdma_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int urdma_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *attr);
struct ibv_pd *urdma_alloc_pd(struct ibv_context *ibvctx);
int urdma_dealloc_pd(struct ibv_pd *ibvpd);
struct ibv_mr *urdma_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int urdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access);
int urdma_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *urdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int urdma_dealloc_mw(struct ibv_mw *mw);

#endif /* __URDMA_H__ */
