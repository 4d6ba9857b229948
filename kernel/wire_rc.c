// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RC and UC on the wire (IBTA Vol. 1 ch. 9.7, 9.8, 9.9).
 *
 * Requester.  WQEs are copied out of the SQ once, into a window of
 * URDMA_WIRE_WINDOW in-flight slots; every transmission, first or retry,
 * is built from the copy.  An SQ slot is retired only when its WQE
 * completes, so user space cannot post more than the SQ holds.  Messages
 * are cut into path-MTU packets; a READ request spans the PSNs of its
 * responses.  At most URDMA_WIRE_PKTS PSNs go beyond the last ACK, and
 * AckReq is set on each message's last packet and every 16 packets.
 * Recovery is go-back-N: a sequence NAK, an RNR NAK (after the RNR timer)
 * or the local ACK timeout restarts transmission at the PSN concerned,
 * within the WQE that holds it.  Completions are in SQ order.
 *
 * Responder.  Packets are taken in PSN order.  An early PSN (a duplicate)
 * is answered again: an ACK, or the READ responses or atomic result from
 * the resource cache (max_dest_rd_atomic entries).  A later PSN draws one
 * sequence NAK until the expected one comes.  ACKs are coalesced: the
 * last one due is sent at the QP's turn in the pass.  READ responses are
 * sent at the QP's turns too, a budget at a time, and all responses leave
 * in PSN order (see urdma_wire_run()).
 *
 * UC uses the same code without ACKs, retries, RNR or the cache: a
 * requester completes a WQE once it is sent, and a responder that misses
 * a packet drops the message.
 *
 * Who may speak.  A packet counts only if it comes from the address the QP
 * is connected to, to the QP's own address (urdma_rx_conn(), as rxe's
 * check_addr()), and only inside the QP's PSN window: a response only for
 * a PSN that is outstanding (urdma_req_psn_outstanding()), a request only
 * at the expected PSN (earlier ones are duplicates, answered from what was
 * already done; later ones draw a sequence NAK).  RoCE has no
 * authentication beyond that: a forged packet with the peer's address and
 * an in-window PSN cannot be told from the peer's (docs/security.md).
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <kunit/visibility.h>

#include "exec.h"

/* Packets a QP may send per turn. */
#define URDMA_WIRE_BUDGET	32
#define URDMA_ACKREQ_EVERY	16

static bool urdma_is_rc(const struct urdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC;
}

static u32 urdma_qp_mtu(const struct urdma_qp *qp)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);

	return min(ib_mtu_enum_to_int(qp->attr.path_mtu),
		   ib_mtu_enum_to_int(urdma_mtu_from_netdev(udev->ndev->mtu)));
}

static struct urdma_inflight *urdma_slot(struct urdma_wire *w, u32 idx)
{
	return (struct urdma_inflight *)(w->slots + (idx % URDMA_WIRE_WINDOW) *
					 w->slot_size);
}

static const struct urdma_send_wqe *urdma_slot_wqe(struct urdma_inflight *f)
{
	return (const struct urdma_send_wqe *)f->wqe;
}

/* ---- lifetime ----------------------------------------------------------- */

/**
 * urdma_wire_alloc - give an RC or UC QP its wire state (at RTR)
 * @qp: the QP; under its state_lock, the engine not yet using the state
 *
 * Return: 0 or -ENOMEM.
 */
int urdma_wire_alloc(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	/*
	 * Twice the READs and atomics the requester may have outstanding:
	 * requesters (rxe) do not count FLUSH and ATOMIC_WRITE against
	 * that limit, and each takes an entry too.
	 */
	u32 nres = 2 * max_t(u32, qp->attr.max_dest_rd_atomic, 1);

	if (w && w->nres >= nres)
		return 0;
	if (!w) {
		w = kzalloc(sizeof(*w), GFP_KERNEL);
		if (!w)
			return -ENOMEM;
		w->slot_size = ALIGN(sizeof(struct urdma_inflight) +
				     qp->sq.stride, 8);
		w->slots = kvcalloc(URDMA_WIRE_WINDOW, w->slot_size,
				    GFP_KERNEL);
		w->rwqe = kzalloc(URDMA_MAX_STRIDE, GFP_KERNEL);
		if (!w->slots || !w->rwqe) {
			kvfree(w->slots);
			kfree(w->rwqe);
			kfree(w);
			return -ENOMEM;
		}
		qp->wire = w;
	}
	/* Not yet used by the engine: the QP is not in RTR. */
	kfree(w->res);
	w->res = kcalloc(nres, sizeof(*w->res), GFP_KERNEL);
	w->nres = w->res ? nres : 0;
	return w->res ? 0 : -ENOMEM;
}

/* Back to the state of a new QP; the engine is synced (RESET). */
void urdma_wire_reset(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_rd_res *res;
	u8 *slots, *rwqe;
	u32 nres, size;

	if (!w)
		return;
	res = w->res;
	nres = w->nres;
	slots = w->slots;
	rwqe = w->rwqe;
	size = w->slot_size;
	memset(w, 0, sizeof(*w));
	w->res = res;
	w->nres = nres;
	w->slots = slots;
	w->rwqe = rwqe;
	w->slot_size = size;
	memset(res, 0, nres * sizeof(*res));
}

void urdma_wire_free(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;

	if (!w)
		return;
	kfree(w->res);
	kfree(w->rwqe);
	kvfree(w->slots);
	kfree(w);
	qp->wire = NULL;
}

/* ---- building packets --------------------------------------------------- */

/* Start a packet of @opcode to the QP's peer: fills the BTH. */
static int urdma_wire_pkt(struct urdma_qp *qp, u8 opcode, u32 psn, u32 paylen,
			  bool ackreq, bool se, struct urdma_tx *tx)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	u8 tr = urdma_is_rc(qp) ? URDMA_TR_RC : URDMA_TR_UC;
	int ret;

	ret = urdma_pkt_alloc(udev, tr | opcode, paylen, tx);
	if (ret)
		return ret;
	if (se)
		tx->bth->w0 |= cpu_to_be32(URDMA_BTH_SE);
	tx->bth->w1 = cpu_to_be32(FIELD_PREP(URDMA_BTH_QPN,
					     qp->attr.dest_qp_num));
	tx->bth->w2 = cpu_to_be32(FIELD_PREP(URDMA_BTH_PSN, psn) |
				  (ackreq ? URDMA_BTH_ACKREQ : 0));
	return 0;
}

static int urdma_wire_send(struct urdma_engine *eng, struct urdma_qp *qp,
			   struct urdma_tx *tx)
{
	int ret = urdma_pkt_xmit(to_udev(qp->ibqp.device), &qp->av, tx,
				 urdma_udp_sport(qp->av.flow_label,
						 qp->ibqp.qp_num,
						 qp->attr.dest_qp_num));

	urdma_count(eng, ret ? URDMA_CNT_TX_ERRS : URDMA_CNT_TX_PKTS);
	return ret;
}

static void urdma_put_reth(void *p, u64 va, u32 rkey, u32 len)
{
	struct urdma_reth *reth = p;

	reth->va = cpu_to_be64(va);
	reth->rkey = cpu_to_be32(rkey);
	reth->len = cpu_to_be32(len);
}

/* Fill the AETH of packet @tx of RC opcode @op (which must carry one). */
static void urdma_put_aeth(struct urdma_tx *tx, u8 op, u8 syn, u32 msn)
{
	struct urdma_aeth *aeth = urdma_tx_hdr(tx, URDMA_TR_RC | op,
					       URDMA_H_AETH);

	aeth->w = cpu_to_be32(FIELD_PREP(URDMA_AETH_SYN, syn) |
			      FIELD_PREP(URDMA_AETH_MSN, msn));
}

/* An ACK, NAK or RNR NAK from the responder. */
static void urdma_send_ack(struct urdma_engine *eng, struct urdma_qp *qp,
			   u8 syn, u32 psn)
{
	struct urdma_tx tx;

	if (urdma_wire_pkt(qp, URDMA_OP_ACK, psn, 0, false, false, &tx)) {
		urdma_count(eng, URDMA_CNT_TX_ERRS);
		return;
	}
	urdma_put_aeth(&tx, URDMA_OP_ACK, syn, qp->wire->msn);
	urdma_wire_send(eng, qp, &tx);
}

static u8 urdma_syn_ack(void)
{
	return FIELD_PREP(URDMA_SYN_TYPE, URDMA_SYN_ACK) |
	       FIELD_PREP(URDMA_SYN_VAL, URDMA_CREDITS_INVALID);
}

static u8 urdma_syn_nak(u8 code)
{
	return FIELD_PREP(URDMA_SYN_TYPE, URDMA_SYN_NAK) |
	       FIELD_PREP(URDMA_SYN_VAL, code);
}

/* ---- requester: transmit ------------------------------------------------ */

/* PSNs a message of @len spans; a READ request spans its responses. */
static u32 urdma_msg_npsn(u8 op, u32 len, u32 mtu)
{
	switch (op) {
	case URDMA_WQE_ATOMIC_CMP_SWP:
	case URDMA_WQE_ATOMIC_FETCH_ADD:
		return 1;
	default:
		return max_t(u32, DIV_ROUND_UP(len, mtu), 1);
	}
}

static bool urdma_wqe_is_rd(u8 op)
{
	return op == URDMA_WQE_RDMA_READ || op == URDMA_WQE_ATOMIC_CMP_SWP ||
	       op == URDMA_WQE_ATOMIC_FETCH_ADD;
}

/* The wire opcode of the packet of a SEND or WRITE at @first/@last. */
static u8 urdma_req_opcode(u8 op, bool first, bool last)
{
	bool write = op == URDMA_WQE_RDMA_WRITE ||
		     op == URDMA_WQE_RDMA_WRITE_IMM;

	if (first && last) {
		switch (op) {
		case URDMA_WQE_SEND_IMM:
			return URDMA_OP_SEND_ONLY_IMM;
		case URDMA_WQE_SEND_INV:
			return URDMA_OP_SEND_ONLY_INV;
		case URDMA_WQE_RDMA_WRITE:
			return URDMA_OP_WRITE_ONLY;
		case URDMA_WQE_RDMA_WRITE_IMM:
			return URDMA_OP_WRITE_ONLY_IMM;
		default:
			return URDMA_OP_SEND_ONLY;
		}
	}
	if (first)
		return write ? URDMA_OP_WRITE_FIRST : URDMA_OP_SEND_FIRST;
	if (!last)
		return write ? URDMA_OP_WRITE_MIDDLE : URDMA_OP_SEND_MIDDLE;
	switch (op) {
	case URDMA_WQE_SEND_IMM:
		return URDMA_OP_SEND_LAST_IMM;
	case URDMA_WQE_SEND_INV:
		return URDMA_OP_SEND_LAST_INV;
	case URDMA_WQE_RDMA_WRITE:
		return URDMA_OP_WRITE_LAST;
	case URDMA_WQE_RDMA_WRITE_IMM:
		return URDMA_OP_WRITE_LAST_IMM;
	default:
		return URDMA_OP_SEND_LAST;
	}
}

/*
 * Send the next packet of in-flight WQE @f at w->off.  Return: 0, or the
 * local completion status that ends the WQE: its memory went bad, or the
 * path MTU fell below the size it was cut into (the WQE fails rather than
 * send a packet the path cannot carry).
 */
static u8 urdma_req_pkt(struct urdma_engine *eng, struct urdma_qp *qp,
			struct urdma_inflight *f, bool *wqe_sent)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = urdma_slot_wqe(f);
	u32 mtu = f->mtu;
	u32 pay = 0, psn = w->psn;
	bool first, last, ackreq;
	struct urdma_tx tx;
	struct urdma_sg dst;
	u8 opcode, status;
	u32 hdrs;
	int nsrc;
	u64 len;

	*wqe_sent = false;
	switch (wqe->opcode) {
	case URDMA_WQE_RDMA_READ:
		/*
		 * One request for what is still missing.  A go-back that
		 * started at an earlier WQE reaches this READ with w->off 0,
		 * but its first f->got responses are placed already: ask from
		 * the first missing one, as for the READ the go-back began at
		 * (a responder takes a duplicate READ at any of its PSNs, see
		 * urdma_resp_dup(); so does rxe).
		 */
		if (!w->off && f->got) {
			w->off = f->got * mtu;
			psn = urdma_psn_add(f->first_psn, f->got);
		}
		opcode = URDMA_OP_READ_REQ;
		if (urdma_wire_pkt(qp, opcode, psn, 0, true, false, &tx))
			return 0;
		urdma_put_reth(urdma_tx_hdr(&tx, opcode, URDMA_H_RETH),
			       wqe->rdma.remote_addr + w->off, wqe->rdma.rkey,
			       f->len - w->off);
		w->psn = urdma_psn_add(f->first_psn, f->npsn);
		*wqe_sent = true;
		break;
	case URDMA_WQE_ATOMIC_CMP_SWP:
	case URDMA_WQE_ATOMIC_FETCH_ADD: {
		struct urdma_atmeth *a;

		opcode = wqe->opcode == URDMA_WQE_ATOMIC_CMP_SWP ?
			 URDMA_OP_CMP_SWP : URDMA_OP_FETCH_ADD;
		if (urdma_wire_pkt(qp, opcode, psn, 0, true, false, &tx))
			return 0;
		a = urdma_tx_hdr(&tx, opcode, URDMA_H_ATMETH);
		a->va = cpu_to_be64(wqe->atomic.remote_addr);
		a->rkey = cpu_to_be32(wqe->atomic.rkey);
		a->swap_add = cpu_to_be64(wqe->opcode ==
					  URDMA_WQE_ATOMIC_CMP_SWP ?
					  wqe->atomic.swap :
					  wqe->atomic.compare_add);
		a->cmp = cpu_to_be64(wqe->atomic.compare_add);
		w->psn = urdma_psn_add(psn, 1);
		*wqe_sent = true;
		break;
	}
	case URDMA_WQE_ATOMIC_WRITE:
		/* RETH for 8 bytes; the value, as it lies in memory. */
		opcode = URDMA_OP_ATOMIC_WRITE;
		if (urdma_wire_pkt(qp, opcode, psn, 8, true, false, &tx))
			return 0;
		urdma_put_reth(urdma_tx_hdr(&tx, opcode, URDMA_H_RETH),
			       wqe->atomic.remote_addr, wqe->atomic.rkey, 8);
		memcpy(tx.payload, &wqe->atomic.compare_add, 8);
		w->psn = urdma_psn_add(psn, 1);
		*wqe_sent = true;
		break;
	case URDMA_WQE_FLUSH: {
		struct urdma_feth *feth;

		opcode = URDMA_OP_FLUSH;
		if (urdma_wire_pkt(qp, opcode, psn, 0, true, false, &tx))
			return 0;
		feth = urdma_tx_hdr(&tx, opcode, URDMA_H_FETH);
		feth->w = cpu_to_be32(FIELD_PREP(URDMA_FETH_SEL,
						 wqe->flush.level) |
				      FIELD_PREP(URDMA_FETH_PLT,
						 wqe->flush.type));
		urdma_put_reth(urdma_tx_hdr(&tx, opcode, URDMA_H_RETH),
			       wqe->flush.remote_addr, wqe->flush.rkey,
			       (u32)min_t(u64, wqe->flush.length, U32_MAX));
		w->psn = urdma_psn_add(psn, 1);
		*wqe_sent = true;
		break;
	}
	default:
		/* SEND or WRITE: the data, gathered again from the copy. */
		memcpy(s->swqe.raw, f->wqe, qp->sq.stride);
		status = urdma_wqe_gather(eng, qp, 0, &nsrc, &len);
		if (status)
			return status;
		if (WARN_ON_ONCE(w->off > f->len || len != f->len))
			return IB_WC_LOC_QP_OP_ERR;
		first = !w->off;
		pay = min(f->len - w->off, mtu);
		if (pay > urdma_qp_mtu(qp))
			return IB_WC_LOC_QP_OP_ERR;
		last = w->off + pay >= f->len;
		opcode = urdma_req_opcode(wqe->opcode, first, last);
		ackreq = last || ++w->since_ackreq >= URDMA_ACKREQ_EVERY;
		if (ackreq)
			w->since_ackreq = 0;
		if (urdma_wire_pkt(qp, opcode, psn, pay, ackreq,
				   last && (wqe->flags & URDMA_WQE_SOLICITED),
				   &tx))
			return 0;
		/* RC and UC lay out their headers alike: RC's table row. */
		hdrs = urdma_opcodes[URDMA_TR_RC | opcode].flags;
		if (hdrs & URDMA_PF_RETH)
			urdma_put_reth(urdma_tx_hdr(&tx, opcode, URDMA_H_RETH),
				       wqe->rdma.remote_addr, wqe->rdma.rkey,
				       f->len);
		if (hdrs & URDMA_PF_IMM)
			memcpy(urdma_tx_hdr(&tx, opcode, URDMA_H_IMM),
			       &wqe->ex, 4);
		else if (hdrs & URDMA_PF_IETH)
			memcpy(urdma_tx_hdr(&tx, opcode, URDMA_H_IETH),
			       &wqe->ex, 4);
		if (pay) {
			urdma_sgl_skip(s->src, nsrc, w->off);
			dst.kva = tx.payload;
			dst.mr = NULL;
			dst.len = pay;
			/* Never a payload it did not write. */
			if (!urdma_copy(&dst, 1, s->src, nsrc, pay)) {
				kfree_skb(tx.skb);
				return IB_WC_LOC_QP_OP_ERR;
			}
		}
		w->off += pay;
		w->psn = urdma_psn_add(psn, 1);
		*wqe_sent = last;
		break;
	}
	if (urdma_psn_diff(w->psn, w->psn_max) > 0)
		w->psn_max = w->psn;
	urdma_wire_send(eng, qp, &tx);
	return 0;
}

/*
 * FLUSH and ATOMIC_WRITE take a responder resource too, until their
 * answer (which completes them through w->acked).
 */
static bool urdma_wqe_takes_res(u8 op)
{
	return urdma_wqe_is_rd(op) || op == URDMA_WQE_FLUSH ||
	       op == URDMA_WQE_ATOMIC_WRITE;
}

/* Outstanding READs, atomics, FLUSHes and ATOMIC_WRITEs. */
static u32 urdma_req_rd_count(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	u32 i, n = 0;

	for (i = qp->sq_cons; i != w->next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);
		u8 op = urdma_slot_wqe(f)->opcode;

		if (f->done || !urdma_wqe_takes_res(op))
			continue;
		if (urdma_wqe_is_rd(op) ||
		    (f->npsn && urdma_psn_diff(f->first_psn, w->acked) > 0))
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
 * Copy the next SQ WQE into the window and check it.  Return: false if
 * the requester must wait (nothing posted, window full, fence, READ
 * credits, or a local operation behind WQEs in flight).
 */
static bool urdma_req_start(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_qp_db *db = qp->db.kva;
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = &s->swqe.hdr;
	/* Pairs with the poster's release: WQEs before the index. */
	u32 prod = smp_load_acquire(&db->sq_prod);
	struct urdma_inflight *f;
	bool idle = w->next == qp->sq_cons;
	int nsrc;
	u64 len;

	if (w->next == prod || w->next - qp->sq_cons >= URDMA_WIRE_WINDOW)
		return false;
	if (prod - qp->sq_cons > qp->sq.nent) {
		urdma_qp_fatal(qp);
		return false;
	}
	memcpy(s->swqe.raw, urdma_ring_entry(&qp->sq, w->next), qp->sq.stride);
	f = urdma_slot(w, w->next);
	memset(f, 0, sizeof(*f));
	memcpy(f->wqe, s->swqe.raw, qp->sq.stride);
	f->first_psn = w->psn;
	f->mtu = urdma_qp_mtu(qp);

	if (!urdma_wqe_valid(qp, wqe)) {
		urdma_count(eng, URDMA_CNT_BAD_WQES);
		f->status = IB_WC_LOC_QP_OP_ERR;
		f->done = true;
		goto started;
	}
	if (urdma_wqe_is_local(wqe->opcode)) {
		/* In order with the SQ: only when nothing is in flight. */
		if (!idle)
			return false;
		f->status = urdma_exec_local(qp, wqe);
		f->done = true;
		goto started;
	}
	switch (wqe->opcode) {
	case URDMA_WQE_ATOMIC_WRITE:
	case URDMA_WQE_FLUSH:
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
			goto started;
		}
		f->len = wqe->opcode == URDMA_WQE_ATOMIC_WRITE ? 8 : 0;
		f->npsn = 1;
		goto started;
	default:
		break;
	}
	if ((wqe->flags & URDMA_WQE_FENCE) && urdma_req_rd_count(qp))
		return false;
	if (urdma_wqe_is_rd(wqe->opcode) && urdma_req_rd_full(qp))
		return false;

	f->status = urdma_wqe_gather(eng, qp,
				     urdma_wqe_is_rd(wqe->opcode) ?
				     IB_ACCESS_LOCAL_WRITE : 0, &nsrc, &len);
	if (!f->status && urdma_wqe_is_rd(wqe->opcode) &&
	    wqe->opcode != URDMA_WQE_RDMA_READ && len < 8)
		f->status = IB_WC_LOC_LEN_ERR;
	if (f->status) {
		f->done = true;
		goto started;
	}
	f->len = urdma_wqe_is_rd(wqe->opcode) &&
		 wqe->opcode != URDMA_WQE_RDMA_READ ? 8 : len;
	f->npsn = urdma_msg_npsn(wqe->opcode, f->len, f->mtu);
started:
	if (w->cur == w->next)
		w->off = 0;
	w->next++;
	return true;
}

/* Go back to @psn (go-back-N): the WQE holding it is sent again from there. */
VISIBLE_IF_KUNIT void urdma_req_rewind(struct urdma_qp *qp, u32 psn)
{
	struct urdma_wire *w = qp->wire;
	u32 i;

	for (i = qp->sq_cons; i != w->next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);
		s32 d = urdma_psn_diff(psn, f->first_psn);

		if (f->done && !f->npsn)
			continue;
		if (d >= 0 && d < (s32)f->npsn) {
			w->cur = i;
			w->off = d * f->mtu;
			if (urdma_slot_wqe(f)->opcode == URDMA_WQE_RDMA_READ)
				f->got = d;
			w->psn = psn;
			w->since_ackreq = 0;
			return;
		}
	}
}
EXPORT_SYMBOL_IF_KUNIT(urdma_req_rewind);

/*
 * The retransmit interval.  IBTA's local ACK timeout (4.096 us * 2^timeout)
 * with a floor: below a few milliseconds a software peer, or a TCG guest,
 * would see retransmit storms.  Timeout 0 means no limit on the retries;
 * they still come, every half second.
 */
#define URDMA_RTO_MIN_NS	(5 * NSEC_PER_MSEC)
#define URDMA_RTO_INF_NS	(500 * NSEC_PER_MSEC)

static u64 urdma_rto_ns(const struct urdma_qp *qp)
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
	u32 next = urdma_psn_add(w->acked, 1), i;

	for (i = qp->sq_cons; i != w->next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);

		if (f->done || !f->npsn)
			continue;
		if (urdma_wqe_is_rd(urdma_slot_wqe(f)->opcode))
			return urdma_psn_add(f->first_psn, f->got);
		if (urdma_psn_diff(urdma_psn_add(f->first_psn, f->npsn - 1),
				   w->acked) > 0)
			return urdma_psn_diff(f->first_psn, next) > 0 ?
			       f->first_psn : next;
	}
	return next;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_req_resume_psn);

/* Arm the retransmit timer; progress pushes it out. */
static void urdma_req_arm(struct urdma_qp *qp)
{
	qp->wire->timeout_at = ktime_add_ns(ktime_get(), urdma_rto_ns(qp));
}

/*
 * Progress: the responder answered something new (an ACK of a later PSN,
 * or the READ response that was due next), or a WQE completed.  retry_cnt
 * bounds the timeouts in a row without progress (as rxe's
 * reset_retry_counters() does), not those of one WQE: on a lossy link a
 * READ of many responses, or a long SEND, can see more timeouts than that
 * and still move.
 */
static void urdma_req_progress(struct urdma_qp *qp)
{
	qp->wire->retry_left = qp->attr.retry_cnt;
	urdma_req_arm(qp);
}

/* ---- requester: completions --------------------------------------------- */

/* Whether the WQE at the SQ head is complete. */
static bool urdma_req_head_done(struct urdma_qp *qp, struct urdma_inflight *f)
{
	struct urdma_wire *w = qp->wire;
	u32 last;

	if (f->done)
		return true;
	if (qp->sq_cons == w->cur)	/* not fully sent yet */
		return false;
	if (urdma_wqe_is_rd(urdma_slot_wqe(f)->opcode))
		return false;
	if (!urdma_is_rc(qp))
		return true;
	last = urdma_psn_add(f->first_psn, f->npsn - 1);
	return urdma_psn_diff(w->acked, last) >= 0;
}

/*
 * Move the sender past in-flight WQE @f at w->cur, which needs no (more)
 * packets: it failed, is local, or is a READ or atomic a go-back reached
 * after its response came.  The next WQE goes out at its own first PSN.
 */
static void urdma_req_skip(struct urdma_wire *w, struct urdma_inflight *f)
{
	if (f->npsn)
		w->psn = urdma_psn_add(f->first_psn, f->npsn);
	w->cur++;
	w->off = 0;
}

/* Retire completed WQEs from the head, in order.  Return: how many. */
static int urdma_req_complete(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	int n = 0;

	while (qp->sq_cons != w->next) {
		struct urdma_inflight *f = urdma_slot(w, qp->sq_cons);
		const struct urdma_send_wqe *wqe = urdma_slot_wqe(f);
		u8 status;

		if (!urdma_req_head_done(qp, f))
			break;
		status = f->status;
		if (w->cur == qp->sq_cons)
			urdma_req_skip(w, f);
		w->rnr_left = qp->attr.rnr_retry;
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

	for (i = qp->sq_cons; i != w->next; i++) {
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
static void urdma_req_fail_oldest(struct urdma_qp *qp, u8 status)
{
	struct urdma_wire *w = qp->wire;
	u32 i;

	for (i = qp->sq_cons; i != w->next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);

		if (!f->done) {
			f->status = status;
			f->done = true;
			return;
		}
	}
}

/* ---- requester: responses ----------------------------------------------- */

/**
 * urdma_req_psn_outstanding - may an ACK or a NAK name @psn?
 * @w: the requester
 * @psn: the PSN in its BTH
 *
 * Only a PSN that was sent and is not yet acknowledged: after w->acked and
 * before w->psn_max.  Anything else is stale, a duplicate, or forged, and
 * changes nothing.
 */
bool urdma_req_psn_outstanding(const struct urdma_wire *w, u32 psn)
{
	return urdma_psn_diff(psn, w->acked) > 0 &&
	       urdma_psn_diff(psn, w->psn_max) < 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_req_psn_outstanding);

/* An ACK for @psn: everything up to it arrived. */
static void urdma_req_acked(struct urdma_qp *qp, u32 psn)
{
	struct urdma_wire *w = qp->wire;

	if (urdma_req_psn_outstanding(w, psn)) {
		w->acked = psn;
		w->rnr_wait = false;
		urdma_req_progress(qp);
	}
}

/*
 * The in-flight WQE that a READ response or atomic ACK with @psn answers:
 * one that is not complete, whose request went out (the PSN is before
 * w->psn_max) and that spans @psn.  A READ's PSNs may be behind w->acked:
 * an ACK of a later PSN does not cover missing READ responses.
 */
static struct urdma_inflight *urdma_req_find(struct urdma_qp *qp, u32 psn)
{
	struct urdma_wire *w = qp->wire;
	u32 i;

	if (urdma_psn_diff(psn, w->psn_max) >= 0)
		return NULL;
	for (i = qp->sq_cons; i != w->next; i++) {
		struct urdma_inflight *f = urdma_slot(w, i);
		s32 d = urdma_psn_diff(psn, f->first_psn);

		if (d >= 0 && d < (s32)f->npsn)
			return f->done ? NULL : f;
	}
	return NULL;
}

/* Place response bytes at @off of the WQE's local buffers. */
static bool urdma_req_place(struct urdma_engine *eng, struct urdma_qp *qp,
			    struct urdma_inflight *f, u32 off, const void *data,
			    u32 len)
{
	struct urdma_scratch *s = eng->scratch;
	struct urdma_sg src = { .kva = (void *)data, .len = len };
	int nsg;
	u64 total;
	u8 status;

	memcpy(s->swqe.raw, f->wqe, qp->sq.stride);
	status = urdma_wqe_gather(eng, qp, IB_ACCESS_LOCAL_WRITE, &nsg, &total);
	if (status || (u64)off + len > total) {
		f->status = status ? status : IB_WC_LOC_LEN_ERR;
		f->done = true;
		return false;
	}
	urdma_sgl_skip(s->src, nsg, off);
	urdma_copy(s->src, nsg, &src, 1, len);
	return true;
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
			urdma_req_acked(qp, pkt->psn);
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
	    !urdma_req_place(eng, qp, f, off, pkt->payload, pkt->paylen))
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
		urdma_req_acked(qp, pkt->psn);
}

static void urdma_req_atomic_ack(struct urdma_engine *eng, struct urdma_qp *qp,
				 const struct urdma_pkt *pkt)
{
	const struct urdma_atmack *ack = urdma_pkt_hdr(pkt, URDMA_H_ATMACK);
	struct urdma_inflight *f = urdma_req_find(qp, pkt->psn);
	u64 orig = be64_to_cpu(ack->orig);

	if (!f || !urdma_wqe_is_rd(urdma_slot_wqe(f)->opcode) ||
	    urdma_slot_wqe(f)->opcode == URDMA_WQE_RDMA_READ)
		return;
	if (urdma_req_place(eng, qp, f, 0, &orig, sizeof(orig)))
		f->done = true;
	urdma_req_acked(qp, pkt->psn);
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
		urdma_req_acked(qp, pkt->psn);
		break;
	case URDMA_SYN_RNR:
		urdma_req_acked(qp, prev);
		urdma_count(eng, URDMA_CNT_RNR_WAITS);
		if (!urdma_retry_spend(&w->rnr_left, w->rnr_left ==
				       URDMA_RNR_RETRY_FOREVER)) {
			urdma_req_fail(qp, pkt->psn, IB_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		urdma_req_rewind(qp, pkt->psn);
		w->rnr_wait = true;
		w->resume_at = ktime_add_ns(ktime_get(), urdma_rnr_ns(val));
		break;
	case URDMA_SYN_NAK:
		urdma_req_acked(qp, prev);
		if (val == URDMA_NAK_PSN_SEQ) {
			urdma_count(eng, URDMA_CNT_RETRIES);
			urdma_count(eng, URDMA_CNT_SEQ_NAKS_RCVD);
			urdma_req_rewind(qp, pkt->psn);
		} else {
			urdma_req_fail(qp, pkt->psn, urdma_nak_status(val));
		}
		break;
	default:
		break;
	}
}

/* A response packet for the requester. */
static void urdma_req_rx(struct urdma_engine *eng, struct urdma_qp *qp,
			 const struct urdma_pkt *pkt)
{
	if (!urdma_is_rc(qp) || !qp->wire->req_init)
		return;
	if (pkt->flags & URDMA_PF_READ)
		urdma_req_read_resp(eng, qp, pkt);
	else if (pkt->flags & URDMA_PF_ATOMIC)
		urdma_req_atomic_ack(eng, qp, pkt);
	else
		urdma_req_ack(eng, qp, pkt);
}

/* ---- requester: the QP's turn ------------------------------------------- */

static int urdma_req_run(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	ktime_t now = ktime_get();
	int work = 0;

	if (!w->req_init) {
		w->psn = READ_ONCE(qp->req_psn);
		w->psn_max = w->psn;
		w->acked = urdma_psn_add(w->psn, URDMA_PSN_MASK);
		w->next = qp->sq_cons;
		w->cur = qp->sq_cons;
		w->retry_left = qp->attr.retry_cnt;
		w->rnr_left = qp->attr.rnr_retry;
		w->req_init = true;
	}
	work += urdma_req_complete(eng, qp);
	/* A failed WQE took the QP to ERROR: the rest are flushed, not sent. */
	if (READ_ONCE(qp->attr.qp_state) != IB_QPS_RTS)
		return work;

	if (w->rnr_wait) {
		if (ktime_before(now, w->resume_at)) {
			if (ktime_before(w->resume_at, eng->deadline))
				eng->deadline = w->resume_at;
			return work;
		}
		w->rnr_wait = false;
		urdma_req_arm(qp);
	} else if (urdma_is_rc(qp) && qp->sq_cons != w->next &&
		   ktime_after(now, w->timeout_at)) {
		/* No progress within the local ACK timeout. */
		urdma_count(eng, URDMA_CNT_RETRIES);
		urdma_count(eng, URDMA_CNT_TIMEOUTS);
		if (!urdma_retry_spend(&w->retry_left, !qp->attr.timeout)) {
			urdma_req_fail_oldest(qp, IB_WC_RETRY_EXC_ERR);
			return work + urdma_req_complete(eng, qp);
		}
		urdma_req_rewind(qp, urdma_req_resume_psn(qp));
		urdma_req_arm(qp);
	}

	while (work < URDMA_WIRE_BUDGET) {
		struct urdma_inflight *f;
		bool sent;
		u8 status;

		if (w->cur == w->next) {
			bool was_idle = qp->sq_cons == w->next;

			if (!urdma_engine_charge(eng, 0) ||
			    !urdma_req_start(eng, qp))
				break;
			if (was_idle)
				urdma_req_arm(qp);
		}
		f = urdma_slot(w, w->cur);
		if (f->done && f->status != IB_WC_SUCCESS)
			break;	/* nothing after a failed WQE goes out */
		if (f->done) {
			urdma_req_skip(w, f);
			continue;
		}
		if (urdma_is_rc(qp) &&
		    urdma_psn_diff(w->psn, w->acked) > URDMA_WIRE_PKTS)
			break;
		if (!urdma_engine_charge(eng, f->mtu))
			break;
		status = urdma_req_pkt(eng, qp, f, &sent);
		if (status) {
			/* Its completion takes the QP to ERROR. */
			f->status = status;
			f->done = true;
			work++;
			break;
		}
		work++;
		if (sent) {
			w->cur++;
			w->off = 0;
		}
	}
	work += urdma_req_complete(eng, qp);
	if (urdma_is_rc(qp) && qp->sq_cons != w->next &&
	    ktime_before(w->timeout_at, eng->deadline))
		eng->deadline = w->timeout_at;
	return work;
}

/* ---- responder ---------------------------------------------------------- */

/* FLUSH and ATOMIC_WRITE take a responder resource, as READs do. */
static bool urdma_pkt_is_flush_or_atomic_write(const struct urdma_pkt *pkt)
{
	return (pkt->flags & URDMA_PF_FLUSH) ||
	       pkt->opcode == (URDMA_TR_RC | URDMA_OP_ATOMIC_WRITE);
}

/* Whether a READ response before @psn is still to be sent. */
static bool urdma_resp_reads_before(const struct urdma_wire *w, u32 psn)
{
	u32 i;

	for (i = 0; i < w->nres; i++)
		if (w->res[i].busy && urdma_psn_diff(w->res[i].psn, psn) < 0)
			return true;
	return false;
}

static void urdma_resp_peer(struct urdma_qp *qp, struct urdma_peer *peer)
{
	peer->dev = to_udev(qp->ibqp.device);
	peer->qp = qp;
	peer->pdn = urdma_qp_pdn(qp);
}

/* A NAK that ends the message, and the responder's QP with it (RC). */
static void urdma_resp_nak(struct urdma_engine *eng, struct urdma_qp *qp,
			   u32 psn, u8 code)
{
	struct urdma_wire *w = qp->wire;

	w->in_send = false;
	w->in_write = false;
	if (!urdma_is_rc(qp)) {
		w->drop_msg = true;
		return;
	}
	urdma_send_ack(eng, qp, urdma_syn_nak(code), psn);
	urdma_qp_set_error(qp);
}

/* A SEND packet's payload: consumes a receive WQE at its first packet. */
static int urdma_resp_send(struct urdma_engine *eng, struct urdma_qp *qp,
			   const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_scratch *s = eng->scratch;
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	const struct urdma_recv_wqe *rwqe = (const void *)w->rwqe;
	const struct urdma_sge *sge = (const struct urdma_sge *)(rwqe + 1);
	struct urdma_sg src = { .kva = (void *)pkt->payload,
				.len = pkt->paylen };
	struct urdma_cqe cqe = {};
	u32 max_sge;
	int nsg, ret;
	u64 room;
	u8 status;

	if (pkt->flags & URDMA_PF_FIRST) {
		ret = urdma_take_recv(eng, qp, &max_sge, 0);
		if (ret == -EAGAIN)
			return -EAGAIN;		/* RNR */
		if (ret) {
			urdma_qp_fatal(qp);
			return -EIO;
		}
		memcpy(w->rwqe, s->rwqe.raw, URDMA_MAX_STRIDE);
		if (rwqe->num_sge > max_sge) {
			cqe.status = IB_WC_LOC_QP_OP_ERR;
			goto complete;
		}
		w->msg_off = 0;
		w->in_send = true;
	}
	cqe.wr_id = rwqe->wr_id;
	status = urdma_lkey_sgl(udev, urdma_qp_pdn(qp), sge, rwqe->num_sge,
				IB_ACCESS_LOCAL_WRITE, s->dst, &nsg, &room);
	if (status) {
		cqe.status = status;
		goto complete;
	}
	if ((u64)w->msg_off + pkt->paylen > room) {
		cqe.status = IB_WC_LOC_LEN_ERR;
		goto complete;
	}
	if (pkt->paylen) {
		urdma_sgl_skip(s->dst, nsg, w->msg_off);
		urdma_copy(s->dst, nsg, &src, 1, pkt->paylen);
	}
	w->msg_off += pkt->paylen;
	if (!(pkt->flags & URDMA_PF_LAST))
		return 0;

	cqe.opcode = URDMA_CQE_RECV;
	cqe.byte_len = w->msg_off;
	cqe.src_qp = qp->attr.dest_qp_num;
	if (pkt->flags & URDMA_PF_IMM) {
		memcpy(&cqe.ex, urdma_pkt_hdr(pkt, URDMA_H_IMM), 4);
		cqe.flags |= URDMA_CQE_IMM;
	} else if (pkt->flags & URDMA_PF_IETH) {
		__be32 key;

		memcpy(&key, urdma_pkt_hdr(pkt, URDMA_H_IETH), 4);
		cqe.ex = be32_to_cpu(key);
		if (!urdma_invalidate(qp, cqe.ex, true)) {
			cqe.status = IB_WC_REM_INV_REQ_ERR;
			goto complete;
		}
		cqe.flags |= URDMA_CQE_INV;
	}
	w->in_send = false;
	urdma_complete_recv(eng, qp, &cqe, pkt->se);
	return 0;

complete:
	w->in_send = false;
	cqe.opcode = URDMA_CQE_RECV;
	urdma_complete_recv(eng, qp, &cqe, false);
	return -EINVAL;
}

/* A WRITE packet.  Return: 0, or a NAK code. */
static int urdma_resp_write(struct urdma_engine *eng, struct urdma_qp *qp,
			    const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_sg src = { .kva = (void *)pkt->payload,
				.len = pkt->paylen };
	struct urdma_peer peer;
	struct urdma_sg dst;

	if (pkt->flags & URDMA_PF_FIRST) {
		const struct urdma_reth *reth = urdma_pkt_hdr(pkt,
							       URDMA_H_RETH);

		w->wr_va = be64_to_cpu(reth->va);
		w->wr_rkey = be32_to_cpu(reth->rkey);
		w->wr_len = be32_to_cpu(reth->len);
		w->msg_off = 0;
		w->in_write = !(pkt->flags & URDMA_PF_LAST);
	} else if (pkt->flags & URDMA_PF_LAST) {
		w->in_write = false;
	}
	if ((u64)w->msg_off + pkt->paylen > w->wr_len ||
	    ((pkt->flags & URDMA_PF_LAST) &&
	     w->msg_off + pkt->paylen != w->wr_len))
		return URDMA_NAK_INV_REQ;
	if (!(READ_ONCE(qp->attr.qp_access_flags) & IB_ACCESS_REMOTE_WRITE))
		return URDMA_NAK_INV_REQ;
	urdma_resp_peer(qp, &peer);
	if (pkt->paylen) {
		if (!urdma_rkey_sg(&peer, w->wr_rkey, w->wr_va + w->msg_off,
				   pkt->paylen, IB_ACCESS_REMOTE_WRITE, &dst))
			return URDMA_NAK_REM_ACCESS;
		urdma_copy(&dst, 1, &src, 1, pkt->paylen);
	} else if ((pkt->flags & URDMA_PF_FIRST) && w->wr_len) {
		return URDMA_NAK_INV_REQ;
	}
	w->msg_off += pkt->paylen;
	return 0;
}

/*
 * The entry for a new READ, atomic, FLUSH or ATOMIC_WRITE: the oldest one
 * whose responses are all sent (a busy READ is never cut short; only a
 * requester beyond every limit finds them all busy).
 */
static struct urdma_rd_res *urdma_res_new(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_rd_res *r = &w->res[w->res_next];
	u32 i;

	for (i = 0; i < w->nres && r->busy; i++) {
		w->res_next = (w->res_next + 1) % w->nres;
		r = &w->res[w->res_next];
	}
	w->res_next = (w->res_next + 1) % w->nres;
	memset(r, 0, sizeof(*r));
	r->mtu = urdma_qp_mtu(qp);
	return r;
}

static struct urdma_rd_res *urdma_res_find(struct urdma_wire *w, u32 psn)
{
	u32 i;

	for (i = 0; i < w->nres; i++) {
		struct urdma_rd_res *r = &w->res[i];
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
	u8 op = URDMA_TR_RC | URDMA_OP_ATOMIC_ACK;

	if (urdma_wire_pkt(qp, URDMA_OP_ATOMIC_ACK, r->psn, 0, false, false,
			   &tx))
		return;
	urdma_put_aeth(&tx, URDMA_OP_ATOMIC_ACK, urdma_syn_ack(),
		       qp->wire->msn);
	ack = urdma_tx_hdr(&tx, op, URDMA_H_ATMACK);
	ack->orig = cpu_to_be64(r->orig);
	urdma_wire_send(eng, qp, &tx);
}

/* READ or atomic request.  Return: 0, or a NAK code. */
static int urdma_resp_rd(struct urdma_engine *eng, struct urdma_qp *qp,
			 const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_rd_res *r;
	struct urdma_peer peer;
	struct urdma_sg sg;
	u8 status;

	urdma_resp_peer(qp, &peer);
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
		r = urdma_res_new(qp);
		r->psn = pkt->psn;
		r->npsn = urdma_msg_npsn(URDMA_WQE_RDMA_READ, len, r->mtu);
		r->va = va;
		r->rkey = rkey;
		r->len = len;
		r->busy = true;
		w->epsn = urdma_psn_add(pkt->psn, r->npsn);
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
		if (!target)
			return status == IB_WC_REM_ACCESS_ERR ?
			       URDMA_NAK_REM_ACCESS : URDMA_NAK_INV_REQ;
		r = urdma_res_new(qp);
		r->psn = pkt->psn;
		r->npsn = 1;
		r->atomic = true;
		if (pkt->opcode == (URDMA_TR_RC | URDMA_OP_CMP_SWP))
			r->orig = cmpxchg64(target, be64_to_cpu(a->cmp),
					    be64_to_cpu(a->swap_add));
		else
			r->orig = atomic64_fetch_add(be64_to_cpu(a->swap_add),
						     (atomic64_t *)target);
		w->epsn = urdma_psn_add(pkt->psn, 1);
		w->msn++;
		urdma_send_atomic_ack(eng, qp, r);
	}
	return 0;
}

/* Send READ responses due, a budget at a time.  Return: packets sent. */
static int urdma_resp_reads(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_peer peer;
	int sent = 0;
	u32 i;

	urdma_resp_peer(qp, &peer);
	for (i = 0; i < w->nres && sent < URDMA_WIRE_BUDGET; i++) {
		/* Oldest first: the entry after the newest. */
		struct urdma_rd_res *r = &w->res[(w->res_next + i) % w->nres];

		while (r->busy && sent < URDMA_WIRE_BUDGET) {
			u32 pay = min(r->len - r->off, r->mtu);
			bool first = !r->off, last = r->off + pay >= r->len;
			u32 psn = urdma_psn_add(r->psn, r->off / r->mtu);
			struct urdma_sg src, dst;
			struct urdma_tx tx;
			u8 op;

			if (!urdma_engine_charge(eng, pay))
				return sent;
			op = first && last ? URDMA_OP_READ_RESP_ONLY :
			     first ? URDMA_OP_READ_RESP_FIRST :
			     last ? URDMA_OP_READ_RESP_LAST :
				    URDMA_OP_READ_RESP_MIDDLE;
			if (pay && !urdma_rkey_sg(&peer, r->rkey, r->va + r->off,
						  pay, IB_ACCESS_REMOTE_READ,
						  &src)) {
				/* The memory went away under the READ. */
				r->busy = false;
				urdma_send_ack(eng, qp,
					       urdma_syn_nak(URDMA_NAK_REM_ACCESS),
					       psn);
				break;
			}
			if (urdma_wire_pkt(qp, op, psn, pay, false, false, &tx))
				return sent;
			if (urdma_opcodes[URDMA_TR_RC | op].flags &
			    URDMA_PF_AETH)
				urdma_put_aeth(&tx, op, urdma_syn_ack(), w->msn);
			if (pay) {
				dst.kva = tx.payload;
				dst.mr = NULL;
				dst.len = pay;
				if (!urdma_copy(&dst, 1, &src, 1, pay)) {
					kfree_skb(tx.skb);
					r->busy = false;
					urdma_send_ack(eng, qp,
						       urdma_syn_nak(URDMA_NAK_REM_OP),
						       psn);
					break;
				}
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
 * resource cache, never executed twice.  Return: 0, or a NAK code.
 */
static u8 urdma_resp_flush_or_atomic_write(struct urdma_qp *qp,
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

	urdma_resp_peer(qp, &peer);
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
	case IB_WC_SUCCESS:
		/*
		 * Answered, in order with the READs, by a READ response of
		 * no data (as rxe does); a duplicate gets it again.
		 */
		r = urdma_res_new(qp);
		r->psn = pkt->psn;
		r->npsn = 1;
		r->busy = true;
		w->epsn = urdma_psn_add(pkt->psn, 1);
		w->msn++;
		return 0;
	case IB_WC_REM_ACCESS_ERR:
		return URDMA_NAK_REM_ACCESS;
	default:
		return URDMA_NAK_INV_REQ;
	}
}

/* A duplicate request (its PSN is before the expected one). */
static void urdma_resp_dup(struct urdma_engine *eng, struct urdma_qp *qp,
			   const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	struct urdma_rd_res *r;

	if (pkt->flags & (URDMA_PF_READ | URDMA_PF_ATOMIC) ||
	    urdma_pkt_is_flush_or_atomic_write(pkt)) {
		r = urdma_res_find(w, pkt->psn);
		if (!r)
			return;		/* too old: the requester times out */
		if (r->atomic) {
			urdma_send_atomic_ack(eng, qp, r);
		} else {
			/* Start again at the PSN asked for. */
			r->off = urdma_psn_diff(pkt->psn, r->psn) * r->mtu;
			r->busy = true;
		}
		return;
	}
	/* SEND or WRITE: acknowledge again what has arrived. */
	w->ack_pending = true;
	w->ack_syn = urdma_syn_ack();
	w->ack_psn = urdma_psn_add(w->epsn, URDMA_PSN_MASK);
}

/* Whether a packet fits the message state (IBTA 9.7.5.1.2, C9-40..). */
VISIBLE_IF_KUNIT bool urdma_resp_seq_ok(const struct urdma_wire *w,
					const struct urdma_pkt *pkt)
{
	bool first = pkt->flags & URDMA_PF_FIRST;

	if (pkt->flags & URDMA_PF_SEND && !(pkt->flags & URDMA_PF_WRITE))
		return w->in_send ? !first : first && !w->in_write;
	if (pkt->flags & URDMA_PF_WRITE)
		return w->in_write ? !first : first && !w->in_send;
	return !w->in_send && !w->in_write;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_resp_seq_ok);

/* A request packet at the responder. */
static void urdma_resp_rx(struct urdma_engine *eng, struct urdma_qp *qp,
			  const struct urdma_pkt *pkt)
{
	struct urdma_wire *w = qp->wire;
	bool rc = urdma_is_rc(qp);
	s32 d = urdma_psn_diff(pkt->psn, w->epsn);
	int ret = 0;

	if (!rc && d) {
		/* UC: a lost packet loses the message. */
		w->in_send = false;
		w->in_write = false;
		w->drop_msg = !(pkt->flags & URDMA_PF_FIRST);
		w->epsn = pkt->psn;
		d = 0;
	}
	if (d > 0) {
		if (!w->nak_sent) {
			w->nak_sent = true;
			urdma_count(eng, URDMA_CNT_SEQ_NAKS_SENT);
			urdma_send_ack(eng, qp, urdma_syn_nak(URDMA_NAK_PSN_SEQ),
				       w->epsn);
		}
		return;
	}
	if (d < 0) {
		urdma_count(eng, URDMA_CNT_DUP_REQS);
		urdma_resp_dup(eng, qp, pkt);
		return;
	}
	w->nak_sent = false;
	if (w->drop_msg) {
		if (!(pkt->flags & URDMA_PF_FIRST)) {
			w->epsn = urdma_psn_add(w->epsn, 1);
			return;
		}
		w->drop_msg = false;
	}
	if (!urdma_resp_seq_ok(w, pkt)) {
		urdma_resp_nak(eng, qp, pkt->psn, URDMA_NAK_INV_REQ);
		return;
	}

	if (pkt->flags & (URDMA_PF_READ | URDMA_PF_ATOMIC)) {
		ret = urdma_resp_rd(eng, qp, pkt);
		if (ret)
			urdma_resp_nak(eng, qp, pkt->psn, ret);
		return;
	}
	if (urdma_pkt_is_flush_or_atomic_write(pkt)) {
		ret = urdma_resp_flush_or_atomic_write(qp, pkt);
		if (ret)
			urdma_resp_nak(eng, qp, pkt->psn, ret);
		return;
	}
	if (pkt->flags & URDMA_PF_WRITE) {
		ret = urdma_resp_write(eng, qp, pkt);
		if (ret) {
			urdma_resp_nak(eng, qp, pkt->psn, ret);
			return;
		}
		if (pkt->flags & URDMA_PF_SEND) {
			/* WRITE_WITH_IMM: the immediate takes a receive WQE. */
			struct urdma_msg m = {
				.src_qp = qp->attr.dest_qp_num,
				.cqe_opcode = URDMA_CQE_RECV_RDMA_IMM,
				.cqe_flags = URDMA_CQE_IMM,
				.solicited = pkt->se,
				.rc = rc,
				.len = w->msg_off,
			};

			memcpy(&m.ex, urdma_pkt_hdr(pkt, URDMA_H_IMM), 4);
			ret = urdma_recv_msg(eng, qp, to_udev(qp->ibqp.device),
					     &m);
		}
	} else {
		ret = urdma_resp_send(eng, qp, pkt);
	}
	if (ret == -EAGAIN) {
		if (pkt->flags & URDMA_PF_WRITE) {
			/* The retry brings this packet again: undo it. */
			w->in_write = !(pkt->flags & URDMA_PF_FIRST);
			w->msg_off -= pkt->paylen;
		}
		if (!rc) {
			w->drop_msg = true;
			w->epsn = urdma_psn_add(w->epsn, 1);
			return;
		}
		/* RNR NAK: the requester sends this packet again later. */
		urdma_count(eng, URDMA_CNT_RNR_WAITS);
		urdma_send_ack(eng, qp,
			       FIELD_PREP(URDMA_SYN_TYPE, URDMA_SYN_RNR) |
			       FIELD_PREP(URDMA_SYN_VAL,
					  READ_ONCE(qp->attr.min_rnr_timer)),
			       pkt->psn);
		return;
	}
	if (ret) {
		urdma_resp_nak(eng, qp, pkt->psn,
			       ret == -EIO ? URDMA_NAK_REM_OP :
			       ret == IB_WC_REM_OP_ERR ? URDMA_NAK_REM_OP :
							URDMA_NAK_INV_REQ);
		return;
	}
	w->epsn = urdma_psn_add(pkt->psn, 1);
	if (pkt->flags & URDMA_PF_LAST)
		w->msn++;
	if (rc && (pkt->ackreq || (pkt->flags & URDMA_PF_LAST))) {
		w->ack_pending = true;
		w->ack_syn = urdma_syn_ack();
		w->ack_psn = pkt->psn;
	}
}

/*
 * Whether @pkt comes from the address @qp is connected to and is addressed
 * to the QP's own (IPv4 addresses as IPv4-mapped GIDs, as in the AV).
 */
static bool urdma_pkt_from_peer(const struct urdma_qp *qp,
				const struct urdma_pkt *pkt)
{
	union ib_gid sgid, dgid;

	urdma_pkt_gids(pkt, &sgid, &dgid);
	return !memcmp(&sgid, &qp->av.dgid, sizeof(sgid)) &&
	       !memcmp(&dgid, &qp->av.sgid, sizeof(dgid));
}

/**
 * urdma_rx_conn - an RC or UC packet for @qp
 * @eng: the QP's engine, in a pass
 * @qp: the destination QP, which receives (RTR or later)
 * @pkt: the packet
 *
 * Return: false if it does not belong to this QP: another transport, or
 * another source or destination address than the QP's path (dropped and
 * counted).
 */
bool urdma_rx_conn(struct urdma_engine *eng, struct urdma_qp *qp,
		   const struct urdma_pkt *pkt)
{
	bool rc_pkt = (pkt->opcode & 0xe0) == URDMA_TR_RC;

	if (!READ_ONCE(qp->use_wire) || rc_pkt != urdma_is_rc(qp) ||
	    (pkt->flags & URDMA_PF_DETH) || !urdma_pkt_from_peer(qp, pkt))
		return false;
	if (pkt->flags & URDMA_PF_RESP)
		urdma_req_rx(eng, qp, pkt);
	else
		urdma_resp_rx(eng, qp, pkt);
	return true;
}

/* The coalesced ACK, if one is due and no READ response must go first. */
static int urdma_resp_flush_ack(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;

	if (!w->ack_pending || urdma_resp_reads_before(w, w->ack_psn))
		return 0;
	w->ack_pending = false;
	urdma_send_ack(eng, qp, w->ack_syn, w->ack_psn);
	return 1;
}

/**
 * urdma_wire_run - a wire QP's turn in a pass
 * @eng: its engine
 * @qp: an RC or UC QP whose peer is on the wire, in RTR, RTS or ERROR
 *
 * Return: work done.
 */
int urdma_wire_run(struct urdma_engine *eng, struct urdma_qp *qp)
{
	int work = 0;

	/*
	 * Responses go in PSN order.  An ACK waits for the READ responses
	 * before it (a requester would take it for a lost response), and
	 * goes before those after it: an ACK of an earlier PSN in the middle
	 * of a READ's responses ends the READ for rxe's completer (it resets
	 * its expected opcode), which then fails the QP on the next MIDDLE.
	 */
	work += urdma_resp_flush_ack(eng, qp);
	if (READ_ONCE(qp->attr.qp_state) != IB_QPS_ERR)
		work += urdma_resp_reads(eng, qp);
	work += urdma_resp_flush_ack(eng, qp);
	if (READ_ONCE(qp->attr.qp_state) == IB_QPS_ERR)
		return work;
	if (READ_ONCE(qp->attr.qp_state) == IB_QPS_RTS)
		work += urdma_req_run(eng, qp);
	return work;
}
