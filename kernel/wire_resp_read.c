// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RC responder's resource cache (IBTA 9.7.5.1.3, "responder
 * resources"): READs answered with READ responses, atomics executed and
 * answered with atomic ACKs, FLUSH and ATOMIC_WRITE answered with READ
 * responses of no data; all sent in PSN order, and a duplicate answered
 * again from the cache, never executed twice.  wire_resp.c takes the
 * requests in order and calls in here.
 */
#include "exec.h"
#include "wire_rc.h"

/* ---- responder: READs, atomics and their answers ------------------------ */

/* Whether a READ response before @psn is still to be sent. */
bool urdma_resp_reads_before(const struct urdma_wire *w, u32 psn)
{
	u32 i;

	for (i = 0; i < w->resp.nres; i++)
		if (w->resp.res[i].busy && urdma_psn_diff(w->resp.res[i].psn, psn) < 0)
			return true;
	return false;
}

/*
 * The entry for a new READ, atomic, FLUSH or ATOMIC_WRITE: the oldest one
 * whose responses are all sent (a busy READ is never cut short; only a
 * requester beyond every limit finds them all busy).
 */
static struct urdma_rd_res *urdma_res_new(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_rd_res *r = &w->resp.res[w->resp.res_next];
	u32 i;

	for (i = 0; i < w->resp.nres && r->busy; i++) {
		w->resp.res_next = (w->resp.res_next + 1) % w->resp.nres;
		r = &w->resp.res[w->resp.res_next];
	}
	w->resp.res_next = (w->resp.res_next + 1) % w->resp.nres;
	memset(r, 0, sizeof(*r));
	r->mtu = urdma_qp_mtu(qp);
	r->pdn = w->resp.pdn;
	return r;
}

static struct urdma_rd_res *urdma_res_find(struct urdma_wire *w, u32 psn)
{
	u32 i;

	for (i = 0; i < w->resp.nres; i++) {
		struct urdma_rd_res *r = &w->resp.res[i];
		s32 d = urdma_psn_diff(psn, r->psn);

		if (r->npsn && d >= 0 && d < (s32)r->npsn)
			return r;
	}
	return NULL;
}

static void urdma_send_atomic_ack(struct urdma_engine *eng,
				  struct urdma_qp *qp, struct urdma_rd_res *r)
{
	struct urdma_tx tx;
	struct urdma_atmack *ack;

	if (urdma_wire_pkt(qp, URDMA_OP_ATOMIC_ACK, r->psn, 0, false, false,
			   &tx))
		return;
	urdma_put_aeth(&tx, urdma_syn_ack(), r->msn);
	ack = urdma_tx_hdr(&tx, URDMA_H_ATMACK);
	ack->orig = cpu_to_be64(r->orig);
	urdma_wire_send(eng, qp, &tx);
}

/*
 * An atomic's ACK: at once, unless answers before it are still to go;
 * then urdma_resp_reads() sends it after them.
 */
static void urdma_resp_atomic_ack(struct urdma_engine *eng,
				  struct urdma_qp *qp, struct urdma_rd_res *r)
{
	if (urdma_resp_reads_before(qp->wire, r->psn)) {
		r->busy = true;
		return;
	}
	urdma_send_atomic_ack(eng, qp, r);
}

/* READ or atomic request.  Return: 0, or a NAK code. */
int urdma_resp_rd(struct urdma_engine *eng, struct urdma_qp *qp,
		  const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_rd_res *r;
	struct urdma_peer peer;
	struct urdma_sg sg;
	u8 status;

	urdma_resp_peer(qp, w->resp.pdn, &peer);
	if (pkt->flags & URDMA_PF_READ) {
		const struct urdma_reth *reth = urdma_pkt_hdr(pkt,
							       URDMA_H_RETH);
		u64 va = be64_to_cpu(reth->va);
		u32 rkey = be32_to_cpu(reth->rkey), len = be32_to_cpu(reth->len);

		if (!(READ_ONCE(qp->attr.qp_access_flags) &
		      IB_ACCESS_REMOTE_READ) || len > URDMA_MAX_MSG_SIZE)
			return URDMA_NAK_INV_REQ;
		if (len && !urdma_rkey_sg(&peer, rkey, va, len,
					  IB_ACCESS_REMOTE_READ, &sg))
			return URDMA_NAK_REM_ACCESS;
		/*
		 * The first ODP pages are asked for now (each response looks
		 * for its own, and waits for them).
		 */
		if (len && urdma_sgl_ready(&sg, 1, min_t(u32, len, URDMA_ODP_AHEAD),
					   false) == -EFAULT)
			return URDMA_NAK_REM_ACCESS;
		r = urdma_res_new(qp);
		r->psn = pkt->psn;
		r->npsn = urdma_msg_npsn(URDMA_WQE_RDMA_READ, len, r->mtu);
		r->va = va;
		r->rkey = rkey;
		r->len = len;
		r->msn = ++w->resp.msn;
		r->busy = true;
		w->resp.epsn = urdma_psn_add(pkt->psn, r->npsn);
	} else {
		const struct urdma_atmeth *a = urdma_pkt_hdr(pkt,
							      URDMA_H_ATMETH);
		u64 *target;

		if (!(READ_ONCE(qp->attr.qp_access_flags) &
		      IB_ACCESS_REMOTE_ATOMIC))
			return URDMA_NAK_INV_REQ;
		target = urdma_atomic_target(&peer, be64_to_cpu(a->va),
					     be32_to_cpu(a->rkey),
					     IB_ACCESS_REMOTE_ATOMIC, &status);
		if (!target && status == URDMA_WC_ODP_WAIT)
			return -EAGAIN;	/* RNR NAK */
		if (!target)
			return status == IB_WC_REM_ACCESS_ERR ?
			       URDMA_NAK_REM_ACCESS : URDMA_NAK_INV_REQ;
		r = urdma_res_new(qp);
		r->psn = pkt->psn;
		r->npsn = 1;
		r->atomic = true;
		if ((pkt->opcode & URDMA_OP_MASK) == URDMA_OP_CMP_SWP)
			r->orig = cmpxchg64(target, be64_to_cpu(a->cmp),
					    be64_to_cpu(a->swap_add));
		else
			r->orig = atomic64_fetch_add(be64_to_cpu(a->swap_add),
						     (atomic64_t *)target);
		r->msn = ++w->resp.msn;
		w->resp.epsn = urdma_psn_add(pkt->psn, 1);
		/* The ACK coalesced before it goes first, if it may. */
		urdma_resp_flush_ack(eng, qp);
		urdma_resp_atomic_ack(eng, qp, r);
	}
	return 0;
}

/*
 * A coalesced ACK of a PSN before @psn goes before the answer at @psn, once
 * the answers before it are sent: it must not come after the responses of
 * a later READ (see urdma_wire_run()).  Return: packets sent.
 */
static int urdma_resp_ack_first(struct urdma_engine *eng, struct urdma_qp *qp,
				u32 psn)
{
	struct urdma_wire *w = qp->wire;

	if (w->resp.ack_pending && urdma_psn_diff(psn, w->resp.ack_psn) > 0)
		return urdma_resp_flush_ack(eng, qp);
	return 0;
}

/*
 * Send the answers due, in PSN order, a budget at a time: READ responses,
 * atomic ACKs, and the empty READ responses of FLUSH and ATOMIC_WRITE.
 * An answer never overtakes an earlier one: a requester takes an ACK
 * beyond a READ whose responses have not come for their loss (rxe's
 * completer then retries the READ, and spends its retry budget).
 * Return: packets sent.
 */
int urdma_resp_reads(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_peer peer;
	int sent = 0, ret;
	u32 i;

	for (i = 0; i < w->resp.nres && sent < URDMA_WIRE_BUDGET; i++) {
		/* Oldest first: the entry after the newest. */
		struct urdma_rd_res *r = &w->resp.res[(w->resp.res_next + i) % w->resp.nres];

		urdma_resp_peer(qp, r->pdn, &peer);
		if (r->busy && r->atomic) {
			sent += urdma_resp_ack_first(eng, qp, r->psn);
			urdma_send_atomic_ack(eng, qp, r);
			r->busy = false;
			sent++;
		}
		while (r->busy && sent < URDMA_WIRE_BUDGET) {
			u32 pay = min(r->len - r->off, r->mtu);
			bool first = !r->off, last = r->off + pay >= r->len;
			u32 psn = urdma_psn_add(r->psn, r->off / r->mtu);
			struct urdma_sg src;
			struct urdma_tx tx;
			u8 op;

			sent += urdma_resp_ack_first(eng, qp, psn);
			if (!urdma_engine_charge(eng, pay))
				return sent;
			op = first && last ? URDMA_OP_READ_RESP_ONLY :
			     first ? URDMA_OP_READ_RESP_FIRST :
			     last ? URDMA_OP_READ_RESP_LAST :
				    URDMA_OP_READ_RESP_MIDDLE;
			ret = 0;
			if (pay && !urdma_rkey_sg(&peer, r->rkey, r->va + r->off,
						  pay, IB_ACCESS_REMOTE_READ,
						  &src))
				ret = -EFAULT;
			else if (pay)
				ret = urdma_sgl_ready(&src, 1, pay, false);
			if (ret == -EFAULT) {
				/* The memory went away under the READ. */
				r->busy = false;
				urdma_send_ack(eng, qp,
					       urdma_syn_nak(URDMA_NAK_REM_ACCESS),
					       psn);
				break;
			}
			/* ODP pages on their way: a later pass goes on. */
			if (ret == -EAGAIN)
				return sent;
			if (urdma_wire_pkt(qp, op, psn, pay, false, false, &tx))
				return sent;
			/* The READ counts as a message at its last response. */
			if (urdma_opcodes[tx.opcode].flags & URDMA_PF_AETH)
				urdma_put_aeth(&tx, urdma_syn_ack(),
					       last ? r->msn : r->msn - 1);
			if (pay && urdma_tx_copy(&tx, &src, 1, pay)) {
				r->busy = false;
				urdma_send_ack(eng, qp,
					       urdma_syn_nak(URDMA_NAK_REM_OP),
					       psn);
				break;
			}
			urdma_wire_send(eng, qp, &tx);
			sent++;
			r->off += pay;
			if (last)
				r->busy = false;
		}
	}
	return sent;
}

/*
 * FLUSH, or ATOMIC_WRITE (one aligned 8-byte store, ordered after earlier
 * writes), as on the local path.  A duplicate is answered again from the
 * resource cache, never executed twice.  Return: 0, a NAK code, or
 * -EAGAIN (an RNR NAK) while ODP pages are faulted in.
 */
int urdma_resp_flush_or_atomic_write(struct urdma_qp *qp,
				     const struct urdma_pkt *pkt)
{
	const struct urdma_reth *reth = urdma_pkt_hdr(pkt, URDMA_H_RETH);
	u64 va = be64_to_cpu(reth->va);
	u32 rkey = be32_to_cpu(reth->rkey);
	struct urdma_wire *w = qp->wire;
	struct urdma_rd_res *r;
	struct urdma_peer peer;
	u64 value;
	u8 status;

	urdma_resp_peer(qp, w->resp.pdn, &peer);
	if (pkt->flags & URDMA_PF_FLUSH) {
		u32 feth = be32_to_cpu(((const struct urdma_feth *)
					urdma_pkt_hdr(pkt, URDMA_H_FETH))->w);

		status = urdma_flush(&peer, FIELD_GET(URDMA_FETH_PLT, feth),
				     FIELD_GET(URDMA_FETH_SEL, feth), rkey, va,
				     be32_to_cpu(reth->len));
	} else if (pkt->paylen != 8 || be32_to_cpu(reth->len) != 8 ||
		   !(READ_ONCE(qp->attr.qp_access_flags) &
		     IB_ACCESS_REMOTE_WRITE)) {
		status = IB_WC_REM_INV_REQ_ERR;
	} else if (!URDMA_HAVE_FLUSH_ATOMIC_WRITE) {
		status = IB_WC_LOC_QP_OP_ERR;
	} else {
		memcpy(&value, pkt->payload, 8);
		status = urdma_atomic_write(&peer, va, rkey, value);
	}
	switch (status) {
	case URDMA_WC_ODP_WAIT:
		return -EAGAIN;		/* RNR NAK */
	case IB_WC_SUCCESS:
		/*
		 * Answered, in order with the READs, by a READ response of
		 * no data (as rxe does); a duplicate gets it again.
		 */
		r = urdma_res_new(qp);
		r->psn = pkt->psn;
		r->npsn = 1;
		r->msn = ++w->resp.msn;
		r->busy = true;
		w->resp.epsn = urdma_psn_add(pkt->psn, 1);
		return 0;
	case IB_WC_REM_ACCESS_ERR:
		return URDMA_NAK_REM_ACCESS;
	default:
		return URDMA_NAK_INV_REQ;
	}
}

/* A duplicate request (its PSN is before the expected one). */
void urdma_resp_dup(struct urdma_engine *eng, struct urdma_qp *qp,
		    const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_rd_res *r;

	if (pkt->flags & (URDMA_PF_READ | URDMA_PF_ATOMIC) ||
	    urdma_pkt_is_flush_or_atomic_write(pkt)) {
		r = urdma_res_find(w, pkt->psn);
		if (!r)
			return;		/* too old: the requester times out */
		/* Answered again; a READ from the PSN asked for. */
		if (r->atomic) {
			urdma_resp_atomic_ack(eng, qp, r);
			return;
		}
		r->off = urdma_psn_diff(pkt->psn, r->psn) * r->mtu;
		r->busy = true;
		return;
	}
	/* SEND or WRITE: acknowledge again what has arrived. */
	urdma_resp_ack_later(w, urdma_syn_ack(),
			     urdma_psn_add(w->resp.epsn, URDMA_PSN_MASK));
}
