/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * urdma HCA engine: kernel threads that do what an adapter's hardware
 * would.  See engine.c for the thread and its quiescence protocol, and
 * sched.c for what it does with a QP.
 */
#ifndef URDMA_ENGINE_H
#define URDMA_ENGINE_H

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "../uapi/rdma/urdma-abi.h"

struct urdma_dev;
struct urdma_qp;
struct urdma_scratch;

/* The counters "rdma statistic" shows; keep urdma_stat_descs (device.c) in step. */
enum urdma_counter {
	URDMA_CNT_KICKS,	/* wake-ups requested while the engine slept */
	URDMA_CNT_WQES,		/* send WQEs executed */
	URDMA_CNT_POLLS,	/* passes over the doorbell records */
	URDMA_CNT_SLEEPS,	/* times the engine went to sleep */
	URDMA_CNT_CQES,		/* completions written */
	URDMA_CNT_ERR_CQES,	/* ... of them with an error status */
	URDMA_CNT_RNR_WAITS,	/* RNR NAKs: no receive WQE at the responder */
	URDMA_CNT_RETRIES,	/* transport retries (no responder) */
	URDMA_CNT_CQ_OVERFLOWS,	/* CQEs lost to a full CQ */
	URDMA_CNT_BAD_WQES,	/* malformed WQEs in a ring */
	URDMA_CNT_TX_PKTS,	/* RoCEv2 packets sent */
	URDMA_CNT_RX_PKTS,	/* RoCEv2 packets received and accepted */
	URDMA_CNT_RX_DROPS,	/* ... dropped: malformed, unknown QP, bad key */
	URDMA_CNT_ICRC_ERRS,	/* ... dropped for a bad ICRC */
	URDMA_CNT_TX_ERRS,	/* packets the IP layer would not send */
	URDMA_CNT_SEQ_NAKS_RCVD, /* requester: sequence NAKs (go back N) */
	URDMA_CNT_TIMEOUTS,	/* requester: local ACK timeouts */
	URDMA_CNT_READ_GAPS,	/* requester: READs asked again after a gap */
	URDMA_CNT_SEQ_NAKS_SENT, /* responder: sequence NAKs sent */
	URDMA_CNT_DUP_REQS,	/* responder: duplicate requests seen */
	URDMA_CNT_KICK_RUNS,	/* kicks served in the kicker's system call */
	URDMA_CNT_YIELDS,	/* ... set out to sleep: the CPU was wanted */
	URDMA_CNT_EARLY_TIMEOUTS, /* requester: ... before the local ACK timeout */
	URDMA_CNT_CWND_CUTS,	/* requester: window cut: loss, congestion */
	URDMA_CNT_RTT_SAMPLES,	/* requester: round trips timed */
	URDMA_CNT_RTT_US,	/* ... their sum, in microseconds */
	URDMA_CNT_ECN_MARKED,	/* RC packets received marked CE */
	URDMA_CNT_CNPS_SENT,	/* ... CNPs sent to their senders for them */
	URDMA_CNT_CNPS_RCVD,	/* requester: CNPs taken from the peer */
	URDMA_CNT_PROBES,	/* requester: early timeouts that sent a probe */
	URDMA_CNT_ODP_WAITS,	/* WQEs or packets that waited for ODP pages */
	URDMA_CNT_ODP_FAULTS,	/* ODP page faults resolved (device-wide) */
	URDMA_NUM_COUNTERS
};

/* Engines a pass may wake at its end (struct urdma_engine's @woken). */
#define URDMA_WOKEN_MAX		4

/**
 * struct urdma_engine - one engine thread of a device
 * @udev:	its device.
 * @idx:	its index; user space finds its state at state page entry @idx.
 * @task:	the kthread.
 * @run:	held by whoever makes passes: the thread whenever it is not
 *		asleep, or a user kick that runs them in its system call
 *		(urdma_engine_kick_user(); with preemption off, so that it
 *		cannot be descheduled while it holds @run).  It guards
 *		@scratch, @deadline, @contended, @contended_at, @last_kicker,
 *		@same_kicker, @in_kick, @kick_left, @kick_deferred,
 *		@pass_seq's changes and @cnt.
 * @state:	its entry in the device's state page (mapped read-only into
 *		every user context): asleep is set while the thread sleeps.
 * @lock:	serializes changes to @qps (list_add_rcu/list_del_rcu).
 * @err_lock:	serializes changes to @state's err_qps.
 * @qps:	the QPs this engine serves.  The thread walks it during a
 *		pass without the lock; removal waits for the pass to end
 *		(urdma_engine_sync()).
 * @pass_seq:	odd while the thread is inside a pass, when it may hold
 *		pointers to QPs, CQs, SRQs, MRs and devices it looked up.
 * @pass_wq:	urdma_engine_sync() waits here for a pass to end.
 * @deadline:	the earliest RNR or retry timer seen in the last pass.
 * @window_us:	the current polling window (adaptive, engine.c).
 * @kicked:	a kick arrived since the thread last went to sleep.
 * @contended:	how many times in a row the thread went to sleep because
 *		another task wanted its CPU (0: it last slept for want of work).
 * @contended_at: when it last went to sleep.
 * @last_kicker: the task whose kick last ran passes (only compared).
 * @same_kicker: how many kicks in a row before this one came from it.
 * @in_kick:	the passes are a kick's (urdma_engine_charge()).
 * @kick_left:	bytes the kick's passes may still move.
 * @kick_deferred: a kick's pass left work for the thread.
 * @scratch:	the thread's copies of WQEs and its scatter lists.
 * @rxq:	RoCEv2 frames for this engine's QPs, from the receive handler.
 * @kicks:	URDMA_CNT_KICKS, counted by whoever kicks.
 * @rx_dropped:	frames the receive handler dropped (queue full, runt).
 * @woken:	engines that frames this thread's own transmits queued for
 *		(veth's receive runs in the sender's softirq), to wake at the
 *		end of its pass: once for all the frames of the pass, not once
 *		a frame (urdma_engine_wake()).  Only this thread and the
 *		softirqs that run on it touch it.
 * @n_woken:	how many.
 * @cnt:	the other counters; written under @run only.
 * @node:	in the module's list of engines (engine.c).
 */
struct urdma_engine {
	struct urdma_dev *udev;
	unsigned int idx;
	struct task_struct *task;
	struct mutex run;		/* see above */
	struct urdma_engine_state *state;
	spinlock_t lock;		/* see above */
	spinlock_t err_lock;		/* see above */
	struct list_head qps;
	unsigned long pass_seq;
	wait_queue_head_t pass_wq;
	ktime_t deadline;
	unsigned int window_us;
	bool kicked;
	u8 contended;
	u8 same_kicker;
	ktime_t contended_at;
	const struct task_struct *last_kicker;
	bool in_kick;
	bool kick_deferred;
	u32 kick_left;
	struct urdma_scratch *scratch;
	struct sk_buff_head rxq;
	atomic64_t kicks;
	atomic64_t rx_dropped;
	struct urdma_engine *woken[URDMA_WOKEN_MAX];
	unsigned int n_woken;
	u64 cnt[URDMA_NUM_COUNTERS];
	struct list_head node;
};

/*
 * What a kick's passes may do in all, in bytes: each WQE, packet or frame
 * costs URDMA_KICK_ITEM plus the bytes it moves.  The kick runs them with
 * preemption off, so this bounds how long it holds the engine, whatever
 * the WQEs are (empty ones cost a route lookup and a transmit each).  It
 * stays below URDMA_COPY_RESCHED (exec.h), so that no copy in a kick
 * reaches its cond_resched().
 */
#define URDMA_KICK_BYTES	(64 * 1024)
#define URDMA_KICK_ITEM		1024

/**
 * urdma_engine_charge - may the pass do one more item of @bytes?
 * @eng: the engine, in a pass
 * @bytes: what the WQE's message, or the packet, would move
 *
 * The thread always may.  A kick may within URDMA_KICK_BYTES for all its
 * passes; what does not fit is left, untouched, to the thread, which the
 * kick then wakes.  Return: whether to go on.
 */
static inline bool urdma_engine_charge(struct urdma_engine *eng, u64 bytes)
{
	if (likely(!eng->in_kick))
		return true;
	bytes += URDMA_KICK_ITEM;
	if (bytes > eng->kick_left) {
		eng->kick_deferred = true;
		return false;
	}
	eng->kick_left -= bytes;
	return true;
}

int urdma_engines_start(struct urdma_dev *udev, const char *name);
void urdma_engines_stop(struct urdma_dev *udev);
void urdma_engine_attach(struct urdma_qp *qp);
void urdma_engine_detach(struct urdma_qp *qp);
void urdma_engine_count_err(struct urdma_qp *qp, bool gone);
void urdma_engine_sync(void);
void urdma_engine_kick_user(struct urdma_engine *eng, bool send);
void urdma_engine_notify(struct urdma_engine *eng);
void urdma_engine_wake(struct urdma_engine *eng);
void urdma_engine_wake_all(void);
u64 urdma_engine_counter(struct urdma_dev *udev, enum urdma_counter c);

/* sched.c, wire.c, exec.c */
int urdma_qp_run(struct urdma_engine *eng, struct urdma_qp *qp);
void urdma_rx(struct urdma_engine *eng, struct sk_buff *skb);
struct urdma_scratch *urdma_scratch_alloc(void);

#endif /* URDMA_ENGINE_H */
