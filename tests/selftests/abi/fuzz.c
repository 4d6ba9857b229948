// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: fuzzed commands and live rings. */

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
