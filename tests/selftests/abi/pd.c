// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: ALLOC_PD and DEALLOC_PD. */

/* ---- ALLOC_PD / DEALLOC_PD ---------------------------------------------- */

TEST_F(ctx, alloc_dealloc_pd)
{
	uint8_t *r = self->m.rw;
	struct urdma_alloc_pd_resp drv;
	uint32_t handle;

	ASSERT_RET(0, alloc_pd(self->fd, r, PD_CORE + PD_DRV, NULL, 0));
	memcpy(&handle, r, sizeof(handle));
	memcpy(&drv, r + PD_CORE, sizeof(drv));
	EXPECT_EQ(0, drv.comp_mask);
	EXPECT_GT(MAX_PD, drv.pdn);
	EXPECT_TRUE(all_bytes(r + PD_CORE + PD_DRV,
			      self->m.pg - PD_CORE - PD_DRV, GUARD));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(0, dealloc_pd(self->fd, handle));
}

/*
 * The leak check of a shared device (URDMA_ABI_SHARED) counts this
 * process's PDs in the device's resource tracking: it sees every one.
 */
TEST_F(ctx, own_pds_seen)
{
	uint32_t h[3];
	int i, n = own_pds();

	if (n < 0)
		SKIP(return, "no rdma tool to list %s's PDs", want_ibdev());
	ASSERT_EQ(0, n);
	for (i = 0; i < 3; i++)
		ASSERT_RET(0, do_alloc_pd(self->fd, &h[i], NULL));
	ASSERT_EQ(3, own_pds());
	ASSERT_RET(0, dealloc_pd(self->fd, h[1]));
	ASSERT_EQ(2, own_pds());
	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;
	ASSERT_EQ(0, own_pds());
}

/*
 * The fixtures' object counts come from netlink, not from the rdma tool:
 * they must be there (or every ASSERT_LIVE would be silent), agree with
 * what `rdma resource show` prints, and follow this context's PDs.
 */
TEST_F(ctx, res_counts_read)
{
	struct res_counts a, b;
	uint32_t h[3];
	char *json, *p;
	int i;

	ASSERT_RET(0, read_counts(&a));
	ASSERT_LE(0, a.srq);
	for (i = 0; i < 3; i++)
		ASSERT_RET(0, do_alloc_pd(self->fd, &h[i], NULL));
	ASSERT_RET(0, read_counts(&b));
	if (abi_shared()) {
		ASSERT_LE(3, b.pd);
	} else {
		ASSERT_EQ(a.pd + 3, b.pd);
		ASSERT_EQ(a.cq, b.cq);
		ASSERT_EQ(a.qp, b.qp);
		if (!rdma_res_json(want_ibdev(), &json)) {
			p = strstr(json, "\"pd\":");
			ASSERT_NE(NULL, p) TH_LOG("%s", json);
			EXPECT_EQ(b.pd, strtol(p + 5, NULL, 10)) TH_LOG("%s", json);
			free(json);
		}
	}
	for (i = 0; i < 3; i++)
		ASSERT_RET(0, dealloc_pd(self->fd, h[i]));
	ASSERT_RET(0, read_counts(&b));
	if (!abi_shared())
		ASSERT_EQ(a.pd, b.pd);
}

TEST_F(ctx, alloc_pd_unique)
{
	enum { N = 256 };
	uint32_t h[N], pdn[N];
	int i, j;

	for (i = 0; i < N; i++)
		ASSERT_RET(0, do_alloc_pd(self->fd, &h[i], &pdn[i]));
	for (i = 0; i < N; i++) {
		ASSERT_GT(MAX_PD, pdn[i]);
		for (j = 0; j < i; j++) {
			ASSERT_NE(h[i], h[j]);
			ASSERT_NE(pdn[i], pdn[j]);
		}
	}
	for (i = 0; i < N; i++)
		ASSERT_RET(0, dealloc_pd(self->fd, h[i]));
}

/* Older providers: no driver response, or a part of it. */
TEST_F(ctx, alloc_pd_resp_truncated)
{
	static const size_t drv_lens[] = { 0, 4 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(drv_lens); i++) {
		size_t n = drv_lens[i];
		uint8_t *r = self->m.rw;
		uint32_t handle;

		memset(r, GUARD, self->m.pg);
		ASSERT_RET(0, alloc_pd(self->fd, r, PD_CORE + n, NULL, 0));
		memcpy(&handle, r, sizeof(handle));
		if (n) {
			EXPECT_TRUE(all_bytes(r + PD_CORE, n, 0));
		}
		EXPECT_TRUE(all_bytes(r + PD_CORE + n,
				      self->m.pg - PD_CORE - n, GUARD))
			TH_LOG("written past a %zu-byte driver response", n);
		ASSERT_RET(0, dealloc_pd(self->fd, handle));
	}
}

/* ALLOC_PD has no driver command; a zero one (newer provider) is fine. */
TEST_F(ctx, alloc_pd_drv_cmd_zero)
{
	uint8_t cmd[64] = {};
	uint32_t r[3];

	ASSERT_RET(0, alloc_pd(self->fd, r, sizeof(r), cmd, sizeof(cmd)));
	ASSERT_RET(0, dealloc_pd(self->fd, r[0]));
}

/*
 * ...but a non-zero one asks for something this kernel does not know:
 * docs/ABI.md says EOPNOTSUPP.
 */
TEST_F(ctx, alloc_pd_drv_cmd_nonzero)
{
	uint8_t cmd[8] = { 0, 0, 0, 0, 0, 0, 0, 1 };
	uint32_t r[3] = { ~0u, ~0u, ~0u };
	int ret = alloc_pd(self->fd, r, sizeof(r), cmd, sizeof(cmd));

	if (!ret)
		dealloc_pd(self->fd, r[0]);
	ASSERT_RET(-EOPNOTSUPP, ret);
}

/* Response into read-only memory: EFAULT, and the PD does not leak. */
TEST_F_TIMEOUT(ctx, alloc_pd_resp_efault_no_leak, 400)
{
	enum { REPS = 50 };
	uint8_t *straddle = self->m.none - PD_CORE;	/* core ok, drv not */
	int i;

	for (i = 0; i < REPS; i++) {
		/* Whole response read-only: the driver's copy fails. */
		ASSERT_RET(-EFAULT, alloc_pd(self->fd, self->m.ro,
					     PD_CORE + PD_DRV, NULL, 0));
		/* Core response only, read-only: the core's copy fails
		 * after the PD was committed, so the core must undo it. */
		ASSERT_RET(-EFAULT, alloc_pd(self->fd, self->m.ro, PD_CORE,
					     NULL, 0));
		/* Core response fine, driver response unmapped. */
		ASSERT_RET(-EFAULT, alloc_pd(self->fd, straddle,
					     PD_CORE + PD_DRV, NULL, 0));
		/* Unmapped and kernel addresses. */
		ASSERT_RET(-EFAULT, alloc_pd(self->fd, self->m.none,
					     PD_CORE + PD_DRV, NULL, 0));
		ASSERT_RET(-EFAULT, alloc_pd(self->fd,
					     (void *)0xffff888000000000ull,
					     PD_CORE, NULL, 0));
	}
	ASSERT_TRUE(all_bytes(self->m.ro, self->m.pg, RO_FILL));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_PD_SPACE_INTACT();
}

/* max_pd is enforced per device; a failed ALLOC_PD costs nothing. */
TEST_F_TIMEOUT(ctx, pd_limit, 400)
{
	static uint32_t h[MAX_PD + 1];
	uint32_t extra;
	int n = 0, ret = 0, i;

	while (n <= MAX_PD) {
		ret = do_alloc_pd(self->fd, &h[n], NULL);
		if (ret)
			break;
		n++;
	}
	ASSERT_EQ(PD_ROOM, n) TH_LOG("max_pd %d, the kernel's %ld", MAX_PD,
				     kernel_pds);
	ASSERT_RET(-ENOMEM, ret);
	for (i = 0; i < 100; i++)
		ASSERT_RET(-ENOMEM, do_alloc_pd(self->fd, &extra, NULL));
	/* A second context shares the device limit. */
	{
		int fd2, afd2;

		ASSERT_RET(0, ctx_open(&fd2, &afd2, NULL));
		ASSERT_RET(-ENOMEM, do_alloc_pd(fd2, &extra, NULL));
		close(afd2);
		close(fd2);
	}
	ASSERT_RET(0, dealloc_pd(self->fd, h[n / 2]));
	ASSERT_RET(0, do_alloc_pd(self->fd, &h[n / 2], NULL));
	ASSERT_RET(-ENOMEM, do_alloc_pd(self->fd, &extra, NULL));
	for (i = 0; i < n; i++)
		ASSERT_RET(0, dealloc_pd(self->fd, h[i]));
	ASSERT_PD_SPACE_INTACT();
}

TEST_F(ctx, dealloc_pd_bogus)
{
	static const uint32_t bogus[] = { 0, 1, 12345, 0x7fffffff, ~0u };
	uint32_t h;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bogus); i++)
		ASSERT_RETM(-ENOENT, dealloc_pd(self->fd, bogus[i]),
			    "(handle %u)", bogus[i]);
	ASSERT_RET(0, do_alloc_pd(self->fd, &h, NULL));
	ASSERT_RET(-ENOENT, dealloc_pd(self->fd, h + 1));
	ASSERT_RET(-ENOENT, dealloc_pd(self->fd, h + 1000));
	ASSERT_RET(0, dealloc_pd(self->fd, h));
}

TEST_F(ctx, dealloc_pd_twice)
{
	uint32_t h, h2;

	ASSERT_RET(0, do_alloc_pd(self->fd, &h, NULL));
	ASSERT_RET(0, dealloc_pd(self->fd, h));
	ASSERT_RET(-ENOENT, dealloc_pd(self->fd, h));
	/* A new PD still works and is not confused with the dead one. */
	ASSERT_RET(0, do_alloc_pd(self->fd, &h2, NULL));
	ASSERT_RET(0, dealloc_pd(self->fd, h2));
	ASSERT_RET(-ENOENT, dealloc_pd(self->fd, h2));
}

/* Handles are per file: another context cannot free our PD. */
TEST_F(ctx, dealloc_pd_other_context)
{
	int fd2, afd2;
	uint32_t h;

	ASSERT_RET(0, do_alloc_pd(self->fd, &h, NULL));
	ASSERT_RET(0, ctx_open(&fd2, &afd2, NULL));
	ASSERT_RET(-ENOENT, dealloc_pd(fd2, h));
	close(afd2);
	close(fd2);
	ASSERT_RET(0, dealloc_pd(self->fd, h));
}

/* DEALLOC_PD has no udata: a longer command needs a zero tail (core). */
TEST_F(ctx, dealloc_pd_tail)
{
	uint32_t c[2];
	uint32_t h;

	ASSERT_RET(0, do_alloc_pd(self->fd, &h, NULL));
	c[0] = h;
	c[1] = 1;
	ASSERT_RET(-EOPNOTSUPP, uv_cmd(self->fd, IB_USER_VERBS_CMD_DEALLOC_PD,
				       c, sizeof(c), NULL, 0, 0));
	c[1] = 0;
	ASSERT_RET(0, uv_cmd(self->fd, IB_USER_VERBS_CMD_DEALLOC_PD, c,
			     sizeof(c), NULL, 0, 0));
	ASSERT_RET(-ENOENT, dealloc_pd(self->fd, h));
}

struct dp_race {
	int fd, ret;
	uint32_t h;
	pthread_barrier_t *bar;
};

static void *dp_race_fn(void *arg)
{
	struct dp_race *d = arg;

	pthread_barrier_wait(d->bar);
	d->ret = dealloc_pd(d->fd, d->h);
	return NULL;
}

/* Threads race DEALLOC_PD of one handle: exactly one frees it. */
TEST_F_TIMEOUT(ctx, dealloc_pd_race, 120)
{
	enum { THREADS = 4, ROUNDS = 50 };
	struct dp_race d[THREADS];
	pthread_t th[THREADS];
	pthread_barrier_t bar;
	int round, i;

	for (round = 0; round < ROUNDS; round++) {
		uint32_t h;
		int ok = 0;

		ASSERT_RET(0, do_alloc_pd(self->fd, &h, NULL));
		pthread_barrier_init(&bar, NULL, THREADS);
		for (i = 0; i < THREADS; i++) {
			d[i].fd = self->fd;
			d[i].h = h;
			d[i].bar = &bar;
			ASSERT_EQ(0, pthread_create(&th[i], NULL, dp_race_fn,
						    &d[i]));
		}
		for (i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&bar);
		for (i = 0; i < THREADS; i++) {
			if (!d[i].ret) {
				ok++;
				continue;
			}
			ASSERT_TRUE(d[i].ret == -ENOENT || d[i].ret == -EBUSY)
				TH_LOG("loser got %s", ename(d[i].ret));
		}
		ASSERT_EQ(1, ok);
	}
}
