/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * urdma user/kernel ABI.
 *
 * Rules (after efa-abi.h):
 *  - Every struct is a multiple of 8 bytes, fixed-width types only, and
 *    padding is explicit.
 *  - Reserved fields are named reserved_XXX, where XXX is the hex bit offset
 *    of the field inside its struct.  They must be zero; the kernel rejects
 *    non-zero reserved fields and unknown comp_mask bits with -EINVAL.
 *  - Structs start with comp_mask so that they can grow at the end.  The
 *    kernel accepts a shorter (older) command as long as it covers the last
 *    mandatory field, and a longer (newer) one only if the unknown tail is
 *    zero.
 *  - No kernel pointers, no #ifdef __KERNEL__.
 *
 * URDMA_ABI_VERSION is the device's uverbs_abi_ver; the provider refuses
 * other versions.
 */
#ifndef URDMA_ABI_USER_H
#define URDMA_ABI_USER_H

#include <linux/types.h>

#define URDMA_ABI_VERSION 1

#ifdef __cplusplus
#define URDMA_ABI_ASSERT_SIZE(name, size) \
	static_assert(sizeof(struct name) == (size), #name " size")
#else
#define URDMA_ABI_ASSERT_SIZE(name, size) \
	_Static_assert(sizeof(struct name) == (size), #name " size")
#endif

/* Bits of urdma_alloc_ucontext_resp.device_caps. */
enum {
	/* Local path: both QPs on this host move data by memcpy. */
	URDMA_DEVICE_CAP_LOCAL_PATH = 1 << 0,
};

struct urdma_alloc_ucontext_cmd {
	__u32 comp_mask;	/* must be 0 */
	__u32 reserved_20;
};

URDMA_ABI_ASSERT_SIZE(urdma_alloc_ucontext_cmd, 8);

struct urdma_alloc_ucontext_resp {
	__u32 comp_mask;
	__u32 device_caps;	/* URDMA_DEVICE_CAP_* */
	__u32 max_qp_wr;	/* limits the kernel enforces on user queues */
	__u32 max_sge;
	__u32 max_inline_data;
	__u32 max_cqe;
	__u32 max_srq_wr;
	__u32 page_shift;	/* ring and doorbell alignment (log2 bytes) */
};

URDMA_ABI_ASSERT_SIZE(urdma_alloc_ucontext_resp, 32);

struct urdma_alloc_pd_resp {
	__u32 comp_mask;
	__u32 pdn;		/* device-unique PD number */
};

URDMA_ABI_ASSERT_SIZE(urdma_alloc_pd_resp, 8);

#endif /* URDMA_ABI_USER_H */
