// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RC and UC requester: WQEs copied into the in-flight window, cut
 * into packets and sent, as the congestion window allows; the QP's turn in
 * a pass.  Going back and the retransmit timer are in wire_req_retx.c.
 * See wire_rc.c for the transport as a whole.
 */
#include <kunit/visibility.h>

#include "exec.h"
#include "wire_rc.h"

/* ---- requester: transmit ------------------------------------------------ */

/* The wire opcode of the packet of a SEND or WRITE at @first/@last. */
static u8 urdma_req_opcode(u8 op, bool first, bool last)
{
	const u8 *wire = urdma_wqe_op(op)->wire;

	if (first)
		return wire[last ? URDMA_WIRE_ONLY : URDMA_WIRE_FIRST];
	return wire[last ? URDMA_WIRE_LAST : URDMA_WIRE_MIDDLE];
}

/*
 * The builders of a request packet for in-flight WQE @f, one per kind.
 * Each fills @tx at the PSN the requester is at (w->req.psn) and moves that
 * past it.  Return: false if no packet could be allocated (the engine
 * tries again on a later turn).
 */
typedef bool (*urdma_req_build_fn)(struct urdma_qp *qp,
				   struct urdma_inflight *f,
				   struct urdma_tx *tx);

static bool urdma_req_read_pkt(struct urdma_qp *qp, struct urdma_inflight *f,
			       struct urdma_tx *tx)
{
	struct urdma_wire *w = qp->wire;
	const struct urdma_send_wqe *wqe = urdma_slot_wqe(f);
	u8 opcode = URDMA_OP_READ_REQ;
	u32 psn = w->req.psn;

	/*
	 * One request for what is still missing.  A go-back that started at
	 * an earlier WQE reaches this READ with w->req.off 0, but its first
	 * f->got responses are placed already: ask from the first missing
	 * one, as for the READ the go-back began at (a responder takes a
	 * duplicate READ at any of its PSNs, see urdma_resp_dup(); so does
	 * rxe).
	 */
	if (!w->req.off && f->got) {
		w->req.off = f->got * f->mtu;
		psn = urdma_psn_add(f->first_psn, f->got);
	}
	if (urdma_wire_pkt(qp, opcode, psn, 0, true, false, tx))
		return false;
	urdma_put_reth(urdma_tx_hdr(tx, URDMA_H_RETH),
		       wqe->rdma.remote_addr + w->req.off, wqe->rdma.rkey,
		       f->len - w->req.off);
	w->req.psn = urdma_psn_add(f->first_psn, f->npsn);
	return true;
}

static bool urdma_req_atomic_pkt(struct urdma_qp *qp,
				 struct urdma_inflight *f, struct urdma_tx *tx)
{
	struct urdma_wire *w = qp->wire;
	const struct urdma_send_wqe *wqe = urdma_slot_wqe(f);
	bool cmp_swp = wqe->opcode == URDMA_WQE_ATOMIC_CMP_SWP;
	u8 opcode = urdma_wqe_op(wqe->opcode)->wire[URDMA_WIRE_ONLY];
	struct urdma_atmeth *a;

	if (urdma_wire_pkt(qp, opcode, w->req.psn, 0, true, false, tx))
		return false;
	a = urdma_tx_hdr(tx, URDMA_H_ATMETH);
	a->va = cpu_to_be64(wqe->atomic.remote_addr);
	a->rkey = cpu_to_be32(wqe->atomic.rkey);
	a->swap_add = cpu_to_be64(cmp_swp ? wqe->atomic.swap :
					    wqe->atomic.compare_add);
	a->cmp = cpu_to_be64(wqe->atomic.compare_add);
	w->req.psn = urdma_psn_add(w->req.psn, 1);
	return true;
}

/* ATOMIC_WRITE: RETH for 8 bytes; the value, as it lies in memory. */
static bool urdma_req_atomic_write_pkt(struct urdma_qp *qp,
				       struct urdma_inflight *f,
				       struct urdma_tx *tx)
{
	struct urdma_wire *w = qp->wire;
	const struct urdma_send_wqe *wqe = urdma_slot_wqe(f);
	u8 opcode = URDMA_OP_ATOMIC_WRITE;

	if (urdma_wire_pkt(qp, opcode, w->req.psn, 8, true, false, tx))
		return false;
	urdma_put_reth(urdma_tx_hdr(tx, URDMA_H_RETH),
		       wqe->atomic.remote_addr, wqe->atomic.rkey, 8);
	memcpy(tx->payload, &wqe->atomic.compare_add, 8);
	w->req.psn = urdma_psn_add(w->req.psn, 1);
	return true;
}

static bool urdma_req_flush_pkt(struct urdma_qp *qp, struct urdma_inflight *f,
				struct urdma_tx *tx)
{
	struct urdma_wire *w = qp->wire;
	const struct urdma_send_wqe *wqe = urdma_slot_wqe(f);
	u8 opcode = URDMA_OP_FLUSH;
	struct urdma_feth *feth;

	if (urdma_wire_pkt(qp, opcode, w->req.psn, 0, true, false, tx))
		return false;
	feth = urdma_tx_hdr(tx, URDMA_H_FETH);
	feth->w = cpu_to_be32(FIELD_PREP(URDMA_FETH_SEL, wqe->flush.level) |
			      FIELD_PREP(URDMA_FETH_PLT, wqe->flush.type));
	urdma_put_reth(urdma_tx_hdr(tx, URDMA_H_RETH),
		       wqe->flush.remote_addr, wqe->flush.rkey,
		       (u32)min_t(u64, wqe->flush.length, U32_MAX));
	w->req.psn = urdma_psn_add(w->req.psn, 1);
	return true;
}

/* The builder of each request of one packet; SEND and WRITE have none. */
static const urdma_req_build_fn urdma_req_builders[URDMA_WQE_NUM_OPCODES] = {
	[URDMA_WQE_RDMA_READ] = urdma_req_read_pkt,
	[URDMA_WQE_ATOMIC_CMP_SWP] = urdma_req_atomic_pkt,
	[URDMA_WQE_ATOMIC_FETCH_ADD] = urdma_req_atomic_pkt,
	[URDMA_WQE_ATOMIC_WRITE] = urdma_req_atomic_write_pkt,
	[URDMA_WQE_FLUSH] = urdma_req_flush_pkt,
};

/**
 * urdma_req_in_flight - the request packets the window counts, up to and
 *	including the one at @psn
 * @qp: the requester
 * @psn: a PSN it is about to send
 *
 * Counted from the last PSN known to have arrived: the last acknowledged,
 * or a READ's last response received in order, whichever is later (MIDDLE
 * responses carry no AETH, so the acknowledged PSN lags behind them; and
 * counted from there, asking again for the tail of a READ longer than the
 * window would never fit).  A READ's request is one packet: the PSNs of
 * its responses after it are the responder's packets, not the
 * requester's, and are not counted.
 */
VISIBLE_IF_KUNIT u32 urdma_req_in_flight(struct urdma_qp *qp, u32 psn)
{
	struct urdma_wire *w = qp->wire;
	u32 base = w->comp.acked, i;
	s32 n;

	for (i = qp->sq_cons; i != w->req.next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);
		u32 got;

		if (urdma_slot_wqe(f)->opcode != URDMA_WQE_RDMA_READ || !f->got)
			continue;
		got = urdma_psn_add(f->first_psn, f->got - 1);
		if (urdma_psn_diff(got, base) > 0)
			base = got;
	}
	n = urdma_psn_diff(psn, base);
	for (i = qp->sq_cons; i != w->req.next && n > 0; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);
		/* Its responses' PSNs after the one it is asked from. */
		u32 lo = urdma_psn_add(f->first_psn, f->got + 1);
		u32 hi = urdma_psn_add(f->first_psn, f->npsn - 1);

		if (urdma_slot_wqe(f)->opcode != URDMA_WQE_RDMA_READ ||
		    f->got + 1 >= f->npsn)
			continue;
		if (urdma_psn_diff(lo, base) <= 0)
			lo = urdma_psn_add(base, 1);
		if (urdma_psn_diff(hi, psn) > 0)
			hi = psn;
		if (urdma_psn_diff(hi, lo) >= 0)
			n -= urdma_psn_diff(hi, lo) + 1;
	}
	return max(n, 0);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_req_in_flight);

/*
 * What the congestion window holds with the packet at @psn sent: exactly
 * (urdma_req_in_flight()) where it matters, at or past the window's size.
 * Below it, the PSN distance from the last ACK, a bound of the count that
 * costs no walk of the window.
 */
static u32 urdma_req_window_fill(struct urdma_qp *qp, u32 psn)
{
	struct urdma_wire *w = qp->wire;
	s32 d = urdma_psn_diff(psn, w->comp.acked);

	if (d < (s32)w->cc.cwnd)
		return max(d, 0);
	return urdma_req_in_flight(qp, psn);
}

/* AckReq goes on at least every this many packets. */
static u32 urdma_req_ackreq_every(const struct urdma_qp *qp)
{
	if (!urdma_is_reliable(qp))
		return URDMA_ACKREQ_EVERY;
	return clamp_t(u32, qp->wire->cc.cwnd / 2, 1, URDMA_ACKREQ_EVERY);
}

/*
 * SEND or WRITE: the next packet of the message at w->req.off, its data
 * gathered again from the WQE's copy.  *@built: a packet is in @tx;
 * *@last: it is the message's last.  Return: 0, or the local completion
 * status that ends the WQE.
 */
static u8 urdma_req_data_pkt(struct urdma_engine *eng, struct urdma_qp *qp,
			     struct urdma_inflight *f, struct urdma_tx *tx,
			     bool *built, bool *last)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = urdma_slot_wqe(f);
	u32 pay, hdrs, psn = w->req.psn;
	bool first, ackreq;
	u8 opcode, status;
	int nsrc;
	u64 len;

	*built = false;
	memcpy(s->swqe.raw, f->wqe, qp->sq.stride);
	status = urdma_wqe_gather(eng, qp, 0, &nsrc, &len);
	if (status)
		return status;
	if (WARN_ON_ONCE(w->req.off > f->len || len != f->len))
		return IB_WC_LOC_QP_OP_ERR;
	first = !w->req.off;
	pay = min(f->len - w->req.off, f->mtu);
	if (pay > urdma_qp_mtu(qp))
		return IB_WC_LOC_QP_OP_ERR;
	if (pay) {
		/* Its ODP pages, there until the pass ends (or asked for). */
		urdma_sgl_skip(s->src, nsrc, w->req.off);
		status = urdma_ready_status(urdma_sgl_ready(s->src, nsrc, pay,
							    false));
		if (status)
			return status;
	}
	*last = w->req.off + pay >= f->len;
	opcode = urdma_req_opcode(wqe->opcode, first, *last);
	/*
	 * Also the packet that fills the window: its ACK opens it again.
	 * And at least every half window: a cut to half (a CNP) while
	 * packets are in flight closes the window before its fill, and
	 * then the ACK of a packet at most half a window back opens it.
	 */
	ackreq = *last || w->req.probe ||
		 ++w->req.since_ackreq >= urdma_req_ackreq_every(qp) ||
		 (urdma_is_reliable(qp) && urdma_req_window_fill(qp, psn) >= w->cc.cwnd);
	if (ackreq)
		w->req.since_ackreq = 0;
	if (urdma_wire_pkt(qp, opcode, psn, pay, ackreq,
			   *last && (wqe->flags & URDMA_WQE_SOLICITED), tx))
		return 0;
	/* The packet's headers (an XRC request's XRCETH: urdma_wire_pkt()). */
	hdrs = urdma_opcodes[tx->opcode].flags;
	if (hdrs & URDMA_PF_RETH)
		urdma_put_reth(urdma_tx_hdr(tx, URDMA_H_RETH),
			       wqe->rdma.remote_addr, wqe->rdma.rkey, f->len);
	/* ex: ImmDt, big-endian already; or the rkey, in CPU order. */
	if (hdrs & URDMA_PF_IMM) {
		memcpy(urdma_tx_hdr(tx, URDMA_H_IMM), &wqe->ex, 4);
	} else if (hdrs & URDMA_PF_IETH) {
		__be32 rkey = cpu_to_be32(wqe->ex);

		memcpy(urdma_tx_hdr(tx, URDMA_H_IETH), &rkey, 4);
	}
	if (pay && urdma_tx_copy(tx, s->src, nsrc, pay))
		return IB_WC_LOC_QP_OP_ERR;
	w->req.off += pay;
	w->req.psn = urdma_psn_add(psn, 1);
	*built = true;
	return 0;
}

/*
 * The local buffers a READ or an atomic writes its answer into: their ODP
 * pages are asked for before the request goes, so that the answer finds
 * them.  Return: 0, URDMA_WC_ODP_WAIT, or the status that ends the WQE.
 */
static u8 urdma_req_dst_ready(struct urdma_engine *eng, struct urdma_qp *qp,
			      struct urdma_inflight *f)
{
	struct urdma_scratch *s = eng->scratch;
	int nsg;
	u64 len;

	if (!(urdma_wqe_op(urdma_slot_wqe(f)->opcode)->local_access &
	      IB_ACCESS_LOCAL_WRITE))
		return 0;
	memcpy(s->swqe.raw, f->wqe, qp->sq.stride);
	/* A bad key is the answer's to find (urdma_req_place()). */
	if (urdma_wqe_gather(eng, qp, IB_ACCESS_LOCAL_WRITE, &nsg, &len))
		return 0;
	/* The first pages; each response looks for its own again. */
	return urdma_ready_status(urdma_sgl_ready(s->src, nsg,
						  min_t(u64, len,
							URDMA_ODP_AHEAD),
						  true));
}

/*
 * Send the next packet of in-flight WQE @f at w->req.off.  Return: 0, or the
 * local completion status that ends the WQE: its memory went bad, or the
 * path MTU fell below the size it was cut into (the WQE fails rather than
 * send a packet the path cannot carry).  A packet whose ODP pages are not
 * there yet is not sent: the requester pauses (*@dropped) and tries again.
 */
u8 urdma_req_pkt(struct urdma_engine *eng, struct urdma_qp *qp,
		 struct urdma_inflight *f, bool *wqe_sent, bool *dropped)
{
	struct urdma_wire *w = qp->wire;
	u32 psn = w->req.psn;
	urdma_req_build_fn build;
	struct urdma_tx tx;
	bool built, last;
	u8 op, status;

	*wqe_sent = false;
	op = urdma_slot_wqe(f)->opcode;
	w->req.xrc_srqn = urdma_slot_wqe(f)->xrc_srqn;
	/* Checked by urdma_wqe_valid() when it was copied; still, in range. */
	build = op < URDMA_WQE_NUM_OPCODES ? urdma_req_builders[op] : NULL;
	if (build) {
		status = urdma_req_dst_ready(eng, qp, f);
		built = !status && build(qp, f, &tx);
		last = true;
	} else {
		status = urdma_req_data_pkt(eng, qp, f, &tx, &built, &last);
	}
	if (status == URDMA_WC_ODP_WAIT) {
		urdma_count(eng, URDMA_CNT_ODP_WAITS);
		w->req.rnr_wait = true;
		w->req.resume_at = ktime_add_ns(ktime_get(),
						URDMA_ODP_WAIT_NS);
		*dropped = true;
		return 0;
	}
	if (status)
		return status;
	if (!built)
		return 0;
	*wqe_sent = last;
	if (urdma_psn_diff(w->req.psn, w->req.psn_max) > 0) {
		/*
		 * New PSNs.  Time the round trip of one of them at a time,
		 * a packet of one PSN that asks for an ACK: never a resent
		 * one (Karn), nor a READ request, which its responses ACK.
		 */
		if (urdma_is_reliable(qp) && !w->cc.timing &&
		    urdma_psn_diff(w->req.psn, psn) == 1 &&
		    (tx.bth->w2 & cpu_to_be32(URDMA_BTH_ACKREQ))) {
			w->cc.timing = true;
			w->cc.rtt_psn = psn;
			w->cc.rtt_sent = ktime_get();
		}
		w->req.psn_max = w->req.psn;
	}
	if (urdma_wire_send(eng, qp, &tx) == -ENOBUFS && urdma_is_reliable(qp)) {
		/*
		 * The local queue dropped it: congestion on this side.  Cut
		 * the window and go back to it, not a round trip later at
		 * the sequence NAK; but only after an ACK, or a pause for
		 * the queue to drain, not into the full queue at once.
		 */
		if (urdma_cc_congestion(&w->cc, w->req.psn_max))
			urdma_count(eng, URDMA_CNT_CWND_CUTS);
		urdma_req_rewind(qp, psn);
		w->req.rnr_wait = true;
		w->req.resume_at = ktime_add_ns(ktime_get(),
						URDMA_CC_DROP_WAIT_NS);
		*wqe_sent = false;
		*dropped = true;
	}
	return 0;
}

/* Outstanding READs, atomics, FLUSHes and ATOMIC_WRITEs. */
u32 urdma_req_rd_count(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	u32 i, n = 0;

	for (i = qp->sq_cons; i != w->req.next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);
		u8 op = urdma_slot_wqe(f)->opcode;

		if (f->done || !urdma_wop(op, URDMA_WOP_RES))
			continue;
		if (urdma_wop(op, URDMA_WOP_RD) ||
		    (f->npsn && urdma_psn_diff(f->first_psn, w->comp.acked) > 0))
			n++;
	}
	return n;
}

/* Whether they use up the QP's max_rd_atomic: one more must wait. */
static bool urdma_req_rd_full(struct urdma_qp *qp)
{
	return urdma_req_rd_count(qp) >= max_t(u32, qp->attr.max_rd_atomic, 1);
}

/*
 * What in-flight WQE @f, just copied from the SQ, needs: its length and
 * PSNs, or the status it ends with at once.  Return: false if it cannot
 * start yet (a local operation, a fence or the responder-resource credits
 * wait for what is in flight).
 */
static bool urdma_req_prepare(struct urdma_engine *eng, struct urdma_qp *qp,
			      struct urdma_inflight *f, bool idle)
{
	const struct urdma_send_wqe *wqe = &eng->scratch->swqe.hdr;
	bool rd = urdma_wop(wqe->opcode, URDMA_WOP_RD);
	int nsrc;
	u64 len;

	if (!urdma_wqe_valid(qp, wqe)) {
		urdma_count(eng, URDMA_CNT_BAD_WQES);
		f->status = IB_WC_LOC_QP_OP_ERR;
		f->done = true;
		return true;
	}
	if (urdma_wop(wqe->opcode, URDMA_WOP_LOCAL)) {
		/* In order with the SQ: only when nothing is in flight. */
		if (!idle)
			return false;
		f->status = urdma_exec_local(qp, wqe);
		f->done = true;
		return true;
	}
	if (wqe->opcode == URDMA_WQE_ATOMIC_WRITE ||
	    wqe->opcode == URDMA_WQE_FLUSH) {
		/*
		 * No local buffers: one request packet, answered like a
		 * READ, within the same responder-resource credits.
		 */
		if (urdma_req_rd_full(qp))
			return false;
		if (wqe->opcode == URDMA_WQE_FLUSH &&
		    wqe->flush.level == URDMA_FLUSH_RANGE &&
		    wqe->flush.length > U32_MAX) {
			/* A RETH's length has 32 bits. */
			f->status = IB_WC_LOC_LEN_ERR;
			f->done = true;
			return true;
		}
		f->len = wqe->opcode == URDMA_WQE_ATOMIC_WRITE ? 8 : 0;
		f->npsn = 1;
		return true;
	}
	if ((wqe->flags & URDMA_WQE_FENCE) && urdma_req_rd_count(qp))
		return false;
	if (rd && urdma_req_rd_full(qp))
		return false;

	f->status = urdma_wqe_gather(eng, qp, rd ? IB_ACCESS_LOCAL_WRITE : 0,
				     &nsrc, &len);
	if (!f->status && rd && wqe->opcode != URDMA_WQE_RDMA_READ && len < 8)
		f->status = IB_WC_LOC_LEN_ERR;
	if (f->status) {
		f->done = true;
		return true;
	}
	f->len = rd && wqe->opcode != URDMA_WQE_RDMA_READ ? 8 : len;
	f->npsn = urdma_msg_npsn(wqe->opcode, f->len, f->mtu);
	return true;
}

/*
 * Copy the next SQ WQE into the window and check it.  Return: false if
 * the requester must wait (nothing posted, window full, fence, READ
 * credits, or a local operation behind WQEs in flight).
 */
static bool urdma_req_start(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_qp_db *db = qp->db.kva;
	struct urdma_scratch *s = eng->scratch;
	/* Pairs with the poster's release: WQEs before the index. */
	u32 prod = smp_load_acquire(&db->sq_prod);
	bool idle = w->req.next == qp->sq_cons;
	struct urdma_inflight *f;

	if (w->req.next == prod || w->req.next - qp->sq_cons >= URDMA_WIRE_WINDOW)
		return false;
	if (prod - qp->sq_cons > qp->sq.nent) {
		urdma_qp_fatal(qp);
		return false;
	}
	memcpy(s->swqe.raw, urdma_ring_entry(&qp->sq, w->req.next), qp->sq.stride);
	f = urdma_slot(w, w->req.next);
	memset(f, 0, sizeof(*f));
	memcpy(f->wqe, s->swqe.raw, qp->sq.stride);
	f->first_psn = w->req.psn;
	f->mtu = urdma_qp_mtu(qp);
	if (!urdma_req_prepare(eng, qp, f, idle))
		return false;
	if (w->req.cur == w->req.next)
		w->req.off = 0;
	w->req.next++;
	return true;
}

/* ---- requester: the QP's turn ------------------------------------------- */

/* The requester's state at its first turn in RTS. */
static void urdma_req_init(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;

	w->req.psn = READ_ONCE(qp->req_psn);
	w->req.psn_max = w->req.psn;
	w->comp.acked = urdma_psn_add(w->req.psn, URDMA_PSN_MASK);
	w->req.next = qp->sq_cons;
	w->req.cur = qp->sq_cons;
	w->comp.retry_left = qp->attr.retry_cnt;
	w->comp.rnr_left = qp->attr.rnr_retry;
	urdma_cc_init(&w->cc);
	w->req.req_init = true;
}

/* Whether the WQE started last is a READ, an atomic or the like. */
static bool urdma_req_started_res(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	u8 op = urdma_slot_wqe(urdma_slot(w, w->req.next - 1))->opcode;

	return urdma_wop(op, URDMA_WOP_RES);
}

/* Whether the packet at w->req.psn fits the congestion window. */
static bool urdma_req_window_open(struct urdma_qp *qp)
{
	return !urdma_is_reliable(qp) ||
	       urdma_req_window_fill(qp, qp->wire->req.psn) <= qp->wire->cc.cwnd;
}

/*
 * Send packets, starting WQEs as the window allows, until the turn's
 * budget (@work so far), the PSN window or the kick's budget is used up.
 * Return: @work, plus the packets sent and the WQEs that failed.
 */
static int urdma_req_send(struct urdma_engine *eng, struct urdma_qp *qp,
			  int work)
{
	struct urdma_wire *w = qp->wire;

	while (work < URDMA_WIRE_BUDGET) {
		struct urdma_inflight *f;
		bool sent, dropped = false;
		u8 status;

		if (w->req.cur == w->req.next) {
			bool was_idle = qp->sq_cons == w->req.next;

			if (!urdma_engine_charge(eng, 0) ||
			    !urdma_req_start(eng, qp))
				break;
			/*
			 * A READ or an atomic puts the timer on the
			 * responder's pace from its start, not from the last
			 * progress before it (urdma_req_arm()); once, so
			 * that new READs do not hold off the timeout of a
			 * dead path.
			 */
			if (was_idle ||
			    (urdma_req_started_res(qp) &&
			     w->req.rto < urdma_rto_ceil_ns(qp)))
				urdma_req_arm(qp);
		}
		f = urdma_slot(w, w->req.cur);
		if (f->done && f->status != IB_WC_SUCCESS)
			break;	/* nothing after a failed WQE goes out */
		if (f->done) {
			urdma_req_skip(w, f);
			continue;
		}
		if (!urdma_req_window_open(qp))
			break;
		if (!urdma_engine_charge(eng, f->mtu))
			break;
		status = urdma_req_pkt(eng, qp, f, &sent, &dropped);
		work++;
		if (status) {
			/* Its completion takes the QP to ERROR. */
			f->status = status;
			f->done = true;
			break;
		}
		if (dropped)
			break;
		if (sent) {
			w->req.cur++;
			w->req.off = 0;
		}
	}
	return work;
}

int urdma_req_run(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	int work;

	if (!w->req.req_init)
		urdma_req_init(qp);
	work = urdma_req_complete(eng, qp);
	/* A failed WQE took the QP to ERROR: the rest are flushed, not sent. */
	if (READ_ONCE(qp->attr.qp_state) != IB_QPS_RTS)
		return work;
	if (!urdma_req_timers(eng, qp, ktime_get()))
		return work + urdma_req_complete(eng, qp);
	work = urdma_req_send(eng, qp, work);
	work += urdma_req_complete(eng, qp);
	if (urdma_is_reliable(qp) && qp->sq_cons != w->req.next &&
	    ktime_before(w->req.timeout_at, eng->deadline))
		eng->deadline = w->req.timeout_at;
	return work;
}
