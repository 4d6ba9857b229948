// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine's completion stage: CQEs into a CQ ring, and the completion
 * of a send WQE, for the local path and the wire path alike.
 */
#include <linux/atomic.h>
#include <linux/ktime.h>

#include "urdma.h"
#include "exec.h"

/* ---- completions ------------------------------------------------------------ */

/*
 * When the engine completed it, on the device clock (CLOCK_MONOTONIC as
 * the CQ's creator reads it: its time namespace may shift it) and on the
 * wall clock.
 */
static void urdma_cqe_stamp(struct urdma_cq *cq, struct urdma_cqe *slot)
{
	struct urdma_cqe_ts *ts = container_of(slot, struct urdma_cqe_ts, cqe);

	ts->ts_raw = ktime_get_ns() + cq->ts_offset;
	ts->ts_wall = ktime_get_real_ns();
}

/**
 * urdma_cq_push - write a completion and raise the event it arms
 * @eng: the engine (counters)
 * @cq: the CQ
 * @src: the CQE; owner is set here
 * @solicited: for solicited-only arming
 *
 * Return: false if the CQ was full; the CQE is lost and the CQ is in error.
 */
bool urdma_cq_push(struct urdma_engine *eng, struct urdma_cq *cq,
		   struct urdma_cqe *src, bool solicited)
{
	struct urdma_cq_db *db = cq->db.kva;
	struct urdma_cqe *slot;
	unsigned long flags;
	bool overflow = false, first = false;
	u32 arm, disarmed;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->prod - READ_ONCE(db->cons) >= cq->ring.nent) {
		overflow = true;
		first = !cq->overflow;
		cq->overflow = true;
	} else {
		slot = urdma_ring_entry(&cq->ring, cq->prod);
		if (cq->ring.stride == URDMA_CQE_TS_SIZE)
			urdma_cqe_stamp(cq, slot);
		src->owner = urdma_ring_phase(&cq->ring, cq->prod);
		memcpy(slot, src, offsetof(struct urdma_cqe, owner));
		/* Every field before the owner bit that validates them. */
		smp_store_release(&slot->owner, src->owner);
		cq->prod++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow) {
		urdma_count(eng, URDMA_CNT_CQ_OVERFLOWS);
		if (first && cq->ibcq.event_handler) {
			struct ib_event ev = {
				.device = cq->ibcq.device,
				.element.cq = &cq->ibcq,
				.event = IB_EVENT_CQ_ERR,
			};

			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
		return false;
	}
	urdma_count(eng, URDMA_CNT_CQES);
	if (src->status != IB_WC_SUCCESS)
		urdma_count(eng, URDMA_CNT_ERR_CQES);

	/* The CQE before the arm bits; pairs with the consumer's arming. */
	smp_mb();
	arm = READ_ONCE(db->arm);
	if (!(arm & URDMA_CQ_ARM_NEXT) &&
	    !((arm & URDMA_CQ_ARM_SOLICITED) &&
	      (solicited || src->status != IB_WC_SUCCESS)))
		return true;
	disarmed = arm & ~(URDMA_CQ_ARM_NEXT | URDMA_CQ_ARM_SOLICITED);
	if (cmpxchg(&db->arm, arm, disarmed) == arm && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return true;
}

/* A send completion; false if the CQ overflowed. */
bool urdma_complete_send(struct urdma_engine *eng, struct urdma_qp *qp,
			 u64 wr_id, u8 opcode, u32 byte_len, u8 status)
{
	struct urdma_cqe cqe = {
		.wr_id = wr_id,
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
		.opcode = urdma_wqe_op(opcode)->cqe_opcode,
		.status = status,
	};

	return urdma_cq_push(eng, to_ucq(qp->ibqp.send_cq), &cqe, false);
}
