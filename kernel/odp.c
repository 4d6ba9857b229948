// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * On-demand paging: MRs whose pages are not pinned (IB_ACCESS_ON_DEMAND),
 * explicit (a range) or implicit (the whole address space).
 *
 * The core's ib_umem_odp follows the range with an mmu_interval_notifier
 * and faults pages in with hmm_range_fault().  urdma keeps, for each page,
 * the kernel address the engine copies through (struct urdma_odp_range's
 * @pas) and two bits: URDMA_ODP_VALID and URDMA_ODP_WRITE.
 *
 * The engine never faults.  A pass must not wait for the mmap lock: an
 * munmap holds it while it waits for the engine (below).  A pass that needs
 * a page that is not there (urdma_odp_ready()) asks for it and leaves its
 * WQE or packet for later, and the other QPs run: a WQE on the local path
 * waits (URDMA_EXEC_FAULT), the requester stalls, the responder answers
 * with an RNR NAK.  The MR's work item faults the pages in, in process
 * context on the MR's mm, and wakes the engines.
 *
 * Invalidation (urdma_odp_invalidate(), under the umem's umem_mutex, which
 * also orders it with the work item's faults):
 *   1. clear VALID on the range's pages: no pass that looks now uses them;
 *   2. urdma_engine_sync(): a pass that found them valid before has ended;
 *   3. zero the entries and let the core unmap the pages.
 * A pass checks every page of a copy before it copies a byte (urdma_copy()
 * via urdma_sgl_ready()), so the pages it checked stay in place until the
 * pass ends: at worst it copies between steps 1 and 3, and 3 waits for it.
 *
 * An implicit MR gets a child range of URDMA_ODP_CHILD_SIZE where it is
 * first faulted, kept until the MR goes; its children are never freed
 * while a pass could look at them.
 */
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_umem_odp.h>

#include "urdma.h"

#define URDMA_ODP_VALID		BIT_ULL(0)
#define URDMA_ODP_WRITE		BIT_ULL(1)
#define URDMA_ODP_CHILD_SHIFT	26	/* 64 MiB: 16384 pages */
#define URDMA_ODP_CHILD_SIZE	BIT_ULL(URDMA_ODP_CHILD_SHIFT)
/* Bytes a request may ask for; the engine asks again for the rest. */
#define URDMA_ODP_REQ_MAX	SZ_16M

#if URDMA_HAVE_ODP

/*
 * The work items that fault pages in.  Their own queue: a fault can wait
 * for as long as the memory behind a mapping takes (a FUSE or NFS file),
 * which must not hold up the kernel's shared queues.
 */
static struct workqueue_struct *urdma_odp_wq;

int urdma_odp_init(void)
{
	urdma_odp_wq = alloc_workqueue("urdma_odp", WQ_UNBOUND, 0);
	return urdma_odp_wq ? 0 : -ENOMEM;
}

void urdma_odp_exit(void)
{
	destroy_workqueue(urdma_odp_wq);
}

/* The range of @odp that holds user address @uva, or NULL. */
static struct urdma_odp_range *urdma_odp_find(struct urdma_odp *odp, u64 uva)
{
	struct urdma_odp_range *r = &odp->root;

	if (odp->implicit)
		return xa_load(&odp->children, uva >> URDMA_ODP_CHILD_SHIFT);
	if (uva < r->start || uva - r->start >= (u64)r->npages << PAGE_SHIFT)
		return NULL;
	return r;
}

static bool urdma_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct ib_umem_odp *umem = container_of(mni, struct ib_umem_odp,
						notifier);
	struct urdma_odp_range *r;
	u64 start, end, i, first, last;
	bool mapped = false;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&umem->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	r = umem->private;
	start = max_t(u64, ib_umem_start(umem), range->start);
	end = min_t(u64, ib_umem_end(umem), range->end);
	if (!r || start >= end)
		goto out;
	first = (start - r->start) >> PAGE_SHIFT;
	last = min_t(u64, DIV_ROUND_UP(end - r->start, PAGE_SIZE), r->npages);
	for (i = first; i < last; i++) {
		if (r->pas[i]) {
			WRITE_ONCE(r->pas[i], r->pas[i] & ~URDMA_ODP_VALID);
			mapped = true;
		}
	}
	if (mapped) {
		/* No pass that saw them valid is still running after this. */
		urdma_engine_sync();
		for (i = first; i < last; i++)
			WRITE_ONCE(r->pas[i], 0);
	}
	/* Whatever the core mapped there, urdma's or not. */
	ib_umem_odp_unmap_dma_pages(umem, start, end);
out:
	mutex_unlock(&umem->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops urdma_odp_ops = {
	.invalidate = urdma_odp_invalidate,
};

/* @umem's pages that the core maps now, into @r (under umem_mutex). */
static void urdma_odp_fill(struct urdma_odp_range *r, u64 first, u64 n)
{
	struct ib_umem_odp *umem = r->umem;
	u64 i;

	lockdep_assert_held(&umem->umem_mutex);
	for (i = first; i < first + n && i < r->npages; i++) {
		dma_addr_t d = umem->dma_list[i];
		u64 e = 0;

		/* Virtual DMA: the "DMA address" is the kernel's. */
		if (d & ODP_READ_ALLOWED_BIT)
			e = (d & ODP_DMA_ADDR_MASK) | URDMA_ODP_VALID;
		if (e && (d & ODP_WRITE_ALLOWED_BIT))
			e |= URDMA_ODP_WRITE;
		WRITE_ONCE(r->pas[i], e);
	}
}

/* Fault [uva, uva + len) of @r in (or only map what is there: !@fault). */
static int urdma_odp_fault_range(struct urdma_odp_range *r, u64 uva, u64 len,
				 bool write, bool fault)
{
	struct ib_umem_odp *umem = r->umem;
	u64 access = ODP_READ_ALLOWED_BIT;
	int npages;

	if (write)
		access |= ODP_WRITE_ALLOWED_BIT;
	npages = ib_umem_odp_map_dma_and_lock(umem, uva, len, access, fault);
	if (npages < 0)
		return npages;
	urdma_odp_fill(r, (ALIGN_DOWN(uva, PAGE_SIZE) - r->start) >> PAGE_SHIFT,
		       npages);
	mutex_unlock(&umem->umem_mutex);
	return 0;
}

/*
 * The pages an ODP MR follows cost kernel memory (urdma's and the core's
 * lists, about 24 bytes a page) that pins nothing, so RLIMIT_MEMLOCK does
 * not bound it: a device follows at most URDMA_MAX_ODP_PAGES.
 */
static bool urdma_odp_charge(struct urdma_dev *udev, u64 pages)
{
	if (atomic64_add_return(pages, &udev->odp_pages) <= URDMA_MAX_ODP_PAGES)
		return true;
	atomic64_sub(pages, &udev->odp_pages);
	return false;
}

static void urdma_odp_uncharge(struct urdma_dev *udev, u64 pages)
{
	atomic64_sub(pages, &udev->odp_pages);
}

/*
 * Whether the process maps anything in @uva's child range: an implicit MR
 * gets children only where there is memory, not for every address asked.
 */
static bool urdma_odp_mapped(struct urdma_odp *odp, u64 uva)
{
	struct mm_struct *mm = odp->root.umem->umem.owning_mm;
	u64 start = ALIGN_DOWN(uva, URDMA_ODP_CHILD_SIZE);
	bool mapped;

	if (!mmget_not_zero(mm))
		return false;
	mmap_read_lock(mm);
	mapped = find_vma_intersection(mm, start, start + URDMA_ODP_CHILD_SIZE);
	mmap_read_unlock(mm);
	mmput(mm);
	return mapped;
}

/* The range of implicit @odp that holds @uva, created if it is new. */
static struct urdma_odp_range *urdma_odp_child(struct urdma_odp *odp, u64 uva)
{
	unsigned long idx = uva >> URDMA_ODP_CHILD_SHIFT;
	struct urdma_odp_range *r, *old;
	struct ib_umem_odp *umem;

	r = xa_load(&odp->children, idx);
	if (r)
		return r;
	if (uva >= TASK_SIZE || !urdma_odp_mapped(odp, uva))
		return ERR_PTR(-EFAULT);
	if (!urdma_odp_charge(odp->udev, URDMA_ODP_CHILD_SIZE >> PAGE_SHIFT))
		return ERR_PTR(-ENOMEM);
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		goto err_uncharge;
	r->start = (u64)idx << URDMA_ODP_CHILD_SHIFT;
	r->npages = URDMA_ODP_CHILD_SIZE >> PAGE_SHIFT;
	r->pas = kvcalloc(r->npages, sizeof(*r->pas), GFP_KERNEL_ACCOUNT);
	if (!r->pas)
		goto err_free;
	umem = ib_umem_odp_alloc_child(odp->root.umem, r->start,
				       URDMA_ODP_CHILD_SIZE, &urdma_odp_ops);
	if (IS_ERR(umem)) {
		kvfree(r->pas);
		kfree(r);
		urdma_odp_uncharge(odp->udev, URDMA_ODP_CHILD_SIZE >> PAGE_SHIFT);
		return ERR_CAST(umem);
	}
	r->umem = umem;
	mutex_lock(&umem->umem_mutex);
	umem->private = r;
	mutex_unlock(&umem->umem_mutex);
	old = xa_cmpxchg(&odp->children, idx, NULL, r, GFP_KERNEL);
	if (!old)
		return r;
	/* Another fault made it first (or the store failed). */
	ib_umem_odp_release(umem);
	kvfree(r->pas);
	kfree(r);
	urdma_odp_uncharge(odp->udev, URDMA_ODP_CHILD_SIZE >> PAGE_SHIFT);
	return xa_is_err(old) ? ERR_PTR(xa_err(old)) : old;

err_free:
	kfree(r);
err_uncharge:
	urdma_odp_uncharge(odp->udev, URDMA_ODP_CHILD_SIZE >> PAGE_SHIFT);
	return ERR_PTR(-ENOMEM);
}

/*
 * Fault [uva, uva + len) in, in process context.  Return: 0, or -EFAULT
 * (not mapped, or not writable for @write), -ENOMEM, ...
 */
static int urdma_odp_fault(struct urdma_odp *odp, u64 uva, u64 len,
			   bool write, bool fault)
{
	u64 end;

	if (!len)
		return 0;
	if (check_add_overflow(uva, len, &end))
		return -EFAULT;
	while (uva < end) {
		struct urdma_odp_range *r;
		u64 n;
		int ret;

		r = odp->implicit ? urdma_odp_child(odp, uva) :
				    urdma_odp_find(odp, uva);
		if (IS_ERR_OR_NULL(r))
			return r ? PTR_ERR(r) : -EFAULT;
		n = min(end - uva,
			r->start + ((u64)r->npages << PAGE_SHIFT) - uva);
		n = min_t(u64, n, URDMA_ODP_REQ_MAX);
		ret = urdma_odp_fault_range(r, uva, n, write, fault);
		if (ret)
			return ret;
		uva += n;
		cond_resched();
	}
	return 0;
}

/* Take the next request; false if there is none. */
static bool urdma_odp_next(struct urdma_odp *odp, struct urdma_odp_req *req)
{
	bool found = false;
	int i;

	spin_lock(&odp->req_lock);
	for (i = 0; i < URDMA_ODP_REQS; i++) {
		if (odp->req[i].end) {
			*req = odp->req[i];
			odp->req[i].end = 0;
			found = true;
			break;
		}
	}
	spin_unlock(&odp->req_lock);
	return found;
}

static void urdma_odp_work(struct work_struct *work)
{
	struct urdma_odp *odp = container_of(work, struct urdma_odp, work);
	struct urdma_odp_req req;
	int ret;

	while (urdma_odp_next(odp, &req)) {
		ret = urdma_odp_fault(odp, req.start, req.end - req.start,
				      req.write, true);
		atomic64_inc(&odp->udev->odp_faults);
		/*
		 * The waiter fails on it (urdma_odp_ready()), unless the
		 * fault only lost a race with invalidations (-EBUSY, after
		 * hmm_range_fault()'s own retries): then it asks again.
		 */
		if (ret && ret != -EBUSY && ret != -EAGAIN) {
			spin_lock(&odp->req_lock);
			odp->fail_start = req.start;
			odp->fail_end = req.end;
			odp->fail_write = req.write;
			spin_unlock(&odp->req_lock);
		}
	}
	urdma_engine_wake_all();
}

/*
 * Ask for [uva, end) to be faulted in.  A request that finds every slot
 * taken is dropped: its waiter looks again, and asks again, later.
 */
static int urdma_odp_request(struct urdma_odp *odp, u64 uva, u64 end,
			     bool write)
{
	int i, ret = -EAGAIN;

	end = uva + min_t(u64, end - uva, URDMA_ODP_REQ_MAX);
	spin_lock(&odp->req_lock);
	/* (A write that failed says nothing of a read of the same pages.) */
	if (odp->fail_end && uva < odp->fail_end && end > odp->fail_start &&
	    (write || !odp->fail_write)) {
		/* It was tried, and failed: once, for this waiter. */
		odp->fail_end = 0;
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < URDMA_ODP_REQS; i++) {
		struct urdma_odp_req *r = &odp->req[i];

		if (r->end && uva >= r->start && end <= r->end &&
		    (r->write || !write))
			goto out;	/* asked already */
		if (!r->end) {
			r->start = uva;
			r->end = end;
			r->write = write;
			queue_work(urdma_odp_wq, &odp->work);
			goto out;
		}
	}
out:
	spin_unlock(&odp->req_lock);
	return ret;
}

/**
 * urdma_odp_ready - are the pages of [va, va + len) of @mr there?
 * @mr: an ODP MR
 * @va: the first byte, as the MR addresses it (checked to be in bounds)
 * @len: bytes, not 0
 * @write: the engine writes there
 *
 * For the engine, in a pass: the pages it finds valid stay in place until
 * the pass ends.  Those that are missing are asked for.
 *
 * Return: 0; -EAGAIN: not yet, the WQE or packet waits; -EFAULT: the pages
 * could not be faulted in (not mapped, or read-only for @write).
 */
int urdma_odp_ready(struct urdma_mr *mr, u64 va, u64 len, bool write)
{
	struct urdma_odp *odp = mr->odp;
	u64 need = URDMA_ODP_VALID | (write ? URDMA_ODP_WRITE : 0);
	u64 uva = va + odp->delta, end = uva + len, p;
	struct urdma_odp_range *r = NULL;

	for (p = ALIGN_DOWN(uva, PAGE_SIZE); p < end; p += PAGE_SIZE) {
		if (!r || p - r->start >= (u64)r->npages << PAGE_SHIFT)
			r = urdma_odp_find(odp, p);
		if (!r ||
		    (READ_ONCE(r->pas[(p - r->start) >> PAGE_SHIFT]) & need) != need)
			return urdma_odp_request(odp, max(p, uva), end, write);
	}
	return 0;
}

/**
 * urdma_odp_kva - the kernel address of @va in ODP MR @mr
 * @mr: the MR
 * @va: as the MR addresses it
 * @want: bytes wanted
 * @contig: set to the bytes contiguous from @va (at most @want)
 *
 * Only for pages urdma_odp_ready() found in this pass.  Return: the
 * address, or NULL if the page is not mapped.
 */
void *urdma_odp_kva(struct urdma_mr *mr, u64 va, u32 want, u32 *contig)
{
	u64 uva = va + mr->odp->delta, e;
	struct urdma_odp_range *r = urdma_odp_find(mr->odp, uva);
	u32 in_page = offset_in_page(uva);

	if (!r)
		return NULL;
	e = READ_ONCE(r->pas[(uva - r->start) >> PAGE_SHIFT]);
	if (!e)
		return NULL;
	*contig = min_t(u32, want, PAGE_SIZE - in_page);
	return (void *)(uintptr_t)((e & PAGE_MASK) + in_page);
}

/**
 * urdma_odp_reg - make @mr an ODP MR
 * @mr: the new MR (its access is checked)
 * @ibdev: the device
 * @start: @length: the user range; 0 and U64_MAX: implicit, all of it
 * @iova: the address the MR knows the range by (0 if implicit)
 *
 * Nothing is faulted in here.  Return: 0 or an errno.
 */
int urdma_odp_reg(struct urdma_mr *mr, struct ib_device *ibdev, u64 start,
		  u64 length, u64 iova)
{
	/* Huge pages are mapped page by page. */
	int access = mr->mem.access & ~IB_ACCESS_HUGETLB;
	bool implicit = !start && length == U64_MAX;
	struct ib_umem_odp *umem;
	struct urdma_odp *odp;

	if (implicit ? iova : !length || length > URDMA_MAX_MR_SIZE)
		return -EINVAL;
	odp = kzalloc(sizeof(*odp), GFP_KERNEL_ACCOUNT);
	if (!odp)
		return -ENOMEM;
	odp->udev = to_udev(ibdev);
	odp->implicit = implicit;
	xa_init(&odp->children);
	spin_lock_init(&odp->req_lock);
	INIT_WORK(&odp->work, urdma_odp_work);
	atomic_set(&odp->users, 0);

	if (implicit)
		umem = ib_umem_odp_alloc_implicit(ibdev, access);
	else
		umem = ib_umem_odp_get(ibdev, start, length, access,
				       &urdma_odp_ops);
	if (IS_ERR(umem)) {
		kfree(odp);
		return PTR_ERR(umem);
	}
	odp->root.umem = umem;
	if (implicit) {
		/* The core's implicit umem holds no mm; its children use it. */
		mmgrab(umem->umem.owning_mm);
	} else {
		odp->root.start = ib_umem_start(umem);
		odp->root.npages = ib_umem_odp_num_pages(umem);
		if (!urdma_odp_charge(odp->udev, odp->root.npages)) {
			ib_umem_odp_release(umem);
			kfree(odp);
			return -ENOMEM;
		}
		odp->root.pas = kvcalloc(odp->root.npages,
					 sizeof(*odp->root.pas),
					 GFP_KERNEL_ACCOUNT);
		if (!odp->root.pas) {
			urdma_odp_uncharge(odp->udev, odp->root.npages);
			ib_umem_odp_release(umem);
			kfree(odp);
			return -ENOMEM;
		}
		odp->delta = start - iova;
		mutex_lock(&umem->umem_mutex);
		umem->private = &odp->root;
		mutex_unlock(&umem->umem_mutex);
	}
	mr->odp = odp;
	mr->mtt.iova = iova;
	mr->mtt.length = length;
	mr->mtt.block_shift = PAGE_SHIFT;
	return 0;
}

/*
 * The end of an ODP MR: its key is gone and the engines are synced, so no
 * pass asks for faults any more.
 */
void urdma_odp_release(struct urdma_odp *odp)
{
	struct urdma_odp_range *r;
	unsigned long idx;

	wait_var_event(&odp->users, !atomic_read(&odp->users));
	cancel_work_sync(&odp->work);
	xa_for_each(&odp->children, idx, r) {
		ib_umem_odp_release(r->umem);
		urdma_odp_uncharge(odp->udev, r->npages);
		kvfree(r->pas);
		kfree(r);
	}
	xa_destroy(&odp->children);
	if (odp->implicit)
		mmdrop(odp->root.umem->umem.owning_mm);
	else
		urdma_odp_uncharge(odp->udev, odp->root.npages);
	ib_umem_odp_release(odp->root.umem);
	kvfree(odp->root.pas);
	kfree(odp);
}

/*
 * An ODP MR of PD @pdn by its lkey, held against deregistration.  Return:
 * the MR; -ENOENT: no ODP MR has that key; -EPERM: one of another PD.
 */
static struct urdma_mr *urdma_odp_get(struct urdma_dev *udev, u32 pdn,
				      u32 lkey)
{
	struct urdma_mr *mr = ERR_PTR(-ENOENT);
	struct urdma_mem *mem;

	xa_lock(&udev->keys.xa);
	mem = urdma_key_lookup(&udev->keys, lkey);
	if (mem && mem->type == URDMA_MEM_USER &&
	    READ_ONCE(mem->state) == URDMA_MEM_VALID &&
	    container_of(mem, struct urdma_mr, mem)->odp) {
		mr = container_of(mem, struct urdma_mr, mem);
		if (READ_ONCE(mem->pdn) == pdn)
			atomic_inc(&mr->odp->users);
		else
			mr = ERR_PTR(-EPERM);
	}
	xa_unlock(&udev->keys.xa);
	return mr;
}

static void urdma_odp_put(struct urdma_odp *odp)
{
	if (atomic_dec_and_test(&odp->users))
		wake_up_var(&odp->users);
}

/* One SGE of ibv_advise_mr(). */
static int urdma_advise_sge(struct urdma_dev *udev, u32 pdn,
			    const struct ib_sge *sge, bool write, bool fault,
			    bool sync)
{
	struct urdma_mr *mr = urdma_odp_get(udev, pdn, sge->lkey);
	u64 end;
	int ret;

	if (IS_ERR(mr))
		return PTR_ERR(mr);
	if (check_add_overflow(sge->addr, (u64)sge->length, &end) ||
	    sge->addr < mr->mtt.iova || end > mr->mtt.iova + mr->mtt.length)
		ret = -EINVAL;
	else if (write && !(READ_ONCE(mr->mem.access) & IB_ACCESS_LOCAL_WRITE))
		ret = -EPERM;
	else
		ret = urdma_odp_fault(mr->odp, sge->addr + mr->odp->delta,
				      sge->length, write, fault);
	/* Without FLUSH, a hint: pages that cannot be had fail at first use. */
	if (!sync && ret != -EINVAL && ret != -EPERM)
		ret = 0;
	urdma_odp_put(mr->odp);
	return ret;
}

/**
 * urdma_advise_mr - ibv_advise_mr(): prefetch ranges of ODP MRs
 *
 * Each SGE names an ODP MR of @ibpd by its lkey and a range inside it.
 * The pages are faulted in (PREFETCH: readable, PREFETCH_WRITE: writable)
 * or, for PREFETCH_NO_FAULT, only the pages present are mapped.  The work
 * is done here, in the caller's system call, with or without
 * IB_UVERBS_ADVISE_MR_FLAG_FLUSH; without it, as for mlx5, pages that
 * cannot be faulted in are no error (their first use fails).
 *
 * Return: 0; -EOPNOTSUPP for an unknown advice or flag; -ENOENT for an
 * lkey of no ODP MR; -EPERM for one of another PD, or PREFETCH_WRITE on
 * an MR without LOCAL_WRITE; -EINVAL for a range outside the MR; with
 * FLUSH, -EFAULT if the pages cannot be faulted in.
 */
int urdma_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct urdma_dev *udev = to_udev(ibpd->device);
	bool write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	int ret = 0;
	u32 i;

	if (advice > IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT ||
	    flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return -EOPNOTSUPP;
	for (i = 0; i < num_sge && !ret; i++)
		ret = urdma_advise_sge(udev, to_upd(ibpd)->pdn, &sg_list[i],
				       write, fault,
				       flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH);
	/* WQEs that wait for these pages need not wait out their timer. */
	urdma_engine_wake_all();
	return ret;
}

void urdma_odp_caps(struct ib_device_attr *attr)
{
	u32 rc = IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		 IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		 IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;

	attr->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	attr->odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	attr->odp_caps.per_transport_caps.rc_odp_caps = rc;
	attr->odp_caps.per_transport_caps.xrc_odp_caps = rc;
	attr->odp_caps.per_transport_caps.uc_odp_caps = IB_ODP_SUPPORT_SEND |
							IB_ODP_SUPPORT_RECV |
							IB_ODP_SUPPORT_WRITE;
	attr->odp_caps.per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND |
							IB_ODP_SUPPORT_RECV;
}

#endif /* URDMA_HAVE_ODP */
