// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Device, port, GID and PD conformance of a urdma device.
#include "edge.hpp"
#include "fixture.hpp"
#include "verbs.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

class Device : public ContextTest {};

std::string read_sysfs(const std::string &path)
{
	std::ifstream f(path);
	std::string s;
	std::getline(f, s);
	return s;
}

// The GIDs the core must derive from the netdev: its IPv4 addresses as
// IPv4-mapped IPv6, and its IPv6 addresses as they are.
std::set<std::string> expected_gids(const std::string &ifname)
{
	std::set<std::string> gids;
	ifaddrs *ifa = nullptr;

	if (getifaddrs(&ifa))
		return gids;
	for (ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || ifname != i->ifa_name)
			continue;
		in6_addr a{};
		if (i->ifa_addr->sa_family == AF_INET) {
			auto *sin = reinterpret_cast<sockaddr_in *>(i->ifa_addr);
			a.s6_addr[10] = 0xff;
			a.s6_addr[11] = 0xff;
			memcpy(&a.s6_addr[12], &sin->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			a = reinterpret_cast<sockaddr_in6 *>(i->ifa_addr)->sin6_addr;
		} else {
			continue;
		}
		char buf[INET6_ADDRSTRLEN];
		gids.insert(inet_ntop(AF_INET6, &a, buf, sizeof(buf)));
	}
	freeifaddrs(ifa);
	return gids;
}

std::string gid_str(const ibv_gid &gid)
{
	char buf[INET6_ADDRSTRLEN];
	return inet_ntop(AF_INET6, gid.raw, buf, sizeof(buf));
}

TEST(DeviceList, ListsTheDevice)
{
	DeviceList list;
	ASSERT_GT(list.size(), 0);
	ibv_device *dev = list.find(device_name());
	ASSERT_NE(dev, nullptr) << device_name() << " not listed";
	EXPECT_EQ(dev->node_type, IBV_NODE_CA);
	EXPECT_EQ(dev->transport_type, IBV_TRANSPORT_IB);
}

TEST_F(Device, QueryDeviceReportsLimits)
{
	ibv_device_attr attr{};
	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	EXPECT_EQ(attr.phys_port_cnt, 1);
	EXPECT_EQ(attr.max_qp, 16384);
	EXPECT_EQ(attr.max_qp_wr, 16384);
	EXPECT_EQ(attr.max_sge, 16);
	EXPECT_EQ(attr.max_cq, 16384);
	EXPECT_EQ(attr.max_cqe, 1 << 20);
	EXPECT_EQ(attr.max_pd, 16384);
	EXPECT_EQ(attr.max_srq, 4096);
	EXPECT_EQ(attr.max_pkeys, 1);
	EXPECT_EQ(attr.max_mr_size, 1ULL << 40);
	// The engine's atomics are CPU atomics on the target memory.
	EXPECT_EQ(attr.atomic_cap, IBV_ATOMIC_GLOB);
	EXPECT_NE(attr.page_size_cap & 4096, 0u);
	EXPECT_EQ(attr.sys_image_guid, attr.node_guid);
	EXPECT_STREQ(attr.fw_ver, "0.1.0");
}

TEST_F(Device, QueryDeviceExAgreesWithQueryDevice)
{
	ibv_device_attr attr{};
	ibv_device_attr_ex ex{};
	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &ex), 0);
	EXPECT_EQ(ex.orig_attr.max_qp, attr.max_qp);
	EXPECT_EQ(ex.orig_attr.max_mr_size, attr.max_mr_size);
	EXPECT_EQ(ex.orig_attr.node_guid, attr.node_guid);
	EXPECT_EQ(ex.orig_attr.max_pd, attr.max_pd);
}

TEST_F(Device, NodeGuidComesFromTheMac)
{
	std::string mac = read_sysfs("/sys/class/net/" + netdev_name() +
				     "/address");
	ASSERT_EQ(mac.size(), 17u);
	std::array<unsigned, 6> m{};
	ASSERT_EQ(sscanf(mac.c_str(), "%x:%x:%x:%x:%x:%x", &m[0], &m[1],
			 &m[2], &m[3], &m[4], &m[5]), 6);
	// EUI-64 from EUI-48: flip the U/L bit, insert ff:fe.
	const uint8_t want[8] = { uint8_t(m[0] ^ 2), uint8_t(m[1]),
				  uint8_t(m[2]), 0xff, 0xfe, uint8_t(m[3]),
				  uint8_t(m[4]), uint8_t(m[5]) };
	__be64 guid = ibv_get_device_guid(ctx_->device);
	EXPECT_EQ(memcmp(&guid, want, 8), 0);
}

TEST_F(Device, PortIsActiveEthernet)
{
	ibv_port_attr pa{};
	ASSERT_EQ(ibv_query_port(ctx_.get(), 1, &pa), 0);
	EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
	EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	EXPECT_EQ(pa.phys_state, 5 /* LinkUp */);
	EXPECT_EQ(pa.gid_tbl_len, 128);
	EXPECT_EQ(pa.pkey_tbl_len, 1);
	EXPECT_EQ(pa.max_mtu, IBV_MTU_4096);
	EXPECT_EQ(pa.max_msg_sz, 1u << 31);

	// The active MTU follows the netdev's MTU minus RoCEv2 headers.
	int mtu = std::stoi(read_sysfs("/sys/class/net/" + netdev_name() +
				       "/mtu"));
	ibv_mtu want = mtu >= 4096 + 84 ? IBV_MTU_4096 :
		       mtu >= 2048 + 84 ? IBV_MTU_2048 :
		       mtu >= 1024 + 84 ? IBV_MTU_1024 :
		       mtu >= 512 + 84 ? IBV_MTU_512 : IBV_MTU_256;
	EXPECT_EQ(pa.active_mtu, want) << "netdev mtu " << mtu;
}

TEST_F(Device, PortZeroAndTwoDoNotExist)
{
	ibv_port_attr pa{};
	EXPECT_NE(ibv_query_port(ctx_.get(), 0, &pa), 0);
	EXPECT_NE(ibv_query_port(ctx_.get(), 2, &pa), 0);
}

TEST_F(Device, PkeyTableHasTheDefaultPkey)
{
	__be16 pkey = 0;
	ASSERT_EQ(ibv_query_pkey(ctx_.get(), 1, 0, &pkey), 0);
	EXPECT_EQ(ntohs(pkey), 0xffff);
	EXPECT_NE(ibv_query_pkey(ctx_.get(), 1, 1, &pkey), 0);
}

TEST_F(Device, GidTableHoldsTheNetdevAddresses)
{
	std::set<std::string> want = expected_gids(netdev_name());
	ASSERT_FALSE(want.empty()) << netdev_name() << " has no address";

	std::vector<ibv_gid_entry> table(128);
	ssize_t n = ibv_query_gid_table(ctx_.get(), table.data(),
					table.size(), 0);
	ASSERT_GT(n, 0) << strerror(errno);

	std::set<std::string> v1, v2;
	for (ssize_t i = 0; i < n; i++) {
		EXPECT_EQ(table[i].port_num, 1u);
		EXPECT_EQ(table[i].ndev_ifindex,
			  if_nametoindex(netdev_name().c_str()));
		std::string g = gid_str(table[i].gid);
		if (table[i].gid_type == IBV_GID_TYPE_ROCE_V2)
			v2.insert(g);
		else if (table[i].gid_type == IBV_GID_TYPE_ROCE_V1)
			v1.insert(g);
		// ibv_query_gid sees the same entry at the same index.
		ibv_gid gid{};
		ASSERT_EQ(ibv_query_gid(ctx_.get(), 1, table[i].gid_index,
					&gid), 0);
		EXPECT_EQ(gid_str(gid), g);
	}
	// The port is RoCEv2 only (RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP, as
	// rxe): every address appears once, as a RoCEv2 GID, and no v1 GID.
	EXPECT_EQ(v2, want);
	EXPECT_TRUE(v1.empty());
	EXPECT_EQ(size_t(n), want.size());
}

TEST_F(Device, AllocPdGivesDistinctPds)
{
	Pd a(ibv_alloc_pd(ctx_.get()));
	Pd b(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(a && b) << strerror(errno);
	EXPECT_NE(a->handle, b->handle);
	EXPECT_EQ(a->context, ctx_.get());
}

// max_pd counts every PD on the device, the kernel's (the MAD layer's)
// included: exactly max_pd minus the PDs that exist fit, one more does not.
TEST_F(Device, MaxPdIsEnforcedAtTheEdge)
{
	ibv_device_attr attr{};
	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	DeviceUsage used = device_usage();
	ASSERT_TRUE(used.ok()) << used.error;
	EXPECT_GE(used.pd, 1) << "the MAD layer's PD is missing: " << used.str();

	expect_limit_edge("PD", attr.max_pd - used.pd,
			  [&] { return Pd(ibv_alloc_pd(ctx_.get())); });
}

TEST(Context, OpenCloseManyTimes)
{
	for (int i = 0; i < 200; i++) {
		Context c = open_device();
		ASSERT_TRUE(c) << "iteration " << i << ": " << strerror(errno);
		Pd pd(ibv_alloc_pd(c.get()));
		ASSERT_TRUE(pd);
	}
}

// Closing a context with live PDs is legal; the kernel cleans up.
TEST(Context, CloseWithLivePds)
{
	Context c = open_device();
	ASSERT_TRUE(c);
	for (int i = 0; i < 16; i++)
		ASSERT_NE(ibv_alloc_pd(c.get()), nullptr);
	c.reset();
	Context again = open_device();
	ASSERT_TRUE(again);
}

} // namespace
