// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Queue pairs: types, capacities and their limits, QP numbers, the state
// machine with the attributes each transition takes, attribute ranges,
// SRQs and the device-wide max_qp.  Nothing is posted (there is no engine
// yet); an RC or UC QP is connected to itself through GID 0.
#include "edge.hpp"
#include "fixture.hpp"
#include "verbs.hpp"

#include <gtest/gtest.h>
#include <rdma/urdma-abi.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

// ABI "Queues": a send WQE is at most URDMA_MAX_WQE_BLOCKS 64-byte blocks,
// the first being the header, and max_inline_data = min(256, stride - 64).
// ibv_query_device has no field for it.
constexpr uint32_t kMaxInline = (URDMA_MAX_WQE_BLOCKS - 1) * URDMA_WQE_BLOCK;
// ... and max_*_sge = min(16, ...).
constexpr uint32_t kAbiMaxSge = 16;

constexpr uint32_t kQkey = 0x01234567;  // bit 31 clear: not a controlled qkey
constexpr uint32_t kRqPsn = 0x1234;
constexpr uint32_t kSqPsn = 0x4321;
constexpr int kRcAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ;
constexpr int kUcAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

const ibv_qp_type kTypes[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

std::string type_name(ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	default: return "type " + std::to_string(int(t));
	}
}

std::string state_name(int s)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS",
					     "SQD", "SQE", "ERR" };
	return s >= 0 && s < 7 ? names[s] : "state " + std::to_string(s);
}

bool is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

std::string cap_str(const ibv_qp_cap &c)
{
	return "send_wr " + std::to_string(c.max_send_wr) + " recv_wr " +
	       std::to_string(c.max_recv_wr) + " send_sge " +
	       std::to_string(c.max_send_sge) + " recv_sge " +
	       std::to_string(c.max_recv_sge) + " inline " +
	       std::to_string(c.max_inline_data);
}

/*
 * The capacities a QP reports cover the request, stay within the device,
 * and have the shape ABI "Queues" gives them: the work request counts are
 * the ring sizes (powers of two); max_send_sge and max_inline_data both
 * come from one SQ stride (64 + 64k bytes, at most 320), max_recv_sge from
 * an RQ stride (a multiple of 64, at most 320).
 */
void expect_caps(const ibv_qp_cap &got, const ibv_qp_cap &want,
		 const ibv_device_attr &dev, bool srq)
{
	SCOPED_TRACE("asked " + cap_str(want) + ", got " + cap_str(got));
	EXPECT_GE(got.max_send_wr, want.max_send_wr);
	EXPECT_GE(got.max_send_sge, want.max_send_sge);
	EXPECT_GE(got.max_inline_data, want.max_inline_data);
	EXPECT_LE(got.max_send_wr, uint32_t(dev.max_qp_wr));
	EXPECT_LE(got.max_send_sge, uint32_t(dev.max_sge));
	EXPECT_LE(got.max_inline_data, kMaxInline);

	EXPECT_TRUE(is_pow2(got.max_send_wr));
	EXPECT_EQ(got.max_inline_data % URDMA_WQE_BLOCK, 0u);
	EXPECT_EQ(got.max_send_sge,
		  std::min(kAbiMaxSge, got.max_inline_data / URDMA_SGE_SIZE));
	if (srq)
		return;

	EXPECT_GE(got.max_recv_wr, want.max_recv_wr);
	EXPECT_GE(got.max_recv_sge, want.max_recv_sge);
	EXPECT_LE(got.max_recv_wr, uint32_t(dev.max_qp_wr));
	EXPECT_LE(got.max_recv_sge, uint32_t(dev.max_sge));
	EXPECT_TRUE(is_pow2(got.max_recv_wr));
	std::set<uint32_t> shapes;
	for (uint32_t stride = URDMA_WQE_BLOCK;
	     stride <= URDMA_MAX_WQE_BLOCKS * URDMA_WQE_BLOCK;
	     stride += URDMA_WQE_BLOCK)
		shapes.insert(std::min(kAbiMaxSge,
				       (stride - 16) / URDMA_SGE_SIZE));
	EXPECT_EQ(shapes.count(got.max_recv_sge), 1u);
}

// One modify_qp call: the attributes and the mask that names them.
struct Step {
	ibv_qp_attr attr{};
	int mask = 0;
};

// A change to a step's attributes.
using Tweak = std::function<void(ibv_qp_attr &)>;

class QpTest : public PdTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(PdTest::SetUp());
		cq_.reset(ibv_create_cq(ctx_.get(), 256, nullptr, nullptr, 0));
		ASSERT_TRUE(cq_) << strerror(errno);
		ASSERT_EQ(ibv_query_gid(ctx_.get(), 1, 0, &gid_), 0);
	}

	Qp create(ibv_qp_type t, ibv_qp_cap cap = qp_cap(16, 16, 1, 1),
		  ibv_srq *srq = nullptr, ibv_qp_cap *got = nullptr)
	{
		ibv_qp_init_attr a = qp_init_attr(t, cq_.get(), cap, srq);
		Qp qp(ibv_create_qp(pd_.get(), &a));
		if (got)
			*got = a.cap;
		return qp;
	}

	// create_qp expecting failure: its errno, 0 if it succeeded.
	int create_fails(ibv_qp_type t, ibv_qp_cap cap)
	{
		return create_errno([&] { return create(t, cap); });
	}

	// RESET -> INIT: RC and UC take access flags, UD a qkey.
	Step init_step(ibv_qp_type t)
	{
		Step s;
		s.attr.qp_state = IBV_QPS_INIT;
		s.attr.pkey_index = 0;
		s.attr.port_num = 1;
		s.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (t == IBV_QPT_UD) {
			s.attr.qkey = kQkey;
			s.mask |= IBV_QP_QKEY;
		} else {
			s.attr.qp_access_flags = t == IBV_QPT_RC ? kRcAccess :
								  kUcAccess;
			s.mask |= IBV_QP_ACCESS_FLAGS;
		}
		return s;
	}

	// INIT -> RTR: connected QPs get a path to @qp itself (RoCEv2: a GRH
	// to GID 0 of port 1), UD QPs nothing but the state.
	Step rtr_step(ibv_qp *qp)
	{
		Step s;
		s.attr.qp_state = IBV_QPS_RTR;
		s.mask = IBV_QP_STATE;
		if (qp->qp_type == IBV_QPT_UD)
			return s;
		s.attr.ah_attr = loopback_ah_attr(ctx_.get());
		s.attr.path_mtu = IBV_MTU_1024;
		s.attr.dest_qp_num = qp->qp_num;
		s.attr.rq_psn = kRqPsn;
		s.mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC) {
			s.attr.max_dest_rd_atomic = 4;
			s.attr.min_rnr_timer = 12;
			s.mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER;
		}
		return s;
	}

	// RTR -> RTS: everyone takes an SQ PSN, RC its timers and retries.
	Step rts_step(ibv_qp_type t)
	{
		Step s;
		s.attr.qp_state = IBV_QPS_RTS;
		s.attr.sq_psn = kSqPsn;
		s.mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (t == IBV_QPT_RC) {
			s.attr.timeout = 14;
			s.attr.retry_cnt = 7;
			s.attr.rnr_retry = 7;
			s.attr.max_rd_atomic = 4;
			s.mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return s;
	}

	// The step out of @from (RESET, INIT or RTR) that walk() takes.
	Step next_step(ibv_qp *qp, ibv_qp_state from)
	{
		switch (from) {
		case IBV_QPS_RESET:
			return init_step(qp->qp_type);
		case IBV_QPS_INIT:
			return rtr_step(qp);
		default:
			return rts_step(qp->qp_type);
		}
	}

	Step to_state(ibv_qp_state st)
	{
		Step s;
		s.attr.qp_state = st;
		s.mask = IBV_QP_STATE;
		return s;
	}

	static int modify(ibv_qp *qp, Step s)
	{
		return ibv_modify_qp(qp, &s.attr, s.mask);
	}

	// The state the kernel reports; -1 if the query fails.
	static int state(ibv_qp *qp)
	{
		ibv_qp_attr a{};
		ibv_qp_init_attr ia{};
		if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
			return -1;
		return a.qp_state;
	}

	// Take a QP in RESET to @target (RESET, INIT, RTR or RTS).
	void walk(ibv_qp *qp, ibv_qp_state target)
	{
		for (int s = IBV_QPS_RESET; s < target; s++) {
			const ibv_qp_state next = ibv_qp_state(s + 1);
			ASSERT_EQ(modify(qp, next_step(qp, ibv_qp_state(s))), 0)
				<< state_name(s) << "->" << state_name(next);
			ASSERT_EQ(qp->state, next);
			ASSERT_EQ(state(qp), next);
		}
	}

	// Walk to RTS and check that ibv_query_qp returns what was set.
	void walk_and_query(ibv_qp_type t, ibv_srq *srq = nullptr);

	Cq cq_;
	ibv_gid gid_{};
};

void QpTest::walk_and_query(ibv_qp_type t, ibv_srq *srq)
{
	SCOPED_TRACE(type_name(t) + (srq ? " on an SRQ" : ""));
	Qp qp = create(t, qp_cap(32, 32, 2, 2), srq);
	ASSERT_TRUE(qp) << strerror(errno);
	ASSERT_NO_FATAL_FAILURE(walk(qp.get(), IBV_QPS_RTS));

	const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY | IBV_QP_AV |
			 IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
			 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_CAP;
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	ASSERT_EQ(ibv_query_qp(qp.get(), &a, mask, &ia), 0);
	EXPECT_EQ(a.qp_state, IBV_QPS_RTS);
	EXPECT_EQ(a.pkey_index, 0);
	EXPECT_EQ(a.port_num, 1);
	EXPECT_EQ(a.sq_psn, kSqPsn);
	EXPECT_EQ(ia.qp_type, t);
	EXPECT_EQ(ia.srq, srq);
	EXPECT_EQ(ia.send_cq, cq_.get());
	EXPECT_GE(ia.cap.max_send_wr, 32u);
	EXPECT_GE(ia.cap.max_send_sge, 2u);
	if (t == IBV_QPT_UD) {
		EXPECT_EQ(a.qkey, kQkey);
		return;
	}
	EXPECT_EQ(a.qp_access_flags, t == IBV_QPT_RC ? kRcAccess : kUcAccess);
	EXPECT_EQ(a.path_mtu, IBV_MTU_1024);
	EXPECT_EQ(a.dest_qp_num, qp->qp_num);
	EXPECT_EQ(a.rq_psn, kRqPsn);
	EXPECT_EQ(a.ah_attr.is_global, 1);
	EXPECT_EQ(a.ah_attr.port_num, 1);
	EXPECT_EQ(a.ah_attr.grh.sgid_index, 0);
	EXPECT_EQ(a.ah_attr.grh.hop_limit, 64);
	EXPECT_EQ(memcmp(a.ah_attr.grh.dgid.raw, gid_.raw, 16), 0);
	if (t == IBV_QPT_RC) {
		EXPECT_EQ(a.max_dest_rd_atomic, 4);
		EXPECT_EQ(a.min_rnr_timer, 12);
		EXPECT_EQ(a.timeout, 14);
		EXPECT_EQ(a.retry_cnt, 7);
		EXPECT_EQ(a.rnr_retry, 7);
		EXPECT_EQ(a.max_rd_atomic, 4);
	}
	EXPECT_EQ(ibv_destroy_qp(qp.release()), 0) << "destroying in RTS";
}

TEST_F(QpTest, CreateEveryTypeWithVariousCaps)
{
	const ibv_qp_cap caps[] = {
		qp_cap(1, 1, 1, 1),
		qp_cap(16, 16, 2, 2),
		qp_cap(100, 50, 4, 3, 64),
		qp_cap(255, 257, 5, 7, 100),
		qp_cap(1024, 1024, 16, 16),
		qp_cap(4096, 128, 1, 16, kMaxInline),
		qp_cap(attr_.max_qp_wr, attr_.max_qp_wr, attr_.max_sge,
		       attr_.max_sge, kMaxInline),
	};
	for (ibv_qp_type t : kTypes) {
		for (const ibv_qp_cap &cap : caps) {
			SCOPED_TRACE(type_name(t) + ": " + cap_str(cap));
			ibv_qp_cap got{};
			Qp qp = create(t, cap, nullptr, &got);
			ASSERT_TRUE(qp) << strerror(errno);
			EXPECT_EQ(qp->qp_type, t);
			EXPECT_EQ(qp->state, IBV_QPS_RESET);
			EXPECT_EQ(qp->pd, pd_.get());
			EXPECT_EQ(qp->send_cq, cq_.get());
			EXPECT_EQ(qp->recv_cq, cq_.get());
			EXPECT_GT(qp->qp_num, 1u);
			EXPECT_LT(qp->qp_num, 1u << 24);
			expect_caps(got, cap, attr_, false);

			// The kernel reports the same capacities later.
			ibv_qp_attr a{};
			ibv_qp_init_attr ia{};
			ASSERT_EQ(ibv_query_qp(qp.get(), &a,
					       IBV_QP_STATE | IBV_QP_CAP, &ia), 0);
			EXPECT_EQ(a.qp_state, IBV_QPS_RESET);
			EXPECT_EQ(ia.qp_type, t);
			EXPECT_EQ(ia.cap.max_send_wr, got.max_send_wr);
			EXPECT_EQ(ia.cap.max_recv_wr, got.max_recv_wr);
			EXPECT_EQ(ia.cap.max_send_sge, got.max_send_sge);
			EXPECT_EQ(ia.cap.max_recv_sge, got.max_recv_sge);
			EXPECT_EQ(ia.cap.max_inline_data, got.max_inline_data);
			EXPECT_EQ(ibv_destroy_qp(qp.release()), 0);
		}
	}
}

// ERRORS: max_*_wr, max_*_sge and max_inline_data beyond the device are
// EINVAL; exactly at the limit is fine.
TEST_F(QpTest, CapsBeyondTheDeviceAreEinval)
{
	const uint32_t wr = attr_.max_qp_wr, sge = attr_.max_sge;
	ASSERT_GT(wr, 0u);
	ASSERT_GT(sge, 0u);
	for (ibv_qp_type t : kTypes) {
		SCOPED_TRACE(type_name(t));
		EXPECT_EQ(create_fails(t, qp_cap(wr, 1, 1, 1)), 0);
		EXPECT_EQ(create_fails(t, qp_cap(wr + 1, 1, 1, 1)), EINVAL);
		EXPECT_EQ(create_fails(t, qp_cap(1, wr, 1, 1)), 0);
		EXPECT_EQ(create_fails(t, qp_cap(1, wr + 1, 1, 1)), EINVAL);
		EXPECT_EQ(create_fails(t, qp_cap(1, 1, sge, 1)), 0);
		EXPECT_EQ(create_fails(t, qp_cap(1, 1, sge + 1, 1)), EINVAL);
		EXPECT_EQ(create_fails(t, qp_cap(1, 1, 1, sge)), 0);
		EXPECT_EQ(create_fails(t, qp_cap(1, 1, 1, sge + 1)), EINVAL);
		EXPECT_EQ(create_fails(t, qp_cap(1, 1, 1, 1, kMaxInline)), 0);
		EXPECT_EQ(create_fails(t, qp_cap(1, 1, 1, 1, kMaxInline + 1)),
			  EINVAL);
		EXPECT_EQ(create_fails(t, qp_cap(UINT32_MAX, 1, 1, 1)), EINVAL);
		EXPECT_EQ(create_fails(t, qp_cap(1, 1, 1, 1, UINT32_MAX)),
			  EINVAL);
	}
}

// ERRORS: QP types other than RC, UC, UD and XRC are EOPNOTSUPP from user
// space.
TEST_F(QpTest, UnsupportedTypesAreEopnotsupp)
{
	for (ibv_qp_type t : { IBV_QPT_RAW_PACKET, IBV_QPT_DRIVER }) {
		SCOPED_TRACE(type_name(t));
		EXPECT_EQ(create_fails(t, qp_cap(16, 16, 1, 1)), EOPNOTSUPP);
	}
}

// ERRORS: QP create flags are EOPNOTSUPP.
TEST_F(QpTest, CreateFlagsAreEopnotsupp)
{
	// An RC QP with create flags @flags, if any.
	auto attr = [&](uint32_t flags) {
		ibv_qp_init_attr_ex ax{};
		ax.qp_type = IBV_QPT_RC;
		ax.send_cq = cq_.get();
		ax.recv_cq = cq_.get();
		ax.cap = qp_cap(16, 16, 1, 1);
		ax.pd = pd_.get();
		ax.comp_mask = IBV_QP_INIT_ATTR_PD;
		if (flags) {
			ax.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
			ax.create_flags = flags;
		}
		return ax;
	};
	for (uint32_t flag : { uint32_t(IBV_QP_CREATE_SCATTER_FCS),
			       uint32_t(IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) }) {
		ibv_qp_init_attr_ex ax = attr(flag);
		errno = 0;
		Qp qp(ibv_create_qp_ex(ctx_.get(), &ax));
		EXPECT_FALSE(qp) << "flag " << flag;
		EXPECT_EQ(errno, EOPNOTSUPP) << "flag " << flag << ": "
					     << strerror(errno);
	}
	// Without flags the same request is fine.
	ibv_qp_init_attr_ex ax = attr(0);
	Qp qp(ibv_create_qp_ex(ctx_.get(), &ax));
	EXPECT_TRUE(qp) << strerror(errno);
}

// QP 0 and 1 are never handed to user QPs (the GSI QP is QP 1), and
// numbers are unique among live QPs.
TEST_F(QpTest, QpNumbersAreNeverZeroOrOne)
{
	std::vector<Qp> live;
	std::set<uint32_t> nums;
	for (int i = 0; i < 96; i++) {
		live.push_back(create(kTypes[i % 3], qp_cap(1, 1, 1, 1)));
		ASSERT_TRUE(live.back()) << "QP " << i << ": " << strerror(errno);
		uint32_t n = live.back()->qp_num;
		EXPECT_GT(n, 1u);
		EXPECT_LT(n, 1u << 24);
		EXPECT_TRUE(nums.insert(n).second) << "QP number " << n
						   << " given twice";
	}
	for (int i = 0; i < 256; i++) {
		Qp qp = create(kTypes[i % 3], qp_cap(1, 1, 1, 1));
		ASSERT_TRUE(qp) << "QP " << i << ": " << strerror(errno);
		EXPECT_GT(qp->qp_num, 1u);
		EXPECT_LT(qp->qp_num, 1u << 24);
		EXPECT_EQ(nums.count(qp->qp_num), 0u)
			<< "QP number " << qp->qp_num << " of a live QP reused";
	}
}

TEST_F(QpTest, RcWalksToRtsAndQueriesBack)
{
	walk_and_query(IBV_QPT_RC);
}

TEST_F(QpTest, UcWalksToRtsAndQueriesBack)
{
	walk_and_query(IBV_QPT_UC);
}

TEST_F(QpTest, UdWalksToRtsAndQueriesBack)
{
	walk_and_query(IBV_QPT_UD);
}

// What UCX's rc_verbs passes at RTR on RoCE: DLID 49152, traffic class
// 106 and flow label ~0.  The flow label is 20 bits: the QP keeps the low
// 20 (rxe keeps all 32 and sends the low 20).
TEST_F(QpTest, RtrTakesWhatUcxPasses)
{
	for (ibv_qp_type t : { IBV_QPT_RC, IBV_QPT_UC }) {
		SCOPED_TRACE(type_name(t));
		Qp qp = create(t);
		ASSERT_TRUE(qp) << strerror(errno);
		ASSERT_EQ(modify(qp.get(), init_step(t)), 0);
		Step s = rtr_step(qp.get());
		s.attr.ah_attr.dlid = 49152;
		s.attr.ah_attr.grh.traffic_class = 106;
		s.attr.ah_attr.grh.flow_label = 0xffffffff;
		ASSERT_EQ(modify(qp.get(), s), 0);
		ibv_qp_attr a{};
		ibv_qp_init_attr ia{};
		ASSERT_EQ(ibv_query_qp(qp.get(), &a, IBV_QP_AV, &ia), 0);
		EXPECT_EQ(a.ah_attr.grh.traffic_class, 106);
		EXPECT_EQ(a.ah_attr.grh.flow_label & 0xfffff, 0xfffffu);
	}
}

// ERRORS: a transition the IBTA forbids is EINVAL, and leaves the QP in
// its state.
TEST_F(QpTest, InvalidTransitionsAreEinval)
{
	for (ibv_qp_type t : kTypes) {
		SCOPED_TRACE(type_name(t));
		Qp qp = create(t);
		ASSERT_TRUE(qp) << strerror(errno);

		EXPECT_EQ(modify(qp.get(), rts_step(t)), EINVAL) << "RESET->RTS";
		EXPECT_EQ(modify(qp.get(), rtr_step(qp.get())), EINVAL)
			<< "RESET->RTR";
		EXPECT_EQ(state(qp.get()), IBV_QPS_RESET);
		EXPECT_EQ(qp->state, IBV_QPS_RESET);

		ASSERT_NO_FATAL_FAILURE(walk(qp.get(), IBV_QPS_INIT));
		EXPECT_EQ(modify(qp.get(), rts_step(t)), EINVAL) << "INIT->RTS";
		EXPECT_EQ(state(qp.get()), IBV_QPS_INIT);

		ASSERT_EQ(modify(qp.get(), rtr_step(qp.get())), 0);
		EXPECT_EQ(modify(qp.get(), init_step(t)), EINVAL) << "RTR->INIT";
		EXPECT_EQ(state(qp.get()), IBV_QPS_RTR);

		ASSERT_EQ(modify(qp.get(), rts_step(t)), 0);
		EXPECT_EQ(modify(qp.get(), rtr_step(qp.get())), EINVAL)
			<< "RTS->RTR";
		EXPECT_EQ(state(qp.get()), IBV_QPS_RTS);

		ASSERT_EQ(modify(qp.get(), to_state(IBV_QPS_ERR)), 0);
		EXPECT_EQ(modify(qp.get(), init_step(t)), EINVAL) << "ERR->INIT";
		EXPECT_EQ(modify(qp.get(), rts_step(t)), EINVAL) << "ERR->RTS";
		EXPECT_EQ(state(qp.get()), IBV_QPS_ERR);

		// Not a state at all.
		EXPECT_EQ(modify(qp.get(), to_state(ibv_qp_state(7))), EINVAL);
		EXPECT_EQ(state(qp.get()), IBV_QPS_ERR);
	}
}

// ERRORS: an attribute mask the IBTA forbids for the transition and QP
// type -- a required attribute missing or one the type does not have --
// is EINVAL.
TEST_F(QpTest, MissingOrForeignAttributesAreEinval)
{
	// The valid step out of @from, without the attributes @drop and with
	// the attributes @add, which @set gives their values.
	struct Case {
		ibv_qp_type type;
		ibv_qp_state from;
		const char *what;
		int drop, add;
		Tweak set;
	};
	const std::vector<Case> cases = {
		{ IBV_QPT_RC, IBV_QPS_RESET, "INIT without a port",
		  IBV_QP_PORT, 0, nullptr },
		{ IBV_QPT_RC, IBV_QPS_RESET, "INIT with a qkey", 0, IBV_QP_QKEY,
		  [](ibv_qp_attr &a) { a.qkey = kQkey; } },
		{ IBV_QPT_RC, IBV_QPS_INIT, "RTR without a path", IBV_QP_AV, 0,
		  nullptr },
		{ IBV_QPT_RC, IBV_QPS_INIT, "RTR without max_dest_rd_atomic",
		  IBV_QP_MAX_DEST_RD_ATOMIC, 0, nullptr },
		{ IBV_QPT_RC, IBV_QPS_RTR, "RTS without a timeout",
		  IBV_QP_TIMEOUT, 0, nullptr },
		{ IBV_QPT_UC, IBV_QPS_INIT, "UC RTR with max_dest_rd_atomic", 0,
		  IBV_QP_MAX_DEST_RD_ATOMIC,
		  [](ibv_qp_attr &a) { a.max_dest_rd_atomic = 1; } },
		{ IBV_QPT_UC, IBV_QPS_RTR, "UC RTS with a timeout", 0,
		  IBV_QP_TIMEOUT, [](ibv_qp_attr &a) { a.timeout = 14; } },
		{ IBV_QPT_UD, IBV_QPS_RESET, "UD INIT without a qkey",
		  IBV_QP_QKEY, 0, nullptr },
		{ IBV_QPT_UD, IBV_QPS_RESET, "UD INIT with access flags", 0,
		  IBV_QP_ACCESS_FLAGS, [](ibv_qp_attr &a) {
			  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
		  } },
		{ IBV_QPT_UD, IBV_QPS_INIT, "UD RTR with a path", 0, IBV_QP_AV,
		  [this](ibv_qp_attr &a) {
			  a.ah_attr = loopback_ah_attr(ctx_.get());
		  } },
	};
	for (const Case &c : cases) {
		SCOPED_TRACE(c.what);
		Qp qp = create(c.type);
		ASSERT_TRUE(qp) << strerror(errno);
		ASSERT_NO_FATAL_FAILURE(walk(qp.get(), c.from));
		Step s = next_step(qp.get(), c.from);
		s.mask = (s.mask & ~c.drop) | c.add;
		if (c.set)
			c.set(s.attr);
		EXPECT_EQ(modify(qp.get(), s), EINVAL);
		EXPECT_EQ(state(qp.get()), c.from);
	}
}

/*
 * ERRORS: attributes out of range are EINVAL (path MTU, PSNs > 2^24-1,
 * timeout > 31, retry or RNR retry > 7, RNR timer > 31, rd_atomic > 128,
 * pkey index, port, unknown access bits, dest QPN > 2^24-1), and leave the
 * QP in its state; the largest valid values are accepted and read back.
 */
TEST_F(QpTest, OutOfRangeAttributesAreEinval)
{
	// The ABI's bound for rd_atomic is the device's.
	ASSERT_EQ(attr_.max_qp_rd_atom, 128);
	ASSERT_EQ(attr_.max_qp_init_rd_atom, 128);

	struct Bad {
		const char *what;
		Tweak tweak;
	};
	// Each of @bad applied to the step out of @from.
	auto expect_all_fail = [&](ibv_qp *qp, ibv_qp_state from,
				   const std::vector<Bad> &bad) {
		for (const Bad &b : bad) {
			SCOPED_TRACE(b.what);
			Step s = next_step(qp, from);
			b.tweak(s.attr);
			EXPECT_EQ(modify(qp, s), EINVAL);
			EXPECT_EQ(state(qp), from);
		}
	};

	for (ibv_qp_type t : kTypes) {
		SCOPED_TRACE(type_name(t));
		Qp qp = create(t);
		ASSERT_TRUE(qp) << strerror(errno);
		ibv_qp *q = qp.get();

		std::vector<Bad> init_bad = {
			{ "pkey_index 1", [](ibv_qp_attr &a) { a.pkey_index = 1; } },
			{ "port_num 2", [](ibv_qp_attr &a) { a.port_num = 2; } },
			{ "port_num 0", [](ibv_qp_attr &a) { a.port_num = 0; } },
		};
		if (t != IBV_QPT_UD)
			init_bad.push_back({ "unknown access bit",
					     [](ibv_qp_attr &a) {
						     a.qp_access_flags |= 1 << 15;
					     } });
		expect_all_fail(q, IBV_QPS_RESET, init_bad);
		ASSERT_EQ(modify(q, init_step(t)), 0);

		if (t != IBV_QPT_UD) {
			std::vector<Bad> rtr_bad = {
				{ "path_mtu 0", [](ibv_qp_attr &a) {
					  a.path_mtu = ibv_mtu(0); } },
				{ "path_mtu 6", [](ibv_qp_attr &a) {
					  a.path_mtu = ibv_mtu(6); } },
				{ "dest_qp_num 2^24", [](ibv_qp_attr &a) {
					  a.dest_qp_num = 1u << 24; } },
				{ "path port_num 2", [](ibv_qp_attr &a) {
					  a.ah_attr.port_num = 2; } },
			};
			if (t == IBV_QPT_RC) {
				rtr_bad.push_back({ "max_dest_rd_atomic 129",
						    [](ibv_qp_attr &a) {
							    a.max_dest_rd_atomic = 129;
						    } });
				rtr_bad.push_back({ "min_rnr_timer 32",
						    [](ibv_qp_attr &a) {
							    a.min_rnr_timer = 32;
						    } });
			}
			expect_all_fail(q, IBV_QPS_INIT, rtr_bad);
		}
		// The largest valid values.
		Step rtr = rtr_step(q);
		if (t != IBV_QPT_UD) {
			rtr.attr.dest_qp_num = (1u << 24) - 1;
			rtr.attr.rq_psn = (1u << 24) - 1;
		}
		if (t == IBV_QPT_RC) {
			rtr.attr.max_dest_rd_atomic = 128;
			rtr.attr.min_rnr_timer = 31;
		}
		ASSERT_EQ(modify(q, rtr), 0);

		std::vector<Bad> rts_bad;
		if (t == IBV_QPT_RC) {
			rts_bad.push_back({ "timeout 32", [](ibv_qp_attr &a) {
						    a.timeout = 32; } });
			rts_bad.push_back({ "retry_cnt 8", [](ibv_qp_attr &a) {
						    a.retry_cnt = 8; } });
			rts_bad.push_back({ "rnr_retry 8", [](ibv_qp_attr &a) {
						    a.rnr_retry = 8; } });
			rts_bad.push_back({ "max_rd_atomic 129",
					    [](ibv_qp_attr &a) {
						    a.max_rd_atomic = 129; } });
		}
		expect_all_fail(q, IBV_QPS_RTR, rts_bad);
		Step rts = rts_step(t);
		rts.attr.sq_psn = (1u << 24) - 1;
		if (t == IBV_QPT_RC) {
			rts.attr.timeout = 31;
			rts.attr.retry_cnt = 7;
			rts.attr.rnr_retry = 7;
			rts.attr.max_rd_atomic = 128;
		}
		ASSERT_EQ(modify(q, rts), 0);

		ibv_qp_attr a{};
		ibv_qp_init_attr ia{};
		ASSERT_EQ(ibv_query_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				       IBV_QP_RQ_PSN | IBV_QP_DEST_QPN |
				       IBV_QP_TIMEOUT | IBV_QP_MAX_QP_RD_ATOMIC |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER, &ia), 0);
		EXPECT_EQ(a.qp_state, IBV_QPS_RTS);
		EXPECT_EQ(a.sq_psn, (1u << 24) - 1);
		if (t != IBV_QPT_UD) {
			EXPECT_EQ(a.rq_psn, (1u << 24) - 1);
			EXPECT_EQ(a.dest_qp_num, (1u << 24) - 1);
		}
		if (t == IBV_QPT_RC) {
			EXPECT_EQ(a.timeout, 31);
			EXPECT_EQ(a.max_rd_atomic, 128);
			EXPECT_EQ(a.max_dest_rd_atomic, 128);
			EXPECT_EQ(a.min_rnr_timer, 31);
		}
	}
}

// PSNs are 24 bits.  The RDMA core masks larger ones before the driver
// sees them (verbs.c, _ib_modify_qp: "rq_psn overflow, masking to 24
// bits"), so the modify succeeds with the masked value.
TEST_F(QpTest, PsnsAreMaskedTo24BitsByTheCore)
{
	Qp qp = create(IBV_QPT_RC);
	ASSERT_TRUE(qp) << strerror(errno);
	ASSERT_NO_FATAL_FAILURE(walk(qp.get(), IBV_QPS_INIT));
	Step rtr = rtr_step(qp.get());
	rtr.attr.rq_psn = (1u << 24) | 0x55;
	ASSERT_EQ(modify(qp.get(), rtr), 0);
	Step rts = rts_step(IBV_QPT_RC);
	rts.attr.sq_psn = 0xff000066;
	ASSERT_EQ(modify(qp.get(), rts), 0);

	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	ASSERT_EQ(ibv_query_qp(qp.get(), &a, IBV_QP_RQ_PSN | IBV_QP_SQ_PSN,
			       &ia), 0);
	EXPECT_EQ(a.rq_psn, 0x55u);
	EXPECT_EQ(a.sq_psn, 0x66u);
}

// Any state but RESET may go to ERR (IBTA 10.3.1: RESET -> ERR is not a
// transition), any state to RESET, and a reset QP starts over.
TEST_F(QpTest, ErrorAndResetFromEveryState)
{
	const ibv_qp_state states[] = { IBV_QPS_RESET, IBV_QPS_INIT,
					IBV_QPS_RTR, IBV_QPS_RTS };
	for (ibv_qp_type t : kTypes) {
		for (ibv_qp_state from : states) {
			SCOPED_TRACE(type_name(t) + " from " + state_name(from));
			Qp qp = create(t);
			ASSERT_TRUE(qp) << strerror(errno);

			// Via ERR.
			ASSERT_NO_FATAL_FAILURE(walk(qp.get(), from));
			if (from == IBV_QPS_RESET) {
				EXPECT_EQ(modify(qp.get(),
						 to_state(IBV_QPS_ERR)), EINVAL);
				EXPECT_EQ(state(qp.get()), IBV_QPS_RESET);
				ASSERT_NO_FATAL_FAILURE(walk(qp.get(),
							     IBV_QPS_INIT));
			}
			ASSERT_EQ(modify(qp.get(), to_state(IBV_QPS_ERR)), 0);
			EXPECT_EQ(state(qp.get()), IBV_QPS_ERR);
			EXPECT_EQ(qp->state, IBV_QPS_ERR);
			ASSERT_EQ(modify(qp.get(), to_state(IBV_QPS_RESET)), 0);
			EXPECT_EQ(state(qp.get()), IBV_QPS_RESET);
			ASSERT_NO_FATAL_FAILURE(walk(qp.get(), IBV_QPS_RTS));

			// Straight to RESET.
			ASSERT_EQ(modify(qp.get(), to_state(IBV_QPS_RESET)), 0);
			EXPECT_EQ(state(qp.get()), IBV_QPS_RESET);
			ASSERT_NO_FATAL_FAILURE(walk(qp.get(), from));
			ASSERT_EQ(modify(qp.get(), to_state(IBV_QPS_RESET)), 0);
			EXPECT_EQ(state(qp.get()), IBV_QPS_RESET);
			ASSERT_NO_FATAL_FAILURE(walk(qp.get(), IBV_QPS_RTS));
			EXPECT_EQ(ibv_destroy_qp(qp.release()), 0);
		}
	}
}

// A QP whose receives come from an SRQ: created without RQ sizes, it
// walks the same state machine.
TEST_F(QpTest, QpOnAnSrq)
{
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 64;
	sa.attr.max_sge = 2;
	Srq srq(ibv_create_srq(pd_.get(), &sa));
	ASSERT_TRUE(srq) << strerror(errno);

	for (ibv_qp_type t : kTypes) {
		SCOPED_TRACE(type_name(t));
		ibv_qp_cap got{};
		Qp qp = create(t, qp_cap(32, 0, 2, 0), srq.get(), &got);
		ASSERT_TRUE(qp) << strerror(errno);
		EXPECT_EQ(qp->srq, srq.get());
		expect_caps(got, qp_cap(32, 0, 2, 0), attr_, true);
		ASSERT_EQ(ibv_destroy_qp(qp.release()), 0);
		walk_and_query(t, srq.get());
	}
	EXPECT_EQ(ibv_destroy_srq(srq.release()), 0);
}

// max_qp counts every QP on the device, the GSI QP included.
TEST_F(QpTest, MaxQpIsEnforcedAtTheEdge)
{
	if (on_debug_kernel())
		GTEST_SKIP() << "16384 QPs each pin and map two rings (minutes "
				"under KASAN in TCG, as the MR sweep); the edge "
				"runs on the Debian kernels";
	DeviceUsage used = device_usage();
	ASSERT_TRUE(used.ok()) << used.error;
	EXPECT_GE(used.qp, 1) << "the GSI QP is missing: " << used.str();
	expect_limit_edge("QP", attr_.max_qp - used.qp,
			  [&] { return create(IBV_QPT_RC, qp_cap(1, 1, 1, 1)); });
}

} // namespace
