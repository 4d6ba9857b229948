// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RC and UC on the wire (IBTA Vol. 1 ch. 9.7, 9.8, 9.9).
 *
 * Requester.  WQEs are copied out of the SQ once, into a window of
 * URDMA_WIRE_WINDOW in-flight slots; every transmission, first or retry,
 * is built from the copy.  An SQ slot is retired only when its WQE
 * completes, so user space cannot post more than the SQ holds.  Messages
 * are cut into path-MTU packets; a READ request spans the PSNs of its
 * responses.  At most the congestion window of request packets go beyond
 * the last ACK (wire_cc.c), and AckReq is set on each message's last
 * packet, at least every half window (at most 16 packets apart) and on
 * the packet that fills the window.
 * Recovery is go-back-N: a sequence NAK, an RNR NAK (after the RNR timer)
 * or the local ACK timeout restarts transmission at the PSN concerned,
 * within the WQE that holds it; an adaptive RTO that runs out first sends
 * the last packet again as a probe (wire_req_retx.c).  Completions are in SQ
 * order.
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
 * is connected to, to the QP's own address (urdma_rx_conn() in wire.c, as
 * rxe's check_addr()), and only inside the QP's PSN window: a response only for
 * a PSN that is outstanding (urdma_req_psn_outstanding()), a request only
 * at the expected PSN (earlier ones are duplicates, answered from what was
 * already done; later ones draw a sequence NAK).  RoCE has no
 * authentication beyond that: a forged packet with the peer's address and
 * an in-window PSN cannot be told from the peer's (docs/security.md).
 *
 * Files.  This one: the wire state's lifetime, building packets and the
 * QP's turn in a pass.  wire.c hands a received packet to the completer or
 * the responder.  wire_req.c is the requester (transmit) and
 * wire_req_retx.c its go-back-N and retransmit timer, wire_comp.c the
 * completer (ACKs, NAKs and responses; completions in SQ order),
 * wire_resp.c the responder and wire_resp_read.c its resource cache (READs
 * and atomics); wire_rc.h is what they share.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/rdma_netlink.h>

#include "exec.h"
#include "wire_rc.h"

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

	if (w && w->resp.nres >= nres)
		return 0;
	if (!w) {
		w = kzalloc(sizeof(*w), GFP_KERNEL);
		if (!w)
			return -ENOMEM;
		w->req.slot_size = ALIGN(sizeof(struct urdma_inflight) +
					 qp->sq.stride, 8);
		w->req.slots = kvcalloc(URDMA_WIRE_WINDOW, w->req.slot_size,
					GFP_KERNEL);
		w->resp.rwqe = kzalloc(URDMA_MAX_STRIDE, GFP_KERNEL);
		if (!w->req.slots || !w->resp.rwqe) {
			kvfree(w->req.slots);
			kfree(w->resp.rwqe);
			kfree(w);
			return -ENOMEM;
		}
		qp->wire = w;
	}
	/* Not yet used by the engine: the QP is not in RTR. */
	kfree(w->resp.res);
	w->resp.res = kcalloc(nres, sizeof(*w->resp.res), GFP_KERNEL);
	w->resp.nres = w->resp.res ? nres : 0;
	return w->resp.res ? 0 : -ENOMEM;
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
	res = w->resp.res;
	nres = w->resp.nres;
	slots = w->req.slots;
	rwqe = w->resp.rwqe;
	size = w->req.slot_size;
	memset(w, 0, sizeof(*w));
	w->resp.res = res;
	w->resp.nres = nres;
	w->req.slots = slots;
	w->resp.rwqe = rwqe;
	w->req.slot_size = size;
	memset(res, 0, nres * sizeof(*res));
}

void urdma_wire_free(struct urdma_qp *qp)
{
	struct urdma_wire *w = qp->wire;

	if (!w)
		return;
	kfree(w->resp.res);
	kfree(w->resp.rwqe);
	kvfree(w->req.slots);
	kfree(w);
	qp->wire = NULL;
}

/**
 * urdma_fill_res_qp_entry - a QP's transport state for `rdma res show qp -dd`
 * @msg: the netlink message
 * @ibqp: the QP; the core holds its restrack entry, so it is not destroyed
 *
 * An RC or XRC requester on the wire shows its congestion control: the
 * window and slow-start threshold in PSNs, the smoothed round trip and its
 * variance, and the retransmit interval last armed, in microseconds.  The
 * engine changes them as it goes: each is one value of the moment.  Any
 * user may dump every QP, so nothing here is a key or an address.
 *
 * Return: 0, or -EMSGSIZE.
 */
int urdma_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct urdma_qp *qp = to_uqp(ibqp);
	const struct urdma_wire *w;
	struct nlattr *table;
	int ret = 0;

	/* Against urdma_wire_reset() and the allocation at RTR. */
	mutex_lock(&qp->state_lock);
	w = qp->wire;
	if (!w || !urdma_is_reliable(qp))
		goto out;
	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table) {
		ret = -EMSGSIZE;
		goto out;
	}
	if (rdma_nl_put_driver_u32(msg, "cwnd", READ_ONCE(w->cc.cwnd)) ||
	    rdma_nl_put_driver_u32(msg, "ssthresh", READ_ONCE(w->cc.ssthresh)) ||
	    rdma_nl_put_driver_u64(msg, "srtt_us",
				   div_u64(READ_ONCE(w->cc.srtt), NSEC_PER_USEC)) ||
	    rdma_nl_put_driver_u64(msg, "rttvar_us",
				   div_u64(READ_ONCE(w->cc.rttvar), NSEC_PER_USEC)) ||
	    rdma_nl_put_driver_u64(msg, "rto_us",
				   div_u64(READ_ONCE(w->req.rto), NSEC_PER_USEC))) {
		nla_nest_cancel(msg, table);
		ret = -EMSGSIZE;
		goto out;
	}
	nla_nest_end(msg, table);
out:
	mutex_unlock(&qp->state_lock);
	return ret;
}

/* ---- building packets --------------------------------------------------- */

/*
 * Start a packet of operation @opcode, in the QP's transport, to its peer:
 * fills the BTH, and an XRC request's XRCETH (the SRQ of the WQE it is of,
 * req.xrc_srqn).
 */
int urdma_wire_pkt(struct urdma_qp *qp, u8 opcode, u32 psn, u32 paylen,
		   bool ackreq, bool se, struct urdma_tx *tx)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	u8 full = urdma_qp_tr(qp) | opcode;
	int ret;

	ret = urdma_pkt_alloc(udev, full, paylen, tx);
	if (ret)
		return ret;
	if (urdma_opcodes[full].flags & URDMA_PF_XRCETH) {
		struct urdma_xrceth *x = urdma_tx_hdr(tx, URDMA_H_XRCETH);

		x->srqn = cpu_to_be32(FIELD_PREP(URDMA_XRCETH_SRQN,
						 qp->wire->req.xrc_srqn));
	}
	/* RC reacts to congestion notices; UC has no window to cut. */
	tx->ect = urdma_is_reliable(qp) && urdma_wire_ecn();
	if (se)
		tx->bth->w0 |= cpu_to_be32(URDMA_BTH_SE);
	tx->bth->w1 = cpu_to_be32(FIELD_PREP(URDMA_BTH_QPN,
					     qp->attr.dest_qp_num));
	tx->bth->w2 = cpu_to_be32(FIELD_PREP(URDMA_BTH_PSN, psn) |
				  (ackreq ? URDMA_BTH_ACKREQ : 0));
	return 0;
}

int urdma_wire_send(struct urdma_engine *eng, struct urdma_qp *qp,
		    struct urdma_tx *tx)
{
	int ret = urdma_pkt_xmit(to_udev(qp->ibqp.device), &qp->av, tx,
				 urdma_udp_sport(qp->av.flow_label,
						 qp->ibqp.qp_num,
						 qp->attr.dest_qp_num));

	urdma_count(eng, ret ? URDMA_CNT_TX_ERRS : URDMA_CNT_TX_PKTS);
	return ret;
}

void urdma_put_reth(void *p, u64 va, u32 rkey, u32 len)
{
	struct urdma_reth *reth = p;

	reth->va = cpu_to_be64(va);
	reth->rkey = cpu_to_be32(rkey);
	reth->len = cpu_to_be32(len);
}

/* Fill the AETH of packet @tx (of an opcode that carries one). */
void urdma_put_aeth(struct urdma_tx *tx, u8 syn, u32 msn)
{
	struct urdma_aeth *aeth = urdma_tx_hdr(tx, URDMA_H_AETH);

	aeth->w = cpu_to_be32(FIELD_PREP(URDMA_AETH_SYN, syn) |
			      FIELD_PREP(URDMA_AETH_MSN, msn));
}

/* An ACK, NAK or RNR NAK from the responder. */
void urdma_send_ack(struct urdma_engine *eng, struct urdma_qp *qp,
		    u8 syn, u32 psn)
{
	struct urdma_tx tx;

	if (urdma_wire_pkt(qp, URDMA_OP_ACK, psn, 0, false, false, &tx)) {
		urdma_count(eng, URDMA_CNT_TX_ERRS);
		return;
	}
	urdma_put_aeth(&tx, syn, qp->wire->resp.msn);
	urdma_wire_send(eng, qp, &tx);
}

/* ---- the QP's turn ------------------------------------------------------- */

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
	 * goes before those after it, here or, when a READ before it ends
	 * inside urdma_resp_reads(), before the next READ's first response:
	 * an ACK of an earlier PSN in the middle of a READ's responses ends
	 * the READ for rxe's completer (it resets its expected opcode), which
	 * then fails the QP on the next MIDDLE (an NFS server on rxe reading
	 * from a client on urdma hit it).
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
