// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Data-path conformance, the errors: every error completion status the
// IBTA defines for a failed work request, with the memory the WR aimed at
// left untouched and the QP moved to ERROR (ibv_query_qp); flushing of
// outstanding and newly posted WRs in ERROR; CQ overflow as an async
// event.  Each case gets a fresh RC pair, because an error ends a QP.
//
// Messages stay within one packet (below the path MTU), so that "nothing
// was written" is well defined: a multi-packet message that fails in its
// second packet may legitimately have placed the first.
#include "datapath.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

constexpr uint8_t kGuard = 0xEE;
constexpr uint32_t kLen = 256;

class DataErrors : public DataTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(DataTest::SetUp());
		ASSERT_NO_FATAL_FAILURE(make_pair(&p_, QpPairOptions()));
		src_ = region(4096);
		ASSERT_TRUE(src_) << strerror(errno);
		fill_pattern(src_.data(), 4096, 21);
	}

	// a posts @w; it completes with @status and leaves a in ERROR.
	void expect_failure(const SendWr &w, ibv_wc_status status)
	{
		ASSERT_EQ(post_send(p_.a(), Api::PostSend, { w }), 0)
			<< "the error must come as a completion, not from "
			   "ibv_post_send";
		ibv_wc wc{};
		ASSERT_ONE_WC(p_.cq_a(), wc);
		expect_err_wc(wc, w.wr_id, status, p_.a());
		expect_state(p_.a(), IBV_QPS_ERR,
			     "requester after an error completion");
	}

	// The responder saw nothing but, at most, flushed receives.
	void expect_responder_quiet()
	{
		for (const ibv_wc &wc : poll_quiet(p_.cq_b(), 100)) {
			EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR)
				<< "responder: " << wc_str(wc);
		}
	}

	// b receives a's SEND into @sge: b completes with @recv_status,
	// a with @send_status, both end in ERROR.
	void expect_receive_failure(const ibv_sge &sge, uint32_t len,
				    ibv_wc_status recv_status,
				    ibv_wc_status send_status)
	{
		ASSERT_EQ(post_recv(p_.b(), 9, { sge }), 0);
		ASSERT_EQ(post_send(p_.a(), Api::PostSend,
				    { send_wr(1, IBV_WR_SEND,
					      { src_.sge(0, len) }) }), 0);
		ibv_wc wc{};
		ASSERT_ONE_WC(p_.cq_b(), wc);
		expect_err_wc(wc, 9, recv_status, p_.b());
		ASSERT_ONE_WC(p_.cq_a(), wc);
		expect_err_wc(wc, 1, send_status, p_.a());
		expect_state(p_.b(), IBV_QPS_ERR, "receiver");
		expect_state(p_.a(), IBV_QPS_ERR, "sender");
	}

	QpPair p_;
	Region src_;
};

/*
 * Local protection: the requester's own SGE is bad (unknown lkey, beyond
 * its MR, or an MR without the access the operation needs):
 * IBV_WC_LOC_PROT_ERR, and the target memory is untouched.
 */
TEST_F(DataErrors, SendWithBadLkeyIsLocProtErr)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	memset(dst.data(), kGuard, 4096);
	ASSERT_EQ(post_recv(p_.b(), 9, { dst.sge(0, 4096) }), 0);
	ibv_sge s = src_.sge(0, kLen);
	s.lkey = bad_key(s.lkey);
	expect_failure(send_wr(1, IBV_WR_SEND, { s }), IBV_WC_LOC_PROT_ERR);
	EXPECT_TRUE(poll_quiet(p_.cq_b(), 100).empty())
		<< "the receiver completed a receive";
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
}

TEST_F(DataErrors, SendBeyondItsMrIsLocProtErr)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	memset(dst.data(), kGuard, 4096);
	ASSERT_EQ(post_recv(p_.b(), 9, { dst.sge(0, 4096) }), 0);
	expect_failure(send_wr(1, IBV_WR_SEND, { src_.sge(4096 - 32, 64) }),
		       IBV_WC_LOC_PROT_ERR);
	EXPECT_TRUE(poll_quiet(p_.cq_b(), 100).empty())
		<< "the receiver completed a receive";
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
}

TEST_F(DataErrors, WriteWithBadLkeyIsLocProtErr)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	memset(dst.data(), kGuard, 4096);
	ibv_sge s = src_.sge(0, kLen);
	s.lkey = bad_key(s.lkey);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_WRITE, { s }, dst.addr(),
			       dst.rkey()), IBV_WC_LOC_PROT_ERR);
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
	expect_responder_quiet();
}

TEST_F(DataErrors, WriteFromBeyondItsMrIsLocProtErr)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	memset(dst.data(), kGuard, 4096);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_WRITE, { src_.sge(4000, 200) },
			       dst.addr(), dst.rkey()), IBV_WC_LOC_PROT_ERR);
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
	expect_responder_quiet();
}

TEST_F(DataErrors, ReadIntoMrWithoutLocalWriteIsLocProtErr)
{
	Region ro = region(4096, 0);  // local read only
	ASSERT_TRUE(ro) << strerror(errno);
	Region remote = region(4096);
	ASSERT_TRUE(remote);
	memset(ro.data(), kGuard, 4096);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_READ, { ro.sge(0, kLen) },
			       remote.addr(), remote.rkey()),
		       IBV_WC_LOC_PROT_ERR);
	EXPECT_TRUE(all_bytes(ro.data(), 4096, kGuard));
}

TEST_F(DataErrors, ReadBeyondItsMrIsLocProtErr)
{
	Region local = region(4096), remote = region(4096);
	ASSERT_TRUE(local && remote);
	memset(local.data(), kGuard, 4096);
	fill_pattern(remote.data(), 4096, 22);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_READ, { local.sge(4000, 200) },
			       remote.addr(), remote.rkey()),
		       IBV_WC_LOC_PROT_ERR);
	EXPECT_TRUE(all_bytes(local.data(), 4096, kGuard));
}

TEST_F(DataErrors, AtomicResultIntoMrWithoutLocalWriteIsLocProtErr)
{
	if (!has_atomics())
		GTEST_SKIP() << "the device reports atomic_cap NONE";
	Region ro = region(4096, 0), remote = region(64);
	ASSERT_TRUE(ro && remote);
	memset(ro.data(), kGuard, 4096);
	SendWr w = rdma_wr(1, IBV_WR_ATOMIC_FETCH_AND_ADD, { ro.sge(0, 8) },
			   remote.addr(), remote.rkey());
	w.compare_add = 1;
	expect_failure(w, IBV_WC_LOC_PROT_ERR);
	EXPECT_TRUE(all_bytes(ro.data(), 4096, kGuard));
}

/*
 * The receiver's SGE is bad: the receive completes with
 * IBV_WC_LOC_PROT_ERR, the sender (NAK "remote operational error") with
 * IBV_WC_REM_OP_ERR.
 */
TEST_F(DataErrors, ReceiveWithBadLkeyIsLocProtErr)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	memset(dst.data(), kGuard, 4096);
	ibv_sge s = dst.sge(0, 4096);
	s.lkey = bad_key(s.lkey);
	expect_receive_failure(s, kLen, IBV_WC_LOC_PROT_ERR, IBV_WC_REM_OP_ERR);
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
}

TEST_F(DataErrors, ReceiveIntoMrWithoutLocalWriteIsLocProtErr)
{
	Region ro = region(4096, 0);
	ASSERT_TRUE(ro) << strerror(errno);
	memset(ro.data(), kGuard, 4096);
	expect_receive_failure(ro.sge(0, 4096), kLen, IBV_WC_LOC_PROT_ERR,
			       IBV_WC_REM_OP_ERR);
	EXPECT_TRUE(all_bytes(ro.data(), 4096, kGuard));
}

/*
 * Remote access: the rkey, range or access of the target is wrong:
 * IBV_WC_REM_ACCESS_ERR, target untouched.
 */
TEST_F(DataErrors, WriteWithBadRkeyIsRemAccessErr)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	memset(dst.data(), kGuard, 4096);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_WRITE, { src_.sge(0, kLen) },
			       dst.addr(), bad_key(dst.rkey())),
		       IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
}

TEST_F(DataErrors, WriteBeyondTheRemoteMrIsRemAccessErr)
{
	Region dst = region(8192);
	ASSERT_TRUE(dst);
	// Register only the first page; the second is the guard.
	Mr half(ibv_reg_mr(pd_.get(), dst.data(), 4096, kRemoteAccess));
	ASSERT_TRUE(half) << strerror(errno);
	memset(dst.data(), kGuard, 8192);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_WRITE, { src_.sge(0, kLen) },
			       dst.addr(4096 - 100), half->rkey),
		       IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(dst.data(), 8192, kGuard));
}

TEST_F(DataErrors, WriteBeforeTheRemoteMrIsRemAccessErr)
{
	Region dst = region(8192);
	ASSERT_TRUE(dst);
	Mr upper(ibv_reg_mr(pd_.get(), dst.data() + 4096, 4096,
			    kRemoteAccess));
	ASSERT_TRUE(upper) << strerror(errno);
	memset(dst.data(), kGuard, 8192);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_WRITE, { src_.sge(0, kLen) },
			       dst.addr(4096 - 8), upper->rkey),
		       IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(dst.data(), 8192, kGuard));
}

TEST_F(DataErrors, WriteWithoutRemoteWriteAccessIsRemAccessErr)
{
	Region dst = region(4096, IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_READ);
	ASSERT_TRUE(dst) << strerror(errno);
	memset(dst.data(), kGuard, 4096);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_WRITE, { src_.sge(0, kLen) },
			       dst.addr(), dst.rkey()),
		       IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
}

TEST_F(DataErrors, WriteWithImmAndBadRkeyIsRemAccessErr)
{
	Region dst = region(4096), sink = region(256);
	ASSERT_TRUE(dst && sink);
	memset(dst.data(), kGuard, 4096);
	memset(sink.data(), kGuard, 256);
	ASSERT_EQ(post_recv(p_.b(), 9, { sink.sge(0, 256) }), 0);
	SendWr w = rdma_wr(1, IBV_WR_RDMA_WRITE_WITH_IMM, { src_.sge(0, kLen) },
			   dst.addr(), bad_key(dst.rkey()));
	w.imm = htonl(7);
	expect_failure(w, IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
	EXPECT_TRUE(all_bytes(sink.data(), 256, kGuard));
	// The responder goes to ERROR too.  The receive the WRITE would have
	// consumed completes with IBV_WC_LOC_ACCESS_ERR (the responder-side
	// status of a WRITE_WITH_IMM that failed its protection check) or is
	// flushed; it never completes successfully, and a requester-side
	// status (REM_*) makes no sense there.
	for (const ibv_wc &wc : poll_quiet(p_.cq_b(), 200)) {
		SCOPED_TRACE("responder: " + wc_str(wc));
		EXPECT_EQ(wc.wr_id, 9u);
		EXPECT_EQ(wc.qp_num, p_.b()->qp_num);
		EXPECT_TRUE(wc.status == IBV_WC_LOC_ACCESS_ERR ||
			    wc.status == IBV_WC_WR_FLUSH_ERR);
	}
}

TEST_F(DataErrors, ReadWithBadRkeyIsRemAccessErr)
{
	Region local = region(4096), remote = region(4096);
	ASSERT_TRUE(local && remote);
	memset(local.data(), kGuard, 4096);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_READ, { local.sge(0, kLen) },
			       remote.addr(), bad_key(remote.rkey())),
		       IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(local.data(), 4096, kGuard));
}

TEST_F(DataErrors, ReadBeyondTheRemoteMrIsRemAccessErr)
{
	Region local = region(4096), remote = region(4096);
	ASSERT_TRUE(local && remote);
	memset(local.data(), kGuard, 4096);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_READ, { local.sge(0, kLen) },
			       remote.addr(4096 - kLen + 1), remote.rkey()),
		       IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(local.data(), 4096, kGuard));
}

TEST_F(DataErrors, ReadWithoutRemoteReadAccessIsRemAccessErr)
{
	Region local = region(4096);
	Region remote = region(4096, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE);
	ASSERT_TRUE(local && remote) << strerror(errno);
	memset(local.data(), kGuard, 4096);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_READ, { local.sge(0, kLen) },
			       remote.addr(), remote.rkey()),
		       IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(local.data(), 4096, kGuard));
}

TEST_F(DataErrors, AtomicWithoutRemoteAtomicAccessIsRemAccessErr)
{
	if (!has_atomics())
		GTEST_SKIP() << "the device reports atomic_cap NONE";
	Region local = region(64);
	Region remote = region(4096, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ);
	ASSERT_TRUE(local && remote) << strerror(errno);
	memset(remote.data(), kGuard, 4096);
	memset(local.data(), kGuard, 64);
	SendWr w = rdma_wr(1, IBV_WR_ATOMIC_CMP_AND_SWP, { local.sge(0, 8) },
			   remote.addr(8), remote.rkey());
	memset(&w.compare_add, kGuard, 8);  // would match
	w.swap = 1;
	expect_failure(w, IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(remote.data(), 4096, kGuard));
	EXPECT_TRUE(all_bytes(local.data(), 64, kGuard));
}

TEST_F(DataErrors, AtomicWithBadRkeyIsRemAccessErr)
{
	if (!has_atomics())
		GTEST_SKIP() << "the device reports atomic_cap NONE";
	Region local = region(64), remote = region(64);
	ASSERT_TRUE(local && remote);
	memset(remote.data(), kGuard, 64);
	SendWr w = rdma_wr(1, IBV_WR_ATOMIC_FETCH_AND_ADD, { local.sge(0, 8) },
			   remote.addr(8), bad_key(remote.rkey()));
	w.compare_add = 1;
	expect_failure(w, IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(remote.data(), 64, kGuard));
}

// An MR of another PD on the same context: its rkey is valid, but not
// for QPs of this PD.
TEST_F(DataErrors, RkeyOfAnotherPdIsRemAccessErr)
{
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << strerror(errno);
	Region foreign = make_region(other.get(), 4096);
	ASSERT_TRUE(foreign) << strerror(errno);
	memset(foreign.data(), kGuard, 4096);
	expect_failure(rdma_wr(1, IBV_WR_RDMA_WRITE, { src_.sge(0, kLen) },
			       foreign.addr(), foreign.rkey()),
		       IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(foreign.data(), 4096, kGuard));

	// READ through it, on a fresh pair.
	QpPair q;
	ASSERT_NO_FATAL_FAILURE(make_pair(&q, QpPairOptions()));
	Region local = region(4096);
	ASSERT_TRUE(local);
	memset(local.data(), 0x11, 4096);
	ASSERT_EQ(post_send(q.a(), Api::PostSend,
			    { rdma_wr(2, IBV_WR_RDMA_READ, { local.sge(0, kLen) },
				      foreign.addr(), foreign.rkey()) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(q.cq_a(), wc);
	expect_err_wc(wc, 2, IBV_WC_REM_ACCESS_ERR, q.a());
	EXPECT_TRUE(all_bytes(local.data(), 4096, 0x11));
	expect_state(q.a(), IBV_QPS_ERR, "requester");
}

/*
 * An MR of another process (its own context and PD): a child registers
 * memory, hands its address and rkey over a pipe, and reports afterwards
 * whether its memory was touched.
 */
TEST_F(DataErrors, RkeyOfAnotherProcessIsRemAccessErr)
{
	int up[2], down[2];
	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(down), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		struct {
			uint64_t addr;
			uint32_t rkey;
			uint32_t ok;
		} msg{};
		Context ctx = open_device();
		Pd pd(ctx ? ibv_alloc_pd(ctx.get()) : nullptr);
		Region r;
		if (pd)
			r = make_region(pd.get(), 4096);
		if (r) {
			memset(r.data(), kGuard, 4096);
			msg = { r.addr(), r.rkey(), 1 };
		}
		if (write(up[1], &msg, sizeof(msg)) != sizeof(msg))
			_exit(2);
		char c;
		if (read(down[0], &c, 1) != 1)
			_exit(3);
		char verdict = r && all_bytes(r.data(), 4096, kGuard) ? 'u' :
									 'w';
		if (write(up[1], &verdict, 1) != 1)
			_exit(4);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	struct {
		uint64_t addr;
		uint32_t rkey;
		uint32_t ok;
	} msg{};
	ssize_t n = read(up[0], &msg, sizeof(msg));
	bool ready = n == ssize_t(sizeof(msg)) && msg.ok;
	if (ready) {
		expect_failure(rdma_wr(1, IBV_WR_RDMA_WRITE,
				       { src_.sge(0, kLen) }, msg.addr,
				       msg.rkey), IBV_WC_REM_ACCESS_ERR);
		QpPair q;
		make_pair(&q, QpPairOptions());
		Region local = region(4096);
		if (q.a() && local) {
			memset(local.data(), 0x11, 4096);
			EXPECT_EQ(post_send(q.a(), Api::PostSend,
					    { rdma_wr(2, IBV_WR_RDMA_READ,
						      { local.sge(0, kLen) },
						      msg.addr, msg.rkey) }),
				  0);
			std::vector<ibv_wc> wcs = poll_cq(q.cq_a(), 1);
			EXPECT_EQ(wcs.size(), 1u);
			if (!wcs.empty())
				expect_err_wc(wcs[0], 2, IBV_WC_REM_ACCESS_ERR,
					      q.a());
			EXPECT_TRUE(all_bytes(local.data(), 4096, 0x11));
		}
	}
	char c = 'x', verdict = 0;
	EXPECT_EQ(write(down[1], &c, 1), 1);
	EXPECT_EQ(read(up[0], &verdict, 1), 1);
	int st = 0;
	waitpid(pid, &st, 0);
	close(up[0]);
	close(down[1]);
	ASSERT_TRUE(ready) << "the child could not register memory";
	EXPECT_EQ(verdict, 'u') << "the other process's memory was written";
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * A SEND longer than the receive buffer: IBV_WC_LOC_LEN_ERR at the
 * receiver, IBV_WC_REM_INV_REQ_ERR (NAK invalid request) at the sender;
 * nothing lands past the receive buffer.
 */
TEST_F(DataErrors, ReceiveBufferTooShortIsLocLenErr)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	memset(dst.data(), kGuard, 4096);
	expect_receive_failure(dst.sge(0, 128), kLen, IBV_WC_LOC_LEN_ERR,
			       IBV_WC_REM_INV_REQ_ERR);
	EXPECT_TRUE(all_bytes(dst.data() + 128, 4096 - 128, kGuard));
}

/*
 * A peer that stopped answering (its QP back in RESET drops every
 * packet): after the first transmission and retry_cnt retransmissions,
 * each after the local ACK timeout, the SEND completes with
 * IBV_WC_RETRY_EXC_ERR.
 */
TEST_F(DataErrors, SilentPeerExhaustsTransportRetries)
{
	QpPairOptions o;
	o.timeout = 12;  // 4.096 us * 2^12 = 16.8 ms
	o.retry_cnt = 1;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	ASSERT_EQ(modify_to(p.b(), IBV_QPS_RESET), 0) << strerror(errno);
	ASSERT_EQ(post_send(p.a(), Api::PostSend,
			    { send_wr(1, IBV_WR_SEND, { src_.sge(0, 64) }) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 1, IBV_WC_RETRY_EXC_ERR, p.a());
	expect_state(p.a(), IBV_QPS_ERR, "sender");
}

/*
 * RNR: no receive posted.  With rnr_retry 0 the first RNR NAK ends the
 * SEND with IBV_WC_RNR_RETRY_EXC_ERR; with rnr_retry 2 the third does.
 */
class DataRnr : public DataTest,
		public ::testing::WithParamInterface<uint8_t> {};

TEST_P(DataRnr, NoReceiveExhaustsRnrRetries)
{
	QpPairOptions o;
	o.rnr_retry_a = GetParam();
	o.min_rnr_timer_b = 1;  // 0.01 ms
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region src = region(4096);
	ASSERT_TRUE(src);
	ASSERT_EQ(post_send(p.a(), Api::PostSend,
			    { send_wr(1, IBV_WR_SEND, { src.sge(0, 64) }) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 1, IBV_WC_RNR_RETRY_EXC_ERR, p.a());
	expect_state(p.a(), IBV_QPS_ERR, "sender");
	EXPECT_TRUE(poll_quiet(p.cq_b(), 50).empty());
}

INSTANTIATE_TEST_SUITE_P(RnrRetry, DataRnr, ::testing::Values(0, 2),
			 [](const ::testing::TestParamInfo<uint8_t> &i) {
				 return "rnr_retry_" +
					std::to_string(int(i.param));
			 });

// rnr_retry 7 retries forever: a receive posted later is used.
TEST_F(DataErrors, RnrRetryForeverWaitsForAReceive)
{
	QpPair p;
	QpPairOptions o;
	o.rnr_retry_a = 7;
	o.min_rnr_timer_b = 1;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	ASSERT_EQ(post_send(p.a(), Api::PostSend,
			    { send_wr(1, IBV_WR_SEND, { src_.sge(0, 64) }) }), 0);
	EXPECT_TRUE(poll_quiet(p.cq_a(), 300).empty())
		<< "the SEND completed without a receive";
	ASSERT_EQ(post_recv(p.b(), 2, { dst.sge(0, 4096) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_SEND, p.a());
	ASSERT_ONE_WC(p.cq_b(), wc);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc.byte_len, 64u);
	EXPECT_EQ(first_diff(dst.data(), src_.data(), 64), -1);
}

/*
 * Flushing.  a's SEND is held up by RNR (retried forever, no receive);
 * behind it an unsignaled WRITE and a SEND.  Moving a to ERROR completes
 * all three, in order, with IBV_WC_WR_FLUSH_ERR (unsignaled WRs too), and
 * so are WRs posted in ERROR.
 */
TEST_F(DataErrors, SendQueueFlushesInError)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	memset(dst.data(), kGuard, 4096);
	ASSERT_EQ(post_send(p_.a(), Api::PostSend,
			    { send_wr(1, IBV_WR_SEND, { src_.sge(0, 64) }),
			      rdma_wr(2, IBV_WR_RDMA_WRITE, { src_.sge(0, 64) },
				      dst.addr(), dst.rkey(), 0),
			      send_wr(3, IBV_WR_SEND, { src_.sge(0, 64) }) }),
		  0);
	EXPECT_TRUE(poll_quiet(p_.cq_a(), 300).empty())
		<< "completions while the receiver has no receive";
	ASSERT_EQ(modify_to(p_.a(), IBV_QPS_ERR), 0) << strerror(errno);
	std::vector<ibv_wc> wcs = poll_cq(p_.cq_a(), 3);
	ASSERT_EQ(wcs.size(), 3u) << wcs_str(wcs);
	for (uint64_t i = 0; i < 3; i++)
		expect_err_wc(wcs[i], i + 1, IBV_WC_WR_FLUSH_ERR, p_.a());
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard))
		<< "a WRITE queued behind a stalled SEND was executed";

	ASSERT_EQ(post_send(p_.a(), Api::PostSend,
			    { send_wr(4, IBV_WR_SEND, { src_.sge(0, 64) }),
			      rdma_wr(5, IBV_WR_RDMA_WRITE, { src_.sge(0, 64) },
				      dst.addr(), dst.rkey(), 0) }), 0)
		<< "posting to a QP in ERROR must succeed (and flush)";
	wcs = poll_cq(p_.cq_a(), 2);
	ASSERT_EQ(wcs.size(), 2u) << wcs_str(wcs);
	expect_err_wc(wcs[0], 4, IBV_WC_WR_FLUSH_ERR, p_.a());
	expect_err_wc(wcs[1], 5, IBV_WC_WR_FLUSH_ERR, p_.a());
	EXPECT_TRUE(poll_quiet(p_.cq_a(), 50).empty());
	expect_state(p_.a(), IBV_QPS_ERR, "a");
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
}

// Outstanding receives flush in order; a receive posted in ERROR too.
TEST_F(DataErrors, ReceiveQueueFlushesInError)
{
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	for (uint64_t i = 0; i < 5; i++) {
		ASSERT_EQ(post_recv(p_.b(), 10 + i, { dst.sge(i * 64, 64) }),
			  0);
	}
	ASSERT_EQ(modify_to(p_.b(), IBV_QPS_ERR), 0) << strerror(errno);
	std::vector<ibv_wc> wcs = poll_cq(p_.cq_b(), 5);
	ASSERT_EQ(wcs.size(), 5u) << wcs_str(wcs);
	for (uint64_t i = 0; i < 5; i++)
		expect_err_wc(wcs[i], 10 + i, IBV_WC_WR_FLUSH_ERR, p_.b());
	ASSERT_EQ(post_recv(p_.b(), 20, { dst.sge(0, 64) }), 0)
		<< "posting a receive in ERROR must succeed (and flush)";
	ibv_wc wc{};
	ASSERT_ONE_WC(p_.cq_b(), wc);
	expect_err_wc(wc, 20, IBV_WC_WR_FLUSH_ERR, p_.b());
	EXPECT_TRUE(poll_quiet(p_.cq_b(), 50).empty());
}

// A QP on an SRQ going to ERROR does not flush the SRQ's receives: they
// stay for the SRQ's other QPs.
TEST_F(DataErrors, SrqReceivesSurviveAQpInError)
{
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	Srq srq(ibv_create_srq(pd_.get(), &sa));
	ASSERT_TRUE(srq) << strerror(errno);
	QpPairOptions o;
	o.srq_b = srq.get();
	QpPair p1, p2;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p1, o));
	ASSERT_NO_FATAL_FAILURE(make_pair(&p2, o));
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	ASSERT_EQ(post_srq_recv(srq.get(), 40, { dst.sge(0, 256) }), 0);
	ASSERT_EQ(modify_to(p1.b(), IBV_QPS_ERR), 0);
	EXPECT_TRUE(poll_quiet(p1.cq_b(), 200).empty())
		<< "the SRQ's receive was flushed with one of its QPs";
	ASSERT_EQ(post_send(p2.a(), Api::PostSend,
			    { send_wr(1, IBV_WR_SEND, { src_.sge(0, 100) }) }),
		  0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p2.cq_b(), wc);
	RecvExpect e;
	e.wr_id = 40;
	e.byte_len = 100;
	e.qp = p2.b();
	expect_recv_wc(wc, e);
	EXPECT_EQ(first_diff(dst.data(), src_.data(), 100), -1);
}

/*
 * CQ overflow: more completions than the CQ holds, none polled, raise
 * IBV_EVENT_CQ_ERR for that CQ.
 */
TEST_F(DataErrors, CqOverflowRaisesCqErr)
{
	Cq small(ibv_create_cq(ctx_.get(), 8, nullptr, nullptr, 0));
	ASSERT_TRUE(small) << strerror(errno);
	const int n = small->cqe + 4;
	QpPairOptions o;
	o.cq_a = small.get();
	o.cap = qp_cap(uint32_t(n) + 8, 16, 1, 1);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region dst = region(4096);
	ASSERT_TRUE(dst);
	std::vector<SendWr> wrs;
	for (int i = 0; i < n; i++)
		wrs.push_back(rdma_wr(i, IBV_WR_RDMA_WRITE, { src_.sge(0, 8) },
				      dst.addr(8 * (i % 64)), dst.rkey()));
	ASSERT_EQ(post_send(p.a(), Api::PostSend, wrs), 0);
	ibv_async_event ev{};
	std::string seen;
	ASSERT_TRUE(wait_async_event(ctx_.get(), IBV_EVENT_CQ_ERR, timeout_ms(),
				     &ev, &seen))
		<< "no IBV_EVENT_CQ_ERR after " << n << " completions on a CQ "
		<< "of " << small->cqe << "; other events: " << seen;
	EXPECT_EQ(ev.element.cq, small.get());
}

} // namespace
