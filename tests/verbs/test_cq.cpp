// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Completion queues: sizes and limits, extended CQs, polling and arming an
// empty CQ, completion channels, resize, and CQs that QPs still use.  There
// is no engine yet, so every CQ here stays empty.
#include "edge.hpp"
#include "fixture.hpp"
#include "verbs.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <vector>

using namespace urdma::test;

namespace {

class CqTest : public PdTest {
protected:
	Cq create(int cqe, ibv_comp_channel *ch = nullptr, int vector = 0)
	{
		return Cq(ibv_create_cq(ctx_.get(), cqe, nullptr, ch, vector));
	}

	// create_cq expecting failure: its errno, 0 if it succeeded.
	int create_fails(int cqe, ibv_comp_channel *ch = nullptr,
			 int vector = 0)
	{
		return create_errno([&] { return create(cqe, ch, vector); });
	}

	// An RC QP completing to @scq and @rcq, which it keeps busy.
	Qp make_qp(ibv_cq *scq, ibv_cq *rcq)
	{
		ibv_qp_init_attr a = qp_init_attr(IBV_QPT_RC, scq);
		a.recv_cq = rcq;
		return Qp(ibv_create_qp(pd_.get(), &a));
	}
};

TEST_F(CqTest, CreateWithVariousSizes)
{
	for (int cqe : { 1, 2, 3, 100, 1000, 4097, attr_.max_cqe }) {
		SCOPED_TRACE("cqe " + std::to_string(cqe));
		Cq cq = create(cqe);
		ASSERT_TRUE(cq) << strerror(errno);
		// The ring holds at least what was asked for, and never more
		// than the device allows.
		EXPECT_GE(cq->cqe, cqe);
		EXPECT_LE(cq->cqe, attr_.max_cqe);
		EXPECT_EQ(cq->context, ctx_.get());
		EXPECT_EQ(cq->channel, nullptr);
		EXPECT_EQ(ibv_destroy_cq(cq.release()), 0);
	}
}

// ERRORS: cqe beyond max_cqe is EINVAL.  So is a CQ of no entries (cqe 0,
// or negative): the ERRORS table does not name it, rxe rejects it alike.
TEST_F(CqTest, SizeOutOfRangeIsEinval)
{
	EXPECT_EQ(create_fails(0), EINVAL);
	EXPECT_EQ(create_fails(-1), EINVAL);
	EXPECT_EQ(create_fails(attr_.max_cqe + 1), EINVAL);
	EXPECT_EQ(create_fails(2 * attr_.max_cqe), EINVAL);
	// Exactly at the edge is fine.
	EXPECT_EQ(create_fails(attr_.max_cqe), 0);
}

TEST_F(CqTest, EmptyCqPollsNothing)
{
	Cq cq = create(16);
	ASSERT_TRUE(cq) << strerror(errno);
	ibv_wc wc[16];
	memset(wc, 0xa5, sizeof(wc));
	EXPECT_EQ(ibv_poll_cq(cq.get(), 16, wc), 0);
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, wc), 0);
	// Still empty on every further look.
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(ibv_poll_cq(cq.get(), 16, wc), 0) << "poll " << i;
}

TEST_F(CqTest, RequestNotifySucceeds)
{
	Cq cq = create(16);
	ASSERT_TRUE(cq) << strerror(errno);
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 1), 0);
	// Re-arming an armed CQ is allowed (the doorbell carries a sequence
	// number); nothing completes, so nothing is polled.
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(ibv_req_notify_cq(cq.get(), i & 1), 0) << "arm " << i;
	ibv_wc wc;
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, &wc), 0);
}

// Extended CQs with the fields a urdma CQE carries.
TEST_F(CqTest, ExtendedCqStartsEmpty)
{
	ibv_cq_init_attr_ex ia{};
	ia.cqe = 64;
	ia.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
		      IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
		      IBV_WC_EX_WITH_SL;
	ibv_cq_ex *cqx = ibv_create_cq_ex(ctx_.get(), &ia);
	Cq cq(ibv_cq_ex_to_cq(cqx));
	ASSERT_TRUE(cq) << strerror(errno);
	EXPECT_GE(cq->cqe, 64);

	ibv_poll_cq_attr pa{};
	// ENOENT means empty; ibv_end_poll() must not follow it.
	EXPECT_EQ(ibv_start_poll(cqx, &pa), ENOENT);
	EXPECT_EQ(ibv_start_poll(cqx, &pa), ENOENT);
	// The classic verbs work on an extended CQ too.
	ibv_wc wc;
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, &wc), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
	EXPECT_EQ(ibv_start_poll(cqx, &pa), ENOENT);
}

TEST_F(CqTest, ExtendedCqSizeOutOfRangeIsEinval)
{
	for (uint32_t cqe : { 0u, uint32_t(attr_.max_cqe) + 1 }) {
		ibv_cq_init_attr_ex ia{};
		ia.cqe = cqe;
		ia.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
		errno = 0;
		Cq cq(ibv_cq_ex_to_cq(ibv_create_cq_ex(ctx_.get(), &ia)));
		EXPECT_FALSE(cq) << "cqe " << cqe;
		EXPECT_EQ(errno, EINVAL) << "cqe " << cqe << ": "
					 << strerror(errno);
	}
}

// ERRORS: CQ create flags are EOPNOTSUPP.
TEST_F(CqTest, CreateFlagsAreEopnotsupp)
{
	ibv_cq_init_attr_ex ia{};
	ia.cqe = 16;
	ia.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
	ia.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ia.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	Cq cq(ibv_cq_ex_to_cq(ibv_create_cq_ex(ctx_.get(), &ia)));
	EXPECT_FALSE(cq);
	EXPECT_EQ(errno, EOPNOTSUPP) << strerror(errno);
}

TEST_F(CqTest, CompletionChannel)
{
	CompChannel ch(ibv_create_comp_channel(ctx_.get()));
	ASSERT_TRUE(ch) << strerror(errno);
	std::vector<Cq> cqs;
	for (int i = 0; i < 4; i++) {
		cqs.push_back(create(16, ch.get()));
		ASSERT_TRUE(cqs.back()) << "CQ " << i << ": " << strerror(errno);
		EXPECT_EQ(cqs.back()->channel, ch.get());
		EXPECT_EQ(ibv_req_notify_cq(cqs.back().get(), 0), 0);
	}

	// Nothing completed, so no event is pending.
	pollfd pfd = { ch->fd, POLLIN, 0 };
	EXPECT_EQ(poll(&pfd, 1, 50), 0) << "a spurious completion event";
	int fl = fcntl(ch->fd, F_GETFL);
	ASSERT_EQ(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	ibv_cq *ev_cq = nullptr;
	void *ev_ctx = nullptr;
	errno = 0;
	EXPECT_EQ(ibv_get_cq_event(ch.get(), &ev_cq, &ev_ctx), -1);
	EXPECT_EQ(errno, EAGAIN) << strerror(errno);

	// A channel with CQs attached cannot go (libibverbs counts them).
	EXPECT_EQ(ibv_destroy_comp_channel(ch.get()), EBUSY);
	for (Cq &cq : cqs)
		ASSERT_EQ(ibv_destroy_cq(cq.release()), 0);
	EXPECT_EQ(ibv_destroy_comp_channel(ch.release()), 0);
}

// The device has num_comp_vectors vectors; the core rejects others.
TEST_F(CqTest, CompletionVectorIsChecked)
{
	ASSERT_GE(ctx_->num_comp_vectors, 1);
	EXPECT_EQ(create_fails(16, nullptr, ctx_->num_comp_vectors - 1), 0);
	EXPECT_EQ(create_fails(16, nullptr, ctx_->num_comp_vectors), EINVAL);
}

TEST_F(CqTest, ResizeUpAndDown)
{
	Cq cq = create(16);
	ASSERT_TRUE(cq) << strerror(errno);
	ibv_wc wc;

	ASSERT_EQ(ibv_resize_cq(cq.get(), 1000), 0);
	EXPECT_GE(cq->cqe, 1000);
	EXPECT_LE(cq->cqe, attr_.max_cqe);
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, &wc), 0);
	int big = cq->cqe;

	// Down: a new, smaller ring (nothing is outstanding).
	ASSERT_EQ(ibv_resize_cq(cq.get(), 4), 0);
	EXPECT_GE(cq->cqe, 4);
	EXPECT_LT(cq->cqe, big) << "resizing down kept the big ring";
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, &wc), 0);

	// Up to the edge, and back to one entry.
	ASSERT_EQ(ibv_resize_cq(cq.get(), attr_.max_cqe), 0);
	EXPECT_GE(cq->cqe, attr_.max_cqe);
	ASSERT_EQ(ibv_resize_cq(cq.get(), 1), 0);
	EXPECT_GE(cq->cqe, 1);
	EXPECT_LT(cq->cqe, attr_.max_cqe);

	// The resized CQ still polls and arms.
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, &wc), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
	EXPECT_EQ(ibv_destroy_cq(cq.release()), 0);
}

TEST_F(CqTest, ResizeOutOfRangeIsEinval)
{
	Cq cq = create(64);
	ASSERT_TRUE(cq) << strerror(errno);
	int cqe = cq->cqe;
	EXPECT_EQ(ibv_resize_cq(cq.get(), 0), EINVAL);
	EXPECT_EQ(cq->cqe, cqe);
	EXPECT_EQ(ibv_resize_cq(cq.get(), attr_.max_cqe + 1), EINVAL);
	EXPECT_EQ(cq->cqe, cqe);
	EXPECT_EQ(ibv_resize_cq(cq.get(), -1), EINVAL);
	EXPECT_EQ(cq->cqe, cqe);
	// A failed resize leaves a working CQ.
	ibv_wc wc;
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, &wc), 0);
	ASSERT_EQ(ibv_resize_cq(cq.get(), 256), 0);
	EXPECT_GE(cq->cqe, 256);
}

TEST_F(CqTest, ResizeACqThatAQpUses)
{
	Cq cq = create(16);
	ASSERT_TRUE(cq) << strerror(errno);
	Qp qp = make_qp(cq.get(), cq.get());
	ASSERT_TRUE(qp) << strerror(errno);
	ASSERT_EQ(ibv_resize_cq(cq.get(), 512), 0);
	EXPECT_GE(cq->cqe, 512);
	ASSERT_EQ(ibv_resize_cq(cq.get(), 8), 0);
	EXPECT_GE(cq->cqe, 8);
	ibv_wc wc;
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, &wc), 0);
	EXPECT_EQ(ibv_destroy_qp(qp.release()), 0);
	EXPECT_EQ(ibv_destroy_cq(cq.release()), 0);
}

// ERRORS: destroying a CQ that a QP still uses is EBUSY (the core); the CQ
// stays intact and goes once the QP is gone.
TEST_F(CqTest, DestroyingABusyCqIsEbusy)
{
	Cq scq = create(16), rcq = create(16);
	ASSERT_TRUE(scq && rcq) << strerror(errno);
	Qp qp = make_qp(scq.get(), rcq.get());
	ASSERT_TRUE(qp) << strerror(errno);

	EXPECT_EQ(ibv_destroy_cq(scq.get()), EBUSY);
	EXPECT_EQ(ibv_destroy_cq(rcq.get()), EBUSY);

	// Both still work.
	ibv_wc wc;
	EXPECT_EQ(ibv_poll_cq(scq.get(), 1, &wc), 0);
	EXPECT_EQ(ibv_poll_cq(rcq.get(), 1, &wc), 0);
	EXPECT_EQ(ibv_req_notify_cq(scq.get(), 0), 0);
	EXPECT_EQ(ibv_resize_cq(rcq.get(), 64), 0);

	ASSERT_EQ(ibv_destroy_qp(qp.release()), 0);
	EXPECT_EQ(ibv_destroy_cq(scq.release()), 0);
	EXPECT_EQ(ibv_destroy_cq(rcq.release()), 0);
}

TEST_F(CqTest, ManyCqsComeAndGo)
{
	std::vector<Cq> cqs;
	for (int i = 0; i < 256; i++) {
		cqs.push_back(create(1 + i % 64));
		ASSERT_TRUE(cqs.back()) << "CQ " << i << ": " << strerror(errno);
	}
	for (size_t i = 0; i < cqs.size(); i += 2)
		ASSERT_EQ(ibv_destroy_cq(cqs[i].release()), 0);
	for (int i = 0; i < 128; i++) {
		Cq cq = create(100);
		ASSERT_TRUE(cq) << "CQ " << i << ": " << strerror(errno);
	}
}

// max_cq counts every CQ on the device, the MAD layer's included.
TEST_F(CqTest, MaxCqIsEnforcedAtTheEdge)
{
	if (on_debug_kernel())
		GTEST_SKIP() << "16384 CQs each pin a ring page and map it "
				"(minutes under KASAN in TCG, as the MR sweep); the "
				"edge runs on the Debian kernels";
	DeviceUsage used = device_usage();
	ASSERT_TRUE(used.ok()) << used.error;
	EXPECT_GE(used.cq, 1) << "the MAD layer's CQ is missing: "
			      << used.str();
	expect_limit_edge("CQ", attr_.max_cq - used.cq,
			  [&] { return create(1); });
}

} // namespace
