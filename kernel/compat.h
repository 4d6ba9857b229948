/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel API drift between the kernels urdma supports (Debian 6.1 and 6.12
 * today).  This is the only file that tests LINUX_VERSION_CODE.
 */
#ifndef URDMA_COMPAT_H
#define URDMA_COMPAT_H

#include <linux/version.h>
#include <rdma/ib_verbs.h>

/*
 * 6.11 changed create_cq to take the uverbs attribute bundle; the driver
 * udata is &attrs->driver_udata, and attrs is NULL for kernel CQs.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#include <rdma/uverbs_ioctl.h>

typedef struct uverbs_attr_bundle urdma_create_cq_attrs_t;

static inline struct ib_udata *
urdma_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
typedef struct ib_udata urdma_create_cq_attrs_t;

static inline struct ib_udata *urdma_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/* FLUSH access flags (and the FLUSH and ATOMIC_WRITE verbs) came in 6.2. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define URDMA_ACCESS_FLUSH (IB_ACCESS_FLUSH_GLOBAL | IB_ACCESS_FLUSH_PERSISTENT)
#define URDMA_HAVE_FLUSH_ATOMIC_WRITE 1
#define URDMA_QP_ACCESS_IGNORED 0
/* Memory is coherent but not persistent: FLUSH to the global level only. */
#define URDMA_DEVICE_FLUSH_ATOMIC_WRITE (IB_DEVICE_FLUSH_GLOBAL | \
					 IB_DEVICE_ATOMIC_WRITE)
#else
/*
 * Before 6.2 the core passes rdma-core's IBV_ACCESS_FLUSH_* bits (8, 9) in
 * a QP's access flags through unchecked; rdma-core's tests set them on every
 * RC QP.  The QP accepts and ignores them there, as rxe does: no FLUSH work
 * request exists on such a kernel.
 */
#define URDMA_ACCESS_FLUSH 0
#define URDMA_QP_ACCESS_IGNORED (BIT(8) | BIT(9))
#define URDMA_HAVE_FLUSH_ATOMIC_WRITE 0
#define URDMA_DEVICE_FLUSH_ATOMIC_WRITE 0
#endif

/* vm_flags became read-only (use vm_flags_clear) in 6.3. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define urdma_vm_flags_clear(vma, flags) vm_flags_clear(vma, flags)
#else
#define urdma_vm_flags_clear(vma, flags) ((vma)->vm_flags &= ~(flags))
#endif

/*
 * MODULE_IMPORT_NS takes a string literal from 6.13 on and a bare
 * identifier before.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define URDMA_IMPORT_KUNIT_NS() MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING")
#else
#define URDMA_IMPORT_KUNIT_NS() MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)
#endif

/*
 * 6.12 passes reg_user_mr_dmabuf the uverbs attribute bundle instead of
 * the udata.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
typedef struct uverbs_attr_bundle urdma_dmabuf_mr_attrs_t;
#else
typedef struct ib_udata urdma_dmabuf_mr_attrs_t;
#endif

/*
 * From 6.2 on dma_buf_vmap() wants the reservation lock held and the
 * _unlocked variants take it; before, dma_buf_vmap() locked by itself.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define urdma_dma_buf_vmap(buf, map) dma_buf_vmap_unlocked(buf, map)
#define urdma_dma_buf_vunmap(buf, map) dma_buf_vunmap_unlocked(buf, map)
#else
#define urdma_dma_buf_vmap(buf, map) dma_buf_vmap(buf, map)
#define urdma_dma_buf_vunmap(buf, map) dma_buf_vunmap(buf, map)
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define URDMA_IMPORT_DMA_BUF_NS() MODULE_IMPORT_NS("DMA_BUF")
#else
#define URDMA_IMPORT_DMA_BUF_NS() MODULE_IMPORT_NS(DMA_BUF)
#endif

/*
 * On-demand paging: ib_umem_odp keeps each page's DMA address, with its
 * access in the low bits, in dma_list (5.10 to 6.14; 6.15 moved it to
 * hmm_dma_map and pfn_list).  Without the core's ODP there is none here.
 */
#if IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 15, 0)
#define URDMA_HAVE_ODP 1
#else
#define URDMA_HAVE_ODP 0
#endif

#endif /* URDMA_COMPAT_H */
