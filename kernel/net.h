/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RoCEv2 packets in and out of the bound netdev (net.c).
 */
#ifndef URDMA_NET_H
#define URDMA_NET_H

#include <linux/skbuff.h>
#include <rdma/ib_verbs.h>

#include "roce.h"

struct urdma_dev;
struct urdma_av;

/* What the receive handler leaves in skb->cb for the engine. */
struct urdma_rx_cb {
	u16 iplen;
	bool ipv6;
};

/**
 * struct urdma_pkt - a received packet, as urdma_pkt_parse() found it
 * @nh: the IP header
 * @bth: the BTH; the extended headers follow (urdma_hdr_off())
 * @payload: the payload, @paylen bytes (without pad and ICRC)
 */
struct urdma_pkt {
	const u8 *nh;
	const struct urdma_bth *bth;
	const u8 *payload;
	u32 paylen;
	u32 flags;
	u32 qpn;
	u32 psn;
	u16 pkey;
	u8 opcode;
	u8 pad;
	bool ipv6;
	bool se;
	bool ackreq;
	bool ce;	/* the IP header's ECN field says Congestion Experienced */
};

/* A packet being built: the caller fills in @bth on and @payload. */
struct urdma_tx {
	struct sk_buff *skb;
	struct urdma_bth *bth;
	void *payload;
	u8 opcode;	/* the BTH's: where its extended headers lie */
	bool ect;	/* ECN-capable transport: send as ECT(0) */
};

static inline void *urdma_pkt_hdr(const struct urdma_pkt *pkt,
				  enum urdma_hdr_bit bit)
{
	return (u8 *)pkt->bth + urdma_hdr_off(pkt->opcode, bit);
}

static inline void *urdma_tx_hdr(const struct urdma_tx *tx,
				 enum urdma_hdr_bit bit)
{
	return (u8 *)tx->bth + urdma_hdr_off(tx->opcode, bit);
}

void urdma_net_start(struct urdma_dev *udev);
void urdma_net_stop(struct urdma_dev *udev);
int urdma_pkt_parse(struct urdma_dev *udev, struct sk_buff *skb,
		    struct urdma_pkt *pkt);
void urdma_pkt_gids(const struct urdma_pkt *pkt, union ib_gid *sgid,
		    union ib_gid *dgid);
int urdma_pkt_alloc(struct urdma_dev *udev, u8 opcode, u32 paylen,
		    struct urdma_tx *tx);
void urdma_put_ip(void *hdr, const struct urdma_av *av, bool ipv6, u8 tclass,
		  u32 len);
int urdma_pkt_xmit(struct urdma_dev *udev, const struct urdma_av *av,
		   struct urdma_tx *tx, u16 sport);
u16 urdma_udp_sport(u32 flow_label, u32 lqpn, u32 rqpn);

/* roce.c */
__le32 urdma_icrc(const void *nh, bool ipv6, unsigned int len);

#endif /* URDMA_NET_H */
