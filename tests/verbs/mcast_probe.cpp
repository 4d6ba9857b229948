// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// urdma_mcast_probe: does a UD multicast send reach only the QPs of the
// sender's network namespace?  For tests/guest/t_security.sh.
//
//   urdma_mcast_probe DEV GID_INDEX OTHER_DEV [GROUP]
//
// A UD QP on DEV sends three messages to GROUP (an IPv4 multicast address,
// default 239.1.2.3).  Another UD QP on DEV, attached to the group, must
// receive all three (that shows the probe works); a UD QP on OTHER_DEV,
// a urdma device in another network namespace, attached to the same group,
// must receive none.  Exit status 0 if so, 1 if not, 2 on a setup error.
#include "qp_pair.hpp"
#include "verbs.hpp"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace urdma::test;

namespace {

constexpr uint32_t kQkey = 0x1c0de;

struct UdEnd {
	Context ctx;
	Pd pd;
	Cq cq;
	Qp qp;
	Region buf;

	bool open(const std::string &dev)
	{
		ctx = open_device(dev);
		if (!ctx)
			return false;
		pd.reset(ibv_alloc_pd(ctx.get()));
		cq.reset(pd ? ibv_create_cq(ctx.get(), 16, nullptr, nullptr, 0)
			    : nullptr);
		if (!cq)
			return false;
		ibv_qp_init_attr ia = qp_init_attr(IBV_QPT_UD, cq.get(),
						   qp_cap(8, 8, 1, 1));
		qp.reset(ibv_create_qp(pd.get(), &ia));
		buf = make_region(pd.get(), 4096, kLocalAccess);
		if (!qp || !buf)
			return false;
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qkey = kQkey;
		if (ibv_modify_qp(qp.get(), &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_QKEY))
			return false;
		if (modify_to(qp.get(), IBV_QPS_RTR))
			return false;
		a = ibv_qp_attr{};
		a.qp_state = IBV_QPS_RTS;
		return !ibv_modify_qp(qp.get(), &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}

	// Messages received within @ms.
	int received(int ms)
	{
		int n = 0;
		for (const ibv_wc &wc : poll_quiet(cq.get(), ms))
			if (wc.opcode == IBV_WC_RECV && wc.status == IBV_WC_SUCCESS)
				n++;
		return n;
	}
};

int setup_error(const char *what)
{
	fprintf(stderr, "urdma_mcast_probe: %s: %s\n", what, strerror(errno));
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s DEV GID_INDEX OTHER_DEV [GROUP]\n",
			argv[0]);
		return 2;
	}
	const std::string dev = argv[1], other = argv[3];
	const int gid_index = atoi(argv[2]);
	const char *group = argc > 4 ? argv[4] : "239.1.2.3";

	ibv_gid gid{};
	gid.raw[10] = gid.raw[11] = 0xff;
	if (inet_pton(AF_INET, group, gid.raw + 12) != 1)
		return setup_error("group");
	UdEnd sender, here, there;
	if (!sender.open(dev) || !here.open(dev) || !there.open(other))
		return setup_error("UD QPs");
	for (UdEnd *e : { &here, &there }) {
		if (ibv_attach_mcast(e->qp.get(), &gid, 0))
			return setup_error("ibv_attach_mcast");
		for (int i = 0; i < 4; i++)
			if (post_recv(e->qp.get(), i, { e->buf.sge(0, 4096) }))
				return setup_error("post_recv");
	}
	ibv_ah_attr aa{};
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = uint8_t(gid_index);
	aa.grh.hop_limit = 1;
	Ah ah(ibv_create_ah(sender.pd.get(), &aa));
	if (!ah)
		return setup_error("ibv_create_ah");
	for (int i = 0; i < 3; i++) {
		SendWr w = send_wr(10 + i, IBV_WR_SEND, { sender.buf.sge(0, 64) });
		w.ah = ah.get();
		w.remote_qpn = 0xffffff;
		w.remote_qkey = kQkey;
		if (post_send(sender.qp.get(), Api::PostSend, { w }))
			return setup_error("post_send");
	}
	const int got_here = here.received(1500), got_there = there.received(300);
	printf("%s's namespace: %d of 3 received; %s's: %d\n", dev.c_str(),
	       got_here, other.c_str(), got_there);
	for (UdEnd *e : { &here, &there })
		ibv_detach_mcast(e->qp.get(), &gid, 0);
	return got_here == 3 && got_there == 0 ? 0 : 1;
}
