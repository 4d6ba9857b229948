// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Queue memory: every ring and doorbell page is user memory the kernel
// pins (ABI "Queues"), so rings are subject to RLIMIT_MEMLOCK and must be
// unpinned however their process ends.
#include "fixture.hpp"
#include "mapping.hpp"
#include "verbs.hpp"

#include <gtest/gtest.h>
#include <rdma/urdma-abi.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

using namespace urdma::test;

namespace {

constexpr long kPage = 4096;
// The largest WQE stride (64-byte header plus 256 bytes), which 16 SGEs
// need on both the SQ and the RQ/SRQ.
constexpr long kMaxStride = URDMA_MAX_WQE_BLOCKS * URDMA_WQE_BLOCK;

// A process killed while holding CQs, QPs, an SRQ and MRs leaves no
// pinned page behind.
TEST(QueueMemory, KilledProcessReleasesRingPins)
{
	long before = settled_pins();
	if (before < 0)
		GTEST_SKIP() << "/proc/vmstat has no nr_foll_pin_* counters";

	constexpr int kCqs = 2, kQps = 2, kCqe = 65536, kWr = 16384;
	constexpr size_t kMrLen = 16u << 20;
	// What the child pins at the least: rings hold at least what was
	// asked for, at the strides ABI "Queues" fixes for 16 SGEs; the MR
	// buffer is registered twice.
	const long ring_pages = kCqs * long(kCqe) * URDMA_CQE_SIZE / kPage +
				kQps * 2 * long(kWr) * kMaxStride / kPage +
				long(kWr) * kMaxStride / kPage;
	const long mr_pages = 2 * long(kMrLen) / kPage;

	// Each step that fails reports a letter.
	auto child = [&](auto report) {
		Context ctx = open_device();
		if (!ctx)
			report('o');
		Pd pd(ibv_alloc_pd(ctx.get()));
		if (!pd)
			report('p');
		std::vector<Cq> cqs;
		for (int i = 0; i < kCqs; i++) {
			cqs.emplace_back(ibv_create_cq(ctx.get(), kCqe, nullptr,
						       nullptr, 0));
			if (!cqs.back())
				report('c');
		}
		std::vector<Qp> qps;
		for (int i = 0; i < kQps; i++) {
			ibv_qp_init_attr a = qp_init_attr(
				IBV_QPT_RC, cqs[i % kCqs].get(),
				qp_cap(kWr, kWr, 16, 16));
			qps.emplace_back(ibv_create_qp(pd.get(), &a));
			if (!qps.back())
				report('q');
		}
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = kWr;
		sa.attr.max_sge = 16;
		Srq srq(ibv_create_srq(pd.get(), &sa));
		if (!srq)
			report('s');
		Mapping buf(kMrLen);
		std::vector<Mr> mrs;
		for (int i = 0; i < 2; i++) {
			mrs.emplace_back(ibv_reg_mr(pd.get(), buf.get(), kMrLen,
						    IBV_ACCESS_LOCAL_WRITE));
			if (!mrs.back())
				report('m');
		}
		report('y');
	};
	char c = 0;
	long during = 0;
	ASSERT_NO_FATAL_FAILURE(run_then_kill_child(child, &c, &during));
	ASSERT_EQ(c, 'y') << "the child failed to create its objects: o open, "
			     "p PD, c CQ, q QP, s SRQ, m MR";

	// Unrelated pins may come and go; ours must all be gone.
	long after = pins_after_exit(before);
	EXPECT_LE(after, before) << "pins leaked: " << after - before;
	// Most of what the child pinned must have been seen: more than the
	// MRs alone account for, so the rings were pinned (and released).
	EXPECT_GT(during - after, 3 * (ring_pages + mr_pages) / 4)
		<< "ring pages " << ring_pages << ", MR pages " << mr_pages;
}

// ERRORS: pinning beyond RLIMIT_MEMLOCK without CAP_IPC_LOCK is ENOMEM,
// for rings as for MRs.  The child drops root (and with it CAP_IPC_LOCK)
// as MrLimits.RlimitMemlockIsHonoured does.
TEST(QueueMemory, RlimitMemlockIsHonouredForRings)
{
	auto child = [](ibv_context *ctx, ibv_pd *pd) {
		// A one-page ring and its doorbell page fit.
		Cq small(ibv_create_cq(ctx, 1, nullptr, nullptr, 0));
		if (!small)
			_exit(12);
		// 2 MiB of CQ ring does not.
		errno = 0;
		Cq big(ibv_create_cq(ctx, 65536, nullptr, nullptr, 0));
		if (big)
			_exit(13);
		if (errno != ENOMEM)
			_exit(14);
		// Nor 10 MiB of SQ and RQ.
		ibv_qp_init_attr qa = qp_init_attr(IBV_QPT_RC, small.get(),
						   qp_cap(16384, 16384, 16, 16));
		errno = 0;
		Qp qp(ibv_create_qp(pd, &qa));
		if (qp)
			_exit(15);
		if (errno != ENOMEM)
			_exit(16);
		// Nor 5 MiB of SRQ.
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 16384;
		sa.attr.max_sge = 16;
		errno = 0;
		Srq srq(ibv_create_srq(pd, &sa));
		if (srq)
			_exit(17);
		if (errno != ENOMEM)
			_exit(18);
		// Failures and destroys give their pages back: a 16 KiB ring
		// comes and goes many times within the 64 KiB.
		for (int i = 0; i < 32; i++) {
			Cq cq(ibv_create_cq(ctx, 512, nullptr, nullptr, 0));
			if (!cq)
				_exit(19);
		}
		// And small QPs still fit.
		ibv_qp_init_attr sq = qp_init_attr(IBV_QPT_RC, small.get(),
						   qp_cap(1, 1, 1, 1));
		for (int i = 0; i < 32; i++) {
			Qp q(ibv_create_qp(pd, &sq));
			if (!q)
				_exit(20);
		}
		_exit(0);
	};
	int status = -1;
	ASSERT_NO_FATAL_FAILURE(run_memlock_limited_child(child, &status));
	EXPECT_EQ(status, 0)
		<< "10 setup, 11 open or PD, 12 small CQ failed, 13 big CQ "
		   "succeeded, 14 big CQ wrong errno, 15 big QP succeeded, 16 "
		   "big QP wrong errno, 17 big SRQ succeeded, 18 big SRQ wrong "
		   "errno, 19 create/destroy CQ cycle failed (pages not "
		   "returned), 20 small QP cycle failed";
}

} // namespace
