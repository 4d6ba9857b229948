// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Device memory (kernel/dm.c, provider/dm.c): ibv_alloc_dm, the host's
// copies in and out, and zero-based MRs on it that the device reads,
// writes and does atomics on.
#include "datapath.hpp"
#include "fixture.hpp"
#include "verbs.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

using namespace urdma::test;

namespace {

struct DmFree {
	void operator()(ibv_dm *dm) const { ibv_free_dm(dm); }
};
using Dm = std::unique_ptr<ibv_dm, DmFree>;

class DmTest : public DataTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(DataTest::SetUp());
		if (!dev_ex_.max_dm_size) {
			ASSERT_FALSE(device_is_urdma())
				<< "urdma reports no device memory";
			GTEST_SKIP() << device_name() << " has no device memory";
		}
	}

	Dm alloc(size_t len)
	{
		ibv_alloc_dm_attr a{};
		a.length = len;
		return Dm(ibv_alloc_dm(ctx_.get(), &a));
	}
};

// Copies in and out, at 4-byte aligned offsets; others are EINVAL, as is
// anything past the end.
TEST_F(DmTest, HostCopies)
{
	const size_t len = 8192 + 100;
	Dm dm = alloc(len);
	ASSERT_TRUE(dm) << strerror(errno);
	std::vector<uint8_t> in(len), out(len);
	fill_pattern(in.data(), len, 5);
	ASSERT_EQ(ibv_memcpy_to_dm(dm.get(), 0, in.data(), len), 0);
	ASSERT_EQ(ibv_memcpy_from_dm(out.data(), dm.get(), 0, len), 0);
	EXPECT_EQ(first_diff(out.data(), in.data(), len), -1);
	ASSERT_EQ(ibv_memcpy_from_dm(out.data(), dm.get(), 4096, 12), 0);
	EXPECT_EQ(first_diff(out.data(), in.data() + 4096, 12), -1);
	EXPECT_EQ(ibv_memcpy_to_dm(dm.get(), 2, in.data(), 4), EINVAL);
	EXPECT_EQ(ibv_memcpy_to_dm(dm.get(), len - 4, in.data(), 8), EINVAL);
	EXPECT_EQ(ibv_memcpy_from_dm(out.data(), dm.get(), len + 4, 4),
		  EINVAL);
}

// Sizes: up to max_dm_size; 0, more, or a comp_mask are refused.
TEST_F(DmTest, AllocLimits)
{
	Dm dm = alloc(dev_ex_.max_dm_size);
	EXPECT_TRUE(dm) << strerror(errno);
	EXPECT_FALSE(alloc(dev_ex_.max_dm_size + 1));
	EXPECT_FALSE(alloc(0));
	ibv_alloc_dm_attr a{};
	a.length = 64;
	a.comp_mask = 1;
	errno = 0;
	EXPECT_EQ(ibv_alloc_dm(ctx_.get(), &a), nullptr);
	EXPECT_EQ(errno, EINVAL);
	// Allocation and free, many times: nothing is left behind.
	for (int i = 0; i < 200; i++) {
		Dm d = alloc(4096 * (1 + i % 8));
		ASSERT_TRUE(d) << "round " << i << ": " << strerror(errno);
	}
}

// A zero-based MR on device memory: WRITE, READ and FETCH_ADD reach it
// at offsets from the MR's start; the host sees the bytes.  The DM
// cannot be freed while the MR is there.
TEST_F(DmTest, MrTraffic)
{
	const size_t len = 16384;
	Dm dm = alloc(len);
	ASSERT_TRUE(dm) << strerror(errno);
	Mr mr(ibv_reg_dm_mr(pd_.get(), dm.get(), 4096, 8192,
			    IBV_ACCESS_ZERO_BASED | kRemoteAccess));
	ASSERT_TRUE(mr) << strerror(errno);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, {}));
	Region src = region(4096), back = region(4096);
	ASSERT_TRUE(src && back) << strerror(errno);
	fill_pattern(src.data(), 4096, 9);

	ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE, { src.sge(0, 4096) },
				     100, mr->rkey) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_RDMA_WRITE, p.a());
	std::vector<uint8_t> host(4096);
	ASSERT_EQ(ibv_memcpy_from_dm(host.data(), dm.get(), 4096 + 100, 4096),
		  0);
	EXPECT_EQ(first_diff(host.data(), src.data(), 4096), -1);

	ASSERT_EQ(p.post_a({ rdma_wr(2, IBV_WR_RDMA_READ, { back.sge(0, 4096) },
				     100, mr->rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 2, IBV_WC_RDMA_READ, p.a(), 4096);
	EXPECT_EQ(first_diff(back.data(), src.data(), 4096), -1);

	if (has_atomics()) {
		uint64_t v = 40;
		ASSERT_EQ(ibv_memcpy_to_dm(dm.get(), 4096 + 8000, &v, 8), 0);
		SendWr w = send_wr(3, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   { back.sge(0, 8) });
		w.remote_addr = 8000;
		w.rkey = mr->rkey;
		w.compare_add = 2;
		ASSERT_EQ(p.post_a({ w }), 0);
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, 3, IBV_WC_FETCH_ADD, p.a(), 8);
		memcpy(&v, back.data(), 8);
		EXPECT_EQ(v, 40u);
		ASSERT_EQ(ibv_memcpy_from_dm(&v, dm.get(), 4096 + 8000, 8), 0);
		EXPECT_EQ(v, 42u);
	}
	// Beyond the MR (8192 bytes from DM offset 4096): a remote error.
	ASSERT_EQ(p.post_a({ rdma_wr(4, IBV_WR_RDMA_WRITE, { src.sge(0, 64) },
				     8192 - 32, mr->rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 4, IBV_WC_REM_ACCESS_ERR, p.a());

	EXPECT_EQ(ibv_free_dm(dm.get()), EBUSY);
	ASSERT_EQ(ibv_dereg_mr(mr.release()), 0);
	EXPECT_EQ(ibv_free_dm(dm.release()), 0);
}

// The MR must lie inside the DM; and it is zero based or nothing.
TEST_F(DmTest, MrRegistrationErrors)
{
	Dm dm = alloc(4096);
	ASSERT_TRUE(dm) << strerror(errno);
	errno = 0;
	EXPECT_FALSE(Mr(ibv_reg_dm_mr(pd_.get(), dm.get(), 0, 4100,
				      IBV_ACCESS_ZERO_BASED |
					      IBV_ACCESS_LOCAL_WRITE)));
	EXPECT_FALSE(Mr(ibv_reg_dm_mr(pd_.get(), dm.get(), 4000, 100,
				      IBV_ACCESS_ZERO_BASED |
					      IBV_ACCESS_LOCAL_WRITE)));
	EXPECT_FALSE(Mr(ibv_reg_dm_mr(pd_.get(), dm.get(), 0, 4096,
				      IBV_ACCESS_LOCAL_WRITE)));
	EXPECT_TRUE(Mr(ibv_reg_dm_mr(pd_.get(), dm.get(), 0, 4096,
				     IBV_ACCESS_ZERO_BASED |
					     IBV_ACCESS_LOCAL_WRITE)))
		<< strerror(errno);
}

} // namespace
