// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: CQs: CREATE_CQ, DESTROY_CQ, RESIZE_CQ. */

/* ---- CREATE_CQ / DESTROY_CQ / RESIZE_CQ --------------------------------- */

TEST_F(q, cq_create_destroy)
{
	static const uint32_t cqes[] = { 1, 2, 3, 63, 64, 1000, MAX_CQE };
	struct cq cq[ARRAY_SIZE(cqes)];
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(cqes); i++) {
		ASSERT_RETM(0, cq_new(&self->e, cqes[i], &cq[i]), "(cqe %u)",
			    cqes[i]);
		EXPECT_LE(cqes[i], cq[i].cqe) TH_LOG("cqe %u reported %u",
						     cqes[i], cq[i].cqe);
		EXPECT_GE(cq[i].nent, cq[i].cqe);
		for (j = 0; j < i; j++) {
			ASSERT_NE(cq[i].handle, cq[j].handle);
			ASSERT_NE(cq[i].cqn, cq[j].cqn) TH_LOG("cqn reused");
		}
	}
	ASSERT_LIVE(ARRAY_SIZE(cqes), 0, 0);
	for (i = 0; i < ARRAY_SIZE(cqes); i++)
		ASSERT_RET(0, destroy_cq(self->e.fd, cq[i].handle));
	ASSERT_LIVE(0, 0, 0);
}

/* The exact response: core, then driver, nothing past it. */
TEST_F(q, cq_create_resp)
{
	struct urdma_create_cq_cmd d;
	struct ib_uverbs_create_cq_resp core;
	struct urdma_create_cq_resp drv;
	uint8_t *r = self->m.rw;

	ASSERT_RET(0, cq_cmd_new(&self->e, &d, 4));
	ASSERT_RET(0, create_cq_raw(self->e.fd, 4, &d, sizeof(d), r, CQ_DRV));
	memcpy(&core, r, sizeof(core));
	memcpy(&drv, r + CQ_CORE, sizeof(drv));
	EXPECT_EQ(0, drv.comp_mask);
	EXPECT_LE(4, core.cqe);
	EXPECT_GE(4, core.cqe);
	EXPECT_TRUE(all_bytes(r + CQ_CORE + CQ_DRV,
			      self->m.pg - CQ_CORE - CQ_DRV, GUARD))
		TH_LOG("bytes past the response were written");
	ASSERT_RET(0, destroy_cq(self->e.fd, core.cq_handle));

	/* Truncated driver responses (older providers). */
	memset(r, GUARD, self->m.pg);
	ASSERT_RET(0, create_cq_raw(self->e.fd, 4, &d, sizeof(d), r, 0));
	EXPECT_TRUE(all_bytes(r + CQ_CORE, self->m.pg - CQ_CORE, GUARD));
	ASSERT_RET(0, destroy_cq(self->e.fd, resp_handle(r)));
	memset(r, GUARD, self->m.pg);
	ASSERT_RET(0, create_cq_raw(self->e.fd, 4, &d, sizeof(d), r, 4));
	EXPECT_TRUE(all_bytes(r + CQ_CORE, 4, 0)) TH_LOG("comp_mask");
	EXPECT_TRUE(all_bytes(r + CQ_CORE + 4, self->m.pg - CQ_CORE - 4,
			      GUARD));
	ASSERT_RET(0, destroy_cq(self->e.fd, resp_handle(r)));
	/* A larger one (newer provider): the unknown tail is not garbage. */
	memset(r, GUARD, self->m.pg);
	ASSERT_RET(0, create_cq_raw(self->e.fd, 4, &d, sizeof(d), r,
				    CQ_DRV + 16));
	EXPECT_TRUE(all_bytes(r + CQ_CORE + CQ_DRV, 16, GUARD) ||
		    all_bytes(r + CQ_CORE + CQ_DRV, 16, 0));
	ASSERT_RET(0, destroy_cq(self->e.fd, resp_handle(r)));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, cq_create_ex)
{
	struct ib_uverbs_ex_create_cq c = { .cqe = 16, .comp_channel = -1 };
	struct ib_uverbs_ex_create_cq_resp core;
	struct urdma_create_cq_resp drv;
	struct urdma_create_cq_cmd d;
	uint8_t *r = self->m.rw;

	ASSERT_RET(0, cq_cmd_new(&self->e, &d, 16));
	ASSERT_RET(0, create_cq_ex_raw(self->e.fd, &c, &d, sizeof(d), r,
				       CQ_DRV));
	memcpy(&core, r, sizeof(core));
	memcpy(&drv, r + CQX_CORE, sizeof(drv));
	EXPECT_EQ(CQX_CORE, core.response_length);
	EXPECT_EQ(0, core.comp_mask);
	EXPECT_LE(16, core.base.cqe);
	EXPECT_EQ(0, drv.comp_mask);
	EXPECT_TRUE(all_bytes(r + CQX_CORE + CQ_DRV,
			      self->m.pg - CQX_CORE - CQ_DRV, GUARD));
	ASSERT_LIVE(1, 0, 0);
	ASSERT_RET(0, destroy_cq(self->e.fd, core.base.cq_handle));
	ASSERT_LIVE(0, 0, 0);
}

/* A failed response copy must not leave the CQ (or its ring) behind. */
TEST_F_TIMEOUT(q, cq_resp_efault_no_leak, 300)
{
	struct urdma_create_cq_cmd d;
	uint8_t *straddle = self->m.none - CQ_CORE;	/* drv unmapped */
	struct cq cq;
	int i;

	ASSERT_RET(0, cq_cmd_new(&self->e, &d, 64));
	for (i = 0; i < 20; i++) {
		/* The driver's copy fails. */
		ASSERT_RET(-EFAULT, create_cq_raw(self->e.fd, 64, &d,
						  sizeof(d), self->m.ro,
						  CQ_DRV));
		ASSERT_RET(-EFAULT, create_cq_raw(self->e.fd, 64, &d,
						  sizeof(d), straddle,
						  CQ_DRV));
		/* Only the core's copy, after the driver committed. */
		ASSERT_RET(-EFAULT, create_cq_raw(self->e.fd, 64, &d,
						  sizeof(d), self->m.ro, 0));
		ASSERT_RET(-EFAULT, create_cq_raw(self->e.fd, 64, &d,
						  sizeof(d), self->m.none,
						  CQ_DRV));
	}
	ASSERT_TRUE(all_bytes(self->m.ro, self->m.pg, RO_FILL));
	ASSERT_LIVE(0, 0, 0);
	/* The same ring and doorbell are free again. */
	ASSERT_RET(0, cq_create_on(&self->e, 64, &d, &cq));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
}

TEST_F(q, cq_drv_cmd_missing)
{
	struct ib_uverbs_ex_create_cq c = { .cqe = 1, .comp_channel = -1 };
	uint8_t r[64];
	struct cq cq;

	ASSERT_RET(-EINVAL, create_cq_raw(self->e.fd, 1, NULL, 0, r, CQ_DRV));
	ASSERT_RET(-EINVAL, create_cq_raw(self->e.fd, 1, NULL, 0, r, 0));
	ASSERT_RET(-EINVAL, create_cq_ex_raw(self->e.fd, &c, NULL, 0, r,
					     CQ_DRV));
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, cq_new(&self->e, 1, &cq));
}

/* Shorter than the mandatory part (through db_addr). */
TEST_F(q, cq_drv_cmd_truncated)
{
	struct ib_uverbs_ex_create_cq c = { .cqe = 1, .comp_channel = -1 };
	struct urdma_create_cq_cmd d;
	size_t len;
	uint8_t r[64];
	struct cq cq;

	ASSERT_RET(0, cq_cmd_new(&self->e, &d, 1));
	for (len = 4; len < sizeof(d); len += 4)
		ASSERT_RETM(-EINVAL, create_cq_raw(self->e.fd, 1, &d, len, r,
						   CQ_DRV),
			    "(driver command of %zu bytes)", len);
	for (len = 8; len < sizeof(d); len += 8)
		ASSERT_RETM(-EINVAL, create_cq_ex_raw(self->e.fd, &c, &d, len,
						      r, CQ_DRV),
			    "(extended, driver command of %zu bytes)", len);
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, cq_create_on(&self->e, 1, &d, &cq));
}

/* Longer commands: a zero tail is fine, anything else EOPNOTSUPP. */
TEST_F(q, cq_drv_cmd_long)
{
	static const size_t lens[] = { 32, 64, 4096 };
	struct ib_uverbs_ex_create_cq c = { .cqe = 1, .comp_channel = -1 };
	static uint8_t cmd[4096];
	struct urdma_create_cq_cmd d;
	uint8_t r[64];
	unsigned int i;

	ASSERT_RET(0, cq_cmd_new(&self->e, &d, 1));
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		drv_bad_tail(cmd, sizeof(cmd), &d, sizeof(d), lens[i] - 1);
		ASSERT_RETM(-EOPNOTSUPP, create_cq_raw(self->e.fd, 1, cmd,
						       lens[i], r, CQ_DRV),
			    "(driver command of %zu bytes)", lens[i]);
		cmd[lens[i] - 1] = 0;
		cmd[sizeof(d)] = 0x80;	/* the first unknown byte */
		ASSERT_RETM(-EOPNOTSUPP, create_cq_raw(self->e.fd, 1, cmd,
						       lens[i], r, CQ_DRV),
			    "(driver command of %zu bytes)", lens[i]);
	}
	ASSERT_RET(-EOPNOTSUPP, create_cq_ex_raw(self->e.fd, &c, cmd, 32, r,
						 CQ_DRV));
	ASSERT_LIVE(0, 0, 0);
	/* All-zero tails, legacy and extended. */
	drv_zero_tail(cmd, sizeof(cmd), &d, sizeof(d));
	ASSERT_RET(0, create_cq_raw(self->e.fd, 1, cmd, sizeof(cmd), r,
				    CQ_DRV));
	ASSERT_RET(0, destroy_cq(self->e.fd, resp_handle(r)));
	ASSERT_RET(0, create_cq_ex_raw(self->e.fd, &c, cmd, 64, r, CQ_DRV));
	ASSERT_RET(0, destroy_cq(self->e.fd, resp_handle(r)));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, cq_drv_cmd_comp_mask)
{
	static const uint32_t bits[] = { 1, 2, 0x80000000u, ~0u };
	struct urdma_create_cq_cmd d;
	uint8_t r[64];
	unsigned int i;
	struct cq cq;

	ASSERT_RET(0, cq_cmd_new(&self->e, &d, 1));
	for (i = 0; i < ARRAY_SIZE(bits); i++) {
		d.comp_mask = bits[i];
		ASSERT_RETM(-EINVAL, create_cq_raw(self->e.fd, 1, &d,
						   sizeof(d), r, CQ_DRV),
			    "(comp_mask 0x%x)", bits[i]);
	}
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, cq_create_on(&self->e, 1, &d, &cq));
}

TEST_F(q, cq_drv_cmd_garbage)
{
	uint8_t cmd[sizeof(struct urdma_create_cq_cmd)];
	uint8_t r[64];
	struct cq cq;

	memset(cmd, 0xff, sizeof(cmd));
	ASSERT_RET(-EINVAL, create_cq_raw(self->e.fd, 1, cmd, sizeof(cmd), r,
					  CQ_DRV));
	/* comp_mask clear: nent ~0 is no power of two, buf is unaligned. */
	memset(cmd, 0, 4);
	ASSERT_RET(-EINVAL, create_cq_raw(self->e.fd, 1, cmd, sizeof(cmd), r,
					  CQ_DRV));
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, cq_new(&self->e, 1, &cq));
}

/*
 * The extended core command: comp_mask/reserved (core), flags (urdma: only
 * IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION, which makes the entries 64
 * bytes; the ring here is a page).
 */
TEST_F(q, cq_ex_core_fields)
{
	static const uint32_t flags[] = {
		1 << 1,	/* IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN */
		1 << 0 | 1 << 1,
		1u << 31,
	};
	struct ib_uverbs_ex_create_cq c = { .cqe = 1, .comp_channel = -1 };
	struct urdma_create_cq_cmd d;
	uint8_t r[64];
	unsigned int i;

	ASSERT_RET(0, cq_cmd_new(&self->e, &d, 1));
	c.comp_mask = 1;
	ASSERT_RET(-EINVAL, create_cq_ex_raw(self->e.fd, &c, &d, sizeof(d), r,
					     CQ_DRV));
	c.comp_mask = 0;
	c.reserved = 1;
	ASSERT_RET(-EINVAL, create_cq_ex_raw(self->e.fd, &c, &d, sizeof(d), r,
					     CQ_DRV));
	c.reserved = 0;
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		c.flags = flags[i];
		ASSERT_RETM(-EOPNOTSUPP,
			    create_cq_ex_raw(self->e.fd, &c, &d, sizeof(d), r,
					     CQ_DRV),
			    "(CQ create flags 0x%x)", flags[i]);
	}
	ASSERT_LIVE(0, 0, 0);
	c.flags = 1 << 0;	/* IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION */
	ASSERT_RET(0, create_cq_ex_raw(self->e.fd, &c, &d, sizeof(d), r,
				       CQ_DRV));
	ASSERT_RET(0, destroy_cq(self->e.fd, resp_handle(r)));
	c.flags = 0;
	ASSERT_RET(0, create_cq_ex_raw(self->e.fd, &c, &d, sizeof(d), r,
				       CQ_DRV));
	ASSERT_RET(0, destroy_cq(self->e.fd, resp_handle(r)));
}

TEST_F(q, cq_bad_cqe_nent)
{
	static const struct { uint32_t cqe, nent; } bad[] = {
		{ 1, 0 }, { 1, 3 }, { 4, 6 }, { 100, 100 },
		{ 5, 4 }, { 8, 4 }, { 2, 1 },		/* nent < cqe */
		{ 0, 1 }, { 0, 0 }, { 0, 64 },		/* cqe 0 */
		{ MAX_CQE + 1, 2 * MAX_CQE },		/* cqe > max_cqe */
		{ MAX_CQE + 1, MAX_CQE },
		{ 0x80000000u, MAX_CQE }, { ~0u, MAX_CQE },
		{ 1, 2 * MAX_CQE }, { MAX_CQE, 2 * MAX_CQE }, /* nent > max */
		{ 1, 1u << 31 }, { 1, ~0u },
	};
	/* Room for the largest ring tried, so only the numbers are wrong. */
	void *buf = ring_alloc(&self->e, 2 * MAX_CQE * URDMA_CQE_SIZE);
	uint64_t db = db_alloc(&self->e);
	unsigned int i;
	struct cq cq;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ASSERT_RETM(-EINVAL, cq_try(&self->e, bad[i].cqe, bad[i].nent,
					    buf, db),
			    "(cqe %u nent %u)", bad[i].cqe, bad[i].nent);
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, cq_create(&self->e, MAX_CQE, MAX_CQE, buf, db, &cq));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_RET(0, cq_create(&self->e, 1, 1, buf, db, &cq));
}

TEST_F(q, cq_buf_unaligned)
{
	static const size_t offs[] = { 32, 64, 512, 2048 };
	uint8_t *buf = ring_alloc(&self->e, 2 * self->e.pg);
	uint64_t db = db_alloc(&self->e);
	unsigned int i;
	struct cq cq;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < ARRAY_SIZE(offs); i++)
		ASSERT_RETM(-EINVAL, cq_create(&self->e, 16, 16, buf + offs[i],
					       db, &cq),
			    "(ring at page + %zu)", offs[i]);
	ASSERT_RETM(-EINVAL, cq_create(&self->e, 16, 16,
				       buf + self->e.pg - 32, db, &cq),
		    "(ring at page + %zu)", self->e.pg - 32);
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, cq_create(&self->e, 16, 16, buf, db, &cq));
}

TEST_F(q, cq_db_unaligned)
{
	static const unsigned int offs[] = { 1, 4, 8, 12, 15 };
	void *buf = ring_alloc(&self->e, self->e.pg);
	uint64_t db = db_alloc(&self->e);
	unsigned int i;
	struct cq cq;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < ARRAY_SIZE(offs); i++)
		ASSERT_RETM(-EINVAL, cq_create(&self->e, 1, 1, buf,
					       db + offs[i], &cq),
			    "(doorbell at record + %u)", offs[i]);
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, cq_create(&self->e, 1, 1, buf, db, &cq));
}

TEST_F(q, cq_buf_unmapped)
{
	static const uint64_t bad[] = {
		0,				/* NULL */
		0x0000800000000000ull,		/* past user space */
		0xffff888000000000ull,		/* kernel direct map */
		0xffffffff81000000ull,		/* kernel text */
	};
	void *buf = ring_alloc(&self->e, self->e.pg);
	uint64_t db = db_alloc(&self->e);
	void *hole = hole_pages(1);	/* last: the next mmap may fill it */
	unsigned int i;
	struct cq cq;

	ASSERT_NE(NULL, hole);
	ASSERT_NE(NULL, buf);
	ASSERT_RET(-EFAULT, cq_create(&self->e, 1, 1, hole, db, &cq));
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ASSERT_RETM(-EFAULT, cq_create(&self->e, 1, 1,
					       (void *)(uintptr_t)bad[i], db,
					       &cq),
			    "(ring at 0x%llx)", (unsigned long long)bad[i]);
	ASSERT_LIVE(0, 0, 0);
	/* The doorbell's page was not left pinned or claimed. */
	ASSERT_RET(0, cq_create(&self->e, 1, 1, buf, db, &cq));
}

TEST_F(q, cq_buf_readonly)
{
	void *ro = ro_pages(2);
	uint8_t *half = map_pages(2);
	void *buf = ring_alloc(&self->e, self->e.pg);
	uint64_t db = db_alloc(&self->e);
	struct cq cq;

	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, half);
	ASSERT_NE(NULL, buf);
	ASSERT_RET(-EFAULT, cq_create(&self->e, 1, 1, ro, db, &cq));
	ASSERT_RET(-EFAULT, cq_create(&self->e, 256, 256, ro, db, &cq));
	ASSERT_TRUE(all_bytes(ro, 2 * self->e.pg, 0));
	/* Writable first page, read-only second. */
	ASSERT_EQ(0, mprotect(half + self->e.pg, self->e.pg, PROT_READ));
	ASSERT_RET(-EFAULT, cq_create(&self->e, 256, 256, half, db, &cq));
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, cq_create(&self->e, 1, 1, buf, db, &cq));
}

TEST_F(q, cq_db_bad_memory)
{
	void *buf = ring_alloc(&self->e, self->e.pg);
	uint8_t *ro = ro_pages(1), *hole = hole_pages(1);
	struct cq cq;

	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, hole);
	ASSERT_NE(NULL, buf);
	ASSERT_RET(-EFAULT, cq_create(&self->e, 1, 1, buf, (uintptr_t)ro,
				      &cq));
	ASSERT_RET(-EFAULT, cq_create(&self->e, 1, 1, buf,
				      (uintptr_t)ro + 32, &cq));
	ASSERT_TRUE(all_bytes(ro, self->e.pg, 0));
	ASSERT_RET(-EFAULT, cq_create(&self->e, 1, 1, buf, (uintptr_t)hole,
				      &cq));
	ASSERT_RET(-EFAULT, cq_create(&self->e, 1, 1, buf, 0, &cq));
	ASSERT_RET(-EFAULT, cq_create(&self->e, 1, 1, buf,
				      0xffff888000000000ull, &cq));
	ASSERT_LIVE(0, 0, 0);
	/* The ring was not left pinned or claimed. */
	ASSERT_RET(0, cq_create(&self->e, 1, 1, buf, db_alloc(&self->e), &cq));
}

/* A ring longer than its mapping. */
TEST_F(q, cq_buf_short_mapping)
{
	uint64_t db = db_alloc(&self->e);
	uint8_t *two = short_pages(2, 1);
	uint8_t *big = short_pages(MAX_CQE * URDMA_CQE_SIZE / self->e.pg, 1);
	struct cq cq;

	ASSERT_NE(NULL, two);
	ASSERT_NE(NULL, big);
	ASSERT_EQ(0, self->e.pg * 2 % (256 * URDMA_CQE_SIZE));
	ASSERT_RET(-EFAULT, cq_create(&self->e, 256, 256, two, db, &cq));
	ASSERT_RET(-EFAULT, cq_create(&self->e, MAX_CQE, MAX_CQE, big, db,
				      &cq));
	ASSERT_RET(-EFAULT, cq_create(&self->e, 1, MAX_CQE, big, db, &cq));
	ASSERT_LIVE(0, 0, 0);
	/* What is mapped suffices for one page of CQEs. */
	ASSERT_RET(0, cq_create(&self->e, 1, self->e.pg / URDMA_CQE_SIZE, big,
				db, &cq));
}

TEST_F(q, cq_buf_overlap)
{
	size_t pg = self->e.pg;
	uint32_t two = 2 * pg / URDMA_CQE_SIZE;	/* CQEs in two pages */
	uint8_t *r = map_pages(4);
	struct cq a, b;

	ASSERT_NE(NULL, r);
	/* A on pages 1-2. */
	ASSERT_RET(0, cq_create(&self->e, two, two, r + pg,
				db_alloc(&self->e), &a));
	ASSERT_RET(-EINVAL, cq_create(&self->e, 1, 1, r + pg,
				      db_alloc(&self->e), &b));
	ASSERT_RET(-EINVAL, cq_create(&self->e, 1, 1, r + 2 * pg,
				      db_alloc(&self->e), &b));
	ASSERT_RET(-EINVAL, cq_create(&self->e, two, two, r,
				      db_alloc(&self->e), &b));
	ASSERT_RET(-EINVAL, cq_create(&self->e, two, two, r + 2 * pg,
				      db_alloc(&self->e), &b));
	ASSERT_LIVE(1, 0, 0);
	/* Adjacent is fine. */
	ASSERT_RET(0, cq_create(&self->e, 1, 1, r + 3 * pg,
				db_alloc(&self->e), &b));
	ASSERT_RET(0, destroy_cq(self->e.fd, b.handle));
	/* Once A is gone its ring is free. */
	ASSERT_RET(0, destroy_cq(self->e.fd, a.handle));
	ASSERT_RET(0, cq_create(&self->e, two, two, r, db_alloc(&self->e),
				&b));
	ASSERT_RET(0, destroy_cq(self->e.fd, b.handle));
	ASSERT_RET(0, cq_create(&self->e, 1, 1, r + pg, db_alloc(&self->e),
				&b));
}

/*
 * Rings may not overlap a doorbell page of the context, and doorbells may
 * not lie in a ring, including the CQ's own ring.
 */
TEST_F(q, cq_ring_vs_db_page)
{
	size_t pg = self->e.pg;
	uint8_t *dbpage = map_pages(1), *ra = map_pages(1);
	uint8_t *rb = map_pages(1), *rc = map_pages(1);
	struct cq a, b;

	ASSERT_NE(NULL, dbpage);
	ASSERT_NE(NULL, ra);
	ASSERT_NE(NULL, rb);
	ASSERT_NE(NULL, rc);
	ASSERT_RET(0, cq_create(&self->e, 1, 1, ra, (uintptr_t)dbpage, &a));
	/* A ring on A's doorbell page, at its record or elsewhere in it. */
	ASSERT_RET(-EINVAL, cq_create(&self->e, 1, 1, dbpage,
				      db_alloc(&self->e), &b));
	/* A doorbell inside A's ring, or on the page A's ring starts. */
	ASSERT_RET(-EINVAL, cq_create(&self->e, 1, 1, rb,
				      (uintptr_t)ra, &b));
	ASSERT_RET(-EINVAL, cq_create(&self->e, 1, 1, rb,
				      (uintptr_t)ra + pg / 2, &b));
	/* A doorbell inside the CQ's own ring. */
	ASSERT_RET(-EINVAL, cq_create(&self->e, pg / URDMA_CQE_SIZE,
				      pg / URDMA_CQE_SIZE, rc,
				      (uintptr_t)rc + 64, &b));
	ASSERT_LIVE(1, 0, 0);
	/* A second record on A's doorbell page is fine. */
	ASSERT_RET(0, cq_create(&self->e, 1, 1, rb, (uintptr_t)dbpage + 16,
				&b));
	ASSERT_RET(0, destroy_cq(self->e.fd, b.handle));
	/* Once nobody's doorbell is on it, the page may hold a ring. */
	ASSERT_RET(0, destroy_cq(self->e.fd, a.handle));
	ASSERT_RET(0, cq_create(&self->e, 1, 1, dbpage, (uintptr_t)rc, &b));
	ASSERT_RET(0, destroy_cq(self->e.fd, b.handle));
	ASSERT_LIVE(0, 0, 0);
}

/* liburdma packs doorbell records: many CQs, one page, two contexts. */
TEST_F(q, cq_db_page_shared)
{
	enum { N = 64 };
	uint8_t *dbpage = map_pages(1);
	struct qenv e2;
	struct cq cq[N], c2;
	int i;

	ASSERT_NE(NULL, dbpage);
	for (i = 0; i < N; i++) {
		void *buf = ring_alloc(&self->e, self->e.pg);

		ASSERT_NE(NULL, buf);
		ASSERT_RETM(0, cq_create(&self->e, 1, 1, buf,
					 (uintptr_t)dbpage + 16 * i, &cq[i]),
			    "(CQ %d)", i);
	}
	/* Another context has its own doorbell pages, even the same one. */
	ASSERT_RET(0, qenv_open(&e2));
	ASSERT_RET(0, cq_create(&e2, 1, 1, ring_alloc(&e2, e2.pg),
				(uintptr_t)dbpage + 16 * N, &c2));
	for (i = 0; i < N; i += 2)
		ASSERT_RET(0, destroy_cq(self->e.fd, cq[i].handle));
	ASSERT_RET(0, destroy_cq(e2.fd, c2.handle));
	qenv_close(&e2);
	ASSERT_LIVE(N / 2, 0, 0);
	for (i = 1; i < N; i += 2)
		ASSERT_RET(0, destroy_cq(self->e.fd, cq[i].handle));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, cq_destroy_twice)
{
	struct cq cq;

	ASSERT_RET(0, cq_new(&self->e, 8, &cq));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_RET(-ENOENT, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
	/* Its memory is free again. */
	ASSERT_RET(0, cq_create(&self->e, 8, 8, cq.buf, cq.db, &cq));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_RET(-ENOENT, destroy_cq(self->e.fd, cq.handle));
}

TEST_F(q, cq_destroy_bogus)
{
	static const uint32_t bogus[] = { 12345, 0x7fffffff, ~0u };
	unsigned int i;
	struct cq cq;

	ASSERT_RET(0, cq_new(&self->e, 1, &cq));
	for (i = 0; i < ARRAY_SIZE(bogus); i++)
		ASSERT_RETM(-ENOENT, destroy_cq(self->e.fd, bogus[i]),
			    "(handle %u)", bogus[i]);
	/* A handle of another type (the PD): the core says EINVAL. */
	ASSERT_RET(-EINVAL, destroy_cq(self->e.fd, self->e.pd));
	ASSERT_RET(0, probe_context(self->e.fd));
	ASSERT_LIVE(1, 0, 0);
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
}

TEST_F(q, cq_destroy_busy)
{
	struct cq a, b;
	struct qp_req r;
	struct qp qa, qb;

	ASSERT_RET(0, cq_new(&self->e, 16, &a));
	ASSERT_RET(0, cq_new(&self->e, 16, &b));
	ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_RC, a.handle, 4));
	ASSERT_RET(0, qp_create(&self->e, &r, &qa));
	ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_UD, a.handle, 4));
	r.rcq = b.handle;
	ASSERT_RET(0, qp_create(&self->e, &r, &qb));
	ASSERT_RET(-EBUSY, destroy_cq(self->e.fd, a.handle));
	ASSERT_RET(-EBUSY, destroy_cq(self->e.fd, b.handle));
	ASSERT_LIVE(2, 2, 0);
	ASSERT_RET(0, destroy_qp(self->e.fd, qb.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, b.handle));
	ASSERT_RET(-EBUSY, destroy_cq(self->e.fd, a.handle));
	ASSERT_RET(0, destroy_qp(self->e.fd, qa.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, a.handle));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, cq_resize_valid)
{
	size_t pg = self->e.pg;
	uint8_t *r2 = ring_alloc(&self->e, 128 * URDMA_CQE_SIZE);
	uint8_t *r3 = ring_alloc(&self->e, 2 * URDMA_CQE_SIZE);
	uint8_t *r4 = ring_alloc(&self->e, MAX_CQE * URDMA_CQE_SIZE);
	uint32_t moved = ~0u, cqe = 0;
	uint8_t *resp = self->m.rw;
	struct urdma_resize_cq_cmd d;
	struct cq cq, other;

	ASSERT_NE(NULL, r2);
	ASSERT_NE(NULL, r3);
	ASSERT_NE(NULL, r4);
	ASSERT_RET(0, cq_new(&self->e, 4, &cq));
	/* Larger, on an empty CQ: nothing moved. */
	ASSERT_RET(0, resize_cq(self->e.fd, cq.handle, 100, 128, r2, &moved,
				&cqe));
	EXPECT_EQ(0, moved);
	EXPECT_LE(100, cqe);
	EXPECT_GE(128, cqe);
	/* The old ring was released: another CQ may use it. */
	ASSERT_RET(0, cq_create(&self->e, 4, 4, cq.buf, db_alloc(&self->e),
				&other));
	ASSERT_RET(0, destroy_cq(self->e.fd, other.handle));
	/* The new one is taken. */
	ASSERT_RET(-EINVAL, cq_create(&self->e, 1, 1, r2, db_alloc(&self->e),
				      &other));
	/* Smaller, and to the limit. */
	moved = ~0u;
	ASSERT_RET(0, resize_cq(self->e.fd, cq.handle, 2, 2, r3, &moved,
				&cqe));
	EXPECT_EQ(0, moved);
	EXPECT_LE(2, cqe);
	ASSERT_RET(0, resize_cq(self->e.fd, cq.handle, MAX_CQE, MAX_CQE, r4,
				&moved, &cqe));
	EXPECT_EQ(0, moved);
	EXPECT_EQ(MAX_CQE, cqe);
	/* The exact response, nothing past it. */
	memset(&d, 0, sizeof(d));
	d.nent = 128;
	d.buf_addr = (uintptr_t)r2;
	memset(resp, GUARD, pg);
	ASSERT_RET(0, resize_cq_raw(self->e.fd, cq.handle, 128, &d, sizeof(d),
				    resp, RSZ_DRV));
	EXPECT_TRUE(all_bytes(resp + RSZ_CORE, RSZ_DRV, 0))
		TH_LOG("comp_mask and moved of an empty CQ");
	EXPECT_TRUE(all_bytes(resp + RSZ_CORE + RSZ_DRV,
			      pg - RSZ_CORE - RSZ_DRV, GUARD));
	/* The doorbell record stays; r3 and r4 are free. */
	ASSERT_RET(0, cq_create(&self->e, 2, 2, r3, db_alloc(&self->e),
				&other));
	ASSERT_RET(0, destroy_cq(self->e.fd, other.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
	/* ... and so is r2 once the CQ is gone. */
	ASSERT_RET(0, cq_create(&self->e, 1, 1, r2, db_alloc(&self->e),
				&other));
}

TEST_F(q, cq_resize_bad)
{
	static const struct { uint32_t cqe, nent; } bad[] = {
		{ 16, 0 }, { 16, 24 }, { 64, 32 }, { MAX_CQE + 1, MAX_CQE },
		{ MAX_CQE + 1, 2 * MAX_CQE }, { 1, 2 * MAX_CQE },
	};
	size_t pg = self->e.pg;
	uint8_t *fresh = ring_alloc(&self->e, 2 * MAX_CQE * URDMA_CQE_SIZE);
	uint8_t *ro = ro_pages(1), *hole, cmd[64];
	struct urdma_resize_cq_cmd d = {
		.nent = 16, .buf_addr = (uintptr_t)fresh,
	};
	uint8_t r[64];
	struct cq cq, other;
	unsigned int i;
	void *dbpage;
	size_t len;

	ASSERT_NE(NULL, fresh);
	ASSERT_NE(NULL, ro);
	ASSERT_RET(0, cq_new(&self->e, 16, &cq));
	ASSERT_RET(0, cq_new(&self->e, 16, &other));
	hole = hole_pages(1);	/* after every other mapping */
	ASSERT_NE(NULL, hole);
	/* Missing, truncated, comp_mask, unknown tail. */
	ASSERT_RET(-EINVAL, resize_cq_raw(self->e.fd, cq.handle, 16, NULL, 0,
					  r, RSZ_DRV));
	for (len = 4; len < sizeof(d); len += 4)
		ASSERT_RETM(-EINVAL, resize_cq_raw(self->e.fd, cq.handle, 16,
						   &d, len, r, RSZ_DRV),
			    "(driver command of %zu bytes)", len);
	d.comp_mask = 1;
	ASSERT_RET(-EINVAL, resize_cq_raw(self->e.fd, cq.handle, 16, &d,
					  sizeof(d), r, RSZ_DRV));
	d.comp_mask = 0;
	drv_bad_tail(cmd, sizeof(cmd), &d, sizeof(d), sizeof(cmd) - 1);
	ASSERT_RET(-EOPNOTSUPP, resize_cq_raw(self->e.fd, cq.handle, 16, cmd,
					      sizeof(cmd), r, RSZ_DRV));
	/* Sizes. */
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ASSERT_RETM(-EINVAL, resize_cq(self->e.fd, cq.handle,
					       bad[i].cqe, bad[i].nent, fresh,
					       NULL, NULL),
			    "(cqe %u nent %u)", bad[i].cqe, bad[i].nent);
	/* Memory. */
	ASSERT_RET(-EINVAL, resize_cq(self->e.fd, cq.handle, 16, 16,
				      fresh + 64, NULL, NULL));
	ASSERT_RET(-EFAULT, resize_cq(self->e.fd, cq.handle, 16, 16, hole,
				      NULL, NULL));
	ASSERT_RET(-EFAULT, resize_cq(self->e.fd, cq.handle, 16, 16, ro,
				      NULL, NULL));
	ASSERT_RET(-EFAULT, resize_cq(self->e.fd, cq.handle, 16, 16, NULL,
				      NULL, NULL));
	ASSERT_RET(-EINVAL, resize_cq(self->e.fd, cq.handle, 16, 16,
				      other.buf, NULL, NULL));
	dbpage = (void *)(uintptr_t)(cq.db & ~(uint64_t)(pg - 1));
	ASSERT_RET(-EINVAL, resize_cq(self->e.fd, cq.handle, 16, 16, dbpage,
				      NULL, NULL));
	/* Handles (core). */
	ASSERT_RET(-ENOENT, resize_cq(self->e.fd, 12345, 16, 16, fresh, NULL,
				      NULL));
	ASSERT_RET(-EINVAL, resize_cq(self->e.fd, self->e.pd, 16, 16, fresh,
				      NULL, NULL));
	ASSERT_TRUE(all_bytes(ro, pg, 0));
	ASSERT_LIVE(2, 0, 0);
	/* The CQ is intact and the candidate ring was not kept. */
	ASSERT_RET(0, resize_cq(self->e.fd, cq.handle, 16, 16, fresh, NULL,
				NULL));
	ASSERT_RET(0, destroy_cq(self->e.fd, other.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
}
