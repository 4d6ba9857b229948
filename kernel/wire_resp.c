// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RC and UC responder: requests taken in PSN order, a gap NAKed once,
 * SENDs into receive WQEs, WRITEs, XRC's SRQ, RNR NAKs, and ACKs
 * coalesced.  READs, atomics, FLUSH, ATOMIC_WRITE and duplicates go to the
 * resource cache (wire_resp_read.c).  See wire_rc.c for the transport as
 * a whole.
 */
#include <kunit/visibility.h>

#include "exec.h"
#include "wire_rc.h"

/* ---- responder: requests ------------------------------------------------ */

/*
 * An ACK or a sequence NAK for @psn, sent by urdma_resp_flush_ack() once
 * the answers before it are.  A later one replaces it, but an ACK does not
 * replace a sequence NAK: the packet that NAK asks for again is still
 * missing (it came early and was dropped).
 */
void urdma_resp_ack_later(struct urdma_wire *w, u8 syn, u32 psn)
{
	if (w->resp.ack_pending && w->resp.ack_syn != urdma_syn_ack() &&
	    syn == urdma_syn_ack())
		return;
	w->resp.ack_pending = true;
	w->resp.ack_syn = syn;
	w->resp.ack_psn = psn;
}

/*
 * The receive WQE a SEND took at its first packet, when a NAK cuts the
 * message short: flushed to the queue it came from, which for XRC is an
 * SRQ that outlives the QP and other QPs share (if it is still there):
 * @srqn, @serial.
 */
static void urdma_resp_flush_rwqe(struct urdma_engine *eng,
				  struct urdma_qp *qp, u32 srqn, u64 serial)
{
	struct urdma_wire *w = qp->wire;
	const struct urdma_recv_wqe *rwqe = (const void *)w->resp.rwqe;
	struct urdma_srq *srq = urdma_qp_srq(qp);
	struct urdma_cqe cqe = {
		.wr_id = rwqe->wr_id,
		.opcode = URDMA_CQE_RECV,
		.status = IB_WC_WR_FLUSH_ERR,
	};

	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		srq = urdma_xrc_srq(to_udev(qp->ibqp.device), srqn, qp->xrcd);
		if (!srq || srq->serial != serial)
			return;
	}
	urdma_complete_recv(eng, qp, srq, &cqe, false);
}

/**
 * urdma_resp_flush - the QP is in ERROR: the receive WQE a SEND under way
 *	took, or one held for its first packet (ODP), is flushed, once
 * @eng: the engine
 * @qp: the QP
 */
void urdma_resp_flush(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;

	if (!w)
		return;
	if (w->resp.rwqe_held)
		urdma_resp_flush_rwqe(eng, qp, w->resp.held_srqn,
				      w->resp.held_serial);
	else if (w->resp.in_send)
		urdma_resp_flush_rwqe(eng, qp, w->resp.xrc_srqn,
				      w->resp.xrc_serial);
	w->resp.rwqe_held = false;
	w->resp.in_send = false;
}

/* A NAK that ends the message, and the responder's QP with it (RC). */
static void urdma_resp_nak(struct urdma_engine *eng, struct urdma_qp *qp,
			   u32 psn, u8 code)
{
	struct urdma_wire *w = qp->wire;

	w->resp.in_write = false;
	if (!urdma_is_reliable(qp)) {
		w->resp.in_send = false;
		w->resp.drop_msg = true;
		return;
	}
	urdma_send_ack(eng, qp, urdma_syn_nak(code), psn);
	urdma_qp_set_error(qp);
	urdma_resp_flush(eng, qp);
}

/*
 * A SEND's first packet: the receive WQE it consumes, from @srq (NULL: the
 * RQ) into w->resp.rwqe, or the one held for it across an ODP wait.  One
 * held for another XRC SRQ than this packet names (not the same message
 * after all) is flushed to its own SRQ first.  Return: 0; -EAGAIN (RNR);
 * -EIO (the ring is garbage: the QP failed); or a status (> 0) that
 * completes the WQE taken at once.
 */
static int urdma_resp_send_first(struct urdma_engine *eng,
				 struct urdma_qp *qp, struct urdma_srq *srq)
{
	struct urdma_wire *w = qp->wire;
	const struct urdma_recv_wqe *rwqe = (const void *)w->resp.rwqe;
	u32 max_sge;
	int ret;

	if (w->resp.rwqe_held && qp->ibqp.qp_type == IB_QPT_XRC_TGT &&
	    w->resp.xrc_serial != w->resp.held_serial)
		urdma_resp_flush(eng, qp);
	if (!w->resp.rwqe_held) {
		ret = urdma_take_recv(eng, qp, srq, &max_sge, 0);
		if (ret == -EAGAIN)
			return -EAGAIN;
		if (ret) {
			urdma_qp_fatal(qp);
			return -EIO;
		}
		memcpy(w->resp.rwqe, eng->scratch->rwqe.raw, URDMA_MAX_STRIDE);
		if (!urdma_rwqe_valid(rwqe, max_sge))
			return IB_WC_LOC_QP_OP_ERR;
	}
	w->resp.rwqe_held = false;
	w->resp.msg_off = 0;
	w->resp.in_send = true;
	return 0;
}

/*
 * The rest of a SEND's receive CQE at its last packet: its length, and
 * the immediate or the invalidated key (invalidated here).  Return: 0, or
 * IB_WC_REM_INV_REQ_ERR for a key that cannot be invalidated.
 */
static u8 urdma_resp_send_last(struct urdma_qp *qp,
			       const struct urdma_pkt *pkt,
			       struct urdma_cqe *cqe)
{
	struct urdma_wire *w = qp->wire;
	__be32 key;

	cqe->opcode = URDMA_CQE_RECV;
	cqe->byte_len = w->resp.msg_off;
	cqe->src_qp = qp->attr.dest_qp_num;
	if (pkt->flags & URDMA_PF_IMM) {
		memcpy(&cqe->ex, urdma_pkt_hdr(pkt, URDMA_H_IMM), 4);
		cqe->flags |= URDMA_CQE_IMM;
	} else if (pkt->flags & URDMA_PF_IETH) {
		memcpy(&key, urdma_pkt_hdr(pkt, URDMA_H_IETH), 4);
		cqe->ex = be32_to_cpu(key);
		if (!urdma_invalidate(qp, w->resp.pdn, cqe->ex, true))
			return IB_WC_REM_INV_REQ_ERR;
		cqe->flags |= URDMA_CQE_INV;
	}
	return 0;
}

/* A SEND packet's payload: consumes a receive WQE at its first packet. */
static int urdma_resp_send(struct urdma_engine *eng, struct urdma_qp *qp,
			   const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_scratch *s = eng->scratch;
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	const struct urdma_recv_wqe *rwqe = (const void *)w->resp.rwqe;
	const struct urdma_sge *sge = (const struct urdma_sge *)(rwqe + 1);
	struct urdma_sg src = { .kva = (void *)pkt->payload,
				.len = pkt->paylen };
	struct urdma_srq *srq = w->resp.srq ?: urdma_qp_srq(qp);
	struct urdma_cqe cqe = {};
	int nsg, ret;
	u64 room;
	u8 status;

	if (pkt->flags & URDMA_PF_FIRST) {
		ret = urdma_resp_send_first(eng, qp, srq);
		if (ret < 0)
			return ret;
		cqe.status = ret;
	}
	/* The WQE this message took, whether it can be used or not. */
	cqe.wr_id = rwqe->wr_id;
	if (cqe.status)
		goto complete;
	status = urdma_lkey_sgl(udev, w->resp.pdn, sge, rwqe->num_sge,
				IB_ACCESS_LOCAL_WRITE, s->dst, &nsg, &room);
	if (status) {
		cqe.status = status;
		goto complete;
	}
	if ((u64)w->resp.msg_off + pkt->paylen > room) {
		cqe.status = IB_WC_LOC_LEN_ERR;
		goto complete;
	}
	if (pkt->paylen) {
		urdma_sgl_skip(s->dst, nsg, w->resp.msg_off);
		ret = urdma_copy(s->dst, nsg, &src, 1, pkt->paylen);
		if (ret == -EAGAIN) {
			/* ODP pages come: an RNR NAK, and the WQE is kept. */
			if (pkt->flags & URDMA_PF_FIRST) {
				w->resp.in_send = false;
				w->resp.rwqe_held = true;
				w->resp.held_srqn = w->resp.xrc_srqn;
				w->resp.held_serial = w->resp.xrc_serial;
			}
			return -EAGAIN;
		}
		if (ret) {
			cqe.status = IB_WC_LOC_PROT_ERR;
			goto complete;
		}
	}
	w->resp.msg_off += pkt->paylen;
	if (!(pkt->flags & URDMA_PF_LAST))
		return 0;

	cqe.status = urdma_resp_send_last(qp, pkt, &cqe);
	if (cqe.status)
		goto complete;
	w->resp.in_send = false;
	urdma_complete_recv(eng, qp, srq, &cqe, pkt->se);
	return 0;

complete:
	w->resp.in_send = false;
	cqe.opcode = URDMA_CQE_RECV;
	urdma_complete_recv(eng, qp, srq, &cqe, false);
	return -EINVAL;
}

/*
 * A WRITE packet.  Return: 0, a NAK code, or -EAGAIN (an RNR NAK) while
 * ODP pages are faulted in; nothing was written then.
 */
static int urdma_resp_write(struct urdma_engine *eng, struct urdma_qp *qp,
			    const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_sg src = { .kva = (void *)pkt->payload,
				.len = pkt->paylen };
	struct urdma_peer peer;
	struct urdma_sg dst;
	int ret;

	if (pkt->flags & URDMA_PF_FIRST) {
		const struct urdma_reth *reth = urdma_pkt_hdr(pkt,
							       URDMA_H_RETH);

		w->resp.wr_va = be64_to_cpu(reth->va);
		w->resp.wr_rkey = be32_to_cpu(reth->rkey);
		w->resp.wr_len = be32_to_cpu(reth->len);
		w->resp.msg_off = 0;
		w->resp.in_write = !(pkt->flags & URDMA_PF_LAST);
	} else if (pkt->flags & URDMA_PF_LAST) {
		w->resp.in_write = false;
	}
	if ((u64)w->resp.msg_off + pkt->paylen > w->resp.wr_len ||
	    ((pkt->flags & URDMA_PF_LAST) &&
	     w->resp.msg_off + pkt->paylen != w->resp.wr_len))
		return URDMA_NAK_INV_REQ;
	if (!(READ_ONCE(qp->attr.qp_access_flags) & IB_ACCESS_REMOTE_WRITE))
		return URDMA_NAK_INV_REQ;
	urdma_resp_peer(qp, w->resp.pdn, &peer);
	if (pkt->paylen) {
		if (!urdma_rkey_sg(&peer, w->resp.wr_rkey, w->resp.wr_va + w->resp.msg_off,
				   pkt->paylen, IB_ACCESS_REMOTE_WRITE, &dst))
			return URDMA_NAK_REM_ACCESS;
		ret = urdma_copy(&dst, 1, &src, 1, pkt->paylen);
		if (ret == -EAGAIN)
			return -EAGAIN;	/* ODP pages come: RNR NAK */
		if (ret)
			return URDMA_NAK_REM_ACCESS;
	} else if ((pkt->flags & URDMA_PF_FIRST) && w->resp.wr_len) {
		return URDMA_NAK_INV_REQ;
	}
	w->resp.msg_off += pkt->paylen;
	return 0;
}

/* Whether a packet fits the message state (IBTA 9.7.5.1.2, C9-40..). */
VISIBLE_IF_KUNIT bool urdma_resp_seq_ok(const struct urdma_wire *w,
					const struct urdma_pkt *pkt)
{
	bool first = pkt->flags & URDMA_PF_FIRST;

	if (pkt->flags & URDMA_PF_SEND && !(pkt->flags & URDMA_PF_WRITE))
		return w->resp.in_send ? !first : first && !w->resp.in_write;
	if (pkt->flags & URDMA_PF_WRITE)
		return w->resp.in_write ? !first : first && !w->resp.in_send;
	return !w->resp.in_send && !w->resp.in_write;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_resp_seq_ok);

/*
 * Whether a request at the responder is the one it expects (RC), or starts
 * over after a loss (UC).  An early PSN is a duplicate, answered again; a
 * later one draws one sequence NAK; a UC message that lost a packet is
 * skipped to its end.  Return: true if the packet is to be executed.
 */
static bool urdma_resp_in_order(struct urdma_engine *eng, struct urdma_qp *qp,
				const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	s32 d = urdma_psn_diff(pkt->psn, w->resp.epsn);

	if (!urdma_is_reliable(qp) && d) {
		/* UC: a lost packet loses the message. */
		w->resp.in_send = false;
		w->resp.in_write = false;
		w->resp.drop_msg = !(pkt->flags & URDMA_PF_FIRST);
		w->resp.epsn = pkt->psn;
		d = 0;
	}
	if (d > 0) {
		/*
		 * Once per gap: at once, or after the answers before it
		 * (a NAK there would tell the requester they were lost).
		 */
		if (!w->resp.nak_sent) {
			u8 nak = urdma_syn_nak(URDMA_NAK_PSN_SEQ);

			w->resp.nak_sent = true;
			urdma_count(eng, URDMA_CNT_SEQ_NAKS_SENT);
			if (urdma_resp_reads_before(w, w->resp.epsn))
				urdma_resp_ack_later(w, nak, w->resp.epsn);
			else
				urdma_send_ack(eng, qp, nak, w->resp.epsn);
		}
		return false;
	}
	if (d < 0) {
		urdma_count(eng, URDMA_CNT_DUP_REQS);
		urdma_resp_dup(eng, qp, pkt);
		return false;
	}
	w->resp.nak_sent = false;
	if (w->resp.drop_msg) {
		if (!(pkt->flags & URDMA_PF_FIRST)) {
			w->resp.epsn = urdma_psn_add(w->resp.epsn, 1);
			return false;
		}
		w->resp.drop_msg = false;
	}
	return true;
}

/*
 * What a SEND packet, or the last packet of a WRITE_WITH_IMM (its data
 * placed already), puts into a receive WQE.  Return: 0 (also for any other
 * WRITE packet), a completion status, or -EAGAIN for RNR.
 */
static int urdma_resp_recv(struct urdma_engine *eng, struct urdma_qp *qp,
			   const struct urdma_pkt *pkt)
{
	struct urdma_msg m = {
		.src_qp = qp->attr.dest_qp_num,
		.cqe_opcode = URDMA_CQE_RECV_RDMA_IMM,
		.cqe_flags = URDMA_CQE_IMM,
		.solicited = pkt->se,
		.rc = urdma_is_reliable(qp),
		.srq = qp->wire->resp.srq,
	};

	if (!(pkt->flags & URDMA_PF_WRITE))
		return urdma_resp_send(eng, qp, pkt);
	if (!(pkt->flags & URDMA_PF_SEND))
		return 0;
	m.len = qp->wire->resp.msg_off;
	memcpy(&m.ex, urdma_pkt_hdr(pkt, URDMA_H_IMM), 4);
	return urdma_recv_msg(eng, qp, to_udev(qp->ibqp.device), &m);
}

/*
 * No receive WQE for the packet, or ODP pages it needs are faulted in: an
 * RNR NAK (RC), or the message is lost.  @placed: a WRITE's data landed
 * before (WRITE_WITH_IMM found no receive WQE).
 */
static void urdma_resp_rnr(struct urdma_engine *eng, struct urdma_qp *qp,
			   const struct urdma_pkt *pkt, bool placed)
{
	struct urdma_wire *w = qp->wire;

	if (pkt->flags & URDMA_PF_WRITE) {
		/* The retry brings this packet again: undo it. */
		w->resp.in_write = !(pkt->flags & URDMA_PF_FIRST);
		if (placed)
			w->resp.msg_off -= pkt->paylen;
	}
	if (!urdma_is_reliable(qp)) {
		w->resp.drop_msg = true;
		w->resp.epsn = urdma_psn_add(w->resp.epsn, 1);
		return;
	}
	/* RNR NAK: the requester sends this packet again later. */
	urdma_count(eng, URDMA_CNT_RNR_WAITS);
	urdma_send_ack(eng, qp,
		       FIELD_PREP(URDMA_SYN_TYPE, URDMA_SYN_RNR) |
		       FIELD_PREP(URDMA_SYN_VAL,
				  READ_ONCE(qp->attr.min_rnr_timer)),
		       pkt->psn);
}

/*
 * XRC: the SRQ a request names in its XRCETH, which must be of the
 * target's domain; the keys of the request are checked in that SRQ's PD.
 * The packets of one message name one SRQ.  Return: 0, or a NAK code.
 */
static int urdma_resp_xrc(struct urdma_qp *qp, const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	const struct urdma_xrceth *x;
	u32 srqn;

	if (!(pkt->flags & URDMA_PF_XRCETH))
		return URDMA_NAK_INV_REQ;
	x = urdma_pkt_hdr(pkt, URDMA_H_XRCETH);
	srqn = FIELD_GET(URDMA_XRCETH_SRQN, be32_to_cpu(x->srqn));
	w->resp.srq = urdma_xrc_srq(to_udev(qp->ibqp.device), srqn, qp->xrcd);
	if (!w->resp.srq)
		return URDMA_NAK_INV_REQ;
	/* The message's SRQ (its serial), not a later one of its number. */
	if (!(pkt->flags & URDMA_PF_FIRST) &&
	    w->resp.srq->serial != w->resp.xrc_serial) {
		w->resp.srq = NULL;
		return URDMA_NAK_INV_REQ;
	}
	w->resp.xrc_srqn = srqn;
	w->resp.xrc_serial = w->resp.srq->serial;
	w->resp.pdn = w->resp.srq->pdn;
	return 0;
}

/* A request packet in order at the responder: executed. */
static void urdma_resp_exec(struct urdma_engine *eng, struct urdma_qp *qp,
			    const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	int ret;

	if (pkt->flags & (URDMA_PF_READ | URDMA_PF_ATOMIC))
		ret = urdma_resp_rd(eng, qp, pkt);
	else if (urdma_pkt_is_flush_or_atomic_write(pkt))
		ret = urdma_resp_flush_or_atomic_write(qp, pkt);
	else
		ret = INT_MAX;	/* SEND or WRITE: below */
	if (ret != INT_MAX) {
		if (ret == -EAGAIN)
			urdma_resp_rnr(eng, qp, pkt, false);
		else if (ret)
			urdma_resp_nak(eng, qp, pkt->psn, ret);
		return;
	}
	if (pkt->flags & URDMA_PF_WRITE) {
		ret = urdma_resp_write(eng, qp, pkt);
		if (ret == -EAGAIN) {
			urdma_resp_rnr(eng, qp, pkt, false);
			return;
		}
		if (ret) {
			urdma_resp_nak(eng, qp, pkt->psn, ret);
			return;
		}
	}
	ret = urdma_resp_recv(eng, qp, pkt);
	if (ret == -EAGAIN || ret == -EBUSY) {
		urdma_resp_rnr(eng, qp, pkt, true);
		return;
	}
	if (ret) {
		urdma_resp_nak(eng, qp, pkt->psn,
			       ret == -EIO ? URDMA_NAK_REM_OP :
			       ret == IB_WC_REM_OP_ERR ? URDMA_NAK_REM_OP :
							URDMA_NAK_INV_REQ);
		return;
	}
	w->resp.epsn = urdma_psn_add(pkt->psn, 1);
	if (pkt->flags & URDMA_PF_LAST)
		w->resp.msn++;
	if (urdma_is_reliable(qp) && (pkt->ackreq || (pkt->flags & URDMA_PF_LAST)))
		urdma_resp_ack_later(w, urdma_syn_ack(), pkt->psn);
}

/* A request packet at the responder. */
void urdma_resp_rx(struct urdma_engine *eng, struct urdma_qp *qp,
		   const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	int ret;

	if (!urdma_resp_in_order(eng, qp, pkt))
		return;
	if (!urdma_resp_seq_ok(w, pkt)) {
		urdma_resp_nak(eng, qp, pkt->psn, URDMA_NAK_INV_REQ);
		return;
	}
	w->resp.pdn = urdma_qp_pdn(qp);
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		ret = urdma_resp_xrc(qp, pkt);
		if (ret) {
			urdma_resp_nak(eng, qp, pkt->psn, ret);
			return;
		}
	}
	urdma_resp_exec(eng, qp, pkt);
	/* Found in this pass: not to be kept beyond it (srq.c). */
	w->resp.srq = NULL;
}

/* The coalesced ACK, if one is due and no READ response must go first. */
int urdma_resp_flush_ack(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;

	if (!w->resp.ack_pending || urdma_resp_reads_before(w, w->resp.ack_psn))
		return 0;
	w->resp.ack_pending = false;
	urdma_send_ack(eng, qp, w->resp.ack_syn, w->resp.ack_psn);
	return 1;
}
