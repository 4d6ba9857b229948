// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Data-path conformance, integrity: RDMA WRITE, RDMA READ and SEND of
// random sizes at random offsets with random contents, gathered from and
// scattered over several SGEs, crossing page and 2 MiB boundaries, over
// 8 MiB buffers that are 2 MiB-aligned (and, when the system has them,
// on hugetlbfs pages).  Every transfer is checked against shadow copies,
// and the whole buffers at the end.  The seed is printed; URDMA_SEED
// replays a run.
#include "datapath.hpp"
#include "mapping.hpp"
#include "traffic.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

constexpr size_t kBufLen = 8u << 20;

class DataIntegrity : public DataTest,
		      public ::testing::WithParamInterface<Api> {
protected:
	// The boundary cases every run starts with, then @random_ops
	// random transfers.
	void run(uint8_t *local, uint8_t *remote, int random_ops);
};

// Transfers that straddle boundaries on purpose.
std::vector<Xfer> boundary_cases()
{
	std::vector<Xfer> v;
	const ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ };
	for (ibv_wr_opcode op : ops) {
		// 1 and 2 bytes at the last byte before 2 MiB.
		v.push_back({ op, kHuge - 1, { { kPage - 1, 1 } }, {} });
		v.push_back({ op, kHuge - 1, { { kPage - 1, 2 } }, {} });
		// A page-sized one across 2 MiB, from across a page.
		v.push_back({ op, kHuge - 2048, { { 3 * kPage - 100, 4096 } },
			      {} });
		// 2 MiB + 2: across the 2 MiB and the 4 MiB boundary.
		v.push_back({ op, kHuge - 1,
			      { { kPage - 1, uint32_t(kHuge + 2) } }, {} });
		// Three SGEs, each across a page boundary, the remote range
		// across 6 MiB.
		v.push_back({ op, 3 * kHuge - 5000,
			      { { kPage - 10, 20 },
				{ 2 * kHuge + 5 * kPage - 3000, 8000 },
				{ 3 * kHuge + 7, 3 * kPage } },
			      {} });
	}
	// SENDs: three page-crossing pieces into three receive SGEs that
	// each cross a 2 MiB boundary, and 1 MiB + 1 into two SGEs.
	v.push_back({ IBV_WR_SEND, 0,
		      { { kPage - 5, 10 }, { kHuge + kPage - 1, 5000 },
			{ 3 * kHuge - 7, 2 * kPage } },
		      { { kHuge - 5, 8 },
			{ 2 * kHuge - 6000, 10000 },
			{ 3 * kHuge - 1, 10 + 5000 + 2 * kPage - 10008 } } });
	v.push_back({ IBV_WR_SEND, 0, { { kHuge - 4096, (1u << 20) + 1 } },
		      { { kHuge - 1, 1u << 19 },
			{ 3 * kHuge - 100, (1u << 19) + 1 } } });
	return v;
}

void DataIntegrity::run(uint8_t *local, uint8_t *remote, int random_ops)
{
	const uint64_t seed = test_seed();
	announce_seed(seed);
	std::mt19937_64 rng(seed);

	Mr lmr(ibv_reg_mr(pd_.get(), local, kBufLen, kRemoteAccess));
	Mr rmr(ibv_reg_mr(pd_.get(), remote, kBufLen, kRemoteAccess));
	ASSERT_TRUE(lmr && rmr) << "reg_mr of 8 MiB: " << strerror(errno);
	QpPairOptions o;
	o.api = GetParam();
	const uint32_t sge = std::min(4, path_.dev.max_sge);
	o.cap = qp_cap(16, 16, sge, sge);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Traffic t(p, local, lmr->lkey, remote, rmr->lkey, rmr->rkey, kBufLen);
	t.init(rng);

	uint64_t id = 0;
	for (const Xfer &x : boundary_cases()) {
		if (x.lpieces.size() > sge || x.rpieces.size() > sge)
			continue;
		ASSERT_TRUE(t.run(x, ++id, rng));
	}
	for (int i = 0; i < random_ops; i++) {
		Xfer x = t.random_xfer(rng, 1u << 20, sge);
		ASSERT_TRUE(t.run(x, ++id, rng)) << "random transfer " << i;
	}
	EXPECT_TRUE(t.verify_all());
	expect_state(p.a(), IBV_QPS_RTS, "a");
	expect_state(p.b(), IBV_QPS_RTS, "b");
}

int random_ops() { return on_debug_kernel() ? 60 : 250; }

// Heap buffers aligned to 2 MiB (transparent huge pages, if any).
TEST_P(DataIntegrity, RandomTransfersOn2MiBAlignedMemory)
{
	Buffer local(kBufLen, kHuge), remote(kBufLen, kHuge);
	ASSERT_TRUE(local && remote);
	run(local.data(), remote.data(), random_ops());
}

// hugetlbfs pages (MAP_HUGETLB): few, large translation entries.
TEST_P(DataIntegrity, RandomTransfersOnHugetlbPages)
{
	Mapping local(kBufLen, PROT_READ | PROT_WRITE, MAP_HUGETLB);
	Mapping remote(kBufLen, PROT_READ | PROT_WRITE, MAP_HUGETLB);
	if (!local || !remote)
		GTEST_SKIP() << "no 2 MiB huge pages for two 8 MiB mappings "
				"(MAP_HUGETLB failed; reserve 8 with "
				"`echo 8 > /proc/sys/vm/nr_hugepages`)";
	run(reinterpret_cast<uint8_t *>(local.get()),
	    reinterpret_cast<uint8_t *>(remote.get()), random_ops() / 2);
}

INSTANTIATE_TEST_SUITE_P(Api, DataIntegrity,
			 ::testing::Values(Api::PostSend, Api::WrApi),
			 [](const ::testing::TestParamInfo<Api> &i) {
				 return std::string(api_name(i.param));
			 });

} // namespace
