// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RoCEv2 opcode table and ICRC (IBTA Vol. 1 ch. 9, Annex A17.3.3).
 */
#include <kunit/visibility.h>
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <net/checksum.h>

#include "roce.h"
#include "net.h"

const u8 urdma_hdr_lens[URDMA_H_NUM] = {
	[URDMA_H_XRCETH] = sizeof(struct urdma_xrceth),
	[URDMA_H_DETH]	 = sizeof(struct urdma_deth),
	[URDMA_H_FETH]	 = sizeof(struct urdma_feth),
	[URDMA_H_RETH]	 = sizeof(struct urdma_reth),
	[URDMA_H_ATMETH] = sizeof(struct urdma_atmeth),
	[URDMA_H_AETH]	 = sizeof(struct urdma_aeth),
	[URDMA_H_ATMACK] = sizeof(struct urdma_atmack),
	[URDMA_H_IMM]	 = 4,
	[URDMA_H_IETH]	 = 4,
};
EXPORT_SYMBOL_IF_KUNIT(urdma_hdr_lens);

#define BTH_LEN		12
#define LEN_XRCETH	4
#define LEN_DETH	8
#define LEN_FETH	4
#define LEN_RETH	16
#define LEN_ATMETH	28
#define LEN_AETH	4
#define LEN_ATMACK	8
#define LEN_IMM		4

/* Flags of each operation, before the transport says which apply. */
#define SEND_F		(URDMA_PF_REQ | URDMA_PF_SEND | URDMA_PF_PAYLOAD)
#define WRITE_F		(URDMA_PF_REQ | URDMA_PF_WRITE | URDMA_PF_PAYLOAD)
#define RRESP_F		(URDMA_PF_RESP | URDMA_PF_READ | URDMA_PF_PAYLOAD)
#define ONLY_F		(URDMA_PF_FIRST | URDMA_PF_LAST)

#define OP(tr, op, f, len) \
	[URDMA_TR_##tr | URDMA_OP_##op] = { #tr "_" #op, (f), BTH_LEN + (len) }
/* XRC: RC's operations; its requests carry an XRCETH after the BTH. */
#define XRC_REQ(op, f, len) OP(XRC, op, (f) | URDMA_PF_XRCETH, LEN_XRCETH + (len))

const struct urdma_opcode urdma_opcodes[256] = {
	OP(RC, SEND_FIRST, SEND_F | URDMA_PF_FIRST, 0),
	OP(RC, SEND_MIDDLE, SEND_F | URDMA_PF_MIDDLE, 0),
	OP(RC, SEND_LAST, SEND_F | URDMA_PF_LAST, 0),
	OP(RC, SEND_LAST_IMM, SEND_F | URDMA_PF_LAST | URDMA_PF_IMM, LEN_IMM),
	OP(RC, SEND_ONLY, SEND_F | ONLY_F, 0),
	OP(RC, SEND_ONLY_IMM, SEND_F | ONLY_F | URDMA_PF_IMM, LEN_IMM),
	OP(RC, WRITE_FIRST, WRITE_F | URDMA_PF_FIRST | URDMA_PF_RETH, LEN_RETH),
	OP(RC, WRITE_MIDDLE, WRITE_F | URDMA_PF_MIDDLE, 0),
	OP(RC, WRITE_LAST, WRITE_F | URDMA_PF_LAST, 0),
	OP(RC, WRITE_LAST_IMM, WRITE_F | URDMA_PF_LAST | URDMA_PF_IMM |
	   URDMA_PF_SEND, LEN_IMM),
	OP(RC, WRITE_ONLY, WRITE_F | ONLY_F | URDMA_PF_RETH, LEN_RETH),
	OP(RC, WRITE_ONLY_IMM, WRITE_F | ONLY_F | URDMA_PF_RETH |
	   URDMA_PF_IMM | URDMA_PF_SEND, LEN_RETH + LEN_IMM),
	OP(RC, READ_REQ, URDMA_PF_REQ | URDMA_PF_READ | ONLY_F |
	   URDMA_PF_RETH, LEN_RETH),
	OP(RC, READ_RESP_FIRST, RRESP_F | URDMA_PF_FIRST | URDMA_PF_AETH,
	   LEN_AETH),
	OP(RC, READ_RESP_MIDDLE, RRESP_F | URDMA_PF_MIDDLE, 0),
	OP(RC, READ_RESP_LAST, RRESP_F | URDMA_PF_LAST | URDMA_PF_AETH,
	   LEN_AETH),
	OP(RC, READ_RESP_ONLY, RRESP_F | ONLY_F | URDMA_PF_AETH, LEN_AETH),
	OP(RC, ACK, URDMA_PF_RESP | ONLY_F | URDMA_PF_AETH, LEN_AETH),
	OP(RC, ATOMIC_ACK, URDMA_PF_RESP | URDMA_PF_ATOMIC | ONLY_F |
	   URDMA_PF_AETH | URDMA_PF_ATMACK, LEN_AETH + LEN_ATMACK),
	OP(RC, CMP_SWP, URDMA_PF_REQ | URDMA_PF_ATOMIC | ONLY_F |
	   URDMA_PF_ATMETH, LEN_ATMETH),
	OP(RC, FETCH_ADD, URDMA_PF_REQ | URDMA_PF_ATOMIC | ONLY_F |
	   URDMA_PF_ATMETH, LEN_ATMETH),
	OP(RC, SEND_LAST_INV, SEND_F | URDMA_PF_LAST | URDMA_PF_IETH,
	   LEN_IMM),
	OP(RC, SEND_ONLY_INV, SEND_F | ONLY_F | URDMA_PF_IETH, LEN_IMM),
	OP(RC, FLUSH, URDMA_PF_REQ | URDMA_PF_FLUSH | ONLY_F |
	   URDMA_PF_FETH | URDMA_PF_RETH, LEN_FETH + LEN_RETH),
	OP(RC, ATOMIC_WRITE, URDMA_PF_REQ | URDMA_PF_WRITE | ONLY_F |
	   URDMA_PF_RETH | URDMA_PF_PAYLOAD, LEN_RETH),
	/* UC: sends and writes only. */
	OP(UC, SEND_FIRST, SEND_F | URDMA_PF_FIRST, 0),
	OP(UC, SEND_MIDDLE, SEND_F | URDMA_PF_MIDDLE, 0),
	OP(UC, SEND_LAST, SEND_F | URDMA_PF_LAST, 0),
	OP(UC, SEND_LAST_IMM, SEND_F | URDMA_PF_LAST | URDMA_PF_IMM, LEN_IMM),
	OP(UC, SEND_ONLY, SEND_F | ONLY_F, 0),
	OP(UC, SEND_ONLY_IMM, SEND_F | ONLY_F | URDMA_PF_IMM, LEN_IMM),
	OP(UC, WRITE_FIRST, WRITE_F | URDMA_PF_FIRST | URDMA_PF_RETH, LEN_RETH),
	OP(UC, WRITE_MIDDLE, WRITE_F | URDMA_PF_MIDDLE, 0),
	OP(UC, WRITE_LAST, WRITE_F | URDMA_PF_LAST, 0),
	OP(UC, WRITE_LAST_IMM, WRITE_F | URDMA_PF_LAST | URDMA_PF_IMM |
	   URDMA_PF_SEND, LEN_IMM),
	OP(UC, WRITE_ONLY, WRITE_F | ONLY_F | URDMA_PF_RETH, LEN_RETH),
	OP(UC, WRITE_ONLY_IMM, WRITE_F | ONLY_F | URDMA_PF_RETH |
	   URDMA_PF_IMM | URDMA_PF_SEND, LEN_RETH + LEN_IMM),
	XRC_REQ(SEND_FIRST, SEND_F | URDMA_PF_FIRST, 0),
	XRC_REQ(SEND_MIDDLE, SEND_F | URDMA_PF_MIDDLE, 0),
	XRC_REQ(SEND_LAST, SEND_F | URDMA_PF_LAST, 0),
	XRC_REQ(SEND_LAST_IMM, SEND_F | URDMA_PF_LAST | URDMA_PF_IMM, LEN_IMM),
	XRC_REQ(SEND_ONLY, SEND_F | ONLY_F, 0),
	XRC_REQ(SEND_ONLY_IMM, SEND_F | ONLY_F | URDMA_PF_IMM, LEN_IMM),
	XRC_REQ(WRITE_FIRST, WRITE_F | URDMA_PF_FIRST | URDMA_PF_RETH,
		LEN_RETH),
	XRC_REQ(WRITE_MIDDLE, WRITE_F | URDMA_PF_MIDDLE, 0),
	XRC_REQ(WRITE_LAST, WRITE_F | URDMA_PF_LAST, 0),
	XRC_REQ(WRITE_LAST_IMM, WRITE_F | URDMA_PF_LAST | URDMA_PF_IMM |
		URDMA_PF_SEND, LEN_IMM),
	XRC_REQ(WRITE_ONLY, WRITE_F | ONLY_F | URDMA_PF_RETH, LEN_RETH),
	XRC_REQ(WRITE_ONLY_IMM, WRITE_F | ONLY_F | URDMA_PF_RETH |
		URDMA_PF_IMM | URDMA_PF_SEND, LEN_RETH + LEN_IMM),
	XRC_REQ(READ_REQ, URDMA_PF_REQ | URDMA_PF_READ | ONLY_F |
		URDMA_PF_RETH, LEN_RETH),
	OP(XRC, READ_RESP_FIRST, RRESP_F | URDMA_PF_FIRST | URDMA_PF_AETH,
	   LEN_AETH),
	OP(XRC, READ_RESP_MIDDLE, RRESP_F | URDMA_PF_MIDDLE, 0),
	OP(XRC, READ_RESP_LAST, RRESP_F | URDMA_PF_LAST | URDMA_PF_AETH,
	   LEN_AETH),
	OP(XRC, READ_RESP_ONLY, RRESP_F | ONLY_F | URDMA_PF_AETH, LEN_AETH),
	OP(XRC, ACK, URDMA_PF_RESP | ONLY_F | URDMA_PF_AETH, LEN_AETH),
	OP(XRC, ATOMIC_ACK, URDMA_PF_RESP | URDMA_PF_ATOMIC | ONLY_F |
	   URDMA_PF_AETH | URDMA_PF_ATMACK, LEN_AETH + LEN_ATMACK),
	XRC_REQ(CMP_SWP, URDMA_PF_REQ | URDMA_PF_ATOMIC | ONLY_F |
		URDMA_PF_ATMETH, LEN_ATMETH),
	XRC_REQ(FETCH_ADD, URDMA_PF_REQ | URDMA_PF_ATOMIC | ONLY_F |
		URDMA_PF_ATMETH, LEN_ATMETH),
	XRC_REQ(SEND_LAST_INV, SEND_F | URDMA_PF_LAST | URDMA_PF_IETH,
		LEN_IMM),
	XRC_REQ(SEND_ONLY_INV, SEND_F | ONLY_F | URDMA_PF_IETH, LEN_IMM),
	XRC_REQ(FLUSH, URDMA_PF_REQ | URDMA_PF_FLUSH | ONLY_F |
		URDMA_PF_FETH | URDMA_PF_RETH, LEN_FETH + LEN_RETH),
	XRC_REQ(ATOMIC_WRITE, URDMA_PF_REQ | URDMA_PF_WRITE | ONLY_F |
		URDMA_PF_RETH | URDMA_PF_PAYLOAD, LEN_RETH),
	OP(UD, SEND_ONLY, SEND_F | ONLY_F | URDMA_PF_DETH, LEN_DETH),
	OP(UD, SEND_ONLY_IMM, SEND_F | ONLY_F | URDMA_PF_DETH |
	   URDMA_PF_IMM, LEN_DETH + LEN_IMM),
	[URDMA_CNP_OPCODE] = { "CNP", URDMA_PF_CNP | URDMA_PF_PAYLOAD | ONLY_F,
			       BTH_LEN },
};
EXPORT_SYMBOL_IF_KUNIT(urdma_opcodes);

/*
 * The ICRC covers the packet from the IP header on, with the fields that
 * routers may change masked to ones: IPv4 TOS, TTL and checksum; IPv6
 * traffic class, flow label and hop limit; the UDP checksum; BTH resv8a.
 * The seed stands for 8 bytes of ones in place of the LRH.
 */
#define URDMA_ICRC_SEED		0xdebb20e3

/**
 * urdma_icrc - the ICRC of a RoCEv2 packet
 * @nh: the IP header; a UDP header and then the BTH follow it
 * @ipv6: the IP version
 * @len: bytes from the BTH to the ICRC, not including it
 *
 * Return: the ICRC as it goes on the wire (little-endian, like rxe's).
 */
__le32 urdma_icrc(const void *nh, bool ipv6, unsigned int len)
{
	u8 ps[sizeof(struct ipv6hdr) + sizeof(struct udphdr) + BTH_LEN];
	unsigned int iplen = ipv6 ? sizeof(struct ipv6hdr) :
				    sizeof(struct iphdr);
	struct urdma_bth *bth;
	struct udphdr *udp;
	u32 crc;

	memcpy(ps, nh, iplen + sizeof(*udp) + BTH_LEN);
	if (ipv6) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)ps;

		ip6->priority = 0xf;
		memset(ip6->flow_lbl, 0xff, sizeof(ip6->flow_lbl));
		ip6->hop_limit = 0xff;
	} else {
		struct iphdr *ip = (struct iphdr *)ps;

		ip->tos = 0xff;
		ip->ttl = 0xff;
		ip->check = CSUM_MANGLED_0;
	}
	udp = (struct udphdr *)(ps + iplen);
	udp->check = CSUM_MANGLED_0;
	bth = (struct urdma_bth *)(udp + 1);
	bth->w1 |= cpu_to_be32(URDMA_BTH_RESV8A);

	crc = crc32_le(URDMA_ICRC_SEED, ps, iplen + sizeof(*udp) + BTH_LEN);
	crc = crc32_le(crc, (const u8 *)nh + iplen + sizeof(*udp) + BTH_LEN,
		       len - BTH_LEN);
	return cpu_to_le32(~crc);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_icrc);
