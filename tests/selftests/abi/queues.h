/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* urdma_abi_test: queue helpers: test memory, CQ, QP, SRQ and AH commands, the q fixture. */

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
	self->have_counts = !abi_shared() &&
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
