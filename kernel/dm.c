// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Device memory (ibv_alloc_dm, ibv_reg_dm_mr).  A hardware adapter's is
 * on-chip memory that the host maps through a BAR; urdma's is kernel
 * memory (vmalloc_user()) that the process maps through the context's
 * file, at the offset the DM_ALLOC method returns in its driver attribute
 * URDMA_ATTR_ALLOC_DM_MMAP_OFFSET.  liburdma's memcpy_to_dm and
 * memcpy_from_dm copy through that mapping; an MR on it (zero based, as the
 * core requires) is read and written by the engine like any MR.
 *
 * Lifetime: the core keeps a DM while MRs use it (dm->usecnt), and an MR's
 * deregistration syncs the engine.  Freeing a DM removes its mmap entry;
 * the memory goes with the entry (urdma_mmap_free()), and pages a process
 * still has mapped stay until it unmaps them (the mapping holds them).
 */
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME urdma_ib
#include <rdma/uverbs_named_ioctl.h>
#include <rdma/uverbs_std_types.h>

#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

struct urdma_dm {
	struct ib_dm ibdm;
	struct urdma_mmap_entry *entry;
	u64 bytes;	/* counted against URDMA_MAX_DM_TOTAL */
};

static struct urdma_dm *to_udm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct urdma_dm, ibdm);
}

struct ib_dm *urdma_alloc_dm(struct ib_device *ibdev,
			     struct ib_ucontext *ibuctx,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs)
{
	struct urdma_dev *udev = to_udev(ibdev);
	struct urdma_mmap_entry *e;
	struct urdma_dm *dm;
	u64 bytes, off;
	int ret;

	if (!ibuctx || !attrs)
		return ERR_PTR(-EOPNOTSUPP);
	/* Any alignment up to a page: the memory starts on one. */
	if (!attr->length || attr->length > URDMA_MAX_DM_SIZE ||
	    attr->alignment > PAGE_SHIFT)
		return ERR_PTR(-EINVAL);
	bytes = PAGE_ALIGN(attr->length);
	if (atomic64_add_return(bytes, &udev->dm_bytes) > URDMA_MAX_DM_TOTAL) {
		ret = -ENOMEM;
		goto err_count;
	}
	ret = -ENOMEM;
	dm = kzalloc(sizeof(*dm), GFP_KERNEL);
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!dm || !e)
		goto err_free;
	e->dm_kva = vmalloc_user(bytes);
	if (!e->dm_kva)
		goto err_free;
	ret = rdma_user_mmap_entry_insert(ibuctx, &e->rdma, bytes);
	if (ret)
		goto err_vfree;
	dm->entry = e;
	dm->bytes = bytes;
	off = rdma_user_mmap_get_offset(&e->rdma);
	ret = uverbs_copy_to(attrs, URDMA_ATTR_ALLOC_DM_MMAP_OFFSET, &off,
			     sizeof(off));
	if (ret) {
		/* The entry frees the memory (urdma_mmap_free()). */
		rdma_user_mmap_entry_remove(&e->rdma);
		kfree(dm);
		goto err_count;
	}
	return &dm->ibdm;

err_vfree:
	vfree(e->dm_kva);
err_free:
	kfree(e);
	kfree(dm);
err_count:
	atomic64_sub(bytes, &udev->dm_bytes);
	return ERR_PTR(ret);
}

int urdma_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct urdma_dm *dm = to_udm(ibdm);

	atomic64_sub(dm->bytes, &to_udev(ibdm->device)->dm_bytes);
	rdma_user_mmap_entry_remove(&dm->entry->rdma);
	kfree(dm);
	return 0;
}

/*
 * The core checked the range against the DM and asked for ZERO_BASED.  An
 * empty MR is allowed (as on mlx5): no access fits in it.
 */
struct ib_mr *urdma_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	struct urdma_dm *dm = to_udm(ibdm);

	/* Zero based: the MR's addresses are offsets from its start. */
	return urdma_reg_kva_mr(ibpd, URDMA_MEM_DM,
				attr->access_flags & ~IB_ZERO_BASED,
				(uintptr_t)dm->entry->dm_kva + attr->offset,
				attr->length);
}

/* DM_ALLOC's driver attribute: the offset to mmap the memory at. */
ADD_UVERBS_ATTRIBUTES_SIMPLE(urdma_dm_alloc_attrs, UVERBS_OBJECT_DM,
			     UVERBS_METHOD_DM_ALLOC,
			     UVERBS_ATTR_PTR_OUT(URDMA_ATTR_ALLOC_DM_MMAP_OFFSET,
						 UVERBS_ATTR_TYPE(u64),
						 UA_MANDATORY));

const struct uapi_definition urdma_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &urdma_dm_alloc_attrs),
	{},
};
