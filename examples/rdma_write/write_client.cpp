// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// write_client: connects to write_server with rdma_cm, learns the server's
// buffer (address, rkey, length) from the private data of the ESTABLISHED
// event, RDMA WRITEs a message into it, then says "done, N bytes" with a
// zero-length RDMA_WRITE_WITH_IMM, which wakes the server.
#include "../common/rdma_raii.hpp"
#include "protocol.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

using namespace urdma::examples;

// Posts WR (signaled) and waits for its completion.
static Status post_and_wait(const Endpoint &ep, ibv_send_wr *wr, int timeout_s)
{
	ibv_send_wr *bad;
	wr->send_flags |= IBV_SEND_SIGNALED;
	if (int err = ibv_post_send(ep.ibqp(), wr, &bad))
		return sys_error("ibv_post_send", err);
	ibv_wc wc;
	URDMA_TRY(wait_wc(ep.send_cq.get(), ep.channel.get(), timeout_s, &wc));
	if (wc.opcode != IBV_WC_RDMA_WRITE)
		return Status::error("unexpected completion opcode " +
				     std::to_string(wc.opcode));
	return {};
}

static Status run(const Args &a)
{
	// 1. Resolve the server's address and a route to it, then connect.
	EventChannel events;
	CmId id;
	URDMA_TRY(resolve_route_to(a.addr, a.port, a.timeout_s, &events, &id));
	CmEvent ev;

	Endpoint ep;
	URDMA_TRY(ep.create(id.get(), 4));
	rdma_conn_param param{};
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(id.get(), &param))
		return sys_error("rdma_connect");
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_ESTABLISHED,
				a.timeout_s, &ev));

	// 2. The server's buffer, from its private data (which the CM may
	// have padded with zeros).
	RemoteBuffer rb;
	if (ev.private_data.size() < sizeof(rb))
		return Status::error("the server's private data is " +
				     std::to_string(ev.private_data.size()) +
				     " bytes, expected " +
				     std::to_string(sizeof(rb)));
	std::memcpy(&rb, ev.private_data.data(), sizeof(rb));
	const uint64_t raddr = be64toh(rb.addr);
	const uint32_t rkey = ntohl(rb.rkey), rlen = ntohl(rb.len);
	std::printf("write_client: connected; server buffer 0x%" PRIx64
		    ", rkey 0x%x, %u bytes\n", raddr, rkey, rlen);
	const size_t len = a.size ? size_t(a.size) : rlen;
	if (len > rlen)
		return Status::error("-s " + std::to_string(len) +
				     " is larger than the server's buffer");

	// 3. RDMA WRITE the message and pattern from a registered buffer (the
	// source of a WRITE needs no access flags: local read is implied).
	std::vector<uint8_t> buf(len);
	fill(buf.data(), len);
	Mr mr(ibv_reg_mr(ep.pd.get(), buf.data(), len, 0));
	if (!mr)
		return sys_error("ibv_reg_mr");
	ibv_sge sge{ reinterpret_cast<uintptr_t>(buf.data()), uint32_t(len),
		     mr->lkey };
	ibv_send_wr wr{};
	wr.wr_id = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	URDMA_TRY(post_and_wait(ep, &wr, a.timeout_s));
	const size_t text = std::min(len, sizeof(kMessage) - 1);
	std::printf("write_client: wrote \"%.*s\" and %zu pattern bytes\n",
		    int(text), kMessage, len - text);

	// 4. "Done": no data, the length as immediate data.
	wr = {};
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htonl(uint32_t(len));
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	URDMA_TRY(post_and_wait(ep, &wr, a.timeout_s));

	// 5. Disconnect.
	if (rdma_disconnect(id.get()))
		return sys_error("rdma_disconnect");
	URDMA_TRY(next_cm_event(events.get(), RDMA_CM_EVENT_DISCONNECTED,
				a.timeout_s, &ev));
	std::printf("write_client: done\n");
	return {};
}

int main(int argc, char **argv)
{
	Args a;
	a.port = kDefaultPort;
	if (!parse_args(argc, argv, "a:p:s:t:",
			"-a SERVER [-p PORT] [-s SIZE] [-t SECONDS]", &a))
		return 2;
	if (a.addr.empty()) {
		std::fprintf(stderr, "write_client: -a SERVER is required\n");
		return 2;
	}
	Status st = run(a);
	if (!st.ok()) {
		std::fprintf(stderr, "write_client: error: %s\n",
			     st.message().c_str());
		return 1;
	}
	return 0;
}
