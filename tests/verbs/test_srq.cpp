// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Shared receive queues: sizes and their limits, query, arming the limit,
// no resize, SRQs that QPs still use, and the device-wide max_srq.
#include "edge.hpp"
#include "fixture.hpp"
#include "verbs.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

class SrqTest : public PdTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(PdTest::SetUp());
		cq_.reset(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
		ASSERT_TRUE(cq_) << strerror(errno);
	}

	// An SRQ of @max_wr receives of @max_sge entries; @got receives the
	// sizes it was given.
	Srq create(uint32_t max_wr, uint32_t max_sge, ibv_srq_attr *got = nullptr)
	{
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = max_wr;
		sa.attr.max_sge = max_sge;
		Srq srq(ibv_create_srq(pd_.get(), &sa));
		if (got)
			*got = sa.attr;
		return srq;
	}

	// create_srq expecting failure: its errno, 0 if it succeeded.
	int create_fails(uint32_t max_wr, uint32_t max_sge)
	{
		return create_errno([&] { return create(max_wr, max_sge); });
	}

	ibv_srq_attr query(ibv_srq *srq)
	{
		ibv_srq_attr a{};
		EXPECT_EQ(ibv_query_srq(srq, &a), 0);
		return a;
	}

	Cq cq_;
};

TEST_F(SrqTest, CreateAndQuery)
{
	const std::pair<uint32_t, uint32_t> sizes[] = {
		{ 1, 1 }, { 100, 2 }, { 1000, 5 }, { 4096, 16 },
		{ uint32_t(attr_.max_srq_wr), uint32_t(attr_.max_srq_sge) },
	};
	for (auto [wr, sge] : sizes) {
		SCOPED_TRACE("max_wr " + std::to_string(wr) + " max_sge " +
			     std::to_string(sge));
		ibv_srq_attr got{};
		Srq srq = create(wr, sge, &got);
		ASSERT_TRUE(srq) << strerror(errno);
		EXPECT_EQ(srq->pd, pd_.get());
		EXPECT_EQ(srq->context, ctx_.get());
		EXPECT_GE(got.max_wr, wr);
		EXPECT_GE(got.max_sge, sge);
		EXPECT_LE(got.max_wr, uint32_t(attr_.max_srq_wr));
		EXPECT_LE(got.max_sge, uint32_t(attr_.max_srq_sge));

		// The kernel reports the same sizes, and an unarmed limit.
		ibv_srq_attr q = query(srq.get());
		EXPECT_EQ(q.max_wr, got.max_wr);
		EXPECT_EQ(q.max_sge, got.max_sge);
		EXPECT_EQ(q.srq_limit, 0u);
		EXPECT_EQ(ibv_destroy_srq(srq.release()), 0);
	}
}

// ERRORS: max_wr and max_sge beyond the device are EINVAL.
TEST_F(SrqTest, SizesBeyondTheDeviceAreEinval)
{
	const uint32_t wr = attr_.max_srq_wr, sge = attr_.max_srq_sge;
	ASSERT_GT(wr, 0u);
	ASSERT_GT(sge, 0u);
	EXPECT_EQ(create_fails(wr, 1), 0);
	EXPECT_EQ(create_fails(wr + 1, 1), EINVAL);
	EXPECT_EQ(create_fails(1, sge), 0);
	EXPECT_EQ(create_fails(1, sge + 1), EINVAL);
	EXPECT_EQ(create_fails(UINT32_MAX, 1), EINVAL);
	EXPECT_EQ(create_fails(1, UINT32_MAX), EINVAL);
}

// Arming the limit is a modify of srq_limit, read back by query; a limit
// larger than the SRQ is EINVAL and changes nothing.
TEST_F(SrqTest, ArmTheLimit)
{
	Srq srq = create(100, 1);
	ASSERT_TRUE(srq) << strerror(errno);
	const uint32_t size = query(srq.get()).max_wr;
	ASSERT_GE(size, 100u);

	ibv_srq_attr a{};
	a.srq_limit = 10;
	EXPECT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(query(srq.get()).srq_limit, 10u);

	// As large as the SRQ: fine.
	a.srq_limit = size;
	EXPECT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(query(srq.get()).srq_limit, size);

	// ERRORS: larger than the SRQ.
	a.srq_limit = size + 1;
	EXPECT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_LIMIT), EINVAL);
	a.srq_limit = UINT32_MAX;
	EXPECT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_LIMIT), EINVAL);
	ibv_srq_attr q = query(srq.get());
	EXPECT_EQ(q.srq_limit, size);
	EXPECT_EQ(q.max_wr, size);

	// Re-arming lower works after a failure.
	a.srq_limit = 1;
	EXPECT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(query(srq.get()).srq_limit, 1u);
}

// Resizing (IBV_SRQ_MAX_WR) grows the SRQ and keeps the limit; a size
// beyond max_srq_wr or zero is EINVAL and changes nothing.
TEST_F(SrqTest, ResizeGrowsAndChecksItsBounds)
{
	Srq srq = create(100, 1);
	ASSERT_TRUE(srq) << strerror(errno);
	const ibv_srq_attr before = query(srq.get());

	ibv_srq_attr a{};
	a.max_wr = 2 * before.max_wr;
	ASSERT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_MAX_WR), 0);
	ibv_srq_attr after = query(srq.get());
	EXPECT_GE(after.max_wr, 2 * before.max_wr);
	EXPECT_EQ(after.max_sge, before.max_sge);

	a.max_wr = 0;
	EXPECT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_MAX_WR), EINVAL);
	a.max_wr = 16384 + 1;
	EXPECT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_MAX_WR), EINVAL);
	EXPECT_EQ(query(srq.get()).max_wr, after.max_wr);

	// Both at once: the new size, then the limit against it.
	a.max_wr = 2 * after.max_wr;
	a.srq_limit = 5;
	ASSERT_EQ(ibv_modify_srq(srq.get(), &a,
				 IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(query(srq.get()).srq_limit, 5u);
}

// ERRORS: destroying an SRQ that a QP still uses is EBUSY (the core); the
// SRQ stays intact and goes once the QP is gone.
TEST_F(SrqTest, DestroyingABusySrqIsEbusy)
{
	Srq srq = create(64, 1);
	ASSERT_TRUE(srq) << strerror(errno);
	std::vector<Qp> qps;
	for (ibv_qp_type t : { IBV_QPT_RC, IBV_QPT_UD }) {
		ibv_qp_init_attr qa = qp_init_attr(t, cq_.get(),
						   qp_cap(16, 0, 1, 0), srq.get());
		qps.emplace_back(ibv_create_qp(pd_.get(), &qa));
		ASSERT_TRUE(qps.back()) << strerror(errno);
	}

	EXPECT_EQ(ibv_destroy_srq(srq.get()), EBUSY);
	ibv_srq_attr a{};
	a.srq_limit = 3;
	EXPECT_EQ(ibv_modify_srq(srq.get(), &a, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(query(srq.get()).srq_limit, 3u);

	ASSERT_EQ(ibv_destroy_qp(qps[0].release()), 0);
	EXPECT_EQ(ibv_destroy_srq(srq.get()), EBUSY) << "one QP still uses it";
	ASSERT_EQ(ibv_destroy_qp(qps[1].release()), 0);
	EXPECT_EQ(ibv_destroy_srq(srq.release()), 0);
}

// max_srq counts every SRQ on the device, the kernel's included.
TEST_F(SrqTest, MaxSrqIsEnforcedAtTheEdge)
{
	DeviceUsage used = device_usage();
	ASSERT_TRUE(used.ok()) << used.error;
	expect_limit_edge("SRQ", attr_.max_srq - used.srq,
			  [&] { return create(1, 1); });
}

} // namespace
