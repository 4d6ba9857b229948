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

} // namespace
} // namespace urdma::test
