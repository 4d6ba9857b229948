// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RoCEv2 through the bound netdev: packets in and out.
 *
 * Receive.  urdma does not own UDP port 4791: rxe binds it, without
 * SO_REUSEPORT, in the initial namespace when it loads, so a urdma socket
 * there would keep rxe from loading (or fail to bind if rxe came first).
 * Instead each device takes the UDP datagrams to port 4791 off its netdev
 * alone, before the IP layer, and queues them to the engine thread that
 * serves the destination QP (QPN modulo the number of engines, the rule
 * urdma_create_qp() assigns QPs by).  Two ways, the first that works:
 *
 *  - the netdev's rx_handler, if no one else has it (a bridge port, a bond
 *    or team member, a macvlan's lower device have theirs).  It consumes
 *    the RoCE datagrams and passes every other frame on, so the IP layer
 *    never sees them: in the wire benchmark, that made 4 KiB ib_write_bw
 *    1.5-2x faster, as the sender's CPU (which runs veth's receive) no
 *    longer cloned each packet for the IP layer and routed it to UDP,
 *    which found no socket.  Netfilter does not see them either.
 *  - else packet handlers (ETH_P_IP, ETH_P_IPV6) for the netdev.  The IP
 *    layer then still gets the frame: rxe's socket, if any, drops it (no
 *    rxe device on this netdev); without one UDP counts it in NoPorts and
 *    may answer with a rate-limited ICMP port unreachable, which RoCE
 *    senders ignore.
 *
 * Transmit.  The engine builds a whole packet in one linear skb, routes it
 * like any local UDP datagram (so the neighbour layer resolves the MAC and
 * netfilter sees it), computes the ICRC over the final headers and hands
 * it to ip_local_out()/ip6_local_out().
 */
#include <linux/if_ether.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <rdma/ib_verbs.h>

#include "urdma.h"
#include "net.h"

/* Frames an engine may have queued before the handler drops new ones. */
#define URDMA_RXQ_MAX	4096

static struct urdma_rx_cb *urdma_rx_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct urdma_rx_cb) > sizeof(skb->cb));
	return (struct urdma_rx_cb *)skb->cb;
}

/*
 * Check the IP and UDP headers of a linear frame at skb->data.  Return:
 * the length of the IP header, or 0 if this is not a RoCEv2 datagram.
 */
static unsigned int urdma_rx_ip(struct sk_buff *skb, bool ipv6)
{
	unsigned int iplen, tot;
	struct udphdr *udp;

	if (ipv6) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)skb->data;

		if (skb->len < sizeof(*ip6) || ip6->version != 6 ||
		    ip6->nexthdr != IPPROTO_UDP)
			return 0;
		iplen = sizeof(*ip6);
		tot = iplen + ntohs(ip6->payload_len);
	} else {
		struct iphdr *ip = (struct iphdr *)skb->data;

		if (skb->len < sizeof(*ip) || ip->version != 4 ||
		    ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
		    ip_is_fragment(ip) || ip_fast_csum((u8 *)ip, ip->ihl))
			return 0;
		iplen = sizeof(*ip);
		tot = ntohs(ip->tot_len);
	}
	if (tot > skb->len || tot < iplen + sizeof(*udp))
		return 0;
	udp = (struct udphdr *)(skb->data + iplen);
	if (udp->dest != htons(URDMA_UDP_PORT) ||
	    ntohs(udp->len) != tot - iplen)
		return 0;
	if (pskb_trim(skb, tot))
		return 0;
	return iplen;
}

/*
 * Queue a frame at the IP header to its engine; consumes @skb.  The caller
 * checked its packet type, made it unshared and pulled the IP and UDP
 * headers.
 */
static int urdma_rx_queue(struct urdma_dev *udev, struct sk_buff *skb,
			  bool ipv6)
{
	const struct urdma_bth *bth;
	struct urdma_engine *eng;
	unsigned int iplen;

	if (skb_linearize(skb))
		goto drop;
	iplen = urdma_rx_ip(skb, ipv6);
	if (!iplen)
		goto consume;

	urdma_rx_cb(skb)->iplen = iplen;
	urdma_rx_cb(skb)->ipv6 = ipv6;
	if (skb->len < iplen + sizeof(struct udphdr) + sizeof(*bth) +
		       URDMA_ICRC_LEN) {
		eng = &udev->engines[0];
		goto count_drop;
	}
	bth = (const struct urdma_bth *)(skb->data + iplen +
					 sizeof(struct udphdr));
	eng = urdma_qpn_engine(udev, FIELD_GET(URDMA_BTH_QPN,
					       be32_to_cpu(bth->w1)));
	if (skb_queue_len(&eng->rxq) >= URDMA_RXQ_MAX)
		goto count_drop;
	skb_queue_tail(&eng->rxq, skb);
	urdma_engine_wake(eng);
	return NET_RX_SUCCESS;

count_drop:
	atomic64_inc(&eng->rx_dropped);
drop:
	kfree_skb(skb);
	return NET_RX_DROP;
consume:
	consume_skb(skb);
	return NET_RX_SUCCESS;
}

static bool urdma_rx_pkt_type_ok(const struct sk_buff *skb)
{
	return skb->pkt_type == PACKET_HOST ||
	       skb->pkt_type == PACKET_MULTICAST;
}

/* The packet handlers (the fallback): they get every IP frame. */
static int urdma_rx_frame(struct sk_buff *skb, struct net_device *ndev,
			  struct packet_type *pt, struct net_device *orig)
{
	bool ipv6 = pt->type == htons(ETH_P_IPV6);

	if (!urdma_rx_pkt_type_ok(skb))
		goto consume;	/* not ours, or the IP layer's own loopback */
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return NET_RX_DROP;
	/* Cheap test first: is it UDP to 4791 at all? */
	if (!pskb_may_pull(skb, (ipv6 ? sizeof(struct ipv6hdr) :
				 sizeof(struct iphdr)) + sizeof(struct udphdr)))
		goto consume;
	return urdma_rx_queue(pt->af_packet_priv, skb, ipv6);
consume:
	consume_skb(skb);
	return NET_RX_SUCCESS;
}

/*
 * Is the frame for this host: multicast, one of the netdev's IPv4
 * addresses, or an IPv6 address of the host (ipv6_chk_addr(): a
 * link-local one on this netdev)?  A datagram this host would route on is
 * not the device's to take.
 */
static bool urdma_rx_local(struct sk_buff *skb, bool ipv6)
{
	const struct in_ifaddr *ifa;
	const struct in_device *in;
	__be32 daddr;

	if (ipv6) {
		const struct in6_addr *a = &ipv6_hdr(skb)->daddr;

		return ipv6_addr_is_multicast(a) ||
		       (IS_ENABLED(CONFIG_IPV6) &&
			ipv6_chk_addr(dev_net(skb->dev), a, skb->dev, 0));
	}
	daddr = ip_hdr(skb)->daddr;
	if (ipv4_is_multicast(daddr))
		return true;
	in = __in_dev_get_rcu(skb->dev);
	if (!in)
		return false;
	in_dev_for_each_ifa_rcu(ifa, in)
		if (ifa->ifa_local == daddr)
			return true;
	return false;
}

/*
 * The rx_handler: RCU read side, softirq.  Takes UDP datagrams to port
 * 4791 addressed to this netdev; lets every other frame pass, unchanged
 * but for a pull of its IP and UDP headers into the linear area.
 */
static rx_handler_result_t urdma_rx_handler(struct sk_buff **pskb)
{
	struct sk_buff *skb = *pskb;
	struct urdma_dev *udev = rcu_dereference(skb->dev->rx_handler_data);
	bool ipv6 = skb->protocol == htons(ETH_P_IPV6);
	unsigned int iplen = ipv6 ? sizeof(struct ipv6hdr) :
				    sizeof(struct iphdr);
	const struct udphdr *udp;

	if ((!ipv6 && skb->protocol != htons(ETH_P_IP)) ||
	    !urdma_rx_pkt_type_ok(skb))
		return RX_HANDLER_PASS;
	/* Ours to change before the pull, as bridge and macvlan do. */
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return RX_HANDLER_CONSUMED;
	*pskb = skb;
	if (!pskb_may_pull(skb, iplen + sizeof(*udp)))
		return RX_HANDLER_PASS;
	if (ipv6 ? ipv6_hdr(skb)->nexthdr != IPPROTO_UDP :
		   ip_hdr(skb)->protocol != IPPROTO_UDP ||
		   ip_hdr(skb)->ihl != 5 || ip_is_fragment(ip_hdr(skb)))
		return RX_HANDLER_PASS;
	udp = (const struct udphdr *)(skb->data + iplen);
	if (udp->dest != htons(URDMA_UDP_PORT) || !urdma_rx_local(skb, ipv6))
		return RX_HANDLER_PASS;
	urdma_rx_queue(udev, skb, ipv6);
	return RX_HANDLER_CONSUMED;
}

/**
 * urdma_net_start - start receiving RoCEv2 on the device's netdev
 * @udev: the device; its engines are running
 */
void urdma_net_start(struct urdma_dev *udev)
{
	struct packet_type *pt;
	int i, ret;

	rtnl_lock();
	ret = netdev_rx_handler_register(udev->ndev, urdma_rx_handler, udev);
	rtnl_unlock();
	if (!ret) {
		udev->rx_handler = true;
		udev->net_started = true;
		return;
	}
	netdev_info(udev->ndev,
		    "urdma: rx_handler taken (%d), receiving by packet handlers\n",
		    ret);

	for (i = 0; i < 2; i++) {
		pt = &udev->ptype[i];
		pt->type = i ? htons(ETH_P_IPV6) : htons(ETH_P_IP);
		pt->dev = udev->ndev;
		pt->func = urdma_rx_frame;
		pt->af_packet_priv = udev;
		dev_add_pack(pt);
	}
	udev->net_started = true;
}

/**
 * urdma_net_stop - stop receiving; no handler runs once this returns
 * @udev: the device
 */
void urdma_net_stop(struct urdma_dev *udev)
{
	if (!udev->net_started)
		return;
	udev->net_started = false;
	if (udev->rx_handler) {
		rtnl_lock();
		netdev_rx_handler_unregister(udev->ndev); /* synchronize_net() */
		rtnl_unlock();
		udev->rx_handler = false;
		return;
	}
	dev_remove_pack(&udev->ptype[0]);
	dev_remove_pack(&udev->ptype[1]);	/* synchronize_net() */
}

/**
 * urdma_pkt_parse - check a received packet's transport headers
 * @udev: the device it came in on
 * @skb: as the receive handler queued it
 * @pkt: filled in
 *
 * Checks the BTH, that the opcode is one urdma knows, the lengths, and the
 * ICRC.  Return: 0, or -EBADMSG (counted by the caller as a drop) or
 * -EILSEQ for an ICRC mismatch.
 */
int urdma_pkt_parse(struct urdma_dev *udev, struct sk_buff *skb,
		    struct urdma_pkt *pkt)
{
	const struct urdma_rx_cb *cb = urdma_rx_cb(skb);
	const u8 *end = skb->data + skb->len;
	const struct urdma_opcode *op;
	u32 w0, len;
	__le32 icrc;

	pkt->nh = skb->data;
	pkt->ipv6 = cb->ipv6;
	pkt->bth = (const struct urdma_bth *)(skb->data + cb->iplen +
					      sizeof(struct udphdr));
	len = end - (const u8 *)pkt->bth;
	w0 = be32_to_cpu(pkt->bth->w0);
	pkt->opcode = FIELD_GET(URDMA_BTH_OPCODE, w0);
	op = &urdma_opcodes[pkt->opcode];
	pkt->flags = op->flags;
	if (!op->flags || FIELD_GET(URDMA_BTH_TVER, w0) ||
	    len < op->hdr_len + URDMA_ICRC_LEN)
		return -EBADMSG;
	pkt->pad = FIELD_GET(URDMA_BTH_PAD, w0);
	if (len < op->hdr_len + pkt->pad + URDMA_ICRC_LEN)
		return -EBADMSG;
	pkt->paylen = len - op->hdr_len - pkt->pad - URDMA_ICRC_LEN;
	if (pkt->paylen && !(op->flags & URDMA_PF_PAYLOAD))
		return -EBADMSG;
	pkt->payload = (const u8 *)pkt->bth + op->hdr_len;
	pkt->se = w0 & URDMA_BTH_SE;
	pkt->pkey = FIELD_GET(URDMA_BTH_PKEY, w0);
	pkt->qpn = FIELD_GET(URDMA_BTH_QPN, be32_to_cpu(pkt->bth->w1));
	pkt->psn = FIELD_GET(URDMA_BTH_PSN, be32_to_cpu(pkt->bth->w2));
	pkt->ackreq = be32_to_cpu(pkt->bth->w2) & URDMA_BTH_ACKREQ;
	pkt->ce = INET_ECN_is_ce(pkt->ipv6 ?
				 ipv6_get_dsfield((const struct ipv6hdr *)pkt->nh) :
				 ((const struct iphdr *)pkt->nh)->tos);

	memcpy(&icrc, end - URDMA_ICRC_LEN, sizeof(icrc));
	if (icrc != urdma_icrc(pkt->nh, pkt->ipv6, len - URDMA_ICRC_LEN))
		return -EILSEQ;
	return 0;
}

/* The packet's addresses as GIDs (IPv4-mapped for IPv4). */
void urdma_pkt_gids(const struct urdma_pkt *pkt, union ib_gid *sgid,
		    union ib_gid *dgid)
{
	if (pkt->ipv6) {
		const struct ipv6hdr *ip6 = (const struct ipv6hdr *)pkt->nh;

		memcpy(sgid->raw, &ip6->saddr, 16);
		memcpy(dgid->raw, &ip6->daddr, 16);
	} else {
		const struct iphdr *ip = (const struct iphdr *)pkt->nh;

		ipv6_addr_set_v4mapped(ip->saddr, (struct in6_addr *)sgid->raw);
		ipv6_addr_set_v4mapped(ip->daddr, (struct in6_addr *)dgid->raw);
	}
}

/**
 * urdma_pkt_alloc - a packet to fill in
 * @udev: the sending device
 * @opcode: its opcode; the table gives the header length
 * @paylen: payload bytes
 * @tx: filled in: the skb, and where the headers and the payload go
 *
 * The caller fills in the BTH, the extended headers and the payload, then
 * calls urdma_pkt_xmit().  Return: 0 or -ENOMEM.
 */
int urdma_pkt_alloc(struct urdma_dev *udev, u8 opcode, u32 paylen,
		    struct urdma_tx *tx)
{
	unsigned int hdr = urdma_opcodes[opcode].hdr_len;
	unsigned int pad = -paylen & 3;
	unsigned int room = LL_RESERVED_SPACE(udev->ndev) +
			    sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	struct sk_buff *skb;

	/* An opcode the table does not know has no room for its BTH. */
	if (WARN_ON_ONCE(!urdma_opcodes[opcode].flags))
		return -EINVAL;

	skb = alloc_skb(room + hdr + paylen + pad + URDMA_ICRC_LEN,
			GFP_ATOMIC | __GFP_NOWARN);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, room);
	tx->skb = skb;
	tx->bth = skb_put_zero(skb, hdr);
	tx->payload = skb_put(skb, paylen);
	tx->opcode = opcode;
	tx->ect = false;
	skb_put_zero(skb, pad + URDMA_ICRC_LEN);
	tx->bth->w0 = cpu_to_be32(FIELD_PREP(URDMA_BTH_OPCODE, opcode) |
				  FIELD_PREP(URDMA_BTH_PAD, pad) |
				  FIELD_PREP(URDMA_BTH_PKEY,
					     URDMA_DEFAULT_PKEY));
	return 0;
}

static struct dst_entry *urdma_route4(struct net *net, struct net_device *ndev,
				      const struct urdma_av *av)
{
	struct flowi4 fl = {
		.flowi4_oif = ndev->ifindex,
		.flowi4_proto = IPPROTO_UDP,
	};
	struct rtable *rt;

	memcpy(&fl.saddr, &av->sgid.raw[12], 4);
	memcpy(&fl.daddr, &av->dgid.raw[12], 4);
	rt = ip_route_output_key(net, &fl);
	return IS_ERR(rt) ? NULL : &rt->dst;
}

static struct dst_entry *urdma_route6(struct net *net, struct net_device *ndev,
				      const struct urdma_av *av)
{
	struct flowi6 fl = {
		.flowi6_oif = ndev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct dst_entry *dst;

	if (!IS_ENABLED(CONFIG_IPV6) || !ipv6_stub->ipv6_dst_lookup_flow)
		return NULL;
	memcpy(&fl.saddr, av->sgid.raw, 16);
	memcpy(&fl.daddr, av->dgid.raw, 16);
	dst = ipv6_stub->ipv6_dst_lookup_flow(net, NULL, &fl, NULL);
	if (IS_ERR(dst))
		return NULL;
	if (dst->error) {
		dst_release(dst);
		return NULL;
	}
	return dst;
}

/*
 * The IPv6 or IPv4 header at @hdr of a packet on path @av, with @len bytes
 * after it (UDP header on): every field but IPv4's id and checksum.
 */
void urdma_put_ip(void *hdr, const struct urdma_av *av, bool ipv6, u8 tclass,
		  u32 len)
{
	struct ipv6hdr *ip6 = hdr;
	struct iphdr *ip = hdr;

	if (ipv6) {
		ip6_flow_hdr(ip6, tclass, cpu_to_be32(av->flow_label));
		ip6->payload_len = htons(len);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = av->hop_limit;
		memcpy(&ip6->saddr, av->sgid.raw, 16);
		memcpy(&ip6->daddr, av->dgid.raw, 16);
		return;
	}
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = tclass;
	ip->tot_len = htons(sizeof(*ip) + len);
	ip->frag_off = htons(IP_DF);
	ip->ttl = av->hop_limit;
	ip->protocol = IPPROTO_UDP;
	memcpy(&ip->saddr, &av->sgid.raw[12], 4);
	memcpy(&ip->daddr, &av->dgid.raw[12], 4);
}

/*
 * The packet's traffic class: the path's, with ECT(0) for an ECN-capable
 * packet unless the path's chose its own ECN bits; never CE, which only
 * the network sets.
 */
static u8 urdma_tx_tclass(const struct urdma_av *av, const struct urdma_tx *tx)
{
	u8 tclass = av->traffic_class;

	if (INET_ECN_is_ce(tclass))
		tclass &= ~INET_ECN_MASK;
	if (tx->ect && INET_ECN_is_not_ect(tclass))
		tclass |= INET_ECN_ECT_0;
	return tclass;
}

/**
 * urdma_pkt_xmit - add UDP and IP headers and the ICRC, and send
 * @udev: the sending device
 * @av: the path: addresses, traffic class, hop limit
 * @tx: from urdma_pkt_alloc(), filled in; consumed
 * @sport: the UDP source port
 *
 * Return: 0, or -EHOSTUNREACH if there is no route.
 */
int urdma_pkt_xmit(struct urdma_dev *udev, const struct urdma_av *av,
		   struct urdma_tx *tx, u16 sport)
{
	struct sk_buff *skb = tx->skb;
	struct net *net = dev_net(udev->ndev);
	bool ipv6 = av->net_type == RDMA_NETWORK_IPV6;
	unsigned int iplen = ipv6 ? sizeof(struct ipv6hdr) :
				    sizeof(struct iphdr);
	unsigned int tlen = skb->len;
	u8 tclass = urdma_tx_tclass(av, tx);
	struct dst_entry *dst;
	struct udphdr *udp;
	void *hdr;
	int ret;

	dst = ipv6 ? urdma_route6(net, udev->ndev, av) :
		     urdma_route4(net, udev->ndev, av);
	if (!dst) {
		kfree_skb(skb);
		return -EHOSTUNREACH;
	}
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
	skb->priority = av->sl;

	udp = skb_push(skb, sizeof(*udp));
	skb_reset_transport_header(skb);
	udp->source = htons(sport);
	udp->dest = htons(URDMA_UDP_PORT);
	udp->len = htons(skb->len);
	udp->check = 0;

	hdr = skb_push(skb, iplen);
	skb_reset_network_header(skb);
	urdma_put_ip(hdr, av, ipv6, tclass, skb->len - iplen);
	if (ipv6) {
		skb->protocol = htons(ETH_P_IPV6);
		memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	} else {
		__ip_select_ident(net, hdr, 1);
		skb->protocol = htons(ETH_P_IP);
		memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	}
	skb->ip_summed = CHECKSUM_NONE;

	/* The ICRC covers the final IP and UDP headers. */
	{
		__le32 icrc = urdma_icrc(skb->data, ipv6,
					 tlen - URDMA_ICRC_LEN);

		memcpy(skb_tail_pointer(skb) - URDMA_ICRC_LEN, &icrc,
		       sizeof(icrc));
	}

	ret = ipv6 ? ip6_local_out(net, NULL, skb) :
		     ip_local_out(net, NULL, skb);
	return net_xmit_eval(ret) ? -ENOBUFS : 0;
}

/* The UDP source port of a flow (IBTA A17.5.3: from the flow label). */
u16 urdma_udp_sport(u32 flow_label, u32 lqpn, u32 rqpn)
{
	if (!flow_label)
		flow_label = rdma_calc_flow_label(lqpn, rqpn);
	return rdma_flow_label_to_udp_sport(flow_label);
}
