// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Data-path conformance, the operations: every opcode on every QP type it
// exists on (RC, UC, UD), through ibv_post_send and through the ibv_wr_*
// API, with the completion on both sides checked field by field and the
// data compared byte by byte (guard bytes around it untouched).  Modes:
// inline data, multiple SGEs, fences, signaled and unsignaled WRs,
// solicited events on a completion channel, receives from an SRQ and its
// limit event, memory windows.  Device-neutral (runs on rxe).
#include "datapath.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

constexpr uint8_t kGuard = 0xEE;

class DataOps : public DataTest, public ::testing::WithParamInterface<Api> {
protected:
	QpPairOptions opts(ibv_qp_type t)
	{
		QpPairOptions o;
		o.type = t;
		o.api = GetParam();
		return o;
	}

	void sends(ibv_qp_type t, ibv_wr_opcode op);
	void writes(ibv_qp_type t, ibv_wr_opcode op);
	void bind_type2(const QpPair &p, ibv_mw *mw, const Region &mr,
			size_t off, size_t len, uint32_t *rkey);
};

// Sizes of messages: empty, tiny, one MTU, several packets; UD: up to
// one MTU.
std::vector<uint32_t> message_sizes(ibv_qp_type t, uint32_t mtu)
{
	if (t == IBV_QPT_UD)
		return { 0, 1, 61, mtu };
	return { 0, 1, 61, mtu, 3 * 4096 + 17 };
}

/*
 * a sends each size to b (SEND or SEND_WITH_IMM); b's receive buffer is
 * larger than the message and pre-filled with guard bytes.
 */
void DataOps::sends(ibv_qp_type t, ibv_wr_opcode op)
{
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, opts(t)));
	const bool ud = t == IBV_QPT_UD;
	const uint32_t grh = ud ? kGrhBytes : 0;
	const uint32_t room = 4 * 4096;
	Region src = region(room), dst = region(room + grh + 64);
	ASSERT_TRUE(src && dst) << strerror(errno);
	fill_pattern(src.data(), room, 1);

	uint64_t id = 0;
	for (uint32_t len : message_sizes(t, path_.mtu_bytes())) {
		SCOPED_TRACE("message of " + std::to_string(len) + " bytes");
		id++;
		memset(dst.data(), kGuard, dst.size());
		ASSERT_EQ(post_recv(p.b(), 1000 + id,
				    { dst.sge(0, grh + room) }), 0);
		SendWr w = send_wr(id, op, {});
		if (len)
			w.sge = { src.sge(id, len) };
		w.imm = htonl(0xabc00000u + uint32_t(id));
		ASSERT_EQ(p.post_a({ p.to_b(w) }), 0);

		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, id, IBV_WC_SEND, p.a());
		ASSERT_ONE_WC(p.cq_b(), wc);
		RecvExpect e;
		e.wr_id = 1000 + id;
		e.byte_len = grh + len;
		e.qp = p.b();
		e.src = ud ? p.a() : nullptr;
		if (op == IBV_WR_SEND_WITH_IMM) {
			e.flags = IBV_WC_WITH_IMM;
			e.imm_or_inv = w.imm;
		}
		expect_recv_wc(wc, e);
		EXPECT_EQ(first_diff(dst.data() + grh, src.data() + id, len),
			  -1);
		EXPECT_TRUE(all_bytes(dst.data() + grh + len, 64, kGuard))
			<< "written past the message";
		if (ud)
			expect_grh(dst.data(), path_.gid);
		// RoCE has no SL: urdma reports the frame's type there as
		// mlx5 does (RoCEv2, IPv4 or IPv6), which UCX's ud_verbs
		// needs to find the destination in the GRH area.
		if (ud && device_is_urdma()) {
			EXPECT_EQ(wc.sl, gid_is_v4_mapped(path_.gid) ? 0xa : 0x9)
				<< "sl: the RoCE frame type";
		}
	}
	EXPECT_TRUE(poll_quiet(p.cq_a(), 50).empty());
	EXPECT_TRUE(poll_quiet(p.cq_b(), 50).empty());
	expect_state(p.a(), IBV_QPS_RTS, "a");
	expect_state(p.b(), IBV_QPS_RTS, "b");
}

/*
 * a writes each size into b's memory at an odd offset (RDMA_WRITE or
 * RDMA_WRITE_WITH_IMM).  With immediate data b consumes a receive whose
 * buffer stays untouched; without it b sees no completion.
 */
void DataOps::writes(ibv_qp_type t, ibv_wr_opcode op)
{
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, opts(t)));
	const bool imm = op == IBV_WR_RDMA_WRITE_WITH_IMM;
	const uint32_t room = 4 * 4096;
	Region src = region(room), dst = region(room + 256),
	       sink = region(256);
	ASSERT_TRUE(src && dst && sink) << strerror(errno);
	fill_pattern(src.data(), room, 2);
	memset(sink.data(), kGuard, sink.size());

	uint64_t id = 0;
	for (uint32_t len : message_sizes(t, path_.mtu_bytes())) {
		if (!len && !imm)
			continue;  // a zero-length WRITE shows nothing
		SCOPED_TRACE("write of " + std::to_string(len) + " bytes");
		id++;
		const size_t off = 64 + 3 * id;
		memset(dst.data(), kGuard, dst.size());
		if (imm) {
			ASSERT_EQ(post_recv(p.b(), 2000 + id,
					    { sink.sge(0, 256) }), 0);
		}
		SendWr w = rdma_wr(id, op, {}, dst.addr(off), dst.rkey());
		if (len)
			w.sge = { src.sge(id, len) };
		w.imm = htonl(0x5eed0000u + uint32_t(id));
		ASSERT_EQ(p.post_a({ w }), 0);

		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, id, IBV_WC_RDMA_WRITE, p.a());
		if (imm) {
			ASSERT_ONE_WC(p.cq_b(), wc);
			RecvExpect e;
			e.wr_id = 2000 + id;
			e.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
			e.byte_len = len;
			e.flags = IBV_WC_WITH_IMM;
			e.imm_or_inv = w.imm;
			e.qp = p.b();
			expect_recv_wc(wc, e);
		}
		// RC: the ack says the data is placed.  UC: it may still be
		// on its way when the sender completes.
		if (t == IBV_QPT_RC) {
			EXPECT_EQ(first_diff(dst.data() + off,
					     src.data() + id, len), -1);
		} else {
			EXPECT_TRUE(wait_for_bytes(dst.data() + off,
						   src.data() + id, len));
		}
		EXPECT_TRUE(all_bytes(dst.data(), off, kGuard))
			<< "written before the target";
		EXPECT_TRUE(all_bytes(dst.data() + off + len, 64, kGuard))
			<< "written past the target";
	}
	EXPECT_TRUE(all_bytes(sink.data(), sink.size(), kGuard))
		<< "RDMA_WRITE_WITH_IMM wrote into the receive buffer";
	EXPECT_TRUE(poll_quiet(p.cq_b(), 50).empty());
	expect_state(p.a(), IBV_QPS_RTS, "a");
}

TEST_P(DataOps, RcSend) { sends(IBV_QPT_RC, IBV_WR_SEND); }
TEST_P(DataOps, RcSendWithImm) { sends(IBV_QPT_RC, IBV_WR_SEND_WITH_IMM); }
TEST_P(DataOps, RcRdmaWrite) { writes(IBV_QPT_RC, IBV_WR_RDMA_WRITE); }
TEST_P(DataOps, RcRdmaWriteWithImm)
{
	writes(IBV_QPT_RC, IBV_WR_RDMA_WRITE_WITH_IMM);
}
TEST_P(DataOps, UcSend) { sends(IBV_QPT_UC, IBV_WR_SEND); }
TEST_P(DataOps, UcSendWithImm) { sends(IBV_QPT_UC, IBV_WR_SEND_WITH_IMM); }
TEST_P(DataOps, UcRdmaWrite) { writes(IBV_QPT_UC, IBV_WR_RDMA_WRITE); }
TEST_P(DataOps, UcRdmaWriteWithImm)
{
	writes(IBV_QPT_UC, IBV_WR_RDMA_WRITE_WITH_IMM);
}
// The IBTA has no SEND with Invalidate on UC (nor a UC wire opcode for
// it): post_send refuses it (EINVAL), and a UC QP cannot ask for its
// builder (EOPNOTSUPP, as for any send op the QP type lacks).
TEST_P(DataOps, UcSendWithInvalidateIsRefused)
{
	QpPairOptions o = opts(IBV_QPT_UC);
	QpPair p;
	if (GetParam() == Api::WrApi) {
		o.extra_send_ops = IBV_QP_EX_WITH_SEND_WITH_INV;
		o.path = &path_;
		std::string err;
		EXPECT_FALSE(p.init(ctx_.get(), pd_.get(), o, &err));
		EXPECT_EQ(err, "create QP a: " +
				       std::string(strerror(EOPNOTSUPP)));
		return;
	}
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region src = region(4096);
	ASSERT_TRUE(src) << strerror(errno);
	SendWr w = send_wr(1, IBV_WR_SEND_WITH_INV, { src.sge(0, 8) });
	w.invalidate_rkey = 0x1234;
	EXPECT_EQ(p.post_a({ w }), EINVAL);
	EXPECT_TRUE(poll_quiet(p.cq_a(), 50).empty());
}
// UD: the receive buffer starts with the 40-byte GRH, IBV_WC_GRH is set,
// byte_len counts it, src_qp names the sender.
TEST_P(DataOps, UdSend) { sends(IBV_QPT_UD, IBV_WR_SEND); }
TEST_P(DataOps, UdSendWithImm) { sends(IBV_QPT_UD, IBV_WR_SEND_WITH_IMM); }

// RDMA READ of each size from b's memory into a's, at odd offsets.
TEST_P(DataOps, RcRdmaRead)
{
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, opts(IBV_QPT_RC)));
	const uint32_t room = 4 * 4096;
	Region remote = region(room + 64), local = region(room + 256);
	ASSERT_TRUE(remote && local) << strerror(errno);
	fill_pattern(remote.data(), remote.size(), 3);

	uint64_t id = 0;
	for (uint32_t len : message_sizes(IBV_QPT_RC, path_.mtu_bytes())) {
		if (!len)
			continue;
		SCOPED_TRACE("read of " + std::to_string(len) + " bytes");
		id++;
		const size_t off = 32 + 5 * id;
		memset(local.data(), kGuard, local.size());
		ASSERT_EQ(p.post_a({ rdma_wr(id, IBV_WR_RDMA_READ,
					     { local.sge(off, len) },
					     remote.addr(id), remote.rkey()) }),
			  0);
		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, id, IBV_WC_RDMA_READ, p.a(), len);
		EXPECT_EQ(first_diff(local.data() + off, remote.data() + id,
				     len), -1);
		EXPECT_TRUE(all_bytes(local.data(), off, kGuard));
		EXPECT_TRUE(all_bytes(local.data() + off + len, 64, kGuard));
	}
	EXPECT_TRUE(poll_quiet(p.cq_b(), 50).empty())
		<< "the responder completed something for a READ";
}

// Compare-and-swap that matches and one that does not; the original
// value lands in a's buffer (host order), byte_len 8.
TEST_P(DataOps, RcAtomicCmpAndSwp)
{
	if (!has_atomics())
		GTEST_SKIP() << "the device reports atomic_cap NONE";
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, opts(IBV_QPT_RC)));
	Region remote = region(64), local = region(64);
	ASSERT_TRUE(remote && local) << strerror(errno);
	uint64_t *target = reinterpret_cast<uint64_t *>(remote.data() + 8);
	uint64_t *result = reinterpret_cast<uint64_t *>(local.data() + 16);
	*target = 0x1111222233334444ull;

	struct Case {
		uint64_t compare, swap, before, after;
	} cases[] = {
		{ 0x1111222233334444ull, 0xaaaabbbbccccddddull,
		  0x1111222233334444ull, 0xaaaabbbbccccddddull },
		{ 0x1111222233334444ull, 0x5555ull, 0xaaaabbbbccccddddull,
		  0xaaaabbbbccccddddull },
	};
	uint64_t id = 0;
	for (const Case &c : cases) {
		id++;
		*result = 0;
		SendWr w = rdma_wr(id, IBV_WR_ATOMIC_CMP_AND_SWP,
				   { local.sge(16, 8) }, remote.addr(8),
				   remote.rkey());
		w.compare_add = c.compare;
		w.swap = c.swap;
		ASSERT_EQ(p.post_a({ w }), 0);
		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, id, IBV_WC_COMP_SWAP, p.a(), 8);
		EXPECT_EQ(*result, c.before) << "case " << id;
		EXPECT_EQ(*target, c.after) << "case " << id;
	}
	EXPECT_TRUE(all_bytes(remote.data(), 8, 0));
	EXPECT_TRUE(all_bytes(remote.data() + 16, 48, 0));
}

TEST_P(DataOps, RcAtomicFetchAndAdd)
{
	if (!has_atomics())
		GTEST_SKIP() << "the device reports atomic_cap NONE";
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, opts(IBV_QPT_RC)));
	Region remote = region(64), local = region(64);
	ASSERT_TRUE(remote && local) << strerror(errno);
	uint64_t *target = reinterpret_cast<uint64_t *>(remote.data() + 24);
	uint64_t *result = reinterpret_cast<uint64_t *>(local.data());
	*target = 100;

	const uint64_t adds[] = { 5, 0xffffffffffffff00ull, 0x200 };
	uint64_t expect = 100;
	uint64_t id = 0;
	for (uint64_t add : adds) {
		id++;
		*result = 0;
		SendWr w = rdma_wr(id, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   { local.sge(0, 8) }, remote.addr(24),
				   remote.rkey());
		w.compare_add = add;
		ASSERT_EQ(p.post_a({ w }), 0);
		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, id, IBV_WC_FETCH_ADD, p.a(), 8);
		EXPECT_EQ(*result, expect);
		expect += add;  // wraps modulo 2^64
		EXPECT_EQ(*target, expect);
	}
	EXPECT_EQ(*target, 100u + 5 - 0x100 + 0x200);
}

// Inline data: the source is ordinary, unregistered memory (lkey 0) that
// the test overwrites right after posting; the receiver still gets the
// bytes as they were at post time.
TEST_P(DataOps, InlineSendWriteAndUdSend)
{
	for (ibv_qp_type t : { IBV_QPT_RC, IBV_QPT_UD }) {
		SCOPED_TRACE(t == IBV_QPT_RC ? "RC" : "UD");
		QpPairOptions o = opts(t);
		o.cap.max_inline_data = 64;
		QpPair p;
		std::string err;
		o.path = &path_;
		if (!p.init(ctx_.get(), pd_.get(), o, &err))
			GTEST_SKIP() << "the device cannot create a QP with "
					"max_inline_data 64: " << err;
		ASSERT_GE(p.cap(p.a()).max_inline_data, 64u);
		const bool ud = t == IBV_QPT_UD;
		const uint32_t grh = ud ? kGrhBytes : 0;
		Region dst = region(4096);
		ASSERT_TRUE(dst) << strerror(errno);

		uint8_t want[64], piece1[40], piece2[24];
		fill_pattern(want, sizeof(want), 4);
		memcpy(piece1, want, 40);
		memcpy(piece2, want + 40, 24);
		const uint64_t p1 = uintptr_t(piece1), p2 = uintptr_t(piece2);
		// One SGE of 1 byte, then two SGEs (40 + 24 bytes).
		const std::vector<std::vector<ibv_sge>> lists = {
			{ { p1, 1, 0 } },
			{ { p1, 40, 0 }, { p2, 24, 0 } },
		};
		uint64_t id = 0;
		for (const auto &sge : lists) {
			id++;
			const uint32_t len = sge.size() == 1 ? 1 : 64;
			memset(dst.data(), kGuard, dst.size());
			memcpy(piece1, want, 40);
			memcpy(piece2, want + 40, 24);
			ASSERT_EQ(post_recv(p.b(), id, { dst.sge(0, 1024) }),
				  0);
			SendWr w = send_wr(id, IBV_WR_SEND, sge,
					   IBV_SEND_SIGNALED | IBV_SEND_INLINE);
			ASSERT_EQ(p.post_a({ p.to_b(w) }), 0);
			memset(piece1, 0, sizeof(piece1));
			memset(piece2, 0, sizeof(piece2));
			ibv_wc wc{};
			ASSERT_ONE_WC(p.cq_a(), wc);
			expect_send_wc(wc, id, IBV_WC_SEND, p.a());
			ASSERT_ONE_WC(p.cq_b(), wc);
			RecvExpect e;
			e.wr_id = id;
			e.byte_len = grh + len;
			e.qp = p.b();
			e.src = ud ? p.a() : nullptr;
			expect_recv_wc(wc, e);
			EXPECT_EQ(first_diff(dst.data() + grh, want, len), -1);
			EXPECT_TRUE(all_bytes(dst.data() + grh + len, 64,
					      kGuard));
		}
		if (ud)
			continue;

		// RDMA WRITE with inline data.
		id++;
		memset(dst.data(), kGuard, dst.size());
		memcpy(piece1, want, 40);
		memcpy(piece2, want + 40, 24);
		SendWr w = rdma_wr(id, IBV_WR_RDMA_WRITE, lists[1],
				   dst.addr(100), dst.rkey(),
				   IBV_SEND_SIGNALED | IBV_SEND_INLINE);
		ASSERT_EQ(p.post_a({ w }), 0);
		memset(piece1, 0, sizeof(piece1));
		memset(piece2, 0, sizeof(piece2));
		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, id, IBV_WC_RDMA_WRITE, p.a());
		EXPECT_EQ(first_diff(dst.data() + 100, want, 64), -1);
		EXPECT_TRUE(all_bytes(dst.data(), 100, kGuard));
		EXPECT_TRUE(all_bytes(dst.data() + 164, 64, kGuard));
	}
}

// Gather from three SGEs in two MRs, scatter into four; WRITE gathers,
// READ scatters.
TEST_P(DataOps, MultipleSges)
{
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, opts(IBV_QPT_RC)));
	ASSERT_GE(p.cap(p.a()).max_send_sge, 4u);
	Region s1 = region(8192), s2 = region(8192), d1 = region(8192),
	       d2 = region(8192);
	ASSERT_TRUE(s1 && s2 && d1 && d2) << strerror(errno);
	fill_pattern(s1.data(), s1.size(), 5);
	fill_pattern(s2.data(), s2.size(), 6);
	// The gathered message: s1[10..110), s2[4090..8090), s1[7000].
	const std::vector<ibv_sge> gather = { s1.sge(10, 100),
					      s2.sge(4090, 4000),
					      s1.sge(7000, 1) };
	std::vector<uint8_t> msg;
	for (const ibv_sge &g : gather) {
		const uint8_t *b = reinterpret_cast<const uint8_t *>(
			uintptr_t(g.addr));
		msg.insert(msg.end(), b, b + g.length);
	}
	const uint32_t len = msg.size();

	// SEND: scattered over d1[0..50), d2[100..150), d1[4000..7000),
	// d2[5000..7000) -- 5100 bytes of room for 4101.
	memset(d1.data(), kGuard, d1.size());
	memset(d2.data(), kGuard, d2.size());
	ASSERT_EQ(post_recv(p.b(), 7, { d1.sge(0, 50), d2.sge(100, 50),
					d1.sge(4000, 3000),
					d2.sge(5000, 2000) }), 0);
	ASSERT_EQ(p.post_a({ send_wr(1, IBV_WR_SEND, gather) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_SEND, p.a());
	ASSERT_ONE_WC(p.cq_b(), wc);
	RecvExpect e;
	e.wr_id = 7;
	e.byte_len = len;
	e.qp = p.b();
	expect_recv_wc(wc, e);
	EXPECT_EQ(first_diff(d1.data(), msg.data(), 50), -1);
	EXPECT_EQ(first_diff(d2.data() + 100, msg.data() + 50, 50), -1);
	EXPECT_EQ(first_diff(d1.data() + 4000, msg.data() + 100, 3000), -1);
	EXPECT_EQ(first_diff(d2.data() + 5000, msg.data() + 3100, 1001), -1);
	EXPECT_TRUE(all_bytes(d2.data() + 6001, 999, kGuard));
	EXPECT_TRUE(all_bytes(d1.data() + 50, 3950, kGuard));
	EXPECT_TRUE(all_bytes(d2.data(), 100, kGuard));
	EXPECT_TRUE(all_bytes(d2.data() + 150, 4850, kGuard));

	// WRITE gathers into d1 at 1000.
	memset(d1.data(), kGuard, d1.size());
	ASSERT_EQ(p.post_a({ rdma_wr(2, IBV_WR_RDMA_WRITE, gather,
				     d1.addr(1000), d1.rkey()) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 2, IBV_WC_RDMA_WRITE, p.a());
	EXPECT_EQ(first_diff(d1.data() + 1000, msg.data(), len), -1);
	EXPECT_TRUE(all_bytes(d1.data(), 1000, kGuard));
	EXPECT_TRUE(all_bytes(d1.data() + 1000 + len, 64, kGuard));

	// READ scatters d1[1000..) back into d2 over three SGEs.
	memset(d2.data(), kGuard, d2.size());
	ASSERT_EQ(p.post_a({ rdma_wr(3, IBV_WR_RDMA_READ,
				     { d2.sge(8, 1), d2.sge(4000, 4000),
				       d2.sge(100, 100) },
				     d1.addr(1000), d1.rkey()) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 3, IBV_WC_RDMA_READ, p.a(), len);
	EXPECT_EQ(d2.data()[8], msg[0]);
	EXPECT_EQ(first_diff(d2.data() + 4000, msg.data() + 1, 4000), -1);
	EXPECT_EQ(first_diff(d2.data() + 100, msg.data() + 4001, 100), -1);
	EXPECT_TRUE(all_bytes(d2.data() + 9, 91, kGuard));
	EXPECT_TRUE(all_bytes(d2.data() + 200, 3800, kGuard));
}

/*
 * Fence: a READ, then a SEND with IBV_SEND_FENCE of the buffer the READ
 * fills, posted together.  The fence holds the SEND until the READ has
 * completed, so the SEND carries what the READ fetched.  Likewise a
 * FETCH_AND_ADD followed by a fenced SEND of its result.
 */
TEST_P(DataOps, FenceOrdersAfterReadAndAtomic)
{
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, opts(IBV_QPT_RC)));
	const uint32_t len = 4096;
	Region remote = region(len), bounce = region(len),
	       dst = region(len);
	ASSERT_TRUE(remote && bounce && dst) << strerror(errno);
	for (uint32_t round = 1; round <= 8; round++) {
		SCOPED_TRACE("round " + std::to_string(round));
		fill_pattern(remote.data(), len, 100 + round);
		memset(bounce.data(), kGuard, len);
		ASSERT_EQ(post_recv(p.b(), round, { dst.sge(0, len) }), 0);
		ASSERT_EQ(p.post_a({ rdma_wr(10 * round, IBV_WR_RDMA_READ,
					     { bounce.sge(0, len) },
					     remote.addr(), remote.rkey()),
				     send_wr(10 * round + 1, IBV_WR_SEND,
					     { bounce.sge(0, len) },
					     IBV_SEND_SIGNALED |
						     IBV_SEND_FENCE) }),
			  0);
		std::vector<ibv_wc> wcs = poll_cq(p.cq_a(), 2);
		ASSERT_EQ(wcs.size(), 2u) << wcs_str(wcs);
		expect_send_wc(wcs[0], 10 * round, IBV_WC_RDMA_READ, p.a(),
			       len);
		expect_send_wc(wcs[1], 10 * round + 1, IBV_WC_SEND, p.a());
		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_b(), wc);
		EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
		EXPECT_EQ(first_diff(dst.data(), remote.data(), len), -1)
			<< "the fenced SEND did not carry the READ's data";
	}
	if (!has_atomics())
		return;
	uint64_t *counter = reinterpret_cast<uint64_t *>(remote.data());
	*counter = 41;
	memset(bounce.data(), 0, 8);
	ASSERT_EQ(post_recv(p.b(), 99, { dst.sge(0, len) }), 0);
	SendWr fa = rdma_wr(90, IBV_WR_ATOMIC_FETCH_AND_ADD,
			    { bounce.sge(0, 8) }, remote.addr(),
			    remote.rkey());
	fa.compare_add = 1;
	ASSERT_EQ(p.post_a({ fa, send_wr(91, IBV_WR_SEND, { bounce.sge(0, 8) },
					 IBV_SEND_SIGNALED |
						 IBV_SEND_FENCE) }), 0);
	std::vector<ibv_wc> wcs = poll_cq(p.cq_a(), 2);
	ASSERT_EQ(wcs.size(), 2u) << wcs_str(wcs);
	expect_send_wc(wcs[0], 90, IBV_WC_FETCH_ADD, p.a(), 8);
	expect_send_wc(wcs[1], 91, IBV_WC_SEND, p.a());
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_b(), wc);
	uint64_t got = 0;
	memcpy(&got, dst.data(), 8);
	EXPECT_EQ(got, 41u) << "the fenced SEND did not carry the result";
	EXPECT_EQ(*counter, 42u);
}

// sq_sig_all = 0: only the WRs flagged IBV_SEND_SIGNALED complete.
TEST_P(DataOps, OnlySignaledWrsComplete)
{
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, opts(IBV_QPT_RC)));
	Region src = region(4096), dst = region(4096);
	ASSERT_TRUE(src && dst) << strerror(errno);
	fill_pattern(src.data(), 4096, 7);
	std::vector<SendWr> wrs;
	for (uint64_t i = 0; i < 10; i++)
		wrs.push_back(rdma_wr(i, IBV_WR_RDMA_WRITE,
				      { src.sge(i * 100, 100) },
				      dst.addr(i * 100), dst.rkey(),
				      i == 3 || i == 9 ? IBV_SEND_SIGNALED : 0));
	ASSERT_EQ(p.post_a(wrs), 0);
	std::vector<ibv_wc> wcs = poll_cq(p.cq_a(), 2);
	ASSERT_EQ(wcs.size(), 2u) << wcs_str(wcs);
	expect_send_wc(wcs[0], 3, IBV_WC_RDMA_WRITE, p.a());
	expect_send_wc(wcs[1], 9, IBV_WC_RDMA_WRITE, p.a());
	EXPECT_TRUE(poll_quiet(p.cq_a(), 100).empty());
	EXPECT_EQ(first_diff(dst.data(), src.data(), 1000), -1);
	EXPECT_TRUE(all_bytes(dst.data() + 1000, 1000, 0));

	// ... and an unsignaled SEND consumes a receive all the same.
	Region rbuf = region(256);
	ASSERT_TRUE(rbuf);
	ASSERT_EQ(post_recv(p.b(), 50, { rbuf.sge(0, 256) }), 0);
	ASSERT_EQ(p.post_a({ send_wr(20, IBV_WR_SEND, { src.sge(0, 16) }, 0),
			     rdma_wr(21, IBV_WR_RDMA_WRITE, { src.sge(0, 8) },
				     dst.addr(2048), dst.rkey()) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 21, IBV_WC_RDMA_WRITE, p.a());
	ASSERT_ONE_WC(p.cq_b(), wc);
	RecvExpect e;
	e.wr_id = 50;
	e.byte_len = 16;
	e.qp = p.b();
	expect_recv_wc(wc, e);
	EXPECT_EQ(first_diff(rbuf.data(), src.data(), 16), -1);
	EXPECT_TRUE(poll_quiet(p.cq_a(), 50).empty());
}

// sq_sig_all = 1: every WR completes, IBV_SEND_SIGNALED or not.
TEST_P(DataOps, SqSigAllSignalsEveryWr)
{
	QpPairOptions o = opts(IBV_QPT_RC);
	o.sq_sig_all = true;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region src = region(4096), dst = region(4096);
	ASSERT_TRUE(src && dst) << strerror(errno);
	std::vector<SendWr> wrs;
	for (uint64_t i = 0; i < 5; i++)
		wrs.push_back(rdma_wr(100 + i, IBV_WR_RDMA_WRITE,
				      { src.sge(i * 8, 8) }, dst.addr(i * 8),
				      dst.rkey(), 0));
	ASSERT_EQ(p.post_a(wrs), 0);
	std::vector<ibv_wc> wcs = poll_cq(p.cq_a(), 5);
	ASSERT_EQ(wcs.size(), 5u) << wcs_str(wcs);
	for (uint64_t i = 0; i < 5; i++)
		expect_send_wc(wcs[i], 100 + i, IBV_WC_RDMA_WRITE, p.a());
	EXPECT_TRUE(poll_quiet(p.cq_a(), 50).empty());
}

/*
 * Solicited events through a completion channel: armed solicited-only,
 * an unsolicited receive raises no event and a solicited one does; armed
 * for any completion, an unsolicited one does; unarmed, nothing does.
 */
TEST_P(DataOps, SolicitedEventsOnACompletionChannel)
{
	CompChannel ch(ibv_create_comp_channel(ctx_.get()));
	ASSERT_TRUE(ch) << strerror(errno);
	QpPairOptions o = opts(IBV_QPT_RC);
	o.channel = ch.get();
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region src = region(4096), dst = region(4096);
	ASSERT_TRUE(src && dst) << strerror(errno);
	for (uint64_t i = 0; i < 4; i++) {
		ASSERT_EQ(post_recv(p.b(), 10 + i, { dst.sge(i * 64, 64) }), 0);
	}

	auto send = [&](uint64_t id, unsigned extra) {
		return p.post_a({ send_wr(id, IBV_WR_SEND,
					  { src.sge(0, 32) },
					  IBV_SEND_SIGNALED | extra) });
	};
	auto recv_one = [&](uint64_t want) {
		ibv_wc wc{};
		std::vector<ibv_wc> w = poll_cq(p.cq_b(), 1);
		ASSERT_EQ(w.size(), 1u);
		wc = w[0];
		EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
		EXPECT_EQ(wc.wr_id, want);
		ASSERT_EQ(poll_cq(p.cq_a(), 1).size(), 1u);
	};

	// Solicited-only: an unsolicited SEND raises no event.
	ASSERT_EQ(ibv_req_notify_cq(p.cq_b(), 1), 0);
	ASSERT_EQ(send(1, 0), 0);
	ASSERT_NO_FATAL_FAILURE(recv_one(10));
	EXPECT_FALSE(fd_readable(ch->fd, 300))
		<< "an unsolicited receive raised a solicited-only event";

	// ... a solicited one does (the CQ is still armed).
	ASSERT_EQ(send(2, IBV_SEND_SOLICITED), 0);
	EXPECT_EQ(wait_cq_event(ch.get(), timeout_ms()), p.cq_b())
		<< "no event for a solicited receive";
	ASSERT_NO_FATAL_FAILURE(recv_one(11));

	// Armed for any completion: an unsolicited one raises the event.
	ASSERT_EQ(ibv_req_notify_cq(p.cq_b(), 0), 0);
	ASSERT_EQ(send(3, 0), 0);
	EXPECT_EQ(wait_cq_event(ch.get(), timeout_ms()), p.cq_b())
		<< "no event for a receive on a CQ armed for any completion";
	ASSERT_NO_FATAL_FAILURE(recv_one(12));

	// Arming is one-shot: not re-armed, even a solicited one is silent.
	ASSERT_EQ(send(4, IBV_SEND_SOLICITED), 0);
	ASSERT_NO_FATAL_FAILURE(recv_one(13));
	EXPECT_FALSE(fd_readable(ch->fd, 300))
		<< "an event on a CQ that was not re-armed";
}

/*
 * Receives from an SRQ that two QPs share: each completion names the QP
 * the message came in on, and the data lands in the WR it names.
 */
TEST_P(DataOps, ReceivesFromAnSrqSharedByTwoQps)
{
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 2;
	Srq srq(ibv_create_srq(pd_.get(), &sa));
	ASSERT_TRUE(srq) << strerror(errno);
	Cq rcq(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
	ASSERT_TRUE(rcq) << strerror(errno);
	QpPairOptions o = opts(IBV_QPT_RC);
	o.srq_b = srq.get();
	o.cq_b = rcq.get();
	QpPair p1, p2;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p1, o));
	ASSERT_NO_FATAL_FAILURE(make_pair(&p2, o));
	Region src = region(4096), dst = region(8 * 1024);
	ASSERT_TRUE(src && dst) << strerror(errno);
	fill_pattern(src.data(), 4096, 8);
	memset(dst.data(), kGuard, dst.size());
	for (uint64_t i = 0; i < 8; i++) {
		ASSERT_EQ(post_srq_recv(srq.get(), 500 + i,
					{ dst.sge(i * 1024, 512),
					  dst.sge(i * 1024 + 512, 512) }), 0);
	}

	// p1.a sends 100 bytes, p2.a 700 (both SGEs), p1.a 300.
	struct Msg {
		const QpPair *p;
		uint32_t len;
		uint32_t off;
	} msgs[] = { { &p1, 100, 0 }, { &p2, 700, 1000 }, { &p1, 300, 2000 } };
	std::vector<ibv_wc> got;
	uint64_t id = 0;
	for (const Msg &m : msgs) {
		id++;
		ASSERT_EQ(m.p->post_a({ send_wr(id, IBV_WR_SEND,
						{ src.sge(m.off, m.len) }) }),
			  0);
		ibv_wc wc{};
		ASSERT_ONE_WC(m.p->cq_a(), wc);
		expect_send_wc(wc, id, IBV_WC_SEND, m.p->a());
		ASSERT_ONE_WC(rcq.get(), wc);
		got.push_back(wc);
	}
	std::vector<uint64_t> used;
	for (size_t i = 0; i < got.size(); i++) {
		const ibv_wc &wc = got[i];
		const Msg &m = msgs[i];
		ASSERT_GE(wc.wr_id, 500u);
		ASSERT_LT(wc.wr_id, 508u);
		RecvExpect e;
		e.wr_id = wc.wr_id;
		e.byte_len = m.len;
		e.qp = m.p->b();
		expect_recv_wc(wc, e);
		EXPECT_EQ(std::count(used.begin(), used.end(), wc.wr_id), 0)
			<< "one SRQ WR completed twice";
		used.push_back(wc.wr_id);
		const uint8_t *slot = dst.data() + (wc.wr_id - 500) * 1024;
		EXPECT_EQ(first_diff(slot, src.data() + m.off, m.len), -1);
		EXPECT_TRUE(all_bytes(slot + m.len, 1024 - m.len, kGuard));
	}
}

/*
 * Memory windows.  Type 2: b binds a window over part of its MR with a
 * BIND_MW work request, a reaches memory through the window's rkey, and
 * only inside it.
 */
void DataOps::bind_type2(const QpPair &p, ibv_mw *mw, const Region &mr,
			 size_t off, size_t len, uint32_t *rkey)
{
	SendWr w;
	w.wr_id = 77;
	w.opcode = IBV_WR_BIND_MW;
	w.mw = mw;
	w.rkey = ibv_inc_rkey(mw->rkey);
	w.bind_info.mr = mr.mr.get();
	w.bind_info.addr = mr.addr(off);
	w.bind_info.length = len;
	w.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ;
	ASSERT_EQ(p.post_b({ w }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_b(), wc);
	expect_send_wc(wc, 77, IBV_WC_BIND_MW, p.b());
	*rkey = w.rkey;
}

constexpr int kMwMrAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;
constexpr uint64_t kMwOps = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
			    IBV_QP_EX_WITH_SEND_WITH_INV;

TEST_P(DataOps, BindMwType2ThroughPostSend)
{
	if (!has_mw_type2())
		GTEST_SKIP() << "the device claims no type 2 memory windows";
	QpPairOptions o = opts(IBV_QPT_RC);
	o.extra_send_ops = kMwOps;
	Region mr = region(16384, kMwMrAccess), src = region(4096),
	       back = region(4096);
	ASSERT_TRUE(mr && src && back) << strerror(errno);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_2));
	ASSERT_TRUE(mw) << strerror(errno);
	fill_pattern(src.data(), 4096, 9);
	uint32_t rkey = 0;
	ASSERT_NO_FATAL_FAILURE(bind_type2(p, mw.get(), mr, 4096, 8192, &rkey));

	// Inside the window: WRITE at its start, READ at its end.
	ibv_wc wc{};
	ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE, { src.sge(0, 100) },
				     mr.addr(4096), rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_RDMA_WRITE, p.a());
	EXPECT_EQ(first_diff(mr.data() + 4096, src.data(), 100), -1);
	fill_pattern(mr.data() + 12288 - 64, 64, 10);
	ASSERT_EQ(p.post_a({ rdma_wr(2, IBV_WR_RDMA_READ, { back.sge(0, 64) },
				     mr.addr(12288 - 64), rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 2, IBV_WC_RDMA_READ, p.a(), 64);
	EXPECT_EQ(first_diff(back.data(), mr.data() + 12288 - 64, 64), -1);

	// Across its end: remote access error, nothing written.
	memset(mr.data() + 12288 - 32, kGuard, 4096);
	ASSERT_EQ(p.post_a({ rdma_wr(3, IBV_WR_RDMA_WRITE, { src.sge(0, 64) },
				     mr.addr(12288 - 32), rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 3, IBV_WC_REM_ACCESS_ERR, p.a());
	EXPECT_TRUE(all_bytes(mr.data() + 12288 - 32, 4096, kGuard));
	expect_state(p.a(), IBV_QPS_ERR, "a after the error");
}

// LOCAL_INV of a bound type 2 window: its rkey no longer works.
TEST_P(DataOps, LocalInvalidateOfAType2Window)
{
	if (!has_mw_type2())
		GTEST_SKIP() << "the device claims no type 2 memory windows";
	QpPairOptions o = opts(IBV_QPT_RC);
	o.extra_send_ops = kMwOps;
	Region mr = region(8192, kMwMrAccess), src = region(4096);
	ASSERT_TRUE(mr && src) << strerror(errno);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_2));
	ASSERT_TRUE(mw) << strerror(errno);
	fill_pattern(src.data(), 4096, 11);
	uint32_t rkey = 0;
	ASSERT_NO_FATAL_FAILURE(bind_type2(p, mw.get(), mr, 0, 8192, &rkey));
	ibv_wc wc{};
	ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE, { src.sge(0, 64) },
				     mr.addr(0), rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_RDMA_WRITE, p.a());

	SendWr inv = send_wr(5, IBV_WR_LOCAL_INV, {});
	inv.invalidate_rkey = rkey;
	ASSERT_EQ(p.post_b({ inv }), 0);
	ASSERT_ONE_WC(p.cq_b(), wc);
	expect_send_wc(wc, 5, IBV_WC_LOCAL_INV, p.b());

	memset(mr.data(), kGuard, 8192);
	ASSERT_EQ(p.post_a({ rdma_wr(2, IBV_WR_RDMA_WRITE, { src.sge(0, 64) },
				     mr.addr(0), rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 2, IBV_WC_REM_ACCESS_ERR, p.a());
	EXPECT_TRUE(all_bytes(mr.data(), 8192, kGuard));
}

// SEND_WITH_INV: the receiver's completion says which rkey it
// invalidated (IBV_WC_WITH_INV), and that rkey is dead afterwards.
TEST_P(DataOps, RcSendWithInvalidate)
{
	if (!has_mw_type2())
		GTEST_SKIP() << "the device claims no type 2 memory windows, "
				"the only rkeys user space can invalidate";
	QpPairOptions o = opts(IBV_QPT_RC);
	o.extra_send_ops = kMwOps;
	Region mr = region(8192, kMwMrAccess), src = region(4096),
	       dst = region(4096);
	ASSERT_TRUE(mr && src && dst) << strerror(errno);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_2));
	ASSERT_TRUE(mw) << strerror(errno);
	fill_pattern(src.data(), 4096, 12);
	uint32_t rkey = 0;
	ASSERT_NO_FATAL_FAILURE(bind_type2(p, mw.get(), mr, 0, 8192, &rkey));

	ASSERT_EQ(post_recv(p.b(), 33, { dst.sge(0, 4096) }), 0);
	SendWr w = send_wr(1, IBV_WR_SEND_WITH_INV, { src.sge(0, 200) });
	w.invalidate_rkey = rkey;
	ASSERT_EQ(p.post_a({ w }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_SEND, p.a());
	ASSERT_ONE_WC(p.cq_b(), wc);
	RecvExpect e;
	e.wr_id = 33;
	e.byte_len = 200;
	e.flags = IBV_WC_WITH_INV;
	e.imm_or_inv = rkey;
	e.qp = p.b();
	expect_recv_wc(wc, e);
	EXPECT_EQ(first_diff(dst.data(), src.data(), 200), -1);

	memset(mr.data(), kGuard, 8192);
	ASSERT_EQ(p.post_a({ rdma_wr(2, IBV_WR_RDMA_WRITE, { src.sge(0, 64) },
				     mr.addr(0), rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 2, IBV_WC_REM_ACCESS_ERR, p.a());
	EXPECT_TRUE(all_bytes(mr.data(), 8192, kGuard));
}

INSTANTIATE_TEST_SUITE_P(Api, DataOps,
			 ::testing::Values(Api::PostSend, Api::WrApi),
			 [](const ::testing::TestParamInfo<Api> &i) {
				 return std::string(api_name(i.param));
			 });

/*
 * Tests that exist for one API only.
 */
class DataOpsOnce : public DataTest {
protected:
	// An SRQ of 16 one-SGE receives in *@srq, and a pair whose b
	// receives from it.
	void make_srq_pair(Srq *srq, QpPair *p)
	{
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 16;
		sa.attr.max_sge = 1;
		srq->reset(ibv_create_srq(pd_.get(), &sa));
		ASSERT_TRUE(*srq) << strerror(errno);
		QpPairOptions o;
		o.srq_b = srq->get();
		ASSERT_NO_FATAL_FAILURE(make_pair(p, o));
	}
};

// Type 1: ibv_bind_mw posts the bind and updates mw->rkey; the window
// serves any QP of the PD, inside its bounds only.
TEST_F(DataOpsOnce, BindMwType1ThroughIbvBindMw)
{
	if (!has_mw())
		GTEST_SKIP() << "the device claims no memory windows";
	Region mr = region(16384, kMwMrAccess), src = region(4096);
	ASSERT_TRUE(mr && src) << strerror(errno);
	QpPair p;
	QpPairOptions o;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_1));
	ASSERT_TRUE(mw) << strerror(errno);
	const uint32_t old_rkey = mw->rkey;
	fill_pattern(src.data(), 4096, 13);

	ibv_mw_bind mb{};
	mb.wr_id = 55;
	mb.send_flags = IBV_SEND_SIGNALED;
	mb.bind_info.mr = mr.mr.get();
	mb.bind_info.addr = mr.addr(4096);
	mb.bind_info.length = 4096;
	mb.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ASSERT_EQ(ibv_bind_mw(p.b(), mw.get(), &mb), 0) << strerror(errno);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_b(), wc);
	expect_send_wc(wc, 55, IBV_WC_BIND_MW, p.b());
	const uint32_t rkey = mw->rkey;
	EXPECT_NE(rkey, old_rkey) << "ibv_bind_mw left the rkey unchanged";

	ASSERT_EQ(post_send(p.a(), Api::PostSend,
			    { rdma_wr(1, IBV_WR_RDMA_WRITE, { src.sge(0, 256) },
				      mr.addr(4096 + 100), rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_RDMA_WRITE, p.a());
	EXPECT_EQ(first_diff(mr.data() + 4196, src.data(), 256), -1);

	memset(mr.data(), kGuard, 4096);
	ASSERT_EQ(post_send(p.a(), Api::PostSend,
			    { rdma_wr(2, IBV_WR_RDMA_WRITE, { src.sge(0, 64) },
				      mr.addr(4096 - 16), rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 2, IBV_WC_REM_ACCESS_ERR, p.a());
	EXPECT_TRUE(all_bytes(mr.data(), 4096, kGuard))
		<< "written below the window";
}

// ATOMIC_WRITE (ibv_wr_atomic_write): 8 bytes land at once.
TEST_F(DataOpsOnce, RcAtomicWrite)
{
	if (!(dev_ex_.device_cap_flags_ex & kDevAtomicWrite))
		GTEST_SKIP() << "the device does not claim "
				"IB_UVERBS_DEVICE_ATOMIC_WRITE";
	QpPairOptions o;
	o.api = Api::WrApi;
	o.extra_send_ops = IBV_QP_EX_WITH_ATOMIC_WRITE;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region remote = region(64);
	ASSERT_TRUE(remote) << strerror(errno);
	memset(remote.data(), kGuard, 64);
	const uint64_t v = 0x0123456789abcdefull;
	ibv_qp_ex *qpx = ibv_qp_to_qp_ex(p.a());
	ibv_wr_start(qpx);
	qpx->wr_id = 8;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, remote.rkey(), remote.addr(16), &v);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 8, IBV_WC_ATOMIC_WRITE, p.a());
	EXPECT_EQ(memcmp(remote.data() + 16, &v, 8), 0);
	EXPECT_TRUE(all_bytes(remote.data(), 16, kGuard));
	EXPECT_TRUE(all_bytes(remote.data() + 24, 40, kGuard));
}

// FLUSH (ibv_wr_flush, global visibility, a range) after a WRITE
// completes with IBV_WC_FLUSH; a READ afterwards sees the data.
TEST_F(DataOpsOnce, RcFlush)
{
	if (!(dev_ex_.device_cap_flags_ex & kDevFlushGlobal))
		GTEST_SKIP() << "the device does not claim "
				"IB_UVERBS_DEVICE_FLUSH_GLOBAL";
	QpPairOptions o;
	o.api = Api::WrApi;
	o.extra_send_ops = IBV_QP_EX_WITH_FLUSH;
	o.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_FLUSH_GLOBAL;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region remote = region(8192, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_FLUSH_GLOBAL);
	ASSERT_TRUE(remote) << "reg_mr with IBV_ACCESS_FLUSH_GLOBAL: "
			    << strerror(errno);
	Region src = region(4096), back = region(4096);
	ASSERT_TRUE(src && back) << strerror(errno);
	fill_pattern(src.data(), 4096, 14);
	ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE, { src.sge(0, 4096) },
				     remote.addr(1024), remote.rkey(), 0) }),
		  0);
	ibv_qp_ex *qpx = ibv_qp_to_qp_ex(p.a());
	ibv_wr_start(qpx);
	qpx->wr_id = 2;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_flush(qpx, remote.rkey(), remote.addr(1024), 4096,
		     IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 2, IBV_WC_FLUSH, p.a());
	ASSERT_EQ(p.post_a({ rdma_wr(3, IBV_WR_RDMA_READ, { back.sge(0, 4096) },
				     remote.addr(1024), remote.rkey()) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 3, IBV_WC_RDMA_READ, p.a(), 4096);
	EXPECT_EQ(first_diff(back.data(), src.data(), 4096), -1);
}

// FLUSH to a QP whose access flags do not allow it (IBV_ACCESS_FLUSH_GLOBAL
// on the MR only) is an invalid request, as on rxe.
TEST_F(DataOpsOnce, RcFlushNeedsTheQpsAccess)
{
	if (!(dev_ex_.device_cap_flags_ex & kDevFlushGlobal))
		GTEST_SKIP() << "the device does not claim "
				"IB_UVERBS_DEVICE_FLUSH_GLOBAL";
	QpPairOptions o;
	o.api = Api::WrApi;
	o.extra_send_ops = IBV_QP_EX_WITH_FLUSH;
	o.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region remote = region(4096, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_FLUSH_GLOBAL);
	ASSERT_TRUE(remote) << strerror(errno);
	ibv_qp_ex *qpx = ibv_qp_to_qp_ex(p.a());
	ibv_wr_start(qpx);
	qpx->wr_id = 5;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_flush(qpx, remote.rkey(), remote.addr(0), 4096,
		     IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 5, IBV_WC_REM_INV_REQ_ERR, p.a());
}

/*
 * SRQ limit: armed at 4 with 8 receives posted, consuming 4 raises
 * nothing, the fifth (3 left, below the limit) raises
 * IBV_EVENT_SRQ_LIMIT_REACHED for this SRQ, and the limit is disarmed.
 */
TEST_F(DataOpsOnce, SrqLimitReachedEvent)
{
	Srq srq;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_srq_pair(&srq, &p));
	Region src = region(4096), dst = region(8 * 256);
	ASSERT_TRUE(src && dst) << strerror(errno);
	for (uint64_t i = 0; i < 8; i++) {
		ASSERT_EQ(post_srq_recv(srq.get(), i, { dst.sge(i * 256, 256) }),
			  0);
	}
	ibv_srq_attr lim{};
	lim.srq_limit = 4;
	ASSERT_EQ(ibv_modify_srq(srq.get(), &lim, IBV_SRQ_LIMIT), 0)
		<< strerror(errno);
	ibv_srq_attr q{};
	ASSERT_EQ(ibv_query_srq(srq.get(), &q), 0);
	EXPECT_EQ(q.srq_limit, 4u);

	auto send = [&](uint64_t id) {
		ASSERT_EQ(p.post_a({ send_wr(id, IBV_WR_SEND,
					     { src.sge(0, 16) }) }), 0);
		ASSERT_EQ(poll_cq(p.cq_a(), 1).size(), 1u);
		std::vector<ibv_wc> r = poll_cq(p.cq_b(), 1);
		ASSERT_EQ(r.size(), 1u);
		EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
	};
	for (uint64_t i = 0; i < 4; i++) {
		ASSERT_NO_FATAL_FAILURE(send(i));
	}
	ibv_async_event ev{};
	std::string seen;
	EXPECT_FALSE(wait_async_event(ctx_.get(), IBV_EVENT_SRQ_LIMIT_REACHED,
				      300, &ev, &seen))
		<< "limit event with 4 receives left of a limit of 4";
	ASSERT_NO_FATAL_FAILURE(send(4));
	ASSERT_TRUE(wait_async_event(ctx_.get(), IBV_EVENT_SRQ_LIMIT_REACHED,
				     timeout_ms(), &ev, &seen))
		<< "no IBV_EVENT_SRQ_LIMIT_REACHED; other events: " << seen;
	EXPECT_EQ(ev.element.srq, srq.get());
	ASSERT_EQ(ibv_query_srq(srq.get(), &q), 0);
	EXPECT_EQ(q.srq_limit, 0u) << "the limit stays armed after its event";
	// Disarmed: draining further raises no second event.
	ASSERT_NO_FATAL_FAILURE(send(5));
	EXPECT_FALSE(wait_async_event(ctx_.get(), IBV_EVENT_SRQ_LIMIT_REACHED,
				      300, &ev, &seen))
		<< "a second limit event without re-arming";
}

// A QP on an SRQ that goes to ERROR raises IBV_EVENT_QP_LAST_WQE_REACHED
// once (IBTA o11-5.2): the kernel's ib_drain_qp() waits up to 60 s for it
// before a ULP (nvmet-rdma with use_srq) may destroy the QP.  Its SRQ's
// receives stay posted for the other QPs.
TEST_F(DataOpsOnce, SrqQpInErrorRaisesLastWqeReached)
{
	Srq srq;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_srq_pair(&srq, &p));
	Region dst = region(4096);
	ASSERT_TRUE(dst) << strerror(errno);
	ASSERT_EQ(post_srq_recv(srq.get(), 1, { dst.sge(0, 256) }), 0);

	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	ASSERT_EQ(ibv_modify_qp(p.b(), &a, IBV_QP_STATE), 0) << strerror(errno);
	ibv_async_event ev{};
	std::string seen;
	ASSERT_TRUE(wait_async_event(ctx_.get(), IBV_EVENT_QP_LAST_WQE_REACHED,
				     timeout_ms(), &ev, &seen))
		<< "no IBV_EVENT_QP_LAST_WQE_REACHED; other events: " << seen;
	EXPECT_EQ(ev.element.qp, p.b());
	EXPECT_FALSE(wait_async_event(ctx_.get(), IBV_EVENT_QP_LAST_WQE_REACHED,
				      300, &ev, &seen))
		<< "a second Last WQE Reached for the same transition";
	EXPECT_TRUE(poll_quiet(p.cq_b(), 50).empty())
		<< "the SRQ's receive was flushed through the QP";
}

// UD drops a datagram whose qkey does not match the receiver's; the
// sender completes successfully regardless.
TEST_F(DataOpsOnce, UdWrongQkeyIsDropped)
{
	QpPairOptions o;
	o.type = IBV_QPT_UD;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region src = region(4096), dst = region(4096);
	ASSERT_TRUE(src && dst) << strerror(errno);
	ASSERT_EQ(post_recv(p.b(), 1, { dst.sge(0, 4096) }), 0);
	SendWr w = p.to_b(send_wr(1, IBV_WR_SEND, { src.sge(0, 64) }));
	w.remote_qkey = p.qkey() + 1;
	ASSERT_EQ(post_send(p.a(), Api::PostSend, { w }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_SEND, p.a());
	EXPECT_TRUE(poll_quiet(p.cq_b(), 300).empty())
		<< "a datagram with the wrong qkey was delivered";
	// The right qkey still gets through to the same receive.
	ASSERT_EQ(post_send(p.a(), Api::PostSend,
			    { p.to_b(send_wr(2, IBV_WR_SEND,
					     { src.sge(0, 64) })) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	ASSERT_ONE_WC(p.cq_b(), wc);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc.wr_id, 1u);
}

// Multicast: a UD send to a group reaches every QP attached to it, with the
// group as the GRH's destination, and not the sender; detached, nothing.
// Only multicast GIDs and UD QPs attach; detaching what is not attached is
// EINVAL.
TEST_F(DataOpsOnce, UdMulticastReachesAttachedQps)
{
	if (!attr_.max_mcast_grp)
		GTEST_SKIP() << "the device claims no multicast groups";
	QpPairOptions o;
	o.type = IBV_QPT_UD;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	ibv_gid mgid{};
	const uint8_t group[4] = { 239, 1, 2, 3 };
	mgid.raw[10] = mgid.raw[11] = 0xff;
	memcpy(&mgid.raw[12], group, 4);

	EXPECT_EQ(ibv_attach_mcast(p.b(), &path_.gid, 0), EINVAL)
		<< "a unicast GID is not a group";
	EXPECT_EQ(ibv_detach_mcast(p.b(), &mgid, 0), EINVAL)
		<< "detaching what was never attached";
	ASSERT_EQ(ibv_attach_mcast(p.b(), &mgid, 0), 0) << strerror(errno);
	ASSERT_EQ(ibv_attach_mcast(p.a(), &mgid, 0), 0) << strerror(errno);

	ibv_ah_attr aa = path_ah_attr(path_);
	aa.grh.dgid = mgid;
	Ah ah(ibv_create_ah(pd_.get(), &aa));
	ASSERT_TRUE(ah) << strerror(errno);
	Region src = region(4096), rb = region(4096), ra = region(4096);
	ASSERT_TRUE(src && rb && ra) << strerror(errno);
	for (size_t i = 0; i < 256; i++)
		src.data()[i] = uint8_t(i * 7 + 1);
	ASSERT_EQ(post_recv(p.b(), 10, { rb.sge(0, 4096) }), 0);
	ASSERT_EQ(post_recv(p.a(), 20, { ra.sge(0, 4096) }), 0);

	SendWr w = send_wr(1, IBV_WR_SEND, { src.sge(0, 256) });
	w.ah = ah.get();
	w.remote_qpn = 0xffffff;
	w.remote_qkey = p.qkey();
	ASSERT_EQ(post_send(p.a(), Api::PostSend, { w }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_b(), wc);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc.wr_id, 10u);
	EXPECT_EQ(wc.byte_len, 40u + 256u);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
	EXPECT_EQ(wc.src_qp, p.a()->qp_num);
	// IPv4 in the GRH's last 20 bytes: the destination is the group.
	EXPECT_EQ(memcmp(rb.data() + 36, group, 4), 0);
	EXPECT_EQ(memcmp(rb.data() + 40, src.data(), 256), 0);
	// a's CQ has its send completion and nothing else.
	auto got = poll_quiet(p.cq_a(), 300);
	ASSERT_EQ(got.size(), 1u) << "the sender received its own message";
	EXPECT_EQ(got[0].wr_id, 1u);
	EXPECT_EQ(got[0].opcode, IBV_WC_SEND);

	ASSERT_EQ(ibv_detach_mcast(p.b(), &mgid, 0), 0) << strerror(errno);
	ASSERT_EQ(post_recv(p.b(), 11, { rb.sge(0, 4096) }), 0);
	w.wr_id = 2;
	ASSERT_EQ(post_send(p.a(), Api::PostSend, { w }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	EXPECT_EQ(wc.wr_id, 2u);
	EXPECT_TRUE(poll_quiet(p.cq_b(), 300).empty())
		<< "a detached QP still receives the group";
	EXPECT_EQ(ibv_detach_mcast(p.a(), &mgid, 0), 0);
}

} // namespace
