// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: garbage commands and the life cycle of a context. */

/* ---- garbage ------------------------------------------------------------ */

TEST_F(dev, unknown_commands)
{
	static const struct { uint32_t cmd; int err; } cases[] = {
		{ 0x7f, -EOPNOTSUPP },		/* past the write table */
		{ 0xff, -EOPNOTSUPP },
		{ IB_USER_VERBS_CMD_REG_SMR, -EOPNOTSUPP },	/* no method */
		{ IB_USER_VERBS_CMD_QUERY_MR, -EOPNOTSUPP },
		{ 0x100, -EINVAL },		/* bits outside the mask */
		{ 0x100 | IB_USER_VERBS_CMD_GET_CONTEXT, -EINVAL },
		{ 0x40000000, -EINVAL },
		{ ~0u, -EINVAL },
		{ EX_CMD(0x7f), -EOPNOTSUPP },
		{ EX_CMD(0xff), -EOPNOTSUPP },
	};
	uint8_t *c = self->m.cmd;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ib_uverbs_cmd_hdr hdr = {
			.command = cases[i].cmd, .in_words = 8, .out_words = 8,
		};
		uint64_t resp = (uintptr_t)self->m.rw;

		memset(c, 0, 64);
		memcpy(c, &hdr, sizeof(hdr));
		memcpy(c + 8, &resp, sizeof(resp));
		memcpy(c + 16, &resp, sizeof(resp));	/* ex response */
		ASSERT_RETM(cases[i].err, uv_write(self->fd, c, 32),
			    "(command 0x%x)", cases[i].cmd);
	}
	ASSERT_TRUE(all_bytes(self->m.rw, self->m.pg, GUARD));
	ASSERT_EQ(self->nfds, fd_count());
	ASSERT_RET(0, get_context(self->fd, self->m.rw, CTX_CORE + CTX_DRV,
				  NULL, 0));
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ib_uverbs_cmd_hdr hdr = {
			.command = cases[i].cmd, .in_words = 8, .out_words = 8,
		};
		uint64_t resp = (uintptr_t)self->m.rw;

		memcpy(c, &hdr, sizeof(hdr));
		memcpy(c + 8, &resp, sizeof(resp));
		ASSERT_RETM(cases[i].err, uv_write(self->fd, c, 32),
			    "(command 0x%x, with a context)", cases[i].cmd);
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned int rndn(unsigned int n)
{
	return rnd() % n;
}

/* A response address: valid, partly valid, or bad; never other memory. */
static uint64_t fuzz_ptr(const struct maps *m)
{
	switch (rndn(10)) {
	case 0: case 1: case 2:
		return (uintptr_t)m->rw;
	case 3:
		return (uintptr_t)(m->rw + m->pg - 4 * (1 + rndn(16)));
	case 4:
		return 0;
	case 5:
		return (uintptr_t)m->none;
	case 6:
		return (uintptr_t)m->ro;
	case 7:
		return 0xffffffff81000000ull;
	case 8:
		return 0x8000000000000000ull | rnd();
	default:
		return (uintptr_t)m->cmd;	/* overwrite the command */
	}
}

static const uint32_t fuzz_cmds[] = {
	IB_USER_VERBS_CMD_GET_CONTEXT, IB_USER_VERBS_CMD_GET_CONTEXT,
	IB_USER_VERBS_CMD_GET_CONTEXT, IB_USER_VERBS_CMD_GET_CONTEXT,
	IB_USER_VERBS_CMD_ALLOC_PD, IB_USER_VERBS_CMD_ALLOC_PD,
	IB_USER_VERBS_CMD_ALLOC_PD, IB_USER_VERBS_CMD_ALLOC_PD,
	IB_USER_VERBS_CMD_DEALLOC_PD, IB_USER_VERBS_CMD_DEALLOC_PD,
	IB_USER_VERBS_CMD_QUERY_DEVICE, IB_USER_VERBS_CMD_QUERY_PORT,
	EX_CMD(IB_USER_VERBS_EX_CMD_QUERY_DEVICE),
	EX_CMD(IB_USER_VERBS_EX_CMD_QUERY_DEVICE),
	IB_USER_VERBS_CMD_REG_SMR, 0x7f, EX_CMD(0x7f),
	0x100 | IB_USER_VERBS_CMD_ALLOC_PD,
};

#define FUZZ_ITERS	20000
#define FUZZ_SECONDS	150	/* URDMA_FUZZ_SECONDS overrides */

/* The fuzzed uverbs fd sits at FUZZ_FD; async fds land between base and it. */
static int FUZZ_FD = 1000;

static int fuzz_reopen(int base)
{
	int fd;

	close_range(base, FUZZ_FD, 0);	/* async fds and the old uverbs fd */
	fd = uv_open();
	if (fd < 0)
		return fd;
	if (dup2(fd, FUZZ_FD) < 0)
		return -errno;
	close(fd);
	return FUZZ_FD;
}

/*
 * Deterministic fuzz of GET_CONTEXT / ALLOC_PD / DEALLOC_PD (and a few
 * neighbours): random lengths, header words, response addresses and driver
 * bytes.  Every call must succeed or fail with an ordinary errno; afterwards
 * a fresh context works and no PD is left in the device.
 */
TEST_F_TIMEOUT(dev, fuzz, 600)
{
	static const int allowed[] = {
		EINVAL, ENOSPC, EOPNOTSUPP, EFAULT, ENOENT, ENOMEM,
	};
	int hist[ARRAY_SIZE(allowed) + 1] = {}, odd = 0, base, fd, it, nfds;
	const struct maps *m = &self->m;
	struct timespec t0, t;
	long budget = FUZZ_SECONDS;
	unsigned int i;

	base = 0;
	{
		/* The first descriptor above everything open now. */
		DIR *d = opendir("/proc/self/fd");
		struct dirent *e;

		ASSERT_NE(NULL, d);
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && atoi(e->d_name) >= base)
				base = atoi(e->d_name) + 1;
		closedir(d);
	}
	/* Plug holes below it, or async fds would land there. */
	for (i = 0; i < (unsigned int)base; i++)
		if (fcntl(i, F_GETFD) < 0)
			ASSERT_EQ((int)i, open("/dev/null", O_RDONLY));
	nfds = fd_count();
	{
		struct rlimit rl;

		ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
		if (rl.rlim_cur - 1 < (rlim_t)FUZZ_FD)
			FUZZ_FD = rl.rlim_cur - 1;
	}
	ASSERT_GT(FUZZ_FD, base + 64);
	fd = fuzz_reopen(base);
	ASSERT_EQ(FUZZ_FD, fd);
	if (getenv("URDMA_FUZZ_SECONDS"))
		budget = atol(getenv("URDMA_FUZZ_SECONDS"));
	clock_gettime(CLOCK_MONOTONIC, &t0);

	for (it = 0; it < FUZZ_ITERS; it++) {
		uint32_t cmd = fuzz_cmds[rndn(ARRAY_SIZE(fuzz_cmds))];
		bool ex = cmd & IB_USER_VERBS_CMD_FLAG_EXTENDED;
		struct ib_uverbs_cmd_hdr hdr;
		uint8_t *c = m->cmd;
		size_t len, core, j;
		ssize_t r;

		if (it % 200 == 199) {
			fd = fuzz_reopen(base);
			ASSERT_EQ(FUZZ_FD, fd) TH_LOG("reopen: %s", ename(fd));
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec > budget)
				break;
		}
		for (j = 0; j < 512; j += 8) {
			uint64_t v = rnd();

			memcpy(c + j, &v, 8);
		}
		core = ex ? 8 + 16 + 8 : 8 + 8;
		if (rndn(3))
			len = core + (ex ? 8 : 4) * rndn(12);
		else
			len = rndn(320);
		if (rndn(2))	/* all-zero driver / tail bytes */
			memset(c + core, 0, len > core ? len - core : 0);
		hdr.command = rndn(16) ? cmd : (uint32_t)rnd();
		if (ex) {
			struct ib_uverbs_ex_cmd_hdr exh = {
				.response = fuzz_ptr(m),
				.provider_in_words = len > core ?
						     (len - core) / 8 : 0,
				.provider_out_words = rndn(6),
				.cmd_hdr_reserved = rndn(16) ? 0 : rnd(),
			};

			hdr.in_words = rndn(8) ? 1 : rndn(4);
			hdr.out_words = rndn(8) ? EXQ_MIN / 8 + rndn(16) :
						  rndn(64);
			if (!rndn(32))
				exh.provider_in_words = rnd();
			if (len >= 24)
				memcpy(c + 8, &exh, sizeof(exh));
			if (len >= 32 && rndn(4))
				memset(c + 24, 0, 8);	/* valid core cmd */
		} else {
			uint64_t resp = fuzz_ptr(m);

			hdr.in_words = rndn(8) ? len / 4 : rnd();
			hdr.out_words = rndn(8) ? rndn(16) : rnd();
			if (cmd == IB_USER_VERBS_CMD_DEALLOC_PD) {
				uint32_t h = rndn(4) ? rndn(64) : rnd();

				if (len >= 12)
					memcpy(c + 8, &h, 4);
			} else if (len >= 16) {
				memcpy(c + 8, &resp, 8);
			}
			if (cmd == IB_USER_VERBS_CMD_GET_CONTEXT &&
			    len >= 24 && rndn(2))
				memset(c + 16, 0, 8);	/* valid drv cmd */
		}
		if (len >= sizeof(hdr))
			memcpy(c, &hdr, sizeof(hdr));

		r = write(fd, c, len);
		if (r == (ssize_t)len) {
			hist[ARRAY_SIZE(allowed)]++;
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(allowed); i++)
			if (r < 0 && errno == allowed[i])
				break;
		if (i < ARRAY_SIZE(allowed)) {
			hist[i]++;
		} else if (odd++ < 10) {
			TH_LOG("iteration %d: command 0x%x len %zu: write() = %zd (%s)",
			       it, hdr.command, len, r,
			       r < 0 ? strerrorname_np(errno) : "short");
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	TH_LOG("%d iterations in %ld s: %d ok, EINVAL %d, ENOSPC %d, EOPNOTSUPP %d, EFAULT %d, ENOENT %d, ENOMEM %d, other %d",
	       it, (long)(t.tv_sec - t0.tv_sec), hist[ARRAY_SIZE(allowed)],
	       hist[0], hist[1], hist[2], hist[3], hist[4], hist[5], odd);
	EXPECT_EQ(0, odd);
	EXPECT_LT(0, hist[ARRAY_SIZE(allowed)]);

	close_range(base, FUZZ_FD, 0);
	ASSERT_EQ(nfds, fd_count());
	/* A fresh context works, and nothing is left in the device. */
	ASSERT_RET(0, ctx_open(&fd, &base, NULL));
	ASSERT_RET(0, probe_context(fd));
	close(base);
	close(fd);
	ASSERT_PD_SPACE_INTACT();
}

/* ---- life cycle --------------------------------------------------------- */

TEST_F_TIMEOUT(ctx, close_with_live_pds, 400)
{
	uint32_t h;
	int i;

	for (i = 0; i < reps(1000); i++)
		ASSERT_RET(0, do_alloc_pd(self->fd, &h, NULL));
	/* Close the uverbs fd first; the async fd keeps the file alive. */
	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;
	ASSERT_PD_SPACE_INTACT();
	ASSERT_EQ(0, close(self->async_fd));
	self->async_fd = -1;
	/* Reopen works. */
	ASSERT_RET(0, ctx_open(&self->fd, &self->async_fd, NULL));
	ASSERT_RET(0, probe_context(self->fd));
}

TEST_F(ctx, close_async_fd_first)
{
	uint32_t h;

	ASSERT_EQ(0, close(self->async_fd));
	self->async_fd = -1;
	ASSERT_RET(0, do_alloc_pd(self->fd, &h, NULL));
	ASSERT_RET(0, dealloc_pd(self->fd, h));
	ASSERT_RET(0, do_alloc_pd(self->fd, &h, NULL));
	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;
}

TEST_F_TIMEOUT(dev, open_close_cycles, 600)
{
	int i;

	close(self->fd);
	self->fd = -1;
	for (i = 0; i < reps(1000); i++) {
		int fd, afd;
		uint32_t h;

		ASSERT_RETM(0, ctx_open(&fd, &afd, NULL), "(cycle %d)", i);
		if (i % 2)
			ASSERT_RET(0, do_alloc_pd(fd, &h, NULL));
		if (i % 3) {
			close(afd);
			close(fd);
		} else {
			close(fd);
			close(afd);
		}
	}
	ASSERT_EQ(self->nfds - 1, fd_count());
	ASSERT_PD_SPACE_INTACT();
}

/* A child fills the device with PDs and is SIGKILLed. */
TEST_F_TIMEOUT(dev, sigkill_child_with_pds, 600)
{
	int p[2], n = -1, status, fd, afd;
	uint32_t h;
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int cfd, cafd, k = 0;

		if (!ctx_open(&cfd, &cafd, NULL))
			while (k < MAX_PD && !do_alloc_pd(cfd, &h, NULL))
				k++;
		if (write(p[1], &k, sizeof(k)) != sizeof(k))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ASSERT_EQ(sizeof(n), read(p[0], &n, sizeof(n)));
	close(p[0]);
	EXPECT_EQ(PD_ROOM, n);
	/* The device is full while the child lives. */
	ASSERT_RET(0, ctx_open(&fd, &afd, NULL));
	EXPECT_EQ(-ENOMEM, do_alloc_pd(fd, &h, NULL));
	close(afd);
	close(fd);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ASSERT_PD_SPACE_INTACT();
}

/* Children busy allocating and freeing PDs are SIGKILLed mid-flight. */
TEST_F_TIMEOUT(dev, sigkill_busy_children, 600)
{
	int round, status;

	for (round = 0; round < reps(8); round++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			static uint32_t h[512];

			for (;;) {
				int cfd, cafd, k;

				if (ctx_open(&cfd, &cafd, NULL))
					_exit(1);
				for (k = 0; k < 512; k++)
					do_alloc_pd(cfd, &h[k], NULL);
				for (k = 0; k < 512; k += 2)
					dealloc_pd(cfd, h[k]);
				close(cfd);
				close(cafd);
			}
		}
		usleep(50000 + 40000 * round);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("child exited %d",
							WEXITSTATUS(status));
	}
	ASSERT_PD_SPACE_INTACT();
}
