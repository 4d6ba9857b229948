/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A connected QP's transport state on the wire path (wire_rc.c).
 */
#ifndef URDMA_WIRE_H
#define URDMA_WIRE_H

#include <linux/ktime.h>
#include <linux/types.h>

struct urdma_qp;
struct urdma_engine;

/* WQEs a requester has in flight, and packets beyond the last ACK. */
#define URDMA_WIRE_WINDOW	32
#define URDMA_WIRE_PKTS		128

/**
 * struct urdma_inflight - a send WQE the requester has started
 * @first_psn:	its first PSN
 * @npsn:	PSNs it spans (a READ spans its responses)
 * @mtu:	the path MTU it is cut into packets by, fixed at its start:
 *		PSNs, offsets and go-back positions all derive from it
 * @len:	its message length
 * @got:	READ: response packets received in order
 * @asked:	READ: 1 + the @got it was asked again from after a gap (0: none)
 * @done:	READ or atomic: the response is complete; any: @status is final
 * @status:	its completion status
 * @wqe:	the copy of the WQE that every (re)transmission uses
 */
struct urdma_inflight {
	u32 first_psn;
	u32 npsn;
	u32 mtu;
	u32 len;
	u32 got;
	u32 asked;
	bool done;
	u8 status;
	u8 wqe[] __aligned(8);
};

/*
 * A READ or atomic the responder executed, kept for duplicates.  A READ's
 * responses are cut by @mtu, the path MTU when it arrived.
 */
struct urdma_rd_res {
	u32 psn;
	u32 npsn;
	u32 mtu;
	u64 va;
	u32 rkey;
	u32 len;
	u32 off;	/* READ: response bytes sent */
	bool atomic;
	bool busy;	/* READ: responses still to send */
	u64 orig;	/* atomic: the value it returned */
};

/**
 * struct urdma_wire_req - the requester's state
 *
 * The in-flight window of WQEs (@slots) is the requester's; the completer
 * retires WQEs from it in SQ order.
 */
struct urdma_wire_req {
	bool req_init;
	u32 psn;		/* next PSN to send */
	u32 psn_max;		/* ... before any go-back: PSNs sent end here */
	u32 next;		/* SQ index of the next WQE to start */
	u32 cur;		/* SQ index of the WQE being (re)sent */
	u32 off;		/* ... bytes of it sent */
	u32 since_ackreq;
	ktime_t timeout_at;	/* retransmit if no progress by then */
	ktime_t resume_at;	/* RNR NAK: wait until then */
	bool rnr_wait;
	u32 slot_size;
	u8 *slots;		/* URDMA_WIRE_WINDOW urdma_inflight */
};

/* The completer's state: what the responder has answered, retries left. */
struct urdma_wire_comp {
	u32 acked;		/* last PSN acknowledged */
	u8 retry_left;
	u8 rnr_left;
};

/* The responder's state. */
struct urdma_wire_resp {
	u32 epsn;		/* next PSN expected */
	u32 msn;
	bool nak_sent;		/* a sequence NAK is outstanding */
	bool ack_pending;
	u8 ack_syn;
	u32 ack_psn;
	bool in_send;		/* a SEND message is under way */
	bool in_write;		/* a WRITE message is under way */
	bool drop_msg;		/* UC: skip to the next FIRST or ONLY */
	u32 msg_off;
	u64 wr_va;
	u32 wr_rkey;
	u32 wr_len;
	u32 nres;
	u32 res_next;
	struct urdma_rd_res *res;
	u8 *rwqe;		/* the receive WQE a SEND consumes */
};

/**
 * struct urdma_wire - an RC or UC QP's transport state, by role
 * @req: the requester's (wire_req.c)
 * @comp: the completer's (wire_comp.c)
 * @resp: the responder's (wire_resp.c)
 *
 * Only the QP's engine thread touches it, except urdma_wire_reset() (with
 * the engine synced) and the allocation at RTR.
 */
struct urdma_wire {
	struct urdma_wire_req req;
	struct urdma_wire_comp comp;
	struct urdma_wire_resp resp;
};

int urdma_wire_alloc(struct urdma_qp *qp);
void urdma_wire_reset(struct urdma_qp *qp);
void urdma_wire_free(struct urdma_qp *qp);
int urdma_wire_run(struct urdma_engine *eng, struct urdma_qp *qp);
bool urdma_req_psn_outstanding(const struct urdma_wire *w, u32 psn);

void urdma_req_rewind(struct urdma_qp *qp, u32 psn);

#if IS_ENABLED(CONFIG_KUNIT)
struct urdma_pkt;
u32 urdma_req_resume_psn(struct urdma_qp *qp);
bool urdma_resp_seq_ok(const struct urdma_wire *w,
		       const struct urdma_pkt *pkt);
#endif

#endif /* URDMA_WIRE_H */
