// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data side of memory registration, as the engine uses it: lkeys and
 * rkeys to scatter lists (an MR, or a window checked with the MR behind
 * it), copies between them, and the WQEs that change keys (LOCAL_INV,
 * SEND_WITH_INV, BIND_MW, REG_MR), atomics, ATOMIC_WRITE and FLUSH at
 * the responder.  mr.c registers the memory; this file reads it.
 */
#include <linux/atomic.h>
#include <linux/sched.h>

#include "urdma.h"
#include "exec.h"

/* ---- memory ----------------------------------------------------------------- */

/* The bytes of @sg at @off: kernel address and how many are contiguous. */
static void *urdma_sg_kva(const struct urdma_sg *sg, u32 off, u32 want,
			  u32 *contig)
{
	if (sg->kva) {
		*contig = want;
		return sg->kva + off;
	}
	if (sg->mr->mem.type == URDMA_MEM_DMA) {
		*contig = want;
		return (void *)(uintptr_t)(sg->va + off);
	}
	if (sg->mr->odp)
		return urdma_odp_kva(sg->mr, sg->va + off, want, contig);
	return urdma_mtt_translate(&sg->mr->mtt, sg->va + off, want, contig);
}

/**
 * urdma_sgl_ready - are the pages of the first @len bytes of @sg there?
 * @sg: a scatter list; @n: its entries
 * @len: the bytes about to be copied
 * @write: the engine writes them
 *
 * Only ODP MRs can lack pages.  The missing ones are asked for (odp.c);
 * those found stay until the pass ends.  A copy checks both its sides
 * before it copies a byte, so that it happens whole or not at all.
 *
 * Return: 0; -EAGAIN: pages are being faulted in, try again later;
 * -EFAULT: they cannot be.
 */
int urdma_sgl_ready(const struct urdma_sg *sg, int n, u64 len, bool write)
{
	int i, ret;

	for (i = 0; i < n && len; i++) {
		u64 k = min_t(u64, len, sg[i].len);

		if (k && !sg[i].kva && sg[i].mr->odp) {
			ret = urdma_odp_ready(sg[i].mr, sg[i].va, k, write);
			if (ret)
				return ret;
		}
		len -= k;
	}
	return 0;
}

static bool urdma_mr_in_bounds(const struct urdma_mr *mr, u64 va, u64 len)
{
	u64 end;

	if (mr->mem.type == URDMA_MEM_DMA)
		return true;
	return va >= mr->mtt.iova && !check_add_overflow(va, len, &end) &&
	       end <= mr->mtt.iova + mr->mtt.length;
}

static struct urdma_mr *urdma_mem_to_mr(struct urdma_mem *mem)
{
	return container_of(mem, struct urdma_mr, mem);
}

/**
 * urdma_lkey_sg - resolve a local SGE
 * @udev: the QP's device
 * @pdn: the QP's PD
 * @sge: the SGE (from the scratch copy)
 * @access: IB_ACCESS_LOCAL_WRITE if the engine writes there, else 0
 * @sg: filled on success
 *
 * Return: IB_WC_SUCCESS or IB_WC_LOC_PROT_ERR.
 */
static u8 urdma_lkey_sg(struct urdma_dev *udev, u32 pdn,
			const struct urdma_sge *sge, int access,
			struct urdma_sg *sg)
{
	struct urdma_mem *mem = urdma_key_lookup(&udev->keys, sge->lkey);
	struct urdma_mr *mr;

	if (!mem || mem->type == URDMA_MEM_MW ||
	    READ_ONCE(mem->state) != URDMA_MEM_VALID ||
	    READ_ONCE(mem->pdn) != pdn || !urdma_mem_grants(mem, access))
		return IB_WC_LOC_PROT_ERR;
	mr = urdma_mem_to_mr(mem);
	if (!urdma_mr_in_bounds(mr, sge->addr, sge->length))
		return IB_WC_LOC_PROT_ERR;
	sg->kva = NULL;
	sg->mr = mr;
	sg->va = sge->addr;
	sg->len = sge->length;
	return IB_WC_SUCCESS;
}

/**
 * urdma_lkey_sgl - resolve a WQE's SGE list
 * @udev, @pdn, @access: as for urdma_lkey_sg()
 * @sge: the SGEs
 * @num: how many
 * @sg: the scatter list, filled; zero-length SGEs are dropped
 * @nsg: entries filled
 * @len: the total length
 *
 * Return: IB_WC_SUCCESS, IB_WC_LOC_PROT_ERR or IB_WC_LOC_LEN_ERR.
 */
u8 urdma_lkey_sgl(struct urdma_dev *udev, u32 pdn,
		  const struct urdma_sge *sge, unsigned int num,
		  int access, struct urdma_sg *sg, int *nsg, u64 *len)
{
	unsigned int i;
	u8 status;

	*nsg = 0;
	*len = 0;
	for (i = 0; i < num; i++) {
		if (!sge[i].length)
			continue;
		status = urdma_lkey_sg(udev, pdn, &sge[i], access, &sg[*nsg]);
		if (status)
			return status;
		*len += sge[i].length;
		(*nsg)++;
	}
	return *len > URDMA_MAX_MSG_SIZE ? IB_WC_LOC_LEN_ERR : IB_WC_SUCCESS;
}

/**
 * urdma_rkey_sg - resolve a remote range at the responder
 * @peer: the responder
 * @rkey: an MR's key or a bound window's
 * @va: start
 * @len: bytes; 0 means no access is made and the key is not checked
 * @access: IB_ACCESS_REMOTE_* needed
 * @sg: filled on success
 *
 * An MR's key is checked against the MR; a window's against the window
 * and then the MR behind it (urdma_mw_mr()), every time.
 *
 * Return: whether the responder grants the access.
 */
bool urdma_rkey_sg(const struct urdma_peer *peer, u32 rkey, u64 va,
		   u64 len, int access, struct urdma_sg *sg)
{
	struct urdma_mem *mem = urdma_key_lookup(&peer->dev->keys, rkey);
	struct urdma_mr *mr;
	u64 end;

	if (!mem || READ_ONCE(mem->state) != URDMA_MEM_VALID ||
	    !urdma_mem_grants(mem, access))
		return false;
	if (mem->type == URDMA_MEM_MW) {
		struct urdma_mw *mw = container_of(mem, struct urdma_mw, mem);
		struct urdma_mw_view v;

		if (!urdma_mw_view(mw, rkey, &v) ||
		    (v.access & access) != access || mem->pdn != peer->pdn)
			return false;
		/* Type 2: only through the QP it was bound to (o10-37.2.47). */
		if (mw->ibmw.type == IB_MW_TYPE_2 &&
		    (v.b.qpn != peer->qp->ibqp.qp_num ||
		     v.b.qp_serial != peer->qp->serial))
			return false;
		if (va < v.b.addr || check_add_overflow(va, len, &end) ||
		    end > v.b.addr + v.b.length)
			return false;
		mr = urdma_mw_mr(peer->dev, mw, &v, access);
		if (!mr)
			return false;
	} else {
		if (READ_ONCE(mem->pdn) != peer->pdn)
			return false;
		mr = urdma_mem_to_mr(mem);
	}
	if (!urdma_mr_in_bounds(mr, va, len))
		return false;
	sg->kva = NULL;
	sg->mr = mr;
	sg->va = va;
	sg->len = len;
	return true;
}

/*
 * Copy @len bytes from @src to @dst; both were resolved and are long
 * enough, and their ODP pages were found in this pass (urdma_sgl_ready()):
 * an invalidation since may have cleared VALID, but the pages stay until
 * the pass ends, so a second look could only fail for nothing.  Return: 0,
 * or -EIO if they were not long enough after all (a bug; warned once):
 * then part of @dst was not written, and must not be sent or completed.
 */
int __urdma_copy(struct urdma_sg *dst, int ndst, struct urdma_sg *src,
		 int nsrc, u64 len)
{
	u32 doff = 0, soff = 0, since_resched = 0;
	int di = 0, si = 0;

	while (len) {
		u32 want, dc, sc, n;
		void *d, *s;

		while (di < ndst && doff == dst[di].len) {
			di++;
			doff = 0;
		}
		while (si < nsrc && soff == src[si].len) {
			si++;
			soff = 0;
		}
		if (WARN_ON_ONCE(di == ndst || si == nsrc))
			return -EIO;
		want = min3((u64)(dst[di].len - doff), (u64)(src[si].len - soff),
			    len);
		d = urdma_sg_kva(&dst[di], doff, want, &dc);
		s = urdma_sg_kva(&src[si], soff, want, &sc);
		if (WARN_ON_ONCE(!d || !s))
			return -EIO;
		n = min(dc, sc);
		memcpy(d, s, n);
		doff += n;
		soff += n;
		len -= n;
		since_resched += n;
		if (since_resched >= URDMA_COPY_RESCHED) {
			since_resched = 0;
			cond_resched();
		}
	}
	return 0;
}

/*
 * urdma_copy - look for both sides' ODP pages, then copy (__urdma_copy())
 *
 * Return: 0; -EAGAIN or -EFAULT from urdma_sgl_ready(), and nothing was
 * copied; or -EIO, as for __urdma_copy().
 */
int urdma_copy(struct urdma_sg *dst, int ndst, struct urdma_sg *src,
	       int nsrc, u64 len)
{
	int ret = urdma_sgl_ready(dst, ndst, len, true) ?:
		  urdma_sgl_ready(src, nsrc, len, false);

	return ret ?: __urdma_copy(dst, ndst, src, nsrc, len);
}

/*
 * Copy @len bytes of @src, whose ODP pages were found in this pass, into
 * packet @tx's payload.  Return: 0, or __urdma_copy()'s error; @tx is freed
 * then, never sent with a payload that was not written.
 */
int urdma_tx_copy(struct urdma_tx *tx, struct urdma_sg *src, int nsrc,
		  u32 len)
{
	struct urdma_sg dst = { .kva = tx->payload, .len = len };
	int ret = __urdma_copy(&dst, 1, src, nsrc, len);

	if (ret)
		kfree_skb(tx->skb);
	return ret;
}

/* Drop the first @skip bytes of a scatter list (they were written). */
void urdma_sgl_skip(struct urdma_sg *sg, int n, u32 skip)
{
	int i;

	for (i = 0; i < n && skip; i++) {
		u32 k = min(skip, sg[i].len);

		if (sg[i].kva)
			sg[i].kva += k;
		else
			sg[i].va += k;
		sg[i].len -= k;
		skip -= k;
	}
}

/* ---- keys that change, and the responder's atomics -------------------------- */

/**
 * urdma_invalidate - LOCAL_INV, or the invalidation a SEND_WITH_INV carries
 * @qp: the QP that executes it: the sender's for LOCAL_INV, the receiving
 *	QP for SEND_WITH_INV
 * @pdn: the PD the key must be of: @qp's, or for an XRC_TGT QP (which has
 *	none) the XRC SRQ's
 * @key: the key to invalidate: a fast-registration MR's or a type 2
 *	window's, of PD @pdn
 * @remote: it came with a SEND_WITH_INV.  A type 2 window may then be
 *	invalidated only through the QP it is bound to, the only QP whose
 *	peer may use it (urdma_rkey_sg()); another connection of the same
 *	PD must not take it away.
 *
 * Return: whether @key was invalidated.
 */
bool urdma_invalidate(const struct urdma_qp *qp, u32 pdn, u32 key,
		      bool remote)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	struct urdma_mem *mem = urdma_key_lookup(&udev->keys, key);
	struct urdma_mw *mw;

	if (!mem || READ_ONCE(mem->pdn) != pdn)
		return false;
	switch (mem->type) {
	case URDMA_MEM_FRMR:
		break;
	case URDMA_MEM_MW:
		mw = container_of(mem, struct urdma_mw, mem);
		if (mw->ibmw.type != IB_MW_TYPE_2)
			return false;
		if (remote && (READ_ONCE(mw->b.qpn) != qp->ibqp.qp_num ||
			       READ_ONCE(mw->b.qp_serial) != qp->serial))
			return false;
		break;
	default:
		return false;
	}
	WRITE_ONCE(mem->state, URDMA_MEM_INVALID);
	return true;
}

/* BIND_MW (IBTA 10.6.7.3): the window takes the new key; status returned. */
u8 urdma_bind_mw(struct urdma_qp *qp, const struct urdma_send_wqe *wqe)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	const struct urdma_wqe_bind *b = &wqe->bind;
	u32 pdn = urdma_qp_pdn(qp);
	struct urdma_mem *mem, *mrmem;
	struct urdma_mw *mw;
	struct urdma_mr *mr;
	u64 gen;
	/* Local rights and MW_BIND mean nothing for a window; ignore them. */
	int access = b->access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);

	mem = xa_load(&udev->keys.xa, urdma_key_index(b->new_rkey));
	if (!mem || mem->type != URDMA_MEM_MW || mem->pdn != pdn)
		return IB_WC_MW_BIND_ERR;
	mw = container_of(mem, struct urdma_mw, mem);
	if (mw->ibmw.type == IB_MW_TYPE_2 &&
	    READ_ONCE(mem->state) == URDMA_MEM_VALID)
		return IB_WC_MW_BIND_ERR;
	if (access & ~(IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_ATOMIC | IB_ZERO_BASED))
		return IB_WC_MW_BIND_ERR;
	if (access & IB_ZERO_BASED)
		return IB_WC_MW_BIND_ERR;	/* not claimed */

	/* A zero-length bind of a type 1 window unbinds it. */
	if (!b->length && mw->ibmw.type == IB_MW_TYPE_1) {
		if (!urdma_mw_bind_begin(mw))
			return IB_WC_MW_BIND_ERR;
		WRITE_ONCE(mem->state, URDMA_MEM_INVALID);
		WRITE_ONCE(mem->key, b->new_rkey);
		urdma_mw_bind_end(mw);
		return IB_WC_SUCCESS;
	}

	mrmem = urdma_key_lookup(&udev->keys, b->mr_lkey);
	if (!mrmem || mrmem->type == URDMA_MEM_MW ||
	    READ_ONCE(mrmem->state) != URDMA_MEM_VALID ||
	    READ_ONCE(mrmem->pdn) != pdn ||
	    !urdma_mem_grants(mrmem, IB_ACCESS_MW_BIND))
		return IB_WC_MW_BIND_ERR;
	/* C10-74; urdma_mw_mr() holds the MR to it at every access. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !urdma_mem_grants(mrmem, IB_ACCESS_LOCAL_WRITE))
		return IB_WC_MW_BIND_ERR;
	mr = urdma_mem_to_mr(mrmem);
	/* The generation is read after the state; pairs with rereg's wmb. */
	smp_rmb();
	gen = READ_ONCE(mr->gen);
	if (!urdma_mr_in_bounds(mr, b->addr, b->length))
		return IB_WC_MW_BIND_ERR;

	/* An access sees the old binding or the new one (urdma_mw_view()). */
	if (!urdma_mw_bind_begin(mw))
		return IB_WC_MW_BIND_ERR;
	mw->b = (struct urdma_mw_binding){
		.mr_key = b->mr_lkey, .mr_gen = gen,
		.addr = b->addr, .length = b->length,
		.qpn = qp->ibqp.qp_num, .qp_serial = qp->serial,
	};
	WRITE_ONCE(mem->access, access);
	WRITE_ONCE(mem->key, b->new_rkey);
	WRITE_ONCE(mem->state, URDMA_MEM_VALID);
	urdma_mw_bind_end(mw);
	return IB_WC_SUCCESS;
}

/* Kernel fast registration: the FRMR takes its new key and access. */
u8 urdma_reg_mr(struct urdma_qp *qp, const struct urdma_send_wqe *wqe)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	const struct urdma_wqe_reg *r = &wqe->reg;
	struct urdma_mem *mem;
	struct urdma_mtt *mtt;

	mem = xa_load(&udev->keys.xa, urdma_key_index(r->mr_key));
	if (!mem || mem->type != URDMA_MEM_FRMR ||
	    mem->pdn != urdma_qp_pdn(qp) ||
	    urdma_key_index(r->new_key) != urdma_key_index(r->mr_key) ||
	    urdma_check_access(r->access))
		return IB_WC_LOC_PROT_ERR;
	mtt = &urdma_mem_to_mr(mem)->mtt;
	WRITE_ONCE(mem->state, URDMA_MEM_INVALID);
	smp_wmb();	/* invalid before the fields change */
	/*
	 * The region starts at the WR's address, which a ULP may change
	 * after ib_map_mr_sg() (xprtrdma puts an XID in its top 32 bits):
	 * same pages, its first byte at the same place in the first one.
	 * A translation that races with this stays inside the page list
	 * (urdma_mtt_translate()).
	 */
	WRITE_ONCE(mtt->base, r->iova - (mtt->iova - mtt->base));
	WRITE_ONCE(mtt->iova, r->iova);
	WRITE_ONCE(mtt->length, r->length);
	WRITE_ONCE(mem->access, r->access);
	WRITE_ONCE(mem->key, r->new_key);
	smp_wmb();	/* the new fields before valid */
	WRITE_ONCE(mem->state, URDMA_MEM_VALID);
	return IB_WC_SUCCESS;
}

/* The 8 bytes an atomic operates on, at the responder. */
u64 *urdma_atomic_target(const struct urdma_peer *peer, u64 va, u32 rkey,
			 int access, u8 *status)
{
	struct urdma_sg sg;
	u32 contig;

	if (!IS_ALIGNED(va, 8)) {
		*status = IB_WC_REM_INV_REQ_ERR;
		return NULL;
	}
	if (!urdma_rkey_sg(peer, rkey, va, 8, access, &sg)) {
		*status = IB_WC_REM_ACCESS_ERR;
		return NULL;
	}
	switch (urdma_sgl_ready(&sg, 1, 8, true)) {
	case 0:
		break;
	case -EAGAIN:
		*status = URDMA_WC_ODP_WAIT;
		return NULL;
	default:
		*status = IB_WC_REM_ACCESS_ERR;
		return NULL;
	}
	/* Aligned 8 bytes never straddle a block. */
	return urdma_sg_kva(&sg, 0, 8, &contig);
}

/**
 * urdma_atomic_write - an ATOMIC_WRITE at the responder (local path and wire)
 * @peer: the responder's side
 * @va: @rkey: the aligned 8 bytes to write
 * @value: what to write there, as it lies in memory
 *
 * One 8-byte store, ordered after earlier writes.
 *
 * Return: IB_WC_SUCCESS, or urdma_atomic_target()'s error status.
 */
u8 urdma_atomic_write(const struct urdma_peer *peer, u64 va, u32 rkey,
		      u64 value)
{
	u64 *target;
	u8 status;

	target = urdma_atomic_target(peer, va, rkey, IB_ACCESS_REMOTE_WRITE,
				     &status);
	if (!target)
		return status;
	smp_store_release(target, value); /* after earlier writes */
	return IB_WC_SUCCESS;
}

/**
 * urdma_flush - a FLUSH at the responder (local path and wire)
 * @peer: the responder's side
 * @type: URDMA_FLUSH_GLOBAL or URDMA_FLUSH_PERSISTENT (placement type)
 * @level: URDMA_FLUSH_RANGE or URDMA_FLUSH_MR (selectivity level)
 * @rkey: @va: @len: the range (the MR of @rkey for URDMA_FLUSH_MR)
 *
 * Once the QP's access flags and the key check, every earlier write is
 * visible: memory is coherent.
 *
 * Return: IB_WC_SUCCESS, IB_WC_REM_INV_REQ_ERR, IB_WC_REM_ACCESS_ERR, or
 * IB_WC_LOC_QP_OP_ERR on a kernel without FLUSH.
 */
u8 urdma_flush(const struct urdma_peer *peer, u8 type, u8 level, u32 rkey,
	       u64 va, u64 len)
{
#if URDMA_HAVE_FLUSH_ATOMIC_WRITE
	int access = type == URDMA_FLUSH_PERSISTENT ?
		     IB_ACCESS_FLUSH_PERSISTENT : IB_ACCESS_FLUSH_GLOBAL;
	struct urdma_sg sg;

	if (type != URDMA_FLUSH_GLOBAL && type != URDMA_FLUSH_PERSISTENT)
		return IB_WC_REM_INV_REQ_ERR;
	/* The responder's QP must allow this type of FLUSH too. */
	if (!(READ_ONCE(peer->qp->attr.qp_access_flags) & access))
		return IB_WC_REM_INV_REQ_ERR;
	if (level == URDMA_FLUSH_MR)
		len = 0;
	if (!urdma_rkey_sg(peer, rkey, va, len, access, &sg))
		return IB_WC_REM_ACCESS_ERR;
	smp_mb();	/* earlier writes globally visible before completion */
	return IB_WC_SUCCESS;
#else
	return IB_WC_LOC_QP_OP_ERR;
#endif
}
