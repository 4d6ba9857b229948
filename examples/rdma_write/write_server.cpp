// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// write_server: accepts one rdma_cm connection, tells the client (in the
// private data of rdma_accept) where it may RDMA WRITE, waits for the
// client's RDMA_WRITE_WITH_IMM that says "done, N bytes", and checks the
// buffer byte for byte.  Exits 0 only if every byte is right.
#include "../common/rdma_raii.hpp"
#include "protocol.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace urdma::examples;

static Status run(const Args &a)
{
	EventChannel events;
	CmId listener;
	URDMA_TRY(listen_on(a.addr, a.port, 1, &events, &listener));
	std::printf("write_server: listening on %s port %s\n",
		    a.addr.empty() ? "*" : a.addr.c_str(), a.port.c_str());
	std::fflush(stdout);

	// 1. A client asks to connect: give it a QP, and register our buffer.
	CmEvent ev;
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_CONNECT_REQUEST,
				a.timeout_s, &ev));
	CmId conn(ev.id);
	Endpoint ep;
	URDMA_TRY(ep.create(conn.get(), 4));

	// Every byte starts as the complement of what the client should write.
	std::vector<uint8_t> buf(size_t(a.size));
	for (size_t i = 0; i < buf.size(); i++)
		buf[i] = uint8_t(~expected_byte(i));
	Mr mr(ibv_reg_mr(ep.pd.get(), buf.data(), buf.size(),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
	if (!mr)
		return sys_error("ibv_reg_mr");

	// The client's RDMA_WRITE_WITH_IMM consumes a receive (its data goes
	// to the buffer, not here: no SGE).  Post it before accepting.
	ibv_recv_wr rwr{}, *bad_rwr;
	rwr.wr_id = 1;
	if (int err = ibv_post_recv(ep.ibqp(), &rwr, &bad_rwr))
		return sys_error("ibv_post_recv", err);

	// 2. Accept, telling the client where to write.
	RemoteBuffer rb;
	rb.addr = htobe64(reinterpret_cast<uintptr_t>(buf.data()));
	rb.rkey = htonl(mr->rkey);
	rb.len = htonl(uint32_t(buf.size()));
	rdma_conn_param param{};
	param.private_data = &rb;
	param.private_data_len = sizeof(rb);
	param.rnr_retry_count = 7;
	if (rdma_accept(conn.get(), &param))
		return sys_error("rdma_accept");
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_ESTABLISHED,
				a.timeout_s, &ev));
	std::printf("write_server: connected; buffer of %zu bytes, rkey 0x%x\n",
		    buf.size(), mr->rkey);
	std::fflush(stdout);

	// 3. "Done": the immediate data is the number of bytes written.
	ibv_wc wc;
	URDMA_TRY(wait_wc(ep.recv_cq.get(), ep.channel.get(), a.timeout_s, &wc));
	if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
	    !(wc.wc_flags & IBV_WC_WITH_IMM))
		return Status::error("expected an RDMA_WRITE_WITH_IMM, got "
				     "completion opcode " +
				     std::to_string(wc.opcode));
	const uint32_t len = ntohl(wc.imm_data);
	if (len > buf.size())
		return Status::error("the client says it wrote " +
				     std::to_string(len) + " bytes into " +
				     std::to_string(buf.size()));

	// 4. Check every byte: the written ones and the untouched rest.
	for (size_t i = 0; i < buf.size(); i++) {
		const uint8_t want = i < len ? expected_byte(i)
					     : uint8_t(~expected_byte(i));
		if (buf[i] != want) {
			char msg[128];
			std::snprintf(msg, sizeof(msg),
				      "byte %zu is 0x%02x, expected 0x%02x "
				      "(%s the %u bytes written)", i, buf[i],
				      want, i < len ? "within" : "after", len);
			return Status::error(msg);
		}
	}
	const size_t text = std::min<size_t>(len, sizeof(kMessage) - 1);
	std::printf("write_server: received \"%.*s\" and %zu pattern bytes\n",
		    int(text), reinterpret_cast<const char *>(buf.data()),
		    len - text);
	std::printf("write_server: verified %u bytes: OK\n", len);
	std::fflush(stdout);

	// 5. The client disconnects; answer it.
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_DISCONNECTED,
				a.timeout_s, &ev));
	rdma_disconnect(conn.get());
	return {};
}

int main(int argc, char **argv)
{
	Args a;
	a.port = kDefaultPort;
	a.size = 4096;
	if (!parse_args(argc, argv, "a:p:s:t:",
			"[-a ADDR] [-p PORT] [-s SIZE] [-t SECONDS]", &a))
		return 2;
	if (a.size > (1L << 30)) {
		std::fprintf(stderr, "write_server: -s: at most 1 GiB\n");
		return 2;
	}
	Status st = run(a);
	if (!st.ok()) {
		std::fprintf(stderr, "write_server: error: %s\n",
			     st.message().c_str());
		return 1;
	}
	return 0;
}
