// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Checked random traffic over one RC pair: RDMA WRITE, RDMA READ and SEND
// between a "local" buffer (a's side) and a "remote" one (b's side), with
// shadow copies of both that every transfer updates.  Each transfer is
// verified on its range and 64 guard bytes either side; verify_all()
// compares the whole buffers.  Used by the integrity and concurrency
// tests; gtest-free apart from AssertionResult, so threads can use it.
#pragma once

#include "qp_pair.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace urdma::test {

constexpr size_t kPage = 4096;
constexpr size_t kHuge = 2u << 20;

// One transfer.  The remote side is contiguous at @roff for WRITE and
// READ; SEND scatters into @rpieces.  @lpieces gather (WRITE, SEND) or
// scatter (READ) on the local side.
struct Xfer {
	ibv_wr_opcode op = IBV_WR_RDMA_WRITE;
	size_t roff = 0;
	std::vector<std::pair<size_t, uint32_t>> lpieces;  // offset, length
	std::vector<std::pair<size_t, uint32_t>> rpieces;

	uint32_t length() const
	{
		uint32_t n = 0;
		for (const auto &p : lpieces)
			n += p.second;
		return n;
	}
	std::string str() const
	{
		std::string s = op == IBV_WR_RDMA_WRITE ? "WRITE" :
				op == IBV_WR_RDMA_READ	? "READ" :
							  "SEND";
		s += " of " + std::to_string(length()) + " local [";
		for (const auto &p : lpieces)
			s += " " + std::to_string(p.first) + "+" +
			     std::to_string(p.second);
		s += " ] remote ";
		if (op == IBV_WR_SEND) {
			s += "[";
			for (const auto &p : rpieces)
				s += " " + std::to_string(p.first) + "+" +
				     std::to_string(p.second);
			s += " ]";
		} else {
			s += std::to_string(roff);
		}
		return s;
	}
};

class Traffic {
public:
	Traffic(const QpPair &p, uint8_t *local, uint32_t lkey, uint8_t *remote,
		uint32_t remote_lkey, uint32_t rkey, size_t len)
		: p_(p), l_(local), r_(remote), lkey_(lkey),
		  rlkey_(remote_lkey), rkey_(rkey), len_(len), ls_(len),
		  rs_(len)
	{
	}

	// Random contents for both buffers (and their shadows).
	void init(std::mt19937_64 &rng)
	{
		fill_random(l_, len_, rng);
		fill_random(r_, len_, rng);
		memcpy(ls_.data(), l_, len_);
		memcpy(rs_.data(), r_, len_);
	}

	// A random transfer of up to @max_len bytes in up to @max_sge
	// pieces, biased to cross page and 2 MiB boundaries.
	Xfer random_xfer(std::mt19937_64 &rng, uint32_t max_len,
			 uint32_t max_sge) const
	{
		Xfer x;
		const int op = int(rng() % 3);
		x.op = op == 0 ? IBV_WR_RDMA_WRITE :
		       op == 1 ? IBV_WR_RDMA_READ :
				 IBV_WR_SEND;
		uint32_t len;
		const unsigned size_class = rng() % 100;
		if (size_class < 50)
			len = 1 + rng() % 4096;
		else if (size_class < 85)
			len = 4096 + rng() % (65536 - 4096);
		else
			len = 65536 + rng() % (1u << 20);
		len = std::min<size_t>({ len, max_len, len_ / max_sge });
		const uint32_t nsge = 1 + rng() % max_sge;
		x.lpieces = pieces(rng, len, std::min(nsge, len));
		if (x.op == IBV_WR_SEND) {
			const uint32_t rsge = 1 + rng() % max_sge;
			x.rpieces = pieces(rng, len, std::min(rsge, len));
		} else {
			x.roff = place(rng, len, 0, len_);
		}
		return x;
	}

	// Run @x as WR @id; verify what it touched against the shadows.
	::testing::AssertionResult run(const Xfer &x, uint64_t id,
				       std::mt19937_64 &rng)
	{
		const uint32_t len = x.length();
		std::vector<ibv_sge> lsge;
		for (const auto &pc : x.lpieces)
			lsge.push_back({ uintptr_t(l_ + pc.first), pc.second,
					 lkey_ });
		std::vector<uint8_t> msg;
		if (x.op != IBV_WR_RDMA_READ) {
			// Fresh source bytes, so a stale copy cannot pass.
			for (const auto &pc : x.lpieces) {
				fill_random(l_ + pc.first, pc.second, rng);
				memcpy(&ls_[pc.first], l_ + pc.first, pc.second);
				msg.insert(msg.end(), l_ + pc.first,
					   l_ + pc.first + pc.second);
			}
		} else {
			fill_random(r_ + x.roff, len, rng);
			memcpy(&rs_[x.roff], r_ + x.roff, len);
		}
		if (x.op == IBV_WR_SEND) {
			std::vector<ibv_sge> rsge;
			for (const auto &pc : x.rpieces)
				rsge.push_back({ uintptr_t(r_ + pc.first),
						 pc.second, rlkey_ });
			if (int e = post_recv(p_.b(), id, rsge))
				return fail(x, "post_recv", e);
		}
		SendWr w = send_wr(id, x.op, lsge);
		w.remote_addr = uintptr_t(r_ + x.roff);
		w.rkey = rkey_;
		if (int e = post_send(p_.a(), p_.api(), { w }))
			return fail(x, "post_send", e);
		std::vector<ibv_wc> wc = poll_cq(p_.cq_a(), 1);
		if (wc.size() != 1)
			return fail(x, "no send completion", 0);
		if (wc[0].status != IBV_WC_SUCCESS || wc[0].wr_id != id)
			return fail(x, "send completion " + wc_str(wc[0]), 0);
		if (x.op == IBV_WR_SEND) {
			wc = poll_cq(p_.cq_b(), 1);
			if (wc.size() != 1)
				return fail(x, "no receive completion", 0);
			if (wc[0].status != IBV_WC_SUCCESS ||
			    wc[0].wr_id != id || wc[0].byte_len != len ||
			    wc[0].opcode != IBV_WC_RECV)
				return fail(x, "receive completion " +
						       wc_str(wc[0]), 0);
		}

		// Update the shadows and check the ranges.
		switch (x.op) {
		case IBV_WR_RDMA_WRITE:
			memcpy(&rs_[x.roff], msg.data(), len);
			return check(x, r_, rs_, { { x.roff, len } }, "remote");
		case IBV_WR_RDMA_READ: {
			size_t at = x.roff;
			for (const auto &pc : x.lpieces) {
				memcpy(&ls_[pc.first], &rs_[at], pc.second);
				at += pc.second;
			}
			return check(x, l_, ls_, x.lpieces, "local");
		}
		default: {
			size_t at = 0;
			for (const auto &pc : x.rpieces) {
				memcpy(&rs_[pc.first], &msg[at], pc.second);
				at += pc.second;
			}
			return check(x, r_, rs_, x.rpieces, "remote");
		}
		}
	}

	// Both buffers equal their shadows, all of them.
	::testing::AssertionResult verify_all() const
	{
		long d = first_diff(l_, ls_.data(), len_);
		if (d >= 0)
			return ::testing::AssertionFailure()
			       << "local buffer differs at " << d;
		d = first_diff(r_, rs_.data(), len_);
		if (d >= 0)
			return ::testing::AssertionFailure()
			       << "remote buffer differs at " << d;
		return ::testing::AssertionSuccess();
	}

	size_t size() const { return len_; }

private:
	// An offset for @n bytes in [@lo, @hi): a third of the time across
	// a 2 MiB boundary, a third across a page boundary, else anywhere.
	size_t place(std::mt19937_64 &rng, uint32_t n, size_t lo,
		     size_t hi) const
	{
		const size_t span = hi - lo;
		const unsigned how = rng() % 3;
		if (n > 1 && how < 2) {
			const size_t unit = how == 0 ? kHuge : kPage;
			const size_t first = (lo / unit + 1) * unit;
			if (first < hi) {
				const size_t count = (hi - first + unit - 1) /
						     unit;
				const size_t b = first + (rng() % count) * unit;
				const size_t before = 1 + rng() % (n - 1);
				if (b >= lo + before && b - before + n <= hi)
					return b - before;
			}
		}
		return lo + rng() % (span - n + 1);
	}

	// @len bytes in @k pieces, piece i placed within zone i of k equal
	// zones of the buffer (so pieces never overlap).
	std::vector<std::pair<size_t, uint32_t>>
	pieces(std::mt19937_64 &rng, uint32_t len, uint32_t k) const
	{
		std::vector<uint32_t> cuts;
		for (uint32_t i = 1; i < k; i++)
			cuts.push_back(1 + rng() % (len - 1));
		cuts.push_back(0);
		cuts.push_back(len);
		std::sort(cuts.begin(), cuts.end());
		std::vector<std::pair<size_t, uint32_t>> out;
		const size_t zone = len_ / k;
		for (uint32_t i = 0; i < k; i++) {
			uint32_t n = cuts[i + 1] - cuts[i];
			if (!n)
				continue;
			out.push_back({ place(rng, n, i * zone,
					      (i + 1) * zone), n });
		}
		return out;
	}

	::testing::AssertionResult
	check(const Xfer &x, const uint8_t *buf, const std::vector<uint8_t> &sh,
	      const std::vector<std::pair<size_t, uint32_t>> &ranges,
	      const char *side) const
	{
		for (const auto &r : ranges) {
			const size_t lo = r.first >= 64 ? r.first - 64 : 0;
			const size_t hi = std::min(len_, r.first + r.second + 64);
			long d = first_diff(buf + lo, &sh[lo], hi - lo);
			if (d >= 0)
				return ::testing::AssertionFailure()
				       << x.str() << ": " << side
				       << " buffer wrong at offset " << lo + d
				       << " (range " << r.first << "+"
				       << r.second << ")";
		}
		return ::testing::AssertionSuccess();
	}

	static ::testing::AssertionResult fail(const Xfer &x,
					       const std::string &what, int e)
	{
		return ::testing::AssertionFailure()
		       << x.str() << ": " << what
		       << (e ? std::string(": ") + strerror(e) : "");
	}

	const QpPair &p_;
	uint8_t *l_, *r_;
	uint32_t lkey_, rlkey_, rkey_;
	size_t len_;
	std::vector<uint8_t> ls_, rs_;
};

} // namespace urdma::test
