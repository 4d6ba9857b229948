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
#include <sys/prctl.h>
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
#define CTX_DRV		sizeof(struct urdma_alloc_ucontext_resp)	/* 48 */
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
/*
 * The project's KASAN/lockdep kernel (urdma-vm exports URDMA_KERNEL), where
 * sweeps of tens of thousands of objects take too long under TCG; they run
 * on the Debian kernels, and repeated cycles run fewer times there.
 */
static bool on_debug_kernel(void)
{
	const char *k = getenv("URDMA_KERNEL");

	return k && !strcmp(k, "debug");
}

/* @n repetitions, a quarter of them on the debug kernel. */
static int reps(int n)
{
	return on_debug_kernel() ? n / 4 : n;
}

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
 * What `rdma resource show` counts on the device, kernel objects included;
 * -1 where absent.
 */
struct res_counts {
	long pd, cq, qp, srq;
};

static long json_num(const char *s, const char *key)
{
	char k[32];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(s, k);
	return p ? strtol(p + strlen(k), NULL, 10) : -1;
}

static int read_counts(struct res_counts *c)
{
	char cmd[256], buf[4096];
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma -j resource show %s 2>/dev/null",
		 want_ibdev());
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	if (pclose(f))
		return -ENOENT;
	c->pd = json_num(buf, "pd");
	c->cq = json_num(buf, "cq");
	c->qp = json_num(buf, "qp");
	c->srq = json_num(buf, "srq");
	return c->pd < 0 || c->cq < 0 || c->qp < 0 ? -ENOENT : 0;
}

/*
 * Counts that held still for two readings (objects of exited processes
 * may still be on their way out).
 */
static int settled_counts(struct res_counts *c)
{
	struct res_counts prev;
	int i, ret = read_counts(&prev);

	for (i = 0; !ret && i < 100; i++) {
		ret = read_counts(c);
		if (ret || !memcmp(c, &prev, sizeof(*c)))
			return ret;
		prev = *c;
		usleep(100 * 1000);
	}
	return ret ? ret : -EAGAIN;
}

/* Wait (up to @secs) for the counts to return to @want. */
static int wait_counts(const struct res_counts *want, int secs,
		       struct res_counts *got)
{
	int i;

	for (i = 0; i < secs * 10; i++) {
		if (read_counts(got))
			return -ENOENT;
		if (got->cq == want->cq && got->qp == want->qp &&
		    got->srq == want->srq && got->pd == want->pd)
			return 0;
		usleep(100 * 1000);
	}
	return -ETIMEDOUT;
}

/*
 * PDs the device holds before a test allocates any (the kernel's MAD layer
 * has one once the device has QPs); max_pd counts them.  0 without counts.
 */
static long kernel_pds;

static long device_pds(void)
{
	struct res_counts c;

	return settled_counts(&c) ? 0 : c.pd;
}

/* The PDs user space can still have. */
#define PD_ROOM		((int)(MAX_PD - kernel_pds))

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

/*
 * The device has no PD left over from anything: exactly max_pd fit, less
 * the kernel's own.
 */
#define ASSERT_PD_SPACE_INTACT() do {					\
	int __err, __n = pd_capacity(&__err);				\
	ASSERT_EQ(PD_ROOM, __n)						\
		TH_LOG("a fresh context got %d PDs (first error %s), "	\
		       "expected max_pd %d less the kernel's %ld: PDs "	\
		       "leaked", __n, ename(__err), MAX_PD, kernel_pds);\
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
	kernel_pds = device_pds();
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
	kernel_pds = device_pds();
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

/* ==== queues: CQ, QP, SRQ, AH (ABI v1) =================================== */

/*
 * The tests below attack CREATE_CQ/QP/SRQ/AH and their companions through
 * the raw ABI.  Expected errnos are docs/ABI.md's "Errors" table; where the
 * RDMA core rejects an input before urdma sees it, the comment says so and
 * the errno is the core's.
 *
 * Rings and doorbell records are test memory, laid out as liburdma does:
 * each ring its own page-aligned mapping, doorbell records packed 16 bytes
 * apart into shared pages.
 */

#define MAX_STRIDE	(URDMA_WQE_BLOCK * URDMA_MAX_WQE_BLOCKS)	/* 320 */

/*
 * enum ib_qp_type, ib_qp_state, ib_qp_attr_mask, ib_srq_attr_mask,
 * ib_srq_type, ib_mtu and IB_ACCESS_*: kernel values, not in the uapi.
 */
enum {
	QPT_SMI = 0, QPT_GSI = 1, QPT_RC = 2, QPT_UC = 3, QPT_UD = 4,
	QPT_RAW_IPV6 = 5, QPT_RAW_ETHERTYPE = 6, QPT_RAW_PACKET = 8,
	QPT_XRC_INI = 9, QPT_XRC_TGT = 10, QPT_DRIVER = 0xff,
};

enum { QPS_RESET, QPS_INIT, QPS_RTR, QPS_RTS, QPS_SQD, QPS_SQE, QPS_ERR };

enum {
	QPA_STATE = 1 << 0,
	QPA_CUR_STATE = 1 << 1,
	QPA_ACCESS = 1 << 3,
	QPA_PKEY = 1 << 4,
	QPA_PORT = 1 << 5,
	QPA_QKEY = 1 << 6,
	QPA_AV = 1 << 7,
	QPA_MTU = 1 << 8,
	QPA_TIMEOUT = 1 << 9,
	QPA_RETRY = 1 << 10,
	QPA_RNR_RETRY = 1 << 11,
	QPA_RQ_PSN = 1 << 12,
	QPA_MAX_RD_ATOMIC = 1 << 13,
	QPA_ALT_PATH = 1 << 14,
	QPA_MIN_RNR = 1 << 15,
	QPA_SQ_PSN = 1 << 16,
	QPA_MAX_DEST_RD_ATOMIC = 1 << 17,
	QPA_DEST_QPN = 1 << 20,
	QPA_RATE_LIMIT = 1 << 25,	/* not a standard bit: legacy rejects */
};

#define QPA_ALL		((1u << 21) - 1)	/* IB_QP_ATTR_STANDARD_BITS */

enum { SRQA_MAX_WR = 1 << 0, SRQA_LIMIT = 1 << 1 };
enum { SRQT_BASIC = 0, SRQT_XRC = 1, SRQT_TM = 2 };

#define MTU_1024	3
#define ACC_LOCAL_WRITE	(1 << 0)
#define ACC_REMOTE_WRITE (1 << 1)
#define ACC_REMOTE_READ	(1 << 2)
#define ACC_RC		(ACC_LOCAL_WRITE | ACC_REMOTE_WRITE | ACC_REMOTE_READ)

/* Core response sizes: the driver response starts right after them. */
#define CQ_CORE		sizeof(struct ib_uverbs_create_cq_resp)
#define CQX_CORE	sizeof(struct ib_uverbs_ex_create_cq_resp)
#define CQ_DRV		sizeof(struct urdma_create_cq_resp)
#define RSZ_CORE	sizeof(struct ib_uverbs_resize_cq_resp)
#define RSZ_DRV		sizeof(struct urdma_resize_cq_resp)
#define QP_CORE		sizeof(struct ib_uverbs_create_qp_resp)
#define QPX_CORE	sizeof(struct ib_uverbs_ex_create_qp_resp)
#define QP_DRV		sizeof(struct urdma_create_qp_resp)
#define SRQ_CORE	sizeof(struct ib_uverbs_create_srq_resp)
#define SRQ_DRV		sizeof(struct urdma_create_srq_resp)
#define AH_CORE		sizeof(struct ib_uverbs_create_ah_resp)
#define AH_DRV		sizeof(struct urdma_create_ah_resp)

_Static_assert(CQ_CORE == 8 && CQX_CORE == 16 && RSZ_CORE == 8,
	       "CQ core responses");
_Static_assert(QP_CORE == 32 && QPX_CORE == 40, "QP core responses");
_Static_assert(SRQ_CORE == 16 && AH_CORE == 4, "SRQ/AH core responses");

/* A test-side allocation failed (never an errno the kernel returns here). */
#define ENOTEST		ENOBUFS

static uint32_t pow2(uint32_t v)
{
	uint32_t n = 1;

	while (n && n < v)
		n <<= 1;
	return n;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The capacities docs/ABI.md says a stride gives. */
static uint32_t sq_sge_cap(uint32_t stride)
{
	return min_u32(MAX_SGE, (stride - URDMA_WQE_BLOCK) / URDMA_SGE_SIZE);
}

static uint32_t sq_inline_cap(uint32_t stride)
{
	return min_u32(MAX_INLINE, stride - URDMA_WQE_BLOCK);
}

static uint32_t rq_sge_cap(uint32_t stride)
{
	return min_u32(MAX_SGE, (stride - 16) / URDMA_SGE_SIZE);
}

/*
 * An extended command: [hdr][ex_hdr][core][drv].  Core and driver lengths
 * are in bytes and multiples of 8; the driver response follows the core
 * one at resp + core_out.
 */
static int uv_cmd_ex(int fd, uint32_t command, const void *core,
		     size_t core_len, const void *drv, size_t drv_len,
		     void *resp, size_t core_out, size_t drv_out)
{
	uint64_t buf[1024];
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex = {};
	char *p = (char *)buf;

	if (sizeof(hdr) + sizeof(ex) + core_len + drv_len > sizeof(buf) ||
	    core_len % 8 || drv_len % 8 || core_out % 8 || drv_out % 8)
		return -E2BIG;
	hdr.command = EX_CMD(command);
	hdr.in_words = core_len / 8;
	hdr.out_words = core_out / 8;
	ex.response = (uintptr_t)resp;
	ex.provider_in_words = drv_len / 8;
	ex.provider_out_words = drv_out / 8;
	memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	memcpy(p, &ex, sizeof(ex));
	p += sizeof(ex);
	memcpy(p, core, core_len);
	p += core_len;
	if (drv_len)
		memcpy(p, drv, drv_len);
	p += drv_len;
	return uv_write(fd, buf, p - (char *)buf);
}

/* The handle a CREATE_CQ/QP/SRQ/AH response starts with. */
static uint32_t resp_handle(const void *resp)
{
	uint32_t h;

	memcpy(&h, resp, sizeof(h));
	return h;
}

/* @cmd (@cap bytes): the driver command @drv (@len bytes), then zeros. */
static void drv_zero_tail(uint8_t *cmd, size_t cap, const void *drv,
			  size_t len)
{
	memset(cmd, 0, cap);
	memcpy(cmd, drv, len);
}

/* ... and a 1 at @at in the tail: a newer command's unknown field set. */
static void drv_bad_tail(uint8_t *cmd, size_t cap, const void *drv,
			 size_t len, size_t at)
{
	drv_zero_tail(cmd, cap, drv, len);
	cmd[at] = 1;
}

/* ---- test memory -------------------------------------------------------- */

static size_t page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

static void *map_pages(size_t n)
{
	void *p = mmap(NULL, n * page_size(), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* @n pages that are mapped read-only (and zero). */
static void *ro_pages(size_t n)
{
	void *p = map_pages(n);

	if (p && mprotect(p, n * page_size(), PROT_READ)) {
		munmap(p, n * page_size());
		return NULL;
	}
	return p;
}

/* The address of @n pages that were just unmapped. */
static void *hole_pages(size_t n)
{
	void *p = map_pages(n);

	if (p)
		munmap(p, n * page_size());
	return p;
}

/* @n pages of which only the first @mapped are mapped. */
static void *short_pages(size_t n, size_t mapped)
{
	uint8_t *p = map_pages(n);

	if (p)
		munmap(p + mapped * page_size(), (n - mapped) * page_size());
	return p;
}

/* A context, a PD and the memory its queues live in. */
struct qenv {
	int fd, async_fd;
	struct urdma_alloc_ucontext_resp drv;
	uint32_t pd;
	size_t pg;
	uint8_t *dbp;		/* the doorbell page records come from */
	unsigned int db_used;	/* records handed out of dbp */
	uint8_t *arena;		/* optional: bulk ring memory */
	size_t arena_pages, arena_used;
};

static int qenv_open(struct qenv *e)
{
	int ret;

	memset(e, 0, sizeof(*e));
	e->async_fd = -1;
	e->pg = page_size();
	ret = ctx_open(&e->fd, &e->async_fd, &e->drv);
	if (ret) {
		e->fd = -1;
		return ret;
	}
	ret = do_alloc_pd(e->fd, &e->pd, NULL);
	if (ret) {
		close(e->async_fd);
		close(e->fd);
		e->fd = e->async_fd = -1;
	}
	return ret;
}

static void qenv_close(struct qenv *e)
{
	if (e->async_fd >= 0)
		close(e->async_fd);
	if (e->fd >= 0)
		close(e->fd);
	e->fd = e->async_fd = -1;
	if (e->arena)
		munmap(e->arena, e->arena_pages * e->pg);
	e->arena = NULL;
}

/* Carve the next rings out of one mapping of @pages pages. */
static int qenv_arena(struct qenv *e, size_t pages)
{
	e->arena = map_pages(pages);
	if (!e->arena)
		return -ENOTEST;
	e->arena_pages = pages;
	e->arena_used = 0;
	return 0;
}

/* A page-aligned, zeroed ring of at least @bytes (at least a page). */
static void *ring_alloc(struct qenv *e, size_t bytes)
{
	size_t n = (bytes + e->pg - 1) / e->pg ?: 1;

	if (e->arena && e->arena_used + n <= e->arena_pages) {
		void *p = e->arena + e->arena_used * e->pg;

		e->arena_used += n;
		return p;
	}
	return map_pages(n);
}

/* The next free doorbell record, packed into shared pages. */
static uint64_t db_alloc(struct qenv *e)
{
	if (!e->dbp || e->db_used == e->pg / URDMA_DB_SIZE) {
		e->dbp = map_pages(1);
		e->db_used = 0;
		if (!e->dbp)
			return 0;
	}
	return (uintptr_t)(e->dbp + URDMA_DB_SIZE * e->db_used++);
}

/* ---- CQ ----------------------------------------------------------------- */

struct cq {
	uint32_t handle, cqe, cqn, nent;
	uint8_t *buf;
	uint64_t db;
};

/* Legacy CREATE_CQ: resp receives the core response and drv_out bytes. */
static int create_cq_raw(int fd, uint32_t cqe, const void *drv,
			 size_t drv_len, void *resp, size_t drv_out)
{
	struct ib_uverbs_create_cq c = {
		.response = (uintptr_t)resp, .cqe = cqe, .comp_channel = -1,
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(c), drv,
		      drv_len, CQ_CORE + drv_out);
}

static int create_cq_ex_raw(int fd, const struct ib_uverbs_ex_create_cq *c,
			    const void *drv, size_t drv_len, void *resp,
			    size_t drv_out)
{
	return uv_cmd_ex(fd, IB_USER_VERBS_EX_CMD_CREATE_CQ, c, sizeof(*c),
			 drv, drv_len, resp, CQX_CORE, drv_out);
}

static void cq_cmd(struct urdma_create_cq_cmd *d, uint32_t nent,
		   const void *buf, uint64_t db)
{
	memset(d, 0, sizeof(*d));
	d->nent = nent;
	d->buf_addr = (uintptr_t)buf;
	d->db_addr = db;
}

/* The driver command for a CQ of @nent entries on fresh memory. */
static int cq_cmd_new(struct qenv *e, struct urdma_create_cq_cmd *d,
		      uint32_t nent)
{
	void *buf = ring_alloc(e, (size_t)nent * URDMA_CQE_SIZE);
	uint64_t db = db_alloc(e);

	if (!buf || !db)
		return -ENOTEST;
	cq_cmd(d, nent, buf, db);
	return 0;
}

/* A CQ on the given memory; cq is filled from the responses. */
static int cq_create(struct qenv *e, uint32_t cqe, uint32_t nent, void *buf,
		     uint64_t db, struct cq *cq)
{
	struct urdma_create_cq_cmd d;
	struct ib_uverbs_create_cq_resp core;
	struct urdma_create_cq_resp drv;
	uint8_t r[CQ_CORE + CQ_DRV];
	int ret;

	cq_cmd(&d, nent, buf, db);
	ret = create_cq_raw(e->fd, cqe, &d, sizeof(d), r, CQ_DRV);
	if (ret)
		return ret;
	memcpy(&core, r, sizeof(core));
	memcpy(&drv, r + CQ_CORE, sizeof(drv));
	cq->handle = core.cq_handle;
	cq->cqe = core.cqe;
	cq->cqn = drv.cqn;
	cq->nent = nent;
	cq->buf = buf;
	cq->db = db;
	return 0;
}

/* A CQ of @cqe entries on the ring and doorbell of driver command @d. */
static int cq_create_on(struct qenv *e, uint32_t cqe,
			const struct urdma_create_cq_cmd *d, struct cq *cq)
{
	return cq_create(e, cqe, d->nent, (void *)(uintptr_t)d->buf_addr,
			 d->db_addr, cq);
}

/* A CQ of at least @cqe entries on fresh memory. */
static int cq_new(struct qenv *e, uint32_t cqe, struct cq *cq)
{
	uint32_t nent = pow2(cqe);
	void *buf = ring_alloc(e, (size_t)nent * URDMA_CQE_SIZE);
	uint64_t db = db_alloc(e);

	if (!buf || !db)
		return -ENOTEST;
	return cq_create(e, cqe, nent, buf, db, cq);
}

static int destroy_cq(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_cq_resp r;
	struct ib_uverbs_destroy_cq c = {
		.response = (uintptr_t)&r, .cq_handle = handle,
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &c, sizeof(c), NULL, 0,
		      sizeof(r));
}

/*
 * The *_try() helpers create what a test expects to be refused and return
 * the create's result; an object created all the same is destroyed, so
 * that the next case and the final leak check start clean.
 */
static int cq_try(struct qenv *e, uint32_t cqe, uint32_t nent, void *buf,
		  uint64_t db)
{
	struct cq cq;
	int ret = cq_create(e, cqe, nent, buf, db, &cq);

	if (!ret)
		destroy_cq(e->fd, cq.handle);
	return ret;
}

static int resize_cq_raw(int fd, uint32_t handle, uint32_t cqe,
			 const void *drv, size_t drv_len, void *resp,
			 size_t drv_out)
{
	struct ib_uverbs_resize_cq c = {
		.response = (uintptr_t)resp, .cq_handle = handle, .cqe = cqe,
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof(c), drv,
		      drv_len, RSZ_CORE + drv_out);
}

/* RESIZE_CQ to a new ring; *moved and *cqe_out from the responses. */
static int resize_cq(int fd, uint32_t handle, uint32_t cqe, uint32_t nent,
		     const void *buf, uint32_t *moved, uint32_t *cqe_out)
{
	struct urdma_resize_cq_cmd d = {
		.nent = nent, .buf_addr = (uintptr_t)buf,
	};
	struct ib_uverbs_resize_cq_resp core;
	struct urdma_resize_cq_resp drv;
	uint8_t r[RSZ_CORE + RSZ_DRV];
	int ret;

	memset(r, GUARD, sizeof(r));
	ret = resize_cq_raw(fd, handle, cqe, &d, sizeof(d), r, RSZ_DRV);
	if (ret)
		return ret;
	memcpy(&core, r, sizeof(core));
	memcpy(&drv, r + RSZ_CORE, sizeof(drv));
	if (moved)
		*moved = drv.moved;
	if (cqe_out)
		*cqe_out = core.cqe;
	return drv.comp_mask ? -EPROTO : 0;
}

/* ---- QP ----------------------------------------------------------------- */

struct qp_req {
	uint8_t type, is_srq, sq_sig_all;
	uint32_t scq, rcq, srq;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	uint32_t max_inline;
	uint32_t comp_mask, create_flags;	/* extended command only */
	struct urdma_create_qp_cmd drv;
};

struct qp {
	uint32_t handle, qpn;
	struct ib_uverbs_create_qp_resp core;
	struct urdma_create_qp_resp drv;
};

/*
 * The extended command starts as the legacy one does after its response
 * pointer: user_handle through reserved, the same fields.
 */
#define QP_CMD_HEAD	offsetof(struct ib_uverbs_ex_create_qp, comp_mask)

_Static_assert(sizeof(struct ib_uverbs_create_qp) -
	       offsetof(struct ib_uverbs_create_qp, user_handle) == QP_CMD_HEAD,
	       "CREATE_QP: legacy and extended commands share their head");

static int create_qp_raw(struct qenv *e, const struct qp_req *q,
			 const void *drv, size_t drv_len, void *resp,
			 size_t drv_out, bool ex)
{
	struct ib_uverbs_create_qp c = {
		.response = (uintptr_t)resp,
		.pd_handle = e->pd,
		.send_cq_handle = q->scq,
		.recv_cq_handle = q->rcq,
		.srq_handle = q->srq,
		.max_send_wr = q->max_send_wr,
		.max_recv_wr = q->max_recv_wr,
		.max_send_sge = q->max_send_sge,
		.max_recv_sge = q->max_recv_sge,
		.max_inline_data = q->max_inline,
		.sq_sig_all = q->sq_sig_all,
		.qp_type = q->type,
		.is_srq = q->is_srq,
	};
	struct ib_uverbs_ex_create_qp x = {
		.comp_mask = q->comp_mask,
		.create_flags = q->create_flags,
	};

	if (!ex)
		return uv_cmd(e->fd, IB_USER_VERBS_CMD_CREATE_QP, &c,
			      sizeof(c), drv, drv_len, QP_CORE + drv_out);
	memcpy(&x, &c.user_handle, QP_CMD_HEAD);
	return uv_cmd_ex(e->fd, IB_USER_VERBS_EX_CMD_CREATE_QP, &x, sizeof(x),
			 drv, drv_len, resp, QPX_CORE, drv_out);
}

static int qp_create_x(struct qenv *e, const struct qp_req *q, struct qp *qp,
		       bool ex)
{
	size_t core = ex ? QPX_CORE : QP_CORE;
	uint8_t r[QPX_CORE + QP_DRV];
	int ret;

	ret = create_qp_raw(e, q, &q->drv, sizeof(q->drv), r, QP_DRV, ex);
	if (ret || !qp)
		return ret;
	memcpy(&qp->core, r, sizeof(qp->core));
	memcpy(&qp->drv, r + core, sizeof(qp->drv));
	qp->handle = qp->core.qp_handle;
	qp->qpn = qp->core.qpn;
	return 0;
}

static int qp_create(struct qenv *e, const struct qp_req *q, struct qp *qp)
{
	return qp_create_x(e, q, qp, false);
}

/*
 * A QP request of @type on @cq with @wr WRs each way, one SGE, no inline
 * data: strides 128 (SQ) and 64 (RQ), rings and doorbell on fresh memory.
 */
static int qp_req_init(struct qenv *e, struct qp_req *q, uint8_t type,
		       uint32_t cq, uint32_t wr)
{
	uint8_t *sq, *rq;

	memset(q, 0, sizeof(*q));
	q->type = type;
	q->scq = q->rcq = cq;
	q->max_send_wr = q->max_recv_wr = wr;
	q->max_send_sge = q->max_recv_sge = 1;
	q->drv.sq_nent = q->drv.rq_nent = pow2(wr);
	q->drv.sq_stride = 2 * URDMA_WQE_BLOCK;
	q->drv.rq_stride = URDMA_WQE_BLOCK;
	sq = ring_alloc(e, (size_t)q->drv.sq_nent * q->drv.sq_stride);
	rq = ring_alloc(e, (size_t)q->drv.rq_nent * q->drv.rq_stride);
	q->drv.db_addr = db_alloc(e);
	if (!sq || !rq || !q->drv.db_addr)
		return -ENOTEST;
	q->drv.sq_buf_addr = (uintptr_t)sq;
	q->drv.rq_buf_addr = (uintptr_t)rq;
	return 0;
}

/* A CQ of @cqe entries and qp_req_init()'s request for a QP on it. */
static int cq_qp_req(struct qenv *e, uint32_t cqe, uint8_t type, uint32_t wr,
		     struct cq *cq, struct qp_req *q)
{
	int ret = cq_new(e, cqe, cq);

	return ret ? ret : qp_req_init(e, q, type, cq->handle, wr);
}

/* ... the same, receiving from SRQ @srq: no RQ at all. */
static int qp_req_srq(struct qenv *e, struct qp_req *q, uint8_t type,
		      uint32_t cq, uint32_t srq, uint32_t wr)
{
	uint8_t *sq;

	memset(q, 0, sizeof(*q));
	q->type = type;
	q->scq = q->rcq = cq;
	q->srq = srq;
	q->is_srq = 1;
	q->max_send_wr = wr;
	q->max_send_sge = 1;
	q->drv.sq_nent = pow2(wr);
	q->drv.sq_stride = 2 * URDMA_WQE_BLOCK;
	sq = ring_alloc(e, (size_t)q->drv.sq_nent * q->drv.sq_stride);
	q->drv.db_addr = db_alloc(e);
	if (!sq || !q->drv.db_addr)
		return -ENOTEST;
	q->drv.sq_buf_addr = (uintptr_t)sq;
	return 0;
}

/* Move @q's SQ and RQ to fresh rings of @sq and @rq bytes. */
static int qp_req_rings(struct qenv *e, struct qp_req *q, size_t sq,
			size_t rq)
{
	void *s = ring_alloc(e, sq), *r = ring_alloc(e, rq);

	if (!s || !r)
		return -ENOTEST;
	q->drv.sq_buf_addr = (uintptr_t)s;
	q->drv.rq_buf_addr = (uintptr_t)r;
	return 0;
}

static int destroy_qp(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_qp_resp r;
	struct ib_uverbs_destroy_qp c = {
		.response = (uintptr_t)&r, .qp_handle = handle,
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_DESTROY_QP, &c, sizeof(c), NULL, 0,
		      sizeof(r));
}

static int qp_try_x(struct qenv *e, const struct qp_req *q, bool ex)
{
	struct qp qp;
	int ret = qp_create_x(e, q, &qp, ex);

	if (!ret)
		destroy_qp(e->fd, qp.handle);
	return ret;
}

static int qp_try(struct qenv *e, const struct qp_req *q)
{
	return qp_try_x(e, q, false);
}

/* MODIFY_QP through the legacy command (no driver data). */
static int modify_qp(int fd, const struct ib_uverbs_modify_qp *m)
{
	return uv_cmd(fd, IB_USER_VERBS_CMD_MODIFY_QP, m, sizeof(*m), NULL, 0,
		      0);
}

static int query_qp(int fd, uint32_t handle, struct ib_uverbs_query_qp_resp *r)
{
	struct ib_uverbs_query_qp c = {
		.response = (uintptr_t)r, .qp_handle = handle,
		.attr_mask = QPA_ALL,
	};

	memset(r, 0, sizeof(*r));
	return uv_cmd(fd, IB_USER_VERBS_CMD_QUERY_QP, &c, sizeof(c), NULL, 0,
		      sizeof(*r));
}

static int qp_state(int fd, uint32_t handle)
{
	struct ib_uverbs_query_qp_resp r;
	int ret = query_qp(fd, handle, &r);

	return ret ? ret : r.qp_state;
}

#define PSN_BASE	0x1234

/* RC/UC RESET->INIT. */
static void rc_init_attr(struct ib_uverbs_modify_qp *m, uint32_t h)
{
	memset(m, 0, sizeof(*m));
	m->qp_handle = h;
	m->attr_mask = QPA_STATE | QPA_PKEY | QPA_PORT | QPA_ACCESS;
	m->qp_state = QPS_INIT;
	m->pkey_index = 0;
	m->port_num = 1;
	m->qp_access_flags = ACC_RC;
}

/* RC INIT->RTR towards QP @dqpn behind GID @gid (sgid index 0). */
static void rc_rtr_attr(struct ib_uverbs_modify_qp *m, uint32_t h,
			const uint8_t gid[16], uint32_t dqpn)
{
	memset(m, 0, sizeof(*m));
	m->qp_handle = h;
	m->attr_mask = QPA_STATE | QPA_AV | QPA_MTU | QPA_DEST_QPN |
		       QPA_RQ_PSN | QPA_MAX_DEST_RD_ATOMIC | QPA_MIN_RNR;
	m->qp_state = QPS_RTR;
	memcpy(m->dest.dgid, gid, 16);
	m->dest.is_global = 1;
	m->dest.sgid_index = 0;
	m->dest.hop_limit = 64;
	m->dest.port_num = 1;
	m->path_mtu = MTU_1024;
	m->dest_qp_num = dqpn;
	m->rq_psn = PSN_BASE;
	m->max_dest_rd_atomic = 4;
	m->min_rnr_timer = 12;
}

/* RC RTR->RTS. */
static void rc_rts_attr(struct ib_uverbs_modify_qp *m, uint32_t h)
{
	memset(m, 0, sizeof(*m));
	m->qp_handle = h;
	m->attr_mask = QPA_STATE | QPA_TIMEOUT | QPA_RETRY | QPA_RNR_RETRY |
		       QPA_SQ_PSN | QPA_MAX_RD_ATOMIC;
	m->qp_state = QPS_RTS;
	m->timeout = 14;
	m->retry_cnt = 7;
	m->rnr_retry = 7;
	m->sq_psn = PSN_BASE + 1;
	m->max_rd_atomic = 4;
}

static int modify_state(int fd, uint32_t h, uint8_t state)
{
	struct ib_uverbs_modify_qp m = {
		.qp_handle = h, .attr_mask = QPA_STATE, .qp_state = state,
	};

	return modify_qp(fd, &m);
}

/* ---- SRQ ---------------------------------------------------------------- */

struct srq_req {
	uint32_t max_wr, max_sge, limit;
	struct urdma_create_srq_cmd drv;
};

struct srq {
	uint32_t handle, srqn, max_wr, max_sge;
};

static int create_srq_raw(struct qenv *e, const struct srq_req *s,
			  const void *drv, size_t drv_len, void *resp,
			  size_t drv_out)
{
	struct ib_uverbs_create_srq c = {
		.response = (uintptr_t)resp, .pd_handle = e->pd,
		.max_wr = s->max_wr, .max_sge = s->max_sge,
		.srq_limit = s->limit,
	};

	return uv_cmd(e->fd, IB_USER_VERBS_CMD_CREATE_SRQ, &c, sizeof(c), drv,
		      drv_len, SRQ_CORE + drv_out);
}

static int create_xsrq_raw(struct qenv *e, uint32_t type, uint32_t cq,
			   uint32_t xrcd, const struct srq_req *s, void *resp)
{
	struct ib_uverbs_create_xsrq c = {
		.response = (uintptr_t)resp, .srq_type = type,
		.pd_handle = e->pd, .max_wr = s->max_wr,
		.max_sge = s->max_sge, .srq_limit = s->limit,
		.max_num_tags = type == SRQT_TM ? 16 : 0,
		.xrcd_handle = xrcd, .cq_handle = cq,
	};

	return uv_cmd(e->fd, IB_USER_VERBS_CMD_CREATE_XSRQ, &c, sizeof(c),
		      &s->drv, sizeof(s->drv), SRQ_CORE + SRQ_DRV);
}

/* max_wr WRs (ring of pow2(max_wr)), one SGE, stride 64, fresh memory. */
static int srq_req_init(struct qenv *e, struct srq_req *s, uint32_t max_wr)
{
	void *buf;

	memset(s, 0, sizeof(*s));
	s->max_wr = max_wr;
	s->max_sge = 1;
	s->drv.nent = pow2(max_wr);
	s->drv.stride = URDMA_WQE_BLOCK;
	buf = ring_alloc(e, (size_t)s->drv.nent * s->drv.stride);
	s->drv.db_addr = db_alloc(e);
	if (!buf || !s->drv.db_addr)
		return -ENOTEST;
	s->drv.buf_addr = (uintptr_t)buf;
	return 0;
}

/* srq_req_init() with the ring on fresh memory of @bytes. */
static int srq_req_big(struct qenv *e, struct srq_req *s, uint32_t max_wr,
		       size_t bytes)
{
	void *buf;
	int ret = srq_req_init(e, s, max_wr);

	if (ret)
		return ret;
	buf = ring_alloc(e, bytes);
	if (!buf)
		return -ENOTEST;
	s->drv.buf_addr = (uintptr_t)buf;
	return 0;
}

static int srq_create(struct qenv *e, const struct srq_req *s, struct srq *o)
{
	struct ib_uverbs_create_srq_resp core;
	struct urdma_create_srq_resp drv;
	uint8_t r[SRQ_CORE + SRQ_DRV];
	int ret;

	ret = create_srq_raw(e, s, &s->drv, sizeof(s->drv), r, SRQ_DRV);
	if (ret || !o)
		return ret;
	memcpy(&core, r, sizeof(core));
	memcpy(&drv, r + SRQ_CORE, sizeof(drv));
	o->handle = core.srq_handle;
	o->max_wr = core.max_wr;
	o->max_sge = core.max_sge;
	o->srqn = drv.srqn;
	return 0;
}

static int srq_new(struct qenv *e, uint32_t max_wr, struct srq *o)
{
	struct srq_req s;
	int ret = srq_req_init(e, &s, max_wr);

	return ret ? ret : srq_create(e, &s, o);
}

static int destroy_srq(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_srq_resp r;
	struct ib_uverbs_destroy_srq c = {
		.response = (uintptr_t)&r, .srq_handle = handle,
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_DESTROY_SRQ, &c, sizeof(c), NULL,
		      0, sizeof(r));
}

static int srq_try(struct qenv *e, const struct srq_req *s)
{
	struct srq o;
	int ret = srq_create(e, s, &o);

	if (!ret)
		destroy_srq(e->fd, o.handle);
	return ret;
}

static int modify_srq(int fd, uint32_t handle, uint32_t mask, uint32_t max_wr,
		      uint32_t limit, const void *drv, size_t drv_len)
{
	struct ib_uverbs_modify_srq c = {
		.srq_handle = handle, .attr_mask = mask, .max_wr = max_wr,
		.srq_limit = limit,
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &c, sizeof(c), drv,
		      drv_len, 0);
}

static int query_srq(int fd, uint32_t handle,
		     struct ib_uverbs_query_srq_resp *r)
{
	struct ib_uverbs_query_srq c = {
		.response = (uintptr_t)r, .srq_handle = handle,
	};

	memset(r, 0, sizeof(*r));
	return uv_cmd(fd, IB_USER_VERBS_CMD_QUERY_SRQ, &c, sizeof(c), NULL, 0,
		      sizeof(*r));
}

/* ---- AH ----------------------------------------------------------------- */

static void ah_attr_gid(struct ib_uverbs_ah_attr *a, const uint8_t gid[16])
{
	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid, gid, 16);
	a->grh.sgid_index = 0;
	a->grh.hop_limit = 64;
	a->is_global = 1;
	a->port_num = 1;
}

static int create_ah_raw(struct qenv *e, const struct ib_uverbs_ah_attr *a,
			 const void *drv, size_t drv_len, void *resp,
			 size_t drv_out)
{
	struct ib_uverbs_create_ah c = {
		.response = (uintptr_t)resp, .pd_handle = e->pd, .attr = *a,
	};

	return uv_cmd(e->fd, IB_USER_VERBS_CMD_CREATE_AH, &c, sizeof(c), drv,
		      drv_len, AH_CORE + drv_out);
}

static int ah_create(struct qenv *e, const struct ib_uverbs_ah_attr *a,
		     uint32_t *handle, uint32_t *ah_num)
{
	struct urdma_create_ah_resp drv;
	uint8_t r[AH_CORE + AH_DRV];
	int ret;

	ret = create_ah_raw(e, a, NULL, 0, r, AH_DRV);
	if (ret)
		return ret;
	memcpy(handle, r, sizeof(*handle));
	memcpy(&drv, r + AH_CORE, sizeof(drv));
	if (ah_num)
		*ah_num = drv.ah_num;
	return drv.comp_mask ? -EPROTO : 0;
}

static int destroy_ah(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_ah c = { .ah_handle = handle };

	return uv_cmd(fd, IB_USER_VERBS_CMD_DESTROY_AH, &c, sizeof(c), NULL, 0,
		      0);
}

/* GID @idx of port 1 from sysfs; -ENODATA if the entry is empty. */
static int read_gid(unsigned int idx, uint8_t gid[16])
{
	char p[PATH_MAX], s[128];
	unsigned int g[8], i;
	bool zero = true;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/gids/%u",
		 want_ibdev(), idx);
	f = fopen(p, "r");
	if (!f)
		return -errno;
	if (!fgets(s, sizeof(s), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	if (sscanf(s, "%x:%x:%x:%x:%x:%x:%x:%x", &g[0], &g[1], &g[2], &g[3],
		   &g[4], &g[5], &g[6], &g[7]) != 8)
		return -EINVAL;
	for (i = 0; i < 8; i++) {
		gid[2 * i] = g[i] >> 8;
		gid[2 * i + 1] = g[i] & 0xff;
		zero &= !g[i];
	}
	return zero ? -ENODATA : 0;
}

/* Pages pinned system-wide (FOLL_PIN), or -1 without the counters. */
static long pins_outstanding(void)
{
	long v, acq = -1, rel = -1;
	char k[64];
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", k, &v) == 2) {
		if (!strcmp(k, "nr_foll_pin_acquired"))
			acq = v;
		else if (!strcmp(k, "nr_foll_pin_released"))
			rel = v;
	}
	fclose(f);
	return acq < 0 || rel < 0 ? -1 : acq - rel;
}

static long settled_pins(void)
{
	long before = pins_outstanding(), now;
	int i;

	for (i = 0; before >= 0 && i < 50; i++) {
		usleep(100 * 1000);
		now = pins_outstanding();
		if (now == before)
			break;
		before = now;
	}
	return before;
}

/* Pinning tens of thousands of rings needs RLIMIT_MEMLOCK (or root). */
static bool unlimited_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	if (!setrlimit(RLIMIT_MEMLOCK, &rl))
		return true;
	return !getrlimit(RLIMIT_MEMLOCK, &rl) &&
	       rl.rlim_cur == RLIM_INFINITY;
}

/* ---- the queue fixture -------------------------------------------------- */

/* A context with a PD; base: the device's object counts after setup. */
FIXTURE(q) {
	struct qenv e;
	struct maps m;
	struct res_counts base;
	bool have_counts;
};

FIXTURE_SETUP(q)
{
	int ret;

	self->e.fd = self->e.async_fd = -1;
	if (find_uverbs())
		SKIP(return, "no uverbs device for %s", want_ibdev());
	ASSERT_EQ(0, maps_init(&self->m));
	ret = qenv_open(&self->e);
	ASSERT_EQ(0, ret) TH_LOG("open + GET_CONTEXT + ALLOC_PD: %s",
				 ename(ret));
	/*
	 * URDMA_ABI_SHARED: other processes use the device meanwhile (make
	 * check's fuzz lane), so the device's object counts prove nothing.
	 */
	self->have_counts = !getenv("URDMA_ABI_SHARED") &&
			    !settled_counts(&self->base);
}

FIXTURE_TEARDOWN(q)
{
	qenv_close(&self->e);
}

/*
 * The device holds exactly the fixture's objects plus @ncq CQs, @nqp QPs
 * and @nsrq SRQs: nothing leaked.  Needs the rdma tool; silent without it.
 */
#define ASSERT_LIVE(ncq, nqp, nsrq) do {				\
	struct res_counts __c;						\
	if (self->have_counts) {					\
		ASSERT_EQ(0, settled_counts(&__c));			\
		ASSERT_EQ(self->base.cq + (ncq), __c.cq)		\
			TH_LOG("CQs in the device (rdma res)");		\
		ASSERT_EQ(self->base.qp + (nqp), __c.qp)		\
			TH_LOG("QPs in the device (rdma res)");		\
		if (__c.srq >= 0) {					\
			ASSERT_EQ(self->base.srq + (nsrq), __c.srq)	\
				TH_LOG("SRQs in the device (rdma res)");\
		}							\
		ASSERT_EQ(self->base.pd, __c.pd)			\
			TH_LOG("PDs in the device (rdma res)");		\
	}								\
} while (0)

#define ASSERT_GID0(gid) do {						\
	int __g = read_gid(0, gid);					\
	ASSERT_EQ(0, __g) TH_LOG("GID 0 of %s port 1: %s", want_ibdev(),\
				 ename(__g));				\
} while (0)

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

/* The extended core command: comp_mask/reserved (core), flags (urdma). */
TEST_F(q, cq_ex_core_fields)
{
	static const uint32_t flags[] = {
		1 << 0,	/* IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION */
		1 << 1,	/* IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN */
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
	c.flags = 0;
	ASSERT_LIVE(0, 0, 0);
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

/* ---- CREATE_QP / DESTROY_QP --------------------------------------------- */

/* The capacities of the core response, as docs/ABI.md derives them. */
#define EXPECT_QP_CAPS(qp, req) do {					\
	EXPECT_EQ((req)->drv.sq_nent, (qp)->core.max_send_wr);		\
	EXPECT_EQ(sq_sge_cap((req)->drv.sq_stride),			\
		  (qp)->core.max_send_sge);				\
	EXPECT_EQ(sq_inline_cap((req)->drv.sq_stride),			\
		  (qp)->core.max_inline_data);				\
	if (!(req)->is_srq) {						\
		EXPECT_EQ((req)->drv.rq_nent, (qp)->core.max_recv_wr);	\
		EXPECT_EQ(rq_sge_cap((req)->drv.rq_stride),		\
			  (qp)->core.max_recv_sge);			\
	}								\
} while (0)

TEST_F(q, qp_create_rc_uc_ud)
{
	static const uint8_t types[] = { QPT_RC, QPT_UC, QPT_UD };
	struct qp qp[ARRAY_SIZE(types)];
	struct qp_req r;
	unsigned int i;
	struct cq cq;

	ASSERT_RET(0, cq_new(&self->e, 64, &cq));
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		ASSERT_RET(0, qp_req_init(&self->e, &r, types[i], cq.handle,
					  16));
		ASSERT_RETM(0, qp_create(&self->e, &r, &qp[i]), "(type %u)",
			    types[i]);
		EXPECT_NE(0, qp[i].qpn);
		EXPECT_NE(1, qp[i].qpn);
		EXPECT_GE(0xffffff, qp[i].qpn);
		EXPECT_QP_CAPS(&qp[i], &r);
		EXPECT_EQ(0, qp[i].drv.comp_mask);
		EXPECT_GT(URDMA_MAX_ENGINES, qp[i].drv.engine);
		EXPECT_EQ(QPS_RESET, qp_state(self->e.fd, qp[i].handle));
	}
	ASSERT_NE(qp[0].qpn, qp[1].qpn);
	ASSERT_NE(qp[1].qpn, qp[2].qpn);
	ASSERT_NE(qp[0].qpn, qp[2].qpn);
	ASSERT_LIVE(1, 3, 0);
	for (i = 0; i < ARRAY_SIZE(types); i++)
		ASSERT_RET(0, destroy_qp(self->e.fd, qp[i].handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
}

/* The exact legacy response, and truncated ones. */
TEST_F(q, qp_create_resp)
{
	struct ib_uverbs_create_qp_resp core;
	uint8_t *resp = self->m.rw;
	struct qp_req r;
	struct cq cq;
	size_t n;

	ASSERT_RET(0, cq_new(&self->e, 8, &cq));
	for (n = 0; n <= QP_DRV; n += 4) {
		ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_RC, cq.handle, 4));
		memset(resp, GUARD, self->m.pg);
		ASSERT_RETM(0, create_qp_raw(&self->e, &r, &r.drv,
					     sizeof(r.drv), resp, n, false),
			    "(driver response of %zu bytes)", n);
		memcpy(&core, resp, sizeof(core));
		EXPECT_TRUE(all_bytes(resp + QP_CORE, n, 0))
			TH_LOG("driver response (reserved) not zero");
		EXPECT_TRUE(all_bytes(resp + QP_CORE + n,
				      self->m.pg - QP_CORE - n, GUARD))
			TH_LOG("written past a %zu-byte driver response", n);
		ASSERT_RET(0, destroy_qp(self->e.fd, core.qp_handle));
	}
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
}

TEST_F(q, qp_create_ex)
{
	static const uint8_t types[] = { QPT_RC, QPT_UD };
	struct ib_uverbs_ex_create_qp_resp core;
	struct urdma_create_qp_resp drv;
	uint8_t *resp = self->m.rw;
	struct qp_req r;
	unsigned int i;
	struct cq cq;

	ASSERT_RET(0, cq_new(&self->e, 8, &cq));
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		ASSERT_RET(0, qp_req_init(&self->e, &r, types[i], cq.handle,
					  8));
		memset(resp, GUARD, self->m.pg);
		ASSERT_RET(0, create_qp_raw(&self->e, &r, &r.drv,
					    sizeof(r.drv), resp, QP_DRV,
					    true));
		memcpy(&core, resp, sizeof(core));
		memcpy(&drv, resp + QPX_CORE, sizeof(drv));
		EXPECT_EQ(QPX_CORE, core.response_length);
		EXPECT_EQ(0, core.comp_mask);
		EXPECT_EQ(8, core.base.max_send_wr);
		EXPECT_EQ(8, core.base.max_recv_wr);
		EXPECT_LT(1, core.base.qpn);
		EXPECT_EQ(0, drv.comp_mask);
		EXPECT_GT(URDMA_MAX_ENGINES, drv.engine);
		EXPECT_TRUE(all_bytes(resp + QPX_CORE + QP_DRV,
				      self->m.pg - QPX_CORE - QP_DRV, GUARD));
		ASSERT_RET(0, destroy_qp(self->e.fd, core.base.qp_handle));
	}
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
}

/* What each legal stride gives, and rings of 1 and max_qp_wr entries. */
TEST_F(q, qp_caps_per_stride)
{
	static const uint32_t strides[] = { 64, 128, 192, 256, 320 };
	struct qp_req r;
	unsigned int i;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, cq_new(&self->e, 8, &cq));
	for (i = 0; i < ARRAY_SIZE(strides); i++) {
		uint32_t s = strides[i];

		ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_RC, cq.handle, 1));
		r.drv.sq_stride = r.drv.rq_stride = s;
		r.max_send_sge = sq_sge_cap(s);
		r.max_inline = sq_inline_cap(s);
		r.max_recv_sge = rq_sge_cap(s);
		ASSERT_RETM(0, qp_create(&self->e, &r, &qp), "(stride %u)", s);
		EXPECT_QP_CAPS(&qp, &r);
		ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
		/* Asking for less than the stride holds gets it all. */
		r.max_send_sge = r.max_recv_sge = r.max_inline = 0;
		ASSERT_RETM(0, qp_create(&self->e, &r, &qp), "(stride %u)", s);
		EXPECT_QP_CAPS(&qp, &r);
		ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	}
	/* The WR counts reported are the ring sizes. */
	ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_UD, cq.handle, 5));
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	EXPECT_EQ(8, qp.core.max_send_wr);
	EXPECT_EQ(8, qp.core.max_recv_wr);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_RC, cq.handle, MAX_QP_WR));
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	EXPECT_QP_CAPS(&qp, &r);
	EXPECT_EQ(MAX_QP_WR, qp.core.max_send_wr);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
}

/*
 * Only RC, UC and UD.  SMI/GSI, the raw IPv6/Ethertype types and XRC_TGT
 * (whose pd_handle must name an XRCD) never reach urdma: the core says
 * EINVAL.  RAW_PACKET needs CAP_NET_RAW (EPERM from the core without it).
 */
TEST_F(q, qp_types_rejected)
{
	static const struct { uint8_t type; int err; } cases[] = {
		{ QPT_SMI, -EINVAL }, { QPT_GSI, -EINVAL },
		{ QPT_RAW_IPV6, -EINVAL }, { QPT_RAW_ETHERTYPE, -EINVAL },
		{ QPT_XRC_TGT, -EINVAL }, { 7, -EINVAL }, { 11, -EINVAL },
		{ QPT_XRC_INI, -EOPNOTSUPP }, { QPT_DRIVER, -EOPNOTSUPP },
		{ QPT_RAW_PACKET, -EOPNOTSUPP },
	};
	struct qp_req r;
	unsigned int i;
	struct cq cq;
	struct qp qp;
	int ret;

	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 4, &cq, &r));
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int want = cases[i].err;

		r.type = cases[i].type;
		ret = qp_try(&self->e, &r);
		if (cases[i].type == QPT_RAW_PACKET && ret == -EPERM &&
		    geteuid())
			continue;	/* no CAP_NET_RAW */
		ASSERT_RETM(want, ret, "(QP type %u)", cases[i].type);
		/* The extended command goes the same way. */
		ASSERT_RETM(want, qp_try_x(&self->e, &r, true),
			    "(QP type %u, extended)", cases[i].type);
	}
	ASSERT_LIVE(1, 0, 0);
	r.type = QPT_RC;
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
}

/*
 * Create flags: urdma has none (EOPNOTSUPP); bits the core does not know
 * are the core's EINVAL, as are unknown comp_mask bits.
 */
TEST_F(q, qp_create_flags)
{
	static const uint32_t flags[] = {
		1 << 1,		/* BLOCK_MULTICAST_LOOPBACK */
		1 << 8,		/* SCATTER_FCS */
		1 << 9,		/* CVLAN_STRIPPING */
		1 << 11,	/* PCI_WRITE_END_PADDING */
	};
	struct qp_req r;
	unsigned int i;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 4, &cq, &r));
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		r.create_flags = flags[i];
		ASSERT_RETM(-EOPNOTSUPP, qp_create_x(&self->e, &r, &qp, true),
			    "(create flags 0x%x)", flags[i]);
	}
	r.create_flags = 1 << 0;	/* IPOIB_UD_LSO: kernel only */
	ASSERT_RET(-EINVAL, qp_create_x(&self->e, &r, &qp, true));
	r.create_flags = 1u << 31;
	ASSERT_RET(-EINVAL, qp_create_x(&self->e, &r, &qp, true));
	r.create_flags = 0;
	r.comp_mask = 1 << 1;
	ASSERT_RET(-EINVAL, qp_create_x(&self->e, &r, &qp, true));
	r.comp_mask = 0;
	ASSERT_LIVE(1, 0, 0);
	ASSERT_RET(0, qp_create_x(&self->e, &r, &qp, true));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
}

/* Requests beyond ibv_devinfo -v, with rings that would hold them. */
TEST_F(q, qp_caps_beyond_limits)
{
	struct qp_req r, good;
	struct cq cq;
	struct qp qp;
	int i;

	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 16, &cq, &good));
	ASSERT_RET(0, qp_req_rings(&self->e, &good, 2 * MAX_QP_WR * MAX_STRIDE,
				   2 * MAX_QP_WR * MAX_STRIDE));
	for (i = 0; i < 12; i++) {
		r = good;
		switch (i) {
		case 0:
			r.max_send_wr = MAX_QP_WR + 1;
			r.drv.sq_nent = 2 * MAX_QP_WR;
			break;
		case 1:
			r.max_send_wr = MAX_QP_WR + 1;
			r.drv.sq_nent = MAX_QP_WR;
			break;
		case 2:
			r.max_send_wr = 0x80000000u;
			r.drv.sq_nent = 0x80000000u;
			break;
		case 3:
			r.max_recv_wr = MAX_QP_WR + 1;
			r.drv.rq_nent = 2 * MAX_QP_WR;
			break;
		case 4:
			r.max_recv_wr = MAX_QP_WR + 1;
			r.drv.rq_nent = MAX_QP_WR;
			break;
		case 5:
			r.max_recv_wr = ~0u;
			break;
		case 6:
			r.max_send_sge = MAX_SGE + 1;
			r.drv.sq_stride = MAX_STRIDE;
			break;
		case 7:
			r.max_recv_sge = MAX_SGE + 1;
			r.drv.rq_stride = MAX_STRIDE;
			break;
		case 8:
			r.max_inline = MAX_INLINE + 1;
			r.drv.sq_stride = MAX_STRIDE;
			break;
		case 9:
			r.max_inline = ~0u;
			r.drv.sq_stride = MAX_STRIDE;
			break;
		case 10:
			r.max_send_sge = ~0u;
			r.drv.sq_stride = MAX_STRIDE;
			break;
		case 11:
			/* A larger ring than max_qp_wr, for a small QP. */
			r.drv.sq_nent = 2 * MAX_QP_WR;
			break;
		}
		ASSERT_RETM(-EINVAL, qp_try(&self->e, &r), "(case %d)", i);
	}
	ASSERT_LIVE(1, 0, 0);
	/* The limits themselves are fine, on the same memory. */
	r = good;
	r.max_send_wr = r.max_recv_wr = MAX_QP_WR;
	r.drv.sq_nent = r.drv.rq_nent = MAX_QP_WR;
	r.max_send_sge = r.max_recv_sge = MAX_SGE;
	r.max_inline = MAX_INLINE;
	r.drv.sq_stride = r.drv.rq_stride = MAX_STRIDE;
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	EXPECT_QP_CAPS(&qp, &r);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
}

TEST_F(q, qp_stride_bad)
{
	static const uint32_t bad[] = {
		0, 16, 32, 96, 100, 384, 640, 65536, ~0u & ~63u, ~0u,
	};
	struct qp_req r, good;
	unsigned int i;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 16, &cq, &good));
	ASSERT_RET(0, qp_req_rings(&self->e, &good, 16 * 65536, 16 * 65536));
	good.max_send_sge = good.max_recv_sge = 0;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		r = good;
		r.drv.sq_stride = bad[i];
		ASSERT_RETM(-EINVAL, qp_try(&self->e, &r),
			    "(sq_stride %u)", bad[i]);
		r = good;
		r.drv.rq_stride = bad[i];
		ASSERT_RETM(-EINVAL, qp_try(&self->e, &r),
			    "(rq_stride %u)", bad[i]);
	}
	/* Too small for what is asked (64 + max(16 x sge, inline)). */
	for (i = 0; i < 6; i++) {
		r = good;
		switch (i) {
		case 0:
			r.max_send_sge = 1;
			r.drv.sq_stride = 64;
			break;
		case 1:
			r.max_inline = 65;
			r.drv.sq_stride = 128;
			break;
		case 2:
			r.max_inline = MAX_INLINE;
			r.drv.sq_stride = 256;
			break;
		case 3:
			r.max_send_sge = MAX_SGE;
			r.drv.sq_stride = 256;
			break;
		case 4:	/* 16 + 16 x sge */
			r.max_recv_sge = 4;
			r.drv.rq_stride = 64;
			break;
		case 5:
			r.max_recv_sge = MAX_SGE;
			r.drv.rq_stride = 256;
			break;
		}
		ASSERT_RETM(-EINVAL, qp_try(&self->e, &r),
			    "(too small, case %u)", i);
	}
	ASSERT_LIVE(1, 0, 0);
	ASSERT_RET(0, qp_create(&self->e, &good, &qp));
}

TEST_F(q, qp_nent_bad)
{
	static const uint32_t bad[] = {
		0, 3, 12, 2 * MAX_QP_WR, 1u << 31, ~0u,
	};
	struct qp_req r, good;
	unsigned int i;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 2, &cq, &good));
	ASSERT_RET(0, qp_req_rings(&self->e, &good, 2 * MAX_QP_WR * 128,
				   2 * MAX_QP_WR * 64));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		r = good;
		r.drv.sq_nent = bad[i];
		ASSERT_RETM(-EINVAL, qp_try(&self->e, &r),
			    "(sq_nent %u)", bad[i]);
		r = good;
		r.drv.rq_nent = bad[i];
		ASSERT_RETM(-EINVAL, qp_try(&self->e, &r),
			    "(rq_nent %u)", bad[i]);
	}
	/* Smaller than requested. */
	r = good;
	r.max_send_wr = 16;
	r.drv.sq_nent = 8;
	ASSERT_RET(-EINVAL, qp_create(&self->e, &r, &qp));
	r = good;
	r.max_recv_wr = 9;
	r.drv.rq_nent = 8;
	ASSERT_RET(-EINVAL, qp_create(&self->e, &r, &qp));
	ASSERT_LIVE(1, 0, 0);
	ASSERT_RET(0, qp_create(&self->e, &good, &qp));
}

TEST_F(q, qp_rings_overlap)
{
	size_t pg = self->e.pg;
	uint8_t *two = ring_alloc(&self->e, 2 * pg);
	struct qp_req r, good, other;
	struct qp qp, qo;
	struct cq cq;
	int i;

	ASSERT_NE(NULL, two);
	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_UC, 4, &cq, &other));
	ASSERT_RET(0, qp_create(&self->e, &other, &qo));
	/*
	 * Every ring one page (32 x 128, 32 x 64 bytes), so that a ring put
	 * on another object's page is entirely mapped: only the overlap is
	 * wrong.
	 */
	ASSERT_RET(0, qp_req_init(&self->e, &good, QPT_RC, cq.handle, 32));
	ASSERT_EQ(pg, (size_t)good.drv.sq_nent * good.drv.sq_stride);
	for (i = 0; i < 10; i++) {
		uint64_t dbpage = good.drv.db_addr & ~(uint64_t)(pg - 1);

		r = good;
		switch (i) {
		case 0:
			r.drv.rq_buf_addr = r.drv.sq_buf_addr;
			break;
		case 1:	/* an SQ of two pages, the RQ on its second */
			r.max_send_wr = r.drv.sq_nent = 64;
			r.drv.sq_buf_addr = (uintptr_t)two;
			r.drv.rq_buf_addr = (uintptr_t)two + pg;
			break;
		case 2:
			r.drv.sq_buf_addr = (uintptr_t)cq.buf;
			break;
		case 3:
			r.drv.rq_buf_addr = (uintptr_t)cq.buf;
			break;
		case 4:
			r.drv.sq_buf_addr = other.drv.rq_buf_addr;
			break;
		case 5:
			r.drv.rq_buf_addr = other.drv.sq_buf_addr;
			break;
		case 6:	/* the page of the CQ's and other QP's records */
			r.drv.sq_buf_addr = dbpage;
			break;
		case 7:
			r.drv.rq_buf_addr = dbpage;
			break;
		case 8:	/* a doorbell in its own ring */
			r.drv.db_addr = r.drv.sq_buf_addr + 64;
			break;
		case 9:	/* ... in the CQ's ring */
			r.drv.db_addr = (uintptr_t)cq.buf + 32;
			break;
		}
		ASSERT_RETM(-EINVAL, qp_try(&self->e, &r), "(case %d)", i);
	}
	ASSERT_LIVE(1, 1, 0);
	ASSERT_RET(0, qp_create(&self->e, &good, &qp));
	/* A second QP on the same rings is refused too. */
	ASSERT_RET(-EINVAL, qp_create(&self->e, &good, &qp));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	/* The other QP's rings are free once it is gone. */
	ASSERT_RET(0, destroy_qp(self->e.fd, qo.handle));
	r = good;
	r.drv.sq_buf_addr = other.drv.rq_buf_addr;
	r.drv.rq_buf_addr = other.drv.sq_buf_addr;
	r.max_send_wr = r.max_recv_wr = 4;
	r.drv.sq_nent = r.drv.rq_nent = 4;
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	ASSERT_LIVE(1, 0, 0);
}

TEST_F(q, qp_ring_memory_bad)
{
	uint8_t *ro = ro_pages(2), *two, *hole;
	struct qp_req r, good;
	struct cq cq;
	struct qp qp;
	int i;

	ASSERT_NE(NULL, ro);
	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 64, &cq, &good));
	/* After every other mapping: the next mmap could fill the holes. */
	two = short_pages(2, 1);
	hole = hole_pages(2);
	ASSERT_NE(NULL, two);
	ASSERT_NE(NULL, hole);
	for (i = 0; i < 12; i++) {
		int want = i < 3 ? -EINVAL : -EFAULT;

		r = good;
		switch (i) {
		case 0:
			r.drv.sq_buf_addr += 64;
			break;
		case 1:
			r.drv.rq_buf_addr += 64;
			break;
		case 2:
			r.drv.db_addr += 8;
			break;
		case 3:
			r.drv.sq_buf_addr = (uintptr_t)hole;
			break;
		case 4:
			r.drv.rq_buf_addr = (uintptr_t)hole;
			break;
		case 5:
			r.drv.sq_buf_addr = (uintptr_t)ro;
			break;
		case 6:
			r.drv.rq_buf_addr = (uintptr_t)ro;
			break;
		case 7:
			r.drv.db_addr = (uintptr_t)ro + 16;
			break;
		case 8:
			r.drv.db_addr = (uintptr_t)hole;
			break;
		case 9:	/* 8 KiB of SQ, 4 KiB mapped */
			r.drv.sq_buf_addr = (uintptr_t)two;
			break;
		case 10:
			r.drv.sq_buf_addr = 0;
			break;
		case 11:
			r.drv.sq_buf_addr = 0xffff888000000000ull;
			break;
		}
		ASSERT_RETM(want, qp_try(&self->e, &r), "(case %d)", i);
	}
	ASSERT_TRUE(all_bytes(ro, 2 * self->e.pg, 0));
	ASSERT_LIVE(1, 0, 0);
	ASSERT_RET(0, qp_create(&self->e, &good, &qp));
}

/* With an SRQ the RQ fields must be 0; the SQ still needs its ring. */
TEST_F(q, qp_srq_rq_fields)
{
	uint8_t *rq = ring_alloc(&self->e, 16 * 64);
	struct qp_req r, good;
	struct srq srq;
	struct cq cq;
	struct qp qp;
	int i;

	ASSERT_NE(NULL, rq);
	ASSERT_RET(0, cq_new(&self->e, 8, &cq));
	ASSERT_RET(0, srq_new(&self->e, 16, &srq));
	ASSERT_RET(0, qp_req_srq(&self->e, &good, QPT_RC, cq.handle,
				 srq.handle, 8));
	for (i = 0; i < 4; i++) {
		r = good;
		switch (i) {
		case 0:
			r.drv.rq_buf_addr = (uintptr_t)rq;
			break;
		case 1:
			r.drv.rq_nent = 16;
			break;
		case 2:
			r.drv.rq_stride = 64;
			break;
		case 3:
			r.drv.rq_buf_addr = (uintptr_t)rq;
			r.drv.rq_nent = 16;
			r.drv.rq_stride = 64;
			break;
		}
		ASSERT_RETM(-EINVAL, qp_try(&self->e, &r), "(case %d)", i);
	}
	/* A handle that is no SRQ (core). */
	r = good;
	r.srq = 12345;
	ASSERT_RET(-ENOENT, qp_create(&self->e, &r, &qp));
	ASSERT_LIVE(1, 0, 1);
	ASSERT_RET(0, qp_create(&self->e, &good, &qp));
	EXPECT_QP_CAPS(&qp, &good);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	good.type = QPT_UD;
	ASSERT_RET(0, qp_create(&self->e, &good, &qp));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	ASSERT_RET(0, destroy_srq(self->e.fd, srq.handle));
}

TEST_F(q, qp_drv_cmd_bad)
{
	static uint8_t cmd[4096];
	struct qp_req r;
	uint8_t resp[128];
	size_t len;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 4, &cq, &r));
	ASSERT_RET(-EINVAL, create_qp_raw(&self->e, &r, NULL, 0, resp, QP_DRV,
					  false));
	ASSERT_RET(-EINVAL, create_qp_raw(&self->e, &r, NULL, 0, resp, QP_DRV,
					  true));
	for (len = 4; len < sizeof(r.drv); len += 4)
		ASSERT_RETM(-EINVAL, create_qp_raw(&self->e, &r, &r.drv, len,
						   resp, QP_DRV, false),
			    "(driver command of %zu bytes)", len);
	for (len = 8; len < sizeof(r.drv); len += 8)
		ASSERT_RETM(-EINVAL, create_qp_raw(&self->e, &r, &r.drv, len,
						   resp, QP_DRV, true),
			    "(extended, driver command of %zu bytes)", len);
	r.drv.comp_mask = 1;
	ASSERT_RET(-EINVAL, qp_create(&self->e, &r, &qp));
	r.drv.comp_mask = 0x80000000u;
	ASSERT_RET(-EINVAL, qp_create_x(&self->e, &r, &qp, true));
	r.drv.comp_mask = 0;
	r.drv.reserved_20 = 1;
	ASSERT_RET(-EINVAL, qp_create(&self->e, &r, &qp));
	r.drv.reserved_20 = 0;
	drv_bad_tail(cmd, sizeof(cmd), &r.drv, sizeof(r.drv), sizeof(r.drv));
	ASSERT_RET(-EOPNOTSUPP, create_qp_raw(&self->e, &r, cmd, 56, resp,
					      QP_DRV, false));
	ASSERT_RET(-EOPNOTSUPP, create_qp_raw(&self->e, &r, cmd, 56, resp,
					      QP_DRV, true));
	drv_bad_tail(cmd, sizeof(cmd), &r.drv, sizeof(r.drv),
		     sizeof(cmd) - 1);
	ASSERT_RET(-EOPNOTSUPP, create_qp_raw(&self->e, &r, cmd, sizeof(cmd),
					      resp, QP_DRV, false));
	memset(cmd, 0xff, sizeof(r.drv));
	ASSERT_RET(-EINVAL, create_qp_raw(&self->e, &r, cmd, sizeof(r.drv),
					  resp, QP_DRV, false));
	ASSERT_LIVE(1, 0, 0);
	/* Zero tails are fine. */
	drv_zero_tail(cmd, sizeof(cmd), &r.drv, sizeof(r.drv));
	ASSERT_RET(0, create_qp_raw(&self->e, &r, cmd, sizeof(cmd), resp,
				    QP_DRV, false));
	ASSERT_RET(0, destroy_qp(self->e.fd, resp_handle(resp)));
	ASSERT_RET(0, create_qp_raw(&self->e, &r, cmd, 64, resp, QP_DRV,
				    true));
	ASSERT_RET(0, destroy_qp(self->e.fd, resp_handle(resp)));
	ASSERT_LIVE(1, 0, 0);
}

TEST_F_TIMEOUT(q, qp_resp_efault_no_leak, 300)
{
	uint8_t *straddle = self->m.none - QP_CORE;
	struct qp_req r;
	struct cq cq;
	struct qp qp;
	int i;

	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 16, &cq, &r));
	for (i = 0; i < 20; i++) {
		ASSERT_RET(-EFAULT, create_qp_raw(&self->e, &r, &r.drv,
						  sizeof(r.drv), self->m.ro,
						  QP_DRV, false));
		ASSERT_RET(-EFAULT, create_qp_raw(&self->e, &r, &r.drv,
						  sizeof(r.drv), straddle,
						  QP_DRV, false));
		ASSERT_RET(-EFAULT, create_qp_raw(&self->e, &r, &r.drv,
						  sizeof(r.drv), self->m.ro, 0,
						  false));
		ASSERT_RET(-EFAULT, create_qp_raw(&self->e, &r, &r.drv,
						  sizeof(r.drv), self->m.ro,
						  QP_DRV, true));
	}
	ASSERT_TRUE(all_bytes(self->m.ro, self->m.pg, RO_FILL));
	ASSERT_LIVE(1, 0, 0);
	/* No CQ reference was left behind either. */
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, qp_destroy_twice_bogus)
{
	static const uint32_t bogus[] = { 12345, 0x7fffffff, ~0u };
	struct qp_req r;
	unsigned int i;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, cq_qp_req(&self->e, 8, QPT_RC, 4, &cq, &r));
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	for (i = 0; i < ARRAY_SIZE(bogus); i++)
		ASSERT_RETM(-ENOENT, destroy_qp(self->e.fd, bogus[i]),
			    "(handle %u)", bogus[i]);
	/* Another type's handle (core). */
	ASSERT_RET(-EINVAL, destroy_qp(self->e.fd, cq.handle));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	ASSERT_RET(-ENOENT, destroy_qp(self->e.fd, qp.handle));
	ASSERT_LIVE(1, 0, 0);
	/* Its rings and doorbell are free again. */
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	ASSERT_RET(-ENOENT, destroy_qp(self->e.fd, qp.handle));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* QP 0 and 1 are never a user QP's; numbers are 24 bits and unique. */
TEST_F_TIMEOUT(q, qp_num_never_0_1, 400)
{
	enum { N = 1024 };
	static const uint8_t types[] = { QPT_RC, QPT_UC, QPT_UD };
	static uint32_t h[N], qpn[N];
	struct qp_req r;
	int i, round;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, qenv_arena(&self->e, 2 * N * 2 + 8));
	ASSERT_RET(0, cq_new(&self->e, 1, &cq));
	for (round = 0; round < 2; round++) {
		for (i = 0; i < N; i++) {
			ASSERT_RET(0, qp_req_init(&self->e, &r, types[i % 3],
						  cq.handle, 1));
			ASSERT_RETM(0, qp_create(&self->e, &r, &qp),
				    "(QP %d)", i);
			h[i] = qp.handle;
			qpn[i] = qp.qpn;
			ASSERT_LT(1, qpn[i]) TH_LOG("QP %d has qpn %u", i,
						    qpn[i]);
			ASSERT_GE(0xffffff, qpn[i]);
		}
		qsort(qpn, N, sizeof(qpn[0]), cmp_u32);
		for (i = 1; i < N; i++) {
			ASSERT_NE(qpn[i - 1], qpn[i])
				TH_LOG("two QPs have qpn %u", qpn[i]);
		}
		ASSERT_LIVE(1, N, 0);
		for (i = 0; i < N; i++)
			ASSERT_RET(0, destroy_qp(self->e.fd, h[i]));
		/* Round 2 reuses nothing of round 1's memory. */
	}
	ASSERT_LIVE(1, 0, 0);
}

/* ---- MODIFY_QP / QUERY_QP ----------------------------------------------- */

/* An RC QP (and its CQ) in RESET. */
static int rc_qp(struct qenv *e, struct cq *cq, struct qp *qp)
{
	struct qp_req r;
	int ret = cq_qp_req(e, 16, QPT_RC, 8, cq, &r);

	return ret ? ret : qp_create(e, &r, qp);
}

/* ... taken to INIT. */
static int rc_qp_init(struct qenv *e, struct cq *cq, struct qp *qp)
{
	struct ib_uverbs_modify_qp m;
	int ret = rc_qp(e, cq, qp);

	if (ret)
		return ret;
	rc_init_attr(&m, qp->handle);
	return modify_qp(e->fd, &m);
}

/* Invalid transitions: EINVAL (ib_modify_qp_is_ok), the state unchanged. */
TEST_F(q, qp_modify_bad_transitions)
{
	struct ib_uverbs_modify_qp m;
	uint8_t gid[16];
	struct cq cq;
	struct qp qp;

	ASSERT_GID0(gid);
	ASSERT_RET(0, rc_qp(&self->e, &cq, &qp));
	/* RESET -> RTS, RTR, SQD, SQE with what those states need. */
	rc_rts_attr(&m, qp.handle);
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	rc_rtr_attr(&m, qp.handle, gid, qp.qpn);
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	ASSERT_RET(-EINVAL, modify_state(self->e.fd, qp.handle, QPS_SQD));
	ASSERT_RET(-EINVAL, modify_state(self->e.fd, qp.handle, QPS_SQE));
	/*
	 * RESET -> INIT missing a required attribute, or with a forbidden
	 * one.
	 */
	rc_init_attr(&m, qp.handle);
	m.attr_mask &= ~QPA_ACCESS;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	rc_init_attr(&m, qp.handle);
	m.attr_mask &= ~QPA_PORT;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	rc_init_attr(&m, qp.handle);
	m.attr_mask |= QPA_SQ_PSN;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	rc_init_attr(&m, qp.handle);
	m.attr_mask |= QPA_QKEY;	/* UD only */
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	/* States past ERR (core). */
	rc_init_attr(&m, qp.handle);
	m.qp_state = QPS_ERR + 1;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	m.qp_state = 0xff;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	ASSERT_EQ(QPS_RESET, qp_state(self->e.fd, qp.handle));
	/* INIT -> RTS, SQD: no. */
	rc_init_attr(&m, qp.handle);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_EQ(QPS_INIT, qp_state(self->e.fd, qp.handle));
	rc_rts_attr(&m, qp.handle);
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	ASSERT_RET(-EINVAL, modify_state(self->e.fd, qp.handle, QPS_SQD));
	/* INIT -> RTR without its required attributes. */
	rc_rtr_attr(&m, qp.handle, gid, qp.qpn);
	m.attr_mask &= ~QPA_DEST_QPN;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	rc_rtr_attr(&m, qp.handle, gid, qp.qpn);
	m.attr_mask &= ~QPA_AV;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	ASSERT_EQ(QPS_INIT, qp_state(self->e.fd, qp.handle));
	/* Core checks: non-standard mask bits, bogus handles, tails. */
	rc_init_attr(&m, qp.handle);
	m.attr_mask |= QPA_RATE_LIMIT;
	ASSERT_RET(-EOPNOTSUPP, modify_qp(self->e.fd, &m));
	rc_init_attr(&m, 12345);
	ASSERT_RET(-ENOENT, modify_qp(self->e.fd, &m));
	{
		uint8_t c[sizeof(m) + 8] = {};

		rc_init_attr(&m, qp.handle);
		memcpy(c, &m, sizeof(m));
		c[sizeof(c) - 1] = 1;
		ASSERT_RET(-EOPNOTSUPP,
			   uv_cmd(self->e.fd, IB_USER_VERBS_CMD_MODIFY_QP, c,
				  sizeof(c), NULL, 0, 0));
	}
	/* INIT -> INIT is allowed. */
	rc_init_attr(&m, qp.handle);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_EQ(QPS_INIT, qp_state(self->e.fd, qp.handle));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
}

/* Attributes out of range: EINVAL, and the QP stays where it was. */
TEST_F(q, qp_modify_bad_attrs)
{
	struct ib_uverbs_modify_qp m;
	uint8_t gid[16];
	struct cq cq;
	struct qp qp;
	int i;

	ASSERT_GID0(gid);
	ASSERT_RET(0, rc_qp(&self->e, &cq, &qp));
	/* RESET -> INIT. */
	for (i = 0; i < 6; i++) {
		rc_init_attr(&m, qp.handle);
		switch (i) {
		case 0:
			m.pkey_index = 1;	/* one P_Key */
			break;
		case 1:
			m.pkey_index = 0xffff;
			break;
		case 2:
			m.port_num = 2;		/* core */
			break;
		case 3:
			m.port_num = 0;		/* core */
			break;
		case 4:
			m.qp_access_flags = 1 << 15;
			break;
		case 5:
			m.qp_access_flags = ACC_RC | (1u << 31);
			break;
		}
		ASSERT_RETM(-EINVAL, modify_qp(self->e.fd, &m),
			    "(RESET->INIT case %d)", i);
		ASSERT_EQ(QPS_RESET, qp_state(self->e.fd, qp.handle));
	}
	rc_init_attr(&m, qp.handle);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	/* INIT -> RTR. */
	for (i = 0; i < 13; i++) {
		rc_rtr_attr(&m, qp.handle, gid, qp.qpn);
		switch (i) {
		case 0:
			m.path_mtu = 0;
			break;
		case 1:
			m.path_mtu = 6;
			break;
		case 2:
			m.path_mtu = 0xff;
			break;
		case 3:
			m.dest_qp_num = 1 << 24;
			break;
		case 4:
			m.dest_qp_num = ~0u;
			break;
		case 5:
			m.max_dest_rd_atomic = 129;
			break;
		case 6:
			m.max_dest_rd_atomic = 0xff;
			break;
		case 7:
			m.min_rnr_timer = 32;
			break;
		case 8:
			m.min_rnr_timer = 0xff;
			break;
		case 9:		/* core: no such GID entry */
			m.dest.sgid_index = 200;
			break;
		case 10:	/* core: not the QP's port */
			m.dest.port_num = 2;
			break;
		case 11:	/* core: RoCE needs a GRH */
			m.dest.is_global = 0;
			break;
		case 12:
			m.qp_access_flags = 1 << 15;
			m.attr_mask |= QPA_ACCESS;
			break;
		}
		ASSERT_RETM(-EINVAL, modify_qp(self->e.fd, &m),
			    "(INIT->RTR case %d)", i);
		ASSERT_EQ(QPS_INIT, qp_state(self->e.fd, qp.handle));
	}
	rc_rtr_attr(&m, qp.handle, gid, qp.qpn);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	/* RTR -> RTS. */
	for (i = 0; i < 8; i++) {
		rc_rts_attr(&m, qp.handle);
		switch (i) {
		case 0:
			m.timeout = 32;
			break;
		case 1:
			m.timeout = 0xff;
			break;
		case 2:
			m.retry_cnt = 8;
			break;
		case 3:
			m.retry_cnt = 0xff;
			break;
		case 4:
			m.rnr_retry = 8;
			break;
		case 5:
			m.max_rd_atomic = 129;
			break;
		case 6:
			m.max_rd_atomic = 0xff;
			break;
		case 7:
			m.min_rnr_timer = 32;
			m.attr_mask |= QPA_MIN_RNR;
			break;
		}
		ASSERT_RETM(-EINVAL, modify_qp(self->e.fd, &m),
			    "(RTR->RTS case %d)", i);
		ASSERT_EQ(QPS_RTR, qp_state(self->e.fd, qp.handle));
	}
	rc_rts_attr(&m, qp.handle);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_EQ(QPS_RTS, qp_state(self->e.fd, qp.handle));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
}

/*
 * PSNs are 24 bits.  On RoCE the core masks rq_psn/sq_psn to 24 bits (with
 * a dev_warn) before the driver sees them (_ib_modify_qp): the modify
 * succeeds and the QP has the masked value (docs/ABI.md).
 */
TEST_F(q, qp_modify_psn_24bit)
{
	struct ib_uverbs_query_qp_resp qr;
	struct ib_uverbs_modify_qp m;
	uint8_t gid[16];
	struct cq cq;
	struct qp qp;

	ASSERT_GID0(gid);
	ASSERT_RET(0, rc_qp_init(&self->e, &cq, &qp));
	rc_rtr_attr(&m, qp.handle, gid, qp.qpn);
	m.rq_psn = (1 << 24) | 7;
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_RET(0, query_qp(self->e.fd, qp.handle, &qr));
	ASSERT_EQ(QPS_RTR, qr.qp_state);
	ASSERT_EQ(7, qr.rq_psn);
	rc_rts_attr(&m, qp.handle);
	m.sq_psn = 0xff000005u;
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_RET(0, query_qp(self->e.fd, qp.handle, &qr));
	ASSERT_EQ(QPS_RTS, qr.qp_state);
	ASSERT_EQ(5, qr.sq_psn);
}

/* Alternate paths: the core bans APM on RoCE (EINVAL, _ib_modify_qp). */
TEST_F(q, qp_modify_alt_path)
{
	struct ib_uverbs_modify_qp m;
	uint8_t gid[16];
	struct cq cq;
	struct qp qp;

	ASSERT_GID0(gid);
	ASSERT_RET(0, rc_qp_init(&self->e, &cq, &qp));
	rc_rtr_attr(&m, qp.handle, gid, qp.qpn);
	m.attr_mask |= QPA_ALT_PATH;
	m.alt_dest = m.dest;
	m.alt_port_num = 1;
	m.alt_timeout = 14;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	ASSERT_EQ(QPS_INIT, qp_state(self->e.fd, qp.handle));
	rc_rtr_attr(&m, qp.handle, gid, qp.qpn);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	rc_rts_attr(&m, qp.handle);
	m.attr_mask |= QPA_ALT_PATH;
	m.alt_dest = m.dest;
	memcpy(m.alt_dest.dgid, gid, 16);
	m.alt_dest.is_global = 1;
	m.alt_dest.port_num = 1;
	m.alt_port_num = 1;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	ASSERT_EQ(QPS_RTR, qp_state(self->e.fd, qp.handle));
}

/* RESET -> INIT -> RTR -> RTS for two RC QPs aimed at each other. */
TEST_F(q, qp_modify_rc_to_rts)
{
	struct ib_uverbs_query_qp_resp qr;
	struct ib_uverbs_modify_qp m;
	struct qp_req r;
	struct qp qp[2];
	uint8_t gid[16];
	struct cq cq;
	int i;

	ASSERT_GID0(gid);
	ASSERT_RET(0, cq_new(&self->e, 64, &cq));
	for (i = 0; i < 2; i++) {
		ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_RC, cq.handle,
					  16));
		ASSERT_RET(0, qp_create(&self->e, &r, &qp[i]));
	}
	for (i = 0; i < 2; i++) {
		rc_init_attr(&m, qp[i].handle);
		ASSERT_RET(0, modify_qp(self->e.fd, &m));
		ASSERT_RET(0, query_qp(self->e.fd, qp[i].handle, &qr));
		EXPECT_EQ(QPS_INIT, qr.qp_state);
		EXPECT_EQ(1, qr.port_num);
		EXPECT_EQ(0, qr.pkey_index);
		EXPECT_EQ(ACC_RC, qr.qp_access_flags);
	}
	for (i = 0; i < 2; i++) {
		rc_rtr_attr(&m, qp[i].handle, gid, qp[!i].qpn);
		ASSERT_RET(0, modify_qp(self->e.fd, &m));
		ASSERT_RET(0, query_qp(self->e.fd, qp[i].handle, &qr));
		EXPECT_EQ(QPS_RTR, qr.qp_state);
		EXPECT_EQ(MTU_1024, qr.path_mtu);
		EXPECT_EQ(qp[!i].qpn, qr.dest_qp_num);
		EXPECT_EQ(PSN_BASE, qr.rq_psn);
		EXPECT_EQ(4, qr.max_dest_rd_atomic);
		EXPECT_EQ(12, qr.min_rnr_timer);
		EXPECT_EQ(1, qr.dest.is_global);
		EXPECT_EQ(0, qr.dest.sgid_index);
		EXPECT_EQ(1, qr.dest.port_num);
		EXPECT_EQ(0, memcmp(qr.dest.dgid, gid, 16))
			TH_LOG("QUERY_QP's dgid is not the one set");
	}
	for (i = 0; i < 2; i++) {
		rc_rts_attr(&m, qp[i].handle);
		ASSERT_RET(0, modify_qp(self->e.fd, &m));
		ASSERT_RET(0, query_qp(self->e.fd, qp[i].handle, &qr));
		EXPECT_EQ(QPS_RTS, qr.qp_state);
		EXPECT_EQ(PSN_BASE + 1, qr.sq_psn);
		EXPECT_EQ(PSN_BASE, qr.rq_psn);
		EXPECT_EQ(14, qr.timeout);
		EXPECT_EQ(7, qr.retry_cnt);
		EXPECT_EQ(7, qr.rnr_retry);
		EXPECT_EQ(4, qr.max_rd_atomic);
		EXPECT_EQ(4, qr.max_dest_rd_atomic);
		EXPECT_EQ(MTU_1024, qr.path_mtu);
		EXPECT_EQ(qp[!i].qpn, qr.dest_qp_num);
		EXPECT_EQ(qp[i].core.max_send_wr, qr.max_send_wr);
		EXPECT_EQ(qp[i].core.max_recv_wr, qr.max_recv_wr);
		EXPECT_EQ(qp[i].core.max_send_sge, qr.max_send_sge);
		EXPECT_EQ(qp[i].core.max_recv_sge, qr.max_recv_sge);
		EXPECT_EQ(qp[i].core.max_inline_data, qr.max_inline_data);
	}
	/* RTS -> RTS with optional attributes, -> ERR -> RESET -> INIT. */
	memset(&m, 0, sizeof(m));
	m.qp_handle = qp[0].handle;
	m.attr_mask = QPA_STATE | QPA_MIN_RNR;
	m.qp_state = QPS_RTS;
	m.min_rnr_timer = 20;
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_RET(0, query_qp(self->e.fd, qp[0].handle, &qr));
	EXPECT_EQ(20, qr.min_rnr_timer);
	ASSERT_RET(0, modify_state(self->e.fd, qp[0].handle, QPS_ERR));
	ASSERT_EQ(QPS_ERR, qp_state(self->e.fd, qp[0].handle));
	ASSERT_RET(0, modify_state(self->e.fd, qp[0].handle, QPS_RESET));
	ASSERT_EQ(QPS_RESET, qp_state(self->e.fd, qp[0].handle));
	rc_init_attr(&m, qp[0].handle);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	/* Destroying QPs in RTS and INIT. */
	for (i = 0; i < 2; i++)
		ASSERT_RET(0, destroy_qp(self->e.fd, qp[i].handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
}

/*
 * The state page counts each engine's QPs in ERROR (err_qps, for the
 * provider's receive-kick elision): a QP counts once from its move to
 * ERROR until it goes back to RESET or is destroyed.
 */
#define EXPECT_ERR_QPS(st, want, n) do {				\
	unsigned int __e;						\
	for (__e = 0; __e < (n); __e++)					\
		EXPECT_EQ((want)[__e], (st)[__e].err_qps)		\
			TH_LOG("err_qps of engine %u", __e);		\
} while (0)

TEST_F(q, qp_err_count)
{
	const unsigned int n = self->e.drv.num_engines;
	uint32_t base[URDMA_MAX_ENGINES], want[URDMA_MAX_ENGINES];
	const volatile struct urdma_engine_state *st;
	struct ib_uverbs_modify_qp m;
	unsigned int i, eng[3];
	struct qp_req r;
	struct qp qp[3];
	struct cq cq;
	void *p;

	ASSERT_LE(1, n);
	ASSERT_GE(URDMA_MAX_ENGINES, n);
	p = mmap(NULL, self->e.pg, PROT_READ, MAP_SHARED, self->e.fd,
		 self->e.drv.engine_mmap_offset);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerrorname_np(errno));
	st = p;
	for (i = 0; i < n; i++)
		base[i] = want[i] = st[i].err_qps;
	ASSERT_RET(0, cq_new(&self->e, 16, &cq));
	for (i = 0; i < 3; i++) {
		ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_RC, cq.handle, 8));
		ASSERT_RET(0, qp_create(&self->e, &r, &qp[i]));
		eng[i] = qp[i].drv.engine;
		ASSERT_GT(n, eng[i]);
		rc_init_attr(&m, qp[i].handle);
		ASSERT_RET(0, modify_qp(self->e.fd, &m));
	}
	EXPECT_ERR_QPS(st, want, n);
	/* INIT -> ERR counts; ERR -> ERR does not count again. */
	for (i = 0; i < 3; i++) {
		ASSERT_RET(0, modify_state(self->e.fd, qp[i].handle, QPS_ERR));
		want[eng[i]]++;
		EXPECT_ERR_QPS(st, want, n);
	}
	ASSERT_RET(0, modify_state(self->e.fd, qp[0].handle, QPS_ERR));
	EXPECT_ERR_QPS(st, want, n);
	/* RESET drops it; INIT again does not count. */
	ASSERT_RET(0, modify_state(self->e.fd, qp[0].handle, QPS_RESET));
	want[eng[0]]--;
	EXPECT_ERR_QPS(st, want, n);
	rc_init_attr(&m, qp[0].handle);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	EXPECT_ERR_QPS(st, want, n);
	/* Destroying a QP in ERROR drops it, one in INIT changes nothing. */
	ASSERT_RET(0, destroy_qp(self->e.fd, qp[1].handle));
	want[eng[1]]--;
	EXPECT_ERR_QPS(st, want, n);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp[0].handle));
	EXPECT_ERR_QPS(st, want, n);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp[2].handle));
	EXPECT_ERR_QPS(st, base, n);
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	EXPECT_EQ(0, munmap(p, self->e.pg));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, qp_modify_ud_to_rts)
{
	struct ib_uverbs_query_qp_resp qr;
	struct ib_uverbs_modify_qp m;
	struct qp_req r;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, cq_qp_req(&self->e, 16, QPT_UD, 8, &cq, &r));
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	/* UD INIT needs a Q_Key, and takes no access flags. */
	memset(&m, 0, sizeof(m));
	m.qp_handle = qp.handle;
	m.attr_mask = QPA_STATE | QPA_PKEY | QPA_PORT;
	m.qp_state = QPS_INIT;
	m.port_num = 1;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	m.attr_mask |= QPA_QKEY | QPA_ACCESS;
	m.qkey = 0x11111111;
	ASSERT_RET(-EINVAL, modify_qp(self->e.fd, &m));
	m.attr_mask &= ~QPA_ACCESS;
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_RET(0, modify_state(self->e.fd, qp.handle, QPS_RTR));
	memset(&m, 0, sizeof(m));
	m.qp_handle = qp.handle;
	m.attr_mask = QPA_STATE | QPA_SQ_PSN;
	m.qp_state = QPS_RTS;
	m.sq_psn = 99;
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_RET(0, query_qp(self->e.fd, qp.handle, &qr));
	EXPECT_EQ(QPS_RTS, qr.qp_state);
	EXPECT_EQ(0x11111111, qr.qkey);
	EXPECT_EQ(99, qr.sq_psn);
	EXPECT_EQ(1, qr.port_num);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
}

/* Modify to RESET zeroes all four fields of the QP's doorbell record. */
TEST_F(q, qp_modify_reset_clears_db)
{
	struct ib_uverbs_modify_qp m;
	volatile struct urdma_qp_db *db;
	struct qp_req r;
	struct cq cq;
	struct qp qp;

	ASSERT_RET(0, cq_qp_req(&self->e, 16, QPT_RC, 8, &cq, &r));
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	db = (volatile struct urdma_qp_db *)(uintptr_t)r.drv.db_addr;
	rc_init_attr(&m, qp.handle);
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	/* Two empty receives posted, and scribbles on the engine's half. */
	db->rq_prod = 2;
	db->sq_cons = 0x5555;
	db->rq_cons = 0x7777;
	__sync_synchronize();
	ASSERT_RET(0, modify_state(self->e.fd, qp.handle, QPS_RESET));
	__sync_synchronize();
	EXPECT_EQ(0, db->sq_prod);
	EXPECT_EQ(0, db->rq_prod);
	EXPECT_EQ(0, db->sq_cons);
	EXPECT_EQ(0, db->rq_cons);
	ASSERT_EQ(QPS_RESET, qp_state(self->e.fd, qp.handle));
	/* And the QP works from there. */
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
}

/* A zero-WR POST_SEND: the kick the provider gives a sleeping engine. */
static int kick_sq(int fd, uint32_t qp_handle)
{
	struct ib_uverbs_post_send_resp resp;
	struct ib_uverbs_post_send c = {
		.response = (uintptr_t)&resp,
		.qp_handle = qp_handle,
		.wqe_size = sizeof(struct ib_uverbs_send_wr),
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_POST_SEND, &c, sizeof(c), NULL, 0,
		      sizeof(resp));
}

/*
 * A garbage SQ producer index moves the QP to ERROR with one
 * IB_EVENT_QP_FATAL.  Every later engine pass finds the index still
 * garbage; none may raise another event: each is a GFP_ATOMIC allocation
 * in uverbs' event queue, which nothing bounds, so an event per pass let
 * one user exhaust the kernel's memory.
 */
TEST_F(q, qp_fatal_event_once)
{
	struct ib_uverbs_async_event_desc ev[64];
	struct ib_uverbs_modify_qp m;
	volatile struct urdma_qp_db *db;
	unsigned int fatal = 0, other = 0;
	struct qp_req r;
	struct cq cq;
	struct qp qp;
	ssize_t n;
	int i;

	ASSERT_RET(0, cq_qp_req(&self->e, 16, QPT_UD, 8, &cq, &r));
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	db = (volatile struct urdma_qp_db *)(uintptr_t)r.drv.db_addr;
	memset(&m, 0, sizeof(m));
	m.qp_handle = qp.handle;
	m.attr_mask = QPA_STATE | QPA_PKEY | QPA_PORT | QPA_QKEY;
	m.qp_state = QPS_INIT;
	m.port_num = 1;
	m.qkey = 0x11111111;
	ASSERT_RET(0, modify_qp(self->e.fd, &m));
	ASSERT_RET(0, modify_state(self->e.fd, qp.handle, QPS_RTR));
	memset(&m, 0, sizeof(m));
	m.qp_handle = qp.handle;
	m.attr_mask = QPA_STATE | QPA_SQ_PSN;
	m.qp_state = QPS_RTS;
	ASSERT_RET(0, modify_qp(self->e.fd, &m));

	/* A ring and a half ahead of the engine. */
	db->sq_prod = r.drv.sq_nent + r.drv.sq_nent / 2;
	__sync_synchronize();
	/* Kicks, and time for many passes in between. */
	for (i = 0; i < 20; i++) {
		ASSERT_RET(0, kick_sq(self->e.fd, qp.handle));
		usleep(20 * 1000);
	}
	EXPECT_EQ(QPS_ERR, qp_state(self->e.fd, qp.handle));

	ASSERT_EQ(0, fcntl(self->e.async_fd, F_SETFL, O_NONBLOCK));
	while ((n = read(self->e.async_fd, ev, sizeof(ev))) > 0) {
		for (i = 0; i < n / (ssize_t)sizeof(ev[0]); i++) {
			/* enum ib_event_type: IB_EVENT_QP_FATAL is 1. */
			if (ev[i].event_type == 1)
				fatal++;
			else
				other++;
		}
	}
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(1, fatal) TH_LOG("%u QP_FATAL events, %u others", fatal,
				   other);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
}

/*
 * A user RC QP of 8 WRs on its own CQ, connected to itself (the local
 * path: the engine plays both ends).
 */
static int rsv_self_qp(struct qenv *e, struct cq *cq, struct qp_req *r,
		       struct qp *qp)
{
	struct ib_uverbs_modify_qp m;
	uint8_t gid[16];
	int ret;

	ret = read_gid(0, gid);
	ret = ret ?: cq_qp_req(e, 16, QPT_RC, 8, cq, r);
	ret = ret ?: qp_create(e, r, qp);
	if (ret)
		return ret;
	rc_init_attr(&m, qp->handle);
	ret = modify_qp(e->fd, &m);
	rc_rtr_attr(&m, qp->handle, gid, qp->qpn);
	ret = ret ?: modify_qp(e->fd, &m);
	rc_rts_attr(&m, qp->handle);
	m.sq_psn = PSN_BASE;	/* its own receive PSN: it talks to itself */
	return ret ?: modify_qp(e->fd, &m);
}

/* A signaled zero-length @opcode WQE in SQ slot @i; the caller posts it. */
static struct urdma_send_wqe *rsv_send_wqe(const struct qp_req *r,
					   uint32_t i, uint8_t opcode)
{
	uint8_t *sq = (void *)(uintptr_t)r->drv.sq_buf_addr;
	struct urdma_send_wqe *w;

	w = (void *)(sq + (i % r->drv.sq_nent) * r->drv.sq_stride);
	memset(w, 0, r->drv.sq_stride);
	w->wr_id = 100 + i;
	w->opcode = opcode;
	w->flags = URDMA_WQE_SIGNALED;
	return w;
}

/* Publish SQ producer index @prod and kick the engine. */
static int rsv_post(struct qenv *e, const struct qp_req *r, uint32_t handle,
		    uint32_t prod)
{
	volatile struct urdma_qp_db *db = (void *)(uintptr_t)r->drv.db_addr;

	__sync_synchronize();
	db->sq_prod = prod;
	__sync_synchronize();
	return kick_sq(e->fd, handle);
}

/* The CQE at index @i of @cq (first pass over the ring), within 5 s. */
static const struct urdma_cqe *rsv_cqe(const struct cq *cq, uint32_t i)
{
	const volatile struct urdma_cqe *c =
		(const void *)(cq->buf + i * URDMA_CQE_SIZE);
	int t;

	for (t = 0; t < 500; t++) {
		if (c->owner & 1) {
			__sync_synchronize();
			return (const struct urdma_cqe *)c;
		}
		usleep(10 * 1000);
	}
	return NULL;
}

/*
 * Reserved fields of a send WQE (docs/ABI.md: they must be zero) are
 * checked like any other field: a WQE with one set fails with
 * LOC_QP_OP_ERR and does nothing, so the bits can gain a meaning later.
 * The same WQE with them clear succeeds.
 */
TEST_F(q, send_wqe_reserved_fields)
{
	static const char *const names[] = {
		"reserved_58", "reserved_1a0", "reserved_1c0",
	};
	const struct urdma_cqe *c;
	struct urdma_send_wqe *w;
	struct qp_req r;
	struct cq cq;
	struct qp qp;
	uint32_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		ASSERT_RET(0, rsv_self_qp(&self->e, &cq, &r, &qp));
		/* A zero-length RDMA WRITE to itself: no key is looked at. */
		rsv_send_wqe(&r, 0, URDMA_WQE_RDMA_WRITE);
		ASSERT_RET(0, rsv_post(&self->e, &r, qp.handle, 1));
		c = rsv_cqe(&cq, 0);
		ASSERT_NE(NULL, c) TH_LOG("no CQE for the clean WQE");
		EXPECT_EQ(0, c->status) TH_LOG("the clean WQE");
		w = rsv_send_wqe(&r, 1, URDMA_WQE_RDMA_WRITE);
		if (i == 0)
			w->reserved_58 = 0x80;
		else if (i == 1)
			w->reserved_1a0 = 1;
		else
			w->reserved_1c0 = 1ull << 63;
		ASSERT_RET(0, rsv_post(&self->e, &r, qp.handle, 2));
		c = rsv_cqe(&cq, 1);
		ASSERT_NE(NULL, c) TH_LOG("no CQE with %s set", names[i]);
		EXPECT_EQ(101, c->wr_id);
		/* IB_WC_LOC_QP_OP_ERR */
		EXPECT_EQ(2, c->status) TH_LOG("%s set", names[i]);
		ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
		ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	}
}

/*
 * ... and of a receive WQE: the message that would consume it completes
 * it with LOC_QP_OP_ERR instead, and the sender learns of it.
 */
TEST_F(q, recv_wqe_reserved_fields)
{
	volatile struct urdma_qp_db *db;
	const struct urdma_cqe *c[2];
	struct urdma_recv_wqe *rw;
	struct qp_req r;
	struct cq cq;
	struct qp qp;
	uint32_t i;

	for (i = 0; i < 4; i++) {
		ASSERT_RET(0, rsv_self_qp(&self->e, &cq, &r, &qp));
		db = (void *)(uintptr_t)r.drv.db_addr;
		rw = (void *)(uintptr_t)r.drv.rq_buf_addr;
		memset(rw, 0, r.drv.rq_stride);
		rw->wr_id = 7;
		/* i == 0: all clear, the SEND lands. */
		if (i == 1)
			rw->reserved_48 = 1;
		else if (i == 2)
			rw->reserved_50 = 0x8000;
		else if (i == 3)
			rw->reserved_60 = 1;
		__sync_synchronize();
		db->rq_prod = 1;
		rsv_send_wqe(&r, 0, URDMA_WQE_SEND);
		ASSERT_RET(0, rsv_post(&self->e, &r, qp.handle, 1));
		c[0] = rsv_cqe(&cq, 0);
		c[1] = rsv_cqe(&cq, 1);
		ASSERT_NE(NULL, c[0]) TH_LOG("case %u: no CQE", i);
		ASSERT_NE(NULL, c[1]) TH_LOG("case %u: one CQE", i);
		if (c[0]->wr_id != 7) {	/* the receive first */
			const struct urdma_cqe *t = c[0];

			c[0] = c[1];
			c[1] = t;
		}
		ASSERT_EQ(7, c[0]->wr_id);
		ASSERT_EQ(100, c[1]->wr_id);
		if (i == 0) {
			EXPECT_EQ(0, c[0]->status);
			EXPECT_EQ(0, c[1]->status);
		} else {
			/* IB_WC_LOC_QP_OP_ERR; the sender's: not success. */
			EXPECT_EQ(2, c[0]->status) TH_LOG("case %u", i);
			EXPECT_NE(0, c[1]->status) TH_LOG("case %u", i);
		}
		ASSERT_RET(0, destroy_qp(self->e.fd, qp.handle));
		ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	}
}

/* ---- CREATE_SRQ / MODIFY_SRQ / QUERY_SRQ / DESTROY_SRQ ------------------ */

TEST_F(q, srq_create_destroy)
{
	struct ib_uverbs_create_srq_resp core;
	struct urdma_create_srq_resp drv;
	uint8_t *resp = self->m.rw;
	struct srq s[4];
	struct srq_req r;
	int i, j;

	for (i = 0; i < 4; i++) {
		ASSERT_RET(0, srq_new(&self->e, 1u << (4 * i), &s[i]));
		EXPECT_LE(1u << (4 * i), s[i].max_wr);
		EXPECT_LE(1, s[i].max_sge);
		for (j = 0; j < i; j++) {
			ASSERT_NE(s[i].srqn, s[j].srqn) TH_LOG("srqn reused");
		}
	}
	ASSERT_LIVE(0, 0, 4);
	/* The exact response. */
	ASSERT_RET(0, srq_req_init(&self->e, &r, 16));
	memset(resp, GUARD, self->m.pg);
	ASSERT_RET(0, create_srq_raw(&self->e, &r, &r.drv, sizeof(r.drv), resp,
				     SRQ_DRV));
	memcpy(&core, resp, sizeof(core));
	memcpy(&drv, resp + SRQ_CORE, sizeof(drv));
	EXPECT_EQ(0, drv.comp_mask);
	EXPECT_LE(16, core.max_wr);
	EXPECT_TRUE(all_bytes(resp + SRQ_CORE + SRQ_DRV,
			      self->m.pg - SRQ_CORE - SRQ_DRV, GUARD));
	ASSERT_RET(0, destroy_srq(self->e.fd, core.srq_handle));
	/* Truncated driver response. */
	ASSERT_RET(0, srq_req_init(&self->e, &r, 16));
	memset(resp, GUARD, self->m.pg);
	ASSERT_RET(0, create_srq_raw(&self->e, &r, &r.drv, sizeof(r.drv), resp,
				     0));
	memcpy(&core, resp, sizeof(core));
	EXPECT_TRUE(all_bytes(resp + SRQ_CORE, self->m.pg - SRQ_CORE, GUARD));
	ASSERT_RET(0, destroy_srq(self->e.fd, core.srq_handle));
	for (i = 0; i < 4; i++)
		ASSERT_RET(0, destroy_srq(self->e.fd, s[i].handle));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, srq_bad_caps)
{
	struct srq_req r, good;
	struct srq s;
	int i, ret;

	ASSERT_RET(0, srq_req_big(&self->e, &good, 16,
				  2 * MAX_SRQ_WR * MAX_STRIDE));
	for (i = 0; i < 6; i++) {
		r = good;
		switch (i) {
		case 0:
			r.max_wr = 0;
			break;
		case 1:
			r.max_wr = MAX_SRQ_WR + 1;
			r.drv.nent = 2 * MAX_SRQ_WR;
			break;
		case 2:
			r.max_wr = MAX_SRQ_WR + 1;
			r.drv.nent = MAX_SRQ_WR;
			break;
		case 3:
			r.max_wr = ~0u;
			break;
		case 4:
			r.max_sge = MAX_SGE + 1;
			r.drv.stride = MAX_STRIDE;
			break;
		case 5:
			r.max_sge = ~0u;
			r.drv.stride = MAX_STRIDE;
			break;
		}
		ASSERT_RETM(-EINVAL, srq_try(&self->e, &r), "(case %d)", i);
	}
	/*
	 * A limit larger than the SRQ at create time: docs/ABI.md's row
	 * does not say "modify", but verbs ignore srq_limit on create
	 * (ibv_create_srq(3)).  Either way it must not arm the SRQ.
	 */
	for (i = 0; i < 2; i++) {
		struct ib_uverbs_query_srq_resp qr;

		r = good;
		r.limit = i ? ~0u : 17;
		ret = srq_create(&self->e, &r, &s);
		ASSERT_TRUE(ret == -EINVAL || ret == 0)
			TH_LOG("srq_limit %u at create: %s", r.limit,
			       ename(ret));
		if (!ret) {
			ASSERT_RET(0, query_srq(self->e.fd, s.handle, &qr));
			EXPECT_EQ(0, qr.srq_limit);
			ASSERT_RET(0, destroy_srq(self->e.fd, s.handle));
		}
	}
	ASSERT_LIVE(0, 0, 0);
	/* The limits themselves, on the same memory. */
	r = good;
	r.max_wr = r.drv.nent = MAX_SRQ_WR;
	r.max_sge = MAX_SGE;
	r.drv.stride = MAX_STRIDE;
	r.limit = MAX_SRQ_WR;
	ASSERT_RET(0, srq_create(&self->e, &r, &s));
	ASSERT_RET(0, destroy_srq(self->e.fd, s.handle));
	ASSERT_RET(0, srq_create(&self->e, &good, &s));
}

TEST_F(q, srq_nent_stride_bad)
{
	struct srq_req r, good;
	struct srq s;
	int i;

	ASSERT_RET(0, srq_req_big(&self->e, &good, 16, 2 * MAX_SRQ_WR * 128));
	for (i = 0; i < 13; i++) {
		r = good;
		switch (i) {
		case 0:
			r.drv.nent = 0;
			break;
		case 1:
			r.drv.nent = 3;
			break;
		case 2:
			r.drv.nent = 24;
			break;
		case 3:	/* smaller than max_wr */
			r.drv.nent = 8;
			break;
		case 4:
			r.drv.nent = 2 * MAX_SRQ_WR;
			break;
		case 5:
			r.drv.nent = 1u << 31;
			break;
		case 6:
			r.drv.stride = 0;
			break;
		case 7:
			r.drv.stride = 32;
			break;
		case 8:
			r.drv.stride = 96;
			break;
		case 9:
			r.drv.stride = 384;
			break;
		case 10:
			r.drv.stride = ~0u;
			break;
		case 11:	/* 16 + 16 x 4 > 64 */
			r.max_sge = 4;
			break;
		case 12:	/* 16 + 16 x 16 > 256 */
			r.max_sge = MAX_SGE;
			r.drv.stride = 256;
			break;
		}
		ASSERT_RETM(-EINVAL, srq_try(&self->e, &r), "(case %d)", i);
	}
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, srq_create(&self->e, &good, &s));
}

TEST_F(q, srq_memory_bad)
{
	uint8_t *ro = ro_pages(1), *hole;
	struct srq_req r, good;
	struct srq s;
	struct cq cq;
	int i;

	ASSERT_NE(NULL, ro);
	ASSERT_RET(0, cq_new(&self->e, 1, &cq));
	ASSERT_RET(0, srq_req_init(&self->e, &good, 16));
	hole = hole_pages(1);	/* after every other mapping */
	ASSERT_NE(NULL, hole);
	for (i = 0; i < 11; i++) {
		int want = i < 5 ? -EINVAL : -EFAULT;

		r = good;
		switch (i) {
		case 0:
			r.drv.buf_addr += 64;
			break;
		case 1:
			r.drv.db_addr += 8;
			break;
		case 2:	/* the CQ's ring */
			r.drv.buf_addr = (uintptr_t)cq.buf;
			break;
		case 3:	/* the CQ's doorbell page */
			r.drv.buf_addr = cq.db & ~(uint64_t)(self->e.pg - 1);
			break;
		case 4:	/* a doorbell in the CQ's ring */
			r.drv.db_addr = (uintptr_t)cq.buf + 16;
			break;
		case 5:
			r.drv.buf_addr = (uintptr_t)hole;
			break;
		case 6:
			r.drv.buf_addr = (uintptr_t)ro;
			break;
		case 7:
			r.drv.db_addr = (uintptr_t)ro;
			break;
		case 8:
			r.drv.db_addr = (uintptr_t)hole + 16;
			break;
		case 9:
			r.drv.buf_addr = 0;
			break;
		case 10:
			r.drv.buf_addr = 0xffff888000000000ull;
			break;
		}
		ASSERT_RETM(want, srq_try(&self->e, &r), "(case %d)", i);
	}
	ASSERT_TRUE(all_bytes(ro, self->e.pg, 0));
	ASSERT_LIVE(1, 0, 0);
	ASSERT_RET(0, srq_create(&self->e, &good, &s));
	/* A second SRQ on the same ring, or a QP's RQ on it: overlap. */
	ASSERT_RET(-EINVAL, srq_create(&self->e, &good, &s));
	{
		struct qp_req q;
		struct qp qp;

		ASSERT_RET(0, qp_req_init(&self->e, &q, QPT_RC, cq.handle, 16));
		q.drv.rq_buf_addr = good.drv.buf_addr;
		ASSERT_RET(-EINVAL, qp_create(&self->e, &q, &qp));
	}
	ASSERT_LIVE(1, 0, 1);
}

/*
 * Everything through reserved_e0; the mandatory part ends with stride,
 * so a command without reserved_e0 (28 bytes) is an older, valid one.
 */
TEST_F(q, srq_drv_cmd_bad)
{
	static uint8_t cmd[4096];
	uint8_t resp[64];
	struct srq_req r;
	struct srq s;
	size_t len;

	ASSERT_RET(0, srq_req_init(&self->e, &r, 16));
	ASSERT_RET(-EINVAL, create_srq_raw(&self->e, &r, NULL, 0, resp,
					   SRQ_DRV));
	for (len = 4; len < offsetof(struct urdma_create_srq_cmd, reserved_e0);
	     len += 4)
		ASSERT_RETM(-EINVAL, create_srq_raw(&self->e, &r, &r.drv, len,
						    resp, SRQ_DRV),
			    "(driver command of %zu bytes)", len);
	r.drv.comp_mask = 1;
	ASSERT_RET(-EINVAL, srq_create(&self->e, &r, &s));
	r.drv.comp_mask = 0;
	r.drv.reserved_e0 = 1;
	ASSERT_RET(-EINVAL, srq_create(&self->e, &r, &s));
	r.drv.reserved_e0 = 0;
	drv_bad_tail(cmd, sizeof(cmd), &r.drv, sizeof(r.drv), sizeof(r.drv));
	ASSERT_RET(-EOPNOTSUPP, create_srq_raw(&self->e, &r, cmd, 40, resp,
					       SRQ_DRV));
	drv_bad_tail(cmd, sizeof(cmd), &r.drv, sizeof(r.drv),
		     sizeof(cmd) - 1);
	ASSERT_RET(-EOPNOTSUPP, create_srq_raw(&self->e, &r, cmd, sizeof(cmd),
					       resp, SRQ_DRV));
	memset(cmd, 0xff, sizeof(r.drv));
	ASSERT_RET(-EINVAL, create_srq_raw(&self->e, &r, cmd, sizeof(r.drv),
					   resp, SRQ_DRV));
	ASSERT_LIVE(0, 0, 0);
	/* Without reserved_e0; with a zero tail. */
	ASSERT_RET(0, create_srq_raw(&self->e, &r, &r.drv,
				     offsetof(struct urdma_create_srq_cmd,
					      reserved_e0),
				     resp, SRQ_DRV));
	ASSERT_RET(0, destroy_srq(self->e.fd, resp_handle(resp)));
	drv_zero_tail(cmd, sizeof(cmd), &r.drv, sizeof(r.drv));
	ASSERT_RET(0, create_srq_raw(&self->e, &r, cmd, sizeof(cmd), resp,
				     SRQ_DRV));
	ASSERT_RET(0, destroy_srq(self->e.fd, resp_handle(resp)));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F_TIMEOUT(q, srq_resp_efault_no_leak, 300)
{
	uint8_t *straddle = self->m.none - SRQ_CORE;
	struct srq_req r;
	struct srq s;
	int i;

	ASSERT_RET(0, srq_req_init(&self->e, &r, 16));
	for (i = 0; i < 20; i++) {
		ASSERT_RET(-EFAULT, create_srq_raw(&self->e, &r, &r.drv,
						   sizeof(r.drv), self->m.ro,
						   SRQ_DRV));
		ASSERT_RET(-EFAULT, create_srq_raw(&self->e, &r, &r.drv,
						   sizeof(r.drv), straddle,
						   SRQ_DRV));
		ASSERT_RET(-EFAULT, create_srq_raw(&self->e, &r, &r.drv,
						   sizeof(r.drv), self->m.ro,
						   0));
	}
	ASSERT_TRUE(all_bytes(self->m.ro, self->m.pg, RO_FILL));
	ASSERT_LIVE(0, 0, 0);
	ASSERT_RET(0, srq_create(&self->e, &r, &s));
	ASSERT_RET(0, destroy_srq(self->e.fd, s.handle));
}

TEST_F(q, srq_modify_query)
{
	struct ib_uverbs_query_srq_resp qr;
	uint8_t tail[8] = { 0, 0, 0, 0, 0, 0, 0, 1 }, zero[8] = {};
	struct srq s;

	ASSERT_RET(0, srq_new(&self->e, 16, &s));
	ASSERT_RET(0, query_srq(self->e.fd, s.handle, &qr));
	EXPECT_LE(16, qr.max_wr);
	EXPECT_LE(1, qr.max_sge);
	EXPECT_EQ(0, qr.srq_limit);
	/* Arm the limit. */
	ASSERT_RET(0, modify_srq(self->e.fd, s.handle, SRQA_LIMIT, 0, 8, NULL,
				 0));
	ASSERT_RET(0, query_srq(self->e.fd, s.handle, &qr));
	EXPECT_EQ(8, qr.srq_limit);
	/* Larger than the SRQ. */
	ASSERT_RET(-EINVAL, modify_srq(self->e.fd, s.handle, SRQA_LIMIT, 0,
				       qr.max_wr + 1, NULL, 0));
	ASSERT_RET(-EINVAL, modify_srq(self->e.fd, s.handle, SRQA_LIMIT, 0,
				       ~0u, NULL, 0));
	/* Resizing needs the new ring in the driver command. */
	ASSERT_RET(-EINVAL, modify_srq(self->e.fd, s.handle, SRQA_MAX_WR,
				       32, 0, NULL, 0));
	ASSERT_RET(-EINVAL, modify_srq(self->e.fd, s.handle, SRQA_MAX_WR,
				       16, 0, zero, sizeof(zero)));
	/* MODIFY_SRQ has no driver data: zero is fine, else EOPNOTSUPP. */
	ASSERT_RET(-EOPNOTSUPP, modify_srq(self->e.fd, s.handle, SRQA_LIMIT, 0,
					   4, tail, sizeof(tail)));
	ASSERT_RET(0, query_srq(self->e.fd, s.handle, &qr));
	EXPECT_EQ(8, qr.srq_limit) TH_LOG("a failed modify changed the limit");
	ASSERT_RET(0, modify_srq(self->e.fd, s.handle, SRQA_LIMIT, 0, 4, zero,
				 sizeof(zero)));
	ASSERT_RET(0, query_srq(self->e.fd, s.handle, &qr));
	EXPECT_EQ(4, qr.srq_limit);
	/* Handles (core). */
	ASSERT_RET(-ENOENT, modify_srq(self->e.fd, 12345, SRQA_LIMIT, 0, 1,
				       NULL, 0));
	ASSERT_RET(-ENOENT, query_srq(self->e.fd, 12345, &qr));
	ASSERT_RET(0, destroy_srq(self->e.fd, s.handle));
	ASSERT_RET(-ENOENT, destroy_srq(self->e.fd, s.handle));
	ASSERT_RET(-ENOENT, destroy_srq(self->e.fd, 12345));
	ASSERT_RET(-EINVAL, destroy_srq(self->e.fd, self->e.pd));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, srq_destroy_busy)
{
	struct qp_req r;
	struct srq s;
	struct qp qp[2];
	struct cq cq;
	int i;

	ASSERT_RET(0, cq_new(&self->e, 16, &cq));
	ASSERT_RET(0, srq_new(&self->e, 64, &s));
	for (i = 0; i < 2; i++) {
		ASSERT_RET(0, qp_req_srq(&self->e, &r, i ? QPT_UD : QPT_RC,
					 cq.handle, s.handle, 8));
		ASSERT_RET(0, qp_create(&self->e, &r, &qp[i]));
	}
	ASSERT_RET(-EBUSY, destroy_srq(self->e.fd, s.handle));
	ASSERT_RET(0, destroy_qp(self->e.fd, qp[0].handle));
	ASSERT_RET(-EBUSY, destroy_srq(self->e.fd, s.handle));
	ASSERT_LIVE(1, 1, 1);
	ASSERT_RET(0, destroy_qp(self->e.fd, qp[1].handle));
	ASSERT_RET(0, destroy_srq(self->e.fd, s.handle));
	ASSERT_RET(-ENOENT, destroy_srq(self->e.fd, s.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
	ASSERT_LIVE(0, 0, 0);
}

/*
 * CREATE_XSRQ: a basic SRQ works as through CREATE_SRQ.  An XRC SRQ needs
 * an XRCD, which urdma has none of: the core fails the lookup (EINVAL).
 * Tag-matching SRQs are not in docs/ABI.md; urdma must refuse them
 * (EOPNOTSUPP, like XRC SRQs, or EINVAL).
 */
TEST_F(q, srq_xsrq_types)
{
	struct ib_uverbs_create_srq_resp core;
	uint8_t resp[SRQ_CORE + SRQ_DRV];
	struct srq_req r;
	struct cq cq;
	int ret;

	ASSERT_RET(0, cq_new(&self->e, 16, &cq));
	ASSERT_RET(0, srq_req_init(&self->e, &r, 16));
	ASSERT_RET(-EINVAL, create_xsrq_raw(&self->e, SRQT_XRC, cq.handle, 0,
					    &r, resp));
	ASSERT_RET(-EINVAL, create_xsrq_raw(&self->e, SRQT_XRC, cq.handle,
					    self->e.pd, &r, resp));
	ret = create_xsrq_raw(&self->e, SRQT_TM, cq.handle, 0, &r, resp);
	if (!ret) {
		memcpy(&core, resp, sizeof(core));
		destroy_srq(self->e.fd, core.srq_handle);
	}
	ASSERT_TRUE(ret == -EOPNOTSUPP || ret == -EINVAL)
		TH_LOG("tag-matching SRQ: %s", ename(ret));
	ASSERT_LIVE(1, 0, 0);
	ASSERT_RET(0, create_xsrq_raw(&self->e, SRQT_BASIC, 0, 0, &r, resp));
	memcpy(&core, resp, sizeof(core));
	EXPECT_LE(16, core.max_wr);
	ASSERT_LIVE(1, 0, 1);
	ASSERT_RET(0, destroy_srq(self->e.fd, core.srq_handle));
	/* The CQ is not held by anything. */
	ASSERT_RET(0, destroy_cq(self->e.fd, cq.handle));
}

/* ---- CREATE_AH / DESTROY_AH --------------------------------------------- */

TEST_F(q, ah_create_destroy)
{
	enum { N = 8 };
	struct ib_uverbs_ah_attr a;
	struct urdma_create_ah_resp drv;
	uint32_t h[N], num[N];
	uint8_t *resp = self->m.rw, gid[16];
	int i, j;

	ASSERT_GID0(gid);
	ah_attr_gid(&a, gid);
	for (i = 0; i < N; i++) {
		a.sl = i;
		ASSERT_RET(0, ah_create(&self->e, &a, &h[i], &num[i]));
		EXPECT_NE(0, num[i]) TH_LOG("AH %d: ah_num 0", i);
		for (j = 0; j < i; j++) {
			ASSERT_NE(num[i], num[j]) TH_LOG("ah_num reused");
		}
	}
	/* The exact response, and a truncated one. */
	memset(resp, GUARD, self->m.pg);
	ASSERT_RET(0, create_ah_raw(&self->e, &a, NULL, 0, resp, AH_DRV));
	memcpy(&drv, resp + AH_CORE, sizeof(drv));
	EXPECT_EQ(0, drv.comp_mask);
	EXPECT_NE(0, drv.ah_num);
	EXPECT_TRUE(all_bytes(resp + AH_CORE + AH_DRV,
			      self->m.pg - AH_CORE - AH_DRV, GUARD));
	ASSERT_RET(0, destroy_ah(self->e.fd, resp_handle(resp)));
	memset(resp, GUARD, self->m.pg);
	ASSERT_RET(0, create_ah_raw(&self->e, &a, NULL, 0, resp, 0));
	EXPECT_TRUE(all_bytes(resp + AH_CORE, self->m.pg - AH_CORE, GUARD));
	ASSERT_RET(0, destroy_ah(self->e.fd, resp_handle(resp)));
	for (i = 0; i < N; i++)
		ASSERT_RET(0, destroy_ah(self->e.fd, h[i]));
	ASSERT_RET(-ENOENT, destroy_ah(self->e.fd, h[N - 1]));
	ASSERT_RET(-ENOENT, destroy_ah(self->e.fd, 12345));
	ASSERT_LIVE(0, 0, 0);
}

TEST_F(q, ah_bad)
{
	struct ib_uverbs_ah_attr a;
	uint8_t gid[16], g[16], resp[64], drv[8] = {};
	uint32_t h;

	ASSERT_GID0(gid);
	/* Source GID index beyond the table (core). */
	ah_attr_gid(&a, gid);
	a.grh.sgid_index = 200;
	ASSERT_RET(-EINVAL, ah_create(&self->e, &a, &h, NULL));
	/* An empty GID entry (core): ENODATA. */
	if (read_gid(127, g) == -ENODATA) {
		a.grh.sgid_index = 127;
		ASSERT_RET(-ENODATA, ah_create(&self->e, &a, &h, NULL));
	}
	/* No such port (core). */
	ah_attr_gid(&a, gid);
	a.port_num = 0;
	ASSERT_RET(-EINVAL, ah_create(&self->e, &a, &h, NULL));
	a.port_num = 2;
	ASSERT_RET(-EINVAL, ah_create(&self->e, &a, &h, NULL));
	/* RoCE needs a GRH (core). */
	ah_attr_gid(&a, gid);
	a.is_global = 0;
	ASSERT_RET(-EINVAL, ah_create(&self->e, &a, &h, NULL));
	/* CREATE_AH has no driver data: zero is fine, else EOPNOTSUPP. */
	ah_attr_gid(&a, gid);
	drv[7] = 1;
	ASSERT_RET(-EOPNOTSUPP, create_ah_raw(&self->e, &a, drv, sizeof(drv),
					      resp, AH_DRV));
	/* Responses that cannot be written. */
	ASSERT_RET(-EFAULT, create_ah_raw(&self->e, &a, NULL, 0, self->m.ro,
					  AH_DRV));
	ASSERT_RET(-EFAULT, create_ah_raw(&self->e, &a, NULL, 0,
					  self->m.none - AH_CORE, AH_DRV));
	ASSERT_RET(-EFAULT, create_ah_raw(&self->e, &a, NULL, 0, self->m.ro,
					  0));
	ASSERT_TRUE(all_bytes(self->m.ro, self->m.pg, RO_FILL));
	/* A bad handle (core). */
	ASSERT_RET(-ENOENT, destroy_ah(self->e.fd, 12345));
	ASSERT_RET(-EINVAL, destroy_ah(self->e.fd, self->e.pd));
	drv[7] = 0;
	ASSERT_RET(0, create_ah_raw(&self->e, &a, drv, sizeof(drv), resp,
				    AH_DRV));
	h = resp_handle(resp);
	ASSERT_RET(0, destroy_ah(self->e.fd, h));
	ASSERT_RET(-ENOENT, destroy_ah(self->e.fd, h));
}

/* ---- device limits ------------------------------------------------------ */

/*
 * max_cq, max_qp, max_srq and max_ah (as EX_QUERY_DEVICE reports them)
 * are device-wide and count kernel objects too (the MAD layer's CQ and
 * QP 1), so the tests read what the device holds now (`rdma resource
 * show`) and create the rest.  They assume nothing else uses the device
 * meanwhile.
 */
#define REQUIRE_COUNTS(c) do {						\
	if (!self->have_counts)						\
		SKIP(return, "no object counts from `rdma resource show`");\
	ASSERT_EQ(0, settled_counts(&(c)));				\
} while (0)

#define REQUIRE_MEMLOCK() do {						\
	if (!unlimited_memlock())					\
		SKIP(return, "cannot lift RLIMIT_MEMLOCK");		\
} while (0)

#define SKIP_ON_DEBUG_KERNEL() do {					\
	if (on_debug_kernel())						\
		SKIP(return, "a sweep to the device limit takes too "	\
		     "long under KASAN in TCG; it runs on the Debian "	\
		     "kernels");					\
} while (0)

/* max_cq, max_qp, max_srq and max_ah as EX_QUERY_DEVICE reports them. */
struct dev_limits {
	int cq, qp, srq, ah;
};

static int query_limits(int fd, struct dev_limits *l)
{
	struct ib_uverbs_ex_query_device_resp resp;
	struct exq q = { .resp = &resp, .out_words = sizeof(resp) / 8 };
	int ret = ex_query_device(fd, &q);

	if (ret)
		return ret;
	l->cq = resp.base.max_cq;
	l->qp = resp.base.max_qp;
	l->srq = resp.base.max_srq;
	l->ah = resp.base.max_ah;
	return l->cq > 0 && l->qp > 0 && l->srq > 0 && l->ah > 0 ? 0 : -EPROTO;
}

#define REQUIRE_LIMITS(l) do {						\
	int __q = query_limits(self->e.fd, &(l));			\
	ASSERT_EQ(0, __q) TH_LOG("EX_QUERY_DEVICE: %s", ename(__q));	\
} while (0)

/*
 * The kinds of queue the sweeps and the fuzzer create, and kind_new()'s
 * smallest one of each: a CQ of 1 entry, an RC QP with 1 WR each way (on
 * CQ @cq), an SRQ of 1 WR.
 */
enum { KIND_CQ, KIND_QP, KIND_SRQ, NKINDS };

static const char *const kind_name[NKINDS] = { "CQ", "QP", "SRQ" };

static int kind_new(struct qenv *e, int kind, uint32_t cq, uint32_t *h)
{
	struct qp_req r;
	struct srq s;
	struct cq c;
	struct qp qp;
	int ret;

	if (kind == KIND_CQ) {
		ret = cq_new(e, 1, &c);
		if (!ret)
			*h = c.handle;
		return ret;
	}
	if (kind == KIND_SRQ) {
		ret = srq_new(e, 1, &s);
		if (!ret)
			*h = s.handle;
		return ret;
	}
	ret = qp_req_init(e, &r, QPT_RC, cq, 1);
	if (!ret)
		ret = qp_create(e, &r, &qp);
	if (!ret)
		*h = qp.handle;
	return ret;
}

static int destroy_kind(int fd, int kind, uint32_t h)
{
	return kind == KIND_CQ ? destroy_cq(fd, h) :
	       kind == KIND_QP ? destroy_qp(fd, h) : destroy_srq(fd, h);
}

/*
 * Up to @n of @kind (QPs on @cq), their handles in @h (if not NULL): how
 * many were made; *err says why no more (0 if all were).
 */
static int fill_kind(struct qenv *e, int kind, uint32_t cq, int n,
		     uint32_t *h, int *err)
{
	uint32_t x;
	int i;

	for (i = 0; i < n; i++) {
		*err = kind_new(e, kind, cq, h ? &h[i] : &x);
		if (*err)
			return i;
	}
	*err = 0;
	return n;
}

/*
 * Close @e (and every object in it) and open another context there; then
 * the device must be back at the counts @base (the fixture's, of setup).
 */
static void assert_reopen_clean(struct __test_metadata *_metadata,
				struct qenv *e, const struct res_counts *base)
{
	struct res_counts now;
	int ret;

	qenv_close(e);
	ASSERT_RET(0, qenv_open(e));
	ret = wait_counts(base, 60, &now);
	ASSERT_EQ(0, ret)
		TH_LOG("device holds cq %ld qp %ld srq %ld pd %ld, expected %ld %ld %ld %ld",
		       now.cq, now.qp, now.srq, now.pd, base->cq, base->qp,
		       base->srq, base->pd);
}

/* What a sweep to a device limit needs; it skips without it. */
#define REQUIRE_SWEEP(c, lim) do {					\
	SKIP_ON_DEBUG_KERNEL();						\
	REQUIRE_MEMLOCK();						\
	REQUIRE_COUNTS(c);						\
	REQUIRE_LIMITS(lim);						\
} while (0)

/*
 * The device takes @max of @kind and holds @have: context @e makes the
 * rest (QPs on *@cq, a CQ it makes first).  Returns their handles, *@n of
 * them.
 */
static uint32_t *fill_to_limit(struct __test_metadata *_metadata,
			       struct qenv *e, int kind, int max, long have,
			       struct cq *cq, int *n)
{
	const char *what = kind_name[kind];
	int want = max - have, err;
	uint32_t *h = calloc(max, sizeof(*h));

	ASSERT_NE(NULL, h);
	ASSERT_LT(0, want) TH_LOG("the device already has %ld %ss", have,
				  what);
	/* A page per ring: QPs have two. */
	ASSERT_RET(0, qenv_arena(e, (kind == KIND_QP ? 2 * want : want) + 64));
	if (kind == KIND_QP)
		ASSERT_RET(0, cq_new(e, 1, cq));
	*n = fill_kind(e, kind, kind == KIND_QP ? cq->handle : 0, want, h,
		       &err);
	ASSERT_EQ(want, *n) TH_LOG("%s %d of %d (the device had %ld): %s",
				   what, *n + 1, want, have, ename(err));
	return h;
}

/*
 * The device is full of @kind (not QPs), @h[@n] of them in context @e:
 * not one more, there or in another context; a destroyed one can be had
 * once; then half go one by one, the rest with the context, and the
 * device is back at @base.
 */
static void assert_full(struct __test_metadata *_metadata, struct qenv *e,
			const struct res_counts *base, int kind, uint32_t *h,
			int n)
{
	struct qenv e2;
	uint32_t x;
	int i;

	ASSERT_RET(-ENOMEM, kind_new(e, kind, 0, &x));
	ASSERT_RET(-ENOMEM, kind_new(e, kind, 0, &x));
	/* Another context shares the device's limit. */
	ASSERT_RET(0, qenv_open(&e2));
	ASSERT_RET(-ENOMEM, kind_new(&e2, kind, 0, &x));
	qenv_close(&e2);
	/* A freed one can be had once. */
	ASSERT_RET(0, destroy_kind(e->fd, kind, h[n / 2]));
	ASSERT_RET(0, kind_new(e, kind, 0, &h[n / 2]));
	ASSERT_RET(-ENOMEM, kind_new(e, kind, 0, &x));
	/* Half destroyed one by one, the rest with the context. */
	for (i = 0; i < n; i += 2)
		ASSERT_RET(0, destroy_kind(e->fd, kind, h[i]));
	assert_reopen_clean(_metadata, e, base);
}

TEST_F_TIMEOUT(q, cq_limit, 600)
{
	struct dev_limits lim;
	struct res_counts c;
	struct cq cq;
	uint32_t *h;
	int n;

	REQUIRE_SWEEP(c, lim);
	h = fill_to_limit(_metadata, &self->e, KIND_CQ, lim.cq, c.cq, NULL,
			  &n);
	assert_full(_metadata, &self->e, &self->base, KIND_CQ, h, n);
	ASSERT_RET(0, cq_new(&self->e, 1, &cq));
}

TEST_F_TIMEOUT(q, qp_limit, 600)
{
	struct dev_limits lim;
	struct res_counts c;
	struct qp_req r;
	struct qenv e2;
	struct cq cq, cq2;
	struct qp qp;
	int n, i;
	uint32_t *h;

	REQUIRE_SWEEP(c, lim);
	h = fill_to_limit(_metadata, &self->e, KIND_QP, lim.qp, c.qp, &cq,
			  &n);
	/* Not one more, of any type, in this context or another. */
	ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_UD, cq.handle, 1));
	ASSERT_RET(-ENOMEM, qp_create(&self->e, &r, &qp));
	ASSERT_RET(-ENOMEM, qp_create(&self->e, &r, &qp));
	ASSERT_RET(0, qenv_open(&e2));
	ASSERT_RET(0, cq_new(&e2, 1, &cq2));
	ASSERT_RET(0, qp_req_init(&e2, &r, QPT_RC, cq2.handle, 1));
	ASSERT_RET(-ENOMEM, qp_create(&e2, &r, &qp));
	qenv_close(&e2);
	ASSERT_RET(0, destroy_qp(self->e.fd, h[n / 2]));
	ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_UC, cq.handle, 1));
	ASSERT_RET(0, qp_create(&self->e, &r, &qp));
	h[n / 2] = qp.handle;
	ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_UC, cq.handle, 1));
	ASSERT_RET(-ENOMEM, qp_create(&self->e, &r, &qp));
	for (i = 0; i < n; i += 2)
		ASSERT_RET(0, destroy_qp(self->e.fd, h[i]));
	assert_reopen_clean(_metadata, &self->e, &self->base);
}

TEST_F_TIMEOUT(q, srq_limit, 600)
{
	struct dev_limits lim;
	struct res_counts c;
	uint32_t *h;
	int n;

	REQUIRE_SWEEP(c, lim);
	h = fill_to_limit(_metadata, &self->e, KIND_SRQ, lim.srq,
			  c.srq < 0 ? 0 : c.srq, NULL, &n);
	assert_full(_metadata, &self->e, &self->base, KIND_SRQ, h, n);
}

/*
 * `rdma resource` does not count AHs; this assumes the device has none
 * (the kernel's MAD layer holds none while no MAD traffic flows).  A second
 * context holds the last SLICE AHs; once it is closed, exactly SLICE can
 * be had again.
 */
TEST_F_TIMEOUT(q, ah_limit, 900)
{
	enum { SLICE = 1024 };
	struct ib_uverbs_ah_attr a;
	struct dev_limits lim;
	struct qenv e2;
	uint8_t gid[16];
	int n = 0, err = 0, i;
	uint32_t x, *h;

	SKIP_ON_DEBUG_KERNEL();
	ASSERT_GID0(gid);
	REQUIRE_LIMITS(lim);
	ASSERT_LT(SLICE, lim.ah);
	h = calloc(lim.ah, sizeof(*h));
	ASSERT_NE(NULL, h);
	ah_attr_gid(&a, gid);
	while (n < lim.ah - SLICE) {
		err = ah_create(&self->e, &a, &h[n], NULL);
		if (err)
			break;
		n++;
	}
	ASSERT_EQ(lim.ah - SLICE, n) TH_LOG("AH %d: %s", n + 1, ename(err));
	ASSERT_RET(0, qenv_open(&e2));
	for (i = 0; i < SLICE; i++)
		ASSERT_RETM(0, ah_create(&e2, &a, &x, NULL), "(AH %d)", n + i);
	ASSERT_RET(-ENOMEM, ah_create(&self->e, &a, &x, NULL));
	ASSERT_RET(-ENOMEM, ah_create(&e2, &a, &x, NULL));
	/* A destroyed AH can be had once. */
	ASSERT_RET(0, destroy_ah(self->e.fd, h[n / 2]));
	ASSERT_RET(0, ah_create(&self->e, &a, &h[n / 2], NULL));
	ASSERT_RET(-ENOMEM, ah_create(&self->e, &a, &x, NULL));
	/* Closing the second context frees exactly its AHs. */
	qenv_close(&e2);
	for (i = 0; i < SLICE; i++) {
		err = ah_create(&self->e, &a, &x, NULL);
		if (err)
			break;
	}
	ASSERT_EQ(SLICE, i) TH_LOG("AH %d after closing the other context: %s",
				   n + i + 1, ename(err));
	ASSERT_RET(-ENOMEM, ah_create(&self->e, &a, &x, NULL));
	for (i = 0; i < n; i += 2)
		ASSERT_RET(0, destroy_ah(self->e.fd, h[i]));
	qenv_close(&self->e);
	ASSERT_RET(0, qenv_open(&self->e));
	ASSERT_RET(0, ah_create(&self->e, &a, &x, NULL));
}

/* ---- killed processes --------------------------------------------------- */

/* Per kind of queue. */
struct fill_report {
	int made[NKINDS];	/* created */
	int err[NKINDS];	/* why the filling stopped */
	int more[NKINDS];	/* one more of each */
};

/*
 * @want[] of each kind, CQs first (the first CQ for the QPs), then QPs,
 * then SRQs; and one more of each.
 */
static void fill_all(struct qenv *e, const int want[NKINDS],
		     struct fill_report *f)
{
	struct cq cq;
	uint32_t x;
	int k;

	memset(f, 0, sizeof(*f));
	f->err[KIND_CQ] = cq_new(e, 1, &cq);
	if (f->err[KIND_CQ])
		return;
	f->made[KIND_CQ] = 1;	/* the first CQ counts */
	for (k = 0; k < NKINDS; k++) {
		f->made[k] += fill_kind(e, k, cq.handle, want[k] - f->made[k],
					NULL, &f->err[k]);
		f->more[k] = kind_new(e, k, cq.handle, &x);
	}
}

/* All of fill_all()'s @want were made and, if @full, not one more. */
static void expect_filled(struct __test_metadata *_metadata,
			  const struct fill_report *f,
			  const int want[NKINDS], bool full, const char *who)
{
	int k;

	for (k = 0; k < NKINDS; k++) {
		EXPECT_EQ(want[k], f->made[k])
			TH_LOG("%s%s %d: %s", who, kind_name[k],
			       f->made[k] + 1, ename(f->err[k]));
	}
	for (k = 0; full && k < NKINDS; k++) {
		EXPECT_EQ(-ENOMEM, f->more[k]);
	}
}

#define PIN_TOLERANCE	256	/* pages others may pin meanwhile */

/*
 * A child fills the device with CQs, QPs and SRQs (rings and doorbells
 * pinned) and is SIGKILLed: the device's counts and the system's pinned
 * pages return, and the parent can fill the device again.  On the debug
 * kernel the child creates a few hundred of each instead, and the limits
 * are not probed.
 */
TEST_F_TIMEOUT(q, sigkill_child_with_queues, 900)
{
	struct res_counts c0, now;
	struct fill_report f, g;
	long pins0, during, after, pages;
	int p[2], status, want[NKINDS], ret, i;
	struct dev_limits lim;
	struct cq cq;
	bool full;
	pid_t pid;

	REQUIRE_MEMLOCK();
	REQUIRE_COUNTS(c0);
	REQUIRE_LIMITS(lim);
	full = !on_debug_kernel();
	want[KIND_CQ] = full ? lim.cq - c0.cq : 256;
	want[KIND_QP] = full ? lim.qp - c0.qp : 256;
	want[KIND_SRQ] = full ? lim.srq - (c0.srq < 0 ? 0 : c0.srq) : 64;
	ASSERT_LT(0, want[KIND_CQ]);
	ASSERT_LT(0, want[KIND_QP]);
	pages = want[KIND_CQ] + 2L * want[KIND_QP] + want[KIND_SRQ];
	pins0 = settled_pins();
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct qenv e;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		memset(&f, 0, sizeof(f));
		f.err[KIND_CQ] = qenv_open(&e);
		if (!f.err[KIND_CQ])
			f.err[KIND_CQ] = qenv_arena(&e, pages + 64);
		if (!f.err[KIND_CQ])
			fill_all(&e, want, &f);
		if (write(p[1], &f, sizeof(f)) != sizeof(f))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ret = read(p[0], &f, sizeof(f));
	close(p[0]);
	during = pins_outstanding();
	if (ret != sizeof(f))
		kill(pid, SIGKILL);
	ASSERT_EQ(sizeof(f), ret);
	expect_filled(_metadata, &f, want, full, "child: ");
	if (full) {
		/* The device is full while the child lives. */
		ret = cq_new(&self->e, 1, &cq);
		EXPECT_EQ(-ENOMEM, ret);
		if (!ret)
			destroy_cq(self->e.fd, cq.handle);
	}
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* Its objects went with it ... */
	ret = wait_counts(&c0, 120, &now);
	ASSERT_EQ(0, ret)
		TH_LOG("device holds cq %ld qp %ld srq %ld, had %ld %ld %ld",
		       now.cq, now.qp, now.srq, c0.cq, c0.qp, c0.srq);
	/* ... and so did its pins (unrelated pins may come and go). */
	if (pins0 >= 0) {
		after = pins_outstanding();
		for (i = 0; i < 100 && after > pins0 + PIN_TOLERANCE; i++) {
			usleep(100 * 1000);
			after = pins_outstanding();
		}
		EXPECT_GE(pins0 + PIN_TOLERANCE, after)
			TH_LOG("pinned pages: %ld before, %ld after the child",
			       pins0, after);
		EXPECT_LE(pages * 9 / 10, during - after)
			TH_LOG("the child's %ld ring pages were not pinned (%ld)",
			       pages, during - after);
	} else {
		TH_LOG("no nr_foll_pin_* in /proc/vmstat: pins not checked");
	}
	/* The parent gets exactly as many. */
	ASSERT_RET(0, qenv_arena(&self->e, pages + 64));
	fill_all(&self->e, want, &g);
	expect_filled(_metadata, &g, want, full, "");
}

/* Children busy creating and destroying queues are SIGKILLed mid-flight. */
TEST_F_TIMEOUT(q, sigkill_busy_queue_children, 600)
{
	struct res_counts now;
	int round, status, ret;

	for (round = 0; round < 6; round++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;) {
				struct qenv e;
				struct qp_req r;
				struct srq s;
				struct cq cq;
				struct qp qp;
				int k;

				if (qenv_open(&e) || qenv_arena(&e, 64 * 6))
					_exit(1);
				for (k = 0; k < 64; k++) {
					if (cq_new(&e, 16, &cq))
						continue;
					if (!srq_new(&e, 16, &s) && k % 2 &&
					    !qp_req_srq(&e, &r, QPT_RC,
							cq.handle, s.handle, 4))
						qp_create(&e, &r, &qp);
					if (!qp_req_init(&e, &r, QPT_UD,
							 cq.handle, 4) &&
					    !qp_create(&e, &r, &qp) && k % 3)
						destroy_qp(e.fd, qp.handle);
				}
				qenv_close(&e);
			}
		}
		usleep(50000 + 50000 * round);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("child exited %d",
							WEXITSTATUS(status));
	}
	if (self->have_counts) {
		ret = wait_counts(&self->base, 60, &now);
		ASSERT_EQ(0, ret)
			TH_LOG("device holds cq %ld qp %ld srq %ld pd %ld",
			       now.cq, now.qp, now.srq, now.pd);
	}
}

/* ---- fuzz --------------------------------------------------------------- */

#define QFUZZ_ITERS	6000
#define QFUZZ_SECONDS	240
#define FZ_RING_PAGES	252	/* rings go here ... */
#define FZ_DB_PAGES	4	/* ... and doorbell records here */
#define FZ_PAGES	(FZ_RING_PAGES + FZ_DB_PAGES)

/* Memory the fuzzed addresses point into: never anything else of ours. */
struct fz {
	uint8_t *arena;		/* FZ_PAGES RW pages, then PROT_NONE */
	uint8_t *ro, *hole;
	size_t pg;
};

/* A page-aligned home for a ring of @bytes in the ring part. */
static uint64_t fz_ring(const struct fz *z, size_t bytes)
{
	size_t n = (bytes + z->pg - 1) / z->pg ?: 1;

	return (uintptr_t)z->arena + z->pg * rndn(FZ_RING_PAGES - n + 1);
}

/* A doorbell record in the doorbell part. */
static uint64_t fz_db(const struct fz *z)
{
	return (uintptr_t)z->arena + z->pg * FZ_RING_PAGES +
	       URDMA_DB_SIZE * rndn(FZ_DB_PAGES * z->pg / URDMA_DB_SIZE);
}

/*
 * A hostile address: misaligned, someone else's, read-only, unmapped,
 * running into the PROT_NONE page, kernel, or random.
 */
static uint64_t fz_addr(const struct fz *z)
{
	switch (rndn(10)) {
	case 0:
		return (uintptr_t)z->arena + rndn(FZ_PAGES * z->pg);
	case 1:
		return fz_db(z) & ~(uint64_t)(z->pg - 1);
	case 2:
		return fz_ring(z, z->pg);
	case 3:
		return (uintptr_t)z->arena + z->pg * (FZ_PAGES - rndn(2));
	case 4:
		return (uintptr_t)z->ro + URDMA_DB_SIZE * rndn(8);
	case 5:
		return (uintptr_t)z->hole;
	case 6:
		return 0;
	case 7:
		return 0xffff888000000000ull + z->pg * rndn(1024);
	default:
		return rnd();
	}
}

/* A hostile number for a count, size or stride field. */
static uint32_t fz_num(void)
{
	switch (rndn(8)) {
	case 0:
		return 0;
	case 1:
		return 1u << rndn(32);
	case 2:
		return (1u << rndn(32)) + 1;
	case 3:
		return rndn(400);
	case 4:
		return URDMA_WQE_BLOCK * rndn(8);
	case 5:
		return ~0u - rndn(4);
	default:
		return rnd();
	}
}

static uint32_t fz_bit(void)
{
	return 1u << rndn(32);
}

/* The stride a capacity needs, sometimes a block more (up to 320). */
static uint32_t fz_stride_for(uint32_t need)
{
	uint32_t s = (need + URDMA_WQE_BLOCK - 1) & ~(URDMA_WQE_BLOCK - 1);

	s = s ?: URDMA_WQE_BLOCK;
	if (s < MAX_STRIDE && !rndn(4))
		s += URDMA_WQE_BLOCK;
	return s;
}

/*
 * Turn the @len-byte driver command in @buf (of @cap bytes) into another
 * length: shorter, longer with a zero or non-zero tail, a flipped bit, or
 * random bytes.  Lengths are multiples of @align.
 */
static size_t fz_mangle(uint8_t *buf, size_t len, size_t cap,
			unsigned int align)
{
	size_t out, i;

	switch (rndn(4)) {
	case 0:
		out = rndn(cap / align + 1) * align;
		for (i = 0; i < out; i++)
			buf[i] = rnd();
		return out;
	case 1:
		return rndn(len / align) * align;
	case 2:
		out = len + align * (1 + rndn((cap - len) / align));
		memset(buf + len, 0, out - len);
		if (rndn(2))
			buf[len + rndn(out - len)] = 1 + rndn(255);
		return out;
	default:
		buf[rndn(len)] ^= 1 << rndn(8);
		return len;
	}
}

/* 0 (a third of the time) to 3 mutations. */
static int fz_mutations(void)
{
	return rndn(3) ? 1 + rndn(3) : 0;
}

/* CREATE_CQ: a valid command, mutated. */
static int fz_cq(struct qenv *e, const struct fz *z, uint8_t *buf,
		 uint8_t *resp, size_t *lenp, bool *exp)
{
	uint32_t cqe = 1 + rndn(256), nent = pow2(cqe) << rndn(2);
	struct urdma_create_cq_cmd d = {
		.nent = nent,
		.buf_addr = fz_ring(z, (size_t)nent * URDMA_CQE_SIZE),
		.db_addr = fz_db(z),
	};
	struct ib_uverbs_ex_create_cq c = { .comp_channel = -1 };
	bool ex = !rndn(4), mangle = false;
	size_t len = sizeof(d);
	int m;

	for (m = fz_mutations(); m > 0; m--) {
		switch (rndn(7)) {
		case 0:
			d.comp_mask = fz_bit();
			break;
		case 1:
			d.nent = fz_num();
			break;
		case 2:
			d.buf_addr = fz_addr(z);
			break;
		case 3:
			d.db_addr = fz_addr(z);
			break;
		case 4:
			cqe = fz_num();
			break;
		case 5:
			c.flags = fz_bit();
			break;
		default:
			mangle = true;
			break;
		}
	}
	memcpy(buf, &d, sizeof(d));
	if (mangle)
		len = fz_mangle(buf, sizeof(d), 96, ex ? 8 : 4);
	*lenp = len;
	*exp = ex;
	if (!ex)
		return create_cq_raw(e->fd, cqe, buf, len, resp, CQ_DRV);
	c.cqe = cqe;
	return create_cq_ex_raw(e->fd, &c, buf, len, resp, CQ_DRV);
}

/* CREATE_QP: a valid command (on @cq, sometimes @srq), mutated. */
static int fz_qp(struct qenv *e, const struct fz *z, uint32_t cq,
		 uint32_t srq, uint8_t *buf, uint8_t *resp, size_t *lenp,
		 bool *exp)
{
	static const uint8_t types[] = { QPT_RC, QPT_UC, QPT_UD };
	struct qp_req r = {
		.type = types[rndn(3)], .scq = cq, .rcq = cq,
		.is_srq = !rndn(4),
		.max_send_wr = 1 + rndn(64), .max_send_sge = rndn(5),
		.max_inline = rndn(2) ? 0 : rndn(MAX_INLINE + 1),
	};
	bool ex = !rndn(4), mangle = false;
	size_t len = sizeof(r.drv);
	uint32_t need;
	int m;

	need = r.max_send_sge * URDMA_SGE_SIZE;
	if (need < r.max_inline)
		need = r.max_inline;
	r.drv.sq_nent = pow2(r.max_send_wr) << rndn(2);
	r.drv.sq_stride = fz_stride_for(URDMA_WQE_BLOCK + need);
	r.drv.sq_buf_addr = fz_ring(z, (size_t)r.drv.sq_nent *
				       r.drv.sq_stride);
	r.drv.db_addr = fz_db(z);
	if (r.is_srq) {
		r.srq = srq;
	} else {
		r.max_recv_wr = 1 + rndn(64);
		r.max_recv_sge = rndn(5);
		r.drv.rq_nent = pow2(r.max_recv_wr) << rndn(2);
		r.drv.rq_stride = fz_stride_for(16 + 16 * r.max_recv_sge);
		r.drv.rq_buf_addr = fz_ring(z, (size_t)r.drv.rq_nent *
					       r.drv.rq_stride);
	}
	for (m = fz_mutations(); m > 0; m--) {
		switch (rndn(18)) {
		case 0:
			r.drv.comp_mask = fz_bit();
			break;
		case 1:
			r.drv.reserved_20 = fz_bit();
			break;
		case 2:
			r.drv.sq_buf_addr = fz_addr(z);
			break;
		case 3:
			r.drv.rq_buf_addr = fz_addr(z);
			break;
		case 4:
			r.drv.db_addr = fz_addr(z);
			break;
		case 5:
			r.drv.sq_nent = fz_num();
			break;
		case 6:
			r.drv.sq_stride = fz_num();
			break;
		case 7:
			r.drv.rq_nent = fz_num();
			break;
		case 8:
			r.drv.rq_stride = fz_num();
			break;
		case 9:
			r.type = rnd();
			break;
		case 10:
			r.max_send_wr = fz_num();
			break;
		case 11:
			r.max_recv_wr = fz_num();
			break;
		case 12:
			r.max_send_sge = fz_num();
			break;
		case 13:
			r.max_recv_sge = fz_num();
			break;
		case 14:
			r.max_inline = fz_num();
			break;
		case 15:
			r.create_flags = 1u << rndn(12);
			break;
		case 16:
			r.is_srq = !r.is_srq;
			r.srq = srq;
			break;
		default:
			mangle = true;
			break;
		}
	}
	memcpy(buf, &r.drv, sizeof(r.drv));
	if (mangle)
		len = fz_mangle(buf, sizeof(r.drv), 128, ex ? 8 : 4);
	*lenp = len;
	*exp = ex;
	return create_qp_raw(e, &r, buf, len, resp, QP_DRV, ex);
}

/* CREATE_SRQ: a valid command, mutated. */
static int fz_srq(struct qenv *e, const struct fz *z, uint8_t *buf,
		  uint8_t *resp, size_t *lenp)
{
	struct srq_req s = {
		.max_wr = 1 + rndn(64), .max_sge = rndn(5),
	};
	bool mangle = false;
	size_t len = sizeof(s.drv);
	int m;

	s.drv.nent = pow2(s.max_wr) << rndn(2);
	s.drv.stride = fz_stride_for(16 + 16 * s.max_sge);
	s.drv.buf_addr = fz_ring(z, (size_t)s.drv.nent * s.drv.stride);
	s.drv.db_addr = fz_db(z);
	for (m = fz_mutations(); m > 0; m--) {
		switch (rndn(10)) {
		case 0:
			s.drv.comp_mask = fz_bit();
			break;
		case 1:
			s.drv.nent = fz_num();
			break;
		case 2:
			s.drv.buf_addr = fz_addr(z);
			break;
		case 3:
			s.drv.db_addr = fz_addr(z);
			break;
		case 4:
			s.drv.stride = fz_num();
			break;
		case 5:
			s.drv.reserved_e0 = fz_bit();
			break;
		case 6:
			s.max_wr = fz_num();
			break;
		case 7:
			s.max_sge = fz_num();
			break;
		case 8:
			s.limit = fz_num();
			break;
		default:
			mangle = true;
			break;
		}
	}
	memcpy(buf, &s.drv, sizeof(s.drv));
	if (mangle)
		len = fz_mangle(buf, sizeof(s.drv), 96, 4);
	*lenp = len;
	return create_srq_raw(e, &s, buf, len, resp, SRQ_DRV);
}

/*
 * CREATE_CQ, CREATE_QP and CREATE_SRQ, legacy and extended, with valid
 * commands that 0-3 mutations make hostile (a field, the length, the
 * tail, a bit, or random bytes).  Each must succeed or fail with an
 * ordinary errno; created objects are kept for a while (so later commands
 * meet their rings) and destroyed.  Afterwards nothing is left, and the
 * fuzzed memory holds new queues again.
 */
TEST_F_TIMEOUT(q, fuzz_create, 600)
{
	enum { LIVE = 8 };
	static const int allowed[] = {
		EINVAL, EOPNOTSUPP, EFAULT, ENOMEM, EPERM,
	};
	int hist[NKINDS][ARRAY_SIZE(allowed) + 1] = {}, nlive[NKINDS] = {};
	uint32_t live[NKINDS][LIVE];
	struct timespec t0, t;
	int odd = 0, it, k, i;
	struct srq fsrq;
	struct cq fcq;
	struct fz z;

	z.pg = self->e.pg;
	z.arena = map_pages(FZ_PAGES + 1);
	ASSERT_NE(NULL, z.arena);
	ASSERT_EQ(0, mprotect(z.arena + FZ_PAGES * z.pg, z.pg, PROT_NONE));
	z.ro = ro_pages(1);
	ASSERT_NE(NULL, z.ro);
	/* The fuzzed QPs' CQ and SRQ, outside the arena. */
	ASSERT_RET(0, cq_new(&self->e, 64, &fcq));
	ASSERT_RET(0, srq_new(&self->e, 64, &fsrq));
	z.hole = hole_pages(1);
	ASSERT_NE(NULL, z.hole);
	clock_gettime(CLOCK_MONOTONIC, &t0);

	for (it = 0; it < QFUZZ_ITERS; it++) {
		uint8_t buf[160] = {}, resp[128];
		int kind = rndn(NKINDS), ret;
		bool ex = false;
		size_t len;

		if (it % 100 == 99) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec > QFUZZ_SECONDS)
				break;
		}
		if (kind == KIND_CQ)
			ret = fz_cq(&self->e, &z, buf, resp, &len, &ex);
		else if (kind == KIND_QP)
			ret = fz_qp(&self->e, &z, fcq.handle, fsrq.handle, buf,
				    resp, &len, &ex);
		else
			ret = fz_srq(&self->e, &z, buf, resp, &len);
		if (!ret) {
			uint32_t h = resp_handle(resp);
			int dret = 0;

			hist[kind][ARRAY_SIZE(allowed)]++;
			if (nlive[kind] == LIVE ||
			    (nlive[kind] && !rndn(4))) {
				dret = destroy_kind(self->e.fd, kind,
						    live[kind][0]);
				memmove(live[kind], live[kind] + 1,
					(LIVE - 1) * sizeof(live[kind][0]));
				nlive[kind]--;
			}
			live[kind][nlive[kind]++] = h;
			if (dret && odd++ < 10)
				TH_LOG("iteration %d: destroying a %s: %s", it,
				       kind_name[kind], ename(dret));
			continue;
		}
		for (i = 0; i < (int)ARRAY_SIZE(allowed); i++)
			if (ret == -allowed[i])
				break;
		if (i < (int)ARRAY_SIZE(allowed))
			hist[kind][i]++;
		else if (odd++ < 10)
			TH_LOG("iteration %d: %s%s with a %zu-byte driver command: %s",
			       it, ex ? "extended " : "", kind_name[kind], len,
			       ename(ret));
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (k = 0; k < NKINDS; k++)
		TH_LOG("%s: %d created, EINVAL %d, EOPNOTSUPP %d, EFAULT %d, ENOMEM %d, EPERM %d",
		       kind_name[k], hist[k][ARRAY_SIZE(allowed)], hist[k][0],
		       hist[k][1], hist[k][2], hist[k][3], hist[k][4]);
	TH_LOG("%d iterations in %ld s, %d odd results", it,
	       (long)(t.tv_sec - t0.tv_sec), odd);
	EXPECT_EQ(0, odd);
	for (k = 0; k < NKINDS; k++) {
		EXPECT_LT(0, hist[k][ARRAY_SIZE(allowed)])
			TH_LOG("no %s was ever created", kind_name[k]);
	}
	/* QPs first: they hold the fuzz CQ and SRQ. */
	for (k = 0; k < NKINDS; k++) {
		int kind = (k + 1) % NKINDS;	/* QP, SRQ, CQ */

		for (i = 0; i < nlive[kind]; i++)
			ASSERT_RET(0, destroy_kind(self->e.fd, kind,
						   live[kind][i]));
	}
	ASSERT_RET(0, destroy_srq(self->e.fd, fsrq.handle));
	ASSERT_RET(0, destroy_cq(self->e.fd, fcq.handle));
	ASSERT_LIVE(0, 0, 0);
	/* Nothing of the arena is claimed any more. */
	{
		uint64_t db = (uintptr_t)z.arena + FZ_RING_PAGES * z.pg;
		struct qp_req r;
		struct srq_req s;
		struct srq so;
		struct cq cq;
		struct qp qp;

		ASSERT_RET(0, cq_create(&self->e, 128, 128, z.arena, db, &cq));
		ASSERT_RET(0, srq_req_init(&self->e, &s, 64));
		s.drv.buf_addr = (uintptr_t)z.arena + z.pg;
		s.drv.db_addr = db + 16;
		ASSERT_RET(0, srq_create(&self->e, &s, &so));
		ASSERT_RET(0, qp_req_init(&self->e, &r, QPT_RC, cq.handle, 32));
		r.drv.sq_buf_addr = (uintptr_t)z.arena + 2 * z.pg;
		r.drv.rq_buf_addr = (uintptr_t)z.arena + 3 * z.pg;
		r.drv.db_addr = db + 32;
		ASSERT_RET(0, qp_create(&self->e, &r, &qp));
		ASSERT_LIVE(1, 1, 1);
	}
}

/* ---- live rings, fuzzed -------------------------------------------------- */

/*
 * Ring memory is hostile (docs/security.md): the engine copies each WQE
 * once, then validates the copy.  fuzz_rings writes plausible and garbage
 * WQEs into the live rings of connected QPs (RC and UC pairs, an RC QP
 * connected to itself through an SRQ, a UD QP), moves producer and
 * consumer indices anywhere, scribbles on the engine's half of the
 * doorbell records and on CQ rings, re-arms CQs, resets, reconnects,
 * destroys and recreates QPs, and kicks, for URDMA_RING_FUZZ_SECONDS
 * (default RFUZZ_SECONDS).  The keys it plants are its own MRs', another
 * MR's of no access, and random ones.  What it checks: every command
 * answers with an errno from the list, the kernel survives (the harness
 * catches oopses, KASAN and lockdep reports), async events stay bounded,
 * and everything is destroyed with nothing left over.  make check's fuzz
 * lane runs it for minutes under KASAN while other traffic runs.
 */
#define RFUZZ_SECONDS	10	/* URDMA_RING_FUZZ_SECONDS overrides */
#define RFUZZ_QPS	6
#define RFUZZ_WR	16
#define RFUZZ_BUF	(64 * 1024)

static int reg_mr(struct qenv *e, void *addr, uint64_t len, uint32_t access,
		  uint32_t *handle, uint32_t *lkey, uint32_t *rkey)
{
	struct ib_uverbs_reg_mr_resp r;
	struct ib_uverbs_reg_mr c = {
		.response = (uintptr_t)&r, .start = (uintptr_t)addr,
		.length = len, .hca_va = (uintptr_t)addr, .pd_handle = e->pd,
		.access_flags = access,
	};
	int ret;

	ret = uv_cmd(e->fd, IB_USER_VERBS_CMD_REG_MR, &c, sizeof(c), NULL, 0,
		     sizeof(r));
	if (ret)
		return ret;
	*handle = r.mr_handle;
	*lkey = r.lkey;
	*rkey = r.rkey;
	return 0;
}

static int dereg_mr(int fd, uint32_t handle)
{
	struct ib_uverbs_dereg_mr c = { .mr_handle = handle };

	return uv_cmd(fd, IB_USER_VERBS_CMD_DEREG_MR, &c, sizeof(c), NULL, 0,
		      0);
}

/* A zero-WR POST_RECV: the kick for a receive queue. */
static int kick_rq(int fd, uint32_t qp_handle)
{
	struct ib_uverbs_post_recv_resp resp;
	struct ib_uverbs_post_recv c = {
		.response = (uintptr_t)&resp,
		.qp_handle = qp_handle,
		.wqe_size = sizeof(struct ib_uverbs_recv_wr),
	};

	return uv_cmd(fd, IB_USER_VERBS_CMD_POST_RECV, &c, sizeof(c), NULL, 0,
		      sizeof(resp));
}

struct rfz_qp {
	uint8_t type;
	int peer;		/* index of the QP it is connected to */
	bool srq, live;
	struct qp_req r;
	struct qp qp;
	uint32_t sq_prod, rq_prod;
};

struct rfz {
	struct qenv *e;
	uint8_t gid[16];
	struct cq cq[2];
	struct srq_req sr;
	struct srq srq;
	uint32_t srq_prod;
	uint8_t *buf, *ro;
	uint32_t mr, lkey, rkey, ro_mr, ro_lkey;
	uint32_t ah, ah_num;
	struct rfz_qp q[RFUZZ_QPS];
	unsigned int events;
};

static const int rfz_allowed[] = { EINVAL, ENOMEM, EOPNOTSUPP, EBUSY };

static bool rfz_ok(int ret)
{
	unsigned int i;

	if (!ret)
		return true;
	for (i = 0; i < ARRAY_SIZE(rfz_allowed); i++)
		if (-ret == rfz_allowed[i])
			return true;
	return false;
}

/* A key for a WQE: ours, another MR's of no access, or anything. */
static uint32_t rfz_key(const struct rfz *z)
{
	switch (rndn(6)) {
	case 0:
	case 1:
	case 2:
		return z->lkey;
	case 3:
		return z->ro_lkey;
	case 4:
		return z->lkey ^ (1 + rndn(255));
	default:
		return rnd();
	}
}

/* An address for a WQE: mostly in our buffer, sometimes just outside it. */
static uint64_t rfz_addr(const struct rfz *z, bool aligned)
{
	uint64_t a = (uintptr_t)z->buf + rndn(RFUZZ_BUF);

	switch (rndn(8)) {
	case 0:
		a = (uintptr_t)z->buf - 8 * rndn(64);
		break;
	case 1:
		a = (uintptr_t)z->buf + RFUZZ_BUF - rndn(64);
		break;
	case 2:
		a = rnd();
		break;
	}
	return aligned && rndn(8) ? a & ~7ull : a;
}

static uint32_t rfz_len(void)
{
	static const uint32_t lens[] = { 0, 1, 8, 63, 4096, RFUZZ_BUF };

	return rndn(4) ? lens[rndn(ARRAY_SIZE(lens))] : rnd();
}

/* A send WQE, mostly well formed, sometimes not at all. */
static void rfz_send_wqe(const struct rfz *z, const struct rfz_qp *q,
			 uint8_t *slot)
{
	struct urdma_send_wqe *w = (void *)slot;
	struct urdma_sge *sge = (void *)(w + 1);
	uint32_t stride = q->r.drv.sq_stride, i;

	if (!rndn(16)) {
		for (i = 0; i < stride; i += 8) {
			uint64_t v = rnd();

			memcpy(slot + i, &v, 8);
		}
		return;
	}
	memset(slot, 0, stride);
	w->wr_id = rnd();
	w->opcode = rndn(16) ? rndn(URDMA_WQE_NUM_OPCODES) : (uint8_t)rnd();
	w->flags = URDMA_WQE_SIGNALED | (rndn(4) ? 0 : (uint8_t)rnd() & 0xf);
	if (!rndn(32))
		w->flags = rnd();
	w->num_sge = rndn(8) ? 1 : rndn(4);
	w->ex = rndn(2) ? z->rkey : (uint32_t)rnd();
	w->inline_len = (w->flags & URDMA_WQE_INLINE) ?
			(rndn(8) ? rndn(64) : (uint32_t)rnd()) : 0;
	switch (w->opcode) {
	case URDMA_WQE_ATOMIC_CMP_SWP:
	case URDMA_WQE_ATOMIC_FETCH_ADD:
	case URDMA_WQE_ATOMIC_WRITE:
		w->atomic.remote_addr = rfz_addr(z, true);
		w->atomic.rkey = rndn(4) ? z->rkey : rfz_key(z);
		w->atomic.compare_add = rnd();
		w->atomic.swap = rnd();
		break;
	case URDMA_WQE_FLUSH:
		w->flush.remote_addr = rfz_addr(z, false);
		w->flush.rkey = rndn(4) ? z->rkey : rfz_key(z);
		w->flush.type = rndn(4);
		w->flush.level = rndn(3);
		w->flush.length = rfz_len();
		break;
	case URDMA_WQE_BIND_MW:
		w->bind.addr = rfz_addr(z, false);
		w->bind.length = rfz_len();
		w->bind.mr_lkey = rfz_key(z);
		w->bind.new_rkey = rnd();
		w->bind.access = rnd() & 0x3f;
		break;
	default:
		if (q->type == QPT_UD) {
			w->ud.remote_qpn = rndn(4) ? z->q[RFUZZ_QPS - 1].qp.qpn :
				rndn(2) ? 1 : (uint32_t)rnd();
			w->ud.remote_qkey = rndn(4) ? 0x11111111 : rnd();
			w->ud.ah_num = rndn(8) ? z->ah_num : rnd();
		} else {
			w->rdma.remote_addr = rfz_addr(z, false);
			w->rdma.rkey = rndn(4) ? z->rkey : rfz_key(z);
		}
		break;
	}
	if (w->flags & URDMA_WQE_INLINE)
		return;
	for (i = 0; i < 4 && (i + 2) * URDMA_SGE_SIZE <= stride; i++) {
		sge[i].addr = rfz_addr(z, false);
		sge[i].length = rfz_len();
		sge[i].lkey = rfz_key(z);
	}
}

/* A receive WQE (RQ or SRQ, stride @stride). */
static void rfz_recv_wqe(const struct rfz *z, uint8_t *slot, uint32_t stride)
{
	struct urdma_recv_wqe *w = (void *)slot;
	struct urdma_sge *sge = (void *)(w + 1);

	memset(slot, 0, stride);
	w->wr_id = rnd();
	w->num_sge = rndn(8) ? 1 : rndn(256);
	if (!rndn(16))
		w->reserved_48 = rnd();
	if (stride >= sizeof(*w) + sizeof(*sge)) {
		sge->addr = rfz_addr(z, false);
		sge->length = rndn(4) ? RFUZZ_BUF : rfz_len();
		sge->lkey = rfz_key(z);
	}
}

static void rfz_drain_events(struct rfz *z)
{
	struct ib_uverbs_async_event_desc ev[32];
	ssize_t n;

	while ((n = read(z->e->async_fd, ev, sizeof(ev))) > 0)
		z->events += n / sizeof(ev[0]);
}

static int rfz_connect(struct rfz *z, int i)
{
	struct rfz_qp *q = &z->q[i];
	struct ib_uverbs_modify_qp m;
	int ret;

	if (q->type == QPT_UD) {
		memset(&m, 0, sizeof(m));
		m.qp_handle = q->qp.handle;
		m.attr_mask = QPA_STATE | QPA_PKEY | QPA_PORT | QPA_QKEY;
		m.qp_state = QPS_INIT;
		m.port_num = 1;
		m.qkey = 0x11111111;
		ret = modify_qp(z->e->fd, &m);
		ret = ret ?: modify_state(z->e->fd, q->qp.handle, QPS_RTR);
		memset(&m, 0, sizeof(m));
		m.qp_handle = q->qp.handle;
		m.attr_mask = QPA_STATE | QPA_SQ_PSN;
		m.qp_state = QPS_RTS;
		return ret ?: modify_qp(z->e->fd, &m);
	}
	rc_init_attr(&m, q->qp.handle);
	if (q->type == QPT_UC)
		m.qp_access_flags = ACC_LOCAL_WRITE | ACC_REMOTE_WRITE;
	else
		m.qp_access_flags = ACC_RC | (1u << 3);	/* + atomics */
	ret = modify_qp(z->e->fd, &m);
	if (ret)
		return ret;
	rc_rtr_attr(&m, q->qp.handle, z->gid, z->q[q->peer].qp.qpn);
	if (q->type == QPT_UC)
		m.attr_mask &= ~(QPA_MAX_DEST_RD_ATOMIC | QPA_MIN_RNR);
	m.min_rnr_timer = 1;
	ret = modify_qp(z->e->fd, &m);
	if (ret)
		return ret;
	rc_rts_attr(&m, q->qp.handle);
	if (q->type == QPT_UC) {
		m.attr_mask = QPA_STATE | QPA_SQ_PSN;
	} else {
		m.timeout = 8;
		m.retry_cnt = 1;
		m.rnr_retry = 1;
	}
	return modify_qp(z->e->fd, &m);
}

/* Create QP @i on fresh rings, not yet connected. */
static int rfz_create(struct rfz *z, int i)
{
	struct rfz_qp *q = &z->q[i];
	int ret;

	if (q->srq)
		ret = qp_req_srq(z->e, &q->r, q->type, z->cq[i & 1].handle,
				 z->srq.handle, RFUZZ_WR);
	else
		ret = qp_req_init(z->e, &q->r, q->type, z->cq[i & 1].handle,
				  RFUZZ_WR);
	ret = ret ?: qp_create(z->e, &q->r, &q->qp);
	q->live = !ret;
	q->sq_prod = q->rq_prod = 0;
	return ret;
}

/* One step of the fuzzer on QP @i.  Return: an errno that was not allowed. */
static int rfz_step(struct rfz *z, int i)
{
	struct rfz_qp *q = &z->q[i];
	volatile struct urdma_qp_db *db = (void *)(uintptr_t)q->r.drv.db_addr;
	uint8_t *sq = (void *)(uintptr_t)q->r.drv.sq_buf_addr;
	uint8_t *rq = (void *)(uintptr_t)q->r.drv.rq_buf_addr;
	uint32_t n, k;
	int ret = 0;

	if (!q->live) {
		ret = rfz_create(z, i);
		return rfz_ok(ret) ? 0 : ret;
	}
	switch (rndn(16)) {
	case 0 ... 6:	/* post send WQEs */
		n = 1 + rndn(4);
		for (k = 0; k < n; k++)
			rfz_send_wqe(z, q, sq + ((q->sq_prod + k) %
						 q->r.drv.sq_nent) *
					   q->r.drv.sq_stride);
		q->sq_prod += n;
		__sync_synchronize();
		db->sq_prod = rndn(64) ? q->sq_prod : (uint32_t)rnd();
		__sync_synchronize();
		ret = kick_sq(z->e->fd, q->qp.handle);
		break;
	case 7 ... 9:	/* post receive WQEs */
		n = 1 + rndn(4);
		if (q->srq) {
			volatile struct urdma_srq_db *sdb =
				(void *)(uintptr_t)z->sr.drv.db_addr;
			uint8_t *ring = (void *)(uintptr_t)z->sr.drv.buf_addr;

			for (k = 0; k < n; k++)
				rfz_recv_wqe(z, ring + ((z->srq_prod + k) %
							z->sr.drv.nent) *
					     z->sr.drv.stride, z->sr.drv.stride);
			z->srq_prod += n;
			__sync_synchronize();
			sdb->prod = rndn(64) ? z->srq_prod : (uint32_t)rnd();
		} else {
			for (k = 0; k < n; k++)
				rfz_recv_wqe(z, rq + ((q->rq_prod + k) %
						      q->r.drv.rq_nent) *
					     q->r.drv.rq_stride,
					     q->r.drv.rq_stride);
			q->rq_prod += n;
			__sync_synchronize();
			db->rq_prod = rndn(64) ? q->rq_prod : (uint32_t)rnd();
		}
		__sync_synchronize();
		ret = kick_rq(z->e->fd, q->qp.handle);
		break;
	case 10:	/* the engine's half of the doorbell record */
		if (rndn(2))
			db->sq_cons = rnd();
		else
			db->rq_cons = rnd();
		break;
	case 11: {	/* a CQ: consume anything, arm anything */
		struct cq *cq = &z->cq[rndn(2)];
		volatile struct urdma_cq_db *cdb = (void *)(uintptr_t)cq->db;

		cdb->cons += rndn(4) ? rndn(cq->nent) : (uint32_t)rnd();
		cdb->arm = rndn(2) ? (uint32_t)rnd() : 0;
		if (!rndn(8))
			memset(cq->buf + rndn(cq->nent) * URDMA_CQE_SIZE,
			       (int)rnd(), URDMA_CQE_SIZE);
		break;
	}
	case 12:	/* to ERROR */
		ret = modify_state(z->e->fd, q->qp.handle, QPS_ERR);
		break;
	case 13:	/* back to RESET, connected again */
		ret = modify_state(z->e->fd, q->qp.handle, QPS_RESET);
		q->sq_prod = q->rq_prod = 0;
		ret = ret ?: rfz_connect(z, i);
		break;
	case 14:	/* destroy it; the next step recreates it */
		ret = destroy_qp(z->e->fd, q->qp.handle);
		q->live = false;
		break;
	default:	/* garbage anywhere in its rings */
		k = rndn(q->r.drv.sq_nent * q->r.drv.sq_stride);
		sq[k] = rnd();
		if (!q->srq)
			rq[rndn(q->r.drv.rq_nent * q->r.drv.rq_stride)] = rnd();
		break;
	}
	rfz_drain_events(z);
	return rfz_ok(ret) ? 0 : ret;
}

TEST_F_TIMEOUT(q, fuzz_rings, 1800)
{
	static const uint8_t types[RFUZZ_QPS] = {
		QPT_RC, QPT_RC, QPT_UC, QPT_UC, QPT_RC, QPT_UD,
	};
	static const int peers[RFUZZ_QPS] = { 1, 0, 3, 2, 4, 5 };
	struct ib_uverbs_ah_attr aa;
	long budget = RFUZZ_SECONDS, steps = 0, odd = 0;
	struct timespec t0, t;
	struct rfz z = { .e = &self->e };
	uint64_t seed;
	uint32_t ro_rkey;
	int i, ret;

	if (getenv("URDMA_RING_FUZZ_SECONDS"))
		budget = atol(getenv("URDMA_RING_FUZZ_SECONDS"));
	/* A new seed each run; URDMA_FUZZ_SEED replays one. */
	seed = getenv("URDMA_FUZZ_SEED") ?
	       strtoull(getenv("URDMA_FUZZ_SEED"), NULL, 0) :
	       (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
	rng = seed | 1;
	TH_LOG("URDMA_FUZZ_SEED=%#llx, %ld s", (unsigned long long)seed,
	       budget);
	ASSERT_GID0(z.gid);
	ASSERT_EQ(0, fcntl(self->e.async_fd, F_SETFL, O_NONBLOCK));
	z.buf = map_pages(RFUZZ_BUF / self->e.pg);
	z.ro = map_pages(1);
	ASSERT_NE(NULL, z.buf);
	ASSERT_NE(NULL, z.ro);
	ASSERT_RET(0, reg_mr(&self->e, z.buf, RFUZZ_BUF,
			     ACC_RC | (1u << 3), &z.mr, &z.lkey, &z.rkey));
	ASSERT_RET(0, reg_mr(&self->e, z.ro, self->e.pg, 0, &z.ro_mr,
			     &z.ro_lkey, &ro_rkey));
	for (i = 0; i < 2; i++)
		ASSERT_RET(0, cq_new(&self->e, 64, &z.cq[i]));
	ASSERT_RET(0, srq_req_init(&self->e, &z.sr, RFUZZ_WR));
	ASSERT_RET(0, srq_create(&self->e, &z.sr, &z.srq));
	ah_attr_gid(&aa, z.gid);
	ASSERT_RET(0, ah_create(&self->e, &aa, &z.ah, &z.ah_num));
	for (i = 0; i < RFUZZ_QPS; i++) {
		z.q[i].type = types[i];
		z.q[i].peer = peers[i];
		z.q[i].srq = i == 4;
		ASSERT_RET(0, rfz_create(&z, i));
	}
	for (i = 0; i < RFUZZ_QPS; i++)
		ASSERT_RET(0, rfz_connect(&z, i));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ret = rfz_step(&z, rndn(RFUZZ_QPS));
		if (ret && odd++ < 10)
			TH_LOG("step %ld: %s", steps, ename(ret));
		if (++steps % 256)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= budget)
			break;
		/* Now and then, a fresh start for every QP that survived. */
		for (i = 0; i < RFUZZ_QPS && !rndn(8); i++) {
			if (!z.q[i].live)
				continue;
			ret = modify_state(self->e.fd, z.q[i].qp.handle,
					   QPS_RESET);
			z.q[i].sq_prod = z.q[i].rq_prod = 0;
			ret = ret ?: rfz_connect(&z, i);
			if (!rfz_ok(ret) && odd++ < 10)
				TH_LOG("reconnect: %s", ename(ret));
		}
	}
	TH_LOG("%ld steps, %u async events", steps, z.events);
	EXPECT_EQ(0, odd);
	for (i = 0; i < RFUZZ_QPS; i++)
		if (z.q[i].live)
			ASSERT_RET(0, destroy_qp(self->e.fd, z.q[i].qp.handle));
	ASSERT_RET(0, destroy_ah(self->e.fd, z.ah));
	ASSERT_RET(0, destroy_srq(self->e.fd, z.srq.handle));
	for (i = 0; i < 2; i++)
		ASSERT_RET(0, destroy_cq(self->e.fd, z.cq[i].handle));
	ASSERT_RET(0, dereg_mr(self->e.fd, z.mr));
	ASSERT_RET(0, dereg_mr(self->e.fd, z.ro_mr));
	ASSERT_LIVE(0, 0, 0);
}

TEST_HARNESS_MAIN
