// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RC completer: ACKs, NAKs, READ responses and atomic ACKs from the
 * responder, taken only inside the PSN window; READ data placed; WQEs
 * completed in SQ order.  See wire_rc.c for the transport as a whole.
 */
#include <kunit/visibility.h>

#include "exec.h"
#include "wire_rc.h"

/* ---- completer: completions in SQ order --------------------------------- */

/* Whether the WQE at the SQ head is complete. */
static bool urdma_req_head_done(struct urdma_qp *qp, struct urdma_inflight *f)
{
	struct urdma_wire *w = qp->wire;
	u32 last;

	if (f->done)
		return true;
	if (qp->sq_cons == w->req.cur)	/* not fully sent yet */
		return false;
	if (urdma_wop(urdma_slot_wqe(f)->opcode, URDMA_WOP_RD))
		return false;
	if (!urdma_is_reliable(qp))
		return true;
	last = urdma_psn_add(f->first_psn, f->npsn - 1);
	return urdma_psn_diff(w->comp.acked, last) >= 0;
}

/*
 * Move the sender past in-flight WQE @f at w->req.cur, which needs no (more)
 * packets: it failed, is local, or is a READ or atomic a go-back reached
 * after its response came.  The next WQE goes out at its own first PSN.
 */
void urdma_req_skip(struct urdma_wire *w, struct urdma_inflight *f)
{
	if (f->npsn)
		w->req.psn = urdma_psn_add(f->first_psn, f->npsn);
	w->req.cur++;
	w->req.off = 0;
}

/* Retire completed WQEs from the head, in order.  Return: how many. */
int urdma_req_complete(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	int n = 0;

	while (qp->sq_cons != w->req.next) {
		struct urdma_inflight *f = urdma_slot(w, qp->sq_cons);
		const struct urdma_send_wqe *wqe = urdma_slot_wqe(f);
		u8 status;

		if (!urdma_req_head_done(qp, f))
			break;
		status = f->status;
		if (w->req.cur == qp->sq_cons)
			urdma_req_skip(w, f);
		w->comp.rnr_left = qp->attr.rnr_retry;
		n++;
		if (urdma_sq_done(eng, qp, wqe, status ? 0 : f->len, status) !=
		    IB_WC_SUCCESS)
			break;
	}
	if (n)
		urdma_req_progress(qp);
	return n;
}

/*
 * The WQE holding @psn ends with @status (a NAK, or retries ran out).
 * Return: false if no WQE in flight holds it (nothing changes).
 */
static bool urdma_req_fail(struct urdma_qp *qp, u32 psn, u8 status)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_inflight *f;
	u32 i;

	for (i = qp->sq_cons; i != w->req.next; i++) {
		s32 d;

		f = urdma_slot(w, i);
		d = urdma_psn_diff(psn, f->first_psn);
		if (!f->done && d >= 0 && d < (s32)max_t(u32, f->npsn, 1)) {
			f->status = status;
			f->done = true;
			return true;
		}
	}
	return false;
}

/* Retries ran out: the oldest WQE that is not complete ends with @status. */
void urdma_req_fail_oldest(struct urdma_qp *qp, u8 status)
{
	struct urdma_wire *w = qp->wire;
	u32 i;

	for (i = qp->sq_cons; i != w->req.next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);

		if (!f->done) {
			f->status = status;
			f->done = true;
			return;
		}
	}
}

/* ---- completer: ACKs, NAKs and responses -------------------------------- */

/**
 * urdma_req_psn_outstanding - may an ACK or a NAK name @psn?
 * @w: the requester
 * @psn: the PSN in its BTH
 *
 * Only a PSN that was sent and is not yet acknowledged: after w->comp.acked and
 * before w->req.psn_max.  Anything else is stale, a duplicate, or forged, and
 * changes nothing.
 */
bool urdma_req_psn_outstanding(const struct urdma_wire *w, u32 psn)
{
	return urdma_psn_diff(psn, w->comp.acked) > 0 &&
	       urdma_psn_diff(psn, w->req.psn_max) < 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_req_psn_outstanding);

/*
 * An ACK for @psn: everything up to it arrived.  The window opens by the
 * PSNs it newly covers, and it ends the round trip being timed if it
 * covers that PSN.
 */
static void urdma_req_acked(struct urdma_engine *eng, struct urdma_qp *qp,
			    u32 psn)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_cc *cc = &w->cc;

	if (!urdma_req_psn_outstanding(w, psn))
		return;
	if (cc->timing && urdma_psn_diff(psn, cc->rtt_psn) >= 0) {
		u64 rtt = ktime_to_ns(ktime_sub(ktime_get(), cc->rtt_sent));

		cc->timing = false;
		urdma_cc_rtt(cc, rtt);
		urdma_count(eng, URDMA_CNT_RTT_SAMPLES);
		urdma_count_add(eng, URDMA_CNT_RTT_US, div_u64(rtt, NSEC_PER_USEC));
	}
	urdma_cc_acked(cc, psn, urdma_psn_diff(psn, w->comp.acked));
	w->comp.acked = psn;
	w->req.rnr_wait = false;
	urdma_req_progress(qp);
}

/* The in-flight WQE whose PSNs hold @psn, its SQ index in *@idx; or NULL. */
struct urdma_inflight *urdma_req_holder(struct urdma_qp *qp, u32 psn,
					u32 *idx)
{
	struct urdma_wire *w = qp->wire;
	u32 i;

	for (i = qp->sq_cons; i != w->req.next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);
		s32 d = urdma_psn_diff(psn, f->first_psn);

		if (d >= 0 && d < (s32)f->npsn) {
			*idx = i;
			return f;
		}
	}
	return NULL;
}

/*
 * The in-flight WQE that a READ response or atomic ACK with @psn answers:
 * one that is not complete, whose request went out (the PSN is before
 * w->req.psn_max) and that spans @psn.  A READ's PSNs may be behind
 * w->comp.acked: an ACK of a later PSN does not cover missing READ
 * responses.
 */
static struct urdma_inflight *urdma_req_find(struct urdma_qp *qp, u32 psn)
{
	struct urdma_inflight *f;
	u32 i;

	if (urdma_psn_diff(psn, qp->wire->req.psn_max) >= 0)
		return NULL;
	f = urdma_req_holder(qp, psn, &i);
	return f && !f->done ? f : NULL;
}

/*
 * Place response bytes at @off of the WQE's local buffers.  Return: 0;
 * -EIO: the WQE failed (f->done); -EAGAIN: its ODP pages went away since
 * the request was sent and are faulted in again: the response is dropped,
 * and asked for again (a READ's gap, or the timeout).
 */
static int urdma_req_place(struct urdma_engine *eng, struct urdma_qp *qp,
			   struct urdma_inflight *f, u32 off, const void *data,
			   u32 len)
{
	struct urdma_scratch *s = eng->scratch;
	struct urdma_sg src = { .kva = (void *)data, .len = len };
	int nsg, ret;
	u64 total;
	u8 status;

	memcpy(s->swqe.raw, f->wqe, qp->sq.stride);
	status = urdma_wqe_gather(eng, qp, IB_ACCESS_LOCAL_WRITE, &nsg, &total);
	if (status || (u64)off + len > total) {
		f->status = status ? status : IB_WC_LOC_LEN_ERR;
		f->done = true;
		return -EIO;
	}
	urdma_sgl_skip(s->src, nsg, off);
	ret = urdma_copy(s->src, nsg, &src, 1, len);
	if (ret == -EAGAIN) {
		/* Ask for the pages of the responses that follow, too. */
		urdma_sgl_ready(s->src, nsg, min_t(u64, total - off,
						   URDMA_ODP_AHEAD), true);
		return ret;
	}
	if (ret) {
		f->status = IB_WC_LOC_PROT_ERR;
		f->done = true;
		return -EIO;
	}
	return 0;
}

static void urdma_req_read_resp(struct urdma_engine *eng, struct urdma_qp *qp,
				const struct urdma_pkt *pkt)
{
	struct urdma_inflight *f = urdma_req_find(qp, pkt->psn);
	bool last = pkt->flags & URDMA_PF_LAST;
	u32 mtu, off;
	s32 d;

	if (f && (urdma_slot_wqe(f)->opcode == URDMA_WQE_FLUSH ||
		  urdma_slot_wqe(f)->opcode == URDMA_WQE_ATOMIC_WRITE)) {
		/* Their answer: a READ response of no data (or an ACK). */
		if (!pkt->paylen && (pkt->flags & URDMA_PF_AETH))
			urdma_req_acked(eng, qp, pkt->psn);
		return;
	}
	if (!f || urdma_slot_wqe(f)->opcode != URDMA_WQE_RDMA_READ)
		return;
	mtu = f->mtu;
	d = urdma_psn_diff(pkt->psn, f->first_psn);
	if (d != (s32)f->got) {
		/*
		 * A response is missing (lost, or overtaken): ask again from
		 * it at once, as for a sequence NAK; once per gap.
		 */
		if (d > (s32)f->got && f->asked != f->got + 1) {
			f->asked = f->got + 1;
			urdma_count(eng, URDMA_CNT_RETRIES);
			urdma_count(eng, URDMA_CNT_READ_GAPS);
			urdma_req_rewind(qp, urdma_psn_add(f->first_psn,
							   f->got));
		}
		return;
	}
	off = f->got * mtu;
	/* Every response but the last is a full MTU. */
	if ((!last && pkt->paylen != mtu) || off + pkt->paylen > f->len ||
	    (last && off + pkt->paylen != f->len)) {
		f->status = IB_WC_REM_OP_ERR;	/* a broken responder */
		f->done = true;
		return;
	}
	if (pkt->paylen &&
	    urdma_req_place(eng, qp, f, off, pkt->payload, pkt->paylen))
		return;
	f->got++;
	/*
	 * Progress.  MIDDLE responses carry no AETH, so no ACK restarts the
	 * timer; a READ whose responses take longer than the ACK timeout
	 * would otherwise time out while its data is arriving.
	 */
	urdma_req_progress(qp);
	if (last)
		f->done = true;
	if (pkt->flags & URDMA_PF_AETH)
		urdma_req_acked(eng, qp, pkt->psn);
}

static void urdma_req_atomic_ack(struct urdma_engine *eng, struct urdma_qp *qp,
				 const struct urdma_pkt *pkt)
{
	const struct urdma_atmack *ack = urdma_pkt_hdr(pkt, URDMA_H_ATMACK);
	struct urdma_inflight *f = urdma_req_find(qp, pkt->psn);
	u64 orig = be64_to_cpu(ack->orig);
	int ret;

	if (!f || !urdma_wop(urdma_slot_wqe(f)->opcode, URDMA_WOP_RD) ||
	    urdma_slot_wqe(f)->opcode == URDMA_WQE_RDMA_READ)
		return;
	ret = urdma_req_place(eng, qp, f, 0, &orig, sizeof(orig));
	if (ret == -EAGAIN)
		return;	/* sent again: the responder answers from its cache */
	if (!ret)
		f->done = true;
	urdma_req_acked(eng, qp, pkt->psn);
}

static u8 urdma_nak_status(u8 code)
{
	switch (code) {
	case URDMA_NAK_INV_REQ:
		return IB_WC_REM_INV_REQ_ERR;
	case URDMA_NAK_REM_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	case URDMA_NAK_INV_RD_REQ:
		return IB_WC_REM_INV_RD_REQ_ERR;
	default:
		return IB_WC_REM_OP_ERR;
	}
}

static void urdma_req_ack(struct urdma_engine *eng, struct urdma_qp *qp,
			  const struct urdma_pkt *pkt)
{
	const struct urdma_aeth *aeth = urdma_pkt_hdr(pkt, URDMA_H_AETH);
	u8 syn = FIELD_GET(URDMA_AETH_SYN, be32_to_cpu(aeth->w));
	u8 val = FIELD_GET(URDMA_SYN_VAL, syn);
	struct urdma_wire *w = qp->wire;
	u32 prev = urdma_psn_add(pkt->psn, URDMA_PSN_MASK);	/* psn - 1 */

	if (!urdma_req_psn_outstanding(w, pkt->psn))
		return;		/* stale, duplicate, never sent, or forged */
	switch (FIELD_GET(URDMA_SYN_TYPE, syn)) {
	case URDMA_SYN_ACK:
		urdma_req_acked(eng, qp, pkt->psn);
		break;
	case URDMA_SYN_RNR:
		urdma_req_acked(eng, qp, prev);
		urdma_count(eng, URDMA_CNT_RNR_WAITS);
		if (!urdma_retry_spend(&w->comp.rnr_left, w->comp.rnr_left ==
				       URDMA_RNR_RETRY_FOREVER)) {
			urdma_req_fail(qp, pkt->psn, IB_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		urdma_req_rewind(qp, pkt->psn);
		w->req.rnr_wait = true;
		w->req.resume_at = ktime_add_ns(ktime_get(), urdma_rnr_ns(val));
		break;
	case URDMA_SYN_NAK:
		urdma_req_acked(eng, qp, prev);
		if (val == URDMA_NAK_PSN_SEQ) {
			urdma_count(eng, URDMA_CNT_RETRIES);
			urdma_count(eng, URDMA_CNT_SEQ_NAKS_RCVD);
			if (urdma_cc_loss(&w->cc, w->req.psn_max))
				urdma_count(eng, URDMA_CNT_CWND_CUTS);
			urdma_req_rewind(qp, pkt->psn);
		} else {
			urdma_req_fail(qp, pkt->psn, urdma_nak_status(val));
		}
		break;
	default:
		break;
	}
}

/**
 * urdma_req_cnp - the peer saw our packets marked CE: congestion
 * @eng: the QP's engine
 * @qp: an RC QP on the wire
 *
 * The window is halved, once per episode, as for a drop by the local
 * queue; nothing was lost, so nothing is sent again.  Not with ECN off,
 * nor with nothing in flight: then there is nothing the notice can be
 * about.
 */
void urdma_req_cnp(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;

	if (!urdma_wire_ecn() || !w->req.req_init ||
	    !urdma_req_psn_outstanding(w, urdma_psn_add(w->comp.acked, 1)))
		return;
	if (urdma_cc_congestion(&w->cc, w->req.psn_max))
		urdma_count(eng, URDMA_CNT_CWND_CUTS);
}

/* A response packet for the requester. */
void urdma_req_rx(struct urdma_engine *eng, struct urdma_qp *qp,
		  const struct urdma_pkt *pkt)
{
	if (!urdma_is_reliable(qp) || !qp->wire->req.req_init)
		return;
	if (pkt->flags & URDMA_PF_READ)
		urdma_req_read_resp(eng, qp, pkt);
	else if (pkt->flags & URDMA_PF_ATOMIC)
		urdma_req_atomic_ack(eng, qp, pkt);
	else
		urdma_req_ack(eng, qp, pkt);
}
