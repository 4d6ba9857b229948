// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// On-demand paging (kernel/odp.c): MRs whose pages are faulted in by the
// device when it first touches them, and follow the process's mappings
// afterwards (munmap, MADV_DONTNEED, mremap, fork's copy-on-write).
#include "datapath.hpp"
#include "fixture.hpp"
#include "mapping.hpp"
#include "verbs.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace urdma::test;

namespace {

#ifndef MREMAP_DONTUNMAP	/* Linux 5.7; glibc 2.36's <sys/mman.h> lacks it */
#define MREMAP_DONTUNMAP 4
#endif

constexpr int kOdp = IBV_ACCESS_ON_DEMAND | kRemoteAccess;
constexpr size_t kPage = 4096;

// Anonymous memory that nothing has touched: no page is there yet.
class Anon : public Mapping {
public:
	explicit Anon(size_t len)
		: Mapping(len, PROT_READ | PROT_WRITE, 0, false)
	{
	}
	uint8_t *data() const { return reinterpret_cast<uint8_t *>(get()); }
	uint64_t addr(size_t off = 0) const { return uintptr_t(get()) + off; }
};

// Resident pages of [p, p + len) (mincore).
size_t resident_pages(const void *p, size_t len)
{
	std::vector<unsigned char> v((len + kPage - 1) / kPage);
	if (mincore(const_cast<void *>(p), len, v.data()))
		return size_t(-1);
	size_t n = 0;
	for (unsigned char c : v)
		n += c & 1;
	return n;
}

long long hw_counter(const std::string &name)
{
	std::ifstream f("/sys/class/infiniband/" + device_name() +
			"/ports/1/hw_counters/" + name);
	long long v = -1;
	return f >> v ? v : -1;
}

// Two untouched ODP buffers of one size, each with its MR: the
// responder's (remote) and the requester's (back).
struct OdpBuffers {
	explicit OdpBuffers(size_t len) : remote(len), back(len) {}
	Anon remote, back;
	Mr rmr, bmr;
};

class OdpTest : public DataTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(DataTest::SetUp());
		const ibv_odp_caps &c = dev_ex_.odp_caps;
		if (!(c.general_caps & IBV_ODP_SUPPORT)) {
			ASSERT_FALSE(device_is_urdma())
				<< "urdma reports no ODP";
			GTEST_SKIP() << device_name() << " has no ODP";
		}
	}

	// An ODP MR over @m (all of it), with @access.
	Mr odp_mr(const Anon &m, int access = kOdp)
	{
		return Mr(ibv_reg_mr(pd_.get(), m.data(), m.size(), access));
	}

	void make_rc(QpPair *p) { ASSERT_NO_FATAL_FAILURE(make_pair(p, {})); }

	// An RC pair in *@p, and the MRs of *@b.
	void prepare(QpPair *p, OdpBuffers *b)
	{
		ASSERT_NO_FATAL_FAILURE(make_rc(p));
		ASSERT_TRUE(b->remote.data() && b->back.data());
		b->rmr = odp_mr(b->remote);
		b->bmr = odp_mr(b->back);
		ASSERT_TRUE(b->rmr && b->bmr) << strerror(errno);
	}

	// One RDMA WRITE or READ of @len bytes from a, expected to succeed.
	void rdma(const QpPair &p, ibv_wr_opcode op, ibv_sge local,
		  uint64_t raddr, uint32_t rkey, uint64_t id = 1)
	{
		ASSERT_EQ(p.post_a({ rdma_wr(id, op, { local }, raddr, rkey) }),
			  0);
		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, id, op == IBV_WR_RDMA_READ ?
				       IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
			       p.a());
	}
};

TEST_F(OdpTest, CapsAreReported)
{
	if (!device_is_urdma())
		GTEST_SKIP() << "urdma's own caps";
	const ibv_odp_caps &c = dev_ex_.odp_caps;
	const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			    IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
			    IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	EXPECT_TRUE(c.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
	EXPECT_EQ(c.per_transport_caps.rc_odp_caps & rc, rc);
	EXPECT_EQ(c.per_transport_caps.uc_odp_caps,
		  uint32_t(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			   IBV_ODP_SUPPORT_WRITE));
	EXPECT_EQ(c.per_transport_caps.ud_odp_caps,
		  uint32_t(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV));
	EXPECT_EQ(dev_ex_.xrc_odp_caps & rc, rc);
}

// Nothing is pinned or faulted at registration; a WRITE faults the
// responder's pages in, a READ the requester's, and the bytes are right.
TEST_F(OdpTest, WriteAndReadFaultPagesIn)
{
	QpPair p;
	const size_t len = 256 * 1024;
	OdpBuffers bufs(len);
	ASSERT_NO_FATAL_FAILURE(prepare(&p, &bufs));
	Anon &remote = bufs.remote, &back = bufs.back;
	Mr &rmr = bufs.rmr, &bmr = bufs.bmr;
	EXPECT_EQ(resident_pages(remote.data(), len), 0u);
	Region src = region(len);
	ASSERT_TRUE(src) << strerror(errno);
	fill_pattern(src.data(), len, 1);
	long long faults = hw_counter("odp_faults");

	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_WRITE, src.sge(0, len),
				     remote.addr(), rmr->rkey, 1));
	EXPECT_EQ(first_diff(remote.data(), src.data(), len), -1);
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_READ,
				     ibv_sge{ back.addr(), uint32_t(len),
					      bmr->lkey },
				     remote.addr(), rmr->rkey, 2));
	EXPECT_EQ(first_diff(back.data(), src.data(), len), -1);
	if (device_is_urdma()) {
		// The core caches hw counters for 10 ms (their "lifespan").
		usleep(30 * 1000);
		EXPECT_GT(hw_counter("odp_faults"), faults);
	}
}

// SEND from an ODP buffer into ODP receive buffers, one of them mixed
// with a pinned SGE; and the same over an SRQ.
TEST_F(OdpTest, SendAndReceive)
{
	Srq srq;
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 2;
	srq.reset(ibv_create_srq(pd_.get(), &sa));
	ASSERT_TRUE(srq) << strerror(errno);
	QpPair rc, viasrq;
	ASSERT_NO_FATAL_FAILURE(make_rc(&rc));
	QpPairOptions o;
	o.srq_b = srq.get();
	ASSERT_NO_FATAL_FAILURE(make_pair(&viasrq, o));

	const uint32_t len = 3 * kPage + 100;
	Anon out(4 * kPage), in(8 * kPage);
	ASSERT_TRUE(out.data() && in.data());
	Mr omr = odp_mr(out), imr = odp_mr(in);
	ASSERT_TRUE(omr && imr) << strerror(errno);
	Region pinned = region(kPage);
	ASSERT_TRUE(pinned) << strerror(errno);
	fill_pattern(out.data(), len, 7);

	for (int i = 0; i < 2; i++) {
		const QpPair &p = i ? viasrq : rc;
		memset(in.data(), 0, in.size());
		memset(pinned.data(), 0, kPage);
		// 2 KiB into the pinned page first, the rest into ODP.
		std::vector<ibv_sge> rsge = {
			pinned.sge(0, 2048),
			ibv_sge{ in.addr(kPage), 6 * kPage, imr->lkey } };
		ASSERT_EQ(i ? post_srq_recv(srq.get(), 10 + i, rsge) :
			      post_recv(p.b(), 10 + i, rsge), 0);
		ASSERT_EQ(p.post_a({ send_wr(20 + i, IBV_WR_SEND,
					     { ibv_sge{ out.addr(), len,
							omr->lkey } }) }), 0);
		ibv_wc wc{};
		ASSERT_ONE_WC(p.cq_a(), wc);
		expect_send_wc(wc, 20 + i, IBV_WC_SEND, p.a());
		ASSERT_ONE_WC(p.cq_b(), wc);
		RecvExpect e;
		e.wr_id = 10 + i;
		e.byte_len = len;
		e.qp = p.b();
		expect_recv_wc(wc, e);
		EXPECT_EQ(first_diff(pinned.data(), out.data(), 2048), -1);
		EXPECT_EQ(first_diff(in.data() + kPage, out.data() + 2048,
				     len - 2048), -1);
	}
}

// Atomics on untouched ODP memory (a zero page until written), with the
// original value returned into an untouched ODP buffer.
TEST_F(OdpTest, AtomicsOnUntouchedPages)
{
	if (!has_atomics())
		GTEST_SKIP() << "no atomics";
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_rc(&p));
	Anon target(2 * kPage), result(kPage);
	ASSERT_TRUE(target.data() && result.data());
	Mr tmr = odp_mr(target), resmr = odp_mr(result);
	ASSERT_TRUE(tmr && resmr) << strerror(errno);
	SendWr w = send_wr(1, IBV_WR_ATOMIC_FETCH_AND_ADD,
			   { ibv_sge{ result.addr(8), 8, resmr->lkey } });
	w.remote_addr = target.addr(kPage + 64);
	w.rkey = tmr->rkey;
	w.compare_add = 5;
	ASSERT_EQ(p.post_a({ w }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_FETCH_ADD, p.a(), 8);
	uint64_t v;
	memcpy(&v, result.data() + 8, 8);
	EXPECT_EQ(v, 0u);
	memcpy(&v, target.data() + kPage + 64, 8);
	EXPECT_EQ(v, 5u);

	w = send_wr(2, IBV_WR_ATOMIC_CMP_AND_SWP,
		    { ibv_sge{ result.addr(16), 8, resmr->lkey } });
	w.remote_addr = target.addr(kPage + 64);
	w.rkey = tmr->rkey;
	w.compare_add = 5;
	w.swap = 0x1234;
	ASSERT_EQ(p.post_a({ w }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 2, IBV_WC_COMP_SWAP, p.a(), 8);
	memcpy(&v, result.data() + 16, 8);
	EXPECT_EQ(v, 5u);
	memcpy(&v, target.data() + kPage + 64, 8);
	EXPECT_EQ(v, 0x1234u);
}

// UD: a datagram from untouched ODP memory (the sender waits for its own
// pages).  A receive buffer whose pages are not there loses the datagram,
// as on the wire: a receiver cannot hold its sender up.  Prefetched, it
// gets the next one.
TEST_F(OdpTest, UdSendAndReceive)
{
	QpPairOptions o;
	o.type = IBV_QPT_UD;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Anon out(kPage), in(kPage);
	ASSERT_TRUE(out.data() && in.data());
	Mr omr = odp_mr(out), imr = odp_mr(in);
	ASSERT_TRUE(omr && imr) << strerror(errno);
	ibv_sge rsge{ in.addr(), 256 + kGrhBytes, imr->lkey };
	ibv_sge ssge{ out.addr(), 256, omr->lkey };
	ASSERT_EQ(post_recv(p.b(), 1, { rsge }), 0);
	ASSERT_EQ(p.post_a({ p.to_b(send_wr(2, IBV_WR_SEND, { ssge })) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 2, IBV_WC_SEND, p.a());
	if (device_is_urdma()) {
		EXPECT_TRUE(poll_quiet(p.cq_b()).empty())
			<< "a datagram landed in pages that were not there";
	}

	ASSERT_EQ(ibv_advise_mr(pd_.get(), IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				IBV_ADVISE_MR_FLAG_FLUSH, &rsge, 1), 0);
	fill_pattern(out.data(), 256, 3);
	ASSERT_EQ(p.post_a({ p.to_b(send_wr(3, IBV_WR_SEND, { ssge })) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 3, IBV_WC_SEND, p.a());
	ASSERT_ONE_WC(p.cq_b(), wc);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
	EXPECT_EQ(wc.wr_id, 1u);
	EXPECT_EQ(wc.byte_len, 256 + kGrhBytes);
	EXPECT_EQ(first_diff(in.data() + kGrhBytes, out.data(), 256), -1);
}

// ATOMIC_WRITE and FLUSH reach untouched ODP memory too.
TEST_F(OdpTest, AtomicWriteAndFlush)
{
	if (!(dev_ex_.device_cap_flags_ex & kDevAtomicWrite) ||
	    !(dev_ex_.device_cap_flags_ex & kDevFlushGlobal))
		GTEST_SKIP() << "no ATOMIC_WRITE or FLUSH (before 6.2)";
	QpPairOptions o;
	o.api = Api::WrApi;
	o.extra_send_ops = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_FLUSH;
	o.access = kRemoteAccess | IBV_ACCESS_FLUSH_GLOBAL;
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, o));
	Anon target(2 * kPage);
	ASSERT_TRUE(target.data());
	Mr tmr = odp_mr(target, kOdp | IBV_ACCESS_FLUSH_GLOBAL);
	ASSERT_TRUE(tmr) << strerror(errno);
	const uint64_t v = 0x1122334455667788ull;
	ibv_qp_ex *qpx = ibv_qp_to_qp_ex(p.a());
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, tmr->rkey, target.addr(kPage + 8), &v);
	qpx->wr_id = 2;
	ibv_wr_flush(qpx, tmr->rkey, target.addr(), 2 * kPage,
		     IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	std::vector<ibv_wc> wcs = poll_cq(p.cq_a(), 2);
	ASSERT_EQ(wcs.size(), 2u) << wcs_str(wcs);
	expect_send_wc(wcs[0], 1, IBV_WC_ATOMIC_WRITE, p.a());
	expect_send_wc(wcs[1], 2, IBV_WC_FLUSH, p.a());
	EXPECT_EQ(memcmp(target.data() + kPage + 8, &v, 8), 0);
}

// An implicit MR (NULL, SIZE_MAX) covers every mapping of the process:
// two far apart, and the stack.
TEST_F(OdpTest, ImplicitMrCoversTheAddressSpace)
{
	if (!(dev_ex_.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT))
		GTEST_SKIP() << "no implicit ODP";
	Mr imp(ibv_reg_mr(pd_.get(), nullptr, SIZE_MAX, kOdp));
	ASSERT_TRUE(imp) << strerror(errno);
	EXPECT_EQ(imp->length, SIZE_MAX);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_rc(&p));
	Anon a(64 * 1024), b(3 * 1024 * 1024);
	ASSERT_TRUE(a.data() && b.data());
	fill_pattern(a.data(), a.size(), 11);
	// a -> the end of b (which crosses into the next child range if
	// the two happen to straddle one) -> the stack.
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_WRITE,
				     ibv_sge{ a.addr(), uint32_t(a.size()),
					      imp->lkey },
				     b.addr(b.size() - a.size()), imp->rkey));
	EXPECT_EQ(first_diff(b.data() + b.size() - a.size(), a.data(),
			     a.size()), -1);
	uint8_t stack[512] = {};
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_READ,
				     ibv_sge{ uintptr_t(stack), sizeof(stack),
					      imp->lkey },
				     b.addr(b.size() - a.size() + 100),
				     imp->rkey, 2));
	EXPECT_EQ(first_diff(stack, a.data() + 100, sizeof(stack)), -1);
	// An implicit MR has no other IOVA than the address.
	errno = 0;
	Mr bad(ibv_reg_mr_iova(pd_.get(), nullptr, SIZE_MAX, 4096, kOdp));
	EXPECT_FALSE(bad);
	EXPECT_EQ(errno, EINVAL);
}

// After munmap + a new mapping at the same address, and after
// MADV_DONTNEED, the MR reads what the process sees now, never a stale
// page; a moved mapping (mremap) leaves a hole that fails the READ.
TEST_F(OdpTest, InvalidationFollowsTheMappings)
{
	QpPair p;
	const size_t len = 16 * kPage;
	OdpBuffers bufs(len);
	ASSERT_NO_FATAL_FAILURE(prepare(&p, &bufs));
	Anon &remote = bufs.remote, &back = bufs.back;
	Mr &rmr = bufs.rmr, &bmr = bufs.bmr;
	ibv_sge all{ back.addr(), uint32_t(len), bmr->lkey };

	fill_pattern(remote.data(), len, 21);
	std::vector<uint8_t> a(remote.data(), remote.data() + len);
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_READ, all, remote.addr(),
				     rmr->rkey, 1));
	ASSERT_EQ(first_diff(back.data(), a.data(), len), -1);

	// A new mapping in place of the old one.
	void *again = mmap(remote.data(), len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(again, static_cast<void *>(remote.data()));
	fill_pattern(remote.data(), len, 22);
	std::vector<uint8_t> b(remote.data(), remote.data() + len);
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_READ, all, remote.addr(),
				     rmr->rkey, 2));
	EXPECT_EQ(first_diff(back.data(), b.data(), len), -1)
		<< "READ saw the unmapped pages";

	// Dropped pages read as zeroes.
	ASSERT_EQ(madvise(remote.data(), len, MADV_DONTNEED), 0);
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_READ, all, remote.addr(),
				     rmr->rkey, 3));
	EXPECT_TRUE(all_bytes(back.data(), len, 0));

	// Moved away: nothing is mapped there any more.
	void *hole = mmap(nullptr, len, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(hole, MAP_FAILED);
	void *away = mremap(remote.data(), len, len,
			    MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_EQ(away, hole);
	uint8_t *old = remote.data();
	remote.forget();
	ASSERT_EQ(p.post_a({ rdma_wr(4, IBV_WR_RDMA_READ, { all },
				     uintptr_t(old), rmr->rkey) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 4, IBV_WC_REM_ACCESS_ERR, p.a());
	munmap(away, len);
}

// A local buffer that is no longer mapped fails its WQE, with an error
// completion, not a hang or a crash.
TEST_F(OdpTest, UnmappedLocalBufferIsAnError)
{
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_rc(&p));
	Anon gone(4 * kPage);
	ASSERT_TRUE(gone.data());
	Mr gmr = odp_mr(gone);
	ASSERT_TRUE(gmr) << strerror(errno);
	Region remote = region(4 * kPage);
	ASSERT_TRUE(remote) << strerror(errno);
	uint8_t *addr = gone.data();
	ASSERT_EQ(munmap(addr, gone.size()), 0);
	gone.forget();
	ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE,
				     { ibv_sge{ uintptr_t(addr), 4 * kPage,
						gmr->lkey } },
				     remote.addr(), remote.rkey()) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 1, IBV_WC_LOC_PROT_ERR, p.a());
}

// fork() without MADV_DONTFORK write-protects the parent's pages; the
// parent's next store copies them.  RDMA WRITEs after that land in the
// parent's new pages, never in the copy the child holds.
TEST_F(OdpTest, ForkCopyOnWrite)
{
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_rc(&p));
	const size_t len = 4 * kPage;
	Anon remote(len);
	ASSERT_TRUE(remote.data());
	Mr rmr = odp_mr(remote);
	ASSERT_TRUE(rmr) << strerror(errno);
	Region src = region(len);
	ASSERT_TRUE(src) << strerror(errno);
	fill_pattern(src.data(), len, 31);
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_WRITE, src.sge(0, len),
				     remote.addr(), rmr->rkey, 1));
	ASSERT_EQ(first_diff(remote.data(), src.data(), len), -1);

	int to_child[2], from_child[2];
	ASSERT_EQ(pipe(to_child), 0);
	ASSERT_EQ(pipe(from_child), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0) << strerror(errno);
	if (!pid) {
		// The child: wait until the parent's WRITE is done, then say
		// whether its own copy still holds the first pattern.
		char c;
		int same = 0;
		if (read(to_child[0], &c, 1) == 1)
			same = !memcmp(remote.data(), src.data(), len);
		_exit(same ? 0 : 1);
	}
	// The parent's stores break the sharing, page by page.
	for (size_t off = 0; off < len; off += kPage)
		remote.data()[off] ^= 0xff;
	fill_pattern(src.data(), len, 32);
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_WRITE, src.sge(0, len),
				     remote.addr(), rmr->rkey, 2));
	EXPECT_EQ(first_diff(remote.data(), src.data(), len), -1)
		<< "the WRITE went to the child's copy";
	// The child's copy keeps the pattern of before the fork.
	fill_pattern(src.data(), len, 31);
	ASSERT_EQ(write(to_child[1], "x", 1), 1);
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		<< "the child's copy changed";
	close(to_child[0]);
	close(to_child[1]);
	close(from_child[0]);
	close(from_child[1]);
}

// Invalidations racing with transfers: another thread drops, remaps and
// moves (mremap) the pages the WRITEs and READs use.  Every WQE completes
// successfully, and once the racing stops the data is exact.
TEST_F(OdpTest, InvalidationRacesWithTraffic)
{
	QpPair p;
	const size_t len = 64 * 1024;
	OdpBuffers bufs(len);
	ASSERT_NO_FATAL_FAILURE(prepare(&p, &bufs));
	Anon &remote = bufs.remote, &back = bufs.back;
	Mr &rmr = bufs.rmr, &bmr = bufs.bmr;
	Region src = region(len);
	ASSERT_TRUE(src) << strerror(errno);
	fill_pattern(src.data(), len, 41);

	std::atomic<bool> stop{ false };
	std::thread racer([&] {
		for (unsigned i = 0; !stop.load(); i++) {
			uint8_t *m = i & 1 ? remote.data() : back.data();
			void *moved;

			switch (i % 4) {
			case 0:	/* munmap and a new mapping in place */
				mmap(m, len, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				     -1, 0);
				break;
			case 1:	/* mremap: the pages move, the range stays */
				moved = mremap(m, len, len,
					       MREMAP_MAYMOVE |
						       MREMAP_DONTUNMAP);
				if (moved != MAP_FAILED)
					munmap(moved, len);
				break;
			default:
				madvise(m, len, MADV_DONTNEED);
			}
			usleep(200);
		}
	});
	const int rounds = 60;
	for (int i = 0; i < rounds && !HasFatalFailure(); i++) {
		rdma(p, IBV_WR_RDMA_WRITE, src.sge(0, len), remote.addr(),
		     rmr->rkey, 2 * i);
		rdma(p, IBV_WR_RDMA_READ,
		     ibv_sge{ back.addr(), uint32_t(len), bmr->lkey },
		     remote.addr(), rmr->rkey, 2 * i + 1);
	}
	stop = true;
	racer.join();
	ASSERT_FALSE(HasFailure());
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_WRITE, src.sge(0, len),
				     remote.addr(), rmr->rkey, 1000));
	ASSERT_NO_FATAL_FAILURE(rdma(p, IBV_WR_RDMA_READ,
				     ibv_sge{ back.addr(), uint32_t(len),
					      bmr->lkey },
				     remote.addr(), rmr->rkey, 1001));
	EXPECT_EQ(first_diff(remote.data(), src.data(), len), -1);
	EXPECT_EQ(first_diff(back.data(), src.data(), len), -1);
}

// ibv_advise_mr: PREFETCH_WRITE (synchronous) makes the pages resident,
// PREFETCH_NO_FAULT does not; and its errors.
TEST_F(OdpTest, AdviseMr)
{
	const size_t len = 32 * kPage;
	Anon m(len), untouched(len);
	ASSERT_TRUE(m.data() && untouched.data());
	Mr mr = odp_mr(m), mr2 = odp_mr(untouched);
	ASSERT_TRUE(mr && mr2) << strerror(errno);
	ASSERT_EQ(resident_pages(m.data(), len), 0u);

	ibv_sge sge{ m.addr(), uint32_t(len), mr->lkey };
	ASSERT_EQ(ibv_advise_mr(pd_.get(), IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1), 0);
	EXPECT_EQ(resident_pages(m.data(), len), len / kPage);
	ibv_sge sge2{ untouched.addr(), uint32_t(len), mr2->lkey };
	EXPECT_EQ(ibv_advise_mr(pd_.get(),
				IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				IBV_ADVISE_MR_FLAG_FLUSH, &sge2, 1), 0);
	EXPECT_EQ(resident_pages(untouched.data(), len), 0u);
	// Asynchronous: a hint; it succeeds.
	EXPECT_EQ(ibv_advise_mr(pd_.get(), IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				&sge2, 1), 0);

	if (!device_is_urdma())
		return;
	// Errors: an unknown key, a pinned MR, a range beyond the MR,
	// another PD's MR.
	ibv_sge bad = sge;
	bad.lkey = bad_key(mr->lkey);
	EXPECT_EQ(ibv_advise_mr(pd_.get(), IBV_ADVISE_MR_ADVICE_PREFETCH,
				IBV_ADVISE_MR_FLAG_FLUSH, &bad, 1), ENOENT);
	Region pinned = region(kPage);
	ASSERT_TRUE(pinned) << strerror(errno);
	bad = pinned.sge(0, kPage);
	EXPECT_EQ(ibv_advise_mr(pd_.get(), IBV_ADVISE_MR_ADVICE_PREFETCH,
				IBV_ADVISE_MR_FLAG_FLUSH, &bad, 1), ENOENT);
	bad = sge;
	bad.addr += kPage;
	EXPECT_EQ(ibv_advise_mr(pd_.get(), IBV_ADVISE_MR_ADVICE_PREFETCH,
				IBV_ADVISE_MR_FLAG_FLUSH, &bad, 1), EINVAL);
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << strerror(errno);
	EXPECT_EQ(ibv_advise_mr(other.get(), IBV_ADVISE_MR_ADVICE_PREFETCH,
				IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1), EPERM);
	Mr ro(ibv_reg_mr(pd_.get(), untouched.data(), len,
			 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_READ));
	ASSERT_TRUE(ro) << strerror(errno);
	ibv_sge rs{ untouched.addr(), uint32_t(len), ro->lkey };
	EXPECT_EQ(ibv_advise_mr(pd_.get(), IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				IBV_ADVISE_MR_FLAG_FLUSH, &rs, 1), EPERM);
}

// An ODP MR deregistered, or a QP destroyed, while a WQE waits for its
// pages: the WQE ends (or is flushed), and nothing is left behind.
TEST_F(OdpTest, TeardownWhileFaulting)
{
	for (int round = 0; round < 8; round++) {
		QpPair p;
		ASSERT_NO_FATAL_FAILURE(make_rc(&p));
		const size_t len = 1024 * 1024;
		Anon remote(len);
		ASSERT_TRUE(remote.data());
		Mr rmr = odp_mr(remote);
		ASSERT_TRUE(rmr) << strerror(errno);
		Region src = region(len);
		ASSERT_TRUE(src) << strerror(errno);
		uint32_t rkey = rmr->rkey;
		ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE,
					     { src.sge(0, len) },
					     remote.addr(), rkey) }), 0);
		if (round & 1) {
			// The MR goes: the WRITE lands or fails on its key.
			ASSERT_EQ(ibv_dereg_mr(rmr.release()), 0);
			ibv_wc wc{};
			ASSERT_ONE_WC(p.cq_a(), wc);
			EXPECT_TRUE(wc.status == IBV_WC_SUCCESS ||
				    wc.status == IBV_WC_REM_ACCESS_ERR)
				<< ibv_wc_status_str(wc.status);
		}
		// Even round: the QP pair is destroyed with the WQE waiting.
	}
}

} // namespace
