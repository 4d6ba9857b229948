// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Small RAII wrappers and helpers shared by the urdma examples (librdmacm +
// libibverbs).  Nothing here throws: every fallible step returns a Status
// (an error message, empty on success), and the C libraries never see a C++
// exception.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace urdma::examples {

// ---- errors ------------------------------------------------------------

class Status {
public:
	Status() = default;  // success
	static Status error(std::string msg)
	{
		Status s;
		s.msg_ = msg.empty() ? "unknown error" : std::move(msg);
		return s;
	}
	bool ok() const { return msg_.empty(); }
	const std::string &message() const { return msg_; }

private:
	std::string msg_;
};

// "WHAT: strerror(ERR)".  librdmacm calls return -1 and set errno; most
// ibv_* calls return the error number itself: pass it as ERR.
inline Status sys_error(const std::string &what, int err = errno)
{
	return Status::error(what + ": " + std::strerror(err));
}

// Returns EXPR's Status from the calling function (which returns a Status)
// if it is an error.
#define URDMA_TRY(expr)                                   \
	do {                                              \
		::urdma::examples::Status st_ = (expr);   \
		if (!st_.ok())                            \
			return st_;                       \
	} while (0)

// ---- owners ------------------------------------------------------------

struct EventChannelDeleter {
	void operator()(rdma_event_channel *c) const
	{
		rdma_destroy_event_channel(c);
	}
};
struct CmIdDeleter {
	void operator()(rdma_cm_id *id) const { rdma_destroy_id(id); }
};
// Owns the QP that rdma_create_qp() attached to a cm_id (not the id).
struct CmQpDeleter {
	void operator()(rdma_cm_id *id) const { rdma_destroy_qp(id); }
};
struct PdDeleter {
	void operator()(ibv_pd *p) const { ibv_dealloc_pd(p); }
};
struct MrDeleter {
	void operator()(ibv_mr *m) const { ibv_dereg_mr(m); }
};
struct CqDeleter {
	void operator()(ibv_cq *c) const { ibv_destroy_cq(c); }
};
struct CompChannelDeleter {
	void operator()(ibv_comp_channel *c) const
	{
		ibv_destroy_comp_channel(c);
	}
};

using EventChannel = std::unique_ptr<rdma_event_channel, EventChannelDeleter>;
using CmId = std::unique_ptr<rdma_cm_id, CmIdDeleter>;
using CmQp = std::unique_ptr<rdma_cm_id, CmQpDeleter>;
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;
using Cq = std::unique_ptr<ibv_cq, CqDeleter>;
using CompChannel = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;

// The verbs side of one connection: a PD, a completion channel shared by a
// send CQ and a receive CQ, and an RC QP on the cm_id.  Members are
// destroyed in reverse order (QP first); the cm_id must outlive it.
struct Endpoint {
	CompChannel channel;
	Pd pd;
	Cq send_cq;
	Cq recv_cq;
	CmQp qp;

	ibv_qp *ibqp() const { return qp ? qp->qp : nullptr; }

	// SEND_OPS (IBV_QP_EX_WITH_*), if any, makes an extended QP for the
	// ibv_wr_* API.
	Status create(rdma_cm_id *id, int depth, uint64_t send_ops = 0)
	{
		channel.reset(ibv_create_comp_channel(id->verbs));
		if (!channel)
			return sys_error("ibv_create_comp_channel");
		pd.reset(ibv_alloc_pd(id->verbs));
		if (!pd)
			return sys_error("ibv_alloc_pd");
		send_cq.reset(ibv_create_cq(id->verbs, depth, nullptr,
					    channel.get(), 0));
		recv_cq.reset(ibv_create_cq(id->verbs, depth, nullptr,
					    channel.get(), 0));
		if (!send_cq || !recv_cq)
			return sys_error("ibv_create_cq");

		ibv_qp_init_attr_ex attr{};
		attr.send_cq = send_cq.get();
		attr.recv_cq = recv_cq.get();
		attr.qp_type = IBV_QPT_RC;
		attr.cap.max_send_wr = depth;
		attr.cap.max_recv_wr = depth;
		attr.cap.max_send_sge = 1;
		attr.cap.max_recv_sge = 1;
		attr.cap.max_inline_data = 16;
		attr.comp_mask = IBV_QP_INIT_ATTR_PD;
		attr.pd = pd.get();
		if (send_ops) {
			attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			attr.send_ops_flags = send_ops;
		}
		if (rdma_create_qp_ex(id, &attr))
			return sys_error("rdma_create_qp_ex");
		qp.reset(id);
		return {};
	}
};

// ---- waiting, with a timeout ---------------------------------------------

using Clock = std::chrono::steady_clock;

// Waits until FD is readable or DEADLINE passes.
inline Status wait_readable(int fd, Clock::time_point deadline,
			    const std::string &what)
{
	for (;;) {
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			deadline - Clock::now());
		if (left.count() <= 0)
			return Status::error("timed out waiting for " + what);
		pollfd p{ fd, POLLIN, 0 };
		int n = poll(&p, 1, int(left.count()));
		if (n > 0)
			return {};
		if (n < 0 && errno != EINTR)
			return sys_error("poll");
	}
}

// What the examples keep of an rdma_cm event (the event itself is acked,
// and its memory released, before next_cm_event returns).
struct CmEvent {
	rdma_cm_event_type type{};
	rdma_cm_id *id = nullptr;  // CONNECT_REQUEST: the new connection's id
	std::vector<uint8_t> private_data;
};

// Takes the next event from CH (waiting up to TIMEOUT_S seconds); anything
// but WANT, or WANT with a non-zero status, is an error.
inline Status next_cm_event(rdma_event_channel *ch, rdma_cm_event_type want,
			    int timeout_s, CmEvent *out)
{
	URDMA_TRY(wait_readable(ch->fd,
				Clock::now() + std::chrono::seconds(timeout_s),
				rdma_event_str(want)));
	rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev))
		return sys_error("rdma_get_cm_event");
	const rdma_cm_event_type type = ev->event;
	const int status = ev->status;
	out->type = type;
	out->id = ev->id;
	const auto *data = static_cast<const uint8_t *>(ev->param.conn.private_data);
	if (data)
		out->private_data.assign(data,
					 data + ev->param.conn.private_data_len);
	else
		out->private_data.clear();
	rdma_ack_cm_event(ev);

	if (type != want || status != 0) {
		std::string msg = std::string("expected ") + rdma_event_str(want) +
				  ", got " + rdma_event_str(type);
		if (status)
			msg += " (status " + std::to_string(status) + ")";
		return Status::error(msg);
	}
	return {};
}

// Polls CQ for one completion.  Returns true with *ST set if it found one
// (an error status makes *ST an error), false if the CQ was empty.
inline bool poll_one(ibv_cq *cq, ibv_wc *wc, Status *st)
{
	int n = ibv_poll_cq(cq, 1, wc);
	if (n == 0)
		return false;
	if (n < 0)
		*st = Status::error("ibv_poll_cq failed");
	else if (wc->status != IBV_WC_SUCCESS)
		*st = Status::error(std::string("completion error: ") +
				    ibv_wc_status_str(wc->status) + " (wr_id " +
				    std::to_string(wc->wr_id) + ", vendor_err " +
				    std::to_string(wc->vendor_err) + ")");
	else
		*st = {};
	return true;
}

// Takes one completion from CQ, sleeping on CH (the CQ's completion channel)
// for up to TIMEOUT_S seconds.  A completion with an error status is an error.
inline Status wait_wc(ibv_cq *cq, ibv_comp_channel *ch, int timeout_s,
		      ibv_wc *wc)
{
	const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
	Status st;
	for (;;) {
		if (poll_one(cq, wc, &st))
			return st;
		// Arm, then poll once more: a completion that came in before
		// the arm raises no event.
		if (int err = ibv_req_notify_cq(cq, 0))
			return sys_error("ibv_req_notify_cq", err);
		if (poll_one(cq, wc, &st))
			return st;
		URDMA_TRY(wait_readable(ch->fd, deadline, "a completion"));
		ibv_cq *ev_cq;
		void *ev_ctx;
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			return sys_error("ibv_get_cq_event");
		// The channel may be shared: the event can be another CQ's.
		// Ack it either way; that CQ's waiter polls before it sleeps.
		ibv_ack_cq_events(ev_cq, 1);
	}
}

// ---- addresses and options -------------------------------------------------

// HOST (a name or address; empty with PASSIVE: any) and PORT as a sockaddr.
inline Status resolve(const std::string &host, const std::string &port,
		      bool passive, sockaddr_storage *out)
{
	addrinfo hints{}, *res;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	int err = getaddrinfo(host.empty() ? nullptr : host.c_str(),
			      port.c_str(), &hints, &res);
	if (err)
		return Status::error("cannot resolve '" + host + "' port " +
				     port + ": " + gai_strerror(err));
	std::memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return {};
}

// ---- connection setup ------------------------------------------------------

// A client's first steps: a new event channel and cm_id (*EVENTS, *ID),
// HOST:PORT resolved and a route to it (each step up to TIMEOUT_S seconds).
// ACK_TIMEOUT, if not 0, sets the QP's local ACK timeout exponent
// (RDMA_OPTION_ID_ACK_TIMEOUT) before the route.
inline Status resolve_route_to(const std::string &host,
			       const std::string &port, int timeout_s,
			       EventChannel *events, CmId *id,
			       uint8_t ack_timeout = 0)
{
	sockaddr_storage dst;
	URDMA_TRY(resolve(host, port, false, &dst));
	events->reset(rdma_create_event_channel());
	if (!*events)
		return sys_error("rdma_create_event_channel");
	rdma_cm_id *raw;
	if (rdma_create_id(events->get(), &raw, nullptr, RDMA_PS_TCP))
		return sys_error("rdma_create_id");
	id->reset(raw);
	CmEvent ev;
	if (rdma_resolve_addr(raw, nullptr, reinterpret_cast<sockaddr *>(&dst),
			      5000))
		return sys_error("rdma_resolve_addr");
	URDMA_TRY(next_cm_event(events->get(), RDMA_CM_EVENT_ADDR_RESOLVED,
				timeout_s, &ev));
	if (ack_timeout &&
	    rdma_set_option(raw, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &ack_timeout, sizeof(ack_timeout)))
		return sys_error("rdma_set_option(ACK_TIMEOUT)");
	if (rdma_resolve_route(raw, 5000))
		return sys_error("rdma_resolve_route");
	return next_cm_event(events->get(), RDMA_CM_EVENT_ROUTE_RESOLVED,
			     timeout_s, &ev);
}

// A server's first steps: a new event channel and a cm_id (*EVENTS,
// *LISTENER) listening on HOST (empty: any address) and PORT.
inline Status listen_on(const std::string &host, const std::string &port,
			int backlog, EventChannel *events, CmId *listener)
{
	sockaddr_storage addr;
	URDMA_TRY(resolve(host, port, true, &addr));
	events->reset(rdma_create_event_channel());
	if (!*events)
		return sys_error("rdma_create_event_channel");
	rdma_cm_id *raw;
	if (rdma_create_id(events->get(), &raw, nullptr, RDMA_PS_TCP))
		return sys_error("rdma_create_id");
	listener->reset(raw);
	if (rdma_bind_addr(raw, reinterpret_cast<sockaddr *>(&addr)))
		return sys_error("rdma_bind_addr");
	if (rdma_listen(raw, backlog))
		return sys_error("rdma_listen");
	return {};
}

struct Args {
	std::string addr;    // -a
	std::string port;    // -p
	long size = 0;       // -s (0: the program's default)
	long count = 10;     // -n
	int timeout_s = 20;  // -t
};

// Parses the options in OPTSTRING (a subset of "a:p:s:n:t:"); prints USAGE
// and returns false on a bad or missing option.
inline bool parse_args(int argc, char **argv, const char *optstring,
		       const char *usage, Args *a)
{
	auto number = [](const char *s, long *v) {
		char *end;
		errno = 0;
		*v = std::strtol(s, &end, 0);
		return !errno && *s && !*end && *v > 0;
	};
	long t = 0;
	bool good = true;
	for (int c; good && (c = getopt(argc, argv, optstring)) != -1;) {
		switch (c) {
		case 'a': a->addr = optarg; break;
		case 'p': a->port = optarg; break;
		case 's': good = number(optarg, &a->size); break;
		case 'n': good = number(optarg, &a->count); break;
		case 't':
			good = number(optarg, &t) && t <= 3600;
			a->timeout_s = int(t);
			break;
		default: good = false; break;
		}
	}
	if (!good || optind != argc) {
		std::fprintf(stderr, "usage: %s %s\n", argv[0], usage);
		return false;
	}
	return true;
}

}  // namespace urdma::examples
