// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit suites for urdma.  Built as urdma_kunit.ko for kernels with
 * CONFIG_KUNIT; the symbols under test are exported from urdma.ko with
 * EXPORT_SYMBOL_IF_KUNIT.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>

#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

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
	KUNIT_EXPECT_EQ(test, attr.vendor_id, 0x7572);
	/* The engine's atomics are CPU atomics: global. */
	KUNIT_EXPECT_EQ(test, attr.atomic_cap, IB_ATOMIC_GLOB);
}

/* ---- MTT from synthetic sg tables ------------------------------------ */

struct urdma_sg_chunk {
	u64 dma;
	u32 len;
};

struct urdma_mtt_case {
	const char *name;
	u64 address;		/* user VA of the first byte */
	u64 length;
	u64 iova;		/* the MR's IOVA */
	struct urdma_sg_chunk chunks[4];
	unsigned int nchunks;
	unsigned int block_shift;
	u32 nents;
	u64 pas[4];		/* the first entries expected */
};

static const struct urdma_mtt_case urdma_mtt_cases[] = {
	{
		/* Scattered 4 KiB pages, unaligned start and end. */
		.name = "scattered_4k_unaligned",
		.address = 0x7f0000001100, .length = 3 * 4096 - 0x100 - 0x80,
		.iova = 0x7f0000001100,
		.chunks = { { 0x10000000, 4096 }, { 0x20005000, 4096 },
			    { 0x30003000, 4096 } },
		.nchunks = 3, .block_shift = 12, .nents = 3,
		.pas = { 0x10000000, 0x20005000, 0x30003000 },
	}, {
		/*
		 * Contiguous pages whose VA and PA agree in their low 21 bits
		 * fit one 2 MiB block: fewer entries, same translation.
		 */
		.name = "contiguous_pages_one_block",
		.address = 0x7f0000003000, .length = 2 * 4096,
		.iova = 0x7f0000003000,
		.chunks = { { 0x50003000, 2 * 4096 } },
		.nchunks = 1, .block_shift = 21, .nents = 1,
		.pas = { 0x50000000 },
	}, {
		/* The same pages at a PA that disagrees in bit 12: 4 KiB. */
		.name = "contiguous_pages_misaligned",
		.address = 0x7f0000003000, .length = 2 * 4096,
		.iova = 0x7f0000003000,
		.chunks = { { 0x50004000, 2 * 4096 } },
		.nchunks = 1, .block_shift = 12, .nents = 2,
		.pas = { 0x50004000, 0x50005000 },
	}, {
		/* Two discontiguous 2 MiB huge pages, offset into the first. */
		.name = "huge_2m_pages",
		.address = 0x7f0000201000, .length = 0x3fe000,
		.iova = 0x7f0000201000,
		.chunks = { { 0x40001000, 0x1ff000 }, { 0x80200000, 0x1ff000 } },
		.nchunks = 2, .block_shift = 21, .nents = 2,
		.pas = { 0x40000000, 0x80200000 },
	}, {
		/* A 2 MiB-aligned chunk then a stray 4 KiB page: 4 KiB blocks. */
		.name = "mixed_2m_then_4k",
		.address = 0x7f0000200000, .length = 0x201000,
		.iova = 0x7f0000200000,
		.chunks = { { 0x40000000, 0x200000 }, { 0x90003000, 4096 } },
		.nchunks = 2, .block_shift = 12, .nents = 513,
		.pas = { 0x40000000, 0x40001000, 0x40002000, 0x40003000 },
	}, {
		/* The IOVA differs from the VA (ibv_reg_mr_iova). */
		.name = "iova_differs_from_va",
		.address = 0x7f0000001100, .length = 4096,
		.iova = 0x100,
		.chunks = { { 0x10000000, 4096 }, { 0x20000000, 4096 } },
		.nchunks = 2, .block_shift = 12, .nents = 2,
		.pas = { 0x10000000, 0x20000000 },
	},
};

static void urdma_mtt_case_desc(const struct urdma_mtt_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(urdma_mtt, urdma_mtt_cases, urdma_mtt_case_desc);

/* A umem with the sg layout of @c; the DMA addresses are made up. */
static struct ib_umem *urdma_fake_umem(struct kunit *test,
				       const struct urdma_mtt_case *c)
{
	struct ib_umem *umem;
	struct scatterlist *sg;
	unsigned int i;

	umem = kunit_kzalloc(test, sizeof(*umem), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, umem);
	umem->address = c->address;
	umem->length = c->length;
	umem->iova = c->iova;
	KUNIT_ASSERT_EQ(test, sg_alloc_table(&umem->sgt_append.sgt,
					     c->nchunks, GFP_KERNEL), 0);
	for_each_sgtable_sg(&umem->sgt_append.sgt, sg, i) {
		sg_dma_address(sg) = c->chunks[i].dma;
		sg_dma_len(sg) = c->chunks[i].len;
	}
	umem->sgt_append.sgt.nents = c->nchunks;
	return umem;
}

static void urdma_test_mtt_build(struct kunit *test)
{
	const struct urdma_mtt_case *c = test->param_value;
	struct ib_umem *umem = urdma_fake_umem(test, c);
	struct urdma_mtt mtt = {};
	u64 bsize, last;
	u32 contig, i;
	void *kva;

	KUNIT_ASSERT_EQ(test, urdma_mtt_from_umem(&mtt, umem, c->iova,
						  SZ_4K | SZ_2M | SZ_1G), 0);
	KUNIT_EXPECT_EQ(test, mtt.block_shift, c->block_shift);
	KUNIT_ASSERT_EQ(test, mtt.nents, c->nents);
	for (i = 0; i < min_t(u32, c->nents, ARRAY_SIZE(c->pas)); i++)
		KUNIT_EXPECT_EQ(test, mtt.pas[i], c->pas[i]);

	/* The first byte maps into the first chunk at the page offset. */
	bsize = BIT_ULL(mtt.block_shift);
	kva = urdma_mtt_translate(&mtt, c->iova, 1, &contig);
	KUNIT_EXPECT_EQ(test, (u64)(uintptr_t)kva,
			c->chunks[0].dma + (c->address & (PAGE_SIZE - 1)));
	KUNIT_EXPECT_EQ(test, contig, 1);
	kva = urdma_mtt_translate(&mtt, c->iova, U32_MAX >> 1, &contig);
	KUNIT_EXPECT_NULL(test, kva);		/* beyond the end */
	kva = urdma_mtt_translate(&mtt, c->iova, c->length, &contig);
	KUNIT_EXPECT_NOT_NULL(test, kva);
	KUNIT_EXPECT_EQ(test, (u64)contig,
			min_t(u64, c->length, bsize - (c->iova & (bsize - 1))));

	/* The last byte maps to the last chunk's last byte. */
	last = c->chunks[c->nchunks - 1].dma + c->chunks[c->nchunks - 1].len - 1;
	last -= (c->address + c->length) & (PAGE_SIZE - 1) ?
		PAGE_SIZE - ((c->address + c->length) & (PAGE_SIZE - 1)) : 0;
	kva = urdma_mtt_translate(&mtt, c->iova + c->length - 1, 1, &contig);
	KUNIT_EXPECT_EQ(test, (u64)(uintptr_t)kva, last);

	/* Out of bounds on either side, and overflow. */
	KUNIT_EXPECT_NULL(test, urdma_mtt_translate(&mtt, c->iova - 1, 1,
						    &contig));
	KUNIT_EXPECT_NULL(test, urdma_mtt_translate(&mtt, c->iova + c->length,
						    1, &contig));
	KUNIT_EXPECT_NULL(test, urdma_mtt_translate(&mtt, U64_MAX, 2,
						    &contig));

	urdma_mtt_free(&mtt);
	sg_free_table(&umem->sgt_append.sgt);
}

/* ---- keys -------------------------------------------------------------- */

static void urdma_test_keys(struct kunit *test)
{
	struct urdma_mem mem[5] = {};
	struct urdma_keytab kt;
	u32 stale;
	int i;

	urdma_keytab_init(&kt);
	for (i = 0; i < 4; i++) {
		KUNIT_ASSERT_EQ(test, urdma_key_alloc(&kt, &mem[i], 4), 0);
		KUNIT_EXPECT_EQ(test, urdma_key_index(mem[i].key), i + 1);
		KUNIT_EXPECT_EQ(test, urdma_key_variant(mem[i].key), 0);
		KUNIT_EXPECT_PTR_EQ(test, urdma_key_lookup(&kt, mem[i].key),
				    &mem[i]);
	}
	/* Full: a clear error, nothing published. */
	KUNIT_EXPECT_EQ(test, urdma_key_alloc(&kt, &mem[4], 4), -ENOMEM);

	/* Index 2 is reused after a free, with a new variant. */
	stale = mem[1].key;
	urdma_key_free(&kt, stale);
	KUNIT_EXPECT_NULL(test, urdma_key_lookup(&kt, stale));
	KUNIT_ASSERT_EQ(test, urdma_key_alloc(&kt, &mem[4], 4), 0);
	KUNIT_EXPECT_EQ(test, urdma_key_index(mem[4].key), 2);
	KUNIT_EXPECT_NE(test, urdma_key_variant(mem[4].key),
			urdma_key_variant(stale));
	/* The stale key does not reach the new object. */
	KUNIT_EXPECT_NULL(test, urdma_key_lookup(&kt, stale));
	KUNIT_EXPECT_PTR_EQ(test, urdma_key_lookup(&kt, mem[4].key), &mem[4]);
	/* Unknown indices, and index 0, find nothing. */
	KUNIT_EXPECT_NULL(test, urdma_key_lookup(&kt, 0));
	KUNIT_EXPECT_NULL(test, urdma_key_lookup(&kt, 99 << 8));

	for (i = 0; i < 5; i++)
		if (i != 1)
			urdma_key_free(&kt, mem[i].key);
	urdma_keytab_destroy(&kt);
}

/* ---- access flags (IBTA C10-9) ---------------------------------------- */

static void urdma_test_access(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, urdma_check_access(0), 0);
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ACCESS_LOCAL_WRITE), 0);
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ACCESS_REMOTE_READ), 0);
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ACCESS_LOCAL_WRITE |
						 IB_ACCESS_REMOTE_WRITE |
						 IB_ACCESS_REMOTE_ATOMIC), 0);
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ACCESS_REMOTE_WRITE),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ACCESS_REMOTE_ATOMIC),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ACCESS_RELAXED_ORDERING),
			0);
	/* The debug kernel has the core's ODP (odp.c). */
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ACCESS_ON_DEMAND),
			URDMA_HAVE_ODP ? 0 : -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ZERO_BASED),
			-EOPNOTSUPP);
}

/* ---- a device on the loopback netdev, through the core -------------- */

struct urdma_dev_fixture {
	struct urdma_dev *udev;
};

static void urdma_dev_test_unregister(void *udev)
{
	ib_unregister_device(&((struct urdma_dev *)udev)->ibdev);
}

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
	/*
	 * Unregister as a deferred action, not in .exit: KUnit runs .exit
	 * before the actions, and a case's objects (QPs, CQs, PDs released by
	 * actions it adds later) must go before their device.  Actions run in
	 * reverse order, so this one runs last.
	 */
	return kunit_add_action_or_reset(test, urdma_dev_test_unregister,
					 fx->udev);
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

static void urdma_test_dev_frmr(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct scatterlist sg[2];
	struct ib_mr *mr, *dma;
	struct ib_pd *pd;
	void *buf[2];
	u32 contig, lkey;

	pd = ib_alloc_pd(&fx->udev->ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(pd));

	/*
	 * Without IBK_LOCAL_DMA_LKEY the core gives every kernel PD a DMA MR
	 * (get_dma_mr) for its local_dma_lkey.
	 */
	dma = urdma_key_lookup(&fx->udev->keys, pd->local_dma_lkey) ?
	      pd->__internal_mr : NULL;
	KUNIT_ASSERT_NOT_NULL(test, dma);
	KUNIT_EXPECT_EQ(test, to_umr(dma)->mem.type, URDMA_MEM_DMA);

	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 4);
	KUNIT_ASSERT_FALSE(test, IS_ERR(mr));
	KUNIT_EXPECT_NE(test, mr->lkey, dma->lkey);
	KUNIT_EXPECT_EQ(test, mr->lkey, mr->rkey);
	KUNIT_EXPECT_TRUE(test, IS_ERR(ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG,
						   URDMA_MAX_FAST_REG_PAGES + 1)));
	KUNIT_EXPECT_TRUE(test, IS_ERR(ib_alloc_mr(pd, IB_MR_TYPE_SG_GAPS, 4)));

	/* Map two pages; the MTT translates the MR's IOVA to them. */
	buf[0] = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	buf[1] = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf[0]);
	KUNIT_ASSERT_NOT_NULL(test, buf[1]);
	sg_init_table(sg, 2);
	sg_set_buf(&sg[0], buf[0], PAGE_SIZE);
	sg_set_buf(&sg[1], buf[1], PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, ib_dma_map_sg(&fx->udev->ibdev, sg, 2,
					    DMA_BIDIRECTIONAL), 2);
	KUNIT_EXPECT_EQ(test, ib_map_mr_sg(mr, sg, 2, NULL, PAGE_SIZE), 2);
	KUNIT_EXPECT_EQ(test, mr->length, 2 * PAGE_SIZE);
	KUNIT_EXPECT_PTR_EQ(test, urdma_mtt_translate(&to_umr(mr)->mtt,
						      mr->iova + PAGE_SIZE + 8,
						      8, &contig),
			    buf[1] + 8);
	ib_dma_unmap_sg(&fx->udev->ibdev, sg, 2, DMA_BIDIRECTIONAL);

	lkey = mr->lkey;
	KUNIT_EXPECT_EQ(test, ib_dereg_mr(mr), 0);
	KUNIT_EXPECT_NULL(test, urdma_key_lookup(&fx->udev->keys, lkey));
	ib_dealloc_pd(pd);
}

/* One attribute at one value, and the errno urdma_qp_check_attr gives. */
struct urdma_attr_case {
	const char *name;
	int mask;
	size_t offset;
	size_t size;
	u32 value;
	int expect;
};

#define AC(m, f, v, e) { #f "=" #v, m, offsetof(struct ib_qp_attr, f), \
			 sizeof_field(struct ib_qp_attr, f), v, e }
static const struct urdma_attr_case urdma_attr_cases[] = {
	AC(IB_QP_PATH_MTU, path_mtu, 0, -EINVAL),
	AC(IB_QP_PATH_MTU, path_mtu, IB_MTU_256, 0),
	AC(IB_QP_PATH_MTU, path_mtu, IB_MTU_4096, 0),
	AC(IB_QP_PATH_MTU, path_mtu, IB_MTU_4096 + 1, -EINVAL),
	AC(IB_QP_TIMEOUT, timeout, 31, 0),
	AC(IB_QP_TIMEOUT, timeout, 32, -EINVAL),
	AC(IB_QP_RETRY_CNT, retry_cnt, 7, 0),
	AC(IB_QP_RETRY_CNT, retry_cnt, 8, -EINVAL),
	AC(IB_QP_RNR_RETRY, rnr_retry, 7, 0),
	AC(IB_QP_RNR_RETRY, rnr_retry, 8, -EINVAL),
	AC(IB_QP_MIN_RNR_TIMER, min_rnr_timer, 31, 0),
	AC(IB_QP_MIN_RNR_TIMER, min_rnr_timer, 32, -EINVAL),
	AC(IB_QP_SQ_PSN, sq_psn, 0xffffff, 0),
	AC(IB_QP_SQ_PSN, sq_psn, 0x1000000, -EINVAL),
	AC(IB_QP_RQ_PSN, rq_psn, 0xffffff, 0),
	AC(IB_QP_RQ_PSN, rq_psn, 0x1000000, -EINVAL),
	AC(IB_QP_MAX_QP_RD_ATOMIC, max_rd_atomic, URDMA_MAX_RD_ATOM, 0),
	AC(IB_QP_MAX_QP_RD_ATOMIC, max_rd_atomic, URDMA_MAX_RD_ATOM + 1,
	   -EINVAL),
	AC(IB_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic, URDMA_MAX_RD_ATOM, 0),
	AC(IB_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic, URDMA_MAX_RD_ATOM + 1,
	   -EINVAL),
	AC(IB_QP_DEST_QPN, dest_qp_num, 0xffffff, 0),
	AC(IB_QP_DEST_QPN, dest_qp_num, 0x1000000, -EINVAL),
	AC(IB_QP_PKEY_INDEX, pkey_index, 0, 0),
	AC(IB_QP_PKEY_INDEX, pkey_index, 1, -EINVAL),
	AC(IB_QP_PORT, port_num, 1, 0),
	AC(IB_QP_PORT, port_num, 2, -EINVAL),
	AC(IB_QP_ACCESS_FLAGS, qp_access_flags, IB_ACCESS_REMOTE_WRITE |
	   IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC, 0),
	/* Meaningless on a QP, and ignored there (as mlx5 does). */
	AC(IB_QP_ACCESS_FLAGS, qp_access_flags, IB_ACCESS_ON_DEMAND,
	   URDMA_HAVE_ODP ? 0 : -EINVAL),
	AC(IB_QP_ACCESS_FLAGS, qp_access_flags, IB_ZERO_BASED, -EINVAL),
	AC(IB_QP_PATH_MIG_STATE, path_mig_state, IB_MIG_MIGRATED, 0),
	AC(IB_QP_PATH_MIG_STATE, path_mig_state, IB_MIG_REARM, -EOPNOTSUPP),
	AC(IB_QP_ALT_PATH, timeout, 0, -EOPNOTSUPP),
	/* A value outside the mask is not looked at. */
	AC(IB_QP_SQ_PSN, timeout, 99, 0),
};

static void urdma_attr_case_desc(const struct urdma_attr_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(urdma_attr, urdma_attr_cases, urdma_attr_case_desc);

static void urdma_test_qp_check_attr(struct kunit *test)
{
	const struct urdma_attr_case *c = test->param_value;
	struct ib_qp_attr attr = {};
	void *field = (u8 *)&attr + c->offset;

	switch (c->size) {
	case 1:
		*(u8 *)field = c->value;
		break;
	case 2:
		*(u16 *)field = c->value;
		break;
	default:
		*(u32 *)field = c->value;
		break;
	}
	KUNIT_EXPECT_EQ(test, urdma_qp_check_attr(&attr, c->mask), c->expect);
}

static void urdma_test_ring_geometry(struct kunit *test)
{
	/* Send WQEs: 64-byte header plus SGEs or inline, whole blocks. */
	KUNIT_EXPECT_EQ(test, urdma_send_stride(0, 0), 64);
	KUNIT_EXPECT_EQ(test, urdma_send_stride(1, 0), 128);
	KUNIT_EXPECT_EQ(test, urdma_send_stride(4, 0), 128);
	KUNIT_EXPECT_EQ(test, urdma_send_stride(5, 0), 192);
	KUNIT_EXPECT_EQ(test, urdma_send_stride(1, 100), 192);
	KUNIT_EXPECT_EQ(test, urdma_send_stride(URDMA_MAX_SGE, URDMA_MAX_INLINE),
			URDMA_MAX_WQE_BLOCKS * URDMA_WQE_BLOCK);
	/* Receive WQEs: 16-byte header plus SGEs. */
	KUNIT_EXPECT_EQ(test, urdma_recv_stride(0), 64);
	KUNIT_EXPECT_EQ(test, urdma_recv_stride(3), 64);
	KUNIT_EXPECT_EQ(test, urdma_recv_stride(4), 128);
	KUNIT_EXPECT_EQ(test, urdma_recv_stride(URDMA_MAX_SGE),
			URDMA_MAX_WQE_BLOCKS * URDMA_WQE_BLOCK);

	KUNIT_EXPECT_TRUE(test, urdma_ring_size_ok(1, 1, 4));
	KUNIT_EXPECT_TRUE(test, urdma_ring_size_ok(4, 3, 4));
	KUNIT_EXPECT_FALSE(test, urdma_ring_size_ok(0, 0, 4));
	KUNIT_EXPECT_FALSE(test, urdma_ring_size_ok(3, 3, 4));
	KUNIT_EXPECT_FALSE(test, urdma_ring_size_ok(2, 3, 4));
	KUNIT_EXPECT_FALSE(test, urdma_ring_size_ok(8, 3, 4));
	KUNIT_EXPECT_FALSE(test, urdma_ring_size_ok(BIT(31), 1, BIT(30)));

	/* CQE opcodes are ibv_wc_opcode values; the kernel's may differ. */
	KUNIT_EXPECT_EQ(test, urdma_cqe_to_wc_opcode(URDMA_CQE_SEND), IB_WC_SEND);
	KUNIT_EXPECT_EQ(test, urdma_cqe_to_wc_opcode(URDMA_CQE_REG_MR),
			IB_WC_REG_MR);
	KUNIT_EXPECT_EQ(test, urdma_cqe_to_wc_opcode(URDMA_CQE_RECV_RDMA_IMM),
			IB_WC_RECV_RDMA_WITH_IMM);
	KUNIT_EXPECT_EQ(test, urdma_cqe_to_wc_opcode(200), -EINVAL);
}

static void urdma_test_kernel_ring(struct kunit *test)
{
	struct urdma_ring ring = {};
	struct urdma_db db = {};

	KUNIT_EXPECT_EQ(test, urdma_ring_init_kernel(&ring, 3, 64), -EINVAL);
	KUNIT_ASSERT_EQ(test, urdma_ring_init_kernel(&ring, 8, 64), 0);
	KUNIT_EXPECT_EQ(test, ring.log_nent, 3);
	KUNIT_EXPECT_PTR_EQ(test, urdma_ring_entry(&ring, 9),
			    ring.buf + 64);
	KUNIT_EXPECT_EQ(test, urdma_ring_phase(&ring, 7), 1);
	KUNIT_EXPECT_EQ(test, urdma_ring_phase(&ring, 8), 0);
	KUNIT_EXPECT_EQ(test, urdma_ring_phase(&ring, 16), 1);
	urdma_ring_destroy(&ring);
	KUNIT_EXPECT_NULL(test, ring.buf);
	urdma_ring_destroy(&ring);	/* idempotent */

	KUNIT_ASSERT_EQ(test, urdma_db_init_kernel(&db), 0);
	KUNIT_EXPECT_NOT_NULL(test, db.kva);
	urdma_db_destroy(&db);
	KUNIT_EXPECT_NULL(test, db.kva);
}

/* A kernel CQ and a PD on the fixture's device, undone by kunit actions. */
static struct ib_cq *urdma_test_cq(struct kunit *test, int cqe)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct ib_cq *cq;

	cq = ib_alloc_cq(&fx->udev->ibdev, NULL, cqe, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_FALSE(test, IS_ERR(cq));
	return cq;
}

/* Pretend to be the engine: produce one CQE. */
static void urdma_test_produce(struct urdma_cq *cq, u64 wr_id, u8 status)
{
	struct urdma_cqe *cqe = urdma_ring_entry(&cq->ring, cq->prod);

	memset(cqe, 0, sizeof(*cqe));
	cqe->wr_id = wr_id;
	cqe->status = status;
	cqe->opcode = URDMA_CQE_RECV;
	cqe->byte_len = (u32)wr_id * 3;
	cqe->flags = URDMA_CQE_IMM;
	cqe->ex = (__force u32)cpu_to_be32(0xabcd0000 | (u32)wr_id);
	/* The fields before the owner bit, as the engine must. */
	smp_store_release(&cqe->owner, urdma_ring_phase(&cq->ring, cq->prod));
	cq->prod++;
}

static void urdma_test_dev_cq(struct kunit *test)
{
	struct ib_wc wc[4];
	struct urdma_cq *cq;
	struct ib_cq *ibcq;
	u64 next = 0, want = 0;
	int i, n;

	ibcq = urdma_test_cq(test, 3);
	cq = to_ucq(ibcq);
	KUNIT_EXPECT_EQ(test, ibcq->cqe, 4);
	KUNIT_EXPECT_EQ(test, ib_poll_cq(ibcq, 4, wc), 0);

	/* Several passes over the ring: the owner bit alternates. */
	for (i = 0; i < 5; i++) {
		urdma_test_produce(cq, next++, IB_WC_SUCCESS);
		urdma_test_produce(cq, next++, IB_WC_WR_FLUSH_ERR);
		urdma_test_produce(cq, next++, IB_WC_SUCCESS);
		n = ib_poll_cq(ibcq, 2, wc);
		KUNIT_ASSERT_EQ(test, n, 2);
		n += ib_poll_cq(ibcq, 4, wc + 2);
		KUNIT_ASSERT_EQ(test, n, 3);
		for (n = 0; n < 3; n++, want++) {
			KUNIT_EXPECT_EQ(test, wc[n].wr_id, want);
			KUNIT_EXPECT_EQ(test, wc[n].status,
					want % 3 == 1 ? IB_WC_WR_FLUSH_ERR :
							IB_WC_SUCCESS);
			KUNIT_EXPECT_EQ(test, wc[n].opcode, IB_WC_RECV);
			KUNIT_EXPECT_EQ(test, wc[n].byte_len, (u32)want * 3);
			KUNIT_EXPECT_TRUE(test, wc[n].wc_flags & IB_WC_WITH_IMM);
			KUNIT_EXPECT_EQ(test, be32_to_cpu(wc[n].ex.imm_data),
					0xabcd0000 | (u32)want);
		}
		KUNIT_EXPECT_EQ(test, ib_poll_cq(ibcq, 4, wc), 0);
	}

	/* Resize keeps unpolled CQEs, in order; too small is refused. */
	urdma_test_produce(cq, 100, IB_WC_SUCCESS);
	urdma_test_produce(cq, 101, IB_WC_SUCCESS);
	urdma_test_produce(cq, 102, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, ib_resize_cq(ibcq, 2), -EINVAL);
	KUNIT_ASSERT_EQ(test, ib_resize_cq(ibcq, 16), 0);
	KUNIT_EXPECT_EQ(test, ibcq->cqe, 16);
	KUNIT_ASSERT_EQ(test, ib_poll_cq(ibcq, 1, wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 100);
	KUNIT_ASSERT_EQ(test, ib_resize_cq(ibcq, 2), 0);
	KUNIT_ASSERT_EQ(test, ib_poll_cq(ibcq, 4, wc), 2);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 101);
	KUNIT_EXPECT_EQ(test, wc[1].wr_id, 102);
	KUNIT_EXPECT_EQ(test, ib_resize_cq(ibcq, URDMA_MAX_CQE + 1), -EINVAL);

	/* Arming reports missed events. */
	KUNIT_EXPECT_EQ(test, ib_req_notify_cq(ibcq, IB_CQ_NEXT_COMP |
					       IB_CQ_REPORT_MISSED_EVENTS), 0);
	urdma_test_produce(cq, 7, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, ib_req_notify_cq(ibcq, IB_CQ_SOLICITED |
					       IB_CQ_REPORT_MISSED_EVENTS), 1);
	ib_free_cq(ibcq);
}

struct urdma_test_qp {
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
};

static void urdma_test_qp_create(struct kunit *test, struct urdma_test_qp *t,
				 enum ib_qp_type type)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct ib_qp_init_attr init = {
		.qp_type = type,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 5, .max_recv_wr = 3,
			.max_send_sge = 2, .max_recv_sge = 3,
			.max_inline_data = 100,
		},
	};

	t->pd = ib_alloc_pd(&fx->udev->ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(t->pd));
	t->cq = urdma_test_cq(test, 16);
	init.send_cq = t->cq;
	init.recv_cq = t->cq;
	t->qp = ib_create_qp(t->pd, &init);
	KUNIT_ASSERT_FALSE(test, IS_ERR(t->qp));
	/* Capacities are what the rings hold: rounded up, never less. */
	KUNIT_EXPECT_EQ(test, init.cap.max_send_wr, 8);
	KUNIT_EXPECT_EQ(test, init.cap.max_recv_wr, 4);
	KUNIT_EXPECT_GE(test, init.cap.max_send_sge, 2);
	KUNIT_EXPECT_GE(test, init.cap.max_inline_data, 100);
	KUNIT_EXPECT_GE(test, init.cap.max_recv_sge, 3);
}

static void urdma_test_qp_destroy(struct urdma_test_qp *t)
{
	ib_destroy_qp(t->qp);
	ib_free_cq(t->cq);
	ib_dealloc_pd(t->pd);
}

/* The attributes each UD transition needs; none beyond the state else. */
static int urdma_test_ud_mask(enum ib_qp_state cur, enum ib_qp_state next,
			      struct ib_qp_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = next;
	if (cur == IB_QPS_RESET && next == IB_QPS_INIT) {
		attr->port_num = 1;
		attr->qkey = 0x11111111;
		return IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
		       IB_QP_QKEY;
	}
	if (cur == IB_QPS_RTR && next == IB_QPS_RTS) {
		attr->sq_psn = 0x123456;
		return IB_QP_STATE | IB_QP_SQ_PSN;
	}
	return IB_QP_STATE;
}

static int urdma_test_goto(struct ib_qp *qp, enum ib_qp_state target)
{
	static const enum ib_qp_state path[] = {
		IB_QPS_RESET, IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS, IB_QPS_SQD,
	};
	struct ib_qp_attr attr;
	int i, mask, ret;

	mask = urdma_test_ud_mask(IB_QPS_ERR, IB_QPS_RESET, &attr);
	ret = ib_modify_qp(qp, &attr, mask);
	if (ret || target == IB_QPS_RESET)
		return ret;
	if (target == IB_QPS_ERR) {
		mask = urdma_test_ud_mask(IB_QPS_RESET, IB_QPS_INIT, &attr);
		ret = ib_modify_qp(qp, &attr, mask);
		mask = urdma_test_ud_mask(IB_QPS_INIT, IB_QPS_ERR, &attr);
		return ret ?: ib_modify_qp(qp, &attr, mask);
	}
	for (i = 1; i < ARRAY_SIZE(path); i++) {
		mask = urdma_test_ud_mask(path[i - 1], path[i], &attr);
		ret = ib_modify_qp(qp, &attr, mask);
		if (ret || path[i] == target)
			return ret;
	}
	return -EINVAL;
}

/*
 * The IBTA QP state table for a UD QP, source state by destination state,
 * as an independent statement of what must work.  Every state but RESET
 * may go to ERR (10.3.1).
 */
static const bool urdma_ud_legal[IB_QPS_ERR + 1][IB_QPS_ERR + 1] = {
	[IB_QPS_RESET] = { [IB_QPS_RESET] = 1, [IB_QPS_INIT] = 1 },
	[IB_QPS_INIT] = { [IB_QPS_RESET] = 1, [IB_QPS_INIT] = 1,
			  [IB_QPS_RTR] = 1, [IB_QPS_ERR] = 1 },
	[IB_QPS_RTR] = { [IB_QPS_RESET] = 1, [IB_QPS_RTS] = 1,
			 [IB_QPS_ERR] = 1 },
	[IB_QPS_RTS] = { [IB_QPS_RESET] = 1, [IB_QPS_RTS] = 1,
			 [IB_QPS_SQD] = 1, [IB_QPS_ERR] = 1 },
	[IB_QPS_SQD] = { [IB_QPS_RESET] = 1, [IB_QPS_RTS] = 1,
			 [IB_QPS_SQD] = 1, [IB_QPS_ERR] = 1 },
	[IB_QPS_ERR] = { [IB_QPS_RESET] = 1, [IB_QPS_ERR] = 1 },
};

static void urdma_test_dev_qp_states(struct kunit *test)
{
	enum ib_qp_state cur, next;
	struct urdma_test_qp t;
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int mask, ret;

	urdma_test_qp_create(test, &t, IB_QPT_UD);
	KUNIT_EXPECT_GE(test, t.qp->qp_num, 2);

	for (cur = IB_QPS_RESET; cur <= IB_QPS_ERR; cur++) {
		if (cur == IB_QPS_SQE)	/* entered only on a send error */
			continue;
		for (next = IB_QPS_RESET; next <= IB_QPS_ERR; next++) {
			KUNIT_ASSERT_EQ_MSG(test, urdma_test_goto(t.qp, cur), 0,
					    "reaching state %d", cur);
			mask = urdma_test_ud_mask(cur, next, &attr);
			ret = ib_modify_qp(t.qp, &attr, mask);
			KUNIT_EXPECT_EQ_MSG(test, ret,
					    urdma_ud_legal[cur][next] ? 0 :
					    -EINVAL, "%d -> %d", cur, next);
			KUNIT_EXPECT_EQ(test, ib_query_qp(t.qp, &attr,
							  IB_QP_STATE, &init),
					0);
			KUNIT_EXPECT_EQ_MSG(test, attr.qp_state,
					    ret ? cur : next, "%d -> %d", cur,
					    next);
		}
	}

	/* Attributes stick; a state hint that is wrong is refused. */
	KUNIT_ASSERT_EQ(test, urdma_test_goto(t.qp, IB_QPS_RTS), 0);
	KUNIT_ASSERT_EQ(test, ib_query_qp(t.qp, &attr, IB_QP_SQ_PSN, &init), 0);
	KUNIT_EXPECT_EQ(test, attr.sq_psn, 0x123456);
	KUNIT_EXPECT_EQ(test, attr.qkey, 0x11111111);
	KUNIT_EXPECT_EQ(test, init.qp_type, IB_QPT_UD);
	KUNIT_EXPECT_EQ(test, init.cap.max_send_wr, 8);
	attr.qp_state = IB_QPS_RTS;
	attr.cur_qp_state = IB_QPS_SQD;
	KUNIT_EXPECT_EQ(test, ib_modify_qp(t.qp, &attr, IB_QP_STATE |
					   IB_QP_CUR_STATE), -EINVAL);
	attr.sq_psn = BIT(24);
	KUNIT_EXPECT_EQ(test, ib_modify_qp(t.qp, &attr, IB_QP_STATE |
					   IB_QP_SQ_PSN), -EINVAL);
	urdma_test_qp_destroy(&t);
}

static void urdma_test_dev_qp_post(struct kunit *test)
{
	const struct ib_recv_wr *bad_rwr;
	const struct ib_send_wr *bad_swr;
	struct ib_recv_wr rwr[5] = {};
	struct ib_sge sge[4] = {};
	struct urdma_recv_wqe *rwqe;
	struct urdma_qp_db *db;
	struct urdma_test_qp t;
	struct ib_ud_wr swr = {};
	struct urdma_qp *qp;
	int i;

	urdma_test_qp_create(test, &t, IB_QPT_UD);
	qp = to_uqp(t.qp);
	db = qp->db.kva;

	/* Nothing may be posted in RESET. */
	rwr[0].num_sge = 1;
	rwr[0].sg_list = sge;
	KUNIT_EXPECT_EQ(test, ib_post_recv(t.qp, rwr, &bad_rwr), -EINVAL);
	KUNIT_EXPECT_PTR_EQ(test, bad_rwr, &rwr[0]);
	swr.wr.opcode = IB_WR_SEND;
	KUNIT_EXPECT_EQ(test, ib_post_send(t.qp, &swr.wr, &bad_swr), -EINVAL);

	/* Receives land in the ring in order; a full ring says ENOMEM. */
	KUNIT_ASSERT_EQ(test, urdma_test_goto(t.qp, IB_QPS_INIT), 0);
	for (i = 0; i < 5; i++) {
		rwr[i].wr_id = 1000 + i;
		rwr[i].num_sge = i % 3 + 1;
		rwr[i].sg_list = sge;
		rwr[i].next = i < 4 ? &rwr[i + 1] : NULL;
		sge[i % 4].addr = 0x1000 * (i + 1);
		sge[i % 4].length = 64;
		sge[i % 4].lkey = 0x100 + i;
	}
	KUNIT_EXPECT_EQ(test, ib_post_recv(t.qp, rwr, &bad_rwr), -ENOMEM);
	KUNIT_EXPECT_PTR_EQ(test, bad_rwr, &rwr[4]);
	KUNIT_EXPECT_EQ(test, READ_ONCE(db->rq_prod), 4);
	for (i = 0; i < 4; i++) {
		rwqe = urdma_ring_entry(&qp->rq, i);
		KUNIT_EXPECT_EQ(test, rwqe->wr_id, 1000 + i);
		KUNIT_EXPECT_EQ(test, rwqe->num_sge, i % 3 + 1);
		KUNIT_EXPECT_EQ(test, ((struct urdma_sge *)(rwqe + 1))->lkey,
				sge[0].lkey);
	}

	/* Too many SGEs for the ring's stride. */
	WRITE_ONCE(db->rq_cons, 4);
	rwr[0].next = NULL;
	rwr[0].num_sge = URDMA_MAX_SGE + 1;
	KUNIT_EXPECT_EQ(test, ib_post_recv(t.qp, rwr, &bad_rwr), -EINVAL);

	/* Back to RESET empties the rings. */
	KUNIT_ASSERT_EQ(test, urdma_test_goto(t.qp, IB_QPS_RESET), 0);
	KUNIT_EXPECT_EQ(test, READ_ONCE(db->rq_prod), 0);
	KUNIT_EXPECT_EQ(test, READ_ONCE(db->rq_cons), 0);
	urdma_test_qp_destroy(&t);
}

static void urdma_test_dev_qpn(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct urdma_test_qp a, b;
	struct ib_qp *gsi;

	/* The MAD layer's GSI QP is QP 1. */
	gsi = xa_load(&fx->udev->qps, 1);
	KUNIT_ASSERT_NOT_NULL(test, gsi);
	KUNIT_EXPECT_EQ(test, gsi->qp_type, IB_QPT_GSI);

	urdma_test_qp_create(test, &a, IB_QPT_UD);
	urdma_test_qp_create(test, &b, IB_QPT_UD);
	KUNIT_EXPECT_GE(test, a.qp->qp_num, 2);
	KUNIT_EXPECT_GE(test, b.qp->qp_num, 2);
	KUNIT_EXPECT_NE(test, a.qp->qp_num, b.qp->qp_num);
	KUNIT_EXPECT_PTR_EQ(test, xa_load(&fx->udev->qps, a.qp->qp_num),
			    (void *)to_uqp(a.qp));
	urdma_test_qp_destroy(&b);
	urdma_test_qp_destroy(&a);
}

/* 0xffffff is the multicast QPN: no QP gets it, the allocator wraps first. */
static void urdma_test_dev_qpn_not_mcast(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct urdma_test_qp t[3];
	int i;

	xa_lock_irq(&fx->udev->qps);
	fx->udev->next_qpn = 0xfffffd;
	xa_unlock_irq(&fx->udev->qps);
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		urdma_test_qp_create(test, &t[i], IB_QPT_UD);
		KUNIT_EXPECT_NE(test, t[i].qp->qp_num, 0xffffff);
		KUNIT_EXPECT_GE(test, t[i].qp->qp_num, 2);
	}
	KUNIT_EXPECT_EQ(test, t[0].qp->qp_num, 0xfffffd);
	KUNIT_EXPECT_EQ(test, t[1].qp->qp_num, 0xfffffe);
	for (i = ARRAY_SIZE(t) - 1; i >= 0; i--)
		urdma_test_qp_destroy(&t[i]);
}

/*
 * A UD QP destroyed while attached to a multicast group leaves the group.
 * The core refuses to destroy a QP that ib_attach_mcast() attached (it
 * counts the attachment); the driver's op is called here directly, so the
 * core does not know, as with a consumer that forgot to detach.  A group
 * left pointing at the freed QP would take the next multicast message.
 */
static void urdma_test_dev_mcast_destroy_attached(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	union ib_gid gid = { .raw = { 0xff, 0x0e, [15] = 0x42 } };
	struct urdma_test_qp t;

	urdma_test_qp_create(test, &t, IB_QPT_UD);
	KUNIT_ASSERT_EQ(test,
			t.qp->device->ops.attach_mcast(t.qp, &gid, 0), 0);
	KUNIT_EXPECT_EQ(test, fx->udev->nmcast, 1);
	urdma_test_qp_destroy(&t);
	KUNIT_EXPECT_EQ(test, fx->udev->nmcast, 0);
	KUNIT_EXPECT_TRUE(test, list_empty(&fx->udev->mcast));
}

/* ---- RC traffic between two kernel QPs on the KUnit device ------------ */

/*
 * Two RC QPs on the fixture's device, connected to each other through the
 * core's ib_modify_qp, each with its own PD, send CQ, receive CQ and a
 * kmalloc'd buffer.  The device uses virtual DMA, so a buffer's DMA address
 * is its kernel address and the PD's DMA MR (local_dma_lkey; with
 * IB_PD_UNSAFE_GLOBAL_RKEY also the rkey) covers it.  Everything is
 * released by KUnit actions, before the device.
 */
#define URDMA_RC_BUF		(4 * PAGE_SIZE)
#define URDMA_RC_WAIT_MS	2000
#define URDMA_RC_FILL		0xee	/* bytes nobody may write */
#define URDMA_RC_QP_ACCESS	(IB_ACCESS_LOCAL_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_WRITE)

struct urdma_rc_side {
	struct ib_pd *pd;
	struct ib_cq *scq;
	struct ib_cq *rcq;
	struct ib_qp *qp;
	u8 *buf;
	u64 dma;
	u32 lkey;
	u32 rkey;
};

struct urdma_rc_pair {
	struct urdma_rc_side s[2];	/* s[0] requests, s[1] responds */
	/* The cases' work requests and completions, off the stack. */
	struct ib_rdma_wr rdma[3];
	struct ib_send_wr send[4];
	struct ib_recv_wr recv[4];
	struct ib_sge sge[5];
	struct ib_sge rsge[5];
	struct ib_wc wc[4];
};

static void urdma_rc_side_release(void *arg)
{
	struct urdma_rc_side *side = arg;

	if (side->qp)
		ib_destroy_qp(side->qp);
	if (side->rcq)
		ib_free_cq(side->rcq);
	if (side->scq)
		ib_free_cq(side->scq);
	if (side->dma)
		ib_dma_unmap_single(side->pd->device, side->dma, URDMA_RC_BUF,
				    DMA_BIDIRECTIONAL);
	if (side->pd)
		ib_dealloc_pd(side->pd);
	kfree(side->buf);
}

static void urdma_rc_side_create(struct kunit *test, struct urdma_rc_side *side)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct ib_device *ibdev = &fx->udev->ibdev;
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 16, .max_recv_wr = 16,
			.max_send_sge = 4, .max_recv_sge = 4,
			.max_inline_data = 64,
		},
	};
	struct ib_qp *qp;
	u64 dma;

	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							urdma_rc_side_release,
							side), 0);
	side->pd = ib_alloc_pd(ibdev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(side->pd)) {
		side->pd = NULL;
		KUNIT_FAIL_AND_ABORT(test, "ib_alloc_pd failed");
	}
	side->lkey = side->pd->local_dma_lkey;
	side->rkey = side->pd->unsafe_global_rkey;

	side->buf = kmalloc(URDMA_RC_BUF, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, side->buf);
	memset(side->buf, URDMA_RC_FILL, URDMA_RC_BUF);
	dma = ib_dma_map_single(ibdev, side->buf, URDMA_RC_BUF,
				DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(ibdev, dma));
	side->dma = dma;
	/* Virtual DMA: the engine reaches the buffer at its kernel address. */
	KUNIT_ASSERT_EQ(test, dma, (u64)(uintptr_t)side->buf);

	side->scq = ib_alloc_cq(ibdev, NULL, 32, 0, IB_POLL_DIRECT);
	if (IS_ERR(side->scq)) {
		side->scq = NULL;
		KUNIT_FAIL_AND_ABORT(test, "send CQ");
	}
	side->rcq = ib_alloc_cq(ibdev, NULL, 32, 0, IB_POLL_DIRECT);
	if (IS_ERR(side->rcq)) {
		side->rcq = NULL;
		KUNIT_FAIL_AND_ABORT(test, "receive CQ");
	}
	init.send_cq = side->scq;
	init.recv_cq = side->rcq;
	qp = ib_create_qp(side->pd, &init);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(qp), "ib_create_qp: %d",
			       PTR_ERR_OR_ZERO(qp));
	side->qp = qp;
}

/* The device's GID 0; the core fills the GID table after registration. */
static const struct ib_gid_attr *urdma_rc_gid(struct ib_device *ibdev)
{
	unsigned long end = jiffies + msecs_to_jiffies(URDMA_RC_WAIT_MS);
	const struct ib_gid_attr *attr;

	for (;;) {
		attr = rdma_get_gid_attr(ibdev, 1, 0);
		if (!IS_ERR(attr) || time_after(jiffies, end))
			return attr;
		msleep(20);
	}
}

/* RESET -> INIT -> RTR -> RTS, connected to @dest_qpn at @gid. */
static int urdma_rc_connect(struct ib_qp *qp, u32 dest_qpn,
			    const struct ib_gid_attr *gid, u32 rq_psn,
			    u32 sq_psn)
{
	struct urdma_dev *udev = to_udev(qp->device);
	union ib_gid dgid = gid->gid;
	struct ib_qp_attr attr = {};
	int ret;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = 1;
	attr.qp_access_flags = URDMA_RC_QP_ACCESS;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;

	/*
	 * Kernel callers hand the core a resolved address vector: it fills
	 * in the source GID's attribute from sgid_index but resolves no dmac.
	 */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, gid->index, 64, 0);
	ether_addr_copy(attr.ah_attr.roce.dmac, udev->ndev->dev_addr);
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = dest_qpn;
	attr.rq_psn = rq_psn;
	attr.max_dest_rd_atomic = 4;
	attr.min_rnr_timer = 1;		/* 10 us */
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = sq_psn;
	attr.max_rd_atomic = 4;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* The shared fixture of the RC cases: two connected QPs, both in RTS. */
static struct urdma_rc_pair *urdma_rc_pair_create(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	const struct ib_gid_attr *gid;
	struct urdma_rc_pair *p;
	struct urdma_qp *uqp;
	int ret;

	p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	urdma_rc_side_create(test, &p->s[0]);
	urdma_rc_side_create(test, &p->s[1]);

	gid = urdma_rc_gid(&fx->udev->ibdev);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(gid), "no GID 0: %d",
			       PTR_ERR_OR_ZERO(gid));
	KUNIT_EXPECT_EQ(test, gid->gid_type, IB_GID_TYPE_ROCE_UDP_ENCAP);
	ret = urdma_rc_connect(p->s[0].qp, p->s[1].qp->qp_num, gid, 0x100,
			       0x200);
	if (!ret)
		ret = urdma_rc_connect(p->s[1].qp, p->s[0].qp->qp_num, gid,
				       0x200, 0x100);
	rdma_put_gid_attr(gid);
	KUNIT_ASSERT_EQ_MSG(test, ret, 0, "connecting the QPs");

	/* The destination is this device: the engine takes the local path. */
	uqp = to_uqp(p->s[0].qp);
	KUNIT_ASSERT_TRUE(test, uqp->av_valid);
	KUNIT_EXPECT_EQ(test, uqp->av.peer, fx->udev->id);
	return p;
}

/* Fill @len bytes with a pattern that differs by @seed and by position. */
static void urdma_rc_pattern(u8 *p, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (u8)(i * 13 + (i >> 8) + seed) ?: 1;
}

/* The first offset where @a and @b differ, -1 if none. */
static long urdma_rc_diff(const u8 *a, const u8 *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (a[i] != b[i])
			return i;
	return -1;
}

/* On failure the value shown is the offset of the first difference. */
#define URDMA_RC_EXPECT_SAME(test, a, b, len)				\
	KUNIT_EXPECT_EQ_MSG(test, urdma_rc_diff(a, b, len), -1L,		\
			    "%s and %s differ (of %zu bytes)", #a, #b,	\
			    (size_t)(len))

/* Bytes nobody may have written still hold URDMA_RC_FILL. */
#define URDMA_RC_EXPECT_UNTOUCHED(test, p, len)				\
	KUNIT_EXPECT_NULL_MSG(test, memchr_inv(p, URDMA_RC_FILL, len),	\
			      "%s was written (%zu bytes)", #p,		\
			      (size_t)(len))

static struct ib_sge urdma_rc_sge(const struct urdma_rc_side *side, u32 off,
				  u32 len)
{
	return (struct ib_sge){
		.addr = side->dma + off, .length = len, .lkey = side->lkey,
	};
}

/*
 * Poll @cq until @n completions have arrived or URDMA_RC_WAIT_MS passed,
 * so that an engine that loses work fails the case instead of hanging it.
 * Return: the number polled.
 */
static int urdma_rc_poll(struct ib_cq *cq, struct ib_wc *wc, int n)
{
	unsigned long end = jiffies + msecs_to_jiffies(URDMA_RC_WAIT_MS);
	int got = 0, ret;

	while (got < n) {
		ret = ib_poll_cq(cq, n - got, wc + got);
		if (ret < 0)
			break;
		got += ret;
		if (got == n || time_after(jiffies, end))
			break;
		usleep_range(50, 200);
	}
	return got;
}

/* Nothing more is (or, after @ms, was) there. */
static void urdma_rc_expect_empty(struct kunit *test, struct ib_cq *cq,
				  unsigned int ms, const char *what)
{
	struct ib_wc wc = {};

	if (ms)
		msleep(ms);
	KUNIT_EXPECT_EQ_MSG(test, ib_poll_cq(cq, 1, &wc), 0,
			    "unexpected completion on %s (wr_id %llu status %d)",
			    what, wc.wr_id, wc.status);
}

/* The QP's state, -1 if it cannot be queried. */
static int urdma_rc_state(struct ib_qp *qp)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;

	if (ib_query_qp(qp, &attr, IB_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

static void urdma_rc_expect_wc(struct kunit *test, const struct ib_wc *wc,
			       u64 wr_id, enum ib_wc_opcode opcode,
			       const struct ib_qp *qp)
{
	KUNIT_EXPECT_EQ(test, wc->wr_id, wr_id);
	KUNIT_EXPECT_EQ_MSG(test, wc->status, IB_WC_SUCCESS, "wr_id %llu: %s",
			    wc->wr_id, ib_wc_status_msg(wc->status));
	KUNIT_EXPECT_EQ(test, wc->opcode, opcode);
	KUNIT_EXPECT_PTR_EQ(test, wc->qp, qp);
}

/*
 * One device registry (main.c): a netdev has at most one urdma device, and
 * the data path finds a registered device by its id and by its GID, and
 * nothing by an id or a GID no device has.
 */
static void urdma_test_dev_registry(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct urdma_dev *udev = fx->udev, *again;
	const struct net *net = dev_net(udev->ndev);
	union ib_gid none = { .raw = { [10] = 0xff, [11] = 0xff, 192, 0, 2, 77 } };
	const struct ib_gid_attr *gid;

	again = urdma_dev_create("urdma_kunit_dup%d", udev->ndev);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(again), -EEXIST);
	if (!IS_ERR(again))
		urdma_dev_destroy(again);

	KUNIT_ASSERT_NE(test, udev->id, 0);
	rcu_read_lock();
	KUNIT_EXPECT_PTR_EQ(test, urdma_devtab_get(udev->id), udev);
	KUNIT_EXPECT_NULL(test, urdma_devtab_get(0));
	KUNIT_EXPECT_NULL(test, urdma_devtab_get(udev->id + 1000));
	rcu_read_unlock();

	gid = urdma_rc_gid(&udev->ibdev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(gid));
	KUNIT_EXPECT_EQ(test, urdma_devtab_find_gid(&gid->gid, net), udev->id);
	rdma_put_gid_attr(gid);
	KUNIT_EXPECT_EQ(test, urdma_devtab_find_gid(&none, net), 0);
}

/*
 * A fast-registration MR is reached at the address its REG_MR carries,
 * which a ULP may change after ib_map_mr_sg(): xprtrdma (NFS over RDMA)
 * puts the RPC's XID in the top 32 bits.  The pages stay; the first byte
 * stays where it was in the first page.
 */
static void urdma_test_rc_frmr_iova(struct kunit *test)
{
	struct urdma_rc_pair *p = urdma_rc_pair_create(test);
	struct urdma_rc_side *a = &p->s[0], *b = &p->s[1];
	const struct ib_send_wr *bad_wr;
	struct ib_rdma_wr *wr = p->rdma;
	struct ib_wc *wc = p->wc;
	struct ib_reg_wr reg = {};
	struct scatterlist sg;
	struct ib_mr *mr;
	u64 iova;

	mr = ib_alloc_mr(b->pd, IB_MR_TYPE_MEM_REG, 4);
	KUNIT_ASSERT_FALSE(test, IS_ERR(mr));
	sg_init_one(&sg, b->buf, 2 * PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, ib_dma_map_sg(b->pd->device, &sg, 1,
					    DMA_BIDIRECTIONAL), 1);
	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE), 1);
	iova = (0x5eedULL << 32) | (mr->iova & 0xffffffff);
	KUNIT_ASSERT_NE(test, iova, mr->iova);
	mr->iova = iova;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));

	reg.wr.wr_id = 9;
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.mr = mr;
	reg.key = mr->rkey;
	reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	KUNIT_ASSERT_EQ(test, ib_post_send(b->qp, &reg.wr, &bad_wr), 0);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(b->scq, wc, 1), 1);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_SUCCESS);

	urdma_rc_pattern(a->buf, URDMA_RC_BUF, 7);
	p->sge[0] = urdma_rc_sge(a, 0, 64);
	wr[0].wr.wr_id = 1;
	wr[0].wr.opcode = IB_WR_RDMA_WRITE;
	wr[0].wr.send_flags = IB_SEND_SIGNALED;
	wr[0].wr.sg_list = &p->sge[0];
	wr[0].wr.num_sge = 1;
	wr[0].remote_addr = iova + PAGE_SIZE + 100;
	wr[0].rkey = mr->rkey;
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, &wr[0].wr, &bad_wr), 0);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, wc, 1), 1);
	urdma_rc_expect_wc(test, &wc[0], 1, IB_WC_RDMA_WRITE, a->qp);
	URDMA_RC_EXPECT_SAME(test, b->buf + PAGE_SIZE + 100, a->buf, 64);

	ib_dma_unmap_sg(b->pd->device, &sg, 1, DMA_BIDIRECTIONAL);
	KUNIT_EXPECT_EQ(test, ib_dereg_mr(mr), 0);
}

static void urdma_test_rc_write(struct kunit *test)
{
	struct urdma_rc_pair *p = urdma_rc_pair_create(test);
	struct urdma_rc_side *a = &p->s[0], *b = &p->s[1];
	struct ib_recv_wr *rwr = &p->recv[0];
	const struct ib_recv_wr *bad_rwr;
	const struct ib_send_wr *bad_wr;
	struct ib_rdma_wr *wr = p->rdma;
	struct ib_sge *sge = p->sge;
	struct ib_wc *wc = p->wc;

	urdma_rc_pattern(a->buf, URDMA_RC_BUF, 1);

	/*
	 * An unsignaled two-SGE write across a page boundary of the target,
	 * then a signaled one: its completion means both are done (in order).
	 */
	sge[0] = urdma_rc_sge(a, 0, 1000);
	sge[1] = urdma_rc_sge(a, 1000, 4000);
	wr[0].wr.wr_id = 1;
	wr[0].wr.opcode = IB_WR_RDMA_WRITE;
	wr[0].wr.sg_list = &sge[0];
	wr[0].wr.num_sge = 2;
	wr[0].wr.next = &wr[1].wr;
	wr[0].remote_addr = b->dma + 300;
	wr[0].rkey = b->rkey;
	sge[2] = urdma_rc_sge(a, 3 * PAGE_SIZE + 8, 64);
	wr[1].wr.wr_id = 2;
	wr[1].wr.opcode = IB_WR_RDMA_WRITE;
	wr[1].wr.send_flags = IB_SEND_SIGNALED;
	wr[1].wr.sg_list = &sge[2];
	wr[1].wr.num_sge = 1;
	wr[1].remote_addr = b->dma + 6000;
	wr[1].rkey = b->rkey;
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, &wr[0].wr, &bad_wr), 0);

	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, wc, 1), 1);
	urdma_rc_expect_wc(test, &wc[0], 2, IB_WC_RDMA_WRITE, a->qp);
	urdma_rc_expect_empty(test, a->scq, 0, "A's send CQ");
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf, 300);
	URDMA_RC_EXPECT_SAME(test, b->buf + 300, a->buf, 5000);
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf + 5300, 700);
	URDMA_RC_EXPECT_SAME(test, b->buf + 6000, a->buf + 3 * PAGE_SIZE + 8,
			     64);
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf + 6064, URDMA_RC_BUF - 6064);
	/* A write consumes no receive WQE and completes nothing there. */
	urdma_rc_expect_empty(test, b->rcq, 0, "B's receive CQ");

	/*
	 * RDMA WRITE with immediate: the data lands at the remote address,
	 * a receive WQE is consumed for the immediate (its SGE untouched),
	 * and the data is in place when its completion is seen.
	 */
	p->rsge[0] = urdma_rc_sge(b, 3 * PAGE_SIZE, 256);
	rwr->wr_id = 77;
	rwr->sg_list = &p->rsge[0];
	rwr->num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_recv(b->qp, rwr, &bad_rwr), 0);
	sge[3] = urdma_rc_sge(a, 100, 2500);
	wr[2].wr.wr_id = 3;
	wr[2].wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	wr[2].wr.send_flags = IB_SEND_SIGNALED;
	wr[2].wr.ex.imm_data = cpu_to_be32(0x12345678);
	wr[2].wr.sg_list = &sge[3];
	wr[2].wr.num_sge = 1;
	wr[2].remote_addr = b->dma + 2 * PAGE_SIZE - 100;
	wr[2].rkey = b->rkey;
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, &wr[2].wr, &bad_wr), 0);

	KUNIT_ASSERT_EQ(test, urdma_rc_poll(b->rcq, wc, 1), 1);
	URDMA_RC_EXPECT_SAME(test, b->buf + 2 * PAGE_SIZE - 100, a->buf + 100,
			     2500);
	urdma_rc_expect_wc(test, &wc[0], 77, IB_WC_RECV_RDMA_WITH_IMM, b->qp);
	KUNIT_EXPECT_EQ(test, wc[0].byte_len, 2500);
	KUNIT_EXPECT_TRUE(test, wc[0].wc_flags & IB_WC_WITH_IMM);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(wc[0].ex.imm_data), 0x12345678);
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf + 3 * PAGE_SIZE, 256);

	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, wc, 1), 1);
	urdma_rc_expect_wc(test, &wc[0], 3, IB_WC_RDMA_WRITE, a->qp);
	urdma_rc_expect_empty(test, b->rcq, 0, "B's receive CQ");
	urdma_rc_expect_empty(test, a->rcq, 0, "A's receive CQ");
	KUNIT_EXPECT_EQ(test, urdma_rc_state(a->qp), IB_QPS_RTS);
	KUNIT_EXPECT_EQ(test, urdma_rc_state(b->qp), IB_QPS_RTS);
}

/*
 * A 1 MiB RDMA WRITE with immediate: when the responder sees the receive
 * completion, every byte of the write is in place.  The completion is
 * polled without sleeping, so a completion written before the data is
 * caught while the copy is still running.
 */
static void urdma_test_rc_write_imm_big(struct kunit *test)
{
	struct urdma_rc_pair *p = urdma_rc_pair_create(test);
	struct urdma_rc_side *a = &p->s[0], *b = &p->s[1];
	unsigned long end = jiffies + msecs_to_jiffies(URDMA_RC_WAIT_MS);
	const struct ib_recv_wr *bad_rwr;
	const struct ib_send_wr *bad_wr;
	struct ib_recv_wr rwr = {};
	struct ib_rdma_wr wr = {};
	struct ib_sge sge;
	struct ib_wc wc;
	u8 *src, *dst;
	int n = 0;

	src = kunit_kmalloc(test, SZ_1M, GFP_KERNEL);
	dst = kunit_kmalloc(test, SZ_1M, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, src);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	urdma_rc_pattern(src, SZ_1M, 31);
	memset(dst, URDMA_RC_FILL, SZ_1M);

	rwr.wr_id = 5;
	KUNIT_ASSERT_EQ(test, ib_post_recv(b->qp, &rwr, &bad_rwr), 0);
	/* Virtual DMA (checked by the fixture): kernel addresses. */
	sge.addr = (u64)(uintptr_t)src;
	sge.length = SZ_1M;
	sge.lkey = a->lkey;
	wr.wr.wr_id = 6;
	wr.wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.ex.imm_data = cpu_to_be32(0xfeedbeef);
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.remote_addr = (u64)(uintptr_t)dst;
	wr.rkey = b->rkey;
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, &wr.wr, &bad_wr), 0);

	while (!n && time_before(jiffies, end)) {
		n = ib_poll_cq(b->rcq, 1, &wc);
		cond_resched();
	}
	KUNIT_ASSERT_EQ(test, n, 1);
	/* First the tail, which a late copy writes last. */
	URDMA_RC_EXPECT_SAME(test, dst + SZ_1M - SZ_4K, src + SZ_1M - SZ_4K,
			     SZ_4K);
	URDMA_RC_EXPECT_SAME(test, dst, src, SZ_1M);
	urdma_rc_expect_wc(test, &wc, 5, IB_WC_RECV_RDMA_WITH_IMM, b->qp);
	KUNIT_EXPECT_EQ(test, wc.byte_len, SZ_1M);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(wc.ex.imm_data), 0xfeedbeef);

	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, &wc, 1), 1);
	urdma_rc_expect_wc(test, &wc, 6, IB_WC_RDMA_WRITE, a->qp);
}

static void urdma_test_rc_read(struct kunit *test)
{
	struct urdma_rc_pair *p = urdma_rc_pair_create(test);
	struct urdma_rc_side *a = &p->s[0], *b = &p->s[1];
	const struct ib_send_wr *bad_wr;
	struct ib_rdma_wr *wr = p->rdma;
	struct ib_sge *sge = p->sge;
	struct ib_wc *wc = p->wc;

	urdma_rc_pattern(b->buf, URDMA_RC_BUF, 7);

	/* 5000 bytes scattered into two local SGEs, then a one-SGE read. */
	sge[0] = urdma_rc_sge(a, 10, 3000);
	sge[1] = urdma_rc_sge(a, 5000, 2000);
	wr[0].wr.wr_id = 11;
	wr[0].wr.opcode = IB_WR_RDMA_READ;
	wr[0].wr.send_flags = IB_SEND_SIGNALED;
	wr[0].wr.sg_list = sge;
	wr[0].wr.num_sge = 2;
	wr[0].wr.next = &wr[1].wr;
	wr[0].remote_addr = b->dma + 1234;
	wr[0].rkey = b->rkey;
	sge[2] = urdma_rc_sge(a, 3 * PAGE_SIZE, 1);
	wr[1].wr.wr_id = 12;
	wr[1].wr.opcode = IB_WR_RDMA_READ;
	wr[1].wr.send_flags = IB_SEND_SIGNALED;
	wr[1].wr.sg_list = &sge[2];
	wr[1].wr.num_sge = 1;
	wr[1].remote_addr = b->dma + URDMA_RC_BUF - 1;
	wr[1].rkey = b->rkey;
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, &wr[0].wr, &bad_wr), 0);

	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, wc, 2), 2);
	urdma_rc_expect_wc(test, &wc[0], 11, IB_WC_RDMA_READ, a->qp);
	KUNIT_EXPECT_EQ(test, wc[0].byte_len, 5000);
	urdma_rc_expect_wc(test, &wc[1], 12, IB_WC_RDMA_READ, a->qp);
	KUNIT_EXPECT_EQ(test, wc[1].byte_len, 1);

	URDMA_RC_EXPECT_UNTOUCHED(test, a->buf, 10);
	URDMA_RC_EXPECT_SAME(test, a->buf + 10, b->buf + 1234, 3000);
	URDMA_RC_EXPECT_UNTOUCHED(test, a->buf + 3010, 1990);
	URDMA_RC_EXPECT_SAME(test, a->buf + 5000, b->buf + 4234, 2000);
	URDMA_RC_EXPECT_UNTOUCHED(test, a->buf + 7000, 3 * PAGE_SIZE - 7000);
	KUNIT_EXPECT_EQ(test, a->buf[3 * PAGE_SIZE],
			b->buf[URDMA_RC_BUF - 1]);
	URDMA_RC_EXPECT_UNTOUCHED(test, a->buf + 3 * PAGE_SIZE + 1,
				  PAGE_SIZE - 1);

	urdma_rc_expect_empty(test, a->scq, 0, "A's send CQ");
	urdma_rc_expect_empty(test, b->rcq, 0, "B's receive CQ");
	urdma_rc_expect_empty(test, b->scq, 0, "B's send CQ");
	KUNIT_EXPECT_EQ(test, urdma_rc_state(a->qp), IB_QPS_RTS);
	KUNIT_EXPECT_EQ(test, urdma_rc_state(b->qp), IB_QPS_RTS);
}

static void urdma_test_rc_send(struct kunit *test)
{
	struct urdma_rc_pair *p = urdma_rc_pair_create(test);
	struct urdma_rc_side *a = &p->s[0], *b = &p->s[1];
	struct ib_sge *rsge = p->rsge, *sge = p->sge;
	struct ib_recv_wr *rwr = p->recv;
	const struct ib_recv_wr *bad_rwr;
	const struct ib_send_wr *bad_wr;
	struct ib_send_wr *wr = p->send;
	struct ib_wc *wc = p->wc;
	u8 inl[40], sent[40];

	urdma_rc_pattern(a->buf, URDMA_RC_BUF, 3);
	urdma_rc_pattern(b->buf + 3 * PAGE_SIZE, PAGE_SIZE, 5);
	urdma_rc_pattern(inl, sizeof(inl), 9);
	memcpy(sent, inl, sizeof(inl));

	/* B's receives: two SGEs, one, one, and one for the reply below. */
	rsge[0] = urdma_rc_sge(b, 0, 100);
	rsge[1] = urdma_rc_sge(b, PAGE_SIZE, 2000);
	rsge[2] = urdma_rc_sge(b, 2 * PAGE_SIZE, 512);
	rsge[3] = urdma_rc_sge(b, 2 * PAGE_SIZE + 1024, 16);
	rwr[0].wr_id = 100;
	rwr[0].sg_list = &rsge[0];
	rwr[0].num_sge = 2;
	rwr[0].next = &rwr[1];
	rwr[1].wr_id = 101;
	rwr[1].sg_list = &rsge[2];
	rwr[1].num_sge = 1;
	rwr[1].next = &rwr[2];
	rwr[2].wr_id = 102;
	rwr[2].sg_list = &rsge[3];
	rwr[2].num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_recv(b->qp, rwr, &bad_rwr), 0);

	/*
	 * A SEND of 1500 bytes from two SGEs, an inline SEND_WITH_IMM from a
	 * stack buffer, and a zero-length SEND_WITH_IMM.
	 */
	sge[0] = urdma_rc_sge(a, 0, 50);
	sge[1] = urdma_rc_sge(a, 200, 1450);
	wr[0].wr_id = 1;
	wr[0].opcode = IB_WR_SEND;
	wr[0].send_flags = IB_SEND_SIGNALED;
	wr[0].sg_list = sge;
	wr[0].num_sge = 2;
	wr[0].next = &wr[1];
	sge[2].addr = (u64)(uintptr_t)inl;
	sge[2].length = sizeof(inl);
	sge[2].lkey = 0;
	wr[1].wr_id = 2;
	wr[1].opcode = IB_WR_SEND_WITH_IMM;
	wr[1].send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE;
	wr[1].ex.imm_data = cpu_to_be32(0xcafef00d);
	wr[1].sg_list = &sge[2];
	wr[1].num_sge = 1;
	wr[1].next = &wr[2];
	wr[2].wr_id = 3;
	wr[2].opcode = IB_WR_SEND_WITH_IMM;
	wr[2].send_flags = IB_SEND_SIGNALED;
	wr[2].ex.imm_data = cpu_to_be32(0x01020304);
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, wr, &bad_wr), 0);
	/* Inline data is copied when posted: the buffer may change now. */
	memset(inl, 0, sizeof(inl));

	KUNIT_ASSERT_EQ(test, urdma_rc_poll(b->rcq, wc, 3), 3);
	urdma_rc_expect_wc(test, &wc[0], 100, IB_WC_RECV, b->qp);
	KUNIT_EXPECT_EQ(test, wc[0].byte_len, 1500);
	KUNIT_EXPECT_FALSE(test, wc[0].wc_flags & IB_WC_WITH_IMM);
	urdma_rc_expect_wc(test, &wc[1], 101, IB_WC_RECV, b->qp);
	KUNIT_EXPECT_EQ(test, wc[1].byte_len, sizeof(inl));
	KUNIT_EXPECT_TRUE(test, wc[1].wc_flags & IB_WC_WITH_IMM);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(wc[1].ex.imm_data), 0xcafef00d);
	urdma_rc_expect_wc(test, &wc[2], 102, IB_WC_RECV, b->qp);
	KUNIT_EXPECT_EQ(test, wc[2].byte_len, 0);
	KUNIT_EXPECT_TRUE(test, wc[2].wc_flags & IB_WC_WITH_IMM);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(wc[2].ex.imm_data), 0x01020304);

	/* Scattered in order: 100 bytes, then 1400 of the second SGE. */
	URDMA_RC_EXPECT_SAME(test, b->buf, a->buf, 50);
	URDMA_RC_EXPECT_SAME(test, b->buf + 50, a->buf + 200, 50);
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf + 100, PAGE_SIZE - 100);
	URDMA_RC_EXPECT_SAME(test, b->buf + PAGE_SIZE, a->buf + 250, 1400);
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf + PAGE_SIZE + 1400,
				  PAGE_SIZE - 1400);
	URDMA_RC_EXPECT_SAME(test, b->buf + 2 * PAGE_SIZE, sent, sizeof(sent));
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf + 2 * PAGE_SIZE + sizeof(sent),
				  1024 - sizeof(sent));
	/* The zero-length SEND wrote nothing into its receive's SGE. */
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf + 2 * PAGE_SIZE + 1024,
				  PAGE_SIZE - 1024);

	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, wc, 3), 3);
	urdma_rc_expect_wc(test, &wc[0], 1, IB_WC_SEND, a->qp);
	urdma_rc_expect_wc(test, &wc[1], 2, IB_WC_SEND, a->qp);
	urdma_rc_expect_wc(test, &wc[2], 3, IB_WC_SEND, a->qp);

	/* The other direction: B sends from its last page to A. */
	rsge[4] = urdma_rc_sge(a, 3 * PAGE_SIZE, PAGE_SIZE);
	rwr[3].wr_id = 200;
	rwr[3].sg_list = &rsge[4];
	rwr[3].num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_recv(a->qp, &rwr[3], &bad_rwr), 0);
	sge[3] = urdma_rc_sge(b, 3 * PAGE_SIZE, 777);
	wr[3].wr_id = 4;
	wr[3].opcode = IB_WR_SEND;
	wr[3].send_flags = IB_SEND_SIGNALED;
	wr[3].sg_list = &sge[3];
	wr[3].num_sge = 1;
	memset(a->buf + 3 * PAGE_SIZE, URDMA_RC_FILL, PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, ib_post_send(b->qp, &wr[3], &bad_wr), 0);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->rcq, wc, 1), 1);
	urdma_rc_expect_wc(test, &wc[0], 200, IB_WC_RECV, a->qp);
	KUNIT_EXPECT_EQ(test, wc[0].byte_len, 777);
	URDMA_RC_EXPECT_SAME(test, a->buf + 3 * PAGE_SIZE,
			     b->buf + 3 * PAGE_SIZE, 777);
	URDMA_RC_EXPECT_UNTOUCHED(test, a->buf + 3 * PAGE_SIZE + 777,
				  PAGE_SIZE - 777);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(b->scq, wc, 1), 1);
	urdma_rc_expect_wc(test, &wc[0], 4, IB_WC_SEND, b->qp);

	urdma_rc_expect_empty(test, a->scq, 0, "A's send CQ");
	urdma_rc_expect_empty(test, b->rcq, 0, "B's receive CQ");
	KUNIT_EXPECT_EQ(test, urdma_rc_state(a->qp), IB_QPS_RTS);
	KUNIT_EXPECT_EQ(test, urdma_rc_state(b->qp), IB_QPS_RTS);
}

/* A SEND before the responder posted a receive waits (RNR), then lands. */
static void urdma_test_rc_rnr(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct urdma_rc_pair *p = urdma_rc_pair_create(test);
	struct urdma_rc_side *a = &p->s[0], *b = &p->s[1];
	const struct ib_recv_wr *bad_rwr;
	const struct ib_send_wr *bad_wr;
	struct ib_recv_wr rwr = {};
	struct ib_send_wr wr = {};
	struct ib_sge sge, rsge;
	struct ib_wc wc;
	u64 rnr = 0;
	unsigned int i;

	urdma_rc_pattern(a->buf, 64, 11);
	sge = urdma_rc_sge(a, 0, 64);
	wr.wr_id = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, &wr, &bad_wr), 0);

	/* rnr_retry 7 retries forever: nothing completes meanwhile. */
	urdma_rc_expect_empty(test, a->scq, 50, "A's send CQ (RNR)");
	for (i = 0; i < fx->udev->num_engines; i++)
		rnr += READ_ONCE(fx->udev->engines[i].cnt[URDMA_CNT_RNR_WAITS]);
	KUNIT_EXPECT_GT(test, rnr, 0);

	rsge = urdma_rc_sge(b, 0, 64);
	rwr.wr_id = 9;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_recv(b->qp, &rwr, &bad_rwr), 0);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(b->rcq, &wc, 1), 1);
	urdma_rc_expect_wc(test, &wc, 9, IB_WC_RECV, b->qp);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 64);
	URDMA_RC_EXPECT_SAME(test, b->buf, a->buf, 64);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, &wc, 1), 1);
	urdma_rc_expect_wc(test, &wc, 1, IB_WC_SEND, a->qp);
}

/* A remote access with an rkey the responder does not grant. */
enum urdma_rc_bad_key {
	URDMA_RC_KEY_UNKNOWN,	/* no MR has this index */
	URDMA_RC_KEY_STALE,	/* the right index, another variant */
	URDMA_RC_KEY_OTHER_PD,	/* a valid rkey of the requester's PD */
};

struct urdma_rc_err_case {
	const char *name;
	enum ib_wr_opcode opcode;
	enum urdma_rc_bad_key key;
};

static const struct urdma_rc_err_case urdma_rc_err_cases[] = {
	{ "write_unknown_rkey", IB_WR_RDMA_WRITE, URDMA_RC_KEY_UNKNOWN },
	{ "write_stale_rkey", IB_WR_RDMA_WRITE, URDMA_RC_KEY_STALE },
	{ "write_other_pd_rkey", IB_WR_RDMA_WRITE, URDMA_RC_KEY_OTHER_PD },
	{ "read_unknown_rkey", IB_WR_RDMA_READ, URDMA_RC_KEY_UNKNOWN },
	{ "read_other_pd_rkey", IB_WR_RDMA_READ, URDMA_RC_KEY_OTHER_PD },
};

static void urdma_rc_err_case_desc(const struct urdma_rc_err_case *c,
				   char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(urdma_rc_err, urdma_rc_err_cases, urdma_rc_err_case_desc);

/*
 * IBTA 9.7.5.2.3, 10.8.3: the requester completes the WR with
 * REM_ACCESS_ERR and goes to ERROR; the responder (class C error) goes to
 * ERROR too.  Every WR queued behind, or posted after, is flushed on both.
 * No data moved.
 */
static void urdma_test_rc_bad_rkey(struct kunit *test)
{
	const struct urdma_rc_err_case *c = test->param_value;
	struct urdma_rc_pair *p = urdma_rc_pair_create(test);
	struct urdma_rc_side *a = &p->s[0], *b = &p->s[1];
	struct ib_sge *sge = p->sge, *rsge = &p->rsge[0];
	struct ib_rdma_wr *wr = &p->rdma[0];
	struct ib_send_wr *swr = p->send;
	struct ib_recv_wr *rwr = p->recv;
	const struct ib_recv_wr *bad_rwr;
	const struct ib_send_wr *bad_wr;
	struct ib_wc *wc = p->wc;
	int i;

	urdma_rc_pattern(a->buf, PAGE_SIZE, 21);
	urdma_rc_pattern(b->buf, PAGE_SIZE, 23);

	*rsge = urdma_rc_sge(b, 2 * PAGE_SIZE, 128);
	for (i = 0; i < 2; i++) {
		rwr[i].wr_id = 20 + i;
		rwr[i].sg_list = rsge;
		rwr[i].num_sge = 1;
		rwr[i].next = i ? NULL : &rwr[1];
	}
	KUNIT_ASSERT_EQ(test, ib_post_recv(b->qp, rwr, &bad_rwr), 0);

	sge[0] = c->opcode == IB_WR_RDMA_READ ?
		 urdma_rc_sge(a, 2 * PAGE_SIZE, 512) : urdma_rc_sge(a, 0, 512);
	wr->wr.wr_id = 1;
	wr->wr.opcode = c->opcode;
	wr->wr.send_flags = IB_SEND_SIGNALED;
	wr->wr.sg_list = &sge[0];
	wr->wr.num_sge = 1;
	wr->wr.next = &swr[0];
	wr->remote_addr = c->opcode == IB_WR_RDMA_READ ? b->dma :
			 b->dma + 2 * PAGE_SIZE;
	switch (c->key) {
	case URDMA_RC_KEY_UNKNOWN:
		wr->rkey = (u32)URDMA_KEY_MAX_INDEX << URDMA_KEY_VARIANT_BITS;
		break;
	case URDMA_RC_KEY_STALE:
		wr->rkey = b->rkey ^ 1;
		break;
	case URDMA_RC_KEY_OTHER_PD:
		wr->rkey = a->rkey;
		break;
	}
	/* A SEND queued behind it. */
	sge[1] = urdma_rc_sge(a, 0, 32);
	swr[0].wr_id = 2;
	swr[0].opcode = IB_WR_SEND;
	swr[0].send_flags = IB_SEND_SIGNALED;
	swr[0].sg_list = &sge[1];
	swr[0].num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, &wr->wr, &bad_wr), 0);

	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, wc, 2), 2);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 1);
	KUNIT_EXPECT_EQ_MSG(test, wc[0].status, IB_WC_REM_ACCESS_ERR, "%s",
			    ib_wc_status_msg(wc[0].status));
	KUNIT_EXPECT_PTR_EQ(test, wc[0].qp, a->qp);
	KUNIT_EXPECT_EQ(test, wc[1].wr_id, 2);
	KUNIT_EXPECT_EQ_MSG(test, wc[1].status, IB_WC_WR_FLUSH_ERR, "%s",
			    ib_wc_status_msg(wc[1].status));
	KUNIT_EXPECT_PTR_EQ(test, wc[1].qp, a->qp);
	KUNIT_EXPECT_EQ(test, urdma_rc_state(a->qp), IB_QPS_ERR);

	/* The responder is in ERROR; its receives are flushed, in order. */
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(b->rcq, wc, 2), 2);
	for (i = 0; i < 2; i++) {
		KUNIT_EXPECT_EQ(test, wc[i].wr_id, 20 + i);
		KUNIT_EXPECT_EQ_MSG(test, wc[i].status, IB_WC_WR_FLUSH_ERR,
				    "%s", ib_wc_status_msg(wc[i].status));
		KUNIT_EXPECT_PTR_EQ(test, wc[i].qp, b->qp);
	}
	KUNIT_EXPECT_EQ(test, urdma_rc_state(b->qp), IB_QPS_ERR);

	/* Work posted in ERROR is flushed too, on both sides. */
	swr[1] = swr[0];
	swr[1].wr_id = 3;
	KUNIT_ASSERT_EQ(test, ib_post_send(a->qp, &swr[1], &bad_wr), 0);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(a->scq, wc, 1), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 3);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_WR_FLUSH_ERR);
	rwr[2].wr_id = 22;
	rwr[2].sg_list = rsge;
	rwr[2].num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_recv(b->qp, &rwr[2], &bad_rwr), 0);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(b->rcq, wc, 1), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 22);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_WR_FLUSH_ERR);

	/* No data moved, either way; nothing else completed. */
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf + PAGE_SIZE, 3 * PAGE_SIZE);
	URDMA_RC_EXPECT_UNTOUCHED(test, a->buf + PAGE_SIZE, 3 * PAGE_SIZE);
	urdma_rc_expect_empty(test, a->scq, 20, "A's send CQ");
	urdma_rc_expect_empty(test, a->rcq, 0, "A's receive CQ");
	urdma_rc_expect_empty(test, b->scq, 0, "B's send CQ");
	urdma_rc_expect_empty(test, b->rcq, 0, "B's receive CQ");
}

/* ---- RoCEv2 wire formats ------------------------------------------------- */

/* Every known opcode's header length is the BTH plus its extended headers. */
static void urdma_test_opcode_table(struct kunit *test)
{
	unsigned int op, i, known = 0;

	for (op = 0; op < 256; op++) {
		const struct urdma_opcode *o = &urdma_opcodes[op];
		unsigned int len = sizeof(struct urdma_bth);

		if (!o->flags) {
			KUNIT_EXPECT_EQ_MSG(test, o->hdr_len, 0, "op %#x", op);
			continue;
		}
		known++;
		for (i = 0; i < URDMA_H_NUM; i++)
			if (o->flags & BIT(i))
				len += urdma_hdr_lens[i];
		KUNIT_EXPECT_EQ_MSG(test, o->hdr_len, len, "%s", o->name);
		/*
		 * A packet goes one way (but a CNP, which goes either way), and
		 * is a first, middle or last.
		 */
		KUNIT_EXPECT_NE_MSG(test, !(o->flags & URDMA_PF_REQ),
				    !(o->flags & (URDMA_PF_RESP | URDMA_PF_CNP)),
				    "%s", o->name);
		KUNIT_EXPECT_TRUE_MSG(test, o->flags & (URDMA_PF_FIRST |
							URDMA_PF_MIDDLE |
							URDMA_PF_LAST),
				      "%s", o->name);
	}
	/*
	 * RC 25 (ATOMIC_WRITE and FLUSH among them), UC 12, UD 2, CNP, and
	 * XRC 25: RC's, its requests with an XRCETH, its responses without.
	 */
	KUNIT_EXPECT_EQ(test, known, 65);
	for (op = 0; op < 32; op++) {
		u32 rc = urdma_opcodes[URDMA_TR_RC | op].flags;
		u32 xrc = urdma_opcodes[URDMA_TR_XRC | op].flags;

		KUNIT_EXPECT_EQ_MSG(test, xrc, (rc & URDMA_PF_REQ) ?
				    rc | URDMA_PF_XRCETH : rc, "XRC op %#x", op);
	}
	/* The XRCETH comes right after the BTH, before the RETH. */
	KUNIT_EXPECT_EQ(test, urdma_hdr_off(URDMA_TR_XRC | URDMA_OP_WRITE_ONLY_IMM,
					    URDMA_H_XRCETH), 12);
	KUNIT_EXPECT_EQ(test, urdma_hdr_off(URDMA_TR_XRC | URDMA_OP_WRITE_ONLY_IMM,
					    URDMA_H_IMM), 12 + 4 + 16);
	KUNIT_EXPECT_EQ(test, urdma_hdr_off(URDMA_TR_XRC | URDMA_OP_ACK,
					    URDMA_H_AETH), 12);
	/* The CNP: a BTH and 16 reserved bytes, and nothing else. */
	KUNIT_EXPECT_EQ(test, urdma_opcodes[0x81].flags,
			URDMA_PF_CNP | URDMA_PF_PAYLOAD | URDMA_PF_FIRST |
			URDMA_PF_LAST);
	KUNIT_EXPECT_EQ(test, urdma_opcodes[0x81].hdr_len, 12);
	/* IBTA order: RETH before ImmDt; DETH first for UD. */
	KUNIT_EXPECT_EQ(test, urdma_hdr_off(URDMA_TR_RC | URDMA_OP_WRITE_ONLY_IMM,
					    URDMA_H_IMM), 12 + 16);
	KUNIT_EXPECT_EQ(test, urdma_hdr_off(URDMA_TR_UD | URDMA_OP_SEND_ONLY_IMM,
					    URDMA_H_IMM), 12 + 8);
	KUNIT_EXPECT_EQ(test, urdma_hdr_off(URDMA_TR_RC | URDMA_OP_ATOMIC_ACK,
					    URDMA_H_ATMACK), 12 + 4);
}

/*
 * urdma_wqe_ops[] against the verbs and the IBTA: each WQE opcode's
 * completion opcode (ib_uverbs_wc_opcode), the QP types that may post it
 * (IBTA 9.4 / 10.8.4: UD only SENDs, UC no READ or atomics), and the
 * wire opcodes it is sent as, which must be requests of roce.c's table in
 * the right position with the headers its flags promise.
 */
static const struct {
	u8 op, wc;
	bool uc, ud;
} urdma_wqe_ibta[URDMA_WQE_NUM_OPCODES] = {
	{ URDMA_WQE_RDMA_WRITE, IB_UVERBS_WC_RDMA_WRITE, true, false },
	{ URDMA_WQE_RDMA_WRITE_IMM, IB_UVERBS_WC_RDMA_WRITE, true, false },
	{ URDMA_WQE_SEND, IB_UVERBS_WC_SEND, true, true },
	{ URDMA_WQE_SEND_IMM, IB_UVERBS_WC_SEND, true, true },
	{ URDMA_WQE_RDMA_READ, IB_UVERBS_WC_RDMA_READ, false, false },
	{ URDMA_WQE_ATOMIC_CMP_SWP, IB_UVERBS_WC_COMP_SWAP, false, false },
	{ URDMA_WQE_ATOMIC_FETCH_ADD, IB_UVERBS_WC_FETCH_ADD, false, false },
	{ URDMA_WQE_LOCAL_INV, IB_UVERBS_WC_LOCAL_INV, true, false },
	{ URDMA_WQE_BIND_MW, IB_UVERBS_WC_BIND_MW, true, false },
	{ URDMA_WQE_SEND_INV, IB_UVERBS_WC_SEND, false, false },
	{ URDMA_WQE_ATOMIC_WRITE, IB_UVERBS_WC_ATOMIC_WRITE, false, false },
	{ URDMA_WQE_FLUSH, IB_UVERBS_WC_FLUSH, false, false },
	{ URDMA_WQE_REG_MR, URDMA_CQE_REG_MR, true, false },
};

/* The packet flags wire position @pos must have, for request @o. */
static u32 urdma_wop_pos_flags(const struct urdma_wqe_op *o, int pos)
{
	static const u32 pf[] = {
		[URDMA_WIRE_ONLY] = URDMA_PF_FIRST | URDMA_PF_LAST,
		[URDMA_WIRE_FIRST] = URDMA_PF_FIRST,
		[URDMA_WIRE_MIDDLE] = URDMA_PF_MIDDLE,
		[URDMA_WIRE_LAST] = URDMA_PF_LAST,
	};
	u32 f = URDMA_PF_REQ | pf[pos];
	bool ends = pos == URDMA_WIRE_ONLY || pos == URDMA_WIRE_LAST;

	if (ends && (o->flags & URDMA_WOP_IMM))
		f |= URDMA_PF_IMM;
	if (ends && (o->flags & URDMA_WOP_INV))
		f |= URDMA_PF_IETH;
	/* Every packet of a SEND is one; a WRITE's only with its immediate. */
	if ((o->flags & URDMA_WOP_RECV) && (ends || !o->remote_access))
		f |= URDMA_PF_SEND;
	if (o->flags & URDMA_WOP_ATOMIC)
		f |= URDMA_PF_ATMETH;
	else if (o->flags & URDMA_WOP_RES ||
		 (o->remote_access && pos <= URDMA_WIRE_FIRST))
		f |= URDMA_PF_RETH;
	return f;
}

static void urdma_test_wqe_ops(struct kunit *test)
{
	u32 mask = URDMA_PF_REQ | URDMA_PF_FIRST | URDMA_PF_MIDDLE |
		   URDMA_PF_LAST | URDMA_PF_IMM | URDMA_PF_IETH |
		   URDMA_PF_SEND | URDMA_PF_ATMETH | URDMA_PF_RETH;
	DECLARE_BITMAP(only, 32) = {};
	const struct urdma_opcode *uc;
	unsigned int op;
	int pos;

	for (op = 0; op < URDMA_WQE_NUM_OPCODES; op++) {
		const struct urdma_wqe_op *o = urdma_wqe_op(op);
		u8 w = o->wire[URDMA_WIRE_ONLY];

		KUNIT_EXPECT_EQ_MSG(test, o->opcode, op, "table order");
		KUNIT_EXPECT_EQ_MSG(test, urdma_wqe_ibta[op].op, op, "test order");
		KUNIT_EXPECT_EQ_MSG(test, o->cqe_opcode, urdma_wqe_ibta[op].wc,
				    "op %u", op);
		KUNIT_EXPECT_TRUE(test, urdma_wqe_op_allowed(op, IB_QPT_RC));
		KUNIT_EXPECT_EQ_MSG(test, urdma_wqe_op_allowed(op, IB_QPT_UC),
				    urdma_wqe_ibta[op].uc, "op %u", op);
		KUNIT_EXPECT_EQ_MSG(test, urdma_wqe_op_allowed(op, IB_QPT_UD),
				    urdma_wqe_ibta[op].ud, "op %u", op);
		KUNIT_EXPECT_EQ(test, urdma_wqe_op_allowed(op, IB_QPT_GSI),
				urdma_wqe_ibta[op].ud);
		/* Its SGEs take the answer of a READ or an atomic. */
		KUNIT_EXPECT_EQ_MSG(test, o->local_access,
				    o->flags & URDMA_WOP_RD ?
				    IB_ACCESS_LOCAL_WRITE : 0, "op %u", op);
		if (o->flags & URDMA_WOP_LOCAL) {
			KUNIT_EXPECT_EQ(test, w, URDMA_WIRE_NONE);
			KUNIT_EXPECT_EQ(test, o->remote_access, 0);
			continue;
		}
		/* No two operations are sent as the same request. */
		KUNIT_ASSERT_LT(test, w, 32);
		KUNIT_EXPECT_FALSE_MSG(test, __test_and_set_bit(w, only),
				       "wire %#x twice", w);
		for (pos = URDMA_WIRE_ONLY; pos <= URDMA_WIRE_LAST; pos++) {
			const struct urdma_opcode *rc;

			w = o->wire[pos];
			if (w == URDMA_WIRE_NONE) {
				/* A request of one packet is a SEND or WRITE. */
				KUNIT_EXPECT_FALSE(test, o->flags &
						   URDMA_WOP_INLINE);
				continue;
			}
			rc = &urdma_opcodes[URDMA_TR_RC | w];
			KUNIT_EXPECT_EQ_MSG(test, rc->flags & mask,
					    urdma_wop_pos_flags(o, pos),
					    "op %u at %d: %s", op, pos, rc->name);
		}
		/* The other transports have the opcode if they allow it. */
		w = o->wire[URDMA_WIRE_ONLY];
		uc = &urdma_opcodes[URDMA_TR_UC | w];
		KUNIT_EXPECT_EQ_MSG(test, !!uc->flags, urdma_wqe_ibta[op].uc,
				    "op %u", op);
		KUNIT_EXPECT_EQ_MSG(test, !!urdma_opcodes[URDMA_TR_UD | w].flags,
				    urdma_wqe_ibta[op].ud, "op %u", op);
	}
	/* What is out of range is nobody's. */
	KUNIT_EXPECT_FALSE(test, urdma_wqe_op_allowed(URDMA_WQE_NUM_OPCODES,
						      IB_QPT_RC));
	KUNIT_EXPECT_FALSE(test, urdma_wqe_op_allowed(URDMA_WQE_SEND, 200));
}

static void urdma_test_psn_math(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, urdma_psn_add(0xffffff, 1), 0);
	KUNIT_EXPECT_EQ(test, urdma_psn_add(0xfffffe, 5), 3);
	KUNIT_EXPECT_EQ(test, urdma_psn_diff(2, 0xfffffe), 4);
	KUNIT_EXPECT_EQ(test, urdma_psn_diff(0xfffffe, 2), -4);
	KUNIT_EXPECT_EQ(test, urdma_psn_diff(5, 5), 0);
	KUNIT_EXPECT_EQ(test, urdma_psn_diff(0x7fffff, 0), 0x7fffff);
}

/*
 * Which PSNs an ACK or a NAK may name: sent and not yet acknowledged, with
 * the 24-bit wrap.  Stale, duplicate, future and far-off PSNs (a forger's
 * guesses) change nothing.
 */
struct urdma_psn_case {
	const char *name;
	u32 acked, psn_max, psn;
	bool outstanding;
};

static const struct urdma_psn_case urdma_psn_cases[] = {
	{ "first_outstanding", 99, 200, 100, true },
	{ "last_outstanding", 99, 200, 199, true },
	{ "already_acked", 99, 200, 99, false },
	{ "long_ago", 99, 200, 5, false },
	{ "not_sent_yet", 99, 200, 200, false },
	{ "far_future", 99, 200, 0x400000, false },
	{ "half_the_space_behind", 0x500000, 0x500010, 0x100001, false },
	{ "nothing_outstanding", 199, 200, 200, false },
	{ "across_the_wrap", 0xfffff0, 0x10, 0x5, true },
	{ "across_the_wrap_top", 0xfffff0, 0x10, 0xfffff8, true },
	{ "across_the_wrap_acked", 0xfffff0, 0x10, 0xffffe0, false },
	{ "across_the_wrap_unsent", 0xfffff0, 0x10, 0x10, false },
};

static void urdma_psn_case_desc(const struct urdma_psn_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(urdma_psn, urdma_psn_cases, urdma_psn_case_desc);

static void urdma_test_psn_outstanding(struct kunit *test)
{
	const struct urdma_psn_case *c = test->param_value;
	struct urdma_wire w = {
		.comp.acked = c->acked,
		.req.psn_max = c->psn_max,
	};

	KUNIT_EXPECT_EQ(test, urdma_req_psn_outstanding(&w, c->psn),
			c->outstanding);
}

/* ---- the RC requester's go-back and the responder's sequence check ------- */

/*
 * A QP with wire state and four WQEs in flight from SQ index 0:
 *   0  WRITE       PSNs 100-103 (4096 bytes at MTU 1024)
 *   1  LOCAL_INV   done, no PSN
 *   2  READ        PSNs 104-106 (3 responses), @read_got of them placed
 *   3  SEND        PSN  107
 * (@base moves all PSNs, to try the wrap.)
 */
static struct urdma_qp *urdma_test_inflight_qp(struct kunit *test, u32 base,
					       u32 read_got)
{
	static const struct {
		u8 opcode;
		u32 psn, npsn;
		bool done;
	} q[] = {
		{ URDMA_WQE_RDMA_WRITE, 0, 4, false },
		{ URDMA_WQE_LOCAL_INV, 4, 0, true },
		{ URDMA_WQE_RDMA_READ, 4, 3, false },
		{ URDMA_WQE_SEND, 7, 1, false },
	};
	struct urdma_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);
	struct urdma_wire *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, qp);
	KUNIT_ASSERT_NOT_NULL(test, w);
	w->req.slot_size = ALIGN(sizeof(struct urdma_inflight) +
				 sizeof(struct urdma_send_wqe), 8);
	w->req.slots = kunit_kcalloc(test, URDMA_WIRE_WINDOW,
				     w->req.slot_size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, w->req.slots);
	for (i = 0; i < ARRAY_SIZE(q); i++) {
		struct urdma_inflight *f = (void *)(w->req.slots +
						    i * w->req.slot_size);

		((struct urdma_send_wqe *)f->wqe)->opcode = q[i].opcode;
		f->first_psn = urdma_psn_add(base, q[i].psn);
		f->npsn = q[i].npsn;
		f->mtu = 1024;
		f->len = q[i].npsn * 1024;
		f->done = q[i].done;
		if (q[i].opcode == URDMA_WQE_RDMA_READ)
			f->got = read_got;
	}
	qp->wire = w;
	qp->sq_cons = 0;
	w->req.next = ARRAY_SIZE(q);
	w->req.cur = w->req.next;
	w->req.psn = urdma_psn_add(base, 8);
	w->req.psn_max = w->req.psn;
	w->req.since_ackreq = 3;
	return qp;
}

struct urdma_rewind_case {
	const char *name;
	u32 base, psn;
	bool moves;
	u32 cur, off, read_got;
};

static const struct urdma_rewind_case urdma_rewind_cases[] = {
	{ "write_first_packet", 100, 100, true, 0, 0, 0 },
	{ "write_third_packet", 100, 102, true, 0, 2048, 0 },
	{ "read_second_response", 100, 105, true, 2, 1024, 1 },
	{ "send", 100, 107, true, 3, 0, 0 },
	{ "before_everything", 100, 99, false },
	{ "not_sent_yet", 100, 108, false },
	{ "write_across_the_wrap", 0xfffffe, 0x000001, true, 0, 3072, 0 },
	{ "read_across_the_wrap", 0xfffffd, 0x000002, true, 2, 1024, 1 },
};

static void urdma_rewind_case_desc(const struct urdma_rewind_case *c,
				   char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(urdma_rewind, urdma_rewind_cases, urdma_rewind_case_desc);

/*
 * A go-back to a PSN resends the WQE that holds it from that packet (a
 * READ asks again from that response on); a PSN no WQE holds moves
 * nothing.
 */
static void urdma_test_rewind(struct kunit *test)
{
	const struct urdma_rewind_case *c = test->param_value;
	struct urdma_qp *qp = urdma_test_inflight_qp(test, c->base, 0);
	struct urdma_wire *w = qp->wire;
	struct urdma_inflight *read = (void *)(w->req.slots + 2 * w->req.slot_size);
	u32 psn0 = w->req.psn;

	urdma_req_rewind(qp, c->psn);
	if (!c->moves) {
		KUNIT_EXPECT_EQ(test, w->req.cur, 4);
		KUNIT_EXPECT_EQ(test, w->req.psn, psn0);
		KUNIT_EXPECT_EQ(test, w->req.since_ackreq, 3);
		return;
	}
	KUNIT_EXPECT_EQ(test, w->req.cur, c->cur);
	KUNIT_EXPECT_EQ(test, w->req.off, c->off);
	KUNIT_EXPECT_EQ(test, w->req.psn, c->psn);
	KUNIT_EXPECT_EQ(test, w->req.since_ackreq, 0);
	KUNIT_EXPECT_EQ(test, read->got, c->read_got);
}

/*
 * Where a retransmission resumes after a timeout: the first PSN that is
 * neither acknowledged nor (for a READ) answered.
 */
static void urdma_test_resume_psn(struct kunit *test)
{
	struct urdma_qp *qp = urdma_test_inflight_qp(test, 100, 0);
	struct urdma_wire *w = qp->wire;
	struct urdma_inflight *read = (void *)(w->req.slots + 2 * w->req.slot_size);

	w->comp.acked = 99;			/* nothing acknowledged */
	KUNIT_EXPECT_EQ(test, urdma_req_resume_psn(qp), 100);
	w->comp.acked = 101;			/* the WRITE's first two packets */
	KUNIT_EXPECT_EQ(test, urdma_req_resume_psn(qp), 102);
	w->comp.acked = 103;			/* the WRITE; the READ unanswered */
	KUNIT_EXPECT_EQ(test, urdma_req_resume_psn(qp), 104);
	read->got = 2;			/* two of its responses placed */
	KUNIT_EXPECT_EQ(test, urdma_req_resume_psn(qp), 106);
	read->done = true;		/* the READ complete: the SEND */
	KUNIT_EXPECT_EQ(test, urdma_req_resume_psn(qp), 107);
	w->comp.acked = 107;			/* everything */
	KUNIT_EXPECT_EQ(test, urdma_req_resume_psn(qp), 108);

	qp = urdma_test_inflight_qp(test, 0xfffffc, 0);
	qp->wire->comp.acked = 0xfffffd;	/* across the wrap */
	KUNIT_EXPECT_EQ(test, urdma_req_resume_psn(qp), 0xfffffe);
}

/*
 * The request packets the congestion window counts: from the last PSN
 * known to have arrived (the last ACK, or a READ's last response received
 * in order), a READ's request as one packet, its responses' PSNs not at
 * all.  (Counted from the ACK, a READ longer than the window that missed a
 * late response could never be asked again, and failed RETRY_EXC_ERR.)
 */
static void urdma_test_in_flight(struct kunit *test)
{
	const u32 b = 0xfffffe;	/* across the PSN wrap */
	struct urdma_qp *qp = urdma_test_inflight_qp(test, b, 0);
	struct urdma_wire *w = qp->wire;
	struct urdma_inflight *read = (void *)(w->req.slots + 2 * w->req.slot_size);

	/* The WRITE acknowledged: the READ's request, the SEND, the next. */
	w->comp.acked = urdma_psn_add(b, 3);
	KUNIT_EXPECT_EQ(test, urdma_req_in_flight(qp, urdma_psn_add(b, 8)), 3);
	/* The READ's first two responses came; the third is asked again. */
	urdma_req_rewind(qp, urdma_psn_add(b, 6));
	KUNIT_ASSERT_EQ(test, read->got, 2);
	KUNIT_EXPECT_EQ(test, urdma_req_in_flight(qp, urdma_psn_add(b, 6)), 1);
	/* Responses streaming in: counted from the last one received. */
	read->got = 1;
	w->comp.acked = urdma_psn_add(b, 4);	/* its FIRST's AETH */
	KUNIT_EXPECT_EQ(test, urdma_req_in_flight(qp, urdma_psn_add(b, 8)), 3);
	/* Nothing acknowledged: a WRITE's packets count one each. */
	read->got = 0;
	w->comp.acked = urdma_psn_add(b, URDMA_PSN_MASK);
	KUNIT_EXPECT_EQ(test, urdma_req_in_flight(qp, urdma_psn_add(b, 1)), 2);
	KUNIT_EXPECT_EQ(test, urdma_req_in_flight(qp, urdma_psn_add(b, 8)), 7);
	/* A PSN already acknowledged is not in flight. */
	w->comp.acked = urdma_psn_add(b, 7);
	KUNIT_EXPECT_EQ(test, urdma_req_in_flight(qp, urdma_psn_add(b, 5)), 0);
}

/* ---- congestion control (wire_cc.c) ---------------------------------- */

#define URDMA_US(n)	((u64)(n) * NSEC_PER_USEC)
#define URDMA_MS(n)	((u64)(n) * NSEC_PER_MSEC)

/* RFC 6298: the estimator, its floor, the backoff and the ceiling. */
static void urdma_test_cc_rto(struct kunit *test)
{
	const u64 ceil = URDMA_MS(67);
	struct urdma_cc cc;
	int i;

	urdma_cc_init(&cc);
	KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil), ceil);	/* no sample */

	urdma_cc_rtt(&cc, URDMA_US(1000));	/* 2.2: SRTT R, RTTVAR R/2 */
	KUNIT_EXPECT_EQ(test, cc.srtt, URDMA_US(1000));
	KUNIT_EXPECT_EQ(test, cc.rttvar, URDMA_US(500));
	KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil), URDMA_US(3000));

	urdma_cc_rtt(&cc, URDMA_US(2000));	/* 2.3: beta 1/4, alpha 1/8 */
	KUNIT_EXPECT_EQ(test, cc.rttvar, URDMA_US(625));
	KUNIT_EXPECT_EQ(test, cc.srtt, URDMA_US(1125));
	KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil), URDMA_US(3625));

	/* A steady 100 us path: the floor, not SRTT + G. */
	for (i = 0; i < 200; i++)
		urdma_cc_rtt(&cc, URDMA_US(100));
	KUNIT_EXPECT_LT(test, cc.srtt, URDMA_US(110));
	KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil), URDMA_RTO_FLOOR_NS);
	/* The ceiling wins over an estimate above it. */
	KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, URDMA_MS(1)), URDMA_MS(1));

	/* Timeouts double it: 2, 4, 8, 16, 32, 64 ms, then the ceiling. */
	for (i = 0; i < 6; i++) {
		KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil),
				URDMA_RTO_FLOOR_NS << i);
		urdma_cc_timeout(&cc, 100);
	}
	KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil), ceil);
	for (i = 0; i < 40; i++) {	/* no overflow, however many */
		urdma_cc_timeout(&cc, 100);
		KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil), ceil);
	}
	/* New data acknowledged ends the backoff. */
	urdma_cc_acked(&cc, 101, 1);
	KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil), URDMA_RTO_FLOOR_NS);

	/* Before any sample, and after a timeout then, the ceiling. */
	urdma_cc_init(&cc);
	urdma_cc_timeout(&cc, 100);
	KUNIT_EXPECT_EQ(test, urdma_cc_rto(&cc, ceil), ceil);
	/* A zero sample cannot stand for "no sample". */
	urdma_cc_rtt(&cc, 0);
	KUNIT_EXPECT_NE(test, cc.srtt, 0);
}

/*
 * Slow start, additive increase by URDMA_CC_AI, one cut per loss episode:
 * 1/8 for a sequence NAK, 1/2 for a local drop, to the minimum for a
 * timeout.
 */
static void urdma_test_cc_window(struct kunit *test)
{
	struct urdma_cc cc;
	u32 acked = 0xfffff0, i;	/* across the PSN wrap */

#define URDMA_ACK(n) do {						\
		acked = (acked + (n)) & URDMA_PSN_MASK;			\
		urdma_cc_acked(&cc, acked, (n));			\
	} while (0)

	urdma_cc_init(&cc);
	KUNIT_EXPECT_EQ(test, cc.cwnd, URDMA_CC_CWND_INIT);
	/* Slow start: one more per PSN acknowledged, up to the window. */
	URDMA_ACK(16);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 32);
	for (i = 0; i < 10; i++)
		URDMA_ACK(32);
	KUNIT_EXPECT_EQ(test, cc.cwnd, URDMA_WIRE_PKTS);

	/* A sequence NAK: 1/8 off, once for the PSNs already sent. */
	KUNIT_EXPECT_TRUE(test, urdma_cc_loss(&cc, (acked + 128) & URDMA_PSN_MASK));
	KUNIT_EXPECT_EQ(test, cc.cwnd, 112);
	KUNIT_EXPECT_EQ(test, cc.ssthresh, 112);
	KUNIT_EXPECT_FALSE(test, urdma_cc_loss(&cc, (acked + 128) & URDMA_PSN_MASK));
	KUNIT_EXPECT_FALSE(test, urdma_cc_congestion(&cc, (acked + 128) & URDMA_PSN_MASK));
	KUNIT_EXPECT_EQ(test, cc.cwnd, 112);
	/* Additive increase: URDMA_CC_AI per window acknowledged. */
	URDMA_ACK(112 / URDMA_CC_AI);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 113);
	/* An ACK past the episode's end: the next signal cuts again. */
	URDMA_ACK(100);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 116);
	KUNIT_EXPECT_TRUE(test, urdma_cc_congestion(&cc, (acked + 116) & URDMA_PSN_MASK));
	KUNIT_EXPECT_EQ(test, cc.cwnd, 58);
	KUNIT_EXPECT_EQ(test, cc.ssthresh, 58);

	/* A timeout in the same episode: the threshold stays, window 2. */
	urdma_cc_timeout(&cc, (acked + 116) & URDMA_PSN_MASK);
	KUNIT_EXPECT_EQ(test, cc.cwnd, URDMA_CC_CWND_MIN);
	KUNIT_EXPECT_EQ(test, cc.ssthresh, 58);
	KUNIT_EXPECT_FALSE(test, cc.timing);
	URDMA_ACK(2);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 4);
	URDMA_ACK(60);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 58);	/* slow start stops there */
	/* Past the episode: 800 toward increases, 58 + 59 + ... + 69. */
	URDMA_ACK(200);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 70);
	/* A timeout of a new episode halves the threshold. */
	urdma_cc_timeout(&cc, (acked + 70) & URDMA_PSN_MASK);
	KUNIT_EXPECT_EQ(test, cc.ssthresh, 35);
	KUNIT_EXPECT_EQ(test, cc.cwnd, URDMA_CC_CWND_MIN);

	/*
	 * ACKs of the most PSNs that can be outstanding (a long READ's):
	 * slow start stops at the threshold, additive increase at 128.
	 */
	URDMA_ACK((1 << 23) - 1);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 35);
	URDMA_ACK((1 << 23) - 1);
	KUNIT_EXPECT_EQ(test, cc.cwnd, URDMA_WIRE_PKTS);
	urdma_cc_timeout(&cc, acked);
	KUNIT_EXPECT_EQ(test, cc.ssthresh, URDMA_WIRE_PKTS / 2);

	/* The window never drops below its minimum. */
	for (i = 0; i < 20; i++) {
		/* Each a new episode; one PSN more acknowledged. */
		acked = (acked + 200) & URDMA_PSN_MASK;
		urdma_cc_acked(&cc, acked, 1);
		urdma_cc_congestion(&cc, acked);
		urdma_cc_loss(&cc, acked);
	}
	KUNIT_EXPECT_EQ(test, cc.cwnd, URDMA_CC_CWND_MIN);
	KUNIT_EXPECT_EQ(test, cc.ssthresh, URDMA_CC_CWND_MIN);
#undef URDMA_ACK
}

/*
 * IBTA 9.7.5.2.1: a responder takes FIRST or ONLY only between messages,
 * MIDDLE or LAST only inside a message of the same kind, and a READ or
 * atomic only between messages.  Every RC request opcode, in each of the
 * three states.
 */
static void urdma_test_resp_seq(struct kunit *test)
{
	static const struct {
		u8 op;
		bool idle, in_send, in_write;
	} t[] = {
		{ URDMA_OP_SEND_FIRST,		true,  false, false },
		{ URDMA_OP_SEND_MIDDLE,		false, true,  false },
		{ URDMA_OP_SEND_LAST,		false, true,  false },
		{ URDMA_OP_SEND_LAST_IMM,	false, true,  false },
		{ URDMA_OP_SEND_LAST_INV,	false, true,  false },
		{ URDMA_OP_SEND_ONLY,		true,  false, false },
		{ URDMA_OP_SEND_ONLY_IMM,	true,  false, false },
		{ URDMA_OP_SEND_ONLY_INV,	true,  false, false },
		{ URDMA_OP_WRITE_FIRST,		true,  false, false },
		{ URDMA_OP_WRITE_MIDDLE,	false, false, true },
		{ URDMA_OP_WRITE_LAST,		false, false, true },
		{ URDMA_OP_WRITE_LAST_IMM,	false, false, true },
		{ URDMA_OP_WRITE_ONLY,		true,  false, false },
		{ URDMA_OP_WRITE_ONLY_IMM,	true,  false, false },
		{ URDMA_OP_READ_REQ,		true,  false, false },
		{ URDMA_OP_CMP_SWP,		true,  false, false },
		{ URDMA_OP_FETCH_ADD,		true,  false, false },
		{ URDMA_OP_FLUSH,		true,  false, false },
		{ URDMA_OP_ATOMIC_WRITE,	true,  false, false },
	};
	/* One zeroed urdma_wire per state: too large for three on the stack. */
	struct urdma_wire *w = kunit_kzalloc(test, 3 * sizeof(*w), GFP_KERNEL);
	struct urdma_wire *idle = &w[0], *in_send = &w[1], *in_write = &w[2];
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, w);
	in_send->resp.in_send = true;
	in_write->resp.in_write = true;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct urdma_pkt pkt = {
			.opcode = URDMA_TR_RC | t[i].op,
			.flags = urdma_opcodes[URDMA_TR_RC | t[i].op].flags,
		};

		KUNIT_ASSERT_TRUE_MSG(test, pkt.flags & URDMA_PF_REQ,
				      "opcode 0x%02x", t[i].op);
		KUNIT_EXPECT_EQ_MSG(test, urdma_resp_seq_ok(idle, &pkt),
				    t[i].idle, "opcode 0x%02x between messages",
				    t[i].op);
		KUNIT_EXPECT_EQ_MSG(test, urdma_resp_seq_ok(in_send, &pkt),
				    t[i].in_send, "opcode 0x%02x in a SEND",
				    t[i].op);
		KUNIT_EXPECT_EQ_MSG(test, urdma_resp_seq_ok(in_write, &pkt),
				    t[i].in_write, "opcode 0x%02x in a WRITE",
				    t[i].op);
	}
}

/*
 * The ICRC ignores exactly the fields routers may change: IPv4 TOS, TTL
 * and checksum, the UDP checksum, and BTH resv8a; anything else counts.
 */
static void urdma_test_icrc(struct kunit *test)
{
	u8 pkt[20 + 8 + 12 + 16] = {
		0x45, 0x00, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00,
		0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 10, 0, 0, 2,
		0xc0, 0x00, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00,
		0x04, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
		0x80, 0x00, 0x00, 0x07,
		'u', 'r', 'd', 'm', 'a', ' ', 'o', 'n',
		' ', 't', 'h', 'e', ' ', 'w', 'i', 'r',
	};
	static const unsigned int masked[] = { 1, 8, 10, 11, 26, 27, 32 };
	static const unsigned int counted[] = { 4, 12, 19, 20, 28, 33, 39, 55 };
	__le32 ref = urdma_icrc(pkt, false, 12 + 16);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(masked); i++) {
		pkt[masked[i]] ^= 0x5a;
		KUNIT_EXPECT_EQ_MSG(test, urdma_icrc(pkt, false, 12 + 16), ref,
				    "byte %u is masked", masked[i]);
		pkt[masked[i]] ^= 0x5a;
	}
	for (i = 0; i < ARRAY_SIZE(counted); i++) {
		pkt[counted[i]] ^= 0x01;
		KUNIT_EXPECT_NE_MSG(test, urdma_icrc(pkt, false, 12 + 16), ref,
				    "byte %u is covered", counted[i]);
		pkt[counted[i]] ^= 0x01;
	}
}

/*
 * The local path accepts a request only from the QP the responder is
 * connected to, and QP numbers are reused: A is destroyed, C gets A's
 * number and connects to B, which still points at that number.  B must
 * not take C's SEND (it remembers A by its serial).
 */
static void urdma_test_rc_peer_number_reused(struct kunit *test)
{
	struct urdma_dev_fixture *fx = test->priv;
	struct urdma_rc_pair *p = urdma_rc_pair_create(test);
	struct urdma_rc_side *a = &p->s[0], *b = &p->s[1], *c;
	const struct ib_recv_wr *bad_rwr;
	const struct ib_send_wr *bad_wr;
	const struct ib_gid_attr *gid;
	u32 qpn = a->qp->qp_num;
	int ret;

	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	ib_destroy_qp(a->qp);
	a->qp = NULL;
	xa_lock_irq(&fx->udev->qps);
	fx->udev->next_qpn = qpn;
	xa_unlock_irq(&fx->udev->qps);
	urdma_rc_side_create(test, c);
	KUNIT_ASSERT_EQ(test, c->qp->qp_num, qpn);
	gid = urdma_rc_gid(&fx->udev->ibdev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(gid));
	ret = urdma_rc_connect(c->qp, b->qp->qp_num, gid, 0x100, 0x200);
	rdma_put_gid_attr(gid);
	KUNIT_ASSERT_EQ(test, ret, 0);

	p->rsge[0] = urdma_rc_sge(b, 0, 256);
	p->recv[0].wr_id = 7;
	p->recv[0].sg_list = &p->rsge[0];
	p->recv[0].num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_recv(b->qp, &p->recv[0], &bad_rwr), 0);
	p->sge[0] = urdma_rc_sge(c, 0, 64);
	p->send[0].wr_id = 1;
	p->send[0].opcode = IB_WR_SEND;
	p->send[0].send_flags = IB_SEND_SIGNALED;
	p->send[0].sg_list = &p->sge[0];
	p->send[0].num_sge = 1;
	KUNIT_ASSERT_EQ(test, ib_post_send(c->qp, &p->send[0], &bad_wr), 0);
	KUNIT_ASSERT_EQ(test, urdma_rc_poll(c->scq, p->wc, 1), 1);
	KUNIT_EXPECT_NE(test, p->wc[0].status, IB_WC_SUCCESS);
	urdma_rc_expect_empty(test, b->rcq, 0, "B's receive CQ");
	URDMA_RC_EXPECT_UNTOUCHED(test, b->buf, 256);
}

static struct kunit_case urdma_logic_cases[] = {
	KUNIT_CASE_PARAM(urdma_test_mtu_from_netdev, urdma_mtu_gen_params),
	KUNIT_CASE(urdma_test_port_state),
	KUNIT_CASE(urdma_test_device_attr),
	KUNIT_CASE_PARAM(urdma_test_mtt_build, urdma_mtt_gen_params),
	KUNIT_CASE(urdma_test_keys),
	KUNIT_CASE(urdma_test_access),
	KUNIT_CASE_PARAM(urdma_test_qp_check_attr, urdma_attr_gen_params),
	KUNIT_CASE(urdma_test_ring_geometry),
	KUNIT_CASE(urdma_test_kernel_ring),
	KUNIT_CASE(urdma_test_opcode_table),
	KUNIT_CASE(urdma_test_wqe_ops),
	KUNIT_CASE(urdma_test_psn_math),
	KUNIT_CASE_PARAM(urdma_test_psn_outstanding, urdma_psn_gen_params),
	KUNIT_CASE_PARAM(urdma_test_rewind, urdma_rewind_gen_params),
	KUNIT_CASE(urdma_test_resume_psn),
	KUNIT_CASE(urdma_test_in_flight),
	KUNIT_CASE(urdma_test_cc_rto),
	KUNIT_CASE(urdma_test_cc_window),
	KUNIT_CASE(urdma_test_resp_seq),
	KUNIT_CASE(urdma_test_icrc),
	{}
};

static struct kunit_suite urdma_logic_suite = {
	.name = "urdma_logic",
	.test_cases = urdma_logic_cases,
};

static struct kunit_case urdma_dev_cases[] = {
	KUNIT_CASE(urdma_test_dev_query),
	KUNIT_CASE(urdma_test_dev_pd_numbers),
	KUNIT_CASE(urdma_test_dev_frmr),
	KUNIT_CASE(urdma_test_dev_cq),
	KUNIT_CASE(urdma_test_dev_qp_states),
	KUNIT_CASE(urdma_test_dev_qp_post),
	KUNIT_CASE(urdma_test_dev_qpn),
	KUNIT_CASE(urdma_test_dev_qpn_not_mcast),
	KUNIT_CASE(urdma_test_dev_mcast_destroy_attached),
	KUNIT_CASE(urdma_test_dev_registry),
	KUNIT_CASE(urdma_test_rc_write),
	KUNIT_CASE(urdma_test_rc_frmr_iova),
	KUNIT_CASE(urdma_test_rc_write_imm_big),
	KUNIT_CASE(urdma_test_rc_read),
	KUNIT_CASE(urdma_test_rc_send),
	KUNIT_CASE(urdma_test_rc_rnr),
	KUNIT_CASE(urdma_test_rc_peer_number_reused),
	KUNIT_CASE_PARAM(urdma_test_rc_bad_rkey, urdma_rc_err_gen_params),
	{}
};

static struct kunit_suite urdma_dev_suite = {
	.name = "urdma_device",
	.init = urdma_dev_test_init,
	.test_cases = urdma_dev_cases,
};

kunit_test_suites(&urdma_logic_suite, &urdma_dev_suite);

MODULE_DESCRIPTION("KUnit tests for urdma");
MODULE_LICENSE("Dual BSD/GPL");
URDMA_IMPORT_KUNIT_NS();
