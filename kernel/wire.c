// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The wire path: what the engine sends and receives as RoCEv2 packets when
 * the other end is not a urdma device of this host.
 *
 * UD and GSI.  A UD send is one packet (SEND_ONLY, or SEND_ONLY_WITH_IMM,
 * with a DETH) and completes once the IP layer has it: UD is unreliable,
 * and so is its completion.  A received UD packet is checked (P_Key,
 * Q_Key; QP1 takes only the GSI Q_Key) and consumes a receive WQE of the
 * destination QP; the receive buffer starts with the 40-byte GRH made from
 * the packet's IP header, as IBTA A17.4.5.1 says (IPv4: 20 bytes of zeros,
 * then the IPv4 header).
 *
 * The receive demux.  urdma_rx() takes every packet the engine received:
 * a UD packet to its QP (or, to QPN 0xffffff, to a multicast group's QPs:
 * mcast.c), an RC or UC packet, once it is known to come from the QP's
 * peer, to the completer (a response: wire_comp.c) or the responder (a
 * request: wire_resp.c).
 *
 * ECN (RoCEv2 congestion management, IBTA A17.9).  RC packets leave as
 * ECT(0) (module parameter ecn).  A router or qdisc under congestion marks
 * them CE instead of dropping them; the receiving QP then sends its peer a
 * CNP, at most one per URDMA_CNP_GAP_NS, and the peer's requester cuts its
 * congestion window as for a loss, once per episode (wire_cc.c), but
 * without a packet to resend.  A CNP counts only from the QP's peer, like
 * any packet of the connection; it carries no PSN, so an attacker who can
 * forge the peer's address can slow a QP down, as with a forged sequence
 * NAK (docs/security.md).
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>

#include "exec.h"
#include "wire_rc.h"

static bool ecn = true;
module_param(ecn, bool, 0644);
MODULE_PARM_DESC(ecn, "RC packets are ECN-capable, and a CE mark draws a CNP (default: on)");

bool urdma_wire_ecn(void)
{
	return READ_ONCE(ecn);
}

/* A P_Key matches the default partition, full or limited member. */
static bool urdma_pkey_ok(u16 pkey)
{
	return (pkey & 0x7fff) == (URDMA_DEFAULT_PKEY & 0x7fff);
}

/**
 * urdma_ud_xmit - send the UD WQE in the scratch area as one packet
 * @eng: the engine
 * @qp: a UD or GSI QP
 * @wqe: the WQE
 * @av: its AH's address vector
 * @nsrc: its gathered data, in the scratch area's src list
 * @len: its length (at most the path MTU; checked by the caller)
 *
 * Return: the completion status.  A packet the IP layer will not take is
 * lost, which UD allows; it is counted.
 */
u8 urdma_ud_xmit(struct urdma_engine *eng, struct urdma_qp *qp,
		 const struct urdma_send_wqe *wqe, const struct urdma_av *av,
		 int nsrc, u32 len)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	bool imm = wqe->opcode == URDMA_WQE_SEND_IMM;
	u8 opcode = URDMA_TR_UD | (imm ? URDMA_OP_SEND_ONLY_IMM :
					 URDMA_OP_SEND_ONLY);
	u32 dqpn = wqe->ud.remote_qpn & URDMA_BTH_QPN;
	u32 qkey = urdma_wqe_qkey(qp, wqe);
	struct urdma_deth *deth;
	struct urdma_tx tx;
	u32 psn;

	if (urdma_pkt_alloc(udev, opcode, len, &tx)) {
		urdma_count(eng, URDMA_CNT_TX_ERRS);
		return IB_WC_SUCCESS;
	}
	psn = qp->req_psn;
	qp->req_psn = urdma_psn_add(psn, 1);

	if (wqe->flags & URDMA_WQE_SOLICITED)
		tx.bth->w0 |= cpu_to_be32(URDMA_BTH_SE);
	tx.bth->w1 = cpu_to_be32(FIELD_PREP(URDMA_BTH_QPN, dqpn));
	tx.bth->w2 = cpu_to_be32(FIELD_PREP(URDMA_BTH_PSN, psn));
	deth = urdma_tx_hdr(&tx, URDMA_H_DETH);
	deth->qkey = cpu_to_be32(qkey);
	deth->sqp = cpu_to_be32(FIELD_PREP(URDMA_DETH_SQP, qp->ibqp.qp_num));
	if (imm)
		memcpy(urdma_tx_hdr(&tx, URDMA_H_IMM), &wqe->ex, 4);
	if (len && urdma_tx_copy(&tx, eng->scratch->src, nsrc, len)) {
		urdma_count(eng, URDMA_CNT_TX_ERRS);
		return IB_WC_LOC_QP_OP_ERR;
	}

	if (urdma_pkt_xmit(udev, av, &tx,
			   urdma_udp_sport(av->flow_label, qp->ibqp.qp_num,
					   dqpn)))
		urdma_count(eng, URDMA_CNT_TX_ERRS);
	else
		urdma_count(eng, URDMA_CNT_TX_PKTS);
	return IB_WC_SUCCESS;
}

/* The GRH a UD receive starts with, from the packet's IP header. */
static void urdma_pkt_grh(const struct urdma_pkt *pkt, u8 *grh)
{
	if (pkt->ipv6) {
		memcpy(grh, pkt->nh, sizeof(struct ipv6hdr));
	} else {
		memset(grh, 0, URDMA_GRH_LEN - sizeof(struct iphdr));
		memcpy(grh + URDMA_GRH_LEN - sizeof(struct iphdr), pkt->nh,
		       sizeof(struct iphdr));
	}
}

/*
 * The message a UD packet carries, for urdma_recv_msg(); the GRH goes to
 * the scratch area.  Return: the packet's Q_Key.
 */
static u32 urdma_ud_pkt_msg(struct urdma_engine *eng,
			    const struct urdma_pkt *pkt, struct urdma_sg *src,
			    struct urdma_msg *m)
{
	const struct urdma_deth *deth = urdma_pkt_hdr(pkt, URDMA_H_DETH);

	memset(src, 0, sizeof(*src));
	src->kva = (void *)pkt->payload;
	src->len = pkt->paylen;
	memset(m, 0, sizeof(*m));
	m->src = src;
	m->nsrc = 1;
	m->len = pkt->paylen;
	m->grh = eng->scratch->grh;
	m->src_qp = FIELD_GET(URDMA_DETH_SQP, be32_to_cpu(deth->sqp));
	m->cqe_opcode = URDMA_CQE_RECV;
	m->net_type = pkt->ipv6 ? RDMA_NETWORK_IPV6 : RDMA_NETWORK_IPV4;
	m->solicited = pkt->se;
	if (pkt->flags & URDMA_PF_IMM) {
		memcpy(&m->ex, urdma_pkt_hdr(pkt, URDMA_H_IMM), 4);
		m->cqe_flags = URDMA_CQE_IMM;
	}
	urdma_pkt_grh(pkt, eng->scratch->grh);
	return be32_to_cpu(deth->qkey);
}

/* A UD message is at most one packet of the path MTU (IBTA 9.8.3). */
static bool urdma_ud_len_ok(struct urdma_dev *udev, u32 len)
{
	return len <= ib_mtu_enum_to_int(urdma_mtu_from_netdev(udev->ndev->mtu));
}

/* A UD or GSI packet.  Return: false if it was dropped. */
static bool urdma_rx_ud(struct urdma_engine *eng, struct urdma_qp *qp,
			const struct urdma_pkt *pkt)
{
	struct urdma_sg src;
	struct urdma_msg m;
	u32 qkey;
	int ret;

	if (!urdma_is_ud(qp) || !urdma_ud_len_ok(eng->udev, pkt->paylen))
		return false;
	qkey = urdma_ud_pkt_msg(eng, pkt, &src, &m);
	if (!urdma_ud_qkey_ok(qp, qkey))
		return false;
	/*
	 * No receive WQE, or one too small: UD drops the message (IBTA
	 * 9.8.3); the QP carries on.
	 */
	ret = urdma_recv_msg(eng, qp, to_udev(qp->ibqp.device), &m);
	/* (-EBUSY: its ODP receive buffer is being faulted in.) */
	return ret != -EMSGSIZE && ret != -EBUSY;
}

/* A UD packet to a multicast group: every attached QP of the device. */
static bool urdma_rx_mcast(struct urdma_engine *eng,
			   const struct urdma_pkt *pkt)
{
	union ib_gid sgid, dgid;
	struct urdma_sg src;
	struct urdma_msg m;
	u32 qkey;

	urdma_pkt_gids(pkt, &sgid, &dgid);
	if (!urdma_gid_is_mcast(&dgid) ||
	    !urdma_ud_len_ok(eng->udev, pkt->paylen))
		return false;
	qkey = urdma_ud_pkt_msg(eng, pkt, &src, &m);
	return urdma_mcast_deliver(eng, eng->udev, &dgid, NULL, &m, qkey) > 0;
}

/*
 * Whether @pkt comes from the address @qp is connected to and is addressed
 * to the QP's own (IPv4 addresses as IPv4-mapped GIDs, as in the AV).
 */
static bool urdma_pkt_from_peer(const struct urdma_qp *qp,
				const struct urdma_pkt *pkt)
{
	union ib_gid sgid, dgid;

	urdma_pkt_gids(pkt, &sgid, &dgid);
	return !memcmp(&sgid, &qp->av.dgid, sizeof(sgid)) &&
	       !memcmp(&dgid, &qp->av.sgid, sizeof(dgid));
}

/* Whether @qp is on the wire and @pkt comes from its peer. */
static bool urdma_rx_peer_ok(const struct urdma_qp *qp,
			     const struct urdma_pkt *pkt)
{
	return READ_ONCE(qp->use_wire) && urdma_pkt_from_peer(qp, pkt);
}

/*
 * Whether @qp takes a packet of its connection's transport in the role
 * @pkt has: an XRC initiator only responses, an XRC target only requests.
 */
static bool urdma_rx_role_ok(const struct urdma_qp *qp,
			     const struct urdma_pkt *pkt)
{
	if ((pkt->opcode & URDMA_TR_MASK) != urdma_qp_tr(qp))
		return false;
	switch (qp->ibqp.qp_type) {
	case IB_QPT_XRC_INI:
		return pkt->flags & URDMA_PF_RESP;
	case IB_QPT_XRC_TGT:
		return !(pkt->flags & URDMA_PF_RESP);
	default:
		return true;
	}
}

/*
 * A packet of @qp's peer came marked CE: tell the peer, unless a CNP went
 * out less than URDMA_CNP_GAP_NS ago.
 */
static void urdma_rx_ce(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_tx tx;
	ktime_t now;

	urdma_count(eng, URDMA_CNT_ECN_MARKED);
	if (!urdma_wire_ecn())
		return;
	now = ktime_get();
	if (w->cnp_at && ktime_before(now, ktime_add_ns(w->cnp_at,
							URDMA_CNP_GAP_NS)))
		return;
	if (urdma_pkt_alloc(eng->udev, URDMA_CNP_OPCODE, URDMA_CNP_PAYLOAD,
			    &tx)) {
		urdma_count(eng, URDMA_CNT_TX_ERRS);
		return;
	}
	memset(tx.payload, 0, URDMA_CNP_PAYLOAD);
	tx.bth->w1 = cpu_to_be32(URDMA_BTH_BECN |
				 FIELD_PREP(URDMA_BTH_QPN,
					    qp->attr.dest_qp_num));
	tx.bth->w2 = 0;
	w->cnp_at = now;
	if (!urdma_wire_send(eng, qp, &tx))
		urdma_count(eng, URDMA_CNT_CNPS_SENT);
}

/*
 * A CNP for @qp: from its peer, the length IBTA gives it, to an RC QP.
 * Return: false if it does not belong to this QP.
 */
static bool urdma_rx_cnp(struct urdma_engine *eng, struct urdma_qp *qp,
			 const struct urdma_pkt *pkt)
{
	if (pkt->paylen != URDMA_CNP_PAYLOAD || !urdma_is_reliable(qp) ||
	    !urdma_rx_peer_ok(qp, pkt))
		return false;
	urdma_count(eng, URDMA_CNT_CNPS_RCVD);
	urdma_req_cnp(eng, qp);
	return true;
}

/**
 * urdma_rx_conn - an RC, UC or XRC packet for @qp
 * @eng: the QP's engine, in a pass
 * @qp: the destination QP, which receives (RTR or later)
 * @pkt: the packet
 *
 * Return: false if it does not belong to this QP: another transport, or
 * another source or destination address than the QP's path (dropped and
 * counted).
 */
static bool urdma_rx_conn(struct urdma_engine *eng, struct urdma_qp *qp,
			  const struct urdma_pkt *pkt)
{
	if ((pkt->flags & URDMA_PF_DETH) || !urdma_rx_role_ok(qp, pkt) ||
	    !urdma_rx_peer_ok(qp, pkt))
		return false;
	if (pkt->ce && urdma_is_reliable(qp))
		urdma_rx_ce(eng, qp);
	if (pkt->flags & URDMA_PF_RESP)
		urdma_req_rx(eng, qp, pkt);
	else
		urdma_resp_rx(eng, qp, pkt);
	return true;
}

/**
 * urdma_rx - handle a received frame
 * @eng: the engine that serves its destination QP; inside a pass
 * @skb: as net.c's receive handler queued it; consumed
 */
void urdma_rx(struct urdma_engine *eng, struct sk_buff *skb)
{
	struct urdma_dev *udev = eng->udev;
	struct urdma_pkt pkt;
	struct urdma_qp *qp;
	bool ok = false;
	int ret;

	ret = urdma_pkt_parse(udev, skb, &pkt);
	if (ret) {
		urdma_count(eng, ret == -EILSEQ ? URDMA_CNT_ICRC_ERRS :
						  URDMA_CNT_RX_DROPS);
		kfree_skb(skb);
		return;
	}
	/* Lookups in a pass are safe: removal waits for it to end. */
	qp = xa_load(&udev->qps, pkt.qpn);
	if (!urdma_pkey_ok(pkt.pkey)) {
		ok = false;
	} else if (pkt.qpn == URDMA_BTH_QPN &&
		   (pkt.opcode & URDMA_TR_MASK) == URDMA_TR_UD) {
		ok = urdma_rx_mcast(eng, &pkt);
	} else if (qp &&
		   urdma_state_receives(READ_ONCE(qp->attr.qp_state))) {
		switch (pkt.opcode & URDMA_TR_MASK) {
		case URDMA_TR_UD:
			ok = urdma_rx_ud(eng, qp, &pkt);
			break;
		case URDMA_TR_RC:
		case URDMA_TR_UC:
		case URDMA_TR_XRC:
			ok = urdma_rx_conn(eng, qp, &pkt);
			break;
		case URDMA_TR_CNP:
			ok = urdma_rx_cnp(eng, qp, &pkt);
			break;
		default:
			break;
		}
	}
	if (ok) {
		urdma_count(eng, URDMA_CNT_RX_PKTS);
		consume_skb(skb);
	} else {
		urdma_count(eng, URDMA_CNT_RX_DROPS);
		kfree_skb(skb);
	}
}
