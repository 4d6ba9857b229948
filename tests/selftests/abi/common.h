/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* urdma_abi_test: the common part: system headers, limits, command helpers, the dev and ctx fixtures. */

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
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/urdma-abi.h>

#include "kselftest_harness.h"

/* The limits urdma documents (kernel/urdma.h, docs/ABI.md). */
#define MAX_PD		16384
#define MAX_QP_WR	16384
#define MAX_SGE		16
#define MAX_INLINE	256
#define MAX_CQE		(1u << 20)
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

/*
 * The output of `rdma -j resource show ARGS` in *@out (malloc'd, NUL
 * terminated).  Return: 0, -ENOENT if the tool failed, or -errno.
 */
static int rdma_res_json(const char *args, char **out)
{
	char cmd[256], *buf, *p;
	size_t n = 0, cap = 4096;
	FILE *f;
	int ret;

	snprintf(cmd, sizeof(cmd), "rdma -j resource show %s 2>/dev/null",
		 args);
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	f = popen(cmd, "r");
	if (!f) {
		ret = -errno;
		free(buf);
		return ret;
	}
	for (;;) {
		n += fread(buf + n, 1, cap - 1 - n, f);
		if (n < cap - 1)
			break;
		p = realloc(buf, cap * 2);
		if (!p)
			break;
		buf = p;
		cap *= 2;
	}
	buf[n] = 0;
	if (pclose(f)) {
		free(buf);
		return -ENOENT;
	}
	*out = buf;
	return 0;
}

/* @n is a whole attribute within the @len bytes left. */
static bool nla_ok(const struct nlattr *n, int len)
{
	return len >= (int)NLA_HDRLEN && n->nla_len >= NLA_HDRLEN &&
	       n->nla_len <= len;
}

/* The attribute after @n; *@len drops by @n's aligned size. */
static struct nlattr *nla_next(const struct nlattr *n, int *len)
{
	*len -= NLA_ALIGN(n->nla_len);
	return (struct nlattr *)((char *)n + NLA_ALIGN(n->nla_len));
}

/* Attribute @type among the @len bytes of attributes at @a, or NULL. */
static struct nlattr *nla_find(void *a, int len, int type)
{
	struct nlattr *n;

	for (n = a; nla_ok(n, len); n = nla_next(n, &len))
		if ((n->nla_type & NLA_TYPE_MASK) == type)
			return n;
	return NULL;
}

#define NLA_DATA(n)	((char *)(n) + NLA_HDRLEN)
#define NLA_LEN(n)	((int)(n)->nla_len - NLA_HDRLEN)

/* One device's RES_GET reply: its summary counts into @c. */
static void res_summary(void *attrs, int len, struct res_counts *c)
{
	struct nlattr *sum, *e, *name, *curr;
	int left;

	sum = nla_find(attrs, len, RDMA_NLDEV_ATTR_RES_SUMMARY);
	if (!sum)
		return;
	left = NLA_LEN(sum);
	for (e = (struct nlattr *)NLA_DATA(sum); nla_ok(e, left);
	     e = nla_next(e, &left)) {
		long v;

		name = nla_find(NLA_DATA(e), NLA_LEN(e),
				RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME);
		curr = nla_find(NLA_DATA(e), NLA_LEN(e),
				RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR);
		if (!name || !curr || NLA_LEN(curr) != 8)
			continue;
		v = (long)*(uint64_t *)NLA_DATA(curr);
		if (!strcmp(NLA_DATA(name), "pd"))
			c->pd = v;
		else if (!strcmp(NLA_DATA(name), "cq"))
			c->cq = v;
		else if (!strcmp(NLA_DATA(name), "qp"))
			c->qp = v;
		else if (!strcmp(NLA_DATA(name), "srq"))
			c->srq = v;
	}
}

/*
 * The device's counts, as `rdma resource show` prints them, read from the
 * same netlink dump (RDMA_NLDEV_CMD_RES_GET) without running the tool: a
 * process start costs a second on the debug kernel under TCG, and every
 * fixture reads the counts.
 */
static int read_counts(struct res_counts *c)
{
	struct nlmsghdr req = {
		.nlmsg_len = sizeof(req),
		.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
					       RDMA_NLDEV_CMD_RES_GET),
		.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		.nlmsg_seq = 1,
	};
	static char buf[65536] __attribute__((aligned(NLMSG_ALIGNTO)));
	bool done = false, found = false;
	int fd, ret = 0;

	c->pd = c->cq = c->qp = c->srq = -1;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, sizeof(req), 0) != sizeof(req))
		ret = -errno;
	while (!ret && !done) {
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0) {
			ret = n ? -errno : -EIO;
			break;
		}
		for (; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			void *a = NLMSG_DATA(h);
			int len = (int)NLMSG_PAYLOAD(h, 0);
			struct nlattr *name;

			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				ret = -EIO;
				break;
			}
			name = nla_find(a, len, RDMA_NLDEV_ATTR_DEV_NAME);
			if (!name || strcmp(NLA_DATA(name), want_ibdev()))
				continue;
			res_summary(a, len, c);
			found = true;
		}
	}
	close(fd);
	if (ret)
		return ret;
	return !found || c->pd < 0 || c->cq < 0 || c->qp < 0 ? -ENOENT : 0;
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
 * URDMA_ABI_SHARED: other processes use the device meanwhile (make check's
 * fuzz lane runs traffic beside the fuzzers), so the device's counts prove
 * nothing, and filling it with PDs would fail their ALLOC_PD.
 */
static bool abi_shared(void)
{
	return getenv("URDMA_ABI_SHARED");
}

/*
 * How many PDs in the device's resource tracking belong to this process;
 * -1 without the rdma tool.
 */
static int own_pds(void)
{
	char args[128], key[32], *buf = NULL, *p;
	int count = 0;

	snprintf(args, sizeof(args), "pd dev %s", want_ibdev());
	if (rdma_res_json(args, &buf))
		return -1;
	snprintf(key, sizeof(key), "\"pid\":%d", (int)getpid());
	for (p = buf; (p = strstr(p, key)); ) {
		p += strlen(key);
		if (*p < '0' || *p > '9')
			count++;
	}
	free(buf);
	return count;
}

/*
 * The device has no PD left over from anything: exactly max_pd fit, less
 * the kernel's own.  Shared with other processes, it has none of this
 * process's left, and a fresh context still gets one.
 */
#define ASSERT_PD_SPACE_INTACT() do {					\
	int __err, __n;							\
	uint32_t __h;							\
									\
	if (abi_shared()) {						\
		int __fd, __afd;					\
									\
		__n = own_pds();					\
		ASSERT_EQ(0, __n)					\
			TH_LOG("%d PDs of this process are left in "	\
			       "the device", __n);			\
		ASSERT_RET(0, ctx_open(&__fd, &__afd, NULL));		\
		__err = do_alloc_pd(__fd, &__h, NULL);			\
		close(__afd);						\
		close(__fd);						\
		ASSERT_RET(0, __err);					\
		break;							\
	}								\
	__n = pd_capacity(&__err);					\
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
