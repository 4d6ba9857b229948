// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// XRC: domains, XRC SRQs and their numbers, XRC_SEND (initiator) and
// XRC_RECV (target) QPs.  A message goes to the XRC SRQ its WQE names, if
// that SRQ is of the target's domain, and completes on that SRQ's CQ; the
// SRQ's PD checks the keys of what reaches the target, which has no PD.
#include "fixture.hpp"
#include "qp_pair.hpp"
#include "verbs.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

using namespace urdma::test;

namespace {

struct XrcdDeleter {
	void operator()(ibv_xrcd *x) const { ibv_close_xrcd(x); }
};
using Xrcd = std::unique_ptr<ibv_xrcd, XrcdDeleter>;

class XrcTest : public PdTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(PdTest::SetUp());
		if (!(attr_.device_cap_flags & IBV_DEVICE_XRC))
			GTEST_SKIP() << device_name() << " has no XRC "
				     << "(IBV_DEVICE_XRC is not set)";
		path_ = query_path(ctx_.get(), 1);
		ASSERT_TRUE(path_.ok()) << path_.error;
		xrcd_ = open_xrcd();
		ASSERT_TRUE(xrcd_) << strerror(errno);
		send_cq_.reset(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr,
					     0));
		ASSERT_TRUE(send_cq_) << strerror(errno);
	}

	// A domain of its own (no file: not shared with other processes),
	// or the domain of file @fd in context @ctx.
	Xrcd open_xrcd(int fd = -1, ibv_context *ctx = nullptr)
	{
		ibv_xrcd_init_attr a{};
		a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
		a.fd = fd;
		a.oflags = O_CREAT;
		return Xrcd(ibv_open_xrcd(ctx ? ctx : ctx_.get(), &a));
	}

	// An XRC SRQ of @xrcd and @pd, completing to @cq.
	Srq xrc_srq(ibv_xrcd *xrcd, ibv_pd *pd, ibv_cq *cq, uint32_t max_wr = 16,
		    ibv_context *ctx = nullptr)
	{
		ibv_srq_init_attr_ex a{};
		a.attr.max_wr = max_wr;
		a.attr.max_sge = 2;
		a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
		a.srq_type = IBV_SRQT_XRC;
		a.pd = pd;
		a.xrcd = xrcd;
		a.cq = cq;
		return Srq(ibv_create_srq_ex(ctx ? ctx : ctx_.get(), &a));
	}

	static uint32_t srq_num(ibv_srq *srq)
	{
		uint32_t n = UINT32_MAX;
		EXPECT_EQ(ibv_get_srq_num(srq, &n), 0);
		return n;
	}

	// An initiator, with the ibv_wr_* API (RC's operations) too.
	Qp xrc_send_qp()
	{
		ibv_qp_init_attr_ex a{};
		a.qp_type = IBV_QPT_XRC_SEND;
		a.send_cq = send_cq_.get();
		a.cap.max_send_wr = 32;
		a.cap.max_send_sge = 2;
		a.comp_mask = IBV_QP_INIT_ATTR_PD |
			      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.pd = pd_.get();
		a.send_ops_flags = IBV_QP_EX_WITH_SEND |
				   IBV_QP_EX_WITH_RDMA_WRITE |
				   IBV_QP_EX_WITH_RDMA_READ |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		return Qp(ibv_create_qp_ex(ctx_.get(), &a));
	}

	Qp xrc_recv_qp(ibv_xrcd *xrcd)
	{
		ibv_qp_init_attr_ex a{};
		a.qp_type = IBV_QPT_XRC_RECV;
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = xrcd;
		return Qp(ibv_create_qp_ex(ctx_.get(), &a));
	}

	// INIT, then RTR connected to @dqpn; the initiator goes on to RTS.
	int connect(ibv_qp *qp, uint32_t dqpn, bool initiator)
	{
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = initiator ? 0 : kRemoteAccess;
		int err = ibv_modify_qp(qp, &a, IBV_QP_STATE |
					IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS);
		if (err)
			return err;
		a = {};
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = initiator ? QpPair::kPsnA : QpPair::kPsnB;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 12;
		a.ah_attr = path_ah_attr(path_);
		int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (!initiator)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		err = ibv_modify_qp(qp, &a, mask);
		if (err || !initiator)
			return err;
		a = {};
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = QpPair::kPsnB;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	}

	// An initiator and a target of @xrcd, connected to each other.
	void pair(ibv_xrcd *xrcd, Qp *ini, Qp *tgt)
	{
		*ini = xrc_send_qp();
		ASSERT_TRUE(*ini) << "XRC_SEND: " << strerror(errno);
		*tgt = xrc_recv_qp(xrcd);
		ASSERT_TRUE(*tgt) << "XRC_RECV: " << strerror(errno);
		ASSERT_EQ(connect(tgt->get(), (*ini)->qp_num, false), 0);
		ASSERT_EQ(connect(ini->get(), (*tgt)->qp_num, true), 0);
	}

	// One WR from @ini to XRC SRQ @srqn, through ibv_post_send or the
	// ibv_wr_* API (ibv_wr_set_xrc_srqn).
	static int post_xrc(ibv_qp *ini, SendWr s, uint32_t srqn,
			    Api api = Api::PostSend)
	{
		s.xrc_srqn = srqn;
		return post_send(ini, api, { s });
	}

	Path path_;
	Xrcd xrcd_;
	Cq send_cq_;
};

TEST_F(XrcTest, DomainsAndSrqNumbers)
{
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq);
	Srq a = xrc_srq(xrcd_.get(), pd_.get(), cq.get());
	ASSERT_TRUE(a) << strerror(errno);
	Srq b = xrc_srq(xrcd_.get(), pd_.get(), cq.get());
	ASSERT_TRUE(b) << strerror(errno);
	EXPECT_NE(srq_num(a.get()), srq_num(b.get()));
	EXPECT_LE(srq_num(a.get()), 0xffffffu);

	ibv_srq_attr q{};
	ASSERT_EQ(ibv_query_srq(a.get(), &q), 0);
	EXPECT_GE(q.max_wr, 16u);

	// ERRORS: an XRC SRQ needs its domain and its CQ; a basic SRQ has
	// no number.
	ibv_srq_init_attr_ex bad{};
	bad.attr.max_wr = 4;
	bad.attr.max_sge = 1;
	bad.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			IBV_SRQ_INIT_ATTR_XRCD;
	bad.srq_type = IBV_SRQT_XRC;
	bad.pd = pd_.get();
	bad.xrcd = xrcd_.get();
	errno = 0;
	EXPECT_FALSE(Srq(ibv_create_srq_ex(ctx_.get(), &bad)));
	EXPECT_EQ(errno, EINVAL);
	ibv_srq_init_attr basic{};
	basic.attr.max_wr = 4;
	basic.attr.max_sge = 1;
	Srq plain(ibv_create_srq(pd_.get(), &basic));
	ASSERT_TRUE(plain);
	uint32_t n;
	EXPECT_EQ(ibv_get_srq_num(plain.get(), &n), EINVAL);

	// An XRC_RECV QP needs a domain; it reports no capacities.
	ibv_qp_init_attr_ex qa{};
	qa.qp_type = IBV_QPT_XRC_RECV;
	errno = 0;
	EXPECT_FALSE(Qp(ibv_create_qp_ex(ctx_.get(), &qa)));
	Qp tgt = xrc_recv_qp(xrcd_.get());
	ASSERT_TRUE(tgt) << strerror(errno);
	ibv_qp_attr at{};
	ibv_qp_init_attr ia{};
	ASSERT_EQ(ibv_query_qp(tgt.get(), &at, IBV_QP_CAP, &ia), 0);
	EXPECT_EQ(ia.cap.max_send_wr, 0u);
	EXPECT_EQ(ia.cap.max_recv_wr, 0u);
}

// SENDs from one initiator land in the XRC SRQ each names, and complete
// on that SRQ's CQ with the target's QP number; through ibv_post_send and
// the ibv_wr_* API.
TEST_F(XrcTest, SendsGoToTheSrqTheyName)
{
	Cq cq_a(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	Cq cq_b(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq_a && cq_b);
	Srq a = xrc_srq(xrcd_.get(), pd_.get(), cq_a.get());
	Srq b = xrc_srq(xrcd_.get(), pd_.get(), cq_b.get());
	ASSERT_TRUE(a && b) << strerror(errno);
	Qp ini, tgt;
	ASSERT_NO_FATAL_FAILURE(pair(xrcd_.get(), &ini, &tgt));

	Region src = make_region(pd_.get(), 8192);
	Region dst = make_region(pd_.get(), 8192);
	ASSERT_TRUE(src && dst);
	fill_pattern(src.data(), 8192, 7);
	ASSERT_EQ(post_srq_recv(a.get(), 100, { dst.sge(0, 4096) }), 0);
	ASSERT_EQ(post_srq_recv(b.get(), 200, { dst.sge(4096, 4096) }), 0);

	SendWr s = send_wr(1, IBV_WR_SEND, { src.sge(0, 3000) });
	ASSERT_EQ(post_xrc(ini.get(), s, srq_num(b.get())), 0);
	s = send_wr(2, IBV_WR_SEND, { src.sge(4096, 1000) });
	ASSERT_EQ(post_xrc(ini.get(), s, srq_num(a.get()), Api::WrApi), 0);

	auto sent = poll_cq(send_cq_.get(), 2);
	ASSERT_EQ(sent.size(), 2u) << wcs_str(sent);
	for (const ibv_wc &wc : sent)
		EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << wc_str(wc);

	auto wb = poll_cq(cq_b.get(), 1);
	ASSERT_EQ(wb.size(), 1u);
	EXPECT_EQ(wb[0].status, IBV_WC_SUCCESS) << wc_str(wb[0]);
	EXPECT_EQ(wb[0].wr_id, 200u);
	EXPECT_EQ(wb[0].byte_len, 3000u);
	EXPECT_EQ(wb[0].qp_num, tgt->qp_num);
	EXPECT_EQ(memcmp(dst.data() + 4096, src.data(), 3000), 0);

	auto wa = poll_cq(cq_a.get(), 1);
	ASSERT_EQ(wa.size(), 1u);
	EXPECT_EQ(wa[0].status, IBV_WC_SUCCESS) << wc_str(wa[0]);
	EXPECT_EQ(wa[0].wr_id, 100u);
	EXPECT_EQ(wa[0].byte_len, 1000u);
	EXPECT_EQ(wa[0].qp_num, tgt->qp_num);
	EXPECT_EQ(memcmp(dst.data(), src.data() + 4096, 1000), 0);
}

// WRITE, READ and FETCH_ADD reach memory of the named SRQ's PD; an rkey
// of another PD is a remote access error.
TEST_F(XrcTest, RemoteAccessUsesTheSrqPd)
{
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other);
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq);
	Srq srq = xrc_srq(xrcd_.get(), other.get(), cq.get());
	ASSERT_TRUE(srq) << strerror(errno);
	Qp ini, tgt;
	ASSERT_NO_FATAL_FAILURE(pair(xrcd_.get(), &ini, &tgt));

	Region local = make_region(pd_.get(), 4096);
	Region target = make_region(other.get(), 4096);
	ASSERT_TRUE(local && target);
	fill_pattern(local.data(), 1024, 3);
	fill_pattern(target.data() + 2048, 1024, 4);
	const uint32_t n = srq_num(srq.get());

	ASSERT_EQ(post_xrc(ini.get(), rdma_wr(1, IBV_WR_RDMA_WRITE,
					      { local.sge(0, 1024) },
					      target.addr(), target.rkey()),
			   n), 0);
	ASSERT_EQ(post_xrc(ini.get(),
			   rdma_wr(2, IBV_WR_RDMA_READ,
				   { local.sge(2048, 1024) },
				   target.addr(2048), target.rkey()),
			   n, Api::WrApi), 0);
	*(uint64_t *)(target.data() + 3072) = 40;
	SendWr fa = rdma_wr(3, IBV_WR_ATOMIC_FETCH_AND_ADD,
			    { local.sge(3072, 8) }, target.addr(3072),
			    target.rkey());
	fa.compare_add = 2;
	ASSERT_EQ(post_xrc(ini.get(), fa, n), 0);
	auto wcs = poll_cq(send_cq_.get(), 3);
	ASSERT_EQ(wcs.size(), 3u) << wcs_str(wcs);
	for (const ibv_wc &wc : wcs)
		EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << wc_str(wc);
	EXPECT_EQ(memcmp(target.data(), local.data(), 1024), 0);
	EXPECT_EQ(memcmp(local.data() + 2048, target.data() + 2048, 1024), 0);
	EXPECT_EQ(*(uint64_t *)(local.data() + 3072), 40u);
	EXPECT_EQ(*(uint64_t *)(target.data() + 3072), 42u);

	// ERRORS: the rkey of an MR of the initiator's PD, not the SRQ's.
	ASSERT_EQ(post_xrc(ini.get(), rdma_wr(4, IBV_WR_RDMA_WRITE,
					      { local.sge(0, 64) },
					      local.addr(1024), local.rkey()),
			   n), 0);
	wcs = poll_cq(send_cq_.get(), 1);
	ASSERT_EQ(wcs.size(), 1u);
	EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR) << wc_str(wcs[0]);
	EXPECT_TRUE(all_bytes(local.data() + 1024, 64, 0));
}

// ERRORS: a WQE that names no XRC SRQ, or one of another domain, is an
// invalid request; nothing lands in the other domain's SRQ.
TEST_F(XrcTest, SrqOfAnotherDomainIsInvalidRequest)
{
	Xrcd other = open_xrcd();
	ASSERT_TRUE(other) << strerror(errno);
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq);
	Srq foreign = xrc_srq(other.get(), pd_.get(), cq.get());
	ASSERT_TRUE(foreign) << strerror(errno);
	Region r = make_region(pd_.get(), 4096);
	ASSERT_TRUE(r);
	ASSERT_EQ(post_srq_recv(foreign.get(), 9, { r.sge(0, 4096) }), 0);

	const uint32_t bad[] = { srq_num(foreign.get()), 0xfffffe };
	for (uint32_t n : bad) {
		SCOPED_TRACE("srqn " + std::to_string(n));
		Qp ini, tgt;
		ASSERT_NO_FATAL_FAILURE(pair(xrcd_.get(), &ini, &tgt));
		ASSERT_EQ(post_xrc(ini.get(),
				   send_wr(1, IBV_WR_SEND, { r.sge(0, 64) }),
				   n), 0);
		auto wcs = poll_cq(send_cq_.get(), 1);
		ASSERT_EQ(wcs.size(), 1u);
		EXPECT_EQ(wcs[0].status, IBV_WC_REM_INV_REQ_ERR)
			<< wc_str(wcs[0]);
	}
	EXPECT_TRUE(poll_quiet(cq.get()).empty());

	// A number beyond 24 bits is refused at posting.
	Qp ini = xrc_send_qp();
	ASSERT_TRUE(ini);
	ASSERT_EQ(connect(ini.get(), 2, true), 0);
	EXPECT_EQ(post_xrc(ini.get(), send_wr(1, IBV_WR_SEND, { r.sge(0, 8) }),
			   1u << 24), EINVAL);
}

// The target is the domain's: ibv_open_qp finds it by number, and the
// handle queries it; the target outlives the handle.
TEST_F(XrcTest, OpenTheTargetByNumber)
{
	Qp tgt = xrc_recv_qp(xrcd_.get());
	ASSERT_TRUE(tgt) << strerror(errno);
	ibv_qp_open_attr oa{};
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		       IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = tgt->qp_num;
	oa.xrcd = xrcd_.get();
	oa.qp_type = IBV_QPT_XRC_RECV;
	Qp opened(ibv_open_qp(ctx_.get(), &oa));
	ASSERT_TRUE(opened) << strerror(errno);
	EXPECT_EQ(opened->qp_num, tgt->qp_num);
	EXPECT_EQ(qp_state(opened.get()), IBV_QPS_RESET);
	ASSERT_EQ(connect(opened.get(), 2, false), 0);
	EXPECT_EQ(qp_state(tgt.get()), IBV_QPS_RTR);

	// ERRORS: a target has no queue of its own to post to, whichever
	// handle it is posted through (an opened one's state is unknown to
	// libibverbs).
	Region r = make_region(pd_.get(), 64);
	ASSERT_TRUE(r);
	for (ibv_qp *qp : { tgt.get(), opened.get() }) {
		EXPECT_EQ(post_send_verbs(qp, { send_wr(1, IBV_WR_SEND,
							{ r.sge(0, 8) }) }),
			  EINVAL);
		EXPECT_EQ(post_recv(qp, 2, { r.sge(0, 8) }), EINVAL);
	}

	// ERRORS: no such QP.
	oa.qp_num = 0xfffffe;
	errno = 0;
	EXPECT_FALSE(Qp(ibv_open_qp(ctx_.get(), &oa)));
	EXPECT_NE(errno, 0);
}

// A domain shared through a file: another process opens it, makes an SRQ
// in it, and receives through this process's target what this process's
// initiator sends to that SRQ, into memory of its own PD.
TEST_F(XrcTest, ADomainSharedWithAnotherProcess)
{
	char path[] = "/tmp/urdma-xrcd-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_GE(fd, 0) << strerror(errno);
	unlink(path);
	Xrcd shared = open_xrcd(fd);
	ASSERT_TRUE(shared) << strerror(errno);
	Qp ini, tgt;
	ASSERT_NO_FATAL_FAILURE(pair(shared.get(), &ini, &tgt));
	Region src = make_region(pd_.get(), 4096);
	ASSERT_TRUE(src);
	fill_pattern(src.data(), 4096, 11);

	int to_parent[2], to_child[2];
	ASSERT_EQ(pipe(to_parent), 0);
	ASSERT_EQ(pipe(to_child), 0);
	const uint32_t tgt_qpn = tgt->qp_num;
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		// The child's verdict is its exit status: 0, or the step
		// that failed.
		Context ctx = open_device();
		if (!ctx)
			_exit(10);
		Pd pd(ibv_alloc_pd(ctx.get()));
		Cq cq(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0));
		Xrcd x = open_xrcd(fd, ctx.get());
		if (!pd || !cq || !x)
			_exit(11);
		Srq srq = xrc_srq(x.get(), pd.get(), cq.get(), 4, ctx.get());
		Region dst = make_region(pd.get(), 4096);
		uint32_t n = 0;
		if (!srq || !dst || ibv_get_srq_num(srq.get(), &n) ||
		    post_srq_recv(srq.get(), 7, { dst.sge(0, 4096) }))
			_exit(12);
		if (write(to_parent[1], &n, sizeof(n)) != sizeof(n))
			_exit(13);
		auto wc = poll_cq(cq.get(), 1);
		if (wc.size() != 1 || wc[0].status != IBV_WC_SUCCESS ||
		    wc[0].wr_id != 7 || wc[0].byte_len != 2000 ||
		    wc[0].qp_num != tgt_qpn)
			_exit(14);
		uint8_t want[2000];
		fill_pattern(want, 2000, 11);
		char go;
		if (memcmp(dst.data(), want, 2000) ||
		    read(to_child[0], &go, 1) != 1)
			_exit(15);
		_exit(0);
	}
	close(to_parent[1]);
	close(to_child[0]);
	uint32_t n = 0;
	ASSERT_EQ(read(to_parent[0], &n, sizeof(n)), ssize_t(sizeof(n)))
		<< "the child did not make its SRQ";
	ASSERT_EQ(post_xrc(ini.get(), send_wr(1, IBV_WR_SEND,
					      { src.sge(0, 2000) }), n), 0);
	auto wcs = poll_cq(send_cq_.get(), 1);
	ASSERT_EQ(wcs.size(), 1u);
	EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << wc_str(wcs[0]);
	// The child checks, then waits to be told: its SRQ lives until then.
	EXPECT_EQ(write(to_child[1], "y", 1), 1);
	int status = 0;
	waitpid(pid, &status, 0);
	EXPECT_TRUE(WIFEXITED(status)) << "status " << status;
	EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's failing step";
	close(to_parent[0]);
	close(to_child[1]);
	close(fd);
}

} // namespace
