// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Data-path conformance at scale: four threads posting concurrently on
// their own QP pairs and CQs with integrity checks, 1,024 QPs with
// traffic on every one, and the doorbell: sustained posting needs at most
// one kick (syscall) per 100 posts, read from the device's hw counters,
// and a kick to a sleeping engine executes the WQE before it returns.
#include "datapath.hpp"
#include "traffic.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace urdma::test;

namespace {

class DataScale : public DataTest {};

/*
 * Four threads, each with its own RC pair, CQs, buffers and random
 * stream (seed + thread index), run checked WRITE/READ/SEND traffic at
 * the same time on one context and PD.
 */
TEST_F(DataScale, FourThreadsPostConcurrentlyOnTheirOwnQps)
{
	constexpr int kThreads = 4;
	constexpr size_t kLen = 1u << 20;
	const int ops = on_debug_kernel() ? 40 : 150;
	const uint64_t seed = test_seed();
	announce_seed(seed);

	struct Worker {
		Buffer local{ kLen }, remote{ kLen };
		Mr lmr, rmr;
		QpPair pair;
		std::string error;
		int done = 0;
	};
	std::vector<std::unique_ptr<Worker>> ws;
	const uint32_t sge = std::min(4, path_.dev.max_sge);
	for (int i = 0; i < kThreads; i++) {
		auto w = std::make_unique<Worker>();
		ASSERT_TRUE(w->local && w->remote);
		w->lmr.reset(ibv_reg_mr(pd_.get(), w->local.data(), kLen,
					kRemoteAccess));
		w->rmr.reset(ibv_reg_mr(pd_.get(), w->remote.data(), kLen,
					kRemoteAccess));
		ASSERT_TRUE(w->lmr && w->rmr) << strerror(errno);
		QpPairOptions o;
		o.cap = qp_cap(16, 16, sge, sge);
		ASSERT_NO_FATAL_FAILURE(make_pair(&w->pair, o));
		ws.push_back(std::move(w));
	}

	std::atomic<int> ready{ 0 };
	std::vector<std::thread> threads;
	for (int i = 0; i < kThreads; i++) {
		threads.emplace_back([&, i] {
			Worker &w = *ws[i];
			std::mt19937_64 rng(seed + i);
			Traffic t(w.pair, w.local.data(), w.lmr->lkey,
				  w.remote.data(), w.rmr->lkey, w.rmr->rkey,
				  kLen);
			t.init(rng);
			ready++;
			while (ready.load() < kThreads)
				sched_yield();
			for (int n = 0; n < ops; n++) {
				Xfer x = t.random_xfer(rng, 64 * 1024, sge);
				::testing::AssertionResult r =
					t.run(x, uint64_t(n) + 1, rng);
				if (!r) {
					w.error = r.message();
					return;
				}
				w.done++;
			}
			::testing::AssertionResult r = t.verify_all();
			if (!r)
				w.error = r.message();
		});
	}
	for (std::thread &t : threads)
		t.join();
	for (int i = 0; i < kThreads; i++) {
		SCOPED_TRACE("thread " + std::to_string(i));
		EXPECT_EQ(ws[i]->error, "");
		EXPECT_EQ(ws[i]->done, ops);
		expect_state(ws[i]->pair.a(), IBV_QPS_RTS, "a");
	}
}

/*
 * 1,024 QPs (512 RC pairs) on two shared CQs.  Every QP receives one
 * SEND and sends one; every a also WRITEs into its own slot.  Each
 * receive completion names the right QP and WR, each slot holds its own
 * pattern.
 */
TEST_F(DataScale, ThousandQpsCarryTraffic)
{
	constexpr int kPairs = 512;
	constexpr uint32_t kSlot = 64;
	if (attr_.max_qp < 2 * kPairs + 8)
		GTEST_SKIP() << "the device allows " << attr_.max_qp
			     << " QPs, fewer than " << 2 * kPairs + 8;
	const int cqe = std::min(4 * kPairs, attr_.max_cqe);
	if (cqe < 3 * kPairs)
		GTEST_SKIP() << "max_cqe " << attr_.max_cqe << " is below "
			     << 3 * kPairs;
	Cq cqa(ibv_create_cq(ctx_.get(), cqe, nullptr, nullptr, 0));
	Cq cqb(ibv_create_cq(ctx_.get(), cqe, nullptr, nullptr, 0));
	ASSERT_TRUE(cqa && cqb) << strerror(errno);
	Region src = region(3 * kPairs * kSlot), abuf = region(kPairs * kSlot),
	       bbuf = region(kPairs * kSlot), wbuf = region(kPairs * kSlot);
	ASSERT_TRUE(src && abuf && bbuf && wbuf) << strerror(errno);
	fill_pattern(src.data(), src.size(), 31);

	std::vector<std::unique_ptr<QpPair>> pairs;
	std::map<uint32_t, int> a_index, b_index;
	QpPairOptions o;
	o.cq_a = cqa.get();
	o.cq_b = cqb.get();
	o.cap = qp_cap(4, 4, 1, 1);
	for (int i = 0; i < kPairs; i++) {
		auto p = std::make_unique<QpPair>();
		ASSERT_NO_FATAL_FAILURE(make_pair(p.get(), o))
			<< "pair " << i << " (QP " << 2 * i << ")";
		a_index[p->a()->qp_num] = i;
		b_index[p->b()->qp_num] = i;
		pairs.push_back(std::move(p));
	}
	EXPECT_EQ(a_index.size() + b_index.size(), size_t(2 * kPairs))
		<< "QP numbers repeat";

	for (int i = 0; i < kPairs; i++) {
		const QpPair &p = *pairs[i];
		ASSERT_EQ(post_recv(p.a(), i, { abuf.sge(i * kSlot, kSlot) }), 0);
		ASSERT_EQ(post_recv(p.b(), i, { bbuf.sge(i * kSlot, kSlot) }), 0);
	}
	for (int i = 0; i < kPairs; i++) {
		const QpPair &p = *pairs[i];
		const size_t s = 3 * i * kSlot;
		ASSERT_EQ(p.post_a({ send_wr(i, IBV_WR_SEND,
					     { src.sge(s, kSlot) }),
				     rdma_wr(kPairs + i, IBV_WR_RDMA_WRITE,
					     { src.sge(s + kSlot, kSlot) },
					     wbuf.addr(i * kSlot),
					     wbuf.rkey()) }), 0);
		ASSERT_EQ(p.post_b({ send_wr(i, IBV_WR_SEND,
					     { src.sge(s + 2 * kSlot,
						       kSlot) }) }), 0);
	}

	// cqa: 2 sends and 1 receive per pair; cqb: 1 send, 1 receive.
	std::vector<ibv_wc> wa = poll_cq(cqa.get(), 3 * kPairs, 4 * timeout_ms());
	std::vector<ibv_wc> wb = poll_cq(cqb.get(), 2 * kPairs, 4 * timeout_ms());
	ASSERT_EQ(wa.size(), size_t(3 * kPairs));
	ASSERT_EQ(wb.size(), size_t(2 * kPairs));
	std::vector<int> a_sends(kPairs), a_recvs(kPairs), b_sends(kPairs),
		b_recvs(kPairs);
	int bad = 0;
	for (const ibv_wc &wc : wa) {
		auto it = a_index.find(wc.qp_num);
		if (wc.status != IBV_WC_SUCCESS || it == a_index.end()) {
			if (bad++ < 5) {
				ADD_FAILURE() << "a: " << wc_str(wc);
			}
			continue;
		}
		const int i = it->second;
		if (wc.opcode == IBV_WC_RECV) {
			a_recvs[i]++;
			EXPECT_EQ(wc.wr_id, uint64_t(i));
			EXPECT_EQ(wc.byte_len, kSlot);
		} else {
			a_sends[i]++;
			EXPECT_TRUE(wc.wr_id == uint64_t(i) ||
				    wc.wr_id == uint64_t(kPairs + i))
				<< wc_str(wc);
		}
	}
	for (const ibv_wc &wc : wb) {
		auto it = b_index.find(wc.qp_num);
		if (wc.status != IBV_WC_SUCCESS || it == b_index.end()) {
			if (bad++ < 5) {
				ADD_FAILURE() << "b: " << wc_str(wc);
			}
			continue;
		}
		const int i = it->second;
		EXPECT_EQ(wc.wr_id, uint64_t(i)) << wc_str(wc);
		if (wc.opcode == IBV_WC_RECV) {
			b_recvs[i]++;
			EXPECT_EQ(wc.byte_len, kSlot);
		} else {
			b_sends[i]++;
		}
	}
	EXPECT_EQ(bad, 0);
	for (int i = 0; i < kPairs; i++) {
		SCOPED_TRACE("pair " + std::to_string(i));
		ASSERT_EQ(a_sends[i], 2);
		ASSERT_EQ(a_recvs[i], 1);
		ASSERT_EQ(b_sends[i], 1);
		ASSERT_EQ(b_recvs[i], 1);
		const size_t s = 3 * i * kSlot;
		ASSERT_EQ(first_diff(bbuf.data() + i * kSlot, src.data() + s,
				     kSlot), -1);
		ASSERT_EQ(first_diff(wbuf.data() + i * kSlot,
				     src.data() + s + kSlot, kSlot), -1);
		ASSERT_EQ(first_diff(abuf.data() + i * kSlot,
				     src.data() + s + 2 * kSlot, kSlot), -1);
	}
	EXPECT_TRUE(poll_quiet(cqa.get(), 50).empty());
	EXPECT_TRUE(poll_quiet(cqb.get(), 50).empty());
}

/*
 * Doorbell elision: 10,000 RDMA WRITEs, each its own ibv_post_send call,
 * posted in bursts that keep up to 128 in flight, completions polled as
 * they come.  A post kicks only an engine that sleeps, and the polling
 * window covers the poster's rhythm, so `kicks` may grow by at most one
 * per 100 posts, plus one per time the engine set out to sleep to yield
 * its CPU to another task (`yields`: the guest scheduler put the poster,
 * or a kworker, beside it).  `wqes` grows by at least 10,000.  The
 * counters are urdma's (hw counters in `rdma statistic show link
 * DEV/1`); other devices skip.
 */
TEST_F(DataScale, SustainedPostingKicksAtMostOncePer100Posts)
{
	std::string raw;
	const std::string before = link_statistics(device_name(), 1, &raw);
	if (before.empty() || json_uint(before, "kicks") < 0 ||
	    json_uint(before, "wqes") < 0)
		GTEST_SKIP() << "`rdma statistic show link " << device_name()
			     << "/1` has no kicks/wqes hw counters: "
			     << raw.substr(0, 300);
	constexpr int kPosts = 10000;
	constexpr int kDepth = 128;
	QpPairOptions o;
	o.cap = qp_cap(256, 4, 1, 1);
	o.cqe = 512;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region src = region(64 * 64), dst = region(64 * 64);
	ASSERT_TRUE(src && dst);
	fill_pattern(src.data(), src.size(), 41);

	const std::string b = link_statistics();
	const long long k0 = json_uint(b, "kicks"), w0 = json_uint(b, "wqes");
	const long long p0 = json_uint(b, "polls"), s0 = json_uint(b, "sleeps");
	const long long y0 = json_uint(b, "yields");
	ASSERT_GE(y0, 0) << "no yields hw counter";
	int posted = 0, completed = 0;
	ibv_wc wc[32];
	const int64_t end = now_ms() + 30 * timeout_ms();
	while (completed < kPosts && now_ms() < end) {
		while (posted < kPosts && posted - completed < kDepth) {
			const int slot = posted % 64;
			ASSERT_EQ(post_send_verbs(
					  p.a(),
					  { rdma_wr(posted, IBV_WR_RDMA_WRITE,
						    { src.sge(slot * 64, 64) },
						    dst.addr(slot * 64),
						    dst.rkey()) }),
				  0);
			posted++;
		}
		int n = ibv_poll_cq(p.cq_a(), 32, wc);
		ASSERT_GE(n, 0);
		for (int i = 0; i < n; i++) {
			ASSERT_EQ(wc[i].status, IBV_WC_SUCCESS)
				<< wc_str(wc[i]);
			ASSERT_EQ(wc[i].wr_id, uint64_t(completed));
			completed++;
		}
	}
	ASSERT_EQ(completed, kPosts) << "timed out";
	const std::string a = link_statistics();
	const long long kicks = json_uint(a, "kicks") - k0;
	const long long wqes = json_uint(a, "wqes") - w0;
	const long long sleeps = json_uint(a, "sleeps") - s0;
	const long long yields = json_uint(a, "yields") - y0;
	printf("[ COUNTERS ] %d posts: kicks %lld wqes %lld polls %lld "
	       "sleeps %lld yields %lld\n", kPosts, kicks, wqes,
	       json_uint(a, "polls") - p0, sleeps, yields);
	RecordProperty("kicks", std::to_string(kicks));
	RecordProperty("yields", std::to_string(yields));
	EXPECT_LE(kicks, kPosts / 100 + yields)
		<< "more than one kick per 100 posts beyond the engine's yields";
	EXPECT_GE(wqes, kPosts) << "the engine counted fewer WQEs than posted";
	EXPECT_EQ(first_diff(dst.data(), src.data(), 64 * 64), -1);
}

/*
 * Kicks run the engine's passes (kernel/engine.c, "Kicks run passes"):
 * when a post finds the engine asleep, its kick executes the WQE in the
 * poster's system call, so the completion is there when ibv_post_send
 * returns.  With kick_runs=N the kick wakes the thread instead, and the
 * WQE completes a moment later.  Which posts kicked is read from the hw
 * counters in sysfs (a quicker read than `rdma statistic`).
 */
class KickRuns : public DataScale {
protected:
	static std::string counter_path(const std::string &name)
	{
		return "/sys/class/infiniband/" + device_name() +
		       "/ports/1/hw_counters/" + name;
	}
	static long long counter(const std::string &name)
	{
		std::ifstream f(counter_path(name));
		long long v = -1;
		return f >> v ? v : -1;
	}
	static std::string param()
	{
		std::ifstream f(kParam);
		std::string v;
		return f >> v ? v : "";
	}
	static bool set_param(const char *v)
	{
		std::ofstream f(kParam);
		return f << v << std::endl ? true : false;
	}
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(DataScale::SetUp());
		if (counter("kick_runs") < 0 || param().empty())
			GTEST_SKIP() << counter_path("kick_runs") << " or "
				     << kParam << " is missing (not urdma)";
		saved_ = param();
	}
	void TearDown() override
	{
		if (!saved_.empty()) {
			EXPECT_TRUE(set_param(saved_.c_str()));
		}
		DataScale::TearDown();
	}

	struct Kick {
		bool kicked, ran;	// the post kicked; the kick ran passes
		size_t at_return;	// completions there when it returned
	};

	// kick_runs=@mode, a connected RC pair, a source filled from @seed.
	void start(const char *mode, int seed)
	{
		ASSERT_TRUE(set_param(mode));
		ASSERT_NO_FATAL_FAILURE(make_pair(&p_, QpPairOptions()));
		src_ = std::make_unique<Region>(region(64 * 64));
		dst_ = std::make_unique<Region>(region(64 * 64));
		ASSERT_TRUE(*src_ && *dst_);
		fill_pattern(src_->data(), src_->size(), seed);
	}

	/*
	 * Let the engine fall asleep (its polling window is at most
	 * poll_max_us, 2 ms by default), post one signaled 64-byte WRITE,
	 * poll once at once, read the counters once the core's cache of them
	 * has expired, then wait for the completion.
	 */
	void post_after_idle(int i, Kick *k)
	{
		QpPair &p = p_;
		const Region &src = *src_, &dst = *dst_;

		usleep(30000);
		const long long k0 = counter("kicks"), r0 = counter("kick_runs");
		ASSERT_EQ(post_send_verbs(p.a(), { rdma_wr(i, IBV_WR_RDMA_WRITE,
							   { src.sge(i * 64, 64) },
							   dst.addr(i * 64),
							   dst.rkey()) }),
			  0);
		ibv_wc wc;
		const int n = ibv_poll_cq(p.cq_a(), 1, &wc);
		ASSERT_GE(n, 0);
		usleep(kLifespanUs);
		k->kicked = counter("kicks") - k0 == 1;
		k->ran = counter("kick_runs") - r0 == 1;
		k->at_return = n;
		std::vector<ibv_wc> wcs;
		if (n == 1)
			wcs.push_back(wc);
		else
			wcs = poll_cq(p.cq_a(), 1);
		ASSERT_EQ(wcs.size(), 1u) << "the WRITE did not complete";
		EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << wc_str(wcs[0]);
		EXPECT_EQ(wcs[0].wr_id, uint64_t(i));
		EXPECT_EQ(first_diff(dst.data() + i * 64, src.data() + i * 64, 64),
			  -1);
	}

	// The core serves hw counters from a cache at most 10 ms old
	// (RDMA_HW_STATS_DEFAULT_LIFESPAN).
	static constexpr useconds_t kLifespanUs = 20000;
	static constexpr const char *kParam =
		"/sys/module/urdma/parameters/kick_runs";
	std::string saved_;
	QpPair p_;
	std::unique_ptr<Region> src_, dst_;
};

TEST_F(KickRuns, AKickExecutesTheWqeBeforePostReturns)
{
	ASSERT_NO_FATAL_FAILURE(start("Y", 43));
	int runs = 0;
	for (int i = 0; i < 40 && runs < 5; i++) {
		Kick k;
		ASSERT_NO_FATAL_FAILURE(post_after_idle(i, &k));
		if (!k.kicked || !k.ran)
			continue;	// the engine was awake, or a race
		runs++;
		EXPECT_EQ(k.at_return, 1u)
			<< "post " << i << " kicked and its kick ran the passes,"
			<< " but no completion was there when it returned";
	}
	EXPECT_GE(runs, 5) << "fewer than 5 of 40 posts after 30 ms idle "
			   << "found the engine asleep and ran its passes";
}

TEST_F(KickRuns, WithKickRunsOffAKickWakesTheThread)
{
	ASSERT_NO_FATAL_FAILURE(start("N", 44));
	int kicks = 0;
	for (int i = 0; i < 10; i++) {
		Kick k;
		ASSERT_NO_FATAL_FAILURE(post_after_idle(i, &k));
		EXPECT_FALSE(k.ran) << "post " << i << ": a kick ran passes "
				    << "with kick_runs=N";
		kicks += k.kicked;
	}
	EXPECT_GE(kicks, 5) << "fewer than 5 of 10 posts after 30 ms idle "
			    << "kicked a sleeping engine";
}

/*
 * Receive-kick elision (uapi: URDMA_DEVICE_CAP_ERR_QPS): a sleeping engine
 * needs a kick for a receive only to flush it in ERROR.  While none of its
 * QPs is in ERROR, a receive posted to it does not kick, and a SEND that
 * follows still finds it.
 */
TEST_F(KickRuns, AReceiveDoesNotKickWhileNoQpIsInError)
{
	ASSERT_NO_FATAL_FAILURE(start("Y", 45));
	QpPair &p = p_;
	int quiet = 0;
	for (int i = 0; i < 5; i++) {
		usleep(30000);
		const long long k0 = counter("kicks");
		ASSERT_EQ(post_recv(p.b(), 100 + i, { dst_->sge(i * 64, 64) }),
			  0);
		usleep(kLifespanUs);
		quiet += counter("kicks") == k0;
		ASSERT_EQ(post_send_verbs(p.a(), { send_wr(i, IBV_WR_SEND,
							   { src_->sge(i * 64,
								       64) }) }),
			  0);
		std::vector<ibv_wc> wcs = poll_cq(p.cq_b(), 1);
		ASSERT_EQ(wcs.size(), 1u) << "the SEND was not received";
		EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << wc_str(wcs[0]);
		EXPECT_EQ(wcs[0].wr_id, uint64_t(100 + i));
		EXPECT_EQ(first_diff(dst_->data() + i * 64,
				     src_->data() + i * 64, 64), -1);
		ASSERT_EQ(poll_cq(p.cq_a(), 1).size(), 1u);
	}
	/* Another task's kick may land in a window; most must be quiet. */
	EXPECT_GE(quiet, 4) << "receives posted to a sleeping engine kicked "
			    << "although none of its QPs was in ERROR";
}

/*
 * ... but the engine moves a QP to ERROR on its own (here: a WRITE with
 * a bad rkey), unknown to the provider.  A receive posted to that QP
 * while the engine sleeps kicks, and is flushed.
 */
TEST_F(KickRuns, AReceiveToAQpTheEngineMovedToErrorIsFlushed)
{
	ASSERT_NO_FATAL_FAILURE(start("Y", 46));
	QpPair &p = p_;
	ASSERT_EQ(post_send_verbs(p.a(), { rdma_wr(1, IBV_WR_RDMA_WRITE,
						   { src_->sge(0, 64) },
						   dst_->addr(),
						   bad_key(dst_->rkey())) }),
		  0);
	std::vector<ibv_wc> wcs = poll_cq(p.cq_a(), 1);
	ASSERT_EQ(wcs.size(), 1u);
	EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR) << wc_str(wcs[0]);
	usleep(30000);
	const long long k0 = counter("kicks");
	ASSERT_EQ(post_recv(p.a(), 7, { dst_->sge(0, 64) }), 0);
	wcs = poll_cq(p.cq_a(), 1);
	ASSERT_EQ(wcs.size(), 1u) << "a receive posted to a QP in ERROR was "
				  << "not flushed";
	EXPECT_EQ(wcs[0].wr_id, 7u);
	EXPECT_EQ(wcs[0].status, IBV_WC_WR_FLUSH_ERR) << wc_str(wcs[0]);
	usleep(kLifespanUs);
	EXPECT_GE(counter("kicks") - k0, 1) << "the receive did not kick";
}

} // namespace
