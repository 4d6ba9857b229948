// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Address handles: RoCEv2 paths to this host's GIDs, many AHs, the
// attributes the core rejects, and the device-wide max_ah.
#include "edge.hpp"
#include "fixture.hpp"
#include "verbs.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

using namespace urdma::test;

namespace {

class AhTest : public PdTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(PdTest::SetUp());
		ah_attr_ = loopback_ah_attr(ctx_.get());
		ibv_gid zero{};
		ASSERT_NE(memcmp(ah_attr_.grh.dgid.raw, zero.raw, 16), 0)
			<< "port 1 has no GID 0";
	}

	Ah create(const ibv_ah_attr &a)
	{
		ibv_ah_attr copy = a;
		return Ah(ibv_create_ah(pd_.get(), &copy));
	}

	// create_ah expecting failure: its errno, 0 if it succeeded.
	int create_fails(const ibv_ah_attr &a)
	{
		return create_errno([&] { return create(a); });
	}

	ibv_ah_attr ah_attr_{};
};

TEST_F(AhTest, CreateToGidZeroAndDestroy)
{
	Ah ah = create(ah_attr_);
	ASSERT_TRUE(ah) << strerror(errno);
	EXPECT_EQ(ah->pd, pd_.get());
	EXPECT_EQ(ah->context, ctx_.get());
	EXPECT_EQ(ibv_destroy_ah(ah.release()), 0);
}

// Every GID of the port (the netdev's IPv6 and IPv4-mapped addresses) is
// a valid destination, and a valid source.
TEST_F(AhTest, EveryGidIsADestination)
{
	std::vector<ibv_gid_entry> table(128);
	ssize_t n = ibv_query_gid_table(ctx_.get(), table.data(), table.size(),
					0);
	ASSERT_GT(n, 0) << strerror(errno);
	for (ssize_t i = 0; i < n; i++) {
		SCOPED_TRACE("GID index " + std::to_string(table[i].gid_index));
		ibv_ah_attr a = ah_attr_;
		a.grh.dgid = table[i].gid;
		a.grh.sgid_index = table[i].gid_index;
		Ah ah = create(a);
		ASSERT_TRUE(ah) << strerror(errno);
		EXPECT_EQ(ibv_destroy_ah(ah.release()), 0);
	}
}

TEST_F(AhTest, AThousandAhs)
{
	// A thousand alive at once ...
	std::vector<Ah> ahs;
	for (int i = 0; i < 1000; i++) {
		ahs.push_back(create(ah_attr_));
		ASSERT_TRUE(ahs.back()) << "AH " << i << ": " << strerror(errno);
	}
	for (size_t i = 0; i < ahs.size(); i++)
		ASSERT_EQ(ibv_destroy_ah(ahs[i].release()), 0) << "AH " << i;
	// ... and a thousand one after the other.
	for (int i = 0; i < 1000; i++) {
		Ah ah = create(ah_attr_);
		ASSERT_TRUE(ah) << "AH " << i << ": " << strerror(errno);
		ASSERT_EQ(ibv_destroy_ah(ah.release()), 0) << "AH " << i;
	}
}

// The core's checks (rdma_check_ah_attr): a RoCE AH needs a GRH, and the
// port must exist.
TEST_F(AhTest, BadAttributesAreEinval)
{
	ibv_ah_attr a = ah_attr_;
	a.is_global = 0;
	EXPECT_EQ(create_fails(a), EINVAL) << "a RoCE AH without a GRH";
	a = ah_attr_;
	a.port_num = 2;
	EXPECT_EQ(create_fails(a), EINVAL) << "port 2";
	a.port_num = 0;
	EXPECT_EQ(create_fails(a), EINVAL) << "port 0";
	// An empty source GID entry cannot be used (the errno is the GID
	// cache's).
	a = ah_attr_;
	a.grh.sgid_index = 127;
	EXPECT_NE(create_fails(a), 0) << "sgid_index 127";
	// None of that leaked: a good AH still works.
	EXPECT_EQ(create_fails(ah_attr_), 0);
}

// What real clients pass.  UCX's ud_verbs and rc_verbs on RoCE: a non-zero
// DLID (49152; RoCE has no LIDs and ignores it), SL 0, traffic class 106
// (DSCP 26, ECN-capable) and flow label ~0 (its "workaround rdma-core flow
// label to udp sport conversion"; the label is 20 bits, the rest is
// dropped, as rxe does).  Others set an SL, a flow label, a hop limit and
// a static rate.  Each is accepted.
TEST_F(AhTest, AttributesRealClientsPassAreAccepted)
{
	struct Case {
		const char *what;
		void (*set)(ibv_ah_attr &);
	};
	const Case cases[] = {
		{ "UCX: dlid 49152, sl 0, traffic class 106, flow label ~0",
		  [](ibv_ah_attr &a) {
			  a.dlid = 49152;
			  a.sl = 0;
			  a.src_path_bits = 0;
			  a.grh.traffic_class = 106;
			  a.grh.flow_label = 0xffffffff;
		  } },
		{ "sl 7", [](ibv_ah_attr &a) { a.sl = 7; } },
		{ "flow label 0xfffff",
		  [](ibv_ah_attr &a) { a.grh.flow_label = 0xfffff; } },
		{ "hop limit 1", [](ibv_ah_attr &a) { a.grh.hop_limit = 1; } },
		{ "static rate 100 Gb/s",
		  [](ibv_ah_attr &a) { a.static_rate = IBV_RATE_100_GBPS; } },
		{ "src_path_bits 3", [](ibv_ah_attr &a) { a.src_path_bits = 3; } },
	};
	for (const Case &c : cases) {
		SCOPED_TRACE(c.what);
		ibv_ah_attr a = ah_attr_;
		c.set(a);
		Ah ah = create(a);
		ASSERT_TRUE(ah) << strerror(errno);
		EXPECT_EQ(ibv_destroy_ah(ah.release()), 0);
	}
}

// max_ah is device-wide, kernel AHs included.  AHs are not in the core's
// resource tracking, so `rdma resource show` cannot count them; the kernel
// holds AHs only briefly (MAD responses), none on an idle device, so all
// max_ah must fit.
TEST_F(AhTest, MaxAhIsEnforcedAtTheEdge)
{
	if (on_debug_kernel())
		GTEST_SKIP() << "65536 AHs, each resolving its destination, take "
				"minutes under KASAN in TCG; the edge runs on the "
				"Debian kernels (AThousandAhs runs everywhere)";
	ASSERT_GT(attr_.max_ah, 0);
	expect_limit_edge("AH", attr_.max_ah, [&] { return create(ah_attr_); });
}

} // namespace
