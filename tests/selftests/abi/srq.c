// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: SRQs. */

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
 * an XRCD, which neither handle given here is: the core fails the lookup
 * (EINVAL; test_xrc creates real ones).  Tag-matching SRQs are not in
 * docs/ABI.md; urdma must refuse them (EOPNOTSUPP or EINVAL).
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
