// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: EX_QUERY_DEVICE and the other entry points. */

/* ---- EX_QUERY_DEVICE ---------------------------------------------------- */

TEST_F(ctx, ex_query_device_valid)
{
	struct ib_uverbs_ex_query_device_resp resp;
	struct exq q = {
		.resp = self->m.rw,
		.out_words = sizeof(resp) / 8,
	};

	ASSERT_RET(0, ex_query_device(self->fd, &q));
	memcpy(&resp, self->m.rw, sizeof(resp));
	EXPECT_EQ(sizeof(resp), resp.response_length);
	EXPECT_EQ(0, resp.comp_mask);
	EXPECT_EQ(MAX_PD, resp.base.max_pd);
	EXPECT_EQ(MAX_QP_WR, resp.base.max_qp_wr);
	EXPECT_EQ(MAX_SGE, resp.base.max_sge);
	EXPECT_EQ(MAX_CQE, resp.base.max_cqe);
	EXPECT_EQ(MAX_SRQ_WR, resp.base.max_srq_wr);
	/* Consistent with the limits GET_CONTEXT reports to the provider. */
	EXPECT_EQ(self->drv.max_qp_wr, resp.base.max_qp_wr);
	EXPECT_EQ(self->drv.max_sge, resp.base.max_sge);
	EXPECT_EQ(self->drv.max_cqe, resp.base.max_cqe);
	EXPECT_EQ(self->drv.max_srq_wr, resp.base.max_srq_wr);
	EXPECT_TRUE(all_bytes(self->m.rw + sizeof(resp),
			      self->m.pg - sizeof(resp), GUARD));
}

/* The smallest response the core accepts: OK, truncated. */
TEST_F(ctx, ex_query_device_min_resp)
{
	struct ib_uverbs_ex_query_device_resp resp;
	struct exq q = { .resp = self->m.rw, .out_words = EXQ_MIN / 8 };

	ASSERT_RET(0, ex_query_device(self->fd, &q));
	memcpy(&resp, self->m.rw, EXQ_MIN);
	EXPECT_EQ(EXQ_MIN, resp.response_length);
	EXPECT_EQ(MAX_PD, resp.base.max_pd);
	EXPECT_TRUE(all_bytes(self->m.rw + EXQ_MIN, self->m.pg - EXQ_MIN,
			      GUARD))
		TH_LOG("written past a %zu-byte response", EXQ_MIN);
}

/*
 * Smaller than the core's own minimum: the core never sets resp_size for
 * extended commands (uapi_create_write() fills it for legacy ones only),
 * so its ENOSPC check does not fire and the response is just truncated.
 */
TEST_F(ctx, ex_query_device_tiny_resp)
{
	static const unsigned int words[] = { 1, 2, EXQ_MIN / 8 - 1 };
	struct exq q = { .resp = self->m.rw };
	unsigned int i;
	uint64_t fw;

	for (i = 0; i < ARRAY_SIZE(words); i++) {
		memset(self->m.rw, GUARD, self->m.pg);
		q.out_words = words[i];
		ASSERT_RETM(0, ex_query_device(self->fd, &q),
			    "(out_words %u)", words[i]);
		memcpy(&fw, self->m.rw, sizeof(fw));
		EXPECT_NE(0, fw) TH_LOG("fw_ver not written");
		EXPECT_TRUE(all_bytes(self->m.rw + 8 * words[i],
				      self->m.pg - 8 * words[i], GUARD))
			TH_LOG("written past %u words", words[i]);
	}
}

/* Driver input the driver does not know, non-zero: rejected. */
TEST_F(ctx, ex_query_device_drv_in_nonzero)
{
	uint64_t drv[4] = { 0, 0, 0, 1ull << 63 };
	struct exq q = {
		.resp = self->m.rw, .out_words = EXQ_MIN / 8,
		.drv = drv, .drv_in_words = 4,
	};
	int ret = ex_query_device(self->fd, &q);

	ASSERT_TRUE(ret == -EINVAL || ret == -EOPNOTSUPP)
		TH_LOG("got %s", ename(ret));
	ASSERT_TRUE(all_bytes(self->m.rw, self->m.pg, GUARD));
	drv[0] = 1;
	drv[3] = 0;
	q.drv_in_words = 1;
	ret = ex_query_device(self->fd, &q);
	ASSERT_TRUE(ret == -EINVAL || ret == -EOPNOTSUPP)
		TH_LOG("got %s", ename(ret));
}

/*
 * Driver input, all zero: docs/ABI.md says a newer provider's command with
 * a zero unknown tail is accepted.
 */
TEST_F(ctx, ex_query_device_drv_in_zero)
{
	uint64_t drv[4] = {};
	struct exq q = {
		.resp = self->m.rw, .out_words = EXQ_MIN / 8,
		.drv = drv, .drv_in_words = 4,
	};

	ASSERT_RET(0, ex_query_device(self->fd, &q));
}

/*
 * Room for a driver response the driver does not have: docs/ABI.md says
 * responses are truncated to (and so fit in) the caller's buffer.
 */
TEST_F(ctx, ex_query_device_drv_out)
{
	struct exq q = {
		.resp = self->m.rw, .out_words = EXQ_MIN / 8,
		.drv_out_words = 2,
	};

	ASSERT_RET(0, ex_query_device(self->fd, &q));
	EXPECT_TRUE(all_bytes(self->m.rw + EXQ_MIN, 16, GUARD) ||
		    all_bytes(self->m.rw + EXQ_MIN, 16, 0));
}

TEST_F(ctx, ex_query_device_bad_cmd)
{
	uint64_t tail = 1;
	struct exq q = { .resp = self->m.rw, .out_words = EXQ_MIN / 8 };

	q.comp_mask = 1;
	ASSERT_RET(-EINVAL, ex_query_device(self->fd, &q));
	q.comp_mask = 0;
	q.reserved = 1;
	ASSERT_RET(-EINVAL, ex_query_device(self->fd, &q));
	q.reserved = 0;
	/* A longer core command: zero tail OK, non-zero EOPNOTSUPP. */
	q.core_tail = &tail;
	q.core_tail_words = 1;
	ASSERT_RET(-EOPNOTSUPP, ex_query_device(self->fd, &q));
	ASSERT_TRUE(all_bytes(self->m.rw, self->m.pg, GUARD));
	tail = 0;
	ASSERT_RET(0, ex_query_device(self->fd, &q));
}

TEST_F(ctx, ex_query_device_bad_header)
{
	struct exq q = { .resp = self->m.rw, .out_words = EXQ_MIN / 8 };
	struct ib_uverbs_cmd_hdr hdr = {
		.command = EX_CMD(IB_USER_VERBS_EX_CMD_QUERY_DEVICE),
	};

	q.hdr_reserved = 1;
	ASSERT_RET(-EINVAL, ex_query_device(self->fd, &q));
	q.hdr_reserved = 0;
	/* in_words that does not match the count */
	q.in_words_delta = 1;
	ASSERT_RET(-EINVAL, ex_query_device(self->fd, &q));
	q.in_words_delta = -1;		/* in_words 0, count says 1 */
	ASSERT_RET(-EINVAL, ex_query_device(self->fd, &q));
	q.in_words_delta = 0;
	/* provider_in_words that does not match the count */
	q.drv_in_words = 0;
	{
		uint8_t *c = self->m.cmd;
		struct ib_uverbs_ex_cmd_hdr ex = {
			.response = (uintptr_t)self->m.rw,
			.provider_in_words = 1,
		};

		hdr.in_words = 1;
		hdr.out_words = EXQ_MIN / 8;
		memset(c, 0, 64);
		memcpy(c, &hdr, sizeof(hdr));
		memcpy(c + 8, &ex, sizeof(ex));
		ASSERT_RET(-EINVAL, uv_write(self->fd, c, 32));
		/* shorter than the two headers */
		ASSERT_RET(-EINVAL, uv_write(self->fd, c, 16));
		/*
		 * No core command at all, consistently: req_size is 0 for
		 * extended commands (see above) and the core zero-extends.
		 */
		hdr.in_words = 0;
		ex.provider_in_words = 0;
		memcpy(c, &hdr, sizeof(hdr));
		memcpy(c + 8, &ex, sizeof(ex));
		ASSERT_RET(0, uv_write(self->fd, c, 24));
	}
	/* response without out_words, out_words without response */
	q.out_words = 0;
	ASSERT_RET(-EINVAL, ex_query_device(self->fd, &q));
	q.out_words = EXQ_MIN / 8;
	q.resp = NULL;
	ASSERT_RET(-EINVAL, ex_query_device(self->fd, &q));
	/* response in kernel space, unmapped, read-only */
	q.resp = (void *)0xffffffff81000000ull;
	ASSERT_RET(-EFAULT, ex_query_device(self->fd, &q));
	q.resp = self->m.none;
	ASSERT_RET(-EFAULT, ex_query_device(self->fd, &q));
	q.resp = self->m.ro;
	ASSERT_RET(-EFAULT, ex_query_device(self->fd, &q));
	q.resp = self->m.none - 64;	/* straddles */
	ASSERT_RET(-EFAULT, ex_query_device(self->fd, &q));
	ASSERT_TRUE(all_bytes(self->m.ro, self->m.pg, RO_FILL));
	ASSERT_RET(0, probe_context(self->fd));
}

/* ---- other entry points ------------------------------------------------- */

static int query_port(int fd, void *resp, uint8_t port)
{
	struct ib_uverbs_query_port c = {
		.response = (uintptr_t)resp, .port_num = port,
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_QUERY_PORT, &c, sizeof(c), NULL, 0,
		      sizeof(struct ib_uverbs_query_port_resp));
}

TEST_F(ctx, query_port)
{
	static const uint8_t bad[] = { 0, 2, 255 };
	struct ib_uverbs_query_port_resp r;
	unsigned int i;

	ASSERT_RET(0, query_port(self->fd, self->m.rw, 1));
	memcpy(&r, self->m.rw, sizeof(r));
	EXPECT_EQ(2, r.link_layer);	/* IB_LINK_LAYER_ETHERNET */
	EXPECT_LT(0, r.gid_tbl_len);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(self->m.rw, GUARD, self->m.pg);
		ASSERT_RETM(-EINVAL, query_port(self->fd, self->m.rw, bad[i]),
			    "(port %u)", bad[i]);
		ASSERT_TRUE(all_bytes(self->m.rw, self->m.pg, GUARD));
	}
}

/* No object exposes memory yet: mmap of the uverbs fd must fail. */
TEST_F(ctx, mmap_bogus)
{
	static const off_t offs[] = { 1, 0x1000, 0x7fff000 };
	off_t state = self->drv.engine_mmap_offset;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		void *p;

		if (offs[i] * self->m.pg == state)
			continue;
		p = mmap(NULL, self->m.pg, PROT_READ, MAP_SHARED, self->fd,
			 offs[i] * self->m.pg);
		ASSERT_EQ(MAP_FAILED, p) {
			TH_LOG("mmap at page %ld succeeded", (long)offs[i]);
			munmap(p, self->m.pg);
		}
		ASSERT_EQ(EINVAL, errno)
			TH_LOG("mmap: %s", strerrorname_np(errno));
	}
	ASSERT_RET(0, probe_context(self->fd));
}

/* The engine state page maps read-only, once per context, and no larger. */
TEST_F(ctx, mmap_state_page)
{
	off_t state = self->drv.engine_mmap_offset;
	const struct urdma_engine_state *st;
	unsigned int i;
	void *p;

	ASSERT_LE(1, self->drv.num_engines);
	ASSERT_GE(URDMA_MAX_ENGINES, self->drv.num_engines);
	p = mmap(NULL, self->m.pg, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, state);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EPERM, errno);
	p = mmap(NULL, 2 * self->m.pg, PROT_READ, MAP_SHARED, self->fd, state);
	ASSERT_EQ(MAP_FAILED, p);
	p = mmap(NULL, self->m.pg, PROT_READ, MAP_SHARED, self->fd, state);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerrorname_np(errno));
	st = p;
	/* The flag is 0 or 1; the reserved words are zero. */
	EXPECT_GE(1, st[0].asleep);
	for (i = 0; i < ARRAY_SIZE(st[0].reserved_40); i++)
		EXPECT_EQ(0, st[0].reserved_40[i]);
	/* Read-only for good: mprotect cannot add write access. */
	EXPECT_EQ(-1, mprotect(p, self->m.pg, PROT_READ | PROT_WRITE));
	EXPECT_EQ(0, munmap(p, self->m.pg));
	ASSERT_RET(0, probe_context(self->fd));
}
