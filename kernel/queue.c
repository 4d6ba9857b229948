// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rings and doorbell records.
 *
 * User rings and doorbell pages are pinned writable with ib_umem_get(),
 * which charges RLIMIT_MEMLOCK, and mapped into one kernel-virtual range
 * with vmap() for the engine.  Every pinned range of a context sits in the
 * context's range tree (uctx->ranges, under uctx->mem_lock): a ring may not
 * overlap another ring or a doorbell page, and doorbell pages are shared by
 * the records on them, counted in ->users.
 */
#include <kunit/visibility.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

bool urdma_ring_size_ok(u32 nent, u32 min_nent, u32 max_nent)
{
	return nent && is_power_of_2(nent) && nent >= min_nent &&
	       nent <= max_nent;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_ring_size_ok);

/* Map the pages of a page-aligned umem into one kernel range. */
static void *urdma_vmap_umem(struct ib_umem *umem, size_t npages)
{
	struct sg_page_iter it;
	struct page **pages;
	size_t i = 0;
	void *kva;

	pages = kvmalloc_array(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return NULL;
	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (i == npages)
			break;
		pages[i++] = sg_page_iter_page(&it);
	}
	kva = i == npages ? vmap(pages, npages, VM_MAP, PAGE_KERNEL) : NULL;
	kvfree(pages);
	return kva;
}

static struct urdma_urange *urdma_range_first(struct urdma_ucontext *uctx,
					      u64 start, u64 last)
{
	struct interval_tree_node *it;

	it = interval_tree_iter_first(&uctx->ranges, start, last);
	return it ? container_of(it, struct urdma_urange, it) : NULL;
}

/* Pin [addr, addr + size) writable and vmap it; addr is page-aligned. */
static int urdma_pin_map(struct urdma_ucontext *uctx, u64 addr, size_t size,
			 struct ib_umem **umemp, void **kvap)
{
	struct ib_umem *umem;
	void *kva;

	umem = ib_umem_get(uctx->ibucontext.device, addr, size,
			   IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	kva = urdma_vmap_umem(umem, PAGE_ALIGN(size) >> PAGE_SHIFT);
	if (!kva) {
		ib_umem_release(umem);
		return -ENOMEM;
	}
	*umemp = umem;
	*kvap = kva;
	return 0;
}

/**
 * urdma_ring_init_user - pin and map a user ring
 * @uctx: the owning context
 * @ring: zeroed ring to set up
 * @addr: user address, page-aligned
 * @nent: entries, a power of two (checked by the caller against limits)
 * @stride: bytes per entry
 *
 * Return: 0, -EINVAL for a misaligned, empty, wrapping or overlapping
 * ring, -EFAULT for memory that cannot be pinned writable, -ENOMEM (also
 * beyond RLIMIT_MEMLOCK).
 */
int urdma_ring_init_user(struct urdma_ucontext *uctx, struct urdma_ring *ring,
			 u64 addr, u32 nent, u32 stride)
{
	u64 size = (u64)nent * stride;
	int ret;

	if (!nent || !is_power_of_2(nent) || !stride ||
	    !PAGE_ALIGNED(addr) || addr + PAGE_ALIGN(size) < addr)
		return -EINVAL;

	mutex_lock(&uctx->mem_lock);
	if (urdma_range_first(uctx, addr, addr + PAGE_ALIGN(size) - 1)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	ret = urdma_pin_map(uctx, addr, size, &ring->umem, &ring->buf);
	if (ret)
		goto out_unlock;
	ring->nent = nent;
	ring->log_nent = ilog2(nent);
	ring->stride = stride;
	ring->uctx = uctx;
	ring->range.is_db = false;
	ring->range.it.start = addr;
	ring->range.it.last = addr + PAGE_ALIGN(size) - 1;
	interval_tree_insert(&ring->range.it, &uctx->ranges);
out_unlock:
	mutex_unlock(&uctx->mem_lock);
	return ret;
}

/* A kernel ring (kernel QPs and CQs), zeroed. */
int urdma_ring_init_kernel(struct urdma_ring *ring, u32 nent, u32 stride)
{
	if (!nent || !is_power_of_2(nent) || !stride)
		return -EINVAL;
	ring->buf = vzalloc((size_t)nent * stride);
	if (!ring->buf)
		return -ENOMEM;
	ring->umem = NULL;
	ring->uctx = NULL;
	ring->nent = nent;
	ring->log_nent = ilog2(nent);
	ring->stride = stride;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_ring_init_kernel);

/**
 * urdma_ring_destroy - release a ring set up by one of the init functions
 * @ring: the ring; safe to call on a zeroed, never set up ring
 *
 * The engine must no longer touch the ring.
 */
void urdma_ring_destroy(struct urdma_ring *ring)
{
	struct urdma_ucontext *uctx = ring->uctx;

	if (!ring->buf)
		return;
	if (ring->umem) {
		mutex_lock(&uctx->mem_lock);
		interval_tree_remove(&ring->range.it, &uctx->ranges);
		mutex_unlock(&uctx->mem_lock);
		vunmap(ring->buf);
		ib_umem_release(ring->umem);
		ring->umem = NULL;
	} else {
		vfree(ring->buf);
	}
	ring->buf = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_ring_destroy);

/**
 * urdma_db_init_user - map a user doorbell record
 * @uctx: the owning context
 * @db: zeroed record to set up
 * @addr: user address of the record, URDMA_DB_SIZE aligned
 *
 * Records share their page: the first record on a page pins it.
 * Return: 0, -EINVAL (misaligned, or the page is part of a ring), -EFAULT,
 * -ENOMEM.
 */
int urdma_db_init_user(struct urdma_ucontext *uctx, struct urdma_db *db,
		       u64 addr)
{
	u64 page = addr & PAGE_MASK;
	struct urdma_db_page *dbp;
	struct urdma_urange *r;
	int ret = 0;

	if (!IS_ALIGNED(addr, URDMA_DB_SIZE))
		return -EINVAL;

	mutex_lock(&uctx->mem_lock);
	r = urdma_range_first(uctx, page, page + PAGE_SIZE - 1);
	if (r && !r->is_db) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if (r) {
		dbp = container_of(r, struct urdma_db_page, range);
		dbp->users++;
		goto out_found;
	}

	dbp = kzalloc(sizeof(*dbp), GFP_KERNEL);
	if (!dbp) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	ret = urdma_pin_map(uctx, page, PAGE_SIZE, &dbp->umem, &dbp->kva);
	if (ret) {
		kfree(dbp);
		goto out_unlock;
	}
	dbp->users = 1;
	dbp->range.is_db = true;
	dbp->range.it.start = page;
	dbp->range.it.last = page + PAGE_SIZE - 1;
	interval_tree_insert(&dbp->range.it, &uctx->ranges);
out_found:
	db->page = dbp;
	db->uctx = uctx;
	db->kva = dbp->kva + offset_in_page(addr);
out_unlock:
	mutex_unlock(&uctx->mem_lock);
	return ret;
}

int urdma_db_init_kernel(struct urdma_db *db)
{
	db->kva = kzalloc(URDMA_DB_SIZE, GFP_KERNEL);
	db->page = NULL;
	db->uctx = NULL;
	return db->kva ? 0 : -ENOMEM;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_db_init_kernel);

/* Release a record; safe on a zeroed, never set up one. */
void urdma_db_destroy(struct urdma_db *db)
{
	struct urdma_ucontext *uctx = db->uctx;
	struct urdma_db_page *dbp = db->page;
	void *kva = db->kva;

	if (!kva)
		return;
	db->kva = NULL;
	db->page = NULL;
	if (!dbp) {
		kfree(kva);
		return;
	}

	mutex_lock(&uctx->mem_lock);
	if (--dbp->users)
		dbp = NULL;
	else
		interval_tree_remove(&dbp->range.it, &uctx->ranges);
	mutex_unlock(&uctx->mem_lock);
	if (dbp) {
		vunmap(dbp->kva);
		ib_umem_release(dbp->umem);
		kfree(dbp);
	}
}
EXPORT_SYMBOL_IF_KUNIT(urdma_db_destroy);

/*
 * A queue's ring and doorbell record: pinned from @addr and @db_addr
 * for a user queue (@uctx), else in kernel memory.  Return: 0, or the error
 * of the part that failed, with nothing left set up.
 */
int urdma_queue_init(struct urdma_ucontext *uctx, struct urdma_ring *ring,
		     struct urdma_db *db, u64 addr, u32 nent, u32 stride,
		     u64 db_addr)
{
	int ret;

	if (uctx)
		ret = urdma_ring_init_user(uctx, ring, addr, nent, stride);
	else
		ret = urdma_ring_init_kernel(ring, nent, stride);
	if (ret)
		return ret;
	ret = uctx ? urdma_db_init_user(uctx, db, db_addr) :
		     urdma_db_init_kernel(db);
	if (ret)
		urdma_ring_destroy(ring);
	return ret;
}

void urdma_queue_destroy(struct urdma_ring *ring, struct urdma_db *db)
{
	urdma_db_destroy(db);
	urdma_ring_destroy(ring);
}

/**
 * urdma_ring_swap - put a new ring in place of a queue's ring
 * @uctx: the owning context of user rings, NULL for kernel rings
 * @ring: the queue's ring; becomes @new
 * @new: the replacement
 * @old: receives the previous ring, for urdma_ring_destroy()
 *
 * The range tree holds nodes embedded in the ring structs, so they move
 * with the copy.  The caller holds @uctx->mem_lock and the queue's lock.
 */
void urdma_ring_swap(struct urdma_ucontext *uctx, struct urdma_ring *ring,
		     struct urdma_ring *new, struct urdma_ring *old)
{
	if (uctx) {
		lockdep_assert_held(&uctx->mem_lock);
		interval_tree_remove(&ring->range.it, &uctx->ranges);
		interval_tree_remove(&new->range.it, &uctx->ranges);
	}
	*old = *ring;
	*ring = *new;
	if (uctx) {
		interval_tree_insert(&ring->range.it, &uctx->ranges);
		interval_tree_insert(&old->range.it, &uctx->ranges);
	}
}
