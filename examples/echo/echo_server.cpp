// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// echo_server: accepts one rdma_cm connection and SENDs every message it
// receives back to the client, until an empty message ends the session.
#include "../common/rdma_raii.hpp"
#include "protocol.hpp"

#include <cstdio>
#include <vector>

using namespace urdma::examples;

constexpr int kSlots = 4;  // receives kept posted

static Status run(const Args &a)
{
	EventChannel events;
	CmId listener;
	URDMA_TRY(listen_on(a.addr, a.port, 1, &events, &listener));
	std::printf("echo_server: listening on %s port %s\n",
		    a.addr.empty() ? "*" : a.addr.c_str(), a.port.c_str());
	std::fflush(stdout);

	// 1. A client asks to connect: give it a QP and post our receives.
	CmEvent ev;
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_CONNECT_REQUEST,
				a.timeout_s, &ev));
	CmId conn(ev.id);
	Endpoint ep;
	URDMA_TRY(ep.create(conn.get(), 2 * kSlots));

	// kSlots buffers of kMaxMessage bytes in one MR; a WR's wr_id is its
	// slot.
	std::vector<uint8_t> buf(kSlots * kMaxMessage);
	Mr mr(ibv_reg_mr(ep.pd.get(), buf.data(), buf.size(),
			 IBV_ACCESS_LOCAL_WRITE));
	if (!mr)
		return sys_error("ibv_reg_mr");
	auto sge = [&](uint64_t slot, uint32_t len) {
		return ibv_sge{ reinterpret_cast<uintptr_t>(&buf[slot * kMaxMessage]),
				len, mr->lkey };
	};
	auto post_recv = [&](uint64_t slot) {
		ibv_sge s = sge(slot, kMaxMessage);
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = slot;
		wr.sg_list = &s;
		wr.num_sge = 1;
		int err = ibv_post_recv(ep.ibqp(), &wr, &bad);
		return err ? sys_error("ibv_post_recv", err) : Status();
	};
	for (int slot = 0; slot < kSlots; slot++)
		URDMA_TRY(post_recv(slot));

	// 2. Accept (no private data this time).
	rdma_conn_param param{};
	param.rnr_retry_count = 7;
	if (rdma_accept(conn.get(), &param))
		return sys_error("rdma_accept");
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_ESTABLISHED,
				a.timeout_s, &ev));
	std::printf("echo_server: connected\n");
	std::fflush(stdout);

	// 3. Echo: SEND each message back from the buffer it arrived in, then
	// give that buffer to the receive queue again.
	long echoed = 0;
	for (;;) {
		ibv_wc wc;
		URDMA_TRY(wait_wc(ep.recv_cq.get(), ep.channel.get(),
				  a.timeout_s, &wc));
		if (wc.opcode != IBV_WC_RECV)
			return Status::error("unexpected completion opcode " +
					     std::to_string(wc.opcode));
		if (wc.byte_len == 0)
			break;  // the client is done

		const uint64_t slot = wc.wr_id;
		ibv_sge s = sge(slot, wc.byte_len);
		ibv_send_wr wr{}, *bad;
		wr.wr_id = slot;
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (int err = ibv_post_send(ep.ibqp(), &wr, &bad))
			return sys_error("ibv_post_send", err);
		URDMA_TRY(wait_wc(ep.send_cq.get(), ep.channel.get(),
				  a.timeout_s, &wc));
		URDMA_TRY(post_recv(slot));
		echoed++;
	}
	std::printf("echo_server: echoed %ld messages: OK\n", echoed);
	std::fflush(stdout);

	// 4. The client disconnects; answer it.
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_DISCONNECTED,
				a.timeout_s, &ev));
	rdma_disconnect(conn.get());
	return {};
}

int main(int argc, char **argv)
{
	Args a;
	a.port = kDefaultPort;
	if (!parse_args(argc, argv, "a:p:t:", "[-a ADDR] [-p PORT] [-t SECONDS]",
			&a))
		return 2;
	Status st = run(a);
	if (!st.ok()) {
		std::fprintf(stderr, "echo_server: error: %s\n",
			     st.message().c_str());
		return 1;
	}
	return 0;
}
