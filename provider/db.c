// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: memory the kernel pins for a queue.
 *
 * Doorbell records are URDMA_DB_SIZE-byte slots packed into pages of their
 * own, never shared with a ring (the kernel rejects a ring that overlaps a
 * doorbell page).  Each context keeps a list of such pages, each with a
 * bitmap of its free slots; a page is freed as soon as its last slot is,
 * and the rest at free_context.  The kernel pins every distinct doorbell
 * page once and counts its users, so a page is only freed after the kernel
 * objects using it were destroyed.
 *
 * Rings are page-aligned allocations of whole pages.  Both kinds of memory
 * are zeroed and excluded from fork() (ibv_dontfork_range), as the pinned
 * pages must stay the parent's.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urdma.h"

struct urdma_db_page {
	struct list_node entry;		/* in urdma_context.db_pages */
	uint8_t *buf;			/* ctx->page_size bytes */
	unsigned int nslots;
	unsigned int nfree;
	unsigned long free[];		/* bit set: slot free */
};

/* posix_memalign'ed, zeroed and MADV_DONTFORK'ed; returns an errno. */
static int urdma_alloc_pages(struct urdma_context *ctx, void **buf,
			     size_t size)
{
	int err;

	err = posix_memalign(buf, ctx->page_size, size);
	if (err)
		return err;

	memset(*buf, 0, size);
	if (ibv_dontfork_range(*buf, size)) {
		err = errno ? errno : ENOMEM;
		free(*buf);
		return err;
	}
	return 0;
}

static void urdma_free_pages(void *buf, size_t size)
{
	ibv_dofork_range(buf, size);
	free(buf);
}

/*
 * A page-aligned, zeroed ring of at least @size bytes.  With a parent
 * domain @pd that has allocators, its allocator is asked first (it may
 * answer IBV_ALLOCATOR_USE_DEFAULT).  Returns an errno.
 */
int urdma_alloc_buf(struct urdma_context *ctx, struct urdma_buf *buf,
		    size_t size, struct urdma_pd *pd, uint64_t res_type)
{
	void *p;
	int err;

	size = align(size, ctx->page_size);
	buf->pd = NULL;
	buf->res_type = res_type;
	if (pd && pd->alloc) {
		p = pd->alloc(&pd->ibvpd, pd->pd_context, size, ctx->page_size,
			      res_type);
		if (!p) {
			buf->buf = NULL;
			buf->size = 0;
			return ENOMEM;
		}
		if (p != IBV_ALLOCATOR_USE_DEFAULT) {
			memset(p, 0, size);
			buf->buf = p;
			buf->size = size;
			buf->pd = pd;
			atomic_fetch_add(&pd->refs, 1);
			return 0;
		}
	}
	err = urdma_alloc_pages(ctx, &buf->buf, size);
	if (err) {
		buf->buf = NULL;
		buf->size = 0;
		return err;
	}
	buf->size = size;
	return 0;
}

void urdma_free_buf(struct urdma_buf *buf)
{
	if (!buf->buf)
		return;

	if (buf->pd) {
		buf->pd->free(&buf->pd->ibvpd, buf->pd->pd_context, buf->buf,
			      buf->res_type);
		atomic_fetch_sub(&buf->pd->refs, 1);
		buf->pd = NULL;
	} else {
		urdma_free_pages(buf->buf, buf->size);
	}
	buf->buf = NULL;
	buf->size = 0;
}

void urdma_db_init(struct urdma_context *ctx)
{
	pthread_mutex_init(&ctx->db_mutex, NULL);
	list_head_init(&ctx->db_pages);
}

static void urdma_db_page_free(struct urdma_context *ctx,
			       struct urdma_db_page *page)
{
	urdma_free_pages(page->buf, ctx->page_size);
	free(page);
}

void urdma_db_cleanup(struct urdma_context *ctx)
{
	struct urdma_db_page *page, *next;

	list_for_each_safe(&ctx->db_pages, page, next, entry) {
		list_del(&page->entry);
		urdma_db_page_free(ctx, page);
	}
	pthread_mutex_destroy(&ctx->db_mutex);
}

static struct urdma_db_page *urdma_db_page_alloc(struct urdma_context *ctx)
{
	unsigned int nslots = ctx->page_size / URDMA_DB_SIZE;
	struct urdma_db_page *page;
	unsigned int i;
	int err;

	page = calloc(1, sizeof(*page) +
			 BITS_TO_LONGS(nslots) * sizeof(unsigned long));
	if (!page) {
		errno = ENOMEM;
		return NULL;
	}

	err = urdma_alloc_pages(ctx, (void **)&page->buf, ctx->page_size);
	if (err) {
		free(page);
		errno = err;
		return NULL;
	}

	page->nslots = nslots;
	page->nfree = nslots;
	for (i = 0; i < nslots; i++)
		page->free[i / BITS_PER_LONG] |= 1UL << (i % BITS_PER_LONG);
	return page;
}

/*
 * A zeroed, URDMA_DB_SIZE-aligned doorbell record, or NULL with errno set.
 */
void *urdma_alloc_db(struct urdma_context *ctx)
{
	struct urdma_db_page *page;
	unsigned int i, slot;
	uint8_t *db;

	pthread_mutex_lock(&ctx->db_mutex);
	list_for_each(&ctx->db_pages, page, entry)
		if (page->nfree)
			goto found;

	page = urdma_db_page_alloc(ctx);
	if (!page) {
		pthread_mutex_unlock(&ctx->db_mutex);
		return NULL;
	}
	list_add(&ctx->db_pages, &page->entry);

found:
	for (i = 0; !page->free[i]; i++)
		;
	slot = i * BITS_PER_LONG + __builtin_ctzl(page->free[i]);
	page->free[i] &= ~(1UL << (slot % BITS_PER_LONG));
	page->nfree--;
	db = page->buf + (size_t)slot * URDMA_DB_SIZE;
	/* The record of a destroyed queue may hold its last values. */
	memset(db, 0, URDMA_DB_SIZE);
	pthread_mutex_unlock(&ctx->db_mutex);
	return db;
}

void urdma_free_db(struct urdma_context *ctx, void *db)
{
	struct urdma_db_page *page;
	unsigned int slot;

	if (!db)
		return;

	pthread_mutex_lock(&ctx->db_mutex);
	list_for_each(&ctx->db_pages, page, entry) {
		if ((uint8_t *)db < page->buf ||
		    (uint8_t *)db >= page->buf + ctx->page_size)
			continue;

		slot = ((uint8_t *)db - page->buf) / URDMA_DB_SIZE;
		assert(!(page->free[slot / BITS_PER_LONG] &
			 (1UL << (slot % BITS_PER_LONG))));
		page->free[slot / BITS_PER_LONG] |=
			1UL << (slot % BITS_PER_LONG);
		if (++page->nfree == page->nslots) {
			list_del(&page->entry);
			urdma_db_page_free(ctx, page);
		}
		break;
	}
	pthread_mutex_unlock(&ctx->db_mutex);
}
