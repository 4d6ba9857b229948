// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma_abi_test: attack urdma's uverbs ABI through the raw legacy write()
 * interface of /dev/infiniband/uverbsN, with valid and hostile input.
 *
 * Built on tools/testing/selftests/kselftest_harness.h from linux-source-6.12
 * (see build.sh).  Every test runs in its own process; tests that need the
 * device's whole PD space (max_pd, enforced by urdma per device) assume that
 * nothing else uses urdma0 while they run.
 *
 * The write ABI, as drivers/infiniband/core/uverbs_main.c implements it:
 *  - legacy command: [cmd_hdr][core cmd][driver cmd]; in_words counts all of
 *    it in 4-byte words and must equal the write() count.  The driver command
 *    is what follows the core struct (req_size).  The core response is
 *    written at cmd.response, the driver response right after it, at
 *    response + resp_size; out_words covers both, in 4-byte words.
 *  - extended command: [cmd_hdr][ex_cmd_hdr][core cmd][driver cmd], with
 *    in_words/out_words (core) and provider_in/out_words (driver) in 8-byte
 *    words, and the response address in ex_cmd_hdr.response.
 *
 * Device: the uverbs node whose ibdev is $URDMA_DEV (default urdma0).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/urdma-abi.h>

#include "kselftest_harness.h"

/* The limits urdma documents (kernel/urdma.h, docs/ABI.md). */
#define MAX_PD		16384
#define MAX_QP_WR	16384
#define MAX_SGE		16
#define MAX_INLINE	256
#define MAX_CQE		65536
#define MAX_SRQ_WR	16384

#define GUARD		0xa5	/* bytes the kernel must not touch */
#define RO_FILL		0x5a

/* Core response sizes (resp_size in the core's method table). */
#define CTX_CORE	sizeof(struct ib_uverbs_get_context_resp)	/* 8 */
#define CTX_DRV		sizeof(struct urdma_alloc_ucontext_resp)	/* 32 */
#define PD_CORE		sizeof(struct ib_uverbs_alloc_pd_resp)		/* 4 */
#define PD_DRV		sizeof(struct urdma_alloc_pd_resp)		/* 8 */
/* offsetofend(ib_uverbs_ex_query_device_resp, response_length) */
#define EXQ_MIN		(offsetof(struct ib_uverbs_ex_query_device_resp, \
				  response_length) + sizeof(__u32))
#define EX_CMD(c)	(IB_USER_VERBS_CMD_FLAG_EXTENDED | (c))

_Static_assert(CTX_CORE == 8, "get_context resp");
_Static_assert(PD_CORE == 4, "alloc_pd resp");
_Static_assert(EXQ_MIN % 8 == 0, "ex_query_device min resp");

/* ---- helpers ------------------------------------------------------------ */

static char uverbs_dir[PATH_MAX];	/* /sys/class/infiniband_verbs/uverbsN */
static char uverbs_dev[PATH_MAX];	/* /dev/infiniband/uverbsN */

static const char *want_ibdev(void)
{
	const char *d = getenv("URDMA_DEV");

	return d && *d ? d : "urdma0";
}

static int find_uverbs(void)
{
	const char *want = want_ibdev();
	struct dirent *e;
	int ret = -ENODEV;
	DIR *d;

	d = opendir("/sys/class/infiniband_verbs");
	if (!d)
		return -ENODEV;
	while ((e = readdir(d))) {
		char p[PATH_MAX], name[128] = "";
		FILE *f;

		if (strncmp(e->d_name, "uverbs", 6))
			continue;
		snprintf(p, sizeof(p), "/sys/class/infiniband_verbs/%s/ibdev",
			 e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = 0;
		fclose(f);
		if (strcmp(name, want))
			continue;
		snprintf(uverbs_dir, sizeof(uverbs_dir),
			 "/sys/class/infiniband_verbs/%s", e->d_name);
		snprintf(uverbs_dev, sizeof(uverbs_dev), "/dev/infiniband/%s",
			 e->d_name);
		ret = 0;
		break;
	}
	closedir(d);
	return ret;
}

static const char *ename(int neg)
{
	const char *s;

	if (neg >= 0)
		return neg ? "positive" : "0";
	s = strerrorname_np(-neg);
	return s ? s : "unknown errno";
}

/*
 * ASSERT that an expression returning 0 / -errno gives exactly @want;
 * ASSERT_RETM adds context to the failure message.
 */
#define ASSERT_RETM(want, expr, fmt, ...) do {				\
	int __r = (expr);						\
	ASSERT_EQ((int)(want), __r)					\
		TH_LOG("%s: got %s (%d), expected %s " fmt, #expr,	\
		       ename(__r), __r, ename(want), ##__VA_ARGS__);	\
} while (0)
#define ASSERT_RET(want, expr) ASSERT_RETM(want, expr, "")

static int uv_open(void)
{
	int fd = open(uverbs_dev, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* write() a raw command: 0 if the kernel took all of it, else -errno. */
static int uv_write(int fd, const void *buf, size_t len)
{
	ssize_t r = write(fd, buf, len);

	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -EPROTO;
}

/*
 * A legacy command: [hdr][core][drv].  in_words is the whole length and
 * out_words is out_bytes, both in 4-byte words.  -E2BIG is a test bug.
 */
static int uv_cmd(int fd, uint32_t command, const void *core, size_t core_len,
		  const void *drv, size_t drv_len, size_t out_bytes)
{
	uint64_t buf[2048];
	struct ib_uverbs_cmd_hdr hdr;
	size_t len = sizeof(hdr) + core_len + drv_len;

	if (len > sizeof(buf) || len % 4 || out_bytes % 4 ||
	    len / 4 > 0xffff || out_bytes / 4 > 0xffff)
		return -E2BIG;
	hdr.command = command;
	hdr.in_words = len / 4;
	hdr.out_words = out_bytes / 4;
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy((char *)buf + sizeof(hdr), core, core_len);
	if (drv_len)
		memcpy((char *)buf + sizeof(hdr) + core_len, drv, drv_len);
	return uv_write(fd, buf, len);
}

static int get_context(int fd, void *resp, size_t out_bytes, const void *drv,
		       size_t drv_len)
{
	struct ib_uverbs_get_context c = { .response = (uintptr_t)resp };

	return uv_cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof(c), drv,
		      drv_len, out_bytes);
}

static int alloc_pd(int fd, void *resp, size_t out_bytes, const void *drv,
		    size_t drv_len)
{
	struct ib_uverbs_alloc_pd c = { .response = (uintptr_t)resp };

	return uv_cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof(c), drv,
		      drv_len, out_bytes);
}

static int dealloc_pd(int fd, uint32_t handle)
{
	struct ib_uverbs_dealloc_pd c = { .pd_handle = handle };

	return uv_cmd(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &c, sizeof(c), NULL, 0,
		      0);
}

/* ALLOC_PD with the full core + driver response. */
static int do_alloc_pd(int fd, uint32_t *handle, uint32_t *pdn)
{
	uint32_t r[3] = { ~0u, ~0u, ~0u };
	int ret = alloc_pd(fd, r, sizeof(r), NULL, 0);

	if (!ret) {
		*handle = r[0];
		if (pdn)
			*pdn = r[2];
	}
	return ret;
}

/* open + GET_CONTEXT with the full response; 0 or -errno. */
static int ctx_open(int *fd, int *async_fd,
		    struct urdma_alloc_ucontext_resp *drv)
{
	uint8_t resp[CTX_CORE + CTX_DRV];
	struct ib_uverbs_get_context_resp core;
	int ret;

	*fd = uv_open();
	if (*fd < 0)
		return *fd;
	ret = get_context(*fd, resp, sizeof(resp), NULL, 0);
	if (ret) {
		close(*fd);
		*fd = -1;
		return ret;
	}
	memcpy(&core, resp, sizeof(core));
	*async_fd = core.async_fd;
	if (drv)
		memcpy(drv, resp + CTX_CORE, sizeof(*drv));
	return 0;
}

struct exq {
	uint32_t comp_mask, reserved;	/* core command */
	void *resp;
	unsigned int out_words;		/* core, 8-byte words */
	const void *drv;
	unsigned int drv_in_words, drv_out_words;
	uint32_t hdr_reserved;
	int in_words_delta;		/* lie in hdr.in_words */
	const void *core_tail;		/* extra core command words */
	unsigned int core_tail_words;
};

static int ex_query_device(int fd, const struct exq *q)
{
	struct ib_uverbs_ex_query_device cmd = {
		.comp_mask = q->comp_mask, .reserved = q->reserved,
	};
	struct ib_uverbs_ex_cmd_hdr ex = {
		.response = (uintptr_t)q->resp,
		.provider_in_words = q->drv_in_words,
		.provider_out_words = q->drv_out_words,
		.cmd_hdr_reserved = q->hdr_reserved,
	};
	struct ib_uverbs_cmd_hdr hdr = {
		.command = EX_CMD(IB_USER_VERBS_EX_CMD_QUERY_DEVICE),
		.in_words = sizeof(cmd) / 8 + q->core_tail_words +
			    q->in_words_delta,
		.out_words = q->out_words,
	};
	uint64_t buf[512];
	char *p = (char *)buf;
	size_t tail = q->core_tail_words * 8, drv = q->drv_in_words * 8;

	if (sizeof(hdr) + sizeof(ex) + sizeof(cmd) + tail + drv > sizeof(buf))
		return -E2BIG;
	memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	memcpy(p, &ex, sizeof(ex));
	p += sizeof(ex);
	memcpy(p, &cmd, sizeof(cmd));
	p += sizeof(cmd);
	if (tail)
		memcpy(p, q->core_tail, tail);
	p += tail;
	if (drv)
		memcpy(p, q->drv, drv);
	p += drv;
	return uv_write(fd, buf, p - (char *)buf);
}

/* Open file descriptors of this process. */
static int fd_count(void)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the DIR's own descriptor */
}

/* 0 if @fd has a ucontext (ALLOC_PD works), -EINVAL if it has none. */
static int probe_context(int fd)
{
	uint32_t h;
	int ret = do_alloc_pd(fd, &h, NULL);

	if (!ret)
		ret = dealloc_pd(fd, h);
	return ret;
}

/*
 * How many PDs the device still gives to a fresh context, trying one more
 * than max_pd.  *err is the error of the first failing ALLOC_PD (0: none).
 */
static int pd_capacity(int *err)
{
	int fd, afd, n = 0, ret;
	uint32_t h;

	ret = ctx_open(&fd, &afd, NULL);
	if (ret) {
		*err = ret;
		return -1;
	}
	while (n <= MAX_PD) {
		ret = do_alloc_pd(fd, &h, NULL);
		if (ret)
			break;
		n++;
	}
	*err = ret;
	close(afd);
	close(fd);
	return n;
}

/* The device has no PD left over from anything: exactly max_pd fit. */
#define ASSERT_PD_SPACE_INTACT() do {					\
	int __err, __n = pd_capacity(&__err);				\
	ASSERT_EQ(MAX_PD, __n)						\
		TH_LOG("a fresh context got %d PDs (first error %s), "	\
		       "expected max_pd %d: PDs leaked", __n,		\
		       ename(__err), MAX_PD);				\
	ASSERT_RET(-ENOMEM, __err);					\
} while (0)

static bool all_bytes(const void *p, size_t n, uint8_t v)
{
	const uint8_t *b = p;

	while (n--)
		if (*b++ != v)
			return false;
	return true;
}

/*
 * Test memory: [rw][none][ro][none][cmd][none].  rw and cmd are followed by
 * an inaccessible page, so a response that straddles the end of rw faults,
 * and whatever the kernel writes through a pointer into rw or cmd stays in
 * that page.
 */
struct maps {
	uint8_t *base, *rw, *none, *ro, *cmd;
	size_t pg;
};

static int maps_init(struct maps *m)
{
	m->pg = sysconf(_SC_PAGESIZE);
	m->base = mmap(NULL, 6 * m->pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->base == MAP_FAILED)
		return -errno;
	m->rw = m->base;
	m->none = m->base + m->pg;
	m->ro = m->base + 2 * m->pg;
	m->cmd = m->base + 4 * m->pg;
	memset(m->rw, GUARD, m->pg);
	memset(m->ro, RO_FILL, m->pg);
	if (mprotect(m->none, m->pg, PROT_NONE) ||
	    mprotect(m->ro, m->pg, PROT_READ) ||
	    mprotect(m->base + 3 * m->pg, m->pg, PROT_NONE) ||
	    mprotect(m->base + 5 * m->pg, m->pg, PROT_NONE))
		return -errno;
	return 0;
}

/* ---- fixtures ----------------------------------------------------------- */

/* An open uverbs fd without a context. */
FIXTURE(dev) {
	int fd;
	int nfds;
	struct maps m;
};

FIXTURE_SETUP(dev)
{
	self->fd = -1;
	if (find_uverbs())
		SKIP(return, "no uverbs device for %s", want_ibdev());
	ASSERT_EQ(0, maps_init(&self->m));
	self->fd = uv_open();
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", uverbs_dev,
				      ename(self->fd));
	self->nfds = fd_count();
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* An open uverbs fd with a context. */
FIXTURE(ctx) {
	int fd, async_fd;
	int nfds;
	struct maps m;
	struct urdma_alloc_ucontext_resp drv;
};

FIXTURE_SETUP(ctx)
{
	int ret;

	self->fd = -1;
	self->async_fd = -1;
	if (find_uverbs())
		SKIP(return, "no uverbs device for %s", want_ibdev());
	ASSERT_EQ(0, maps_init(&self->m));
	ret = ctx_open(&self->fd, &self->async_fd, &self->drv);
	ASSERT_EQ(0, ret) TH_LOG("open + GET_CONTEXT: %s", ename(ret));
	self->nfds = fd_count();
}

FIXTURE_TEARDOWN(ctx)
{
	if (self->async_fd >= 0)
		close(self->async_fd);
	if (self->fd >= 0)
		close(self->fd);
}

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
	EXPECT_EQ(0, drv.device_caps & ~(__u32)URDMA_DEVICE_CAP_LOCAL_PATH);
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
	ASSERT_EQ(MAX_PD, n);
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
	static const off_t offs[] = { 0, 1, 0x1000, 0x7fff000 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		void *p = mmap(NULL, self->m.pg, PROT_READ | PROT_WRITE,
			       MAP_SHARED, self->fd, offs[i] * self->m.pg);

		ASSERT_EQ(MAP_FAILED, p) {
			TH_LOG("mmap at page %ld succeeded", (long)offs[i]);
			munmap(p, self->m.pg);
		}
		/* ENODEV while urdma has no mmap op, EINVAL once it has. */
		ASSERT_TRUE(errno == ENODEV || errno == EINVAL)
			TH_LOG("mmap: %s", strerrorname_np(errno));
	}
	ASSERT_RET(0, probe_context(self->fd));
}

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
#define FUZZ_SECONDS	150

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
			if (t.tv_sec - t0.tv_sec > FUZZ_SECONDS)
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

	for (i = 0; i < 1000; i++)
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
	for (i = 0; i < 1000; i++) {
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
	EXPECT_EQ(MAX_PD, n);
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

	for (round = 0; round < 8; round++) {
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

TEST_HARNESS_MAIN
