/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * urdma provider: command and response wrappers around the kernel ABI in
 * <rdma/urdma-abi.h> (the project's uapi/rdma/urdma-abi.h, synced into
 * kernel-headers/ by scripts/rdma-core.sh).  The wrappers are named
 * urdma_cmd_* so that their _resp structs do not clash with the uapi ones.
 */
#ifndef __URDMA_ABI_H__
#define __URDMA_ABI_H__

#include <infiniband/kern-abi.h>
#include <kernel-abi/urdma-abi.h>
#include <rdma/urdma-abi.h>

DECLARE_DRV_CMD(urdma_cmd_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT,
		urdma_alloc_ucontext_cmd, urdma_alloc_ucontext_resp);
DECLARE_DRV_CMD(urdma_cmd_alloc_pd, IB_USER_VERBS_CMD_ALLOC_PD, empty,
		urdma_alloc_pd_resp);
/*
 * CQs and QPs are created with the extended commands
 * (ibv_cmd_create_cq_ex, ibv_cmd_create_qp_ex2) for both the legacy and
 * the _ex verbs, as mlx5 does.
 */
DECLARE_DRV_CMD(urdma_cmd_create_cq, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		urdma_create_cq_cmd, urdma_create_cq_resp);
DECLARE_DRV_CMD(urdma_cmd_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		urdma_resize_cq_cmd, urdma_resize_cq_resp);
DECLARE_DRV_CMD(urdma_cmd_create_qp, IB_USER_VERBS_EX_CMD_CREATE_QP,
		urdma_create_qp_cmd, urdma_create_qp_resp);
/* SRQs, basic and XRC, are created with ibv_cmd_create_srq_ex. */
DECLARE_DRV_CMD(urdma_cmd_create_srq, IB_USER_VERBS_CMD_CREATE_XSRQ,
		urdma_create_srq_cmd, urdma_create_srq_resp);
DECLARE_DRV_CMD(urdma_cmd_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		urdma_modify_srq_cmd, empty);
DECLARE_DRV_CMD(urdma_cmd_create_ah, IB_USER_VERBS_CMD_CREATE_AH, empty,
		urdma_create_ah_resp);

#endif /* __URDMA_ABI_H__ */
