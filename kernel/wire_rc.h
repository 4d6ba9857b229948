/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the RC transport's files share: wire_rc.c (lifetime, packets, the
 * demux and a QP's turn), wire_req.c and wire_req_retx.c (the requester),
 * wire_comp.c (the completer), and wire_resp.c and wire_resp_read.c (the
 * responder).  Nothing else includes it.
 */
#ifndef URDMA_WIRE_RC_H
#define URDMA_WIRE_RC_H

#include "exec.h"

/* Packets a QP may send per turn. */
#define URDMA_WIRE_BUDGET	32
#define URDMA_ACKREQ_EVERY	16

/* The transport of a QP's packets: the opcodes' top bits. */
static inline u8 urdma_qp_tr(const struct urdma_qp *qp)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		return URDMA_TR_RC;
	case IB_QPT_UC:
		return URDMA_TR_UC;
	case IB_QPT_XRC_INI:
	case IB_QPT_XRC_TGT:
		return URDMA_TR_XRC;
	default:
		return URDMA_TR_UD;	/* UD and GSI */
	}
}

static inline u32 urdma_qp_mtu(const struct urdma_qp *qp)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);

	return min(ib_mtu_enum_to_int(qp->attr.path_mtu),
		   ib_mtu_enum_to_int(urdma_mtu_from_netdev(udev->ndev->mtu)));
}

static inline struct urdma_inflight *urdma_slot(struct urdma_wire *w, u32 idx)
{
	return (struct urdma_inflight *)(w->req.slots + (idx % URDMA_WIRE_WINDOW) *
					 w->req.slot_size);
}

static inline const struct urdma_send_wqe *
urdma_slot_wqe(struct urdma_inflight *f)
{
	return (const struct urdma_send_wqe *)f->wqe;
}

/* The AETH syndromes of an ACK and of a NAK. */
static inline u8 urdma_syn_ack(void)
{
	return FIELD_PREP(URDMA_SYN_TYPE, URDMA_SYN_ACK) |
	       FIELD_PREP(URDMA_SYN_VAL, URDMA_CREDITS_INVALID);
}

static inline u8 urdma_syn_nak(u8 code)
{
	return FIELD_PREP(URDMA_SYN_TYPE, URDMA_SYN_NAK) |
	       FIELD_PREP(URDMA_SYN_VAL, code);
}

/*
 * The responder as key checks see it: the QP, and the PD of the request
 * (w->resp.pdn: the QP's, or for XRC the named SRQ's).
 */
static inline void urdma_resp_peer(struct urdma_qp *qp, u32 pdn,
				   struct urdma_peer *peer)
{
	peer->dev = to_udev(qp->ibqp.device);
	peer->qp = qp;
	peer->srq = NULL;
	peer->pdn = pdn;
}

/* FLUSH and ATOMIC_WRITE take a responder resource, as READs do. */
static inline bool
urdma_pkt_is_flush_or_atomic_write(const struct urdma_pkt *pkt)
{
	return (pkt->flags & URDMA_PF_FLUSH) ||
	       (pkt->opcode & URDMA_OP_MASK) == URDMA_OP_ATOMIC_WRITE;
}

/* PSNs a message of @len spans; a READ request spans its responses. */
static inline u32 urdma_msg_npsn(u8 op, u32 len, u32 mtu)
{
	if (urdma_wop(op, URDMA_WOP_ATOMIC))
		return 1;
	return max_t(u32, DIV_ROUND_UP(len, mtu), 1);
}

/* wire_comp.c: the completer */
int urdma_req_complete(struct urdma_engine *eng, struct urdma_qp *qp);
void urdma_req_fail_oldest(struct urdma_qp *qp, u8 status);
void urdma_req_rx(struct urdma_engine *eng, struct urdma_qp *qp,
		  const struct urdma_pkt *pkt);
void urdma_req_cnp(struct urdma_engine *eng, struct urdma_qp *qp);
void urdma_req_skip(struct urdma_wire *w, struct urdma_inflight *f);
struct urdma_inflight *urdma_req_holder(struct urdma_qp *qp, u32 psn,
					u32 *idx);

/* wire_rc.c: packets */
void urdma_put_aeth(struct urdma_tx *tx, u8 syn, u32 msn);
void urdma_put_reth(void *p, u64 va, u32 rkey, u32 len);
void urdma_send_ack(struct urdma_engine *eng, struct urdma_qp *qp,
		    u8 syn, u32 psn);
int urdma_wire_pkt(struct urdma_qp *qp, u8 opcode, u32 psn, u32 paylen,
		   bool ackreq, bool se, struct urdma_tx *tx);
int urdma_wire_send(struct urdma_engine *eng, struct urdma_qp *qp,
		    struct urdma_tx *tx);

/* wire_req.c: the requester */
int urdma_req_run(struct urdma_engine *eng, struct urdma_qp *qp);
u8 urdma_req_pkt(struct urdma_engine *eng, struct urdma_qp *qp,
		 struct urdma_inflight *f, bool *wqe_sent, bool *dropped);
u32 urdma_req_rd_count(struct urdma_qp *qp);

/* wire_req_retx.c: its retransmission */
void urdma_req_progress(struct urdma_qp *qp);
u64 urdma_rto_ceil_ns(const struct urdma_qp *qp);
void urdma_req_arm(struct urdma_qp *qp);
bool urdma_req_timers(struct urdma_engine *eng, struct urdma_qp *qp, ktime_t now);

/* wire_resp.c: the responder */
int urdma_resp_flush_ack(struct urdma_engine *eng, struct urdma_qp *qp);
void urdma_resp_ack_later(struct urdma_wire *w, u8 syn, u32 psn);
void urdma_resp_rx(struct urdma_engine *eng, struct urdma_qp *qp,
		   const struct urdma_pkt *pkt);

/* wire_resp_read.c: its resource cache */
bool urdma_resp_reads_before(const struct urdma_wire *w, u32 psn);
int urdma_resp_rd(struct urdma_engine *eng, struct urdma_qp *qp,
		  const struct urdma_pkt *pkt);
int urdma_resp_flush_or_atomic_write(struct urdma_qp *qp,
				     const struct urdma_pkt *pkt);
void urdma_resp_dup(struct urdma_engine *eng, struct urdma_qp *qp,
		    const struct urdma_pkt *pkt);
int urdma_resp_reads(struct urdma_engine *eng, struct urdma_qp *qp);

#endif /* URDMA_WIRE_RC_H */
