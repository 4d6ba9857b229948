// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RC and UC requester's retransmission: go-back-N from a PSN (a NAK,
 * an RNR NAK, the local ACK timeout), where a retransmission resumes, the
 * retransmit timer with its adaptive RTO (wire_cc.c) under IBTA's ceiling,
 * and the tail loss probe.  wire_req.c sends; wire_comp.c takes the ACKs
 * and NAKs that call urdma_req_rewind() and urdma_req_progress().
 */
#include <kunit/visibility.h>

#include "exec.h"
#include "wire_rc.h"

/* ---- requester: retransmission ------------------------------------------ */
/* Go back to @psn (go-back-N): the WQE holding it is sent again from there. */
void urdma_req_rewind(struct urdma_qp *qp, u32 psn)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_inflight *f;
	u32 i;
	s32 d;

	f = urdma_req_holder(qp, psn, &i);
	if (!f)
		return;
	d = urdma_psn_diff(psn, f->first_psn);
	w->req.cur = i;
	w->req.off = d * f->mtu;
	if (urdma_slot_wqe(f)->opcode == URDMA_WQE_RDMA_READ)
		f->got = d;
	w->req.psn = psn;
	w->req.since_ackreq = 0;
	/* Its ACK could answer either sending: no RTT sample. */
	w->cc.timing = false;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_req_rewind);

/*
 * The ceiling of the retransmit interval (wire_cc.c adapts it below).
 * IBTA's local ACK timeout (4.096 us * 2^timeout) with a floor: below a
 * few milliseconds a software peer, or a TCG guest, would see retransmit
 * storms.  Timeout 0 means no limit on the retries; they still come, every
 * half second at most.
 */
#define URDMA_RTO_MIN_NS	(5 * NSEC_PER_MSEC)
#define URDMA_RTO_INF_NS	(500 * NSEC_PER_MSEC)

u64 urdma_rto_ceil_ns(const struct urdma_qp *qp)
{
	if (!qp->attr.timeout)
		return URDMA_RTO_INF_NS;
	return max_t(u64, urdma_ack_timeout_ns(qp->attr.timeout),
		     URDMA_RTO_MIN_NS);
}

/*
 * Where a retransmission after a timeout starts: the first PSN of the
 * oldest WQE that is not complete and not acknowledged (a READ's missing
 * responses are not covered by ACKs of later PSNs).
 */
VISIBLE_IF_KUNIT u32 urdma_req_resume_psn(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	u32 next = urdma_psn_add(w->comp.acked, 1), i;

	for (i = qp->sq_cons; i != w->req.next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);

		if (f->done || !f->npsn)
			continue;
		if (urdma_wop(urdma_slot_wqe(f)->opcode, URDMA_WOP_RD))
			return urdma_psn_add(f->first_psn, f->got);
		if (urdma_psn_diff(urdma_psn_add(f->first_psn, f->npsn - 1),
				   w->comp.acked) > 0)
			return urdma_psn_diff(f->first_psn, next) > 0 ?
			       f->first_psn : next;
	}
	return next;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_req_resume_psn);

/*
 * Arm the retransmit timer; progress pushes it out.  The adaptive RTO
 * times a request's round trip.  While a READ or an atomic is outstanding
 * the requester waits on the responder's pace instead (a READ's responses
 * may come one per ACK timeout on a slow link): the whole local ACK
 * timeout.
 */
void urdma_req_arm(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	u64 ceil = urdma_rto_ceil_ns(qp);

	w->req.rto = urdma_req_rd_count(qp) ? ceil : urdma_cc_rto(&w->cc, ceil);
	w->req.timeout_at = ktime_add_ns(ktime_get(), w->req.rto);
}

/*
 * Progress: the responder answered something new (an ACK of a later PSN,
 * or the READ response that was due next), or a WQE completed.  retry_cnt
 * bounds the timeouts in a row without progress (as rxe's
 * reset_retry_counters() does), not those of one WQE: on a lossy link a
 * READ of many responses, or a long SEND, can see more timeouts than that
 * and still move.
 */
void urdma_req_progress(struct urdma_qp *qp)
{
	qp->wire->comp.retry_left = qp->attr.retry_cnt;
	qp->wire->cc.backoff = 0;
	qp->wire->req.probed = false;
	urdma_req_arm(qp);
}

/*
 * The adaptive RTO ran out: send the last packet sent again, asking for an
 * ACK, instead of going back N at once (a tail loss probe, RFC 8985).  If
 * the packets before it arrived and only their ACK is late (a responder
 * host that did not run for a while), the probe is a duplicate and draws
 * an ACK of them all: the window stays, and nothing else is sent again.
 * If one was lost, the probe draws the sequence NAK that recovers it.
 * Only a SEND's or a WRITE's packet is a probe (a READ or an atomic has the
 * whole ACK timeout anyway).  Return: whether a probe went out.
 */
static bool urdma_req_probe(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	u32 cur = w->req.cur, off = w->req.off, psn = w->req.psn;
	u32 since = w->req.since_ackreq;
	u32 last = urdma_psn_add(w->req.psn_max, URDMA_PSN_MASK);
	bool ok, wqe_sent, dropped = false;
	struct urdma_inflight *f;
	u32 i;
	u8 op;

	if (!urdma_req_psn_outstanding(w, last))
		return false;
	/* The WQE that holds it: a SEND or a WRITE under way. */
	f = urdma_req_holder(qp, last, &i);
	if (!f || f->done)
		return false;
	op = urdma_slot_wqe(f)->opcode;
	if (urdma_wqe_op(op)->wire[URDMA_WIRE_FIRST] == URDMA_WIRE_NONE)
		return false;
	urdma_req_rewind(qp, last);
	w->req.probe = true;
	/* Sent: built, and not dropped by the local queue. */
	ok = !urdma_req_pkt(eng, qp, f, &wqe_sent, &dropped) &&
	     w->req.psn != last;
	w->req.probe = false;
	/* Back where the requester was: every PSN up to psn_max is out. */
	w->req.cur = cur;
	w->req.off = off;
	w->req.psn = psn;
	w->req.since_ackreq = since;
	return ok;
}

/*
 * The RNR wait and the retransmit timer.  Return: false if the requester
 * sends nothing this turn: it waits out an RNR NAK, or retries ran out and
 * the oldest WQE failed.
 */
bool urdma_req_timers(struct urdma_engine *eng, struct urdma_qp *qp, ktime_t now)
{
	struct urdma_wire *w = qp->wire;

	if (w->req.rnr_wait) {
		if (ktime_before(now, w->req.resume_at)) {
			if (ktime_before(w->req.resume_at, eng->deadline))
				eng->deadline = w->req.resume_at;
			return false;
		}
		w->req.rnr_wait = false;
		urdma_req_arm(qp);
	} else if (urdma_is_reliable(qp) && qp->sq_cons != w->req.next &&
		   ktime_after(now, w->req.timeout_at)) {
		/*
		 * No progress within the RTO.  Only a timer that ran the
		 * whole local ACK timeout spends a retry: an adaptive RTO
		 * resends sooner, but the QP fails no sooner than IBTA says.
		 */
		bool early = w->req.rto < urdma_rto_ceil_ns(qp);

		urdma_count(eng, URDMA_CNT_RETRIES);
		urdma_count(eng, URDMA_CNT_TIMEOUTS);
		if (early)
			urdma_count(eng, URDMA_CNT_EARLY_TIMEOUTS);
		/* First a probe, then, if it draws nothing, go back. */
		if (early && !w->req.probed && urdma_req_probe(eng, qp)) {
			urdma_count(eng, URDMA_CNT_PROBES);
			w->req.probed = true;
			if (w->cc.backoff < 32)
				w->cc.backoff++;
			urdma_req_arm(qp);
			return true;
		}
		urdma_cc_timeout(&w->cc, w->req.psn_max);
		if (!early && !urdma_retry_spend(&w->comp.retry_left,
						 !qp->attr.timeout)) {
			urdma_req_fail_oldest(qp, IB_WC_RETRY_EXC_ERR);
			return false;
		}
		urdma_req_rewind(qp, urdma_req_resume_psn(qp));
		urdma_req_arm(qp);
	}
	return true;
}
