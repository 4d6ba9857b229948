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
	u32 pdn;	/* the PD its keys are checked in (XRC: the SRQ's); */
			/* ... a PD number outlives its PD, but no key does */
	u32 msn;	/* the MSN its last response carries */
	bool atomic;
	bool busy;	/* its answer (READ: responses) still to send */
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
	bool probe;		/* the packet being built is a probe: AckReq */
	bool probed;		/* a probe went out since the last progress */
	ktime_t timeout_at;	/* retransmit if no progress by then */
	u64 rto;		/* ... the interval that was armed, ns */
	ktime_t resume_at;	/* RNR NAK, local drop: wait until then */
	bool rnr_wait;		/* ... or until an ACK */
	u32 slot_size;
	u8 *slots;		/* URDMA_WIRE_WINDOW urdma_inflight */
	u32 xrc_srqn;		/* XRC: the SRQ of the packet being built */
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
	bool rwqe_held;		/* @rwqe waits for its first packet again, */
	u32 held_srqn;		/* ... taken from this XRC SRQ */
	u64 held_serial;
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
	u32 pdn;		/* the PD of the request's keys, per packet */
	struct urdma_srq *srq;	/* XRC: the SRQ it names, during one packet */
	u32 xrc_srqn;		/* XRC: the SRQ of the message under way, */
	u64 xrc_serial;		/* ... by its number and its serial */
};

/* The congestion window, in PSNs beyond the last ACK (wire_cc.c). */
#define URDMA_CC_CWND_INIT	16
#define URDMA_CC_CWND_MIN	2
/* Additive increase per window acknowledged; a sequence NAK cuts 1/2^N. */
#define URDMA_CC_AI		4
#define URDMA_CC_MD_SHIFT	3
/* After the local queue dropped a packet: wait for an ACK, or this long. */
#define URDMA_CC_DROP_WAIT_NS	(500 * NSEC_PER_USEC)
/* The adaptive RTO's floor, and the clock granularity G of RFC 6298. */
#define URDMA_RTO_FLOOR_NS	(2 * NSEC_PER_MSEC)
#define URDMA_RTO_GRAN_NS	(200 * NSEC_PER_USEC)

/**
 * struct urdma_cc - an RC requester's congestion control (wire_cc.c)
 * @srtt:	smoothed round-trip time, ns (0: no sample yet)
 * @rttvar:	its variation, ns
 * @backoff:	timeouts since the last progress: the RTO doubles for each
 * @cwnd:	PSNs it may have beyond the last ACK
 * @ssthresh:	slow start below it, additive increase above
 * @acc:	PSNs acknowledged toward the next additive increase
 * @recover:	PSN after the last one sent at the last cut: losses before
 *		an ACK reaches it belong to the same episode
 * @recovering:	a cut was made and no ACK has reached @recover yet
 * @timing:	a round trip is being timed: @rtt_psn, sent at @rtt_sent
 * @rtt_psn:	... the PSN whose ACK ends it
 * @rtt_sent:	... when it was sent
 */
struct urdma_cc {
	u64 srtt;
	u64 rttvar;
	u32 backoff;
	u32 cwnd;
	u32 ssthresh;
	u32 acc;
	u32 recover;
	bool recovering;
	bool timing;
	u32 rtt_psn;
	ktime_t rtt_sent;
};

void urdma_cc_init(struct urdma_cc *cc);
void urdma_cc_rtt(struct urdma_cc *cc, u64 ns);
u64 urdma_cc_rto(const struct urdma_cc *cc, u64 ceil);
void urdma_cc_acked(struct urdma_cc *cc, u32 acked, u32 n);
bool urdma_cc_loss(struct urdma_cc *cc, u32 psn_max);
bool urdma_cc_congestion(struct urdma_cc *cc, u32 psn_max);
void urdma_cc_timeout(struct urdma_cc *cc, u32 psn_max);

/**
 * struct urdma_wire - an RC or UC QP's transport state, by role
 * @req: the requester's (wire_req.c, wire_req_retx.c)
 * @cc: the requester's congestion control (wire_cc.c)
 * @comp: the completer's (wire_comp.c)
 * @resp: the responder's (wire_resp.c, wire_resp_read.c)
 * @cnp_at: when the last CNP for a CE-marked packet went out (wire.c)
 *
 * Only the QP's engine thread touches it, except urdma_wire_reset() (with
 * the engine synced) and the allocation at RTR.
 */
struct urdma_wire {
	struct urdma_wire_req req;
	struct urdma_cc cc;
	struct urdma_wire_comp comp;
	struct urdma_wire_resp resp;
	ktime_t cnp_at;
};

/* A QP sends at most one CNP per this long, as a ConnectX's NP does. */
#define URDMA_CNP_GAP_NS	(50 * NSEC_PER_USEC)

bool urdma_wire_ecn(void);

int urdma_wire_alloc(struct urdma_qp *qp);
void urdma_wire_reset(struct urdma_qp *qp);
void urdma_wire_free(struct urdma_qp *qp);
int urdma_wire_run(struct urdma_engine *eng, struct urdma_qp *qp);
void urdma_resp_flush(struct urdma_engine *eng, struct urdma_qp *qp);
bool urdma_req_psn_outstanding(const struct urdma_wire *w, u32 psn);

void urdma_req_rewind(struct urdma_qp *qp, u32 psn);

#if IS_ENABLED(CONFIG_KUNIT)
struct urdma_pkt;
u32 urdma_req_resume_psn(struct urdma_qp *qp);
u32 urdma_req_in_flight(struct urdma_qp *qp, u32 psn);
bool urdma_resp_seq_ok(const struct urdma_wire *w,
		       const struct urdma_pkt *pkt);
#endif

#endif /* URDMA_WIRE_H */
