// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: QPs: CREATE_QP and DESTROY_QP. */

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
 * RC, UC, UD and XRC.  SMI/GSI, the raw IPv6/Ethertype types and XRC_TGT
 * (whose pd_handle must name an XRCD) never reach urdma: the core says
 * EINVAL.  RAW_PACKET needs CAP_NET_RAW (EPERM from the core without it).
 * XRC_INI has no RQ: this request, with RQ rings, is EINVAL (test_xrc
 * creates clean ones).
 */
TEST_F(q, qp_types_rejected)
{
	static const struct { uint8_t type; int err; } cases[] = {
		{ QPT_SMI, -EINVAL }, { QPT_GSI, -EINVAL },
		{ QPT_RAW_IPV6, -EINVAL }, { QPT_RAW_ETHERTYPE, -EINVAL },
		{ QPT_XRC_TGT, -EINVAL }, { 7, -EINVAL }, { 11, -EINVAL },
		{ QPT_XRC_INI, -EINVAL }, { QPT_DRIVER, -EOPNOTSUPP },
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
