// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit suites for urdma.  Built as urdma_kunit.ko for kernels with
 * CONFIG_KUNIT; the symbols under test are exported from urdma.ko with
 * EXPORT_SYMBOL_IF_KUNIT.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <net/net_namespace.h>

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
	/* Not claimed until implemented. */
	KUNIT_EXPECT_EQ(test, attr.atomic_cap, IB_ATOMIC_NONE);
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
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ACCESS_ON_DEMAND),
			-EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, urdma_check_access(IB_ZERO_BASED),
			-EOPNOTSUPP);
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
	AC(IB_QP_ACCESS_FLAGS, qp_access_flags, IB_ACCESS_ON_DEMAND, -EINVAL),
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
