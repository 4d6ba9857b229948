/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RoCEv2 wire formats (IBTA Vol. 1 ch. 9, Annex A17): the base and extended
 * transport headers, the opcode table, and the ICRC.
 *
 * Header fields are GENMASK masks over big-endian words, used with
 * FIELD_GET/FIELD_PREP; the layout of each header is its struct.  Which
 * headers a packet carries, and in what order, is data: urdma_opcodes[].
 */
#ifndef URDMA_ROCE_H
#define URDMA_ROCE_H

#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/types.h>

#define URDMA_UDP_PORT		4791
#define URDMA_ICRC_LEN		4
#define URDMA_PSN_MASK		GENMASK(23, 0)

/* Transports (the opcode's top 3 bits) and operations (its low 5). */
enum {
	URDMA_TR_RC = 0x00,
	URDMA_TR_UC = 0x20,
	URDMA_TR_UD = 0x60,
	URDMA_TR_CNP = 0x80,
	URDMA_TR_XRC = 0xa0,
};

#define URDMA_TR_MASK		0xe0
#define URDMA_OP_MASK		0x1f

/*
 * The congestion notification packet (IBTA A17.9.3): BTH (opcode 0x81,
 * BECN set, the flow's destination QP, PSN 0), 16 reserved bytes, ICRC.
 */
#define URDMA_CNP_OPCODE	(URDMA_TR_CNP | 0x01)
#define URDMA_CNP_PAYLOAD	16

enum urdma_op {
	URDMA_OP_SEND_FIRST		= 0x00,
	URDMA_OP_SEND_MIDDLE		= 0x01,
	URDMA_OP_SEND_LAST		= 0x02,
	URDMA_OP_SEND_LAST_IMM		= 0x03,
	URDMA_OP_SEND_ONLY		= 0x04,
	URDMA_OP_SEND_ONLY_IMM		= 0x05,
	URDMA_OP_WRITE_FIRST		= 0x06,
	URDMA_OP_WRITE_MIDDLE		= 0x07,
	URDMA_OP_WRITE_LAST		= 0x08,
	URDMA_OP_WRITE_LAST_IMM		= 0x09,
	URDMA_OP_WRITE_ONLY		= 0x0a,
	URDMA_OP_WRITE_ONLY_IMM		= 0x0b,
	URDMA_OP_READ_REQ		= 0x0c,
	URDMA_OP_READ_RESP_FIRST	= 0x0d,
	URDMA_OP_READ_RESP_MIDDLE	= 0x0e,
	URDMA_OP_READ_RESP_LAST		= 0x0f,
	URDMA_OP_READ_RESP_ONLY		= 0x10,
	URDMA_OP_ACK			= 0x11,
	URDMA_OP_ATOMIC_ACK		= 0x12,
	URDMA_OP_CMP_SWP		= 0x13,
	URDMA_OP_FETCH_ADD		= 0x14,
	URDMA_OP_SEND_LAST_INV		= 0x16,
	URDMA_OP_SEND_ONLY_INV		= 0x17,
	URDMA_OP_FLUSH			= 0x1c,
	URDMA_OP_ATOMIC_WRITE		= 0x1d,
};

/* Base transport header, 12 bytes. */
struct urdma_bth {
	__be32 w0;	/* opcode, SE, M, pad count, TVer, P_Key */
	__be32 w1;	/* FECN, BECN, reserved, destination QP */
	__be32 w2;	/* AckReq, reserved, PSN */
} __packed;

#define URDMA_BTH_OPCODE	GENMASK(31, 24)
#define URDMA_BTH_SE		BIT(23)
#define URDMA_BTH_MIG		BIT(22)
#define URDMA_BTH_PAD		GENMASK(21, 20)
#define URDMA_BTH_TVER		GENMASK(19, 16)
#define URDMA_BTH_PKEY		GENMASK(15, 0)
#define URDMA_BTH_RESV8A	GENMASK(31, 24)	/* in w1; ICRC-masked */
#define URDMA_BTH_FECN		BIT(31)		/* ... its top bits */
#define URDMA_BTH_BECN		BIT(30)
#define URDMA_BTH_QPN		GENMASK(23, 0)
#define URDMA_BTH_ACKREQ	BIT(31)
#define URDMA_BTH_PSN		GENMASK(23, 0)

/*
 * XRC extended transport header, 4 bytes: the XRC SRQ a request is for.
 * Every XRC request carries one, right after the BTH; responses do not.
 */
struct urdma_xrceth {
	__be32 srqn;	/* reserved, XRC SRQ number */
} __packed;

#define URDMA_XRCETH_SRQN	GENMASK(23, 0)

/* Datagram extended transport header, 8 bytes. */
struct urdma_deth {
	__be32 qkey;
	__be32 sqp;	/* reserved, source QP */
} __packed;

#define URDMA_DETH_SQP		GENMASK(23, 0)

/* RDMA extended transport header, 16 bytes. */
struct urdma_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

/* Atomic extended transport header, 28 bytes. */
struct urdma_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 cmp;
} __packed;

/* ACK extended transport header, 4 bytes. */
struct urdma_aeth {
	__be32 w;	/* syndrome, MSN */
} __packed;

#define URDMA_AETH_SYN		GENMASK(31, 24)
#define URDMA_AETH_MSN		GENMASK(23, 0)
/* Syndrome: bits 6:5 say what it is, bits 4:0 qualify it. */
#define URDMA_SYN_TYPE		GENMASK(6, 5)
#define URDMA_SYN_VAL		GENMASK(4, 0)
enum {
	URDMA_SYN_ACK = 0,	/* value: credit count */
	URDMA_SYN_RNR = 1,	/* value: the RNR timer */
	URDMA_SYN_NAK = 3,	/* value: one of the NAK codes below */
};

enum {
	URDMA_NAK_PSN_SEQ	= 0,
	URDMA_NAK_INV_REQ	= 1,
	URDMA_NAK_REM_ACCESS	= 2,
	URDMA_NAK_REM_OP	= 3,
	URDMA_NAK_INV_RD_REQ	= 4,
};

/* The credit field of an ACK that does not count credits. */
#define URDMA_CREDITS_INVALID	0x1f

/* Atomic ACK extended transport header, 8 bytes. */
struct urdma_atmack {
	__be64 orig;
} __packed;

/* Flush extended transport header, 4 bytes. */
struct urdma_feth {
	__be32 w;	/* reserved, selectivity level, placement type */
} __packed;

#define URDMA_FETH_SEL		GENMASK(5, 4)
#define URDMA_FETH_PLT		GENMASK(3, 0)

/*
 * What a packet carries.  The extended headers follow the BTH in the order
 * of their bits here, which is the order IBTA puts them in.
 */
enum urdma_hdr_bit {
	URDMA_H_XRCETH,
	URDMA_H_DETH,
	URDMA_H_FETH,
	URDMA_H_RETH,
	URDMA_H_ATMETH,
	URDMA_H_AETH,
	URDMA_H_ATMACK,
	URDMA_H_IMM,
	URDMA_H_IETH,
	URDMA_H_NUM,
};

enum urdma_pkt_flag {
	URDMA_PF_XRCETH	= BIT(URDMA_H_XRCETH),
	URDMA_PF_DETH	= BIT(URDMA_H_DETH),
	URDMA_PF_FETH	= BIT(URDMA_H_FETH),
	URDMA_PF_RETH	= BIT(URDMA_H_RETH),
	URDMA_PF_ATMETH	= BIT(URDMA_H_ATMETH),
	URDMA_PF_AETH	= BIT(URDMA_H_AETH),
	URDMA_PF_ATMACK	= BIT(URDMA_H_ATMACK),
	URDMA_PF_IMM	= BIT(URDMA_H_IMM),
	URDMA_PF_IETH	= BIT(URDMA_H_IETH),
	URDMA_PF_PAYLOAD = BIT(9),	/* may carry data */
	URDMA_PF_REQ	= BIT(10),	/* requester to responder */
	URDMA_PF_RESP	= BIT(11),	/* responder to requester */
	URDMA_PF_FIRST	= BIT(12),
	URDMA_PF_MIDDLE	= BIT(13),
	URDMA_PF_LAST	= BIT(14),	/* ONLY is FIRST | LAST */
	URDMA_PF_SEND	= BIT(15),	/* consumes a receive WQE */
	URDMA_PF_WRITE	= BIT(16),
	URDMA_PF_READ	= BIT(17),
	URDMA_PF_ATOMIC	= BIT(18),
	URDMA_PF_FLUSH	= BIT(19),
	URDMA_PF_CNP	= BIT(20),	/* neither way: congestion notice */
};

/* The header bits come first. */
static_assert(BIT(URDMA_H_NUM) <= URDMA_PF_PAYLOAD);

/**
 * struct urdma_opcode - what the table knows of an opcode
 * @name: for logs
 * @flags: URDMA_PF_*; zero for opcodes urdma does not know
 * @hdr_len: BTH plus extended headers
 */
struct urdma_opcode {
	const char *name;
	u32 flags;
	u8 hdr_len;
};

extern const struct urdma_opcode urdma_opcodes[256];
extern const u8 urdma_hdr_lens[URDMA_H_NUM];

/* Offset of extended header @bit in a packet of @opcode (BTH at 0). */
static inline unsigned int urdma_hdr_off(u8 opcode, enum urdma_hdr_bit bit)
{
	u32 flags = urdma_opcodes[opcode].flags;
	unsigned int off = sizeof(struct urdma_bth);
	unsigned int i;

	for (i = 0; i < bit; i++)
		if (flags & BIT(i))
			off += urdma_hdr_lens[i];
	return off;
}

/* PSN arithmetic modulo 2^24: a - b as a signed distance. */
static inline s32 urdma_psn_diff(u32 a, u32 b)
{
	return (s32)((a - b) << 8) >> 8;
}

static inline u32 urdma_psn_add(u32 psn, u32 n)
{
	return (psn + n) & URDMA_PSN_MASK;
}

#endif /* URDMA_ROCE_H */
