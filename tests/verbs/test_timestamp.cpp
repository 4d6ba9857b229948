// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Completion timestamps: extended CQs created with
// IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and _WALLCLOCK, the device clock
// (hca_core_clock, completion_timestamp_mask) and ibv_query_rt_values_ex.
// Each stamp must fall between clock readings taken around the work, on
// the clock it claims; resizing a CQ and cleaning a destroyed QP's CQEs
// out of it must carry the stamps along.
#include "datapath.hpp"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

constexpr uint64_t kTsFlags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

uint64_t clock_ns(clockid_t c)
{
	timespec t{};
	clock_gettime(c, &t);
	return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

// A reading of both clocks.
struct Instant {
	uint64_t raw = clock_ns(CLOCK_MONOTONIC);
	uint64_t wall = clock_ns(CLOCK_REALTIME);
};

struct Stamped {
	uint64_t wr_id;
	ibv_wc_status status;
	uint32_t qp_num;
	uint64_t ts, wall;
};

// Up to @n completions of @cqx through the extended polling API.
std::vector<Stamped> poll_ex(ibv_cq_ex *cqx, size_t n,
			     int ms = timeout_ms())
{
	std::vector<Stamped> out;
	const int64_t end = now_ms() + ms;
	ibv_poll_cq_attr pa{};
	while (out.size() < n) {
		int ret = ibv_start_poll(cqx, &pa);
		if (ret == ENOENT) {
			if (now_ms() > end)
				break;
			sched_yield();
			continue;
		}
		if (ret)
			break;
		do {
			out.push_back({ cqx->wr_id, cqx->status,
					ibv_wc_read_qp_num(cqx),
					ibv_wc_read_completion_ts(cqx),
					ibv_wc_read_completion_wallclock_ns(
						cqx) });
		} while (out.size() < n && ibv_next_poll(cqx) == 0);
		ibv_end_poll(cqx);
	}
	return out;
}

class Timestamps : public DataTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(DataTest::SetUp());
		if (!device_is_urdma() && !dev_ex_.completion_timestamp_mask)
			GTEST_SKIP() << "the device has no completion "
					"timestamps (rxe has none)";
	}

	// An extended CQ with the standard fields and both stamps.
	void make_cq(int cqe = 64)
	{
		ibv_cq_init_attr_ex ia{};
		ia.cqe = cqe;
		ia.wc_flags = IBV_WC_STANDARD_FLAGS | kTsFlags;
		cqx_ = ibv_create_cq_ex(ctx_.get(), &ia);
		cq_.reset(ibv_cq_ex_to_cq(cqx_));
		ASSERT_TRUE(cq_) << "ibv_create_cq_ex: " << strerror(errno);
	}

	QpPairOptions on_cq() const
	{
		QpPairOptions o;
		o.cq_a = cq_.get();
		o.cq_b = cq_.get();
		return o;
	}

	// Each completion succeeded and was stamped between @t0 and @t1.
	static void expect_within(const std::vector<Stamped> &got,
				  const Instant &t0, const Instant &t1)
	{
		uint64_t last = 0;
		for (const Stamped &s : got) {
			SCOPED_TRACE("wr_id " + std::to_string(s.wr_id));
			EXPECT_EQ(s.status, IBV_WC_SUCCESS);
			EXPECT_GE(s.ts, t0.raw) << "stamped before the post";
			EXPECT_LE(s.ts, t1.raw) << "stamped after the poll";
			EXPECT_GE(s.wall, t0.wall) << "wall clock";
			EXPECT_LE(s.wall, t1.wall) << "wall clock";
			EXPECT_GE(s.ts, last) << "out of order";
			last = s.ts;
		}
	}

	ibv_cq_ex *cqx_ = nullptr;
	Cq cq_;
};

// A 1 GHz clock (nanoseconds) that never wraps, readable from user space.
TEST_F(Timestamps, DeviceReportsItsClock)
{
	EXPECT_EQ(dev_ex_.hca_core_clock, 1000000u) << "kHz";
	EXPECT_EQ(dev_ex_.completion_timestamp_mask, ~0ull);

	ibv_values_ex v{};
	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	const uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	ASSERT_EQ(ibv_query_rt_values_ex(ctx_.get(), &v), 0);
	const uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
	EXPECT_EQ(v.comp_mask, uint32_t(IBV_VALUES_MASK_RAW_CLOCK));
	const uint64_t raw = uint64_t(v.raw_clock.tv_sec) * 1000000000ull +
			     uint64_t(v.raw_clock.tv_nsec);
	EXPECT_GE(raw, t0);
	EXPECT_LE(raw, t1);

	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | 1u << 7;
	EXPECT_EQ(ibv_query_rt_values_ex(ctx_.get(), &v), EINVAL)
		<< "an unknown value";
}

// Sends, receives and WRITEs, each stamped when it completed.
TEST_F(Timestamps, EveryCompletionIsStampedWhenItHappens)
{
	ASSERT_NO_FATAL_FAILURE(make_cq());
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, on_cq()));
	Region src = region(4096), dst = region(4096);
	ASSERT_TRUE(src && dst);

	const Instant t0;
	for (uint64_t i = 0; i < 4; i++) {
		ASSERT_EQ(post_recv(p.b(), 100 + i, { dst.sge(i * 64, 64) }),
			  0);
		ASSERT_EQ(p.post_a({ send_wr(i, IBV_WR_SEND,
					     { src.sge(i * 64, 64) }) }), 0);
		ASSERT_EQ(p.post_a({ rdma_wr(10 + i, IBV_WR_RDMA_WRITE,
					     { src.sge(0, 512) },
					     dst.addr(1024), dst.rkey()) }),
			  0);
	}
	std::vector<Stamped> got = poll_ex(cqx_, 12);
	const Instant t1;
	ASSERT_EQ(got.size(), 12u);
	expect_within(got, t0, t1);
	EXPECT_TRUE(poll_ex(cqx_, 1, 50).empty());
}

/*
 * Completions still in the CQ when it is resized are moved with their
 * stamps; and the classic ibv_poll_cq walks 64-byte entries too.
 */
TEST_F(Timestamps, ResizeKeepsTheStampsAndPollCqWorks)
{
	ASSERT_NO_FATAL_FAILURE(make_cq(8));
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, on_cq()));
	Region src = region(4096), dst = region(4096);
	ASSERT_TRUE(src && dst);

	const Instant t0;
	for (uint64_t i = 0; i < 4; i++)
		ASSERT_EQ(p.post_a({ rdma_wr(i, IBV_WR_RDMA_WRITE,
					     { src.sge(0, 256) },
					     dst.addr(0), dst.rkey()) }), 0);
	// The resize waits for the engine to retire what was posted.
	ASSERT_EQ(ibv_resize_cq(cq_.get(), 200), 0);
	EXPECT_GE(cq_->cqe, 200);
	std::vector<Stamped> got = poll_ex(cqx_, 4);
	const Instant t1;
	ASSERT_EQ(got.size(), 4u);
	expect_within(got, t0, t1);
	for (uint64_t i = 0; i < 4; i++)
		EXPECT_EQ(got[i].wr_id, i);

	for (uint64_t i = 0; i < 3; i++)
		ASSERT_EQ(p.post_a({ rdma_wr(20 + i, IBV_WR_RDMA_WRITE,
					     { src.sge(0, 64) }, dst.addr(0),
					     dst.rkey()) }), 0);
	std::vector<ibv_wc> wcs = poll_cq(cq_.get(), 3);
	ASSERT_EQ(wcs.size(), 3u);
	for (uint64_t i = 0; i < 3; i++) {
		expect_send_wc(wcs[i], 20 + i, IBV_WC_RDMA_WRITE, p.a());
	}
}

/*
 * Destroying a QP drops its CQEs from a shared CQ and moves the others up;
 * theirs keep their stamps.
 */
TEST_F(Timestamps, ADestroyedQpsCqesGoAndTheOthersKeepTheirStamps)
{
	ASSERT_NO_FATAL_FAILURE(make_cq());
	std::unique_ptr<QpPair> gone(new QpPair);
	QpPair stays;
	ASSERT_NO_FATAL_FAILURE(make_pair(gone.get(), on_cq()));
	ASSERT_NO_FATAL_FAILURE(make_pair(&stays, on_cq()));
	Region src = region(4096), dst = region(4096);
	ASSERT_TRUE(src && dst);

	const Instant t0;
	auto write = [&](const QpPair &p, uint64_t id) {
		return p.post_a({ rdma_wr(id, IBV_WR_RDMA_WRITE,
					  { src.sge(0, 64) }, dst.addr(0),
					  dst.rkey()) });
	};
	// gone's CQEs before, between and after stays'.
	ASSERT_EQ(write(*gone, 1), 0);
	ASSERT_EQ(write(stays, 2), 0);
	ASSERT_EQ(write(*gone, 3), 0);
	ASSERT_EQ(write(stays, 4), 0);
	ASSERT_EQ(write(*gone, 5), 0);
	// Let the engine complete them all before gone's QPs are destroyed
	// (if it has not, there is less to clean, and the test still holds).
	usleep(200 * 1000);
	const uint32_t stays_qpn = stays.a()->qp_num;
	gone.reset();
	std::vector<Stamped> got = poll_ex(cqx_, 2);
	const Instant t1;
	ASSERT_EQ(got.size(), 2u);
	expect_within(got, t0, t1);
	EXPECT_EQ(got[0].wr_id, 2u);
	EXPECT_EQ(got[1].wr_id, 4u);
	for (const Stamped &s : got)
		EXPECT_EQ(s.qp_num, stays_qpn);
	EXPECT_TRUE(poll_ex(cqx_, 1, 50).empty());
}

} // namespace
