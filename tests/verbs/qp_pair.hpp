// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Data-path helpers: the path (GID, MTU) two QPs of the device under test
// use to reach each other, connected QP pairs (RC, UC, UD), registered
// buffers, posting through ibv_post_send or the ibv_wr_* API, polling,
// completion channels and async events.  Device-neutral: everything here
// runs on rxe as well as on urdma.  No exceptions: failures come back as
// return values with a reason.
#pragma once

#include "verbs.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace urdma::test {

// How a test posts send work requests.
enum class Api { PostSend, WrApi };

inline const char *api_name(Api a)
{
	return a == Api::PostSend ? "PostSend" : "WrApi";
}

// How GoogleTest prints a parameter of this type.
inline void PrintTo(Api a, std::ostream *os) { *os << api_name(a); }

// How long a poll or a wait gives the device before calling it lost:
// $URDMA_TIMEOUT_MS, default 10 s (guests run under TCG).
inline int timeout_ms()
{
	const char *e = std::getenv("URDMA_TIMEOUT_MS");
	int v = e && *e ? atoi(e) : 0;
	return v > 0 ? v : 10000;
}

inline int64_t now_ms()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// True on urdma itself (not rxe or hardware): some completion fields the
// IBTA leaves open are pinned down for urdma (see expect_*_wc).
inline bool device_is_urdma()
{
	return device_name().rfind("urdma", 0) == 0;
}

// The random seed of a test: $URDMA_SEED, or a fixed default.  Printed by
// the tests that use it so that a failure can be replayed.
inline uint64_t test_seed()
{
	const char *e = std::getenv("URDMA_SEED");
	return e && *e ? strtoull(e, nullptr, 0) : 0x75726d61ull;  // "urma"
}

/*
 * Path: how two QPs of one port reach each other.
 */
struct Path {
	uint8_t port = 1;
	int gid_index = -1;
	ibv_gid gid{};
	bool global = true;     // RoCE (a GRH) rather than IB with LIDs
	uint16_t lid = 0;
	ibv_mtu mtu = IBV_MTU_1024;
	ibv_device_attr dev{};
	std::string error;      // empty when usable

	bool ok() const { return error.empty(); }
	uint32_t mtu_bytes() const { return 128u << mtu; }
};

inline bool gid_is_v4_mapped(const ibv_gid &g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
					 0, 0, 0xff, 0xff };
	return memcmp(g.raw, pfx, sizeof(pfx)) == 0;
}

inline std::string gid_str(const ibv_gid &g)
{
	char buf[INET6_ADDRSTRLEN] = "?";
	inet_ntop(AF_INET6, g.raw, buf, sizeof(buf));
	return buf;
}

/*
 * The GID at $URDMA_GID_INDEX, or else the first RoCEv2 GID that is
 * IPv4-mapped (on a veth that is the one that routes), else the first
 * RoCEv2 GID, else (an IB port) GID 0; path_mtu is the port's active_mtu.
 * This is what ibv_rc_pingpong -g and rdma-core's tests do by hand.
 */
inline Path query_path(ibv_context *ctx, uint8_t port = 1)
{
	Path p;
	p.port = port;
	if (ibv_query_device(ctx, &p.dev)) {
		p.error = std::string("ibv_query_device: ") + strerror(errno);
		return p;
	}
	ibv_port_attr pa{};
	if (ibv_query_port(ctx, port, &pa)) {
		p.error = std::string("ibv_query_port: ") + strerror(errno);
		return p;
	}
	p.mtu = pa.active_mtu;
	p.lid = pa.lid;
	p.global = pa.link_layer != IBV_LINK_LAYER_INFINIBAND;

	const char *e = std::getenv("URDMA_GID_INDEX");
	if (e && *e) {
		p.gid_index = atoi(e);
		if (ibv_query_gid(ctx, port, p.gid_index, &p.gid))
			p.error = "URDMA_GID_INDEX=" + std::string(e) +
				  ": ibv_query_gid failed";
		return p;
	}
	if (!p.global) {
		p.gid_index = 0;
		ibv_query_gid(ctx, port, 0, &p.gid);
		return p;
	}
	std::vector<ibv_gid_entry> ents(std::max(pa.gid_tbl_len, 1));
	ssize_t n = ibv_query_gid_table(ctx, ents.data(), ents.size(), 0);
	if (n < 0) {
		p.error = std::string("ibv_query_gid_table: ") +
			  strerror(int(-n));
		return p;
	}
	const ibv_gid_entry *v2 = nullptr, *v2v4 = nullptr;
	for (ssize_t i = 0; i < n; i++) {
		const ibv_gid_entry &g = ents[i];
		if (g.port_num != port || g.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (!v2)
			v2 = &g;
		if (!v2v4 && gid_is_v4_mapped(g.gid))
			v2v4 = &g;
	}
	const ibv_gid_entry *pick = v2v4 ? v2v4 : v2;
	if (!pick) {
		p.error = "port " + std::to_string(port) +
			  " has no RoCEv2 GID (is the netdev up with an "
			  "address?); set URDMA_GID_INDEX";
		return p;
	}
	p.gid_index = pick->gid_index;
	p.gid = pick->gid;
	return p;
}

inline ibv_ah_attr path_ah_attr(const Path &p)
{
	ibv_ah_attr ah{};
	ah.port_num = p.port;
	if (p.global) {
		ah.is_global = 1;
		ah.grh.dgid = p.gid;
		ah.grh.sgid_index = p.gid_index;
		ah.grh.hop_limit = 64;
	} else {
		ah.dlid = p.lid;
	}
	return ah;
}

/*
 * Memory: a zeroed, aligned heap buffer, and a buffer with its MR.
 */
class Buffer {
public:
	Buffer() = default;
	explicit Buffer(size_t len, size_t align = 4096)
	{
		void *p = nullptr;
		if (posix_memalign(&p, align, len ? len : 1) == 0) {
			mem_.reset(p);
			len_ = len;
			memset(p, 0, len);
		}
	}
	uint8_t *data() const { return static_cast<uint8_t *>(mem_.get()); }
	size_t size() const { return len_; }
	explicit operator bool() const { return mem_ != nullptr; }

private:
	struct Free {
		void operator()(void *p) const { free(p); }
	};
	std::unique_ptr<void, Free> mem_;
	size_t len_ = 0;
};

constexpr int kLocalAccess = IBV_ACCESS_LOCAL_WRITE;
constexpr int kRemoteAccess = IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC;

struct Region {
	Buffer buf;
	Mr mr;

	uint8_t *data() const { return buf.data(); }
	size_t size() const { return buf.size(); }
	uint64_t addr(size_t off = 0) const
	{
		return uint64_t(uintptr_t(buf.data())) + off;
	}
	uint32_t lkey() const { return mr ? mr->lkey : 0; }
	uint32_t rkey() const { return mr ? mr->rkey : 0; }
	ibv_sge sge(size_t off, uint32_t len) const
	{
		return ibv_sge{ addr(off), len, lkey() };
	}
	explicit operator bool() const { return buf && mr; }
};

// @len bytes registered with @access; check with bool (errno is left by
// ibv_reg_mr when the MR is missing).
inline Region make_region(ibv_pd *pd, size_t len, int access = kRemoteAccess,
			  size_t align = 4096)
{
	Region r;
	r.buf = Buffer(len, align);
	if (!r.buf) {
		errno = ENOMEM;
		return r;
	}
	r.mr.reset(ibv_reg_mr(pd, r.buf.data(), len, access));
	return r;
}

// Bytes of a deterministic pattern that depends on @seed and the index.
inline void fill_pattern(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = uint8_t(x >> 16);
	}
}

inline void fill_random(uint8_t *p, size_t len, std::mt19937_64 &rng)
{
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t v = rng();
		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = rng();
		memcpy(p + i, &v, len - i);
	}
}

// A key that the device did not hand out: the same index with another
// 8-bit variant (the low byte of lkeys and rkeys on urdma, rxe and mlx5).
inline uint32_t bad_key(uint32_t key) { return key ^ 0x5a; }

// Where @a and @b first differ in @len bytes; -1 if they are equal.
inline long first_diff(const void *a, const void *b, size_t len)
{
	if (!memcmp(a, b, len))
		return -1;
	const uint8_t *x = static_cast<const uint8_t *>(a);
	const uint8_t *y = static_cast<const uint8_t *>(b);
	for (size_t i = 0; i < len; i++)
		if (x[i] != y[i])
			return long(i);
	return -1;
}

// True if all @len bytes at @p are @v.
inline bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/*
 * Posting.  One SendWr describes a send work request for either API.
 */
struct SendWr {
	uint64_t wr_id = 0;
	ibv_wr_opcode opcode = IBV_WR_SEND;
	unsigned flags = IBV_SEND_SIGNALED;
	std::vector<ibv_sge> sge;       // with IBV_SEND_INLINE: the data
	__be32 imm = 0;                 // network order, as on the wire
	uint32_t invalidate_rkey = 0;   // SEND_WITH_INV, LOCAL_INV
	uint64_t remote_addr = 0;       // RDMA, atomics
	uint32_t rkey = 0;              // RDMA, atomics; BIND_MW: new rkey
	uint64_t compare_add = 0;
	uint64_t swap = 0;
	ibv_ah *ah = nullptr;           // UD
	uint32_t remote_qpn = 0;
	uint32_t remote_qkey = 0;
	uint32_t xrc_srqn = 0;          // XRC_SEND: the target's XRC SRQ
	ibv_mw *mw = nullptr;           // BIND_MW
	ibv_mw_bind_info bind_info{};
};

inline SendWr send_wr(uint64_t id, ibv_wr_opcode op, std::vector<ibv_sge> sge,
		      unsigned flags = IBV_SEND_SIGNALED)
{
	SendWr w;
	w.wr_id = id;
	w.opcode = op;
	w.sge = std::move(sge);
	w.flags = flags;
	return w;
}

inline SendWr rdma_wr(uint64_t id, ibv_wr_opcode op, std::vector<ibv_sge> sge,
		      uint64_t raddr, uint32_t rkey,
		      unsigned flags = IBV_SEND_SIGNALED)
{
	SendWr w = send_wr(id, op, std::move(sge), flags);
	w.remote_addr = raddr;
	w.rkey = rkey;
	return w;
}

// Post @wrs as one ibv_post_send chain.  0 or the errno it returned.
inline int post_send_verbs(ibv_qp *qp, const std::vector<SendWr> &wrs)
{
	std::vector<ibv_send_wr> v(wrs.size());
	std::vector<std::vector<ibv_sge>> sges(wrs.size());
	for (size_t i = 0; i < wrs.size(); i++) {
		const SendWr &s = wrs[i];
		ibv_send_wr &w = v[i];
		sges[i] = s.sge;
		w.wr_id = s.wr_id;
		w.next = i + 1 < wrs.size() ? &v[i + 1] : nullptr;
		w.sg_list = sges[i].empty() ? nullptr : sges[i].data();
		w.num_sge = int(sges[i].size());
		w.opcode = s.opcode;
		w.send_flags = s.flags;
		switch (s.opcode) {
		case IBV_WR_SEND_WITH_IMM:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			w.imm_data = s.imm;
			break;
		case IBV_WR_SEND_WITH_INV:
		case IBV_WR_LOCAL_INV:
			w.invalidate_rkey = s.invalidate_rkey;
			break;
		default:
			break;
		}
		switch (s.opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_RDMA_READ:
			w.wr.rdma.remote_addr = s.remote_addr;
			w.wr.rdma.rkey = s.rkey;
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			w.wr.atomic.remote_addr = s.remote_addr;
			w.wr.atomic.rkey = s.rkey;
			w.wr.atomic.compare_add = s.compare_add;
			w.wr.atomic.swap = s.swap;
			break;
		case IBV_WR_BIND_MW:
			w.bind_mw.mw = s.mw;
			w.bind_mw.rkey = s.rkey;
			w.bind_mw.bind_info = s.bind_info;
			break;
		default:
			break;
		}
		if (s.ah) {
			w.wr.ud.ah = s.ah;
			w.wr.ud.remote_qpn = s.remote_qpn;
			w.wr.ud.remote_qkey = s.remote_qkey;
		}
		w.qp_type.xrc.remote_srqn = s.xrc_srqn;
	}
	ibv_send_wr *bad = nullptr;
	return v.empty() ? 0 : ibv_post_send(qp, v.data(), &bad);
}

// Post @wrs between one ibv_wr_start and ibv_wr_complete.  0 or the errno
// of ibv_wr_complete (EINVAL for an opcode the ibv_wr_* API lacks).
inline int post_send_wr_api(ibv_qp_ex *qpx, const std::vector<SendWr> &wrs)
{
	if (!qpx)
		return EINVAL;
	ibv_wr_start(qpx);
	for (const SendWr &s : wrs) {
		qpx->wr_id = s.wr_id;
		qpx->wr_flags = s.flags & ~unsigned(IBV_SEND_INLINE);
		bool data = true;
		switch (s.opcode) {
		case IBV_WR_SEND:
			ibv_wr_send(qpx);
			break;
		case IBV_WR_SEND_WITH_IMM:
			ibv_wr_send_imm(qpx, s.imm);
			break;
		case IBV_WR_SEND_WITH_INV:
			ibv_wr_send_inv(qpx, s.invalidate_rkey);
			break;
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(qpx, s.rkey, s.remote_addr);
			break;
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			ibv_wr_rdma_write_imm(qpx, s.rkey, s.remote_addr, s.imm);
			break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(qpx, s.rkey, s.remote_addr);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(qpx, s.rkey, s.remote_addr,
					      s.compare_add, s.swap);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(qpx, s.rkey, s.remote_addr,
						s.compare_add);
			break;
		case IBV_WR_LOCAL_INV:
			ibv_wr_local_inv(qpx, s.invalidate_rkey);
			data = false;
			break;
		case IBV_WR_BIND_MW:
			ibv_wr_bind_mw(qpx, s.mw, s.rkey, &s.bind_info);
			data = false;
			break;
		default:
			ibv_wr_abort(qpx);
			return EINVAL;
		}
		if (s.ah)
			ibv_wr_set_ud_addr(qpx, s.ah, s.remote_qpn,
					   s.remote_qkey);
		if (qpx->qp_base.qp_type == IBV_QPT_XRC_SEND)
			ibv_wr_set_xrc_srqn(qpx, s.xrc_srqn);
		if (!data)
			continue;
		// One buffer or SGE through the single setter, several
		// through the list setter: both get exercised.
		if ((s.flags & IBV_SEND_INLINE) && s.sge.size() == 1) {
			ibv_wr_set_inline_data(
				qpx, reinterpret_cast<void *>(
					     uintptr_t(s.sge[0].addr)),
				s.sge[0].length);
		} else if (s.flags & IBV_SEND_INLINE) {
			std::vector<ibv_data_buf> bufs;
			for (const ibv_sge &g : s.sge)
				bufs.push_back({ reinterpret_cast<void *>(
							 uintptr_t(g.addr)),
						 g.length });
			ibv_wr_set_inline_data_list(qpx, bufs.size(),
						    bufs.data());
		} else if (s.sge.size() == 1) {
			ibv_wr_set_sge(qpx, s.sge[0].lkey, s.sge[0].addr,
				       s.sge[0].length);
		} else {
			ibv_wr_set_sge_list(qpx, s.sge.size(), s.sge.data());
		}
	}
	return ibv_wr_complete(qpx);
}

inline int post_send(ibv_qp *qp, Api api, const std::vector<SendWr> &wrs)
{
	if (api == Api::PostSend)
		return post_send_verbs(qp, wrs);
	return post_send_wr_api(ibv_qp_to_qp_ex(qp), wrs);
}

inline int post_recv(ibv_qp *qp, uint64_t wr_id, std::vector<ibv_sge> sge)
{
	ibv_recv_wr w{};
	w.wr_id = wr_id;
	w.sg_list = sge.empty() ? nullptr : sge.data();
	w.num_sge = int(sge.size());
	ibv_recv_wr *bad = nullptr;
	return ibv_post_recv(qp, &w, &bad);
}

inline int post_srq_recv(ibv_srq *srq, uint64_t wr_id,
			 std::vector<ibv_sge> sge)
{
	ibv_recv_wr w{};
	w.wr_id = wr_id;
	w.sg_list = sge.empty() ? nullptr : sge.data();
	w.num_sge = int(sge.size());
	ibv_recv_wr *bad = nullptr;
	return ibv_post_srq_recv(srq, &w, &bad);
}

/*
 * Completions.
 */
inline std::string wc_opcode_name(int op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_FLUSH: return "FLUSH";
	case IBV_WC_ATOMIC_WRITE: return "ATOMIC_WRITE";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "opcode " + std::to_string(op);
	}
}

inline std::string wc_str(const ibv_wc &wc)
{
	char buf[256];
	snprintf(buf, sizeof(buf),
		 "{wr_id %" PRIu64 " status %s opcode %s byte_len %u "
		 "wc_flags 0x%x imm/inv 0x%x qp_num 0x%x src_qp 0x%x}",
		 uint64_t(wc.wr_id), ibv_wc_status_str(wc.status),
		 wc_opcode_name(wc.opcode).c_str(), wc.byte_len,
		 unsigned(wc.wc_flags), unsigned(wc.imm_data), wc.qp_num,
		 wc.src_qp);
	return buf;
}

inline std::string wcs_str(const std::vector<ibv_wc> &wcs)
{
	std::string s;
	for (const ibv_wc &wc : wcs)
		s += wc_str(wc) + " ";
	return s.empty() ? "(none)" : s;
}

// Up to @n completions of @cq, waiting at most @ms for them.
inline std::vector<ibv_wc> poll_cq(ibv_cq *cq, size_t n, int ms = timeout_ms())
{
	std::vector<ibv_wc> out;
	const int64_t end = now_ms() + ms;
	ibv_wc wc[16];
	while (out.size() < n) {
		int want = int(std::min<size_t>(16, n - out.size()));
		int got = ibv_poll_cq(cq, want, wc);
		if (got < 0)
			break;
		out.insert(out.end(), wc, wc + got);
		if (got == 0) {
			if (now_ms() > end)
				break;
			sched_yield();
		}
	}
	return out;
}

// What @cq delivers within @ms (expected: nothing).
inline std::vector<ibv_wc> poll_quiet(ibv_cq *cq, int ms = 200)
{
	std::vector<ibv_wc> out;
	const int64_t end = now_ms() + ms;
	ibv_wc wc[16];
	do {
		int got = ibv_poll_cq(cq, 16, wc);
		if (got > 0)
			out.insert(out.end(), wc, wc + got);
		else
			usleep(1000);
	} while (now_ms() < end);
	return out;
}

// The state ibv_query_qp reports; -1 if the query fails.
inline int qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

inline int modify_to(ibv_qp *qp, ibv_qp_state s)
{
	ibv_qp_attr a{};
	a.qp_state = s;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

// Wait up to @ms for @fd to become readable.
inline bool fd_readable(int fd, int ms)
{
	pollfd p{ fd, POLLIN, 0 };
	int r;
	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0 && (p.revents & POLLIN);
}

// A completion event of @ch within @ms: its CQ (the event is acked), or
// nullptr.
inline ibv_cq *wait_cq_event(ibv_comp_channel *ch, int ms)
{
	if (!fd_readable(ch->fd, ms))
		return nullptr;
	ibv_cq *cq = nullptr;
	void *cq_ctx = nullptr;
	if (ibv_get_cq_event(ch, &cq, &cq_ctx))
		return nullptr;
	ibv_ack_cq_events(cq, 1);
	return cq;
}

inline std::string async_event_str(const ibv_async_event &ev)
{
	return std::string(ibv_event_type_str(ev.event_type));
}

/*
 * The first async event of @type on @ctx within @ms, acked and copied to
 * *@out; false if none came.  Other events are acked and listed in *@seen.
 */
inline bool wait_async_event(ibv_context *ctx, ibv_event_type type, int ms,
			     ibv_async_event *out, std::string *seen)
{
	const int64_t end = now_ms() + ms;
	for (;;) {
		int left = int(end - now_ms());
		if (left < 0 || !fd_readable(ctx->async_fd, left))
			return false;
		ibv_async_event ev{};
		if (ibv_get_async_event(ctx, &ev))
			return false;
		ibv_async_event copy = ev;
		ibv_ack_async_event(&ev);
		if (copy.event_type == type) {
			*out = copy;
			return true;
		}
		if (seen)
			*seen += async_event_str(copy) + " ";
	}
}

/*
 * A connected pair of QPs, a and b, on one device: RC and UC connected to
 * each other, UD with an address handle for the path.  Each QP has its
 * own CQ unless the options give CQs.
 */
struct QpPairOptions {
	ibv_qp_type type = IBV_QPT_RC;
	Api api = Api::PostSend;
	// WrApi: IBV_QP_EX_WITH_* ops on top of the type's defaults
	// (SEND, SEND_WITH_IMM; RC and UC also RDMA_WRITE(_WITH_IMM); RC
	// RDMA_READ and, if the device has atomics, the two atomics).
	uint64_t extra_send_ops = 0;
	ibv_qp_cap cap = qp_cap(64, 64, 4, 4, 0);
	bool sq_sig_all = false;
	ibv_srq *srq_b = nullptr;          // b receives from this SRQ
	ibv_cq *cq_a = nullptr;            // else the pair makes its own
	ibv_cq *cq_b = nullptr;
	int cqe = 256;
	ibv_comp_channel *channel = nullptr;  // for the pair's own CQs
	int access = -1;  // QP access flags; -1: all the type allows
	uint8_t timeout = 14;
	uint8_t retry_cnt = 7;
	uint8_t rnr_retry_a = 7;           // a's rnr_retry (the requester)
	uint8_t min_rnr_timer_b = 12;      // b's RNR NAK timer (0.64 ms)
	uint32_t qkey = 0x11111111;
	const Path *path = nullptr;        // else query_path()
};

class QpPair {
public:
	// Create both QPs and bring them to RTS; false with *@err if not.
	bool init(ibv_context *ctx, ibv_pd *pd, const QpPairOptions &o,
		  std::string *err)
	{
		o_ = o;
		if (o.path) {
			path_ = *o.path;
		} else {
			path_ = query_path(ctx, 1);
		}
		if (!path_.ok())
			return fail(err, path_.error);
		if (o.cq_a) {
			cq_a_ = o.cq_a;
		} else {
			own_a_.reset(ibv_create_cq(ctx, o.cqe, nullptr,
						   o.channel, 0));
			if (!own_a_)
				return fail(err, "create_cq: " + errstr());
			cq_a_ = own_a_.get();
		}
		if (o.cq_b) {
			cq_b_ = o.cq_b;
		} else {
			own_b_.reset(ibv_create_cq(ctx, o.cqe, nullptr,
						   o.channel, 0));
			if (!own_b_)
				return fail(err, "create_cq: " + errstr());
			cq_b_ = own_b_.get();
		}
		a_ = create(ctx, pd, cq_a_, nullptr);
		if (!a_)
			return fail(err, "create QP a: " + errstr());
		b_ = create(ctx, pd, cq_b_, o.srq_b);
		if (!b_)
			return fail(err, "create QP b: " + errstr());
		if (o.type == IBV_QPT_UD) {
			ibv_ah_attr ah = path_ah_attr(path_);
			ah_.reset(ibv_create_ah(pd, &ah));
			if (!ah_)
				return fail(err, "create_ah: " + errstr());
		}
		std::string why;
		if (!bring_up(a_.get(), b_->qp_num, kPsnA, kPsnB, true, &why))
			return fail(err, "QP a: " + why);
		if (!bring_up(b_.get(), a_->qp_num, kPsnB, kPsnA, false, &why))
			return fail(err, "QP b: " + why);
		return true;
	}

	ibv_qp *a() const { return a_.get(); }
	ibv_qp *b() const { return b_.get(); }
	ibv_cq *cq_a() const { return cq_a_; }
	ibv_cq *cq_b() const { return cq_b_; }
	ibv_ah *ah() const { return ah_.get(); }
	const Path &path() const { return path_; }
	const QpPairOptions &options() const { return o_; }
	uint32_t qkey() const { return o_.qkey; }
	Api api() const { return o_.api; }

	// The UD address of b (for a's sends) or of a.
	SendWr to_b(SendWr w) const { return address(w, b_.get()); }
	SendWr to_a(SendWr w) const { return address(w, a_.get()); }

	// The capacities a QP was given (max_inline_data, ...).
	ibv_qp_cap cap(ibv_qp *qp) const
	{
		ibv_qp_attr at{};
		ibv_qp_init_attr ia{};
		ibv_query_qp(qp, &at, IBV_QP_CAP, &ia);
		return ia.cap;
	}

	// Post from a (or b) with the pair's API.
	int post_a(const std::vector<SendWr> &w) const
	{
		return post_send(a_.get(), o_.api, w);
	}
	int post_b(const std::vector<SendWr> &w) const
	{
		return post_send(b_.get(), o_.api, w);
	}

	static constexpr uint32_t kPsnA = 0x10a0a0;
	static constexpr uint32_t kPsnB = 0x20b0b0;

private:
	static std::string errstr() { return strerror(errno); }
	static bool fail(std::string *err, const std::string &why)
	{
		if (err)
			*err = why;
		return false;
	}

	SendWr address(SendWr w, ibv_qp *to) const
	{
		if (o_.type == IBV_QPT_UD) {
			w.ah = ah_.get();
			w.remote_qpn = to->qp_num;
			w.remote_qkey = o_.qkey;
		}
		return w;
	}

	uint64_t send_ops() const
	{
		uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
		if (o_.type != IBV_QPT_UD)
			ops |= IBV_QP_EX_WITH_RDMA_WRITE |
			       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
		if (o_.type == IBV_QPT_RC) {
			ops |= IBV_QP_EX_WITH_RDMA_READ;
			if (path_.dev.atomic_cap != IBV_ATOMIC_NONE)
				ops |= IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		}
		return ops | o_.extra_send_ops;
	}

	Qp create(ibv_context *ctx, ibv_pd *pd, ibv_cq *cq, ibv_srq *srq)
	{
		ibv_qp_cap cap = o_.cap;
		if (srq) {
			cap.max_recv_wr = 0;
			cap.max_recv_sge = 0;
		}
		if (o_.api == Api::PostSend) {
			ibv_qp_init_attr a{};
			a.qp_type = o_.type;
			a.send_cq = cq;
			a.recv_cq = cq;
			a.srq = srq;
			a.cap = cap;
			a.sq_sig_all = o_.sq_sig_all;
			return Qp(ibv_create_qp(pd, &a));
		}
		ibv_qp_init_attr_ex a{};
		a.qp_type = o_.type;
		a.send_cq = cq;
		a.recv_cq = cq;
		a.srq = srq;
		a.cap = cap;
		a.sq_sig_all = o_.sq_sig_all;
		a.comp_mask = IBV_QP_INIT_ATTR_PD |
			      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.pd = pd;
		a.send_ops_flags = send_ops();
		return Qp(ibv_create_qp_ex(ctx, &a));
	}

	int access() const
	{
		if (o_.access >= 0)
			return o_.access;
		if (o_.type == IBV_QPT_UC)
			return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ;
		if (path_.dev.atomic_cap != IBV_ATOMIC_NONE)
			acc |= IBV_ACCESS_REMOTE_ATOMIC;
		return acc;
	}

	bool bring_up(ibv_qp *qp, uint32_t dest_qpn, uint32_t sq_psn,
		      uint32_t rq_psn, bool is_a, std::string *why)
	{
		const bool ud = o_.type == IBV_QPT_UD;
		const bool rc = o_.type == IBV_QPT_RC;
		ibv_qp_attr at{};
		at.qp_state = IBV_QPS_INIT;
		at.pkey_index = 0;
		at.port_num = path_.port;
		int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (ud) {
			at.qkey = o_.qkey;
			mask |= IBV_QP_QKEY;
		} else {
			at.qp_access_flags = access();
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		if (ibv_modify_qp(qp, &at, mask))
			return fail(why, "RESET->INIT: " + errstr());

		at = ibv_qp_attr{};
		at.qp_state = IBV_QPS_RTR;
		mask = IBV_QP_STATE;
		if (!ud) {
			at.ah_attr = path_ah_attr(path_);
			at.path_mtu = path_.mtu;
			at.dest_qp_num = dest_qpn;
			at.rq_psn = rq_psn;
			mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN;
		}
		if (rc) {
			at.max_dest_rd_atomic = uint8_t(
				std::min(path_.dev.max_qp_rd_atom, 16));
			at.min_rnr_timer = is_a ? 12 : o_.min_rnr_timer_b;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
		if (ibv_modify_qp(qp, &at, mask))
			return fail(why, "INIT->RTR: " + errstr());

		at = ibv_qp_attr{};
		at.qp_state = IBV_QPS_RTS;
		at.sq_psn = sq_psn;
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (rc) {
			at.timeout = o_.timeout;
			at.retry_cnt = o_.retry_cnt;
			at.rnr_retry = is_a ? o_.rnr_retry_a : 7;
			at.max_rd_atomic = uint8_t(
				std::min(path_.dev.max_qp_init_rd_atom, 16));
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		if (ibv_modify_qp(qp, &at, mask))
			return fail(why, "RTR->RTS: " + errstr());
		return true;
	}

	QpPairOptions o_;
	Path path_;
	// Declared in creation order; released in reverse (AH, QPs, CQs).
	Cq own_a_, own_b_;
	ibv_cq *cq_a_ = nullptr, *cq_b_ = nullptr;
	Qp a_, b_;
	Ah ah_;
};

} // namespace urdma::test
