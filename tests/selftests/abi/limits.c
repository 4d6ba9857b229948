// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: the device limits, enforced. */

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
