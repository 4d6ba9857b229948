// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: the device node, GET_CONTEXT and commands without a context. */

/* ---- device node -------------------------------------------------------- */

TEST_F(dev, abi_version)
{
	char p[PATH_MAX + 16];
	unsigned int v = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/abi_version", uverbs_dir);
	f = fopen(p, "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fscanf(f, "%u", &v));
	fclose(f);
	ASSERT_EQ(URDMA_ABI_VERSION, v);
}

/* ---- GET_CONTEXT -------------------------------------------------------- */

TEST_F(dev, get_context_valid)
{
	uint8_t *r = self->m.rw;
	struct ib_uverbs_get_context_resp core;
	struct urdma_alloc_ucontext_resp drv;

	ASSERT_RET(0, get_context(self->fd, r, CTX_CORE + CTX_DRV, NULL, 0));
	memcpy(&core, r, sizeof(core));
	memcpy(&drv, r + CTX_CORE, sizeof(drv));
	ASSERT_LE(0, fcntl(core.async_fd, F_GETFD)) TH_LOG("async_fd %u",
							    core.async_fd);
	ASSERT_EQ(self->nfds + 1, fd_count());
	ASSERT_LE(1, core.num_comp_vectors);
	EXPECT_EQ(0, drv.comp_mask);
	EXPECT_EQ(0, drv.device_caps & ~(__u32)(URDMA_DEVICE_CAP_LOCAL_PATH |
						URDMA_DEVICE_CAP_ERR_QPS));
	EXPECT_TRUE(drv.device_caps & URDMA_DEVICE_CAP_ERR_QPS);
	EXPECT_EQ(MAX_QP_WR, drv.max_qp_wr);
	EXPECT_EQ(MAX_SGE, drv.max_sge);
	EXPECT_EQ(MAX_INLINE, drv.max_inline_data);
	EXPECT_EQ(MAX_CQE, drv.max_cqe);
	EXPECT_EQ(MAX_SRQ_WR, drv.max_srq_wr);
	EXPECT_EQ(12, drv.page_shift);
	EXPECT_TRUE(all_bytes(r + CTX_CORE + CTX_DRV,
			      self->m.pg - CTX_CORE - CTX_DRV, GUARD))
		TH_LOG("bytes past the response were written");
	ASSERT_RET(0, probe_context(self->fd));
	close(core.async_fd);
}

TEST_F(dev, get_context_drv_cmd_zero)
{
	struct urdma_alloc_ucontext_cmd cmd = {};

	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  &cmd, sizeof(cmd)));
	ASSERT_RET(0, probe_context(self->fd));
}

/* A shorter (older) driver command: only comp_mask. */
TEST_F(dev, get_context_drv_cmd_short)
{
	uint32_t cmd = 0;

	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  &cmd, sizeof(cmd)));
	ASSERT_RET(0, probe_context(self->fd));
}

TEST_F(dev, get_context_drv_cmd_short_comp_mask)
{
	uint32_t cmd = 1;

	ASSERT_RET(-EINVAL, get_context(self->fd, self->m.rw,
					CTX_CORE + CTX_DRV, &cmd, sizeof(cmd)));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(-EINVAL, probe_context(self->fd));
}

TEST_F(dev, get_context_comp_mask)
{
	static const uint32_t bits[] = { 1, 2, 0x80000000u, ~0u };
	struct urdma_alloc_ucontext_cmd cmd = {};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bits); i++) {
		cmd.comp_mask = bits[i];
		memset(self->m.rw, GUARD, self->m.pg);
		ASSERT_RET(-EINVAL, get_context(self->fd, self->m.rw,
						CTX_CORE + CTX_DRV, &cmd,
						sizeof(cmd)));
		ASSERT_EQ(self->nfds, fd_count()) TH_LOG("async fd leaked");
		ASSERT_RET(-EINVAL, probe_context(self->fd));
	}
	/* Nothing was left behind: a valid GET_CONTEXT still works. */
	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
	ASSERT_EQ(self->nfds + 1, fd_count());
}

TEST_F(dev, get_context_reserved)
{
	static const uint32_t vals[] = { 1, 0x100, ~0u };
	struct urdma_alloc_ucontext_cmd cmd = {};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		cmd.reserved_20 = vals[i];
		ASSERT_RET(-EINVAL, get_context(self->fd, self->m.rw,
						CTX_CORE + CTX_DRV, &cmd,
						sizeof(cmd)));
		ASSERT_EQ(self->nfds, fd_count());
		ASSERT_RET(-EINVAL, probe_context(self->fd));
	}
	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
}

/* A longer (newer) driver command whose unknown tail is not zero. */
TEST_F(dev, get_context_long_tail_nonzero)
{
	static const size_t lens[] = { 12, 16, 64, 4096 };
	uint8_t cmd[4096];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		memset(cmd, 0, sizeof(cmd));
		cmd[lens[i] - 1] = 1;	/* only the very last byte */
		ASSERT_RETM(-EOPNOTSUPP, get_context(self->fd, self->m.rw,
						     CTX_CORE + CTX_DRV, cmd,
						     lens[i]),
			    "(driver command of %zu bytes)", lens[i]);
		ASSERT_EQ(self->nfds, fd_count());
		ASSERT_RET(-EINVAL, probe_context(self->fd));
	}
	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
}

TEST_F(dev, get_context_long_tail_zero)
{
	uint8_t cmd[8192] = {};

	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  cmd, sizeof(cmd)));
	ASSERT_RET(0, probe_context(self->fd));
}

/* An old provider's shorter response buffer: truncated, nothing past it. */
TEST_F(dev, get_context_resp_truncated)
{
	static const size_t drv_lens[] = { 0, 4, 12, 28 };
	struct urdma_alloc_ucontext_resp want = {
		.device_caps = URDMA_DEVICE_CAP_ERR_QPS,
		.max_qp_wr = MAX_QP_WR, .max_sge = MAX_SGE,
		.max_inline_data = MAX_INLINE, .max_cqe = MAX_CQE,
		.max_srq_wr = MAX_SRQ_WR, .page_shift = 12,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(drv_lens); i++) {
		size_t n = drv_lens[i];
		uint8_t *r = self->m.rw;
		int fd = uv_open(), afd;

		ASSERT_LE(0, fd);
		memset(r, GUARD, self->m.pg);
		ASSERT_RETM(0, get_context(fd, r, CTX_CORE + n, NULL, 0),
			    "(driver response of %zu bytes)", n);
		memcpy(&afd, r, sizeof(afd));
		if (n) {
			EXPECT_EQ(0, memcmp(r + CTX_CORE, &want, n))
				TH_LOG("driver response of %zu bytes differs",
				       n);
		}
		EXPECT_TRUE(all_bytes(r + CTX_CORE + n,
				      self->m.pg - CTX_CORE - n, GUARD))
			TH_LOG("written past a %zu-byte driver response", n);
		ASSERT_RET(0, probe_context(fd));
		close(afd);
		close(fd);
	}
}

/* A newer provider's larger response buffer: the known part is filled. */
TEST_F(dev, get_context_resp_larger)
{
	struct urdma_alloc_ucontext_resp drv;
	uint8_t *r = self->m.rw;

	ASSERT_RET(0, get_context(self->fd, r, CTX_CORE + CTX_DRV + 64, NULL,
				  0));
	memcpy(&drv, r + CTX_CORE, sizeof(drv));
	EXPECT_EQ(MAX_QP_WR, drv.max_qp_wr);
	EXPECT_EQ(12, drv.page_shift);
	/* The unknown tail is either untouched or zeroed, never garbage. */
	EXPECT_TRUE(all_bytes(r + CTX_CORE + CTX_DRV, 64, GUARD) ||
		    all_bytes(r + CTX_CORE + CTX_DRV, 64, 0));
	EXPECT_TRUE(all_bytes(r + CTX_CORE + CTX_DRV + 64,
			      self->m.pg - CTX_CORE - CTX_DRV - 64, GUARD));
}

TEST_F(dev, get_context_resp_unmapped)
{
	ASSERT_RET(-EFAULT, get_context(self->fd, self->m.none,
					CTX_CORE + CTX_DRV, NULL, 0));
	ASSERT_EQ(self->nfds, fd_count()) TH_LOG("async fd leaked");
	ASSERT_RET(-EINVAL, probe_context(self->fd));
	ASSERT_RET(-EFAULT, get_context(self->fd, NULL, CTX_CORE + CTX_DRV,
					NULL, 0));
	ASSERT_RET(-EFAULT, get_context(self->fd, (void *)0xffffffff81000000ull,
					CTX_CORE + CTX_DRV, NULL, 0));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
}

TEST_F(dev, get_context_resp_readonly)
{
	ASSERT_RET(-EFAULT, get_context(self->fd, self->m.ro,
					CTX_CORE + CTX_DRV, NULL, 0));
	ASSERT_TRUE(all_bytes(self->m.ro, self->m.pg, RO_FILL));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(-EINVAL, probe_context(self->fd));
	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
}

/* Core response mapped, driver response on an inaccessible page. */
TEST_F(dev, get_context_drv_resp_unmapped)
{
	uint8_t *r = self->m.none - CTX_CORE;

	ASSERT_RET(-EFAULT, get_context(self->fd, r, CTX_CORE + CTX_DRV, NULL,
					0));
	ASSERT_EQ(self->nfds, fd_count()) TH_LOG("async fd leaked");
	ASSERT_RET(-EINVAL, probe_context(self->fd));
	/* ... and half of it mapped. */
	r = self->m.none - CTX_CORE - 16;
	ASSERT_RET(-EFAULT, get_context(self->fd, r, CTX_CORE + CTX_DRV, NULL,
					0));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(-EINVAL, probe_context(self->fd));
	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
}

/* The driver command lies on an inaccessible page. */
TEST_F(dev, get_context_drv_cmd_unmapped)
{
	uint8_t *c = self->m.none - 16;	/* hdr + core fit, driver cmd not */
	struct ib_uverbs_cmd_hdr hdr = {
		.command = IB_USER_VERBS_CMD_GET_CONTEXT,
		.in_words = 24 / 4,	/* hdr + core + 8 bytes of driver cmd */
		.out_words = (CTX_CORE + CTX_DRV) / 4,
	};
	uint64_t resp = (uintptr_t)self->m.rw;

	memcpy(c, &hdr, sizeof(hdr));
	memcpy(c + 8, &resp, sizeof(resp));
	ASSERT_RET(-EFAULT, uv_write(self->fd, c, 24));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(-EINVAL, probe_context(self->fd));
	ASSERT_RET(-EFAULT, uv_write(self->fd, self->m.none, 24));
	{
		void *volatile null = NULL;	/* hide it from -Wnonnull */

		ASSERT_RET(-EFAULT, uv_write(self->fd, null, 24));
	}
	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
}

TEST_F(dev, get_context_twice)
{
	int afd;

	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
	memcpy(&afd, self->m.rw, sizeof(afd));
	ASSERT_EQ(self->nfds + 1, fd_count());
	memset(self->m.rw, GUARD, self->m.pg);
	ASSERT_RET(-EINVAL, get_context(self->fd, self->m.rw,
					CTX_CORE + CTX_DRV, NULL, 0));
	ASSERT_EQ(self->nfds + 1, fd_count()) TH_LOG("second async fd leaked");
	/* The first context is intact. */
	ASSERT_RET(0, probe_context(self->fd));
	ASSERT_LE(0, fcntl(afd, F_GETFD));
	/* And again, after closing the first context's async fd. */
	close(afd);
	ASSERT_RET(-EINVAL, get_context(self->fd, self->m.rw,
					CTX_CORE + CTX_DRV, NULL, 0));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(0, probe_context(self->fd));
}

struct gc_race {
	int fd, ret;
	pthread_barrier_t *bar;
	uint8_t resp[CTX_CORE + CTX_DRV];
};

static void *gc_race_fn(void *arg)
{
	struct gc_race *g = arg;

	pthread_barrier_wait(g->bar);
	g->ret = get_context(g->fd, g->resp, sizeof(g->resp), NULL, 0);
	return NULL;
}

/* Threads race GET_CONTEXT on one fd: exactly one wins. */
TEST_F_TIMEOUT(dev, get_context_race, 120)
{
	enum { THREADS = 6, ROUNDS = 20 };
	struct gc_race g[THREADS];
	pthread_t th[THREADS];
	pthread_barrier_t bar;
	int round, i;

	for (round = 0; round < ROUNDS; round++) {
		int fd = uv_open(), ok = 0, afd = -1;

		ASSERT_LE(0, fd);
		pthread_barrier_init(&bar, NULL, THREADS);
		for (i = 0; i < THREADS; i++) {
			g[i].fd = fd;
			g[i].bar = &bar;
			ASSERT_EQ(0, pthread_create(&th[i], NULL, gc_race_fn,
						    &g[i]));
		}
		for (i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&bar);
		for (i = 0; i < THREADS; i++) {
			if (!g[i].ret) {
				ok++;
				memcpy(&afd, g[i].resp, sizeof(afd));
			} else {
				ASSERT_RET(-EINVAL, g[i].ret);
			}
		}
		ASSERT_EQ(1, ok);
		ASSERT_EQ(self->nfds + 2, fd_count());
		ASSERT_RET(0, probe_context(fd));
		close(afd);
		close(fd);
	}
	ASSERT_EQ(self->nfds, fd_count());
}

/* Malformed legacy headers for GET_CONTEXT: errors from the core. */
TEST_F(dev, get_context_bad_header)
{
	uint8_t *c = self->m.cmd;
	struct ib_uverbs_cmd_hdr hdr = {
		.command = IB_USER_VERBS_CMD_GET_CONTEXT,
		.out_words = (CTX_CORE + CTX_DRV) / 4,
	};
	uint64_t resp = (uintptr_t)self->m.rw;

	memset(c, 0, self->m.pg);
	memcpy(c + 8, &resp, sizeof(resp));

	/* Shorter than a header. */
	ASSERT_RET(-EINVAL, uv_write(self->fd, c, 4));
	ASSERT_RET(-EINVAL, uv_write(self->fd, c, 7));
	/* in_words that does not match the write() count. */
	hdr.in_words = 4;
	memcpy(c, &hdr, sizeof(hdr));
	ASSERT_RET(-EINVAL, uv_write(self->fd, c, 20));
	ASSERT_RET(-EINVAL, uv_write(self->fd, c, 12));
	hdr.in_words = 0;
	memcpy(c, &hdr, sizeof(hdr));
	ASSERT_RET(-EINVAL, uv_write(self->fd, c, 16));
	/* Consistent, but too short for the core command. */
	hdr.in_words = 2;
	memcpy(c, &hdr, sizeof(hdr));
	ASSERT_RET(-ENOSPC, uv_write(self->fd, c, 8));
	hdr.in_words = 3;
	memcpy(c, &hdr, sizeof(hdr));
	ASSERT_RET(-ENOSPC, uv_write(self->fd, c, 12));
	/* out_words too small for the core response. */
	hdr.in_words = 4;
	hdr.out_words = CTX_CORE / 4 - 1;
	memcpy(c, &hdr, sizeof(hdr));
	ASSERT_RET(-ENOSPC, uv_write(self->fd, c, 16));
	hdr.out_words = 0;
	memcpy(c, &hdr, sizeof(hdr));
	ASSERT_RET(-ENOSPC, uv_write(self->fd, c, 16));
	/* Not a multiple of 4 bytes. */
	hdr.out_words = (CTX_CORE + CTX_DRV) / 4;
	hdr.in_words = 4;
	memcpy(c, &hdr, sizeof(hdr));
	ASSERT_RET(-EINVAL, uv_write(self->fd, c, 17));

	ASSERT_TRUE(all_bytes(self->m.rw, self->m.pg, GUARD));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(-EINVAL, probe_context(self->fd));
	ASSERT_RET(0, uv_write(self->fd, c, 16));
	ASSERT_RET(0, probe_context(self->fd));
}

/* ---- commands without a context ----------------------------------------- */

TEST_F(dev, alloc_pd_without_context)
{
	uint32_t r[3];

	memset(r, GUARD, sizeof(r));
	ASSERT_RET(-EINVAL, alloc_pd(self->fd, r, sizeof(r), NULL, 0));
	ASSERT_TRUE(all_bytes(r, sizeof(r), GUARD));
	/* DEALLOC_PD looks the handle up before it needs a context. */
	ASSERT_RET(-ENOENT, dealloc_pd(self->fd, 0));
	ASSERT_EQ(self->nfds, fd_count());
}

TEST_F(dev, ex_query_device_without_context)
{
	struct exq q = { .resp = self->m.rw, .out_words = EXQ_MIN / 8 };

	ASSERT_RET(-EINVAL, ex_query_device(self->fd, &q));
	ASSERT_TRUE(all_bytes(self->m.rw, self->m.pg, GUARD));
}
