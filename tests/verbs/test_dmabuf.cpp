// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// dma-buf MRs (ibv_reg_dmabuf_mr) on buffers from udmabuf, the kernel's
// exporter of memfd pages: the data path into and out of them, their
// bounds, their life after the fd is closed, and no buffer left behind at
// deregistration.  (libibverbs refuses ibv_rereg_mr on them.)
#include "datapath.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

using namespace urdma::test;

namespace {

constexpr uint8_t kGuard = 0xEE;

// A file descriptor that closes itself.
class Fd {
public:
	explicit Fd(int fd = -1) : fd_(fd) {}
	~Fd() { reset(); }
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	int get() const { return fd_; }
	void reset()
	{
		if (fd_ >= 0)
			close(fd_);
		fd_ = -1;
	}

private:
	int fd_;
};

/*
 * @len bytes of a sealed memfd, exported as a dma-buf by /dev/udmabuf, and
 * mapped here too (the CPU's view, to check what the device wrote).
 */
class UdmaBuf {
public:
	// Empty (and *@why set) if this kernel cannot make one.
	UdmaBuf(size_t len, std::string *why) : len_(len)
	{
		Fd dev(open("/dev/udmabuf", O_RDWR));
		if (dev.get() < 0) {
			*why = std::string("/dev/udmabuf: ") + strerror(errno) +
			       " (a kernel without CONFIG_UDMABUF)";
			return;
		}
		Fd mfd(memfd_create("urdma-dmabuf", MFD_ALLOW_SEALING));
		if (mfd.get() < 0 || ftruncate(mfd.get(), off_t(len)) ||
		    fcntl(mfd.get(), F_ADD_SEALS, F_SEAL_SHRINK)) {
			*why = std::string("memfd: ") + strerror(errno);
			return;
		}
		udmabuf_create c{};
		c.memfd = uint32_t(mfd.get());
		c.flags = UDMABUF_FLAGS_CLOEXEC;
		c.size = len;
		int fd = ioctl(dev.get(), UDMABUF_CREATE, &c);
		if (fd < 0) {
			*why = std::string("UDMABUF_CREATE: ") + strerror(errno);
			return;
		}
		buf_fd_ = fd;
		void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       mfd.get(), 0);
		if (p == MAP_FAILED) {
			*why = std::string("mmap: ") + strerror(errno);
			close_fd();
			return;
		}
		cpu_ = static_cast<uint8_t *>(p);
		memset(cpu_, kGuard, len);
	}
	~UdmaBuf()
	{
		close_fd();
		if (cpu_)
			munmap(cpu_, len_);
	}
	UdmaBuf(const UdmaBuf &) = delete;
	UdmaBuf &operator=(const UdmaBuf &) = delete;

	int fd() const { return buf_fd_; }
	uint8_t *cpu() const { return cpu_; }
	size_t size() const { return len_; }
	void close_fd()
	{
		if (buf_fd_ >= 0)
			close(buf_fd_);
		buf_fd_ = -1;
	}
	explicit operator bool() const { return cpu_ != nullptr; }

private:
	size_t len_;
	int buf_fd_ = -1;
	uint8_t *cpu_ = nullptr;
};

// dma-bufs in the system, from debugfs ("Total N objects"); -1 if unknown.
long dmabuf_objects()
{
	std::ifstream in("/sys/kernel/debug/dma_buf/bufinfo");
	std::string line;
	long n = -1;
	// Each object has a "Total N devices attached" line of its own.
	while (std::getline(in, line))
		if (line.find(" objects, ") != std::string::npos &&
		    sscanf(line.c_str(), "Total %ld objects", &n) == 1)
			break;
	return n;
}

// Where the MRs are known to the device: not where anything is mapped
// here.  The core wants an IOVA's page offset to be the buffer offset's.
constexpr uint64_t kIovaBase = 0x7f0012345000ull;

uint64_t iova_for(uint64_t off) { return kIovaBase | (off & 4095); }

class DmaBufMr : public DataTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(DataTest::SetUp());
		if (!device_is_urdma())
			GTEST_SKIP() << "dma-buf MRs are urdma's (rxe has none)";
	}

	// A dma-buf of @len bytes, or null with why_ set.
	std::unique_ptr<UdmaBuf> make_buf(size_t len)
	{
		std::unique_ptr<UdmaBuf> b(new UdmaBuf(len, &why_));
		if (!*b)
			b.reset();
		return b;
	}

	Mr reg(const UdmaBuf &b, uint64_t off, size_t len,
	       int access = kRemoteAccess)
	{
		return Mr(ibv_reg_dmabuf_mr(pd_.get(), off, len, iova_for(off),
					    b.fd(), access));
	}

	int reg_errno(const UdmaBuf &b, uint64_t off, size_t len,
		      int access = kRemoteAccess)
	{
		return create_errno([&] { return reg(b, off, len, access); });
	}

	std::string why_;
};

/*
 * A 5-page registration that starts one page and 0x40 bytes into the
 * buffer: RDMA WRITE into it, RDMA READ out of it, a SEND received into it
 * and a WRITE gathered from it, each checked through the memfd mapping,
 * with the bytes around the target untouched.
 */
TEST_F(DmaBufMr, DataPathIntoAndOutOfTheBuffer)
{
	std::unique_ptr<UdmaBuf> b = make_buf(8 * 4096);
	if (!b)
		GTEST_SKIP() << why_;
	const uint64_t off = 4096 + 0x40;
	const size_t len = 5 * 4096;
	const uint64_t kIova = iova_for(off);
	Mr mr = reg(*b, off, len);
	ASSERT_TRUE(mr) << "ibv_reg_dmabuf_mr: " << strerror(errno);
	// libibverbs reports the offset as the address of a dma-buf MR.
	EXPECT_EQ(uint64_t(uintptr_t(mr->addr)), off);
	EXPECT_EQ(mr->length, len);

	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, QpPairOptions{}));
	Region src = region(len), dst = region(len);
	ASSERT_TRUE(src && dst) << strerror(errno);
	fill_pattern(src.data(), len, 7);
	uint8_t *view = b->cpu() + off;  // byte 0 of the MR, seen by the CPU

	// WRITE across four page boundaries of the buffer.
	const uint32_t wlen = 3 * 4096 + 100, at = 2000;
	ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE, { src.sge(0, wlen) },
				     kIova + at, mr->rkey) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_RDMA_WRITE, p.a());
	EXPECT_EQ(first_diff(view + at, src.data(), wlen), -1);
	EXPECT_TRUE(all_bytes(b->cpu(), off + at, kGuard))
		<< "written before the target";
	EXPECT_TRUE(all_bytes(view + at + wlen, b->size() - off - at - wlen,
			      kGuard))
		<< "written past the target";

	// READ it back out of the buffer.
	ASSERT_EQ(p.post_a({ rdma_wr(2, IBV_WR_RDMA_READ, { dst.sge(0, wlen) },
				     kIova + at, mr->rkey) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 2, IBV_WC_RDMA_READ, p.a(), wlen);
	EXPECT_EQ(first_diff(dst.data(), src.data(), wlen), -1);

	// A SEND received into the buffer (its lkey in a receive SGE).
	fill_pattern(src.data(), len, 8);
	ASSERT_EQ(post_recv(p.b(), 3, { ibv_sge{ kIova, uint32_t(len),
						  mr->lkey } }), 0);
	ASSERT_EQ(p.post_a({ send_wr(4, IBV_WR_SEND, { src.sge(0, len) }) }),
		  0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 4, IBV_WC_SEND, p.a());
	ASSERT_ONE_WC(p.cq_b(), wc);
	RecvExpect e;
	e.wr_id = 3;
	e.byte_len = uint32_t(len);
	e.qp = p.b();
	expect_recv_wc(wc, e);
	EXPECT_EQ(first_diff(view, src.data(), len), -1);

	// The buffer as a gather source (its lkey in a send SGE).
	memset(dst.data(), 0, len);
	ASSERT_EQ(p.post_a({ rdma_wr(5, IBV_WR_RDMA_WRITE,
				     { ibv_sge{ kIova + 17, 9000, mr->lkey } },
				     dst.addr(0), dst.rkey()) }), 0);
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 5, IBV_WC_RDMA_WRITE, p.a());
	EXPECT_EQ(first_diff(dst.data(), src.data() + 17, 9000), -1);
	expect_state(p.a(), IBV_QPS_RTS, "a");
}

// Not a dma-buf: a memfd, and a closed descriptor (no udmabuf needed).
TEST_F(DmaBufMr, NotADmaBufIsRefused)
{
	Fd mfd(memfd_create("not-a-dmabuf", 0));
	ASSERT_GE(mfd.get(), 0);
	ASSERT_EQ(ftruncate(mfd.get(), 4096), 0);
	errno = 0;
	EXPECT_FALSE(Mr(ibv_reg_dmabuf_mr(pd_.get(), 0, 4096, kIovaBase,
					  mfd.get(), kRemoteAccess)));
	EXPECT_EQ(errno, EINVAL) << "a memfd";
	errno = 0;
	EXPECT_FALSE(Mr(ibv_reg_dmabuf_mr(pd_.get(), 0, 4096, kIovaBase, 1000,
					  kRemoteAccess)));
	EXPECT_EQ(errno, EBADF) << "no such fd";
}

// A registration stays inside its buffer, and an access inside its range.
TEST_F(DmaBufMr, BoundsAreTheBuffersAndTheMrs)
{
	std::unique_ptr<UdmaBuf> b = make_buf(4 * 4096);
	if (!b)
		GTEST_SKIP() << why_;
	EXPECT_EQ(reg_errno(*b, 0, b->size() + 1), EINVAL) << "past the end";
	EXPECT_EQ(reg_errno(*b, 4096, b->size()), EINVAL) << "offset + length";
	EXPECT_EQ(reg_errno(*b, ~0ull - 4095, 8192), EINVAL) << "wraps";
	EXPECT_EQ(reg_errno(*b, 0, 0), EINVAL) << "empty";
	EXPECT_EQ(reg_errno(*b, 0, 4096, IBV_ACCESS_REMOTE_WRITE), EINVAL)
		<< "remote write without local write";

	// One byte past the MR's end is a remote access error, and nothing
	// lands in the buffer beyond the MR.
	Mr mr = reg(*b, 4096, 4096);
	ASSERT_TRUE(mr) << strerror(errno);
	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, QpPairOptions{}));
	Region src = region(4096);
	ASSERT_TRUE(src);
	fill_pattern(src.data(), 4096, 9);
	ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE, { src.sge(0, 64) },
				     kIovaBase + 4096 - 63, mr->rkey) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_err_wc(wc, 1, IBV_WC_REM_ACCESS_ERR, p.a());
	EXPECT_TRUE(all_bytes(b->cpu(), b->size(), kGuard))
		<< "an out-of-range WRITE changed the buffer";
}

/*
 * The MR holds the buffer: with the dma-buf's fd closed it still takes
 * WRITEs, and deregistering it drops the last reference (debugfs counts
 * the dma-bufs in the system).
 */
TEST_F(DmaBufMr, OutlivesItsFdAndIsReleasedAtDereg)
{
	const long before = dmabuf_objects();
	std::unique_ptr<UdmaBuf> b = make_buf(2 * 4096);
	if (!b)
		GTEST_SKIP() << why_;
	Mr mr = reg(*b, 0, b->size());
	ASSERT_TRUE(mr) << strerror(errno);
	b->close_fd();

	QpPair p;
	ASSERT_NO_FATAL_FAILURE(make_pair(&p, QpPairOptions{}));
	Region src = region(4096);
	ASSERT_TRUE(src);
	fill_pattern(src.data(), 4096, 10);
	ASSERT_EQ(p.post_a({ rdma_wr(1, IBV_WR_RDMA_WRITE,
				     { src.sge(0, 4096) }, kIovaBase + 4000,
				     mr->rkey) }), 0);
	ibv_wc wc{};
	ASSERT_ONE_WC(p.cq_a(), wc);
	expect_send_wc(wc, 1, IBV_WC_RDMA_WRITE, p.a());
	EXPECT_EQ(first_diff(b->cpu() + 4000, src.data(), 4096), -1);

	if (before < 0) {
		printf("[  NOTE    ] no debugfs dma_buf/bufinfo: the release "
		       "is not counted\n");
		return;
	}
	EXPECT_EQ(dmabuf_objects(), before + 1) << "the MR holds the buffer";
	ASSERT_EQ(ibv_dereg_mr(mr.release()), 0);
	EXPECT_EQ(dmabuf_objects(), before) << "a dma-buf outlived its MR";
}

} // namespace
