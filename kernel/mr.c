// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma memory: key allocation, translation tables (MTT) built from pinned
 * user memory, and the MR verbs.
 *
 * Windows.  A remote access through a memory window is checked against the
 * window and against the MR behind it, every time, not only when the
 * window was bound (urdma_mw_mr()): the MR must still be the one the
 * window was bound to, valid, in the window's PD, and grant what the bind
 * required of it.  Re-registering an MR invalidates every window bound to
 * it, as the IBTA allows (the MR takes a new generation, which the windows
 * no longer match); they can be bound again.
 */
#include <linux/dma-buf.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <kunit/visibility.h>
#include <rdma/iter.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>

#include "urdma.h"

/* ---- keys ------------------------------------------------------------ */

void urdma_keytab_init(struct urdma_keytab *kt)
{
	xa_init_flags(&kt->xa, XA_FLAGS_ALLOC1);
	kt->next = 1;
	kt->wraps = 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_keytab_init);

void urdma_keytab_destroy(struct urdma_keytab *kt)
{
	WARN_ON_ONCE(!xa_empty(&kt->xa));
	xa_destroy(&kt->xa);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_keytab_destroy);

/**
 * urdma_key_alloc - publish @mem under a new key, stored in @mem->key
 * @kt: the key table
 * @mem: what the key names
 * @max_index: the largest index to hand out (URDMA_KEY_MAX_INDEX, or less
 *	in tests)
 *
 * Return: 0 or -ENOMEM when every index is in use.
 */
int urdma_key_alloc(struct urdma_keytab *kt, struct urdma_mem *mem,
		    u32 max_index)
{
	u32 index;
	int ret;

	xa_lock(&kt->xa);
	ret = __xa_alloc_cyclic(&kt->xa, &index, mem, XA_LIMIT(1, max_index),
				&kt->next, GFP_KERNEL);
	if (ret == 1) {
		kt->wraps++;
		ret = 0;
	}
	if (!ret)
		WRITE_ONCE(mem->key, index << URDMA_KEY_VARIANT_BITS | kt->wraps);
	xa_unlock(&kt->xa);
	return ret == -EBUSY ? -ENOMEM : ret;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_key_alloc);

void urdma_key_free(struct urdma_keytab *kt, u32 key)
{
	xa_erase(&kt->xa, urdma_key_index(key));
}
EXPORT_SYMBOL_IF_KUNIT(urdma_key_free);

/**
 * urdma_key_lookup - the object a key names, if the key is current
 * @kt: the key table
 * @key: an lkey or rkey from a work request or a packet
 *
 * The caller must keep the object alive (RCU or a reference) while using
 * the result.  Return: the object, or NULL for an unknown or stale key.
 */
struct urdma_mem *urdma_key_lookup(struct urdma_keytab *kt, u32 key)
{
	struct urdma_mem *mem = xa_load(&kt->xa, urdma_key_index(key));

	if (!mem || READ_ONCE(mem->key) != key)
		return NULL;
	return mem;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_key_lookup);

/* ---- translation tables ------------------------------------------------ */

/**
 * urdma_mtt_from_umem - build the translation of a pinned range
 * @mtt: filled in; free with urdma_mtt_free()
 * @umem: the pinned memory (or a synthetic one in tests)
 * @iova: the address the range is known by
 * @pgsz_bitmap: the block sizes allowed
 *
 * Picks the largest block size that the physical layout allows, so memory
 * on huge pages gets huge blocks (as mlx5_ib_populate_pas does).
 */
int urdma_mtt_from_umem(struct urdma_mtt *mtt, struct ib_umem *umem,
			u64 iova, unsigned long pgsz_bitmap)
{
	struct ib_block_iter biter;
	unsigned long pgsz;
	u32 i = 0;

	pgsz = ib_umem_find_best_pgsz(umem, pgsz_bitmap, iova);
	if (!pgsz)
		return -EINVAL;

	mtt->iova = iova;
	mtt->length = umem->length;
	mtt->block_shift = __ffs(pgsz);
	mtt->base = iova & ~((u64)pgsz - 1);
	mtt->nents = ib_umem_num_dma_blocks(umem, pgsz);
	mtt->pas = kvcalloc(mtt->nents, sizeof(*mtt->pas), GFP_KERNEL);
	if (!mtt->pas)
		return -ENOMEM;

	rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
		if (WARN_ON_ONCE(i >= mtt->nents))
			break;
		mtt->pas[i++] = rdma_block_iter_dma_address(&biter);
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_mtt_from_umem);

void urdma_mtt_free(struct urdma_mtt *mtt)
{
	kvfree(mtt->pas);
	mtt->pas = NULL;
	mtt->nents = 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_mtt_free);

/**
 * urdma_mtt_translate - kernel address of @va, in O(1)
 * @mtt: the table
 * @va: an address inside [iova, iova + length)
 * @len: bytes the caller wants; [va, va + len) must be inside the range
 * @contig: bytes from @va to the end of its block (at most @len)
 *
 * Return: the kernel address, or NULL if the range is out of bounds.
 */
void *urdma_mtt_translate(const struct urdma_mtt *mtt, u64 va, u32 len,
			  u32 *contig)
{
	u64 off, end, in_block;
	u64 bsize = BIT_ULL(mtt->block_shift);

	if (va < mtt->iova || check_add_overflow(va, (u64)len, &end) ||
	    end > mtt->iova + mtt->length)
		return NULL;

	off = va - mtt->base;
	/* Never beyond the page list, whatever a racing REG_MR changed. */
	if (off >> mtt->block_shift >= READ_ONCE(mtt->nents))
		return NULL;
	in_block = off & (bsize - 1);
	*contig = min_t(u64, len, bsize - in_block);
	return (void *)(uintptr_t)(mtt->pas[off >> mtt->block_shift] +
				   in_block);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_mtt_translate);

/* ---- MR verbs ------------------------------------------------------------ */

#define URDMA_ACCESS_SUPPORTED (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				IB_ACCESS_REMOTE_READ | \
				IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND | \
				IB_ACCESS_HUGETLB | URDMA_ACCESS_FLUSH | \
				(URDMA_HAVE_ODP ? IB_ACCESS_ON_DEMAND : 0))

/*
 * IBTA C10-9 (o10-1.2.1): remote write or atomic access requires local
 * write access.  Optional bits (relaxed ordering) may be ignored.
 */
int urdma_check_access(int access)
{
	access &= ~IB_ACCESS_OPTIONAL;
	if (access & ~URDMA_ACCESS_SUPPORTED)
		return -EOPNOTSUPP;
	if (access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_check_access);

/* Access rights that let the engine write into an MR's pages. */
#define URDMA_ACCESS_WRITES	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_ATOMIC)

/**
 * urdma_mem_grants - does an MR or window grant @access now?
 * @mem: its key table entry
 * @access: IB_ACCESS_* wanted
 *
 * A write of any kind also needs LOCAL_WRITE: only then are an MR's pages
 * pinned writable (urdma_check_access() and re-registration keep that
 * true), and for a window, only then may the MR behind it be written.
 */
bool urdma_mem_grants(const struct urdma_mem *mem, int access)
{
	int granted = READ_ONCE(mem->access);

	if ((granted & access) != access)
		return false;
	return !(access & URDMA_ACCESS_WRITES) || mem->type == URDMA_MEM_MW ||
	       (granted & IB_ACCESS_LOCAL_WRITE);
}

/**
 * urdma_mw_view - a consistent view of a bound window, for one access
 * @mw: the window
 * @rkey: the key the access names: it must still be the window's
 * @v: filled in
 *
 * A bind (on any engine) changes the window's fields one by one, between
 * urdma_mw_bind_begin() and urdma_mw_bind_end(); an access must not see
 * the rights of one binding with the range of another, nor a new binding
 * through its old key.  Return: false if the window is not valid under
 * @rkey now, or a bind is changing it.
 */
bool urdma_mw_view(const struct urdma_mw *mw, u32 rkey,
		   struct urdma_mw_view *v)
{
	u32 seq = READ_ONCE(mw->seq);

	if (seq & 1)
		return false;
	smp_rmb();	/* the fields after @seq; pairs with the binder's wmb */
	if (READ_ONCE(mw->mem.state) != URDMA_MEM_VALID ||
	    READ_ONCE(mw->mem.key) != rkey)
		return false;
	v->access = READ_ONCE(mw->mem.access);
	v->b = mw->b;	/* may race with a bind: @seq tells */
	smp_rmb();	/* the fields before @seq again */
	return READ_ONCE(mw->seq) == seq;
}

/*
 * urdma_mw_bind_begin - start changing a window (BIND_MW); false if another
 * bind is changing it (that bind fails: binding one window from two QPs at
 * once is a race of the window's owner).  urdma_mw_bind_end() ends it.
 */
bool urdma_mw_bind_begin(struct urdma_mw *mw)
{
	u32 seq = READ_ONCE(mw->seq);

	if ((seq & 1) || cmpxchg(&mw->seq, seq, seq + 1) != seq)
		return false;
	smp_wmb();	/* odd before the fields change; pairs with the view */
	return true;
}

void urdma_mw_bind_end(struct urdma_mw *mw)
{
	smp_wmb();	/* the fields before even; pairs with the view */
	WRITE_ONCE(mw->seq, mw->seq + 1);
}

/**
 * urdma_mw_mr - the MR behind a bound window, if it backs @access now
 * @udev: the device
 * @mw: the window
 * @v: a view of it whose rights, range and QP were checked
 * @access: the IB_ACCESS_REMOTE_* right the access needs
 *
 * See "Windows" above.  The MR must be the one bound (its key and
 * generation), valid, of the window's PD, still allow binding, and allow
 * local writes if the access writes (IBTA C10-73, C10-74, checked at the
 * bind, hold at every access).  The caller is in an engine pass.
 *
 * Return: the MR, or NULL.
 */
struct urdma_mr *urdma_mw_mr(struct urdma_dev *udev,
			     const struct urdma_mw *mw,
			     const struct urdma_mw_view *v, int access)
{
	struct urdma_mem *mem = urdma_key_lookup(&udev->keys, v->b.mr_key);
	struct urdma_mr *mr;

	if (!mem || mem->type == URDMA_MEM_MW ||
	    READ_ONCE(mem->state) != URDMA_MEM_VALID ||
	    READ_ONCE(mem->pdn) != mw->mem.pdn)
		return NULL;
	mr = container_of(mem, struct urdma_mr, mem);
	/* The generation is read after the state; pairs with rereg's wmb. */
	smp_rmb();
	if (READ_ONCE(mr->gen) != v->b.mr_gen)
		return NULL;
	if (!urdma_mem_grants(mem, IB_ACCESS_MW_BIND) ||
	    ((access & URDMA_ACCESS_WRITES) &&
	     !urdma_mem_grants(mem, IB_ACCESS_LOCAL_WRITE)))
		return NULL;
	return mr;
}

/* A new MR with valid @access, counted against max_mr; not yet keyed. */
static struct urdma_mr *urdma_mr_alloc(struct ib_pd *ibpd, u32 type,
				       int access)
{
	struct urdma_dev *udev = to_udev(ibpd->device);
	struct urdma_mr *mr;
	int ret;

	ret = urdma_check_access(access);
	if (ret)
		return ERR_PTR(ret);

	if (atomic_inc_return(&udev->nr_mr) > URDMA_MAX_MR)
		goto err_count;
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		goto err_count;
	mr->mem.type = type;
	mr->mem.pdn = to_upd(ibpd)->pdn;
	mr->mem.access = access;
	mr->gen = atomic64_inc_return(&udev->mr_gens);
	return mr;

err_count:
	atomic_dec(&udev->nr_mr);
	return ERR_PTR(-ENOMEM);
}

/* Give @mr its key; from here on the engine can find it. */
static int urdma_mr_publish(struct urdma_dev *udev, struct urdma_mr *mr)
{
	int ret;

	ret = urdma_key_alloc(&udev->keys, &mr->mem, URDMA_KEY_MAX_INDEX);
	if (ret)
		return ret;
	mr->ibmr.lkey = mr->mem.key;
	mr->ibmr.rkey = mr->mem.key;
	return 0;
}

static void urdma_mr_release(struct urdma_dev *udev, struct urdma_mr *mr)
{
	if (mr->odp)
		urdma_odp_release(mr->odp);
	urdma_mtt_free(&mr->mtt);
	if (mr->umem)
		ib_umem_release(mr->umem);
	if (mr->dmabuf) {
		urdma_dma_buf_vunmap(mr->dmabuf, &mr->dmabuf_map);
		dma_buf_detach(mr->dmabuf, mr->dmabuf_attach);
		dma_buf_put(mr->dmabuf);
	}
	kfree(mr);
	atomic_dec(&udev->nr_mr);
}

/*
 * The end of a user registration: @ret is how its translation went.  The
 * MR gets its key, or is released.
 */
static struct ib_mr *urdma_mr_finish(struct urdma_dev *udev,
				     struct urdma_mr *mr, int ret, u64 iova,
				     u64 length)
{
	if (!ret)
		ret = urdma_mr_publish(udev, mr);
	if (ret) {
		urdma_mr_release(udev, mr);
		return ERR_PTR(ret);
	}
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mr->ibmr.page_size = BIT(mr->mtt.block_shift);
	urdma_dbg_dev(udev, "mr %#x: %s, %llu bytes, %u blocks of %lu\n",
		      mr->mem.key,
		      mr->dmabuf ? "dma-buf" : mr->odp ? "on demand" :
		      mr->mem.type == URDMA_MEM_DM ? "device memory" : "pinned",
		      length,
		      mr->mtt.nents, BIT(mr->mtt.block_shift));
	return &mr->ibmr;
}

/* Pin [start, start + length) and translate it for @iova. */
static int urdma_mr_pin(struct ib_device *ibdev, u64 start, u64 length,
			u64 iova, int access, struct ib_umem **umem,
			struct urdma_mtt *mtt)
{
	struct ib_umem *pinned;
	int ret;

	if (!length || length > URDMA_MAX_MR_SIZE)
		return -EINVAL;

	pinned = ib_umem_get(ibdev, start, length, access);
	if (IS_ERR(pinned))
		return PTR_ERR(pinned);

	ret = urdma_mtt_from_umem(mtt, pinned, iova, URDMA_PAGE_SIZE_CAP);
	if (ret) {
		ib_umem_release(pinned);
		return ret;
	}
	*umem = pinned;
	return 0;
}

struct ib_mr *urdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct urdma_mr *mr;
	int ret;

	mr = urdma_mr_alloc(ibpd, URDMA_MEM_USER, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	if (access & IB_ACCESS_ON_DEMAND)
		ret = urdma_odp_reg(mr, ibpd->device, start, length, iova);
	else
		ret = urdma_mr_pin(ibpd->device, start, length, iova, access,
				   &mr->umem, &mr->mtt);
	return urdma_mr_finish(to_udev(ibpd->device), mr, ret, iova, length);
}

/*
 * An MTT over @length bytes of virtually contiguous kernel memory at
 * @kaddr (a vmap, vmalloc memory), known by @iova: block i is simply the
 * address where byte (base + i * PAGE_SIZE - iova) of the range is.
 */
static int urdma_mtt_from_kva(struct urdma_mtt *mtt, u64 kaddr, u64 iova,
			      u64 length)
{
	u32 i;

	mtt->iova = iova;
	mtt->length = length;
	mtt->block_shift = PAGE_SHIFT;
	mtt->base = iova & PAGE_MASK;
	mtt->nents = DIV_ROUND_UP(iova - mtt->base + length, PAGE_SIZE);
	if (!mtt->nents)
		return 0;
	mtt->pas = kvcalloc(mtt->nents, sizeof(*mtt->pas), GFP_KERNEL);
	if (!mtt->pas)
		return -ENOMEM;
	kaddr -= iova - mtt->base;
	for (i = 0; i < mtt->nents; i++)
		mtt->pas[i] = kaddr + ((u64)i << PAGE_SHIFT);
	return 0;
}

/**
 * urdma_reg_kva_mr - an MR over kernel memory that stays put
 * @ibpd: its PD
 * @type: its enum urdma_mem_type (URDMA_MEM_DM)
 * @access: IB_ACCESS_*, checked here
 * @kaddr: @length: the memory, virtually contiguous
 *
 * Zero based: the MR's address 0 is @kaddr.  Return: the MR or an ERR_PTR.
 */
struct ib_mr *urdma_reg_kva_mr(struct ib_pd *ibpd, u32 type, int access,
			       u64 kaddr, u64 length)
{
	struct urdma_mr *mr;
	int ret;

	mr = urdma_mr_alloc(ibpd, type, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	ret = urdma_mtt_from_kva(&mr->mtt, kaddr, 0, length);
	return urdma_mr_finish(to_udev(ibpd->device), mr, ret, 0, length);
}

/*
 * dma-buf MRs.  ib_umem_dmabuf_get_pinned() maps the buffer for the
 * device's DMA device, and a software device has none.  The engine reads
 * and writes with the CPU, and the CPU's way into a dma-buf is its
 * exporter's vmap.  A vmap alone does not hold the buffer in place,
 * though (TTM's vmaps do not pin), so the MR first attaches to it:
 * - an exporter that keeps its buffers where they are while attached
 *   (udmabuf holds its folios; drm_gem_map_attach() pins the GEM object)
 *   is attached to as a static importer, which maps nothing at attach;
 * - a dynamic exporter (one with a pin op, which may move its buffers)
 *   would map the buffer for the device at attach, for DMA that a
 *   software device cannot do: refused, EOPNOTSUPP.
 * The MR holds the buffer, the attachment and the vmap until it is
 * deregistered, so closing the fd does not end it.
 *
 * The vmap is virtually contiguous: urdma_mtt_from_kva().
 */
static int urdma_mr_map_dmabuf(struct urdma_mr *mr, struct device *dev,
			       u64 offset, u64 length, u64 iova, int fd)
{
	struct urdma_mtt *mtt = &mr->mtt;
	struct dma_buf *dmabuf;
	u64 end, iova_end;
	int ret;

	if (!length || length > URDMA_MAX_MR_SIZE ||
	    check_add_overflow(offset, length, &end) ||
	    check_add_overflow(iova, length, &iova_end))
		return -EINVAL;
	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	ret = -EINVAL;
	if (end > dmabuf->size)
		goto err_put;
	ret = -EACCES;
	if (ib_access_writable(mr->mem.access) &&
	    !(dmabuf->file->f_mode & FMODE_WRITE))
		goto err_put;
	ret = -EOPNOTSUPP;
	if (dma_buf_is_dynamic(dmabuf))
		goto err_put;
	mr->dmabuf_attach = dma_buf_attach(dmabuf, dev);
	if (IS_ERR(mr->dmabuf_attach)) {
		ret = PTR_ERR(mr->dmabuf_attach);
		goto err_put;
	}
	ret = urdma_dma_buf_vmap(dmabuf, &mr->dmabuf_map);
	if (ret)
		goto err_detach;
	ret = -EOPNOTSUPP;	/* device memory: not for memcpy */
	if (mr->dmabuf_map.is_iomem)
		goto err_vunmap;

	ret = urdma_mtt_from_kva(mtt, (uintptr_t)mr->dmabuf_map.vaddr + offset,
				 iova, length);
	if (ret)
		goto err_vunmap;
	mr->dmabuf = dmabuf;
	return 0;

err_vunmap:
	urdma_dma_buf_vunmap(dmabuf, &mr->dmabuf_map);
err_detach:
	dma_buf_detach(dmabuf, mr->dmabuf_attach);
err_put:
	dma_buf_put(dmabuf);
	return ret;
}

struct ib_mr *urdma_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd, int access,
				       urdma_dmabuf_mr_attrs_t *attrs)
{
	struct urdma_mr *mr;
	int ret;

	mr = urdma_mr_alloc(ibpd, URDMA_MEM_DMABUF, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	ret = urdma_mr_map_dmabuf(mr, &ibpd->device->dev, offset, length, iova,
				  fd);
	return urdma_mr_finish(to_udev(ibpd->device), mr, ret, iova, length);
}

/* Pinning must be redone if the range moves or becomes writable. */
static bool urdma_rereg_needs_pin(struct urdma_mr *mr, int flags, int access)
{
	if (flags & IB_MR_REREG_TRANS)
		return true;
	return (flags & IB_MR_REREG_ACCESS) && mr->umem &&
	       !mr->umem->writable && ib_access_writable(access);
}

/**
 * urdma_rereg_user_mr - change an MR's translation, access or PD in place
 *
 * Whatever changes, the MR is invalid while it changes and the engines are
 * synced, so no access that started under the old registration is still
 * running when this returns; it then takes a new generation, which the
 * windows bound to it do not match (see "Windows" above).
 */
struct ib_mr *urdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibmr->device);
	struct urdma_mr *mr = to_umr(ibmr);
	struct ib_umem *umem = NULL, *old_umem = NULL;
	struct urdma_mtt mtt = {};
	int ret;

	/* Not a dma-buf MR either: libibverbs never asks for that. */
	if (mr->mem.type != URDMA_MEM_USER)
		return ERR_PTR(-EINVAL);
	/* An ODP MR is registered again (ibv_dereg_mr, ibv_reg_mr). */
	if (mr->odp || (access & IB_ACCESS_ON_DEMAND))
		return ERR_PTR(-EOPNOTSUPP);
	if (flags & ~IB_MR_REREG_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->mem.access;
	ret = urdma_check_access(access);
	if (ret)
		return ERR_PTR(ret);

	if (urdma_rereg_needs_pin(mr, flags, access)) {
		if (!(flags & IB_MR_REREG_TRANS)) {
			start = mr->umem->address;
			length = mr->ibmr.length;
			iova = mr->ibmr.iova;
		}
		ret = urdma_mr_pin(ibmr->device, start, length, iova, access,
				   &umem, &mtt);
		if (ret)
			return ERR_PTR(ret);
	}

	/* Invalid while it changes: wait until no engine pass can use it. */
	WRITE_ONCE(mr->mem.state, URDMA_MEM_INVALID);
	urdma_engine_sync();
	if (umem) {
		old_umem = mr->umem;
		urdma_mtt_free(&mr->mtt);
		mr->mtt = mtt;
		mr->umem = umem;
		mr->ibmr.iova = iova;
		mr->ibmr.length = length;
		mr->ibmr.page_size = BIT(mtt.block_shift);
	}
	if (flags & IB_MR_REREG_PD)
		WRITE_ONCE(mr->mem.pdn, to_upd(ibpd)->pdn);
	WRITE_ONCE(mr->mem.access, access);
	WRITE_ONCE(mr->gen, atomic64_inc_return(&udev->mr_gens));
	smp_wmb();	/* the new fields before valid; pairs with urdma_mw_mr */
	WRITE_ONCE(mr->mem.state, URDMA_MEM_VALID);
	if (old_umem)
		ib_umem_release(old_umem);
	return NULL;
}

int urdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibmr->device);
	struct urdma_mr *mr = to_umr(ibmr);

	/* Unpublish, wait until no engine pass can hold it, then unpin. */
	urdma_key_free(&udev->keys, mr->mem.key);
	urdma_engine_sync();
	urdma_mr_release(udev, mr);
	return 0;
}

struct ib_mr *urdma_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct urdma_dev *udev = to_udev(ibpd->device);
	struct urdma_mr *mr;
	int ret;

	mr = urdma_mr_alloc(ibpd, URDMA_MEM_DMA, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	ret = urdma_mr_publish(udev, mr);
	if (ret) {
		urdma_mr_release(udev, mr);
		return ERR_PTR(ret);
	}
	return &mr->ibmr;
}

struct ib_mr *urdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct urdma_dev *udev = to_udev(ibpd->device);
	struct urdma_mr *mr;
	int ret;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > URDMA_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);

	mr = urdma_mr_alloc(ibpd, URDMA_MEM_FRMR, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	mr->max_pages = max_num_sg;
	/* Usable once a REG_MR work request registers it. */
	mr->mem.state = URDMA_MEM_INVALID;
	mr->mtt.pas = kvcalloc(max_num_sg, sizeof(*mr->mtt.pas), GFP_KERNEL);
	if (!mr->mtt.pas) {
		ret = -ENOMEM;
		goto err_release;
	}
	ret = urdma_mr_publish(udev, mr);
	if (ret)
		goto err_release;
	return &mr->ibmr;

err_release:
	urdma_mr_release(udev, mr);
	return ERR_PTR(ret);
}

static int urdma_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct urdma_mr *mr = to_umr(ibmr);

	if (mr->mtt.nents >= mr->max_pages)
		return -ENOMEM;
	mr->mtt.pas[mr->mtt.nents++] = addr;
	return 0;
}

int urdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct urdma_mr *mr = to_umr(ibmr);
	int n;

	mr->mtt.nents = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, urdma_set_page);
	/* Translation of the range the page list now describes. */
	mr->mtt.block_shift = ilog2(ibmr->page_size);
	mr->mtt.iova = ibmr->iova;
	mr->mtt.length = ibmr->length;
	mr->mtt.base = ibmr->iova & ~((u64)ibmr->page_size - 1);
	return n;
}

int urdma_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct urdma_mr *mr = to_umr(ibmr);
	struct nlattr *table;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	/*
	 * No key: any user may dump the MRs of every process, and the core
	 * shows lkey and rkey only to CAP_NET_ADMIN.
	 */
	if (rdma_nl_put_driver_u32(msg, "pdn", mr->mem.pdn) ||
	    rdma_nl_put_driver_u32(msg, "odp", !!mr->odp) ||
	    rdma_nl_put_driver_u32(msg, "mtt_entries", mr->mtt.nents) ||
	    rdma_nl_put_driver_u64(msg, "block_size",
				   mr->mtt.nents ? BIT_ULL(mr->mtt.block_shift) : 0))
		goto err_cancel;
	nla_nest_end(msg, table);
	return 0;

err_cancel:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}

/* ---- memory windows (the engine binds them: mem.c) ------------------------ */

/*
 * Windows count against max_mw like MRs against max_mr: they take key
 * indices, which registrations (the kernel's DMA MRs among them) need too.
 */
int urdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibmw->device);
	struct urdma_mw *mw = to_umw(ibmw);
	int ret;

	if (atomic_inc_return(&udev->nr_mw) > URDMA_MAX_MW) {
		ret = -ENOMEM;
		goto err_count;
	}
	mw->mem.type = URDMA_MEM_MW;
	mw->mem.pdn = to_upd(ibmw->pd)->pdn;
	/* Unbound until a BIND_MW work request binds it. */
	mw->mem.state = URDMA_MEM_INVALID;
	ret = urdma_key_alloc(&udev->keys, &mw->mem, URDMA_KEY_MAX_INDEX);
	if (ret)
		goto err_count;
	ibmw->rkey = mw->mem.key;
	return 0;

err_count:
	atomic_dec(&udev->nr_mw);
	return ret;
}

int urdma_dealloc_mw(struct ib_mw *ibmw)
{
	struct urdma_dev *udev = to_udev(ibmw->device);

	urdma_key_free(&udev->keys, to_umw(ibmw)->mem.key);
	urdma_engine_sync();
	atomic_dec(&udev->nr_mw);
	return 0;
}
