/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * urdma memory: translation tables (MTT) and the key table.
 */
#ifndef URDMA_MR_H
#define URDMA_MR_H

#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

/*
 * Keys follow the hardware convention: bits 31:8 index the key table, bits
 * 7:0 are a variant.  Indices are handed out cyclically and the variant is
 * the number of times the allocator wrapped, so a stale key stops matching
 * as soon as its index is reused.
 */
#define URDMA_KEY_VARIANT_BITS	8
#define URDMA_KEY_MAX_INDEX	(BIT(32 - URDMA_KEY_VARIANT_BITS) - 1)

static inline u32 urdma_key_index(u32 key)
{
	return key >> URDMA_KEY_VARIANT_BITS;
}

static inline u8 urdma_key_variant(u32 key)
{
	return key & (BIT(URDMA_KEY_VARIANT_BITS) - 1);
}

/* What a key can name. */
enum urdma_mem_type {
	URDMA_MEM_USER,		/* reg_user_mr: pinned user memory */
	URDMA_MEM_DMABUF,	/* reg_user_mr_dmabuf: a dma-buf, vmap'd */
	URDMA_MEM_DM,		/* reg_dm_mr: device memory (dm.c) */
	URDMA_MEM_DMA,		/* get_dma_mr: all kernel memory */
	URDMA_MEM_FRMR,		/* alloc_mr: a page list set by map_mr_sg */
	URDMA_MEM_MW,		/* a memory window */
};

/* urdma_mem.state: whether a key may be used now. */
enum urdma_mem_state {
	URDMA_MEM_VALID,	/* registered, fast-registered, or bound */
	/* FRMR before REG_MR or after invalidation, an unbound window, an
	 * MR being re-registered.
	 */
	URDMA_MEM_INVALID,
};

/**
 * struct urdma_mem - the head of every object in a key table
 * @key:	its current key (lkey == rkey).
 * @type:	enum urdma_mem_type.
 * @pdn:	the PD it belongs to.
 * @access:	IB_ACCESS_* granted.
 * @state:	enum urdma_mem_state; the engine changes it for FRMRs and
 *		windows (REG_MR, LOCAL_INV, BIND_MW).
 */
struct urdma_mem {
	u32 key;
	u32 type;
	u32 pdn;
	int access;
	u32 state;
};

/**
 * struct urdma_keytab - a device's memory keys (MRs and MWs)
 * @xa:		index -> object; its lock also protects @next and @wraps.
 * @next:	next index to try (cyclic allocation).
 * @wraps:	how often the index space wrapped; the key variant.
 */
struct urdma_keytab {
	struct xarray xa;
	u32 next;
	u8 wraps;
};

void urdma_keytab_init(struct urdma_keytab *kt);
void urdma_keytab_destroy(struct urdma_keytab *kt);
int urdma_key_alloc(struct urdma_keytab *kt, struct urdma_mem *mem,
		    u32 max_index);
void urdma_key_free(struct urdma_keytab *kt, u32 key);
struct urdma_mem *urdma_key_lookup(struct urdma_keytab *kt, u32 key);

/**
 * struct urdma_mtt - translation of an MR's IOVA range, one entry a block
 * @iova:	first byte of the range, as the user addresses it.
 * @length:	bytes in the range.
 * @base:	@iova rounded down to the block size: entry 0 starts there.
 * @block_shift: log2 of the block size (PAGE_SHIFT .. 30).
 * @nents:	entries in @pas.
 * @pas:	kernel virtual address of each block (software devices use
 *		virtual DMA, so the umem's DMA addresses are kernel addresses).
 */
struct urdma_mtt {
	u64 iova;
	u64 length;
	u64 base;
	unsigned int block_shift;
	u32 nents;
	u64 *pas;
};

/* A range of an ODP MR's pages: the MR's own, or an implicit MR's child. */
struct urdma_odp_range {
	struct ib_umem_odp *umem;
	u64 start;	/* the user address of pas[0], page aligned */
	u32 npages;
	u64 *pas;	/* kernel address | URDMA_ODP_* (odp.c); 0: none */
};

/* A request for pages, from a pass (the engine never faults). */
struct urdma_odp_req {
	u64 start;
	u64 end;	/* 0: the slot is free */
	bool write;
};

#define URDMA_ODP_REQS	4

/**
 * struct urdma_odp - the on-demand paging state of an MR (odp.c)
 * @udev: its device
 * @implicit: it covers the whole address space (@children)
 * @delta: user address - MR address (explicit MRs)
 * @root: explicit: the MR's pages; implicit: only the implicit umem
 * @children: implicit: address >> URDMA_ODP_CHILD_SHIFT -> range
 * @req_lock: protects @req and the failed range
 * @req: pending requests, served by @work
 * @fail_start, @fail_end, @fail_write: the last range @work could not
 *	fault in, and whether for writing
 * @work: faults the requests in
 * @users: ibv_advise_mr() calls that hold the MR
 */
struct urdma_odp {
	struct urdma_dev *udev;
	bool implicit;
	u64 delta;
	struct urdma_odp_range root;
	struct xarray children;
	spinlock_t req_lock;	/* @req, @fail_start, @fail_end */
	struct urdma_odp_req req[URDMA_ODP_REQS];
	u64 fail_start;
	u64 fail_end;
	bool fail_write;
	struct work_struct work;
	atomic_t users;
};

int urdma_mtt_from_umem(struct urdma_mtt *mtt, struct ib_umem *umem,
			u64 iova, unsigned long pgsz_bitmap);
void urdma_mtt_free(struct urdma_mtt *mtt);
void *urdma_mtt_translate(const struct urdma_mtt *mtt, u64 va, u32 len,
			  u32 *contig);

#endif /* URDMA_MR_H */
