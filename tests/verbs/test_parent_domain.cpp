// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Parent domains (ibv_alloc_parent_domain): a PD that stands for its
// protection domain in every verb and brings allocators for the rings of
// the QPs, SRQs and CQs created on it.
#include "fixture.hpp"
#include "qp_pair.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>

namespace urdma::test {
namespace {

// Counts what the provider asked of the allocators.
struct Allocs {
	int allocs = 0;
	int frees = 0;
	bool use_default = false;
	size_t min_alignment = SIZE_MAX;  // the least alignment asked for
	int bad_frees = 0;  // frees of what the allocator did not make
	std::map<void *, size_t> live;
};

void *counting_alloc(ibv_pd *, void *pd_context, size_t size, size_t alignment,
		     uint64_t)
{
	auto *a = static_cast<Allocs *>(pd_context);
	a->allocs++;
	a->min_alignment = std::min(a->min_alignment, alignment);
	if (a->use_default)
		return IBV_ALLOCATOR_USE_DEFAULT;
	void *p = nullptr;
	if (posix_memalign(&p, alignment, size))
		return nullptr;
	memset(p, 0xa5, size);  // the provider must zero it
	a->live[p] = size;
	return p;
}

void counting_free(ibv_pd *, void *pd_context, void *ptr, uint64_t)
{
	auto *a = static_cast<Allocs *>(pd_context);
	a->frees++;
	if (a->live.erase(ptr))
		free(ptr);
	else
		a->bad_frees++;
}

class ParentDomainTest : public PdTest {
protected:
	Pd make_parent(bool allocators)
	{
		ibv_parent_domain_init_attr attr{};
		attr.pd = pd_.get();
		if (allocators) {
			attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
					 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
			attr.alloc = counting_alloc;
			attr.free = counting_free;
			attr.pd_context = &allocs_;
		}
		return Pd(ibv_alloc_parent_domain(ctx_.get(), &attr));
	}

	Cq make_cq(ibv_pd *parent)
	{
		ibv_cq_init_attr_ex attr{};
		attr.cqe = 64;
		attr.wc_flags = IBV_WC_STANDARD_FLAGS;
		attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
		attr.parent_domain = parent;
		ibv_cq_ex *cq = ibv_create_cq_ex(ctx_.get(), &attr);
		return Cq(cq ? ibv_cq_ex_to_cq(cq) : nullptr);
	}

	// RDMA WRITE then SEND between two RC QPs on @pd, CQs from @cq_pd.
	void traffic(ibv_pd *pd, ibv_pd *cq_pd)
	{
		Cq cq_a = make_cq(cq_pd), cq_b = make_cq(cq_pd);
		ASSERT_TRUE(cq_a && cq_b) << strerror(errno);
		QpPairOptions o;
		o.cq_a = cq_a.get();
		o.cq_b = cq_b.get();
		QpPair pair;
		std::string err;
		ASSERT_TRUE(pair.init(ctx_.get(), pd, o, &err)) << err;
		Region src = make_region(pd, 8192), dst = make_region(pd, 8192);
		ASSERT_TRUE(src && dst) << strerror(errno);
		fill_pattern(src.data(), 8192, 7);

		ASSERT_EQ(post_recv(pair.b(), 1, { dst.sge(4096, 4096) }), 0);
		ASSERT_EQ(pair.post_a({ rdma_wr(2, IBV_WR_RDMA_WRITE,
						{ src.sge(0, 4096) },
						dst.addr(0), dst.rkey()),
					send_wr(3, IBV_WR_SEND,
						{ src.sge(4096, 4096) }) }),
			  0);
		auto wa = poll_cq(pair.cq_a(), 2);
		ASSERT_EQ(wa.size(), 2u) << wcs_str(wa);
		for (const auto &wc : wa)
			EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << wc_str(wc);
		auto wb = poll_cq(pair.cq_b(), 1);
		ASSERT_EQ(wb.size(), 1u);
		EXPECT_EQ(wb[0].status, IBV_WC_SUCCESS) << wc_str(wb[0]);
		EXPECT_EQ(wb[0].byte_len, 4096u);
		EXPECT_EQ(first_diff(src.data(), dst.data(), 8192), -1);
	}

	Allocs allocs_;
};

TEST_F(ParentDomainTest, WithoutAllocatorsStandsForItsPd)
{
	Pd parent = make_parent(false);
	ASSERT_TRUE(parent) << strerror(errno);
	EXPECT_EQ(parent->context, ctx_.get());
	EXPECT_EQ(parent->handle, pd_->handle);
	ASSERT_NO_FATAL_FAILURE(traffic(parent.get(), parent.get()));
}

TEST_F(ParentDomainTest, AllocatorsMakeTheRings)
{
	{
		Pd parent = make_parent(true);
		ASSERT_TRUE(parent) << strerror(errno);
		ASSERT_NO_FATAL_FAILURE(traffic(parent.get(), parent.get()));
		// Two CQ rings, two SQs and two RQs.
		EXPECT_EQ(allocs_.allocs, 6);
		EXPECT_EQ(allocs_.live.size(), 0u) << "rings not given back";
	}
	EXPECT_EQ(allocs_.frees, 6);
	EXPECT_EQ(allocs_.bad_frees, 0);
	// Rings are mapped by the page: page-aligned.
	EXPECT_GE(allocs_.min_alignment, size_t(sysconf(_SC_PAGESIZE)));
}

TEST_F(ParentDomainTest, AllocatorMayAnswerUseDefault)
{
	allocs_.use_default = true;
	Pd parent = make_parent(true);
	ASSERT_TRUE(parent) << strerror(errno);
	ASSERT_NO_FATAL_FAILURE(traffic(parent.get(), parent.get()));
	EXPECT_EQ(allocs_.allocs, 6);
	EXPECT_EQ(allocs_.frees, 0) << "default rings must not go to free()";
}

TEST_F(ParentDomainTest, SrqRingFromTheAllocator)
{
	Pd parent = make_parent(true);
	ASSERT_TRUE(parent) << strerror(errno);
	ibv_srq_init_attr attr{};
	attr.attr.max_wr = 16;
	attr.attr.max_sge = 1;
	Srq srq(ibv_create_srq(parent.get(), &attr));
	ASSERT_TRUE(srq) << strerror(errno);
	EXPECT_EQ(allocs_.allocs, 1);
	srq.reset();
	EXPECT_EQ(allocs_.frees, 1);
}

TEST_F(ParentDomainTest, BusyDomainsCannotBeDeallocated)
{
	Pd parent = make_parent(true);
	ASSERT_TRUE(parent) << strerror(errno);
	// The protection domain while a parent domain stands on it.
	EXPECT_EQ(ibv_dealloc_pd(pd_.get()), EBUSY);
	Cq cq = make_cq(parent.get());
	ASSERT_TRUE(cq) << strerror(errno);
	// The parent domain while a ring of its allocator is in use.
	EXPECT_EQ(ibv_dealloc_pd(parent.get()), EBUSY);
	cq.reset();
	EXPECT_EQ(ibv_dealloc_pd(parent.release()), 0);
}

TEST_F(ParentDomainTest, BadAttributesAreRefused)
{
	ibv_parent_domain_init_attr attr{};
	errno = 0;
	EXPECT_EQ(ibv_alloc_parent_domain(ctx_.get(), &attr), nullptr);
	EXPECT_EQ(errno, EINVAL) << "no PD";

	attr.pd = pd_.get();
	attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	attr.alloc = counting_alloc;  // and no free
	errno = 0;
	EXPECT_EQ(ibv_alloc_parent_domain(ctx_.get(), &attr), nullptr);
	EXPECT_EQ(errno, EINVAL) << "alloc without free";

	Pd parent = make_parent(false);
	ASSERT_TRUE(parent);
	attr = {};
	attr.pd = parent.get();
	errno = 0;
	EXPECT_EQ(ibv_alloc_parent_domain(ctx_.get(), &attr), nullptr);
	EXPECT_EQ(errno, EINVAL) << "a parent domain of a parent domain";

	// A CQ's PD must be a parent domain.
	errno = 0;
	EXPECT_FALSE(make_cq(pd_.get()));
	EXPECT_EQ(errno, EINVAL);
}

}  // namespace
}  // namespace urdma::test
