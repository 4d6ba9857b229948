// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine's SQ stage: a QP's turn in a pass.  A QP in RTS executes
 * its send WQEs in order (exec.c) or hands them to the wire requester
 * (wire_rc.c); one that waits (RNR, no responder) retries on a timer; a
 * QP in ERROR has its queues flushed.  Also: the QP state changes the
 * engine makes (ERROR, and the fatal event), and the IBTA timers.
 */
#include <linux/atomic.h>

#include "urdma.h"
#include "exec.h"

/* ---- QP state --------------------------------------------------------------- */

static void urdma_qp_event(struct urdma_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/**
 * urdma_qp_set_error - move a QP to ERROR from the engine
 * @qp: the QP; its engine flushes its queues from the next pass on
 *
 * Return: true if this call moved it (it was not in ERROR already).
 */
bool urdma_qp_set_error(struct urdma_qp *qp)
{
	enum ib_qp_state old = xchg(&qp->attr.qp_state, IB_QPS_ERR);

	if (old == IB_QPS_ERR)
		return false;
	if (qp->eng) {
		urdma_engine_count_err(qp, false);
		urdma_engine_notify(qp->eng);
	}
	return true;
}

/**
 * urdma_qp_fatal - a QP's ring is garbage: ERROR, and IB_EVENT_QP_FATAL
 * @qp: the QP
 *
 * The event is raised on the transition only.  A QP in ERROR whose
 * producer index stays garbage is seen on every engine pass, and each
 * event is a GFP_ATOMIC allocation in uverbs' queue, unbounded: one per
 * pass would let a user exhaust kernel memory.
 */
void urdma_qp_fatal(struct urdma_qp *qp)
{
	if (urdma_qp_set_error(qp))
		urdma_qp_event(qp, IB_EVENT_QP_FATAL);
}

/* ---- timers ----------------------------------------------------------------- */

/* IBTA table 45: the RNR timer, in units of 10 us. */
static const u16 urdma_rnr_10us[32] = {
	65535, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
	16384, 24576, 32768, 49152,
};

/* IBTA table 45 in nanoseconds. */
u64 urdma_rnr_ns(u8 rnr_timer)
{
	return urdma_rnr_10us[rnr_timer & 31] * 10ULL * NSEC_PER_USEC;
}

/* Local ACK timeout: 4.096 us * 2^timeout; 0 means infinite (poll each ms). */
u64 urdma_ack_timeout_ns(u8 timeout)
{
	if (!timeout)
		return NSEC_PER_MSEC;
	return 4096ULL << min_t(u8, timeout, 31);
}

/* Wait before retrying the WQE at the head.  Return: false if retries are out. */
static bool urdma_qp_wait(struct urdma_engine *eng, struct urdma_qp *qp,
			  enum urdma_exec_result why, u8 rnr_timer)
{
	u64 ns;

	if (!qp->tries_set) {
		qp->rnr_left = qp->attr.rnr_retry;
		qp->retry_left = qp->attr.retry_cnt;
		qp->tries_set = true;
	}
	if (why == URDMA_EXEC_FAULT) {
		/* Not a retry: the pages come; the work item wakes us too. */
		urdma_count(eng, URDMA_CNT_ODP_WAITS);
		ns = URDMA_ODP_WAIT_NS;
	} else if (why == URDMA_EXEC_RNR) {
		urdma_count(eng, URDMA_CNT_RNR_WAITS);
		if (!urdma_retry_spend(&qp->rnr_left, qp->rnr_left ==
				       URDMA_RNR_RETRY_FOREVER))
			return false;
		ns = urdma_rnr_ns(rnr_timer);
	} else {
		urdma_count(eng, URDMA_CNT_RETRIES);
		if (!urdma_retry_spend(&qp->retry_left, !qp->attr.timeout))
			return false;
		ns = urdma_ack_timeout_ns(qp->attr.timeout);
	}
	qp->wait_until = ktime_add_ns(ktime_get(), ns);
	qp->waiting = true;
	return true;
}

/* ---- a QP's turn in a pass -------------------------------------------------- */

/* Retire the SQ's head WQE. */
static void urdma_sq_retire(struct urdma_qp *qp)
{
	struct urdma_qp_db *db = qp->db.kva;

	qp->sq_cons++;
	qp->waiting = false;
	qp->tries_set = false;
	/* The WQE was copied: its slot may be reused. */
	smp_store_release(&db->sq_cons, qp->sq_cons);
}

/**
 * urdma_sq_done - retire the SQ's head WQE and complete it
 * @eng: the engine thread
 * @qp: its QP
 * @wqe: the engine's copy of the WQE
 * @byte_len: the CQE's byte_len
 * @status: how it ended
 *
 * The one send-completion routine of the local path and the wire path.
 * The slot is retired first: a consumer that sees the completion may post
 * into it at once.  A failed WQE puts the QP in ERROR before its CQE shows
 * why; so does a CQ that overflows.
 *
 * Return: the status the WQE ended with: @status, or IB_WC_GENERAL_ERR if
 * its CQE did not fit.
 */
u8 urdma_sq_done(struct urdma_engine *eng, struct urdma_qp *qp,
		 const struct urdma_send_wqe *wqe, u32 byte_len, u8 status)
{
	urdma_sq_retire(qp);
	urdma_count(eng, URDMA_CNT_WQES);
	if (status != IB_WC_SUCCESS)
		urdma_qp_set_error(qp);
	if ((status != IB_WC_SUCCESS || (wqe->flags & URDMA_WQE_SIGNALED)) &&
	    !urdma_complete_send(eng, qp, wqe->wr_id, wqe->opcode, byte_len,
				 status)) {
		urdma_qp_set_error(qp);
		status = IB_WC_GENERAL_ERR;
	}
	return status;
}

/* A producer index more than a ring ahead is garbage: the QP fails. */
static bool urdma_sq_pending(struct urdma_qp *qp, u32 *avail)
{
	struct urdma_qp_db *db = qp->db.kva;
	/* Pairs with the poster's release: WQEs before the index. */
	u32 prod = smp_load_acquire(&db->sq_prod);

	*avail = prod - qp->sq_cons;
	if (*avail > qp->sq.nent) {
		*avail = 0;
		urdma_qp_fatal(qp);
		return false;
	}
	return *avail;
}

static int urdma_qp_send(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = &s->swqe.hdr;
	enum urdma_exec_result res;
	int done = 0;
	u32 avail, byte_len;
	u8 status;

	if (qp->waiting) {
		if (ktime_before(ktime_get(), qp->wait_until)) {
			if (ktime_before(qp->wait_until, eng->deadline))
				eng->deadline = qp->wait_until;
			return 0;
		}
	}

	while (done < URDMA_QP_BUDGET && urdma_sq_pending(qp, &avail)) {
		memcpy(s->swqe.raw, urdma_ring_entry(&qp->sq, qp->sq_cons),
		       qp->sq.stride);
		res = urdma_exec(eng, qp, &status, &byte_len);
		if (res == URDMA_EXEC_DEFER)
			break;
		if (res != URDMA_EXEC_DONE) {
			u8 rnr_timer = 0;
			struct urdma_peer peer;

			if (res == URDMA_EXEC_RNR &&
			    !urdma_find_peer(qp, wqe, &peer))
				rnr_timer = READ_ONCE(peer.qp->attr.min_rnr_timer);
			if (urdma_qp_wait(eng, qp, res, rnr_timer)) {
				if (ktime_before(qp->wait_until, eng->deadline))
					eng->deadline = qp->wait_until;
				break;
			}
			status = res == URDMA_EXEC_RNR ?
				 IB_WC_RNR_RETRY_EXC_ERR : IB_WC_RETRY_EXC_ERR;
		}
		done++;
		if (urdma_sq_done(eng, qp, wqe, byte_len, status) !=
		    IB_WC_SUCCESS)
			break;
	}
	return done;
}

/*
 * ERROR: complete every posted WQE with WR_FLUSH_ERR (IBTA 10.3.1), the
 * receive WQE the wire responder holds first (urdma_resp_flush()).  A QP
 * on an SRQ takes no receive WQE from it any more: it says so once with
 * the Last WQE Reached event (IBTA 11.6.3.3, o11-5.2), which
 * ib_drain_qp() waits for (up to 60 s) before it lets the QP go.
 */
static int urdma_qp_flush(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_scratch *s = eng->scratch;
	struct urdma_cqe cqe;
	u32 max_sge, avail;
	int done = 0;

	qp->waiting = false;
	urdma_resp_flush(eng, qp);
	if (qp->ibqp.srq && !qp->last_wqe_told) {
		qp->last_wqe_told = true;
		urdma_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	}
	while (done < URDMA_QP_BUDGET && urdma_engine_charge(eng, 0) &&
	       urdma_sq_pending(qp, &avail)) {
		/* Only the header: wr_id and opcode. */
		memcpy(&s->swqe.hdr, urdma_ring_entry(&qp->sq, qp->sq_cons),
		       sizeof(s->swqe.hdr));
		urdma_sq_retire(qp);
		urdma_complete_send(eng, qp, s->swqe.hdr.wr_id,
				    s->swqe.hdr.opcode, 0, IB_WC_WR_FLUSH_ERR);
		done++;
	}
	while (qp->rq.nent && done < URDMA_QP_BUDGET &&
	       urdma_engine_charge(eng, 0) &&
	       !urdma_take_recv(eng, qp, NULL, &max_sge, 0)) {
		memset(&cqe, 0, sizeof(cqe));
		cqe.wr_id = s->rwqe.hdr.wr_id;
		cqe.opcode = URDMA_CQE_RECV;
		cqe.status = IB_WC_WR_FLUSH_ERR;
		cqe.qp_num = qp->ibqp.qp_num;
		urdma_cq_push(eng, to_ucq(qp->ibqp.recv_cq), &cqe, false);
		done++;
	}
	return done;
}

/**
 * urdma_qp_run - a QP's turn in an engine pass
 * @eng: the engine thread
 * @qp: one of its QPs
 *
 * Return: how many WQEs it executed or flushed (0: nothing to do).
 */
int urdma_qp_run(struct urdma_engine *eng, struct urdma_qp *qp)
{
	switch (READ_ONCE(qp->attr.qp_state)) {
	case IB_QPS_RTR:
		return qp->use_wire ? urdma_wire_run(eng, qp) : 0;
	case IB_QPS_RTS:
		if (qp->use_wire)
			return urdma_wire_run(eng, qp);
		return urdma_qp_send(eng, qp);
	case IB_QPS_ERR:
		return urdma_qp_flush(eng, qp);
	default:
		return 0;
	}
}
