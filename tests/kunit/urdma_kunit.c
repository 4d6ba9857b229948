// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit suites for urdma.  Built as urdma_kunit.ko for kernels with
 * CONFIG_KUNIT; the symbols under test are exported from urdma.ko with
 * EXPORT_SYMBOL_IF_KUNIT.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <net/net_namespace.h>

#include "urdma.h"

/* ---- urdma_mtu_from_netdev ------------------------------------------ */

struct urdma_mtu_case {
	const char *name;
	unsigned int ndev_mtu;
	enum ib_mtu expected;
};

static const struct urdma_mtu_case urdma_mtu_cases[] = {
	{ "loopback_64k", 65536, IB_MTU_4096 },
	{ "jumbo_9000", 9000, IB_MTU_4096 },
	{ "exactly_4096", 4096 + URDMA_ROCE_HDR_ROOM, IB_MTU_4096 },
	{ "one_short_of_4096", 4095 + URDMA_ROCE_HDR_ROOM, IB_MTU_2048 },
	{ "ethernet_1500", 1500, IB_MTU_1024 },
	{ "exactly_1024", 1024 + URDMA_ROCE_HDR_ROOM, IB_MTU_1024 },
	{ "one_short_of_1024", 1023 + URDMA_ROCE_HDR_ROOM, IB_MTU_512 },
	{ "exactly_512", 512 + URDMA_ROCE_HDR_ROOM, IB_MTU_512 },
	{ "tiny_clamps_to_256", 300, IB_MTU_256 },
	{ "header_room_only", URDMA_ROCE_HDR_ROOM, IB_MTU_256 },
	{ "zero", 0, IB_MTU_256 },
};

static void urdma_mtu_case_desc(const struct urdma_mtu_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(urdma_mtu, urdma_mtu_cases, urdma_mtu_case_desc);

static void urdma_test_mtu_from_netdev(struct kunit *test)
{
	const struct urdma_mtu_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, urdma_mtu_from_netdev(c->ndev_mtu), c->expected);
}

/* ---- urdma_port_state_from_netdev ----------------------------------- */

static void urdma_test_port_state(struct kunit *test)
{
	struct urdma_port_state ps;

	ps = urdma_port_state_from_netdev(true, true);
	KUNIT_EXPECT_EQ(test, ps.state, IB_PORT_ACTIVE);
	KUNIT_EXPECT_EQ(test, ps.phys_state, IB_PORT_PHYS_STATE_LINK_UP);

	ps = urdma_port_state_from_netdev(true, false);
	KUNIT_EXPECT_EQ(test, ps.state, IB_PORT_DOWN);
	KUNIT_EXPECT_EQ(test, ps.phys_state, IB_PORT_PHYS_STATE_POLLING);

	ps = urdma_port_state_from_netdev(false, true);
	KUNIT_EXPECT_EQ(test, ps.state, IB_PORT_DOWN);
	KUNIT_EXPECT_EQ(test, ps.phys_state, IB_PORT_PHYS_STATE_DISABLED);

	ps = urdma_port_state_from_netdev(false, false);
	KUNIT_EXPECT_EQ(test, ps.state, IB_PORT_DOWN);
	KUNIT_EXPECT_EQ(test, ps.phys_state, IB_PORT_PHYS_STATE_DISABLED);
}

/* ---- urdma_fill_device_attr: the reported limits are coherent ------- */

static void urdma_test_device_attr(struct kunit *test)
{
	struct ib_device_attr attr;

	memset(&attr, 0xa5, sizeof(attr));
	urdma_fill_device_attr(&attr);

	KUNIT_EXPECT_EQ(test, attr.max_qp, URDMA_MAX_QP);
	KUNIT_EXPECT_EQ(test, attr.max_pd, URDMA_MAX_PD);
	KUNIT_EXPECT_EQ(test, attr.max_cqe, URDMA_MAX_CQE);
	/* Ring sizes are powers of two. */
	KUNIT_EXPECT_TRUE(test, is_power_of_2(attr.max_qp_wr));
	KUNIT_EXPECT_TRUE(test, is_power_of_2(attr.max_cqe));
	KUNIT_EXPECT_TRUE(test, is_power_of_2(attr.max_srq_wr));
	KUNIT_EXPECT_LE(test, attr.max_sge_rd, attr.max_send_sge);
	KUNIT_EXPECT_TRUE(test, attr.page_size_cap & PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, attr.max_res_rd_atom,
			attr.max_qp * attr.max_qp_rd_atom);
	KUNIT_EXPECT_TRUE(test, attr.kernel_cap_flags & IBK_ALLOW_USER_UNREG);
	/* Nothing uninitialised survives (the 0xa5 poison is gone). */
	KUNIT_EXPECT_EQ(test, attr.sys_image_guid, 0);
	KUNIT_EXPECT_EQ(test, attr.vendor_id, 0);
	/* Not claimed until implemented. */
	KUNIT_EXPECT_EQ(test, attr.atomic_cap, IB_ATOMIC_NONE);
}

/* ---- a device on the loopback netdev, through the core -------------- */

struct urdma_dev_fixture {
	struct urdma_dev *udev;
};

static int urdma_dev_test_init(struct kunit *test)
{
	struct urdma_dev_fixture *fx;
	int ret;

	fx = kunit_kzalloc(test, sizeof(*fx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, fx);
	test->priv = fx;

	fx->udev = urdma_dev_create("urdma_kunit%d", init_net.loopback_dev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(fx->udev));

	ret = urdma_dev_register(fx->udev, "urdma_kunit%d");
	if (ret) {
		urdma_dev_destroy(fx->udev);
		fx->udev = NULL;
	}
	KUNIT_ASSERT_EQ(test, ret, 0);
	return 0;
}

static void urdma_dev_test_exit(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;

	if (fx && fx->udev)
		ib_unregister_device(&fx->udev->ibdev);
}

static void urdma_test_dev_query(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct ib_device *ibdev = &fx->udev->ibdev;
	struct ib_port_attr pattr;
	u16 pkey;

	KUNIT_EXPECT_EQ(test, ibdev->attrs.max_qp, URDMA_MAX_QP);
	KUNIT_EXPECT_EQ(test, rdma_protocol_roce_udp_encap(ibdev, 1), true);
	KUNIT_EXPECT_EQ(test, rdma_port_get_link_layer(ibdev, 1),
			IB_LINK_LAYER_ETHERNET);

	KUNIT_ASSERT_EQ(test, ib_query_port(ibdev, 1, &pattr), 0);
	KUNIT_EXPECT_EQ(test, pattr.state, IB_PORT_ACTIVE);
	KUNIT_EXPECT_EQ(test, pattr.active_mtu, IB_MTU_4096);
	KUNIT_EXPECT_EQ(test, pattr.gid_tbl_len, URDMA_GID_TBL_LEN);

	KUNIT_EXPECT_EQ(test, ib_query_pkey(ibdev, 1, 0, &pkey), 0);
	KUNIT_EXPECT_EQ(test, pkey, URDMA_DEFAULT_PKEY);
	KUNIT_EXPECT_EQ(test, ib_query_pkey(ibdev, 1, 1, &pkey), -EINVAL);
}

static void urdma_test_dev_pd_numbers(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct ib_pd *a, *b, *c;
	u32 pdn_a;

	a = ib_alloc_pd(&fx->udev->ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a));
	b = ib_alloc_pd(&fx->udev->ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(b));
	pdn_a = to_upd(a)->pdn;
	KUNIT_EXPECT_NE(test, pdn_a, to_upd(b)->pdn);

	/* A freed number is reused: the ida hands out the lowest. */
	ib_dealloc_pd(a);
	c = ib_alloc_pd(&fx->udev->ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c));
	KUNIT_EXPECT_EQ(test, to_upd(c)->pdn, pdn_a);

	ib_dealloc_pd(c);
	ib_dealloc_pd(b);
}

static void urdma_test_dev_unsupported(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct ib_cq *cq;

	/* Objects that do not exist yet fail cleanly, with no side effect. */
	cq = ib_alloc_cq(&fx->udev->ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	KUNIT_EXPECT_TRUE(test, IS_ERR(cq));
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(cq), -EOPNOTSUPP);
}

static struct kunit_case urdma_logic_cases[] = {
	KUNIT_CASE_PARAM(urdma_test_mtu_from_netdev, urdma_mtu_gen_params),
	KUNIT_CASE(urdma_test_port_state),
	KUNIT_CASE(urdma_test_device_attr),
	{}
};

static struct kunit_suite urdma_logic_suite = {
	.name = "urdma_logic",
	.test_cases = urdma_logic_cases,
};

static struct kunit_case urdma_dev_cases[] = {
	KUNIT_CASE(urdma_test_dev_query),
	KUNIT_CASE(urdma_test_dev_pd_numbers),
	KUNIT_CASE(urdma_test_dev_unsupported),
	{}
};

static struct kunit_suite urdma_dev_suite = {
	.name = "urdma_device",
	.init = urdma_dev_test_init,
	.exit = urdma_dev_test_exit,
	.test_cases = urdma_dev_cases,
};

kunit_test_suites(&urdma_logic_suite, &urdma_dev_suite);

MODULE_DESCRIPTION("KUnit tests for urdma");
MODULE_LICENSE("Dual BSD/GPL");
URDMA_IMPORT_KUNIT_NS();
