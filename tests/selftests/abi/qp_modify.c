// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: MODIFY_QP, QUERY_QP; the checks of WQEs in a live ring. */

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
 * The same WQE with them clear succeeds.  xrc_srqn means something only
 * to an XRC initiator; on an RC QP it must be zero too.
 */
TEST_F(q, send_wqe_reserved_fields)
{
	static const char *const names[] = {
		"reserved_58", "xrc_srqn", "reserved_1c0",
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
			w->xrc_srqn = 1;
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
 * The engine checks a WQE against the opcode table (urdma_wqe_ops[]):
 * inline data only on SENDs and WRITEs, no kernel-only opcode (REG_MR)
 * from a user ring, nothing past the last opcode.  Each such WQE fails
 * with LOC_QP_OP_ERR; the same WQE without the fault succeeds.
 */
TEST_F(q, send_wqe_opcode_table)
{
	static const struct {
		const char *name;
		uint8_t opcode, flags;
	} cases[] = {
		{ "READ with inline data", URDMA_WQE_RDMA_READ,
		  URDMA_WQE_INLINE },
		{ "REG_MR from a user ring", URDMA_WQE_REG_MR, 0 },
		{ "opcode past the table", URDMA_WQE_NUM_OPCODES, 0 },
		{ "opcode 0xff", 0xff, 0 },
	};
	const struct urdma_cqe *c;
	struct urdma_send_wqe *w;
	struct qp_req r;
	struct cq cq;
	struct qp qp;
	uint32_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		ASSERT_RET(0, rsv_self_qp(&self->e, &cq, &r, &qp));
		/* Zero-length WRITE and READ to itself: no key is looked at. */
		w = rsv_send_wqe(&r, 0, URDMA_WQE_RDMA_WRITE);
		w->flags |= URDMA_WQE_INLINE;
		rsv_send_wqe(&r, 1, URDMA_WQE_RDMA_READ);
		ASSERT_RET(0, rsv_post(&self->e, &r, qp.handle, 2));
		c = rsv_cqe(&cq, 1);
		ASSERT_NE(NULL, c) TH_LOG("no CQE for the clean WQEs");
		EXPECT_EQ(0, c->status) TH_LOG("the clean READ");
		EXPECT_EQ(0, rsv_cqe(&cq, 0)->status) TH_LOG("inline WRITE");
		w = rsv_send_wqe(&r, 2, cases[i].opcode);
		w->flags |= cases[i].flags;
		ASSERT_RET(0, rsv_post(&self->e, &r, qp.handle, 3));
		c = rsv_cqe(&cq, 2);
		ASSERT_NE(NULL, c) TH_LOG("no CQE for %s", cases[i].name);
		EXPECT_EQ(102, c->wr_id);
		/* IB_WC_LOC_QP_OP_ERR */
		EXPECT_EQ(2, c->status) TH_LOG("%s", cases[i].name);
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
