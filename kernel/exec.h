/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The engine's internals, shared by its stages: sched.c (a QP's turn),
 * exec.c (a send WQE on the local path), recv.c (receive WQEs), complete.c
 * (CQEs), mem.c (keys and copies), wire.c (UD datagrams and the receive
 * demux) and wire_rc.c (RC and UC; with wire_req*.c, wire_comp.c and
 * wire_resp*.c).
 */
#ifndef URDMA_EXEC_H
#define URDMA_EXEC_H

#include "urdma.h"

/* WQEs a QP may execute per pass, so that one busy QP cannot starve others. */
#define URDMA_QP_BUDGET		16
#define URDMA_GRH_LEN		40
#define URDMA_COPY_RESCHED	(256 * 1024)
static_assert(URDMA_KICK_BYTES < URDMA_COPY_RESCHED);

/* A piece of a message: kernel bytes, or a range of an MR. */
struct urdma_sg {
	void *kva;		/* inline data, the GRH, an atomic result */
	struct urdma_mr *mr;	/* else: translates [va, va + len) */
	u64 va;
	u32 len;
};

/* An engine thread's private copies; never on the stack (they are big). */
struct urdma_scratch {
	union {
		struct urdma_send_wqe hdr;
		u8 raw[URDMA_MAX_STRIDE];
	} swqe;
	union {
		struct urdma_recv_wqe hdr;
		u8 raw[URDMA_MAX_STRIDE];
	} rwqe;
	struct urdma_sg src[URDMA_MAX_SGE];
	struct urdma_sg dst[URDMA_MAX_SGE + 1];	/* + the GRH */
	u8 grh[URDMA_GRH_LEN];
	u64 atomic_orig;
};

/* The responder side of a WQE on the local path. */
struct urdma_peer {
	struct urdma_dev *dev;
	struct urdma_qp *qp;
	struct urdma_srq *srq;	/* XRC: the SRQ the WQE names */
	u32 pdn;
	struct urdma_av av;	/* UD: the AH's address vector */
};

/**
 * struct urdma_msg - a message that consumes a receive WQE
 * @src: its data (NULL: none, as for RDMA_WRITE_WITH_IMM), @nsrc pieces
 * @len: its length
 * @grh: UD: the 40 bytes that go first into the receive buffer
 * @ex: immediate data (big-endian) or invalidated rkey, per @cqe_flags
 * @rc: the sender is told of receiver errors, and waits on RNR
 * @invalidate: SEND_WITH_INV on the local path: invalidate @ex when the
 *	message is sure to land (urdma_recv_msg())
 * @srq: XRC: the SRQ the message names; NULL: the QP's own RQ or SRQ
 */
struct urdma_msg {
	struct urdma_sg *src;
	int nsrc;
	u64 len;
	const u8 *grh;
	u32 src_qp;
	u32 ex;
	u8 cqe_opcode;
	u8 cqe_flags;
	u8 net_type;
	u8 sl;
	bool solicited;
	bool rc;
	bool invalidate;
	struct urdma_srq *srq;
};

/*
 * Not a completion status: the pages of an ODP MR are being faulted in,
 * and the WQE or packet waits for them (a u8 status's -EAGAIN).
 */
#define URDMA_WC_ODP_WAIT	0xff
/*
 * urdma_sgl_ready()'s answer for the local side of a WQE: IB_WC_SUCCESS,
 * URDMA_WC_ODP_WAIT while the pages come, or IB_WC_LOC_PROT_ERR.
 */
static inline u8 urdma_ready_status(int ret)
{
	if (!ret)
		return IB_WC_SUCCESS;
	return ret == -EAGAIN ? URDMA_WC_ODP_WAIT : IB_WC_LOC_PROT_ERR;
}

/* ... and looks again this often (the work item that faults wakes it too). */
#define URDMA_ODP_WAIT_NS	(50 * NSEC_PER_USEC)
/*
 * A READ looks ahead this far when it starts, at the requester and at the
 * responder: a bounded walk, in a pass, for a request of up to 2 GiB.
 */
#define URDMA_ODP_AHEAD		SZ_1M

/* What executing a WQE came to. */
enum urdma_exec_result {
	URDMA_EXEC_DONE,	/* retire it with the status given */
	URDMA_EXEC_RNR,		/* responder had no receive WQE: wait */
	URDMA_EXEC_FAULT,	/* ODP pages are being faulted in: wait */
	URDMA_EXEC_NO_PEER,	/* nobody answered: transport retry */
	URDMA_EXEC_DEFER,	/* too big for a kick: the thread runs it */
};

/* Has WQE opcode @op any of the URDMA_WOP_* @flags (urdma_wqe_ops[])? */
static inline bool urdma_wop(u8 op, u16 flags)
{
	return urdma_wqe_op(op)->flags & flags;
}

/* retry_cnt and rnr_retry are 3-bit fields; an rnr_retry of 7 never ends. */
#define URDMA_RETRY_MAX			7
#define URDMA_RNR_RETRY_FOREVER		7

/*
 * urdma_retry_spend - take one retry from the budget *@left
 * @left: retries still allowed (from retry_cnt or rnr_retry)
 * @forever: this budget never runs out (rnr_retry 7; or a local ACK
 *	timeout of 0, which means no timeout)
 *
 * The local path and the wire path both spend their budgets here.
 * Return: false if none was left: the WQE fails.
 */
static inline bool urdma_retry_spend(u8 *left, bool forever)
{
	if (forever)
		return true;
	if (!*left)
		return false;
	(*left)--;
	return true;
}

/* sched.c: a QP's turn, its state, the timers */
bool urdma_qp_set_error(struct urdma_qp *qp);
void urdma_qp_fatal(struct urdma_qp *qp);
u64 urdma_ack_timeout_ns(u8 timeout);
u64 urdma_rnr_ns(u8 rnr_timer);

/* exec.c: a send WQE on the local path */
u32 urdma_qp_pdn(const struct urdma_qp *qp);
void urdma_count(struct urdma_engine *eng, enum urdma_counter c);
void urdma_count_add(struct urdma_engine *eng, enum urdma_counter c, u64 n);
bool urdma_state_receives(enum ib_qp_state state);
bool urdma_ud_qkey_ok(const struct urdma_qp *qp, u32 qkey);
u64 urdma_local_peer_serial(const struct urdma_av *av, u32 dqpn);
int urdma_find_peer(struct urdma_qp *qp, const struct urdma_send_wqe *wqe,
		    struct urdma_peer *peer);
u8 urdma_wqe_gather(struct urdma_engine *eng, struct urdma_qp *qp,
		    int access, int *nsrc, u64 *len);
u32 urdma_wqe_qkey(const struct urdma_qp *qp,
		   const struct urdma_send_wqe *wqe);
bool urdma_wqe_valid(const struct urdma_qp *qp,
		     const struct urdma_send_wqe *wqe);
u8 urdma_exec_local(struct urdma_qp *qp, const struct urdma_send_wqe *wqe);
enum urdma_exec_result urdma_exec(struct urdma_engine *eng,
				  struct urdma_qp *qp, u8 *status,
				  u32 *byte_len);

/* recv.c: receive WQEs and the messages delivered into them */
int urdma_take_recv(struct urdma_engine *eng, struct urdma_qp *qp,
		    struct urdma_srq *srq, u32 *max_sge, u64 need);
bool urdma_rwqe_valid(const struct urdma_recv_wqe *rwqe, u32 max_sge);
struct urdma_srq *urdma_qp_srq(const struct urdma_qp *qp);
void urdma_complete_recv(struct urdma_engine *eng, struct urdma_qp *qp,
			 struct urdma_srq *srq, struct urdma_cqe *cqe,
			 bool solicited);
void urdma_build_grh(u8 *grh, const struct urdma_av *av, u32 len);
int urdma_recv_msg(struct urdma_engine *eng, struct urdma_qp *rqp,
		   struct urdma_dev *rdev, const struct urdma_msg *m);
int urdma_deliver(struct urdma_engine *eng, struct urdma_qp *qp,
		  const struct urdma_peer *peer,
		  const struct urdma_send_wqe *wqe, struct urdma_sg *src,
		  int nsrc, u64 len);

/* complete.c: CQEs */
bool urdma_cq_push(struct urdma_engine *eng, struct urdma_cq *cq,
		   struct urdma_cqe *src, bool solicited);
bool urdma_complete_send(struct urdma_engine *eng, struct urdma_qp *qp,
			 u64 wr_id, u8 opcode, u32 byte_len, u8 status);
u8 urdma_sq_done(struct urdma_engine *eng, struct urdma_qp *qp,
		 const struct urdma_send_wqe *wqe, u32 byte_len, u8 status);

/* mem.c: keys, copies, windows, atomics */
u8 urdma_lkey_sgl(struct urdma_dev *udev, u32 pdn,
		  const struct urdma_sge *sge, unsigned int num,
		  int access, struct urdma_sg *sg, int *nsg, u64 *len);
bool urdma_rkey_sg(const struct urdma_peer *peer, u32 rkey, u64 va,
		   u64 len, int access, struct urdma_sg *sg);
int urdma_sgl_ready(const struct urdma_sg *sg, int n, u64 len, bool write);
int __urdma_copy(struct urdma_sg *dst, int ndst, struct urdma_sg *src,
		 int nsrc, u64 len);
int urdma_copy(struct urdma_sg *dst, int ndst, struct urdma_sg *src,
	       int nsrc, u64 len);
int urdma_tx_copy(struct urdma_tx *tx, struct urdma_sg *src, int nsrc,
		  u32 len);
void urdma_sgl_skip(struct urdma_sg *sg, int n, u32 skip);
bool urdma_invalidate(const struct urdma_qp *qp, u32 pdn, u32 key,
		      bool remote);
u8 urdma_bind_mw(struct urdma_qp *qp, const struct urdma_send_wqe *wqe);
u8 urdma_reg_mr(struct urdma_qp *qp, const struct urdma_send_wqe *wqe);
u64 *urdma_atomic_target(const struct urdma_peer *peer, u64 va, u32 rkey,
			 int access, u8 *status);
u8 urdma_atomic_write(const struct urdma_peer *peer, u64 va, u32 rkey,
		      u64 value);
u8 urdma_flush(const struct urdma_peer *peer, u8 type, u8 level, u32 rkey,
	       u64 va, u64 len);

/* mcast.c */
u32 urdma_mcast_deliver(struct urdma_engine *eng, struct urdma_dev *udev,
			const union ib_gid *gid, const struct urdma_qp *skip,
			const struct urdma_msg *m, u32 qkey);
void urdma_mcast_local(struct urdma_engine *eng, struct urdma_qp *qp,
		       const struct urdma_send_wqe *wqe,
		       const struct urdma_av *av, int nsrc, u32 len);

/* wire.c: UD packets, and received packets to their QP and role */
u8 urdma_ud_xmit(struct urdma_engine *eng, struct urdma_qp *qp,
		 const struct urdma_send_wqe *wqe, const struct urdma_av *av,
		 int nsrc, u32 len);

#endif /* URDMA_EXEC_H */
