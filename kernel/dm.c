// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Device memory (ibv_alloc_dm, ibv_reg_dm_mr).  A hardware adapter's is
 * on-chip memory that the host maps through a BAR; urdma's is kernel
 * memory (zeroed pages, vmap()ed) that the process maps through the context's
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

/* The entry's memory and its kernel mapping (urdma_mmap_free() too). */
void urdma_dm_free_pages(struct urdma_mmap_entry *e)
{
	u32 i;

	if (!e->dm_pages)
		return;
	vunmap(e->dm_kva);
	/* Pages a process still maps keep their reference until it unmaps. */
	for (i = 0; i < e->dm_npages; i++)
		if (e->dm_pages[i])
			__free_page(e->dm_pages[i]);
	kvfree(e->dm_pages);
	e->dm_pages = NULL;
	e->dm_kva = NULL;
}

/*
 * Zeroed pages, charged to the caller's memory cgroup (they can outlive
 * the DM in its mappings), mapped contiguously for the engine.
 */
static int urdma_dm_alloc_pages(struct urdma_mmap_entry *e, u32 n)
{
	u32 i;

	e->dm_pages = kvcalloc(n, sizeof(*e->dm_pages), GFP_KERNEL_ACCOUNT);
	if (!e->dm_pages)
		return -ENOMEM;
	e->dm_npages = n;
	for (i = 0; i < n; i++) {
		e->dm_pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!e->dm_pages[i])
			goto err;
	}
	e->dm_kva = vmap(e->dm_pages, n, VM_MAP, PAGE_KERNEL);
	if (e->dm_kva)
		return 0;
err:
	e->dm_kva = NULL;
	/* vunmap(NULL) is a no-op. */
	urdma_dm_free_pages(e);
	return -ENOMEM;
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
	ret = urdma_dm_alloc_pages(e, bytes >> PAGE_SHIFT);
	if (ret)
		goto err_free;
	ret = rdma_user_mmap_entry_insert(ibuctx, &e->rdma, bytes);
	if (ret)
		goto err_pages;
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

err_pages:
	urdma_dm_free_pages(e);
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
