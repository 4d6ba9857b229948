// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Attacks a local user can make through the verbs, each of which once
// worked on urdma (docs/security.md lists the rules they break):
//  - writing a read-only file through a memory window whose MR was
//    re-registered over the file's pages;
//  - taking over a connected QP's receive queue or memory by connecting a
//    QP of one's own to it;
//  - sending with another PD's address handle;
//  - reaching QP1 without the GSI Q_Key;
//  - invalidating a type 2 window through a QP it is not bound to;
//  - stalling every QP of the engine, and every destroy of the host, with
//    a kick from a task that is then throttled.
#include "datapath.hpp"
#include "fixture.hpp"
#include "qp_pair.hpp"
#include "verbs.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace urdma::test {
namespace {

constexpr uint8_t kGuard = 0xa5;
constexpr int kMwBindAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;

/*
 * Bring an RC or UC QP of our own to RTS, "connected" to @dest_qpn over
 * @path, failing fast (RC: the shortest timeout urdma honours, one retry).
 */
bool connect_qp(ibv_qp *qp, ibv_qp_type type, const Path &path,
		uint32_t dest_qpn, std::string *why)
{
	ibv_qp_attr at{};
	at.qp_state = IBV_QPS_INIT;
	at.port_num = path.port;
	at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		*why = std::string("INIT: ") + strerror(errno);
		return false;
	}
	at = ibv_qp_attr{};
	at.qp_state = IBV_QPS_RTR;
	at.ah_attr = path_ah_attr(path);
	at.path_mtu = path.mtu;
	at.dest_qp_num = dest_qpn;
	at.rq_psn = 0x303030;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (type == IBV_QPT_RC) {
		at.max_dest_rd_atomic = 1;
		at.min_rnr_timer = 1;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	if (ibv_modify_qp(qp, &at, mask)) {
		*why = std::string("RTR: ") + strerror(errno);
		return false;
	}
	at = ibv_qp_attr{};
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0x404040;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (type == IBV_QPT_RC) {
		at.timeout = 8;		/* about 1 ms */
		at.retry_cnt = 1;
		at.rnr_retry = 1;
		at.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp, &at, mask)) {
		*why = std::string("RTS: ") + strerror(errno);
		return false;
	}
	return true;
}

// A temporary file of @len bytes of pattern @seed; removed with the object.
class TempFile {
public:
	TempFile(size_t len, uint32_t seed) : data_(len)
	{
		char tmpl[] = "/tmp/urdma-security-XXXXXX";
		int fd = mkstemp(tmpl);
		if (fd < 0)
			return;
		path_ = tmpl;
		fill_pattern(data_.data(), len, seed);
		ok_ = write(fd, data_.data(), len) == ssize_t(len);
		close(fd);
	}
	~TempFile()
	{
		if (!path_.empty())
			unlink(path_.c_str());
	}
	bool ok() const { return ok_; }
	const std::string &path() const { return path_; }
	// Whether the file still holds what it was created with.
	bool unchanged() const
	{
		std::vector<uint8_t> now(data_.size());
		int fd = open(path_.c_str(), O_RDONLY);
		if (fd < 0)
			return false;
		ssize_t n = pread(fd, now.data(), now.size(), 0);
		close(fd);
		return n == ssize_t(now.size()) &&
		       memcmp(now.data(), data_.data(), now.size()) == 0;
	}

private:
	std::vector<uint8_t> data_;
	std::string path_;
	bool ok_ = false;
};

// One anonymous page, unmapped with the object (unless mapped over).
class Page {
public:
	Page()
	{
		void *p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED)
			p_ = static_cast<uint8_t *>(p);
	}
	~Page()
	{
		if (p_)
			munmap(p_, kSize);
	}
	uint8_t *data() const { return p_; }
	uint64_t addr() const { return uint64_t(uintptr_t(p_)); }
	static constexpr size_t kSize = 4096;

private:
	uint8_t *p_ = nullptr;
};

class Security : public DataTest {
protected:
	// Bind type 1 window @mw to [@addr, +@len) of @mr through @qp.
	void bind_type1(ibv_qp *qp, ibv_cq *cq, ibv_mw *mw, ibv_mr *mr,
			uint64_t addr, size_t len, int access)
	{
		ibv_mw_bind mb{};
		mb.wr_id = 0xb1;
		mb.send_flags = IBV_SEND_SIGNALED;
		mb.bind_info.mr = mr;
		mb.bind_info.addr = addr;
		mb.bind_info.length = len;
		mb.bind_info.mw_access_flags = access;
		ASSERT_EQ(ibv_bind_mw(qp, mw, &mb), 0) << strerror(errno);
		ibv_wc wc{};
		ASSERT_ONE_WC(cq, wc);
		expect_send_wc(wc, 0xb1, IBV_WC_BIND_MW, qp);
	}

	// Bind type 2 window @mw through @qp (a BIND_MW work request).
	void bind_type2(ibv_qp *qp, ibv_cq *cq, ibv_mw *mw, ibv_mr *mr,
			uint64_t addr, size_t len, uint32_t *rkey)
	{
		SendWr w;
		w.wr_id = 0xb2;
		w.opcode = IBV_WR_BIND_MW;
		w.mw = mw;
		w.rkey = ibv_inc_rkey(mw->rkey);
		w.bind_info.mr = mr;
		w.bind_info.addr = addr;
		w.bind_info.length = len;
		w.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ;
		ASSERT_EQ(post_send(qp, Api::PostSend, { w }), 0);
		ibv_wc wc{};
		ASSERT_ONE_WC(cq, wc);
		expect_send_wc(wc, 0xb2, IBV_WC_BIND_MW, qp);
		*rkey = w.rkey;
	}

	// @qp WRITEs @len bytes of @src to @raddr/@rkey: its completion status.
	ibv_wc_status write_status(ibv_qp *qp, ibv_cq *cq, const Region &src,
				   uint32_t len, uint64_t raddr, uint32_t rkey,
				   uint64_t id)
	{
		if (post_send(qp, Api::PostSend,
			      { rdma_wr(id, IBV_WR_RDMA_WRITE,
					{ src.sge(0, len) }, raddr, rkey) }))
			return IBV_WC_GENERAL_ERR;
		std::vector<ibv_wc> wc = poll_cq(cq, 1);
		if (wc.size() != 1)
			return IBV_WC_GENERAL_ERR;
		EXPECT_EQ(wc[0].wr_id, id);
		return wc[0].status;
	}
};

/*
 * The review's privilege escalation: an MR of an anonymous page with a
 * REMOTE_WRITE window bound to it; a read-only file mapped over the page;
 * the MR re-registered there with no access at all, which pins the file's
 * page-cache pages read-only.  A WRITE through the window must not reach
 * the file: the re-registration killed the window, and without local
 * write the MR could not back a writable window anyway.
 */
TEST_F(Security, WindowCannotWriteAReadOnlyFileAfterRereg)
{
	if (!has_mw())
		GTEST_SKIP() << "the device claims no memory windows";
	Page page;
	ASSERT_TRUE(page.data()) << strerror(errno);
	Mr mr(ibv_reg_mr(pd_.get(), page.data(), Page::kSize, kMwBindAccess));
	ASSERT_TRUE(mr) << strerror(errno);
	Region src = region(4096);
	ASSERT_TRUE(src) << strerror(errno);
	fill_pattern(src.data(), 4096, 21);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, QpPairOptions{}));
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_1));
	ASSERT_TRUE(mw) << strerror(errno);
	ASSERT_NO_FATAL_FAILURE(bind_type1(p.b(), p.cq_b(), mw.get(), mr.get(),
					   page.addr(), Page::kSize,
					   IBV_ACCESS_REMOTE_WRITE));
	// The window works: a's WRITE lands in the page.
	ASSERT_EQ(write_status(p.a(), p.cq_a(), src, 64, page.addr(),
			       mw->rkey, 1), IBV_WC_SUCCESS);
	ASSERT_EQ(first_diff(page.data(), src.data(), 64), -1);

	TempFile file(Page::kSize, 22);
	ASSERT_TRUE(file.ok()) << strerror(errno);
	int fd = open(file.path().c_str(), O_RDONLY);
	ASSERT_GE(fd, 0) << strerror(errno);
	void *m = mmap(page.data(), Page::kSize, PROT_READ,
		       MAP_SHARED | MAP_FIXED, fd, 0);
	close(fd);
	ASSERT_EQ(m, static_cast<void *>(page.data())) << strerror(errno);
	int ret = ibv_rereg_mr(mr.get(), IBV_REREG_MR_CHANGE_TRANSLATION |
				       IBV_REREG_MR_CHANGE_ACCESS,
			       nullptr, page.data(), Page::kSize, 0);
	if (ret) {
		// Linux 6.1 will not pin a shared file mapping for the long
		// term (EFAULT): the attack stops there, the file is safe.
		const int err = errno;
		EXPECT_TRUE(file.unchanged());
		GTEST_SKIP() << "this kernel does not pin the file's pages for "
				"the MR (ibv_rereg_mr: " << strerror(err)
			     << "): the attack cannot start";
	}

	EXPECT_EQ(write_status(p.a(), p.cq_a(), src, 64, page.addr(),
			       mw->rkey, 2), IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(file.unchanged())
		<< "an RDMA WRITE through the window changed a read-only file";
}

// Taking LOCAL_WRITE away from the MR (access only, same pages) ends the
// window's write access at once; binding it again to the MR as it now is
// fails, and once the MR may be written again, binding works again.
TEST_F(Security, ReregOfTheMrInvalidatesItsWindows)
{
	if (!has_mw())
		GTEST_SKIP() << "the device claims no memory windows";
	Region mr = region(8192, kMwBindAccess), src = region(4096);
	ASSERT_TRUE(mr && src) << strerror(errno);
	fill_pattern(src.data(), 4096, 23);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, QpPairOptions{}));
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_1));
	ASSERT_TRUE(mw) << strerror(errno);
	ASSERT_NO_FATAL_FAILURE(bind_type1(p.b(), p.cq_b(), mw.get(),
					   mr.mr.get(), mr.addr(), 8192,
					   IBV_ACCESS_REMOTE_WRITE));
	ASSERT_EQ(write_status(p.a(), p.cq_a(), src, 64, mr.addr(), mw->rkey,
			       1), IBV_WC_SUCCESS);

	ASSERT_EQ(ibv_rereg_mr(mr.mr.get(), IBV_REREG_MR_CHANGE_ACCESS,
			       nullptr, nullptr, 0, IBV_ACCESS_MW_BIND), 0)
		<< strerror(errno);
	memset(mr.data(), kGuard, 8192);
	// The error moved a to ERROR: use a fresh pair for each WRITE.
	EXPECT_EQ(write_status(p.a(), p.cq_a(), src, 64, mr.addr(), mw->rkey,
			       2), IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(mr.data(), 8192, kGuard));

	QpPair q;
	ASSERT_NO_FATAL_FAILURE(make_pair(&q, QpPairOptions{}));
	ibv_mw_bind mb{};
	mb.wr_id = 0xb3;
	mb.send_flags = IBV_SEND_SIGNALED;
	mb.bind_info.mr = mr.mr.get();
	mb.bind_info.addr = mr.addr();
	mb.bind_info.length = 8192;
	mb.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ASSERT_EQ(ibv_bind_mw(q.b(), mw.get(), &mb), 0) << strerror(errno);
	ibv_wc wc{};
	ASSERT_ONE_WC(q.cq_b(), wc);
	expect_err_wc(wc, 0xb3, IBV_WC_MW_BIND_ERR, q.b());

	QpPair r;
	ASSERT_NO_FATAL_FAILURE(make_pair(&r, QpPairOptions{}));
	ASSERT_EQ(ibv_rereg_mr(mr.mr.get(), IBV_REREG_MR_CHANGE_ACCESS,
			       nullptr, nullptr, 0, kMwBindAccess), 0)
		<< strerror(errno);
	ASSERT_NO_FATAL_FAILURE(bind_type1(r.b(), r.cq_b(), mw.get(),
					   mr.mr.get(), mr.addr(), 8192,
					   IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(write_status(r.a(), r.cq_a(), src, 64, mr.addr(), mw->rkey,
			       3), IBV_WC_SUCCESS);
	EXPECT_EQ(first_diff(mr.data(), src.data(), 64), -1);
}

// A type 2 window dies with a re-registration of its MR too, even one
// that changes nothing.
TEST_F(Security, ReregOfTheMrInvalidatesItsType2Windows)
{
	if (!has_mw_type2())
		GTEST_SKIP() << "the device claims no type 2 memory windows";
	Region mr = region(8192, kMwBindAccess | IBV_ACCESS_REMOTE_READ),
	       src = region(4096);
	ASSERT_TRUE(mr && src) << strerror(errno);
	QpPair p;
	QpPairOptions o;
	o.api = Api::WrApi;
	o.extra_send_ops = IBV_QP_EX_WITH_BIND_MW;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_2));
	ASSERT_TRUE(mw) << strerror(errno);
	uint32_t rkey = 0;
	ASSERT_NO_FATAL_FAILURE(bind_type2(p.b(), p.cq_b(), mw.get(),
					   mr.mr.get(), mr.addr(), 8192,
					   &rkey));
	ASSERT_EQ(write_status(p.a(), p.cq_a(), src, 64, mr.addr(), rkey, 1),
		  IBV_WC_SUCCESS);
	ASSERT_EQ(ibv_rereg_mr(mr.mr.get(), IBV_REREG_MR_CHANGE_ACCESS,
			       nullptr, nullptr, 0,
			       kMwBindAccess | IBV_ACCESS_REMOTE_READ), 0)
		<< strerror(errno);
	memset(mr.data(), kGuard, 8192);
	EXPECT_EQ(write_status(p.a(), p.cq_a(), src, 64, mr.addr(), rkey, 2),
		  IBV_WC_REM_ACCESS_ERR);
	EXPECT_TRUE(all_bytes(mr.data(), 8192, kGuard));
}

/*
 * A second context connects a QP of its own to a victim's connected QP b
 * (QPNs are easy to guess).  b is connected to a, not to it: the
 * attacker's SEND must not consume b's receive WQE, nor its WRITE reach
 * b's memory with b's rkey.  Then a's SEND still lands in that WQE.
 */
class SecurityHijack : public Security,
		       public ::testing::WithParamInterface<ibv_qp_type> {};

TEST_P(SecurityHijack, ConnectedQpTakesOnlyItsPeer)
{
	const ibv_qp_type type = GetParam();
	QpPairOptions o;
	o.type = type;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region dst = region(4096), mem = region(4096), src = region(4096);
	ASSERT_TRUE(dst && mem && src) << strerror(errno);
	memset(dst.data(), kGuard, 4096);
	memset(mem.data(), kGuard, 4096);
	fill_pattern(src.data(), 4096, 31);
	ASSERT_EQ(post_recv(p.b(), 7, { dst.sge(0, 4096) }), 0);

	// The attacker: another context, PD, CQ and QP.
	Context actx = open_device();
	ASSERT_TRUE(actx) << strerror(errno);
	Pd apd(ibv_alloc_pd(actx.get()));
	Cq acq(ibv_create_cq(actx.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(apd && acq) << strerror(errno);
	Region asrc = make_region(apd.get(), 4096, kLocalAccess);
	ASSERT_TRUE(asrc) << strerror(errno);
	fill_pattern(asrc.data(), 4096, 32);
	for (int op = 0; op < 2; op++) {
		SCOPED_TRACE(op ? "RDMA WRITE with b's rkey" : "SEND");
		ibv_qp_init_attr ia = qp_init_attr(type, acq.get());
		Qp x(ibv_create_qp(apd.get(), &ia));
		ASSERT_TRUE(x) << strerror(errno);
		std::string why;
		ASSERT_TRUE(connect_qp(x.get(), type, path_, p.b()->qp_num,
				       &why)) << why;
		SendWr w = op ? rdma_wr(40 + op, IBV_WR_RDMA_WRITE,
					{ asrc.sge(0, 128) }, mem.addr(),
					mem.rkey())
			      : send_wr(40 + op, IBV_WR_SEND,
					{ asrc.sge(0, 128) });
		ASSERT_EQ(post_send(x.get(), Api::PostSend, { w }), 0);
		std::vector<ibv_wc> wc = poll_cq(acq.get(), 1);
		ASSERT_EQ(wc.size(), 1u) << "the attacker's WR never completed";
		// RC: nobody answers (retries exhausted); UC: lost quietly.
		if (type == IBV_QPT_RC) {
			EXPECT_NE(wc[0].status, IBV_WC_SUCCESS) << wc_str(wc[0]);
		}
	}
	EXPECT_TRUE(poll_quiet(p.cq_b(), 300).empty())
		<< "b completed something for the attacker";
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard))
		<< "the attacker's SEND landed in b's receive buffer";
	EXPECT_TRUE(all_bytes(mem.data(), 4096, kGuard))
		<< "the attacker's WRITE landed in b's memory";

	// b's receive WQE is still there for a.
	ASSERT_EQ(p.post_a({ send_wr(1, IBV_WR_SEND, { src.sge(0, 100) }) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_b(), wc);
	RecvExpect e;
	e.wr_id = 7;
	e.byte_len = 100;
	e.qp = p.b();
	expect_recv_wc(wc, e);
	EXPECT_EQ(first_diff(dst.data(), src.data(), 100), -1);
}

INSTANTIATE_TEST_SUITE_P(Type, SecurityHijack,
			 ::testing::Values(IBV_QPT_RC, IBV_QPT_UC),
			 [](const ::testing::TestParamInfo<ibv_qp_type> &i) {
				 return std::string(i.param == IBV_QPT_RC ?
						    "RC" : "UC");
			 });

// A UD send names an address handle of another PD (another process's, say):
// it fails, and nothing is delivered.
TEST_F(Security, UdSendWithAnotherPdsAh)
{
	QpPairOptions o;
	o.type = IBV_QPT_UD;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region dst = region(4096), src = region(4096);
	ASSERT_TRUE(dst && src) << strerror(errno);
	fill_pattern(src.data(), 4096, 41);
	memset(dst.data(), kGuard, 4096);
	ASSERT_EQ(post_recv(p.b(), 9, { dst.sge(0, 4096) }), 0);

	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << strerror(errno);
	ibv_ah_attr aa = path_ah_attr(path_);
	Ah ah(ibv_create_ah(other.get(), &aa));
	ASSERT_TRUE(ah) << strerror(errno);
	SendWr w = send_wr(3, IBV_WR_SEND, { src.sge(0, 64) });
	w.ah = ah.get();
	w.remote_qpn = p.b()->qp_num;
	w.remote_qkey = p.qkey();
	ASSERT_EQ(p.post_a({ w }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	EXPECT_NE(wc.status, IBV_WC_SUCCESS) << wc_str(wc);
	EXPECT_TRUE(poll_quiet(p.cq_b(), 300).empty())
		<< "b received a message sent with another PD's AH";
	EXPECT_TRUE(all_bytes(dst.data(), 4096, kGuard));
}

/*
 * QP1 takes only the GSI Q_Key (0x80010000), on the local path as on the
 * wire.  A PerfMgmt Get(ClassPortInfo) to QP1 draws an "unsupported"
 * GetResp from the MAD layer (no agent handles the class): none for the
 * wrong Q_Key, one for the right one (which shows the probe works).
 * Receiving QP1's answer needs the GSI Q_Key on our QP, a controlled
 * Q_Key: root (CAP_NET_RAW) only.
 */
TEST_F(Security, Qp1TakesOnlyTheGsiQkey)
{
	if (!device_is_urdma())
		GTEST_SKIP() << "probes urdma's local path to QP1";
	constexpr uint32_t kGsiQkey = 0x80010000;
	QpPairOptions o;
	o.type = IBV_QPT_UD;
	o.qkey = kGsiQkey;
	QpPair p;
	std::string err;
	o.path = &path_;
	if (!p.init(ctx_.get(), pd_.get(), o, &err)) {
		if (err.find("Operation not permitted") != std::string::npos)
			GTEST_SKIP() << "a controlled Q_Key needs CAP_NET_RAW";
		FAIL() << err;
	}
	Region buf = region(8192);
	ASSERT_TRUE(buf) << strerror(errno);
	uint8_t *mad = buf.data();
	memset(mad, 0, 256);
	mad[0] = 1;		/* base version */
	mad[1] = 0x04;		/* class: performance management */
	mad[2] = 1;		/* class version */
	mad[3] = 0x01;		/* method: Get */
	mad[16] = 0;
	mad[17] = 0x01;		/* attribute: ClassPortInfo */

	for (int round = 0; round < 3; round++) {
		const bool right = round > 0;
		SCOPED_TRACE(round == 0 ? "a wrong Q_Key" :
			     round == 1 ? "the GSI Q_Key" :
			     "the GSI Q_Key, after a message too big for QP1");
		if (round == 2) {
			// More than QP1's receive buffers hold: dropped, and
			// QP1 (every user's MADs and CM) carries on.
			SendWr big = send_wr(300, IBV_WR_SEND,
					     { buf.sge(0, 1000) });
			big.ah = p.ah();
			big.remote_qpn = 1;
			big.remote_qkey = kGsiQkey;
			ASSERT_EQ(p.post_a({ big }), 0);
			ibv_wc wc{};
			ASSERT_ONE_WC(p.cq_a(), wc);
			EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << wc_str(wc);
		}
		mad[15] = uint8_t(0x40 + round);	/* transaction id */
		ASSERT_EQ(post_recv(p.a(), 100 + round,
				    { buf.sge(4096, 40 + 256) }), 0);
		SendWr w = send_wr(200 + round, IBV_WR_SEND,
				   { buf.sge(0, 256) });
		w.ah = p.ah();
		w.remote_qpn = 1;
		/* The high bit means "my QP's Q_Key": the GSI one. */
		w.remote_qkey = right ? kGsiQkey : 0x12345678;
		ASSERT_EQ(p.post_a({ w }), 0);
		std::vector<ibv_wc> wcs = poll_cq(p.cq_a(), 2, 2000);
		size_t recvs = 0;
		for (const ibv_wc &wc : wcs) {
			EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << wc_str(wc);
			if (wc.opcode == IBV_WC_RECV)
				recvs++;
		}
		if (!right) {
			EXPECT_EQ(recvs, 0u) << "QP1 answered a MAD with the "
						"wrong Q_Key: " << wcs_str(wcs);
			// Take the receive back for the next round.
			continue;
		}
		ASSERT_EQ(recvs, 1u) << "QP1 never answered: the probe is "
					"broken; " << wcs_str(wcs);
		const uint8_t *resp = buf.data() + 4096 + 40;
		EXPECT_EQ(resp[3], 0x81) << "method GetResp";
		EXPECT_EQ(resp[15], mad[15]) << "transaction id";
	}
}

// A UD message larger than the receive WQE it would take is dropped: the
// receiver's QP carries on, and the WQE takes the next message that fits.
// Any sender with the Q_Key can send one; it must not fail the receiver.
TEST_F(Security, OversizedUdMessageIsDropped)
{
	QpPairOptions o;
	o.type = IBV_QPT_UD;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Region dst = region(4096), src = region(4096);
	ASSERT_TRUE(dst && src) << strerror(errno);
	fill_pattern(src.data(), 4096, 61);
	memset(dst.data(), kGuard, 4096);
	ASSERT_EQ(post_recv(p.b(), 8, { dst.sge(0, kGrhBytes + 100) }), 0);

	ASSERT_EQ(p.post_a({ p.to_b(send_wr(1, IBV_WR_SEND,
					    { src.sge(0, 500) })) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << wc_str(wc);
	EXPECT_TRUE(poll_quiet(p.cq_b(), 300).empty())
		<< "the oversized message completed a receive";
	expect_state(p.b(), IBV_QPS_RTS, "b after the oversized message");

	ASSERT_EQ(p.post_a({ p.to_b(send_wr(2, IBV_WR_SEND,
					    { src.sge(100, 64) })) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	ASSERT_ONE_WC(p.cq_b(), wc);
	RecvExpect e;
	e.wr_id = 8;
	e.byte_len = kGrhBytes + 64;
	e.qp = p.b();
	e.src = p.a();
	expect_recv_wc(wc, e);
	EXPECT_EQ(first_diff(dst.data() + kGrhBytes, src.data() + 100, 64), -1);
}

/*
 * SEND_WITH_INV may invalidate a type 2 window only through the QP it is
 * bound to.  b binds a window; d (same PD, another connection) receives a
 * SEND_WITH_INV of its rkey from c: that fails, and a, b's peer, can
 * still use the window.
 */
TEST_F(Security, SendWithInvalidateOfAnotherQpsWindow)
{
	if (!has_mw_type2())
		GTEST_SKIP() << "the device claims no type 2 memory windows";
	QpPairOptions o;
	o.api = Api::WrApi;
	o.extra_send_ops = IBV_QP_EX_WITH_BIND_MW |
			   IBV_QP_EX_WITH_SEND_WITH_INV;
	QpPair p, q;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	ASSERT_NO_FATAL_FAILURE(make_pair(&q, o));
	Region mr = region(8192, kMwBindAccess | IBV_ACCESS_REMOTE_READ),
	       src = region(4096), dst = region(4096);
	ASSERT_TRUE(mr && src && dst) << strerror(errno);
	fill_pattern(src.data(), 4096, 51);
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_2));
	ASSERT_TRUE(mw) << strerror(errno);
	uint32_t rkey = 0;
	ASSERT_NO_FATAL_FAILURE(bind_type2(p.b(), p.cq_b(), mw.get(),
					   mr.mr.get(), mr.addr(), 8192,
					   &rkey));

	ASSERT_EQ(post_recv(q.b(), 5, { dst.sge(0, 4096) }), 0);
	SendWr inv = send_wr(6, IBV_WR_SEND_WITH_INV, { src.sge(0, 32) });
	inv.invalidate_rkey = rkey;
	ASSERT_EQ(q.post_a({ inv }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(q.cq_a(), wc);
	EXPECT_NE(wc.status, IBV_WC_SUCCESS)
		<< "another connection invalidated b's window: " << wc_str(wc);

	EXPECT_EQ(write_status(p.a(), p.cq_a(), src, 64, mr.addr(), rkey, 7),
		  IBV_WC_SUCCESS) << "b's window no longer works";
	EXPECT_EQ(first_diff(mr.data(), src.data(), 64), -1);
}

/*
 * A kick runs the engine's passes in the kicker's system call.  A kicker
 * that a cgroup throttles (1 ms of CPU a second), posting 4 MiB WRITEs
 * (a few milliseconds of copying each), must never stall another
 * process's QPs on the same engine, nor a deregistration (which waits for
 * the engine).  The victim leaves the engine idle between its WRITEs, so
 * that the engine sleeps and the kicker's posts kick.  Before kicks ran
 * with preemption off and a byte budget, the kick copied the whole WRITE
 * in the kicker's system call, the cgroup throttled it there, and it held
 * the engine for the rest of the second.
 */
class CgroupCpu {
public:
	explicit CgroupCpu(const char *name)
	{
		if (!mounted()) {
			error_ = "no cgroup2 at /sys/fs/cgroup";
			return;
		}
		std::ifstream ctl("/sys/fs/cgroup/cgroup.controllers");
		std::string line;
		std::getline(ctl, line);
		if (line.find("cpu") == std::string::npos) {
			error_ = "cgroup2 has no cpu controller (controllers: " +
				 line + ")";
			return;
		}
		if (!put("/sys/fs/cgroup/cgroup.subtree_control", "+cpu")) {
			error_ = "cannot enable the cpu controller";
			return;
		}
		dir_ = std::string("/sys/fs/cgroup/") + name;
		rmdir(dir_.c_str());
		if (mkdir(dir_.c_str(), 0755) && errno != EEXIST) {
			error_ = "mkdir " + dir_ + ": " + strerror(errno);
			dir_.clear();
			return;
		}
		if (!put(dir_ + "/cpu.max", "1000 1000000"))
			error_ = "cannot write cpu.max (CFS bandwidth control?)";
	}
	~CgroupCpu()
	{
		if (!dir_.empty())
			rmdir(dir_.c_str());
	}
	const std::string &error() const { return error_; }
	bool join(pid_t pid) const
	{
		return put(dir_ + "/cgroup.procs", std::to_string(pid));
	}
	bool leave(pid_t pid) const
	{
		return put("/sys/fs/cgroup/cgroup.procs", std::to_string(pid));
	}

private:
	static bool mounted()
	{
		struct stat st{};
		if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0)
			return true;
		mkdir("/sys/fs/cgroup", 0755);
		return system("mount -t cgroup2 none /sys/fs/cgroup "
			      ">/dev/null 2>&1") == 0 &&
		       stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0;
	}
	static bool put(const std::string &path, const std::string &v)
	{
		int fd = open(path.c_str(), O_WRONLY);
		if (fd < 0)
			return false;
		bool ok = write(fd, v.data(), v.size()) == ssize_t(v.size());
		close(fd);
		return ok;
	}
	std::string dir_, error_;
};

bool pin_to_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// The kicker: WRITEs of @len bytes between its own QPs, for ever.  It says
// 'y' on @ready once it is set up (outside the cgroup: that is slow there).
[[noreturn]] void kick_forever(size_t len, int ready)
{
	Context ctx = open_device();
	Pd pd(ctx ? ibv_alloc_pd(ctx.get()) : nullptr);
	if (!pd)
		_exit(11);
	QpPair p;
	std::string err;
	if (!p.init(ctx.get(), pd.get(), QpPairOptions{}, &err))
		_exit(12);
	Region src = make_region(pd.get(), len), dst = make_region(pd.get(), len);
	if (!src || !dst)
		_exit(13);
	char c = 'y';
	if (write(ready, &c, 1) != 1)
		_exit(10);
	for (uint64_t id = 1;; id++) {
		if (p.post_a({ rdma_wr(id, IBV_WR_RDMA_WRITE,
				       { src.sge(0, uint32_t(len)) }, dst.addr(),
				       dst.rkey()) }))
			_exit(14);
		ibv_wc wc{};
		while (ibv_poll_cq(p.cq_a(), 1, &wc) == 0)
			;
		if (wc.status != IBV_WC_SUCCESS)
			_exit(15);
	}
}

TEST_F(Security, ThrottledKickerStallsNobody)
{
	if (!device_is_urdma())
		GTEST_SKIP() << "kicks are urdma's";
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		GTEST_SKIP() << "needs two CPUs";
	CgroupCpu cg("urdma-kicker");
	if (!cg.error().empty())
		GTEST_SKIP() << cg.error();

	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	pid_t kicker = fork();
	ASSERT_GE(kicker, 0);
	if (kicker == 0) {
		close(ready[0]);
		if (!pin_to_cpu(0))
			_exit(10);
		kick_forever(4 << 20, ready[1]);
	}
	close(ready[1]);
	char c = 0;
	ssize_t got = read(ready[0], &c, 1);
	close(ready[0]);
	if (got != 1) {
		int st = 0;
		waitpid(kicker, &st, 0);
		FAIL() << "the kicker failed to set up: exit " << WEXITSTATUS(st);
	}
	ASSERT_TRUE(cg.join(kicker)) << strerror(errno);

	// The victim, on the other CPU: WRITEs and MR registrations.
	pin_to_cpu(1);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, QpPairOptions{}));
	Region src = region(4096), dst = region(4096), spare(region(4096));
	ASSERT_TRUE(src && dst && spare) << strerror(errno);
	int64_t worst_write = 0, worst_dereg = 0, start = now_ms();
	int writes = 0;
	for (uint64_t id = 1; now_ms() - start < 6000; id++) {
		int64_t t0 = now_ms();
		ASSERT_EQ(p.post_a({ rdma_wr(id, IBV_WR_RDMA_WRITE,
					     { src.sge(0, 4096) }, dst.addr(),
					     dst.rkey()) }), 0);
		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << wc_str(wc);
		int64_t t1 = now_ms();
		Mr mr(ibv_reg_mr(pd_.get(), spare.data(), 4096, kLocalAccess));
		ASSERT_TRUE(mr) << strerror(errno);
		mr.reset();	/* deregistration waits for the engine */
		int64_t t2 = now_ms();
		worst_write = std::max(worst_write, t1 - t0);
		worst_dereg = std::max(worst_dereg, t2 - t1);
		writes++;
		usleep(5000);	/* the engine goes to sleep */
	}
	int st = 0;
	bool alive = waitpid(kicker, &st, WNOHANG) == 0;
	// Out of the cgroup first: its exit would crawl at 1 ms a second.
	cg.leave(kicker);
	kill(kicker, SIGKILL);
	waitpid(kicker, &st, 0);
	EXPECT_TRUE(alive) << "the kicker died: exit " << WEXITSTATUS(st);
	RecordProperty("worst_write_ms", std::to_string(worst_write));
	RecordProperty("worst_dereg_ms", std::to_string(worst_dereg));
	printf("[   INFO   ] %d WRITEs; worst WRITE %lld ms, worst dereg %lld ms\n",
	       writes, (long long)worst_write, (long long)worst_dereg);
	// The throttled kicker gets 1 ms a second: holding the engine
	// through its throttling would show as a stall near a second.
	EXPECT_LT(worst_write, 500) << "another process's WRITE stalled";
	EXPECT_LT(worst_dereg, 500) << "a deregistration stalled";
}

} // namespace
} // namespace urdma::test
