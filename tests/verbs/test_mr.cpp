// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Memory registration: pinning, keys, access rules, limits, rereg, MWs.
#include "edge.hpp"
#include "fixture.hpp"
#include "mapping.hpp"
#include "qp_pair.hpp"
#include "verbs.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

constexpr int kRW = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ;

class MrTest : public ContextTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(ContextTest::SetUp());
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << strerror(errno);
	}

	// reg_mr expecting failure: returns errno (0 if it succeeded).
	int reg_fails(void *addr, size_t len, int access)
	{
		return create_errno([&] {
			return Mr(ibv_reg_mr(pd_.get(), addr, len, access));
		});
	}

	Pd pd_;
};

// The driver attributes "rdma res show mr -dd" prints for an lkey.
std::string mr_driver_attrs(uint32_t lkey)
{
	char want[32];
	snprintf(want, sizeof(want), "lkey 0x%x ", lkey);
	FILE *f = popen("rdma -dd resource show mr 2>&1", "r");
	if (!f)
		return "";
	std::string out, line;
	char buf[1024];
	while (fgets(buf, sizeof(buf), f))
		out += buf;
	pclose(f);
	std::istringstream in(out);
	while (std::getline(in, line))
		if (line.find(want) != std::string::npos)
			return line;
	return "";
}

TEST_F(MrTest, RegisterAndDeregister)
{
	Mapping buf(64 * 1024);
	ASSERT_TRUE(buf);
	Mr mr(ibv_reg_mr(pd_.get(), buf.get(), buf.size(), kRW));
	ASSERT_TRUE(mr) << strerror(errno);
	EXPECT_NE(mr->lkey, 0u);
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_EQ(mr->addr, buf.get());
	EXPECT_EQ(mr->length, buf.size());
	EXPECT_EQ(ibv_dereg_mr(mr.release()), 0);
}

TEST_F(MrTest, KeysAreNotReusedVerbatim)
{
	Mapping buf(4096);
	std::vector<uint32_t> keys;
	for (int i = 0; i < 64; i++) {
		Mr mr(ibv_reg_mr(pd_.get(), buf.get(), buf.size(), 0));
		ASSERT_TRUE(mr);
		keys.push_back(mr->lkey);
	}
	std::sort(keys.begin(), keys.end());
	EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end())
		<< "a freed key came back unchanged";
}

TEST_F(MrTest, RemoteWriteNeedsLocalWrite)
{
	Mapping buf(4096);
	EXPECT_EQ(reg_fails(buf.get(), 4096, IBV_ACCESS_REMOTE_WRITE), EINVAL);
	EXPECT_EQ(reg_fails(buf.get(), 4096, IBV_ACCESS_REMOTE_ATOMIC), EINVAL);
	EXPECT_EQ(reg_fails(buf.get(), 4096, IBV_ACCESS_REMOTE_READ), 0);
}

TEST_F(MrTest, UnsupportedAccessIsRejected)
{
	Mapping buf(4096);
	// ODP (test_odp.cpp) is supported on urdma; elsewhere the core
	// answers it: EOPNOTSUPP on 6.12, EINVAL on 6.1.
	int odp = reg_fails(buf.get(), 4096, IBV_ACCESS_ON_DEMAND);
	if (device_is_urdma()) {
		EXPECT_EQ(odp, 0) << strerror(odp);
	} else {
		EXPECT_TRUE(odp == EOPNOTSUPP || odp == EINVAL)
			<< strerror(odp);
	}
	EXPECT_EQ(reg_fails(buf.get(), 4096, IBV_ACCESS_ZERO_BASED),
		  EOPNOTSUPP);
}

TEST_F(MrTest, UnmappedMemoryIsEfault)
{
	char *p;
	{
		Mapping gone(64 * 1024);
		p = gone.get();
	}
	EXPECT_EQ(reg_fails(p, 64 * 1024, IBV_ACCESS_LOCAL_WRITE), EFAULT);
	EXPECT_EQ(reg_fails(p, 64 * 1024, 0), EFAULT);
}

TEST_F(MrTest, ReadOnlyMemoryCannotBeWritable)
{
	Mapping ro(8192, PROT_READ);
	ASSERT_TRUE(ro);
	EXPECT_EQ(reg_fails(ro.get(), ro.size(), IBV_ACCESS_LOCAL_WRITE),
		  EFAULT);
	// Read-only access to read-only memory is fine.
	EXPECT_EQ(reg_fails(ro.get(), ro.size(), IBV_ACCESS_REMOTE_READ), 0);
}

TEST_F(MrTest, SizeLimits)
{
	ibv_device_attr attr{};
	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	Mapping buf(4096);
	EXPECT_EQ(reg_fails(buf.get(), 0, 0), EINVAL);
	EXPECT_EQ(reg_fails(buf.get(), attr.max_mr_size + 1, 0), EINVAL);
}

TEST_F(MrTest, UnalignedBufferCoversEveryPageItTouches)
{
	Mapping buf(4 * 4096);
	// 2 bytes straddling a page boundary need two 4 KiB blocks.
	Mr mr(ibv_reg_mr(pd_.get(), buf.get() + 4095, 2, 0));
	ASSERT_TRUE(mr) << strerror(errno);
	std::string attrs = mr_driver_attrs(mr->lkey);
	ASSERT_FALSE(attrs.empty()) << "rdma res show mr lists no lkey";
	EXPECT_NE(attrs.find("drv_mtt_entries 2 "), std::string::npos) << attrs;
	EXPECT_NE(attrs.find("drv_block_size 4096"), std::string::npos) << attrs;
}

TEST_F(MrTest, HugePagesGetHugeBlocks)
{
	const size_t len = 4u << 20;
	Mapping huge(len, PROT_READ | PROT_WRITE, MAP_HUGETLB);
	if (!huge)
		GTEST_SKIP() << "no 2 MiB huge pages: " << strerror(errno);
	Mr mr(ibv_reg_mr(pd_.get(), huge.get(), len, kRW));
	ASSERT_TRUE(mr) << strerror(errno);
	std::string attrs = mr_driver_attrs(mr->lkey);
	// Two 2 MiB pages: two entries, or one if they happen to be
	// physically contiguous and aligned -- never 1024 small ones.
	EXPECT_TRUE(attrs.find("drv_block_size 2097152") != std::string::npos ||
		    attrs.find("drv_block_size 4194304") != std::string::npos)
		<< attrs;
}

// max_mr counts every MR on the device, the kernel's included (the MAD
// layer's PD holds an internal DMA MR; see DeviceUsage).
TEST_F(MrTest, MaxMrIsEnforcedAtTheEdge)
{
	if (on_debug_kernel())
		GTEST_SKIP() << "65536 pinned registrations take over 10 minutes "
				"under KASAN in TCG; the sweep runs on the Debian "
				"kernels";
	ibv_device_attr attr{};
	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	DeviceUsage used = device_usage();
	ASSERT_TRUE(used.ok()) << used.error;
	EXPECT_GE(used.mr, 1) << "the MAD layer's DMA MR is missing: "
			      << used.str();
	Mapping buf(4096);
	ASSERT_TRUE(buf);
	expect_limit_edge("MR", attr.max_mr - used.mr, [&] {
		return Mr(ibv_reg_mr(pd_.get(), buf.get(), 4096, 0));
	});
}

TEST_F(MrTest, ReregChangesAccessTranslationAndPd)
{
	Mapping a(8192), b(16384);
	Mr mr(ibv_reg_mr(pd_.get(), a.get(), a.size(), 0));
	ASSERT_TRUE(mr);
	EXPECT_EQ(ibv_rereg_mr(mr.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr,
			       nullptr, 0, kRW), 0);
	EXPECT_EQ(ibv_rereg_mr(mr.get(), IBV_REREG_MR_CHANGE_TRANSLATION,
			       nullptr, b.get(), b.size(), 0), 0);
	EXPECT_EQ(mr->addr, b.get());
	EXPECT_EQ(mr->length, b.size());
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other);
	EXPECT_EQ(ibv_rereg_mr(mr.get(), IBV_REREG_MR_CHANGE_PD, other.get(),
			       nullptr, 0, 0), 0);
	EXPECT_EQ(mr->pd, other.get());
	// A bad request leaves the MR as it was.
	EXPECT_NE(ibv_rereg_mr(mr.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr,
			       nullptr, 0, IBV_ACCESS_REMOTE_WRITE), 0);
	EXPECT_EQ(ibv_dereg_mr(mr.release()), 0);
}

TEST_F(MrTest, MemoryWindowsOfBothTypes)
{
	Mw mw1(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_1));
	Mw mw2(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_2));
	ASSERT_TRUE(mw1 && mw2) << strerror(errno);
	EXPECT_EQ(mw1->type, IBV_MW_TYPE_1);
	EXPECT_EQ(mw2->type, IBV_MW_TYPE_2);
	EXPECT_NE(mw1->rkey, mw2->rkey);
	EXPECT_NE(mw1->rkey, 0u);
}

// A process may pin no more than RLIMIT_MEMLOCK without CAP_IPC_LOCK.
TEST(MrLimits, RlimitMemlockIsHonoured)
{
	auto child = [](ibv_context *, ibv_pd *pd) {
		Mapping small(32 * 1024), big(1 << 20);
		Mr ok(ibv_reg_mr(pd, small.get(), small.size(), 0));
		if (!ok)
			_exit(12);
		Mr over(ibv_reg_mr(pd, big.get(), big.size(), 0));
		_exit(over ? 13 : errno == ENOMEM ? 0 : 14);
	};
	int status = -1;
	ASSERT_NO_FATAL_FAILURE(run_memlock_limited_child(child, &status));
	EXPECT_EQ(status, 0)
		<< "10 setup, 11 open or PD, 12 small reg failed, 13 over "
		   "limit succeeded, 14 wrong errno";
}

// A process killed while holding MRs leaves no pinned page behind.
TEST(MrLimits, KilledProcessReleasesItsPins)
{
	// Pins of processes that exited earlier may still be on their way
	// out (deferred file release); start from a settled count.
	long before = settled_pins();
	if (before < 0)
		GTEST_SKIP() << "/proc/vmstat has no nr_foll_pin_* counters";

	const size_t len = 32u << 20;  // 8192 pages
	auto child = [&](auto report) {
		Context ctx = open_device();
		if (!ctx)
			_exit(1);  // EOF for the parent
		Pd pd(ibv_alloc_pd(ctx.get()));
		Mapping buf(len);
		std::vector<Mr> mrs;
		for (int i = 0; i < 4; i++)
			mrs.emplace_back(ibv_reg_mr(pd.get(), buf.get(), len,
						    IBV_ACCESS_LOCAL_WRITE));
		report(mrs.back() ? 'y' : 'n');
	};
	char c = 0;
	long during = 0;
	ASSERT_NO_FATAL_FAILURE(run_then_kill_child(child, &c, &during));
	EXPECT_EQ(c, 'y');
	// Unrelated pins may come and go; ours must all be gone.
	long after = pins_after_exit(before);
	EXPECT_LE(after, before) << "pins leaked: " << after - before;
	// The counters are global: a few unrelated pins may come or go
	// meanwhile, so ask for most of ours (32768) to have been seen.
	EXPECT_GT(during - after, 3 * long(len / 4096));
}

} // namespace
