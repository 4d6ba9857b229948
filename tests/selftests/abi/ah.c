// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: AHs. */

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
