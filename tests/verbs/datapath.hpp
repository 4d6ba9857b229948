// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// GoogleTest side of the data-path suites: the fixture and the checks of
// completions, QP states and received GRHs.
#pragma once

#include "fixture.hpp"
#include "qp_pair.hpp"
#include "verbs.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace urdma::test {

constexpr uint32_t kGrhBytes = 40;

// device_cap_flags_ex bits (enum ib_uverbs_device_cap_flags, stable
// kernel uapi).  The system's <rdma/ib_user_verbs.h> (linux-libc-dev 6.1)
// predates them, and the rdma-core stage does not install its copy.
constexpr uint64_t kDevFlushGlobal = 1ull << 38;   // _DEVICE_FLUSH_GLOBAL
constexpr uint64_t kDevAtomicWrite = 1ull << 40;   // _DEVICE_ATOMIC_WRITE

// A PD on the device under test, the path between its QPs, and its
// extended attributes.
class DataTest : public PdTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(PdTest::SetUp());
		path_ = query_path(ctx_.get());
		ASSERT_TRUE(path_.ok()) << path_.error;
		ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &dev_ex_), 0)
			<< strerror(errno);
	}

	// Connect @p per @o over path_; a fatal failure if that fails.
	void make_pair(QpPair *p, QpPairOptions o)
	{
		o.path = &path_;
		std::string err;
		ASSERT_TRUE(p->init(ctx_.get(), pd_.get(), o, &err)) << err;
	}

	Region region(size_t len, int access = kRemoteAccess)
	{
		return make_region(pd_.get(), len, access);
	}

	bool has_atomics() const { return attr_.atomic_cap != IBV_ATOMIC_NONE; }
	bool has_mw_type2() const
	{
		return attr_.device_cap_flags &
		       (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
			IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	}
	bool has_mw() const
	{
		return attr_.device_cap_flags & IBV_DEVICE_MEM_WINDOW;
	}

	Path path_;
	ibv_device_attr_ex dev_ex_{};
};

/*
 * The requester's completion of a WR that succeeded.  wc_flags and
 * byte_len of send completions are not defined by the IBTA (mlx5 sets
 * IBV_WC_WITH_IMM on them, for example), so byte_len is checked only
 * where the caller asks (RDMA READ and atomics, where rxe and mlx5 both
 * report it) and wc_flags only on urdma, where it is 0.
 */
inline void expect_send_wc(const ibv_wc &wc, uint64_t wr_id, ibv_wc_opcode op,
			   const ibv_qp *qp, long byte_len = -1)
{
	SCOPED_TRACE(wc_str(wc));
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
	EXPECT_EQ(wc.wr_id, wr_id);
	EXPECT_EQ(wc.opcode, op) << wc_opcode_name(op) << " expected";
	EXPECT_EQ(wc.qp_num, qp->qp_num);
	if (byte_len >= 0) {
		EXPECT_EQ(wc.byte_len, uint32_t(byte_len));
	}
	if (device_is_urdma()) {
		EXPECT_EQ(wc.wc_flags, 0u);
	}
}

// What a receive completion must say.
struct RecvExpect {
	uint64_t wr_id = 0;
	ibv_wc_opcode opcode = IBV_WC_RECV;
	uint32_t byte_len = 0;     // UD: including the 40-byte GRH
	unsigned flags = 0;        // IBV_WC_WITH_IMM / _WITH_INV (GRH: ud)
	uint32_t imm_or_inv = 0;   // imm_data as on the wire, or the rkey
	const ibv_qp *qp = nullptr;
	const ibv_qp *src = nullptr;  // UD: the sender (src_qp)
};

/*
 * Receive completion: status, wr_id, opcode, byte_len, qp_num exactly;
 * imm_data / invalidated_rkey when flagged; UD: IBV_WC_GRH and src_qp.
 * On RC and UC the IBTA leaves IBV_WC_GRH open (on RoCE every packet has
 * an IP header; rxe and mlx5 set the flag there), so it is ignored there,
 * except on urdma, which does not set it.
 */
inline void expect_recv_wc(const ibv_wc &wc, const RecvExpect &e)
{
	SCOPED_TRACE(wc_str(wc));
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
	EXPECT_EQ(wc.wr_id, e.wr_id);
	EXPECT_EQ(wc.opcode, e.opcode) << wc_opcode_name(e.opcode)
				       << " expected";
	EXPECT_EQ(wc.byte_len, e.byte_len);
	EXPECT_EQ(wc.qp_num, e.qp->qp_num);
	const bool ud = e.src != nullptr;
	unsigned want = e.flags | (ud ? IBV_WC_GRH : 0);
	unsigned got = wc.wc_flags;
	if (!ud && !device_is_urdma())
		got &= ~unsigned(IBV_WC_GRH);
	EXPECT_EQ(got, want) << "wc_flags";
	if (e.flags & IBV_WC_WITH_IMM) {
		EXPECT_EQ(wc.imm_data, e.imm_or_inv) << "imm_data";
	}
	if (e.flags & IBV_WC_WITH_INV) {
		EXPECT_EQ(wc.invalidated_rkey, e.imm_or_inv)
			<< "invalidated_rkey";
	}
	if (ud) {
		EXPECT_EQ(wc.src_qp, e.src->qp_num) << "src_qp";
	}
}

// An error completion: for those only wr_id, status and qp_num are
// defined.
inline void expect_err_wc(const ibv_wc &wc, uint64_t wr_id,
			  ibv_wc_status status, const ibv_qp *qp)
{
	SCOPED_TRACE(wc_str(wc));
	EXPECT_EQ(wc.status, status)
		<< ibv_wc_status_str(wc.status) << " instead of "
		<< ibv_wc_status_str(status);
	EXPECT_EQ(wc.wr_id, wr_id);
	EXPECT_EQ(wc.qp_num, qp->qp_num);
}

// Exactly one completion from @cq within the timeout, in *@wc.
#define ASSERT_ONE_WC(cq, wc)                                                \
	do {                                                                 \
		std::vector<ibv_wc> one_wc_ = poll_cq((cq), 1);              \
		ASSERT_EQ(one_wc_.size(), 1u) << "no completion on " #cq;    \
		(wc) = one_wc_[0];                                           \
	} while (0)

/*
 * The 40 bytes in front of a UD receive: for an IPv4-mapped GID (RoCEv2
 * over IPv4) the IPv4 header in bytes 20..39 (the first 20 undefined),
 * else the IPv6 header; source and destination are @gid, as both QPs
 * sit on the same port.
 */
inline void expect_grh(const uint8_t *grh, const ibv_gid &gid)
{
	if (gid_is_v4_mapped(gid)) {
		const uint8_t *ip = grh + 20;
		EXPECT_EQ(ip[0], 0x45) << "IPv4 version/IHL";
		EXPECT_EQ(ip[9], IPPROTO_UDP) << "IPv4 protocol";
		EXPECT_EQ(memcmp(ip + 12, gid.raw + 12, 4), 0)
			<< "saddr is not that of " << gid_str(gid);
		EXPECT_EQ(memcmp(ip + 16, gid.raw + 12, 4), 0)
			<< "daddr is not that of " << gid_str(gid);
	} else {
		EXPECT_EQ(grh[0] >> 4, 6) << "IPv6 version";
		EXPECT_EQ(grh[6], IPPROTO_UDP) << "next header";
		EXPECT_EQ(memcmp(grh + 8, gid.raw, 16), 0) << "sgid";
		EXPECT_EQ(memcmp(grh + 24, gid.raw, 16), 0) << "dgid";
	}
}

inline void expect_state(ibv_qp *qp, int state, const char *what)
{
	EXPECT_EQ(qp_state(qp), state) << what << ": ibv_query_qp state";
}

// Wait up to @ms for @len bytes at @p to equal @want (a UC or UD sender's
// completion does not mean the data has arrived).
inline bool wait_for_bytes(const uint8_t *p, const uint8_t *want, size_t len,
			   int ms = timeout_ms())
{
	const int64_t end = now_ms() + ms;
	while (memcmp(p, want, len)) {
		if (now_ms() > end)
			return false;
		usleep(1000);
	}
	return true;
}

// Print and record a test's seed.
inline void announce_seed(uint64_t seed)
{
	::testing::Test::RecordProperty("seed", std::to_string(seed));
	printf("[   SEED   ] URDMA_SEED=%llu (set it to replay)\n",
	       (unsigned long long)seed);
	fflush(stdout);
}

} // namespace urdma::test
