// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What the engine does with a QP: execute its send WQEs, consume the
 * responder's receive WQEs, write completions, and flush queues in ERROR.
 *
 * The local path.  When the destination QP lives on a urdma device of this
 * host, the requester's thread plays both ends: it checks the responder's
 * keys and receive WQEs as an IBTA responder would and copies the bytes
 * directly between the two MRs' pinned pages.  Nothing is touched until
 * every key, bound and access right of both sides has been checked, so an
 * error completion means no data moved.
 *
 * Ring memory is hostile.  A WQE is copied out of the ring once, into the
 * thread's scratch area, and only the copy is validated and used.  Indices
 * that user space writes are requests: a producer index that runs more than
 * a ring ahead of the engine's consumer index puts the QP in ERROR.
 *
 * Locks: rq_lock (a QP's RQ), srq->lock and cq->lock.  The engine never
 * holds two of them at once: a receive WQE is taken under its queue's lock,
 * which is dropped before its CQE is pushed under the CQ's.  (Resizing a
 * ring nests them under the context's mem_lock mutex: cq.c, srq.c.)  All
 * three are spinlocks taken with interrupts off, because kernel consumers
 * post and poll from any context.  No lock is held while data is copied.
 */
#include <linux/atomic.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/sched.h>
#include <net/ip.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "urdma.h"
#include "exec.h"

struct urdma_scratch *urdma_scratch_alloc(void)
{
	return kzalloc(sizeof(struct urdma_scratch), GFP_KERNEL);
}

/* What executing a WQE came to. */
enum urdma_exec_result {
	URDMA_EXEC_DONE,	/* retire it with the status given */
	URDMA_EXEC_RNR,		/* responder had no receive WQE: wait */
	URDMA_EXEC_NO_PEER,	/* nobody answered: transport retry */
	URDMA_EXEC_DEFER,	/* too big for a kick: the thread runs it */
};

u32 urdma_qp_pdn(const struct urdma_qp *qp)
{
	return to_upd(qp->ibqp.pd)->pdn;
}

void urdma_count(struct urdma_engine *eng, enum urdma_counter c)
{
	WRITE_ONCE(eng->cnt[c], eng->cnt[c] + 1);
}

/* ---- QP state --------------------------------------------------------------- */

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

void urdma_qp_event(struct urdma_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/* ---- completions ------------------------------------------------------------ */

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

static u8 urdma_cqe_opcode(u8 wqe_opcode)
{
	static const u8 map[URDMA_WQE_NUM_OPCODES] = {
		[URDMA_WQE_RDMA_WRITE] = URDMA_CQE_RDMA_WRITE,
		[URDMA_WQE_RDMA_WRITE_IMM] = URDMA_CQE_RDMA_WRITE,
		[URDMA_WQE_SEND] = URDMA_CQE_SEND,
		[URDMA_WQE_SEND_IMM] = URDMA_CQE_SEND,
		[URDMA_WQE_SEND_INV] = URDMA_CQE_SEND,
		[URDMA_WQE_RDMA_READ] = URDMA_CQE_RDMA_READ,
		[URDMA_WQE_ATOMIC_CMP_SWP] = URDMA_CQE_COMP_SWAP,
		[URDMA_WQE_ATOMIC_FETCH_ADD] = URDMA_CQE_FETCH_ADD,
		[URDMA_WQE_LOCAL_INV] = URDMA_CQE_LOCAL_INV,
		[URDMA_WQE_BIND_MW] = URDMA_CQE_BIND_MW,
		[URDMA_WQE_ATOMIC_WRITE] = URDMA_CQE_ATOMIC_WRITE,
		[URDMA_WQE_FLUSH] = URDMA_CQE_FLUSH,
		[URDMA_WQE_REG_MR] = URDMA_CQE_REG_MR,
	};

	return wqe_opcode < URDMA_WQE_NUM_OPCODES ? map[wqe_opcode] :
						    URDMA_CQE_SEND;
}

/* A send completion; false if the CQ overflowed. */
bool urdma_complete_send(struct urdma_engine *eng, struct urdma_qp *qp,
			 u64 wr_id, u8 opcode, u32 byte_len, u8 status)
{
	struct urdma_cqe cqe = {
		.wr_id = wr_id,
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
		.opcode = urdma_cqe_opcode(opcode),
		.status = status,
	};

	return urdma_cq_push(eng, to_ucq(qp->ibqp.send_cq), &cqe, false);
}

/* ---- memory ----------------------------------------------------------------- */

/* The bytes of @sg at @off: kernel address and how many are contiguous. */
void *urdma_sg_kva(const struct urdma_sg *sg, u32 off, u32 want,
		   u32 *contig)
{
	if (sg->kva) {
		*contig = want;
		return sg->kva + off;
	}
	if (sg->mr->mem.type == URDMA_MEM_DMA) {
		*contig = want;
		return (void *)(uintptr_t)(sg->va + off);
	}
	return urdma_mtt_translate(&sg->mr->mtt, sg->va + off, want, contig);
}

static bool urdma_mr_in_bounds(const struct urdma_mr *mr, u64 va, u64 len)
{
	u64 end;

	if (mr->mem.type == URDMA_MEM_DMA)
		return true;
	return va >= mr->mtt.iova && !check_add_overflow(va, len, &end) &&
	       end <= mr->mtt.iova + mr->mtt.length;
}

static struct urdma_mr *urdma_mem_to_mr(struct urdma_mem *mem)
{
	return container_of(mem, struct urdma_mr, mem);
}

/**
 * urdma_lkey_sg - resolve a local SGE
 * @udev: the QP's device
 * @pdn: the QP's PD
 * @sge: the SGE (from the scratch copy)
 * @access: IB_ACCESS_LOCAL_WRITE if the engine writes there, else 0
 * @sg: filled on success
 *
 * Return: IB_WC_SUCCESS or IB_WC_LOC_PROT_ERR.
 */
static u8 urdma_lkey_sg(struct urdma_dev *udev, u32 pdn,
			const struct urdma_sge *sge, int access,
			struct urdma_sg *sg)
{
	struct urdma_mem *mem = urdma_key_lookup(&udev->keys, sge->lkey);
	struct urdma_mr *mr;

	if (!mem || mem->type == URDMA_MEM_MW ||
	    READ_ONCE(mem->state) != URDMA_MEM_VALID ||
	    READ_ONCE(mem->pdn) != pdn || !urdma_mem_grants(mem, access))
		return IB_WC_LOC_PROT_ERR;
	mr = urdma_mem_to_mr(mem);
	if (!urdma_mr_in_bounds(mr, sge->addr, sge->length))
		return IB_WC_LOC_PROT_ERR;
	sg->kva = NULL;
	sg->mr = mr;
	sg->va = sge->addr;
	sg->len = sge->length;
	return IB_WC_SUCCESS;
}

/**
 * urdma_lkey_sgl - resolve a WQE's SGE list
 * @udev, @pdn, @access: as for urdma_lkey_sg()
 * @sge: the SGEs
 * @num: how many
 * @sg: the scatter list, filled; zero-length SGEs are dropped
 * @nsg: entries filled
 * @len: the total length
 *
 * Return: IB_WC_SUCCESS, IB_WC_LOC_PROT_ERR or IB_WC_LOC_LEN_ERR.
 */
u8 urdma_lkey_sgl(struct urdma_dev *udev, u32 pdn,
		  const struct urdma_sge *sge, unsigned int num,
		  int access, struct urdma_sg *sg, int *nsg, u64 *len)
{
	unsigned int i;
	u8 status;

	*nsg = 0;
	*len = 0;
	for (i = 0; i < num; i++) {
		if (!sge[i].length)
			continue;
		status = urdma_lkey_sg(udev, pdn, &sge[i], access, &sg[*nsg]);
		if (status)
			return status;
		*len += sge[i].length;
		(*nsg)++;
	}
	return *len > URDMA_MAX_MSG_SIZE ? IB_WC_LOC_LEN_ERR : IB_WC_SUCCESS;
}

/**
 * urdma_rkey_sg - resolve a remote range at the responder
 * @peer: the responder
 * @rkey: an MR's key or a bound window's
 * @va: start
 * @len: bytes; 0 means no access is made and the key is not checked
 * @access: IB_ACCESS_REMOTE_* needed
 * @sg: filled on success
 *
 * An MR's key is checked against the MR; a window's against the window
 * and then the MR behind it (urdma_mw_mr()), every time.
 *
 * Return: whether the responder grants the access.
 */
bool urdma_rkey_sg(const struct urdma_peer *peer, u32 rkey, u64 va,
		   u64 len, int access, struct urdma_sg *sg)
{
	struct urdma_mem *mem = urdma_key_lookup(&peer->dev->keys, rkey);
	struct urdma_mr *mr;
	u64 end;

	if (!mem || READ_ONCE(mem->state) != URDMA_MEM_VALID ||
	    !urdma_mem_grants(mem, access))
		return false;
	if (mem->type == URDMA_MEM_MW) {
		struct urdma_mw *mw = container_of(mem, struct urdma_mw, mem);
		struct urdma_mw_view v;

		if (!urdma_mw_view(mw, rkey, &v) ||
		    (v.access & access) != access || mem->pdn != peer->pdn)
			return false;
		/* Type 2: only through the QP it was bound to (o10-37.2.47). */
		if (mw->ibmw.type == IB_MW_TYPE_2 &&
		    (v.b.qpn != peer->qp->ibqp.qp_num ||
		     v.b.qp_serial != peer->qp->serial))
			return false;
		if (va < v.b.addr || check_add_overflow(va, len, &end) ||
		    end > v.b.addr + v.b.length)
			return false;
		mr = urdma_mw_mr(peer->dev, mw, &v, access);
		if (!mr)
			return false;
	} else {
		if (READ_ONCE(mem->pdn) != peer->pdn)
			return false;
		mr = urdma_mem_to_mr(mem);
	}
	if (!urdma_mr_in_bounds(mr, va, len))
		return false;
	sg->kva = NULL;
	sg->mr = mr;
	sg->va = va;
	sg->len = len;
	return true;
}

/*
 * Copy @len bytes from @src to @dst; both were resolved and are long
 * enough.  Return: false if they were not after all (a bug; warned once):
 * then part of @dst was not written, and must not be sent or completed.
 */
bool urdma_copy(struct urdma_sg *dst, int ndst, struct urdma_sg *src,
		int nsrc, u64 len)
{
	u32 doff = 0, soff = 0, since_resched = 0;
	int di = 0, si = 0;

	while (len) {
		u32 want, dc, sc, n;
		void *d, *s;

		while (di < ndst && doff == dst[di].len) {
			di++;
			doff = 0;
		}
		while (si < nsrc && soff == src[si].len) {
			si++;
			soff = 0;
		}
		if (WARN_ON_ONCE(di == ndst || si == nsrc))
			return false;
		want = min3((u64)(dst[di].len - doff), (u64)(src[si].len - soff),
			    len);
		d = urdma_sg_kva(&dst[di], doff, want, &dc);
		s = urdma_sg_kva(&src[si], soff, want, &sc);
		if (WARN_ON_ONCE(!d || !s))
			return false;
		n = min(dc, sc);
		memcpy(d, s, n);
		doff += n;
		soff += n;
		len -= n;
		since_resched += n;
		if (since_resched >= URDMA_COPY_RESCHED) {
			since_resched = 0;
			cond_resched();
		}
	}
	return true;
}

/* Drop the first @skip bytes of a scatter list (they were written). */
void urdma_sgl_skip(struct urdma_sg *sg, int n, u32 skip)
{
	int i;

	for (i = 0; i < n && skip; i++) {
		u32 k = min(skip, sg[i].len);

		if (sg[i].kva)
			sg[i].kva += k;
		else
			sg[i].va += k;
		sg[i].len -= k;
		skip -= k;
	}
}

/* ---- receive WQEs ----------------------------------------------------------- */

/* The bytes the SGEs of the receive WQE in the scratch area describe. */
static u64 urdma_rwqe_room(const struct urdma_scratch *s, u32 max_sge)
{
	const struct urdma_sge *sge = (const void *)(&s->rwqe.hdr + 1);
	u32 i, n = min_t(u32, s->rwqe.hdr.num_sge, max_sge);
	u64 room = 0;

	for (i = 0; i < n; i++)
		room += sge[i].length;
	return room;
}

/**
 * urdma_take_recv - take the next receive WQE of @qp (its RQ or its SRQ)
 * @eng: the engine; the WQE is copied into its scratch area
 * @qp: the receiving QP
 * @max_sge: set to the SGEs a WQE of that queue may hold
 * @need: if not 0, bytes the WQE must hold (a UD message with its GRH)
 *
 * A UD message that a WQE cannot hold is dropped and leaves the WQE where
 * it is, as a lost datagram would: a sender, any sender with the Q_Key,
 * must not be able to fail the receiver's QP (or its WQEs) with it.
 *
 * Return: 0; -EAGAIN if there is none; -EINVAL if the ring's producer
 * index is garbage; -EMSGSIZE if the WQE is smaller than @need.
 */
int urdma_take_recv(struct urdma_engine *eng, struct urdma_qp *qp,
		    u32 *max_sge, u64 need)
{
	struct urdma_scratch *s = eng->scratch;
	struct urdma_srq *srq = qp->ibqp.srq ? to_usrq(qp->ibqp.srq) : NULL;
	struct urdma_ring *ring;
	spinlock_t *lock;	/* the queue's: srq->lock or qp->rq_lock */
	u32 *cons, *db_cons, prod;
	bool limit_event = false;
	unsigned long flags;
	int ret = 0;

	if (srq) {
		struct urdma_srq_db *db = srq->db.kva;

		ring = &srq->ring;
		lock = &srq->lock;
		cons = &srq->cons;
		db_cons = &db->cons;
		*max_sge = srq->max_sge;
		spin_lock_irqsave(lock, flags);
		/* Pairs with the poster's release: WQEs before the index. */
		prod = smp_load_acquire(&db->prod);
	} else {
		struct urdma_qp_db *db = qp->db.kva;

		ring = &qp->rq;
		lock = &qp->rq_lock;
		cons = &qp->rq_cons;
		db_cons = &db->rq_cons;
		*max_sge = qp->cap.max_recv_sge;
		spin_lock_irqsave(lock, flags);
		/* Pairs with the poster's release: WQEs before the index. */
		prod = smp_load_acquire(&db->rq_prod);
	}

	if (prod == *cons) {
		ret = -EAGAIN;
	} else if (prod - *cons > ring->nent) {
		ret = -EINVAL;
	} else {
		memcpy(s->rwqe.raw, urdma_ring_entry(ring, *cons),
		       ring->stride);
		if (need && s->rwqe.hdr.num_sge <= *max_sge &&
		    urdma_rwqe_room(s, *max_sge) < need) {
			spin_unlock_irqrestore(lock, flags);
			return -EMSGSIZE;
		}
		(*cons)++;
		/* The copy is taken: the slot may be reused. */
		smp_store_release(db_cons, *cons);
		if (srq && srq->limit && prod - *cons < srq->limit) {
			srq->limit = 0;
			limit_event = true;
		}
	}
	spin_unlock_irqrestore(lock, flags);

	if (limit_event && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = srq->ibsrq.device,
			.element.srq = &srq->ibsrq,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return ret;
}

/* A receive completion at the responder. */
void urdma_complete_recv(struct urdma_engine *eng, struct urdma_qp *qp,
			 struct urdma_cqe *cqe, bool solicited)
{
	cqe->qp_num = qp->ibqp.qp_num;
	/* In ERROR before the consumer can see why. */
	if (cqe->status != IB_WC_SUCCESS)
		urdma_qp_set_error(qp);
	if (!urdma_cq_push(eng, to_ucq(qp->ibqp.recv_cq), cqe, solicited))
		urdma_qp_set_error(qp);
}

/* ---- the responder ---------------------------------------------------------- */

/* QP types that can talk to each other. */
static bool urdma_types_match(enum ib_qp_type a, enum ib_qp_type b)
{
	if (a == IB_QPT_GSI)
		a = IB_QPT_UD;
	if (b == IB_QPT_GSI)
		b = IB_QPT_UD;
	return a == b;
}

/* States in which a QP's responder accepts packets. */
bool urdma_state_receives(enum ib_qp_state state)
{
	return state >= IB_QPS_RTR && state != IB_QPS_ERR;
}

/**
 * urdma_ud_qkey_ok - may a UD or GSI QP take a message with @qkey?
 * @qp: the receiving QP
 * @qkey: the Q_Key the message carries (urdma_wqe_qkey() on the local path,
 *	the DETH's on the wire)
 *
 * QP1 takes only the GSI Q_Key (IBTA 13.4.6.4), any other UD QP only its
 * own.  The local path, the wire and multicast all ask here.
 */
bool urdma_ud_qkey_ok(const struct urdma_qp *qp, u32 qkey)
{
	if (qp->ibqp.qp_type == IB_QPT_GSI)
		return qkey == IB_QP1_QKEY;
	return qkey == READ_ONCE(qp->attr.qkey);
}

/**
 * urdma_find_ah - the address vector of the AH a UD WQE names
 * @udev: the sending QP's device
 * @ahn: the AH number from the WQE
 * @pdn: the sending QP's PD: an AH of another PD (another process's,
 *	say) does not count (as in rxe_get_av())
 * @av: filled in
 *
 * Return: whether there is such an AH.
 */
bool urdma_find_ah(struct urdma_dev *udev, u32 ahn, u32 pdn,
		   struct urdma_av *av)
{
	struct urdma_ah *ah;
	unsigned long flags;
	bool found = false;

	xa_lock_irqsave(&udev->ahs, flags);
	ah = xa_load(&udev->ahs, ahn);
	if (ah && ah->pdn == pdn) {
		*av = ah->av;
		found = true;
	}
	xa_unlock_irqrestore(&udev->ahs, flags);
	return found;
}

/*
 * Whether responder @pqp of an RC or UC requester @qp on device @udev is
 * connected back to it: its address vector names @qp's device and source
 * GID, its destination QP is @qp, and @qp is the same QP it was connected
 * to (its serial: QP numbers are reused, so a QP that later gets the
 * number of a destroyed peer does not count).  A local-path request is
 * accepted only from the QP the responder is connected to, as a wire
 * packet only from its address (urdma_rx_conn()).  The fields are read
 * after the state, which modify_qp publishes after them (RTR).
 */
static bool urdma_conn_accepts(struct urdma_qp *pqp,
			       const struct urdma_dev *udev,
			       const struct urdma_qp *qp)
{
	u64 serial;

	if (!READ_ONCE(pqp->av_valid) ||
	    READ_ONCE(pqp->attr.dest_qp_num) != qp->ibqp.qp_num ||
	    READ_ONCE(pqp->av.peer) != udev->id ||
	    memcmp(&pqp->av.dgid, &qp->av.sgid, sizeof(qp->av.sgid)))
		return false;
	/* Not learnt at RTR (the peer did not exist yet): the first one. */
	serial = READ_ONCE(pqp->peer_serial);
	if (!serial)
		serial = cmpxchg64(&pqp->peer_serial, 0, qp->serial) ?:
			 qp->serial;
	return serial == qp->serial;
}

/**
 * urdma_local_peer_serial - the serial of the QP a connection names
 * @av: an RC or UC QP's path to a urdma device of this host
 * @dqpn: its destination QP
 *
 * Process context (modify_qp, at RTR).  Return: the serial of QP @dqpn of
 * that device, 0 if there is none (yet).
 */
u64 urdma_local_peer_serial(const struct urdma_av *av, u32 dqpn)
{
	struct urdma_dev *pdev;
	struct urdma_qp *pqp;
	unsigned long flags;
	u64 serial = 0;

	rcu_read_lock();	/* the device stays (urdma_devtab_del()) */
	pdev = urdma_devtab_get(av->peer);
	if (pdev) {
		/* The QP stays while it is in the table (destroy erases first). */
		xa_lock_irqsave(&pdev->qps, flags);
		pqp = xa_load(&pdev->qps, dqpn);
		if (pqp)
			serial = pqp->serial;
		xa_unlock_irqrestore(&pdev->qps, flags);
	}
	rcu_read_unlock();
	return serial;
}

/*
 * Find the responder of a WQE on the local path.  Return: 0; -EREMOTE if
 * the destination is not a urdma device of this host (the wire path);
 * -ENOENT if nobody answers (no such QP, a QP that does not receive, or an
 * RC or UC QP that is not connected to this one); -EINVAL if a UD WQE
 * names no AH of its PD.
 */
static int urdma_find_peer(struct urdma_qp *qp,
			   const struct urdma_send_wqe *wqe,
			   struct urdma_peer *peer)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	bool ud = qp->ibqp.qp_type == IB_QPT_UD ||
		  qp->ibqp.qp_type == IB_QPT_GSI;
	struct urdma_qp *pqp;
	u32 devid, qpn;

	if (ud) {
		if (!urdma_find_ah(udev, wqe->ud.ah_num, urdma_qp_pdn(qp),
				   &peer->av))
			return -EINVAL;
		devid = peer->av.peer;
		qpn = wqe->ud.remote_qpn & IB_QPN_MASK;
	} else {
		if (!qp->av_valid)
			return -ENOENT;
		devid = READ_ONCE(qp->av.peer);
		qpn = qp->attr.dest_qp_num;
	}
	if (!devid)
		return -EREMOTE;	/* no urdma device here has that GID */
	peer->dev = urdma_devtab_get(devid);
	if (!peer->dev)
		return -ENOENT;
	/* A netdev moved to another namespace takes its device with it. */
	if (!net_eq(dev_net(peer->dev->ndev), dev_net(udev->ndev)))
		return -ENOENT;
	pqp = xa_load(&peer->dev->qps, qpn);
	if (!pqp || !urdma_types_match(qp->ibqp.qp_type, pqp->ibqp.qp_type))
		return -ENOENT;
	/* The state before the fields it publishes; pairs with modify_qp. */
	if (!urdma_state_receives(smp_load_acquire(&pqp->attr.qp_state)))
		return -ENOENT;
	if (!ud && !urdma_conn_accepts(pqp, udev, qp))
		return -ENOENT;
	peer->qp = pqp;
	peer->pdn = urdma_qp_pdn(pqp);
	return 0;
}

/* The 40 bytes a UD receive starts with: a GRH, or 20 zeros and IPv4. */
void urdma_build_grh(u8 *grh, const struct urdma_av *av, u32 len)
{
	u32 udp_len = sizeof(struct udphdr) + 12 + 8 + len + 4;

	memset(grh, 0, URDMA_GRH_LEN);
	if (av->net_type == RDMA_NETWORK_IPV4) {
		struct iphdr *ip = (struct iphdr *)(grh + 20);

		ip->version = 4;
		ip->ihl = 5;
		ip->tos = av->traffic_class;
		ip->tot_len = htons(sizeof(*ip) + udp_len);
		ip->frag_off = htons(IP_DF);
		ip->ttl = av->hop_limit;
		ip->protocol = IPPROTO_UDP;
		memcpy(&ip->saddr, &av->sgid.raw[12], 4);
		memcpy(&ip->daddr, &av->dgid.raw[12], 4);
		ip->check = ip_fast_csum((u8 *)ip, ip->ihl);
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)grh;

		ip6_flow_hdr(ip6, av->traffic_class,
			     cpu_to_be32(av->flow_label));
		ip6->payload_len = htons(udp_len);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = av->hop_limit;
		memcpy(&ip6->saddr, av->sgid.raw, 16);
		memcpy(&ip6->daddr, av->dgid.raw, 16);
	}
}

/**
 * urdma_recv_msg - deliver a message that consumes a receive WQE
 * @eng: the engine
 * @rqp: the receiving QP
 * @rdev: its device
 * @m: the message: SEND*, or the immediate of RDMA_WRITE_WITH_IMM
 *
 * Return: the requester's status (RC only; unreliable senders do not
 * learn of the receiver's errors), -EAGAIN for an RNR NAK, or -EMSGSIZE
 * for a UD message dropped because the receive WQE could not hold it.
 */
int urdma_recv_msg(struct urdma_engine *eng, struct urdma_qp *rqp,
		   struct urdma_dev *rdev, const struct urdma_msg *m)
{
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_sge *sge = (const struct urdma_sge *)(&s->rwqe.hdr + 1);
	struct urdma_cqe cqe = {};
	u32 hdr = m->grh ? URDMA_GRH_LEN : 0;
	struct urdma_sg *dst = s->dst;
	u32 max_sge, num_sge;
	int ndst, ret;
	u64 room;
	u8 status;

	ret = urdma_take_recv(eng, rqp, &max_sge,
			      m->grh ? hdr + m->len : 0);
	if (ret == -EMSGSIZE)
		return ret;	/* UD: dropped */
	if (ret == -EAGAIN)
		return m->rc ? -EAGAIN : IB_WC_SUCCESS;
	if (ret) {
		/* The responder's ring is garbage: it fails, not us. */
		urdma_qp_fatal(rqp);
		return m->rc ? IB_WC_REM_OP_ERR : IB_WC_SUCCESS;
	}

	cqe.wr_id = s->rwqe.hdr.wr_id;
	cqe.src_qp = m->src_qp;
	cqe.opcode = m->cqe_opcode;
	num_sge = s->rwqe.hdr.num_sge;
	if (num_sge > max_sge) {
		cqe.status = IB_WC_LOC_QP_OP_ERR;
		urdma_complete_recv(eng, rqp, &cqe, false);
		return m->rc ? IB_WC_REM_OP_ERR : IB_WC_SUCCESS;
	}

	status = urdma_lkey_sgl(rdev, urdma_qp_pdn(rqp), sge, num_sge,
				IB_ACCESS_LOCAL_WRITE, dst, &ndst, &room);
	if (status) {
		cqe.status = status;
		urdma_complete_recv(eng, rqp, &cqe, false);
		return m->rc ? IB_WC_REM_OP_ERR : IB_WC_SUCCESS;
	}
	if (hdr + (m->src ? m->len : 0) > room) {
		cqe.status = IB_WC_LOC_LEN_ERR;
		urdma_complete_recv(eng, rqp, &cqe, false);
		return m->rc ? IB_WC_REM_INV_REQ_ERR : IB_WC_SUCCESS;
	}

	if (m->grh) {
		struct urdma_sg grh = { .kva = (void *)m->grh,
					.len = URDMA_GRH_LEN };

		urdma_copy(dst, ndst, &grh, 1, URDMA_GRH_LEN);
		urdma_sgl_skip(dst, ndst, URDMA_GRH_LEN);
		cqe.flags |= URDMA_CQE_GRH;
		cqe.flags |= m->net_type << URDMA_CQE_NET_SHIFT;
		cqe.sl = m->sl;
	}
	if (m->src && m->len)
		urdma_copy(dst, ndst, m->src, m->nsrc, m->len);

	cqe.byte_len = hdr + m->len;
	cqe.flags |= m->cqe_flags;
	cqe.ex = m->ex;
	urdma_complete_recv(eng, rqp, &cqe, m->solicited);
	return IB_WC_SUCCESS;
}

/* A message on the local path: from the WQE in the scratch area. */
static int urdma_deliver(struct urdma_engine *eng, struct urdma_qp *qp,
			 const struct urdma_peer *peer,
			 const struct urdma_send_wqe *wqe, struct urdma_sg *src,
			 int nsrc, u64 len)
{
	struct urdma_msg m = {
		.src = src,
		.nsrc = nsrc,
		.len = len,
		.src_qp = qp->ibqp.qp_num,
		.cqe_opcode = wqe->opcode == URDMA_WQE_RDMA_WRITE_IMM ?
			      URDMA_CQE_RECV_RDMA_IMM : URDMA_CQE_RECV,
		.solicited = wqe->flags & URDMA_WQE_SOLICITED,
		.rc = qp->ibqp.qp_type == IB_QPT_RC,
	};
	int ret;

	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI) {
		urdma_build_grh(eng->scratch->grh, &peer->av, len);
		m.grh = eng->scratch->grh;
		m.net_type = peer->av.net_type;
		m.sl = peer->av.sl;
	}
	if (wqe->opcode == URDMA_WQE_SEND_IMM ||
	    wqe->opcode == URDMA_WQE_RDMA_WRITE_IMM) {
		m.cqe_flags = URDMA_CQE_IMM;
		m.ex = wqe->ex;
	} else if (wqe->opcode == URDMA_WQE_SEND_INV) {
		m.cqe_flags = URDMA_CQE_INV;
		m.ex = wqe->ex;
	}
	ret = urdma_recv_msg(eng, peer->qp, peer->dev, &m);
	return ret == -EMSGSIZE ? IB_WC_SUCCESS : ret;	/* UD: lost */
}

/* ---- the requester ---------------------------------------------------------- */

/*
 * What a QP type may carry (urdma_opcode_valid), less what user rings may
 * not: REG_MR is kernel-only, and ATOMIC_WRITE and FLUSH need 6.2.
 */
static bool urdma_wqe_opcode_ok(const struct urdma_qp *qp, u8 op)
{
	if (qp->sq.umem && op == URDMA_WQE_REG_MR)
		return false;
	if (!URDMA_HAVE_FLUSH_ATOMIC_WRITE &&
	    (op == URDMA_WQE_ATOMIC_WRITE || op == URDMA_WQE_FLUSH))
		return false;
	return urdma_opcode_valid(qp->ibqp.qp_type, op);
}

#define URDMA_WQE_FLAGS (URDMA_WQE_SIGNALED | URDMA_WQE_SOLICITED | \
			 URDMA_WQE_FENCE | URDMA_WQE_INLINE)

/*
 * The bytes a WQE copied from a ring says it moves: its inline data, or
 * its SGEs' lengths (before any check: what a kick would charge).
 */
static u64 urdma_wqe_bytes(const struct urdma_send_wqe *wqe)
{
	const struct urdma_sge *sge = (const struct urdma_sge *)(wqe + 1);
	u32 i, n = min_t(u32, wqe->num_sge, URDMA_MAX_SGE);
	u64 len = 0;

	if (wqe->flags & URDMA_WQE_INLINE)
		return min_t(u32, wqe->inline_len, URDMA_MAX_INLINE);
	for (i = 0; i < n; i++)
		len += sge[i].length;
	return len;
}

/* Is the copied WQE well formed for @qp?  (Its keys are checked later.) */
bool urdma_wqe_valid(const struct urdma_qp *qp,
		     const struct urdma_send_wqe *wqe)
{
	if (!urdma_wqe_opcode_ok(qp, wqe->opcode) ||
	    (wqe->flags & ~URDMA_WQE_FLAGS))
		return false;
	if (wqe->flags & URDMA_WQE_INLINE)
		return wqe->inline_len <= qp->cap.max_inline_data;
	return wqe->num_sge <= qp->cap.max_send_sge;
}

/* The local gather list of a WQE: its inline data or its SGEs. */
u8 urdma_wqe_gather(struct urdma_engine *eng, struct urdma_qp *qp,
		    int access, int *nsrc, u64 *len)
{
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = &s->swqe.hdr;

	if (wqe->flags & URDMA_WQE_INLINE) {
		s->src[0].kva = (void *)(wqe + 1);
		s->src[0].mr = NULL;
		s->src[0].len = wqe->inline_len;
		*nsrc = wqe->inline_len ? 1 : 0;
		*len = wqe->inline_len;
		return IB_WC_SUCCESS;
	}
	return urdma_lkey_sgl(to_udev(qp->ibqp.device), urdma_qp_pdn(qp),
			      (const struct urdma_sge *)(wqe + 1),
			      wqe->num_sge, access, s->src, nsrc, len);
}

/* A UD WQE's Q_Key; IBTA 10.2.5: the high bit says "the QP's own". */
u32 urdma_wqe_qkey(const struct urdma_qp *qp, const struct urdma_send_wqe *wqe)
{
	u32 qkey = wqe->ud.remote_qkey;

	return (qkey & BIT(31)) ? qp->attr.qkey : qkey;
}

/* The QP access flag the responder needs for an opcode; 0 if none. */
int urdma_resp_qp_access(u8 op)
{
	switch (op) {
	case URDMA_WQE_RDMA_WRITE:
	case URDMA_WQE_RDMA_WRITE_IMM:
	case URDMA_WQE_ATOMIC_WRITE:
		return IB_ACCESS_REMOTE_WRITE;
	case URDMA_WQE_RDMA_READ:
		return IB_ACCESS_REMOTE_READ;
	case URDMA_WQE_ATOMIC_CMP_SWP:
	case URDMA_WQE_ATOMIC_FETCH_ADD:
		return IB_ACCESS_REMOTE_ATOMIC;
	default:
		return 0;
	}
}

/**
 * urdma_invalidate - LOCAL_INV, or the invalidation a SEND_WITH_INV carries
 * @qp: the QP that executes it: the sender's for LOCAL_INV, the receiving
 *	QP for SEND_WITH_INV
 * @key: the key to invalidate: a fast-registration MR's or a type 2
 *	window's, of @qp's PD
 * @remote: it came with a SEND_WITH_INV.  A type 2 window may then be
 *	invalidated only through the QP it is bound to, the only QP whose
 *	peer may use it (urdma_rkey_sg()); another connection of the same
 *	PD must not take it away.
 *
 * Return: whether @key was invalidated.
 */
bool urdma_invalidate(const struct urdma_qp *qp, u32 key, bool remote)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	struct urdma_mem *mem = urdma_key_lookup(&udev->keys, key);
	struct urdma_mw *mw;

	if (!mem || READ_ONCE(mem->pdn) != urdma_qp_pdn(qp))
		return false;
	switch (mem->type) {
	case URDMA_MEM_FRMR:
		break;
	case URDMA_MEM_MW:
		mw = container_of(mem, struct urdma_mw, mem);
		if (mw->ibmw.type != IB_MW_TYPE_2)
			return false;
		if (remote && (READ_ONCE(mw->b.qpn) != qp->ibqp.qp_num ||
			       READ_ONCE(mw->b.qp_serial) != qp->serial))
			return false;
		break;
	default:
		return false;
	}
	WRITE_ONCE(mem->state, URDMA_MEM_INVALID);
	return true;
}

/* BIND_MW (IBTA 10.6.7.3): the window takes the new key; status returned. */
u8 urdma_bind_mw(struct urdma_qp *qp, const struct urdma_send_wqe *wqe)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	const struct urdma_wqe_bind *b = &wqe->bind;
	u32 pdn = urdma_qp_pdn(qp);
	struct urdma_mem *mem, *mrmem;
	struct urdma_mw *mw;
	struct urdma_mr *mr;
	u64 gen;
	/* Local rights and MW_BIND mean nothing for a window; ignore them. */
	int access = b->access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);

	mem = xa_load(&udev->keys.xa, urdma_key_index(b->new_rkey));
	if (!mem || mem->type != URDMA_MEM_MW || mem->pdn != pdn)
		return IB_WC_MW_BIND_ERR;
	mw = container_of(mem, struct urdma_mw, mem);
	if (mw->ibmw.type == IB_MW_TYPE_2 &&
	    READ_ONCE(mem->state) == URDMA_MEM_VALID)
		return IB_WC_MW_BIND_ERR;
	if (access & ~(IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_ATOMIC | IB_ZERO_BASED))
		return IB_WC_MW_BIND_ERR;
	if (access & IB_ZERO_BASED)
		return IB_WC_MW_BIND_ERR;	/* not claimed */

	/* A zero-length bind of a type 1 window unbinds it. */
	if (!b->length && mw->ibmw.type == IB_MW_TYPE_1) {
		if (!urdma_mw_bind_begin(mw))
			return IB_WC_MW_BIND_ERR;
		WRITE_ONCE(mem->state, URDMA_MEM_INVALID);
		WRITE_ONCE(mem->key, b->new_rkey);
		urdma_mw_bind_end(mw);
		return IB_WC_SUCCESS;
	}

	mrmem = urdma_key_lookup(&udev->keys, b->mr_lkey);
	if (!mrmem || mrmem->type == URDMA_MEM_MW ||
	    READ_ONCE(mrmem->state) != URDMA_MEM_VALID ||
	    READ_ONCE(mrmem->pdn) != pdn ||
	    !urdma_mem_grants(mrmem, IB_ACCESS_MW_BIND))
		return IB_WC_MW_BIND_ERR;
	/* C10-74; urdma_mw_mr() holds the MR to it at every access. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !urdma_mem_grants(mrmem, IB_ACCESS_LOCAL_WRITE))
		return IB_WC_MW_BIND_ERR;
	mr = urdma_mem_to_mr(mrmem);
	/* The generation is read after the state; pairs with rereg's wmb. */
	smp_rmb();
	gen = READ_ONCE(mr->gen);
	if (!urdma_mr_in_bounds(mr, b->addr, b->length))
		return IB_WC_MW_BIND_ERR;

	/* An access sees the old binding or the new one (urdma_mw_view()). */
	if (!urdma_mw_bind_begin(mw))
		return IB_WC_MW_BIND_ERR;
	mw->b = (struct urdma_mw_binding){
		.mr_key = b->mr_lkey, .mr_gen = gen,
		.addr = b->addr, .length = b->length,
		.qpn = qp->ibqp.qp_num, .qp_serial = qp->serial,
	};
	WRITE_ONCE(mem->access, access);
	WRITE_ONCE(mem->key, b->new_rkey);
	WRITE_ONCE(mem->state, URDMA_MEM_VALID);
	urdma_mw_bind_end(mw);
	return IB_WC_SUCCESS;
}

/* Kernel fast registration: the FRMR takes its new key and access. */
u8 urdma_reg_mr(struct urdma_qp *qp, const struct urdma_send_wqe *wqe)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	const struct urdma_wqe_reg *r = &wqe->reg;
	struct urdma_mem *mem;

	mem = xa_load(&udev->keys.xa, urdma_key_index(r->mr_key));
	if (!mem || mem->type != URDMA_MEM_FRMR ||
	    mem->pdn != urdma_qp_pdn(qp) ||
	    urdma_key_index(r->new_key) != urdma_key_index(r->mr_key) ||
	    urdma_check_access(r->access))
		return IB_WC_LOC_PROT_ERR;
	WRITE_ONCE(mem->state, URDMA_MEM_INVALID);
	smp_wmb();	/* invalid before the fields change */
	WRITE_ONCE(mem->access, r->access);
	WRITE_ONCE(mem->key, r->new_key);
	smp_wmb();	/* the new fields before valid */
	WRITE_ONCE(mem->state, URDMA_MEM_VALID);
	return IB_WC_SUCCESS;
}

/* The 8 bytes an atomic operates on, at the responder. */
u64 *urdma_atomic_target(const struct urdma_peer *peer, u64 va, u32 rkey,
			 int access, u8 *status)
{
	struct urdma_sg sg;
	u32 contig;

	if (!IS_ALIGNED(va, 8)) {
		*status = IB_WC_REM_INV_REQ_ERR;
		return NULL;
	}
	if (!urdma_rkey_sg(peer, rkey, va, 8, access, &sg)) {
		*status = IB_WC_REM_ACCESS_ERR;
		return NULL;
	}
	/* Aligned 8 bytes never straddle a block. */
	return urdma_sg_kva(&sg, 0, 8, &contig);
}

/**
 * urdma_atomic_write - an ATOMIC_WRITE at the responder (local path and wire)
 * @peer: the responder's side
 * @va: @rkey: the aligned 8 bytes to write
 * @value: what to write there, as it lies in memory
 *
 * One 8-byte store, ordered after earlier writes.
 *
 * Return: IB_WC_SUCCESS, or urdma_atomic_target()'s error status.
 */
u8 urdma_atomic_write(const struct urdma_peer *peer, u64 va, u32 rkey,
		      u64 value)
{
	u64 *target;
	u8 status;

	target = urdma_atomic_target(peer, va, rkey, IB_ACCESS_REMOTE_WRITE,
				     &status);
	if (!target)
		return status;
	smp_store_release(target, value); /* after earlier writes */
	return IB_WC_SUCCESS;
}

/**
 * urdma_flush - a FLUSH at the responder (local path and wire)
 * @peer: the responder's side
 * @type: URDMA_FLUSH_GLOBAL or URDMA_FLUSH_PERSISTENT (placement type)
 * @level: URDMA_FLUSH_RANGE or URDMA_FLUSH_MR (selectivity level)
 * @rkey: @va: @len: the range (the MR of @rkey for URDMA_FLUSH_MR)
 *
 * Once the QP's access flags and the key check, every earlier write is
 * visible: memory is coherent.
 *
 * Return: IB_WC_SUCCESS, IB_WC_REM_INV_REQ_ERR, IB_WC_REM_ACCESS_ERR, or
 * IB_WC_LOC_QP_OP_ERR on a kernel without FLUSH.
 */
u8 urdma_flush(const struct urdma_peer *peer, u8 type, u8 level, u32 rkey,
	       u64 va, u64 len)
{
#if URDMA_HAVE_FLUSH_ATOMIC_WRITE
	int access = type == URDMA_FLUSH_PERSISTENT ?
		     IB_ACCESS_FLUSH_PERSISTENT : IB_ACCESS_FLUSH_GLOBAL;
	struct urdma_sg sg;

	if (type != URDMA_FLUSH_GLOBAL && type != URDMA_FLUSH_PERSISTENT)
		return IB_WC_REM_INV_REQ_ERR;
	/* The responder's QP must allow this type of FLUSH too. */
	if (!(READ_ONCE(peer->qp->attr.qp_access_flags) & access))
		return IB_WC_REM_INV_REQ_ERR;
	if (level == URDMA_FLUSH_MR)
		len = 0;
	if (!urdma_rkey_sg(peer, rkey, va, len, access, &sg))
		return IB_WC_REM_ACCESS_ERR;
	smp_mb();	/* earlier writes globally visible before completion */
	return IB_WC_SUCCESS;
#else
	return IB_WC_LOC_QP_OP_ERR;
#endif
}

/*
 * urdma_exec_local - a WQE that stays on this side: LOCAL_INV, BIND_MW or
 * REG_MR (urdma_wqe_is_local()), on the local path and the wire path alike.
 * Return: its completion status.
 */
u8 urdma_exec_local(struct urdma_qp *qp, const struct urdma_send_wqe *wqe)
{
	switch (wqe->opcode) {
	case URDMA_WQE_LOCAL_INV:
		return urdma_invalidate(qp, wqe->ex, false) ?
		       IB_WC_SUCCESS : IB_WC_LOC_QP_OP_ERR;
	case URDMA_WQE_BIND_MW:
		return urdma_bind_mw(qp, wqe);
	case URDMA_WQE_REG_MR:
		return urdma_reg_mr(qp, wqe);
	default:
		WARN_ON_ONCE(1);
		return IB_WC_LOC_QP_OP_ERR;
	}
}

/*
 * Execute the WQE in the scratch area.  @status is the requester's
 * completion status for URDMA_EXEC_DONE; @byte_len its length.
 */
static enum urdma_exec_result urdma_exec(struct urdma_engine *eng,
					 struct urdma_qp *qp, u8 *status,
					 u32 *byte_len)
{
	struct urdma_scratch *s = eng->scratch;
	const struct urdma_send_wqe *wqe = &s->swqe.hdr;
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	struct urdma_peer peer;
	struct urdma_sg rsg;
	int nsrc, access, ret;
	u64 len = 0, orig;
	u64 *target;

	*byte_len = 0;
	/* Nothing has happened yet: the thread can start it over. */
	if (!urdma_engine_charge(eng, urdma_wqe_bytes(wqe)))
		return URDMA_EXEC_DEFER;
	if (!urdma_wqe_valid(qp, wqe)) {
		urdma_count(eng, URDMA_CNT_BAD_WQES);
		*status = IB_WC_LOC_QP_OP_ERR;
		return URDMA_EXEC_DONE;
	}

	if (urdma_wqe_is_local(wqe->opcode)) {
		*status = urdma_exec_local(qp, wqe);
		return URDMA_EXEC_DONE;
	}

	/* The local side: what is sent, or where results land. */
	access = (wqe->opcode == URDMA_WQE_RDMA_READ ||
		  wqe->opcode == URDMA_WQE_ATOMIC_CMP_SWP ||
		  wqe->opcode == URDMA_WQE_ATOMIC_FETCH_ADD) ?
		 IB_ACCESS_LOCAL_WRITE : 0;
	if (wqe->opcode == URDMA_WQE_ATOMIC_WRITE ||
	    wqe->opcode == URDMA_WQE_FLUSH) {
		nsrc = 0;
	} else {
		*status = urdma_wqe_gather(eng, qp, access, &nsrc, &len);
		if (*status)
			return URDMA_EXEC_DONE;
	}
	if ((qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI) &&
	    len > ib_mtu_enum_to_int(urdma_mtu_from_netdev(udev->ndev->mtu))) {
		*status = IB_WC_LOC_LEN_ERR;
		return URDMA_EXEC_DONE;
	}

	/* The remote side. */
	ret = urdma_find_peer(qp, wqe, &peer);
	if (ret == -EINVAL) {
		urdma_count(eng, URDMA_CNT_BAD_WQES);
		*status = IB_WC_LOC_QP_OP_ERR;
		return URDMA_EXEC_DONE;
	}
	if (ret == -EREMOTE && qp->ibqp.qp_type != IB_QPT_RC &&
	    qp->ibqp.qp_type != IB_QPT_UC) {
		if (urdma_gid_is_mcast(&peer.av.dgid))
			urdma_mcast_local(eng, qp, wqe, &peer.av, nsrc, len);
		*status = urdma_ud_xmit(eng, qp, wqe, &peer.av, nsrc, len);
		*byte_len = len;
		return URDMA_EXEC_DONE;
	}
	if (ret) {
		if (qp->ibqp.qp_type != IB_QPT_RC) {
			/* Unreliable: the message is simply lost. */
			*status = IB_WC_SUCCESS;
			*byte_len = len;
			return URDMA_EXEC_DONE;
		}
		return URDMA_EXEC_NO_PEER;
	}
	/* UD: a message with the wrong Q_Key is dropped (IBTA 10.2.5). */
	if ((peer.qp->ibqp.qp_type == IB_QPT_UD ||
	     peer.qp->ibqp.qp_type == IB_QPT_GSI) &&
	    !urdma_ud_qkey_ok(peer.qp, urdma_wqe_qkey(qp, wqe))) {
		*status = IB_WC_SUCCESS;
		*byte_len = len;
		return URDMA_EXEC_DONE;
	}
	access = urdma_resp_qp_access(wqe->opcode);
	if (access && !(READ_ONCE(peer.qp->attr.qp_access_flags) & access)) {
		urdma_qp_set_error(peer.qp);
		*status = IB_WC_REM_INV_REQ_ERR;
		return URDMA_EXEC_DONE;
	}

	*byte_len = len;
	switch (wqe->opcode) {
	case URDMA_WQE_SEND_INV:
		if (!urdma_invalidate(peer.qp, wqe->ex, true)) {
			urdma_qp_set_error(peer.qp);
			*status = IB_WC_REM_INV_REQ_ERR;
			return URDMA_EXEC_DONE;
		}
		fallthrough;
	case URDMA_WQE_SEND:
	case URDMA_WQE_SEND_IMM:
		ret = urdma_deliver(eng, qp, &peer, wqe, s->src, nsrc, len);
		break;
	case URDMA_WQE_RDMA_WRITE:
	case URDMA_WQE_RDMA_WRITE_IMM:
		if (len && !urdma_rkey_sg(&peer, wqe->rdma.rkey,
					  wqe->rdma.remote_addr, len,
					  IB_ACCESS_REMOTE_WRITE, &rsg)) {
			ret = IB_WC_REM_ACCESS_ERR;
			break;
		}
		if (len)
			urdma_copy(&rsg, 1, s->src, nsrc, len);
		/*
		 * The immediate consumes a receive WQE after the data landed,
		 * as the last packet of the message would; an RNR NAK makes
		 * the retry write the same bytes again.
		 */
		ret = IB_WC_SUCCESS;
		if (wqe->opcode == URDMA_WQE_RDMA_WRITE_IMM)
			ret = urdma_deliver(eng, qp, &peer, wqe, NULL, 0, len);
		break;
	case URDMA_WQE_RDMA_READ:
		if (len && !urdma_rkey_sg(&peer, wqe->rdma.rkey,
					  wqe->rdma.remote_addr, len,
					  IB_ACCESS_REMOTE_READ, &rsg)) {
			ret = IB_WC_REM_ACCESS_ERR;
			break;
		}
		if (len)
			urdma_copy(s->src, nsrc, &rsg, 1, len);
		ret = IB_WC_SUCCESS;
		break;
	case URDMA_WQE_ATOMIC_CMP_SWP:
	case URDMA_WQE_ATOMIC_FETCH_ADD:
		if (len < 8) {
			ret = IB_WC_LOC_LEN_ERR;
			break;
		}
		target = urdma_atomic_target(&peer, wqe->atomic.remote_addr,
					     wqe->atomic.rkey,
					     IB_ACCESS_REMOTE_ATOMIC, status);
		if (!target) {
			ret = *status;
			break;
		}
		/* Atomic against the CPUs and every other engine thread. */
		if (wqe->opcode == URDMA_WQE_ATOMIC_CMP_SWP)
			orig = cmpxchg64(target, wqe->atomic.compare_add,
					 wqe->atomic.swap);
		else
			orig = atomic64_fetch_add(wqe->atomic.compare_add,
						  (atomic64_t *)target);
		s->atomic_orig = orig;
		rsg.kva = &s->atomic_orig;
		rsg.mr = NULL;
		rsg.len = 8;
		urdma_copy(s->src, nsrc, &rsg, 1, 8);
		*byte_len = 8;
		ret = IB_WC_SUCCESS;
		break;
	case URDMA_WQE_ATOMIC_WRITE:
		ret = urdma_atomic_write(&peer, wqe->atomic.remote_addr,
					 wqe->atomic.rkey, wqe->atomic.compare_add);
		if (ret == IB_WC_SUCCESS)
			*byte_len = 8;
		break;
	case URDMA_WQE_FLUSH:
		ret = urdma_flush(&peer, wqe->flush.type, wqe->flush.level,
				  wqe->flush.rkey, wqe->flush.remote_addr,
				  wqe->flush.length);
		break;
	default:
		ret = IB_WC_LOC_QP_OP_ERR;
		break;
	}
	if (ret == -EAGAIN)
		return URDMA_EXEC_RNR;
	if (ret == IB_WC_REM_ACCESS_ERR || ret == IB_WC_REM_INV_REQ_ERR)
		urdma_qp_set_error(peer.qp);
	*status = ret;
	return URDMA_EXEC_DONE;
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
	if (why == URDMA_EXEC_RNR) {
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
void urdma_sq_retire(struct urdma_qp *qp)
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

/* ERROR: complete every posted WQE with WR_FLUSH_ERR (IBTA 10.3.1). */
static int urdma_qp_flush(struct urdma_engine *eng, struct urdma_qp *qp)
{
	struct urdma_scratch *s = eng->scratch;
	struct urdma_cqe cqe;
	u32 max_sge, avail;
	int done = 0;

	qp->waiting = false;
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
	while (!qp->ibqp.srq && done < URDMA_QP_BUDGET &&
	       urdma_engine_charge(eng, 0) &&
	       !urdma_take_recv(eng, qp, &max_sge, 0)) {
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
