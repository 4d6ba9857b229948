/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * urdma queues: rings and doorbell records, in pinned user memory or in
 * kernel memory, in the formats of uapi/rdma/urdma-abi.h.
 */
#ifndef URDMA_QUEUE_H
#define URDMA_QUEUE_H

#include <linux/interval_tree.h>
#include <linux/log2.h>
#include <linux/types.h>
#include <rdma/ib_umem.h>

struct urdma_ucontext;

/*
 * struct urdma_urange - pinned user memory that a ring or doorbell page
 * occupies, in its context's range tree, so that rings cannot overlap each
 * other or a doorbell page.
 */
struct urdma_urange {
	struct interval_tree_node it;
	bool is_db;
};

/**
 * struct urdma_ring - a ring of @nent entries of @stride bytes
 * @buf:	kernel virtual address of entry 0 (vmap of @umem, or vzalloc).
 * @nent:	entries; a power of two.
 * @log_nent:	ilog2(@nent).
 * @stride:	bytes per entry.
 * @umem:	the pinned user ring, NULL for a kernel ring.
 * @uctx:	the owning context of a user ring; it outlives the ring.
 * @range:	its place in the context's range tree (user rings).
 */
struct urdma_ring {
	void *buf;
	u32 nent;
	u32 log_nent;
	u32 stride;
	struct ib_umem *umem;
	struct urdma_ucontext *uctx;
	struct urdma_urange range;
};

/**
 * struct urdma_db_page - a pinned user page of doorbell records
 * @range:	its place in the context's range tree; it.start is the page.
 * @umem:	the pin.
 * @kva:	vmap of the page.
 * @users:	records in use on it; protected by the context's mem_lock.
 */
struct urdma_db_page {
	struct urdma_urange range;
	struct ib_umem *umem;
	void *kva;
	unsigned int users;
};

/**
 * struct urdma_db - a queue's doorbell record
 * @kva:	the record (URDMA_DB_SIZE bytes), shared with user space for
 *		user queues; read it with READ_ONCE, it is hostile.
 * @page:	the user page holding it, NULL for kernel queues.
 * @uctx:	the owning context of a user record.
 */
struct urdma_db {
	void *kva;
	struct urdma_db_page *page;
	struct urdma_ucontext *uctx;
};

static inline void *urdma_ring_entry(const struct urdma_ring *ring, u32 idx)
{
	return ring->buf + (size_t)(idx & (ring->nent - 1)) * ring->stride;
}

/* The owner bit a CQE written at free-running index @idx carries. */
static inline u8 urdma_ring_phase(const struct urdma_ring *ring, u32 idx)
{
	return ((idx >> ring->log_nent) & 1) ^ 1;
}

int urdma_ring_init_user(struct urdma_ucontext *uctx, struct urdma_ring *ring,
			 u64 addr, u32 nent, u32 stride);
int urdma_ring_init_kernel(struct urdma_ring *ring, u32 nent, u32 stride);
void urdma_ring_destroy(struct urdma_ring *ring);
void urdma_ring_swap(struct urdma_ucontext *uctx, struct urdma_ring *ring,
		     struct urdma_ring *new, struct urdma_ring *old);

int urdma_db_init_user(struct urdma_ucontext *uctx, struct urdma_db *db,
		       u64 addr);
int urdma_db_init_kernel(struct urdma_db *db);
void urdma_db_destroy(struct urdma_db *db);

int urdma_queue_init(struct urdma_ucontext *uctx, struct urdma_ring *ring,
		     struct urdma_db *db, u64 addr, u32 nent, u32 stride,
		     u64 db_addr);
void urdma_queue_destroy(struct urdma_ring *ring, struct urdma_db *db);

bool urdma_ring_size_ok(u32 nent, u32 min_nent, u32 max_nent);

#endif /* URDMA_QUEUE_H */
