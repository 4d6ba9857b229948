// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// echo_client: connects to echo_server with rdma_cm, SENDs -n messages one
// at a time, and checks that each reply equals what it sent.  An empty
// message then ends the session.
#include "../common/rdma_raii.hpp"
#include "protocol.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

using namespace urdma::examples;

// The send buffer and the receive buffer, in one MR.
struct Buffers {
	char send[kMaxMessage];
	char recv[kMaxMessage];
};

static Status run(const Args &a)
{
	// 1. Resolve the server's address and a route to it, then connect.
	EventChannel events;
	CmId id;
	URDMA_TRY(resolve_route_to(a.addr, a.port, a.timeout_s, &events, &id));
	CmEvent ev;

	Endpoint ep;
	URDMA_TRY(ep.create(id.get(), 4));
	auto bufs = std::make_unique<Buffers>();
	Buffers &buf = *bufs;
	Mr mr(ibv_reg_mr(ep.pd.get(), &buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
	if (!mr)
		return sys_error("ibv_reg_mr");

	rdma_conn_param param{};
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(id.get(), &param))
		return sys_error("rdma_connect");
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_ESTABLISHED,
				a.timeout_s, &ev));
	std::printf("echo_client: connected\n");

	// SENDs LEN bytes of buf.send; with EXPECT_REPLY, posts a receive for
	// the reply first and waits for it too.
	auto exchange = [&](uint32_t len, bool expect_reply,
			    uint32_t *reply_len) -> Status {
		ibv_wc wc;
		if (expect_reply) {
			ibv_sge rs{ reinterpret_cast<uintptr_t>(buf.recv),
				    kMaxMessage, mr->lkey };
			ibv_recv_wr rwr{}, *bad_rwr;
			rwr.sg_list = &rs;
			rwr.num_sge = 1;
			if (int err = ibv_post_recv(ep.ibqp(), &rwr, &bad_rwr))
				return sys_error("ibv_post_recv", err);
		}
		ibv_sge ss{ reinterpret_cast<uintptr_t>(buf.send), len,
			    mr->lkey };
		ibv_send_wr swr{}, *bad_swr;
		swr.opcode = IBV_WR_SEND;
		swr.sg_list = len ? &ss : nullptr;
		swr.num_sge = len ? 1 : 0;
		swr.send_flags = IBV_SEND_SIGNALED;
		if (int err = ibv_post_send(ep.ibqp(), &swr, &bad_swr))
			return sys_error("ibv_post_send", err);
		URDMA_TRY(wait_wc(ep.send_cq.get(), ep.channel.get(),
				  a.timeout_s, &wc));
		if (!expect_reply)
			return {};
		URDMA_TRY(wait_wc(ep.recv_cq.get(), ep.channel.get(),
				  a.timeout_s, &wc));
		*reply_len = wc.byte_len;
		return {};
	};

	// 2. Each message, and its echo.
	for (long i = 0; i < a.count; i++) {
		const std::string m = echo_message(i);
		std::memcpy(buf.send, m.data(), m.size());
		std::memset(buf.recv, 0, sizeof(buf.recv));
		uint32_t got = 0;
		URDMA_TRY(exchange(uint32_t(m.size()), true, &got));
		if (got != m.size() || std::memcmp(buf.recv, m.data(), got))
			return Status::error(
				"reply " + std::to_string(i) + " differs: sent " +
				std::to_string(m.size()) + " bytes \"" + m +
				"\", got " + std::to_string(got) + " bytes \"" +
				std::string(buf.recv, std::min<size_t>(got, kMaxMessage)) +
				"\"");
	}
	std::printf("echo_client: %ld messages echoed correctly\n", a.count);

	// 3. The empty message, then disconnect.
	URDMA_TRY(exchange(0, false, nullptr));
	if (rdma_disconnect(id.get()))
		return sys_error("rdma_disconnect");
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_DISCONNECTED,
				a.timeout_s, &ev));
	std::printf("echo_client: done\n");
	return {};
}

int main(int argc, char **argv)
{
	Args a;
	a.port = kDefaultPort;
	if (!parse_args(argc, argv, "a:p:n:t:",
			"-a SERVER [-p PORT] [-n COUNT] [-t SECONDS]", &a))
		return 2;
	if (a.addr.empty()) {
		std::fprintf(stderr, "echo_client: -a SERVER is required\n");
		return 2;
	}
	Status st = run(a);
	if (!st.ok()) {
		std::fprintf(stderr, "echo_client: error: %s\n",
			     st.message().c_str());
		return 1;
	}
	return 0;
}
