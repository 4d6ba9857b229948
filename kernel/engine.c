// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The HCA engine: per device, one or more kernel threads that poll the
 * doorbell records of their QPs, execute the WQEs they find and write
 * completions (the stages: sched.c, exec.c, recv.c, complete.c, mem.c;
 * the wire: wire.c, wire_rc.c).
 *
 * Polling and sleeping.  A thread makes passes over its QPs.  After a pass
 * that found nothing to do it keeps polling for its window, which adapts
 * between poll_us and poll_max_us microseconds (urdma_engine_adapt()), then
 * sleeps.  Before sleeping it sets its asleep flag in the state page, issues
 * a full barrier and makes one more pass; a poster writes its producer
 * index, issues a full barrier and reads the flag.  One of the two sees the
 * other, so a WQE is never left behind, and user space enters the kernel
 * (a zero-WR post, the "kick") only when the thread really sleeps.
 *
 * A thread polls only while it has its CPU to itself.  When another task
 * is runnable there (single_task_running(), the test KVM's halt polling
 * makes), an idle pass puts it to sleep at once: a busy-polling process
 * that shares the CPU with it would otherwise wait a scheduler slice
 * (milliseconds) for the WQE the thread is not polling for, and the thread
 * a slice for the WQE the process is about to post.  Asleep, it is woken
 * by the poster's kick and runs at once (wake-up preemption).
 *
 * Kicks run passes.  A kick comes from a poster's system call, in process
 * context.  Rather than wake the thread, which costs a wake-up and two
 * context switches on a CPU that a polling application may want, the kick
 * makes the passes itself while the thread sleeps, as rxe runs its
 * requester in the poster's system call (kick_runs=N turns this off).
 * Whoever makes passes holds @run; the thread drops it only to sleep.  The
 * asleep flag stays set meanwhile, so a post that races with the kicker
 * kicks too; that kick finds @run taken and wakes the thread, which waits
 * for @run and carries on.  A kicker that leaves work, a timer or a frame
 * behind wakes the thread as well, and so does one whose thread last went
 * to sleep with its CPU to itself: it polls for the posts that follow, so
 * that a poller with a CPU to spare makes no more system calls.  A thread
 * that yielded its CPU to another task the last times it slept is left
 * asleep for up to URDMA_CONTENDED_US, as the kicks make the passes,
 * unless the kicks all come from one task (urdma_engine_contended()).
 *
 * A kick runs other users' work in the kicker's system call, so it must
 * not be able to hold the engine while descheduled: a kicker that a cgroup
 * throttles, or that runs SCHED_IDLE, would otherwise stall every QP of
 * the engine and every urdma_engine_sync() of the host for as long as it
 * waits for a CPU.  The kick's passes therefore run with preemption off,
 * and do at most URDMA_KICK_BYTES of work (urdma_engine_charge()): a WQE
 * or packet beyond that is left to the thread, which the kick wakes.  On
 * PREEMPT_RT, where the passes' spinlocks sleep, kicks only wake the
 * thread.
 *
 * Quiescence.  A pass may hold pointers to any QP, CQ, SRQ, MR, MW or
 * device it looked up, on this device or, on the local path, on another.
 * Whoever destroys such an object first unpublishes it (takes it off the
 * lookup tables and engine lists), then calls urdma_engine_sync(), which
 * waits until every engine thread of every device has finished the pass it
 * was in.  Only then is the object's memory unpinned or freed.  A thread
 * that sleeps is not in a pass, so this costs nothing on an idle engine.
 */
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>

#include "exec.h"

static unsigned int engines = 1;
module_param(engines, uint, 0444);
MODULE_PARM_DESC(engines, "engine threads per device (1-16, default 1)");

static unsigned int poll_us = 100;
module_param(poll_us, uint, 0644);
MODULE_PARM_DESC(poll_us,
		 "microseconds an idle engine keeps polling before it sleeps (default 100)");

static unsigned int poll_max_us = 2000;
module_param(poll_max_us, uint, 0644);
MODULE_PARM_DESC(poll_max_us,
		 "upper bound of the adaptive polling window (default 2000)");

static bool batch_wakes = true;
module_param(batch_wakes, bool, 0644);
MODULE_PARM_DESC(batch_wakes,
		 "frames an engine's transmits queue for another engine (veth) wake it once at the end of the pass (default Y)");

static bool kick_runs = true;
module_param(kick_runs, bool, 0644);
MODULE_PARM_DESC(kick_runs,
		 "a kick runs the sleeping engine's passes in the kicker's system call (default Y)");

static char *engine_cpus;
module_param(engine_cpus, charp, 0444);
MODULE_PARM_DESC(engine_cpus,
		 "CPU list the engine threads may run on (default: all)");

#define URDMA_ENGINES_MAX	16
/* Received frames an engine handles per pass. */
#define URDMA_RX_BUDGET		64
/* Passes a kick makes at most before it leaves the rest to the thread. */
#define URDMA_KICK_PASSES	4
/*
 * A thread that yielded its CPU to another task this many times in a row
 * is left asleep, while kicks make the passes, for this long.
 */
#define URDMA_CONTENDED_SLEEPS	2
#define URDMA_CONTENDED_US	2000

/* Every engine thread of every device; urdma_engine_sync() walks it. */
static LIST_HEAD(urdma_engines);
static DEFINE_MUTEX(urdma_engines_lock);

/* ---- passes and quiescence ------------------------------------------------ */

static void urdma_pass_begin(struct urdma_engine *eng)
{
	WRITE_ONCE(eng->pass_seq, eng->pass_seq + 1);
	/* The odd sequence before any lookup of the pass. */
	smp_mb();
}

static void urdma_engine_wake_now(struct urdma_engine *eng);

/*
 * Wake the engines that frames from this thread's pass were queued for
 * (urdma_engine_wake()).  In the pass: urdma_engine_sync() keeps them
 * alive until it ends.  With softirqs off, so that none adds one meanwhile.
 */
static void urdma_engine_woken(struct urdma_engine *eng)
{
	unsigned int i;

	for (i = 0; i < eng->n_woken; i++)
		urdma_engine_wake_now(eng->woken[i]);
	eng->n_woken = 0;
}

static void urdma_pass_end(struct urdma_engine *eng)
{
	/*
	 * A frame queued after the last wake and before the even sequence
	 * would be left until the next pass: softirqs stay off between.
	 */
	local_bh_disable();
	urdma_engine_woken(eng);
	/* Every access of the pass before the even sequence. */
	smp_mb();
	WRITE_ONCE(eng->pass_seq, eng->pass_seq + 1);
	local_bh_enable();
	smp_mb();	/* the even sequence before looking for waiters */
	if (wq_has_sleeper(&eng->pass_wq))
		wake_up_all(&eng->pass_wq);
}

/**
 * urdma_engine_sync - wait until no engine can hold an unpublished object
 *
 * The caller has taken the object off every table and list that an engine
 * looks in.  Sleeps; must not be called by an engine thread.
 */
void urdma_engine_sync(void)
{
	struct urdma_engine *eng;
	unsigned long seq;

	/* The caller's unpublishing before the sequence reads. */
	smp_mb();
	mutex_lock(&urdma_engines_lock);
	list_for_each_entry(eng, &urdma_engines, node) {
		seq = READ_ONCE(eng->pass_seq);
		if (seq & 1)
			wait_event(eng->pass_wq,
				   READ_ONCE(eng->pass_seq) != seq);
	}
	mutex_unlock(&urdma_engines_lock);
}

/* ---- kicks ---------------------------------------------------------------- */

/*
 * Wake every engine thread that sleeps: pages an ODP MR waited for are
 * there (odp.c), and the WQEs or packets that wait for them may be on any
 * device's engine (the local path crosses devices).
 */
void urdma_engine_wake_all(void)
{
	struct urdma_engine *eng;

	mutex_lock(&urdma_engines_lock);
	list_for_each_entry(eng, &urdma_engines, node)
		urdma_engine_notify(eng);
	mutex_unlock(&urdma_engines_lock);
}

/*
 * Wake @eng: user space asked (a zero-WR post) or kernel posting found it
 * asleep.  The flag drops at once, so that posts racing with the wake-up do
 * not kick again; the thread makes a full pass before it can set it again.
 */
static void urdma_engine_rouse(struct urdma_engine *eng)
{
	WRITE_ONCE(eng->state->asleep, 0);
	WRITE_ONCE(eng->kicked, true);
	wake_up_process(eng->task);
}

static void urdma_engine_kick(struct urdma_engine *eng)
{
	atomic64_inc(&eng->kicks);
	urdma_engine_rouse(eng);
}

static int urdma_engine_pass(struct urdma_engine *eng);

/*
 * The thread found its CPU wanted by another task the last few times it
 * went to sleep, the last of them not long ago: polling would only
 * compete with the pollers.  A task that passes through its CPU once
 * (a kworker, say) does not count.  Nor does a poster that kicks again
 * and again: a ping-pong's two sides take turns, while a lone poster
 * that kicks at every post is one that the thread, polling, would save
 * the system calls.
 */
static bool urdma_engine_contended(struct urdma_engine *eng)
{
	return eng->contended >= URDMA_CONTENDED_SLEEPS &&
	       eng->same_kicker < URDMA_CONTENDED_SLEEPS &&
	       ktime_us_delta(ktime_get(), eng->contended_at) <
	       URDMA_CONTENDED_US;
}

/* Count the kicks in a row from the current task (never dereferenced). */
static void urdma_engine_note_kicker(struct urdma_engine *eng)
{
	if (eng->last_kicker == current) {
		eng->same_kicker = min(eng->same_kicker + 1, 255);
	} else {
		eng->last_kicker = current;
		eng->same_kicker = 0;
	}
}

/**
 * urdma_engine_kick_user - a kick from user space: a zero-WR post
 * @eng: the engine of the QP posted to
 * @send: it follows a post to a send queue (else to a receive queue)
 *
 * Process context, no locks held.  Runs the engine's passes here if the
 * thread has let go of @run (it sleeps); see "Kicks run passes" above.
 * The thread is woken as well unless nothing is left for it and it would
 * only compete for a CPU (urdma_engine_contended()).
 */
void urdma_engine_kick_user(struct urdma_engine *eng, bool send)
{
	int work, passes = 0;
	bool wake;

	if (IS_ENABLED(CONFIG_PREEMPT_RT) || !READ_ONCE(kick_runs)) {
		urdma_engine_kick(eng);
		return;
	}
	/* Not descheduled while it holds @run: see "A kick runs ..." above. */
	preempt_disable();
	if (!mutex_trylock(&eng->run)) {
		preempt_enable();
		urdma_engine_kick(eng);
		return;
	}
	atomic64_inc(&eng->kicks);
	eng->cnt[URDMA_CNT_KICK_RUNS]++;
	eng->in_kick = true;
	eng->kick_left = URDMA_KICK_BYTES;
	/* A ping-pong's side reposts its receive, then sends. */
	if (send)
		urdma_engine_note_kicker(eng);
	/*
	 * A pass that stayed below URDMA_QP_BUDGET left no queue with work
	 * that it saw: each QP's stopped at an empty ring, an error or a
	 * timer.  WQEs posted meanwhile were kicked for, and that kick,
	 * finding @run taken, woke the thread.  So no empty pass follows.
	 */
	do {
		work = urdma_engine_pass(eng);
	} while (work >= URDMA_QP_BUDGET && !eng->kick_deferred &&
		 ++passes < URDMA_KICK_PASSES);
	eng->in_kick = false;
	wake = work >= URDMA_QP_BUDGET || eng->kick_deferred ||
	       eng->deadline != KTIME_MAX ||
	       !skb_queue_empty_lockless(&eng->rxq) ||
	       !urdma_engine_contended(eng);
	mutex_unlock(&eng->run);
	preempt_enable();
	if (wake)
		urdma_engine_rouse(eng);
}

/* After kernel posting: kick only if the engine sleeps (doorbell elision). */
void urdma_engine_notify(struct urdma_engine *eng)
{
	/* The producer index before the flag; pairs with urdma_engine_sleep. */
	smp_mb();
	if (READ_ONCE(eng->state->asleep))
		urdma_engine_kick(eng);
}

static void urdma_engine_wake_now(struct urdma_engine *eng)
{
	/* The queued frame before the flag; pairs with urdma_engine_sleep. */
	smp_mb();
	if (READ_ONCE(eng->state->asleep))
		urdma_engine_rouse(eng);
}

static int urdma_engine_thread(void *arg);

/*
 * The engine thread whose pass this softirq interrupts, or NULL: over veth
 * the receive runs in the sender's softirq, at the end of its transmit.
 */
static struct urdma_engine *urdma_engine_in_pass(void)
{
	struct urdma_engine *src;

	if (!in_serving_softirq() || !(current->flags & PF_KTHREAD) ||
	    kthread_func(current) != urdma_engine_thread)
		return NULL;
	src = kthread_data(current);
	return READ_ONCE(src->pass_seq) & 1 ? src : NULL;
}

/**
 * urdma_engine_wake - the receive handler queued a frame for @eng
 * @eng: the engine of the frame's QP
 *
 * Softirq.  Wakes the thread if it sleeps; but when the frame comes from
 * another engine thread's transmit in the same pass (veth), only at the
 * end of that pass or before it yields the CPU (urdma_engine_woken()),
 * once for all its frames: a wake-up per frame made the receiving thread
 * run and sleep again for each, with a context switch and, on another CPU,
 * an IPI each time.
 */
void urdma_engine_wake(struct urdma_engine *eng)
{
	struct urdma_engine *src = urdma_engine_in_pass();
	unsigned int i;

	if (src && src != eng && READ_ONCE(batch_wakes)) {
		for (i = 0; i < src->n_woken; i++)
			if (src->woken[i] == eng)
				return;
		if (src->n_woken < URDMA_WOKEN_MAX) {
			src->woken[src->n_woken++] = eng;
			return;
		}
	}
	urdma_engine_wake_now(eng);
}

u64 urdma_engine_counter(struct urdma_dev *udev, enum urdma_counter c)
{
	u64 sum = 0;
	unsigned int i;

	if (c == URDMA_CNT_ODP_FAULTS)
		return atomic64_read(&udev->odp_faults);
	for (i = 0; i < udev->num_engines; i++) {
		struct urdma_engine *eng = &udev->engines[i];

		if (c == URDMA_CNT_KICKS)
			sum += atomic64_read(&eng->kicks);
		else if (c == URDMA_CNT_RX_DROPS)
			sum += atomic64_read(&eng->rx_dropped) +
			       READ_ONCE(eng->cnt[c]);
		else
			sum += READ_ONCE(eng->cnt[c]);
	}
	return sum;
}

/* ---- the thread ----------------------------------------------------------- */

/* One pass over the engine's QPs.  Return: how much work it did. */
static int urdma_engine_pass(struct urdma_engine *eng)
{
	struct urdma_qp *qp;
	struct sk_buff *skb;
	int work = 0;

	eng->deadline = KTIME_MAX;
	urdma_pass_begin(eng);
	eng->kick_deferred = false;	/* urdma_engine_charge() sets it */
	while (work < URDMA_RX_BUDGET && (skb = skb_dequeue(&eng->rxq))) {
		if (!urdma_engine_charge(eng, skb->len)) {
			skb_queue_head(&eng->rxq, skb);	/* the thread's */
			break;
		}
		urdma_rx(eng, skb);
		work++;
	}
	/*
	 * Removal waits for the pass to end (urdma_engine_sync).  A kick
	 * that ran out of its budget leaves the rest to the thread, which
	 * may reschedule between QPs (the QP it is at stays alive).
	 */
	list_for_each_entry_rcu(qp, &eng->qps, eng_node, true) {
		if (eng->kick_deferred)
			break;
		work += urdma_qp_run(eng, qp);
		if (!eng->in_kick) {
			/* Unlocked: a frame noted after it waits for the end. */
			if (READ_ONCE(eng->n_woken)) {
				local_bh_disable();
				urdma_engine_woken(eng);
				local_bh_enable();
			}
			cond_resched();
		}
	}
	urdma_pass_end(eng);
	eng->cnt[URDMA_CNT_POLLS]++;
	return work;
}

/*
 * Adapt the polling window to the traffic: a kick soon after falling
 * asleep means the window was too short for this poster's rhythm (each
 * such kick is a system call), so it doubles, up to poll_max_us; a long
 * sleep halves it again, down to poll_us.
 */
static void urdma_engine_adapt(struct urdma_engine *eng, ktime_t slept_at)
{
	unsigned int lo = READ_ONCE(poll_us);
	unsigned int hi = max(READ_ONCE(poll_max_us), lo);
	s64 slept_us = ktime_us_delta(ktime_get(), slept_at);

	if (READ_ONCE(eng->kicked) && slept_us < 8 * (s64)eng->window_us)
		eng->window_us = min(eng->window_us * 2, hi);
	else
		eng->window_us = max(eng->window_us / 2, lo);
	eng->window_us = clamp(eng->window_us, lo, hi);
}

/* Sleep until kicked or until the earliest QP timer. Return: work done. */
static int urdma_engine_sleep(struct urdma_engine *eng)
{
	ktime_t slept_at;
	int work;

	set_current_state(TASK_INTERRUPTIBLE);
	WRITE_ONCE(eng->state->asleep, 1);
	/* The flag before the last look at the doorbells. */
	smp_mb();
	work = urdma_engine_pass(eng);
	if (!work && !kthread_should_stop()) {
		eng->cnt[URDMA_CNT_SLEEPS]++;
		WRITE_ONCE(eng->kicked, false);
		slept_at = ktime_get();
		/* Kicks may make passes while the thread sleeps. */
		mutex_unlock(&eng->run);
		if (eng->deadline == KTIME_MAX) {
			schedule();
		} else {
			ktime_t t = eng->deadline;

			schedule_hrtimeout_range(&t, 50 * NSEC_PER_USEC,
						 HRTIMER_MODE_ABS);
		}
		__set_current_state(TASK_RUNNING);
		mutex_lock(&eng->run);
		urdma_engine_adapt(eng, slept_at);
	}
	__set_current_state(TASK_RUNNING);
	WRITE_ONCE(eng->state->asleep, 0);
	return work;
}

static int urdma_engine_thread(void *arg)
{
	struct urdma_engine *eng = arg;
	ktime_t last_work = ktime_get();

	mutex_lock(&eng->run);
	while (!kthread_should_stop()) {
		int work = urdma_engine_pass(eng);
		ktime_t now = ktime_get();
		bool alone = single_task_running();

		if (work) {
			last_work = now;
		} else if (eng->deadline != KTIME_MAX &&
			   ktime_before(eng->deadline, now)) {
			/* A timer is due: the next pass handles it. */
		} else if (!alone ||
			   ktime_us_delta(now, last_work) >= eng->window_us) {
			eng->contended = alone ? 0 :
					 min(eng->contended + 1, 255);
			eng->contended_at = now;
			if (!alone)
				eng->cnt[URDMA_CNT_YIELDS]++;
			urdma_engine_sleep(eng);
			last_work = ktime_get();
		} else {
			cpu_relax();
		}
		cond_resched();
	}
	mutex_unlock(&eng->run);
	return 0;
}

/* ---- QPs ------------------------------------------------------------------ */

/* Give @qp to an engine thread; from here on its doorbells are polled. */
void urdma_engine_attach(struct urdma_qp *qp)
{
	struct urdma_engine *eng = qp->eng;

	spin_lock(&eng->lock);
	list_add_tail_rcu(&qp->eng_node, &eng->qps);
	spin_unlock(&eng->lock);
}

/* Take @qp off its engine; the caller then calls urdma_engine_sync(). */
void urdma_engine_detach(struct urdma_qp *qp)
{
	struct urdma_engine *eng = qp->eng;

	if (!eng)
		return;
	spin_lock(&eng->lock);
	list_del_rcu(&qp->eng_node);
	spin_unlock(&eng->lock);
}

/**
 * urdma_engine_count_err - keep the state page's count of QPs in ERROR
 * @qp: a QP whose state may have changed to or from ERROR
 * @gone: it is being destroyed, and counts as not in ERROR
 *
 * Any context.  The provider kicks a sleeping engine for a receive only
 * while err_qps is not 0 (receive-kick elision, see the uapi header).
 * Called after every change of @qp's state to or from ERROR: under
 * @err_lock, @qp's state and what was counted for it are compared, so
 * racing callers leave the count right.  The full barrier orders the new
 * count before the engine's next look at @qp's receive queue.
 */
void urdma_engine_count_err(struct urdma_qp *qp, bool gone)
{
	struct urdma_engine *eng = qp->eng;
	unsigned long flags;
	u32 n;
	bool err;

	if (!eng)
		return;
	spin_lock_irqsave(&eng->err_lock, flags);
	err = !gone && READ_ONCE(qp->attr.qp_state) == IB_QPS_ERR;
	if (err != qp->err_counted) {
		qp->err_counted = err;
		n = eng->state->err_qps;
		WRITE_ONCE(eng->state->err_qps, err ? n + 1 : n - 1);
	}
	spin_unlock_irqrestore(&eng->err_lock, flags);
	/* The count before the RQ's producer index; pairs with the provider. */
	smp_mb();
}

/* ---- start and stop ------------------------------------------------------- */

static int urdma_engine_cpumask(struct cpumask *mask)
{
	int ret;

	if (!engine_cpus || !*engine_cpus) {
		cpumask_copy(mask, cpu_online_mask);
		return 0;
	}
	ret = cpulist_parse(engine_cpus, mask);
	if (ret)
		return ret;
	cpumask_and(mask, mask, cpu_online_mask);
	return cpumask_empty(mask) ? -EINVAL : 0;
}

/**
 * urdma_engines_start - start a device's engine threads
 * @udev: the device; its state page is allocated here
 * @name: what the threads are named after, "urdma/<name>/<index>": the
 *	device's name (the ib_device has none until it is registered)
 */
int urdma_engines_start(struct urdma_dev *udev, const char *name)
{
	unsigned int n = clamp(engines, 1U, URDMA_ENGINES_MAX), i;
	cpumask_var_t mask;
	int ret;

	BUILD_BUG_ON(URDMA_ENGINES_MAX > URDMA_MAX_ENGINES);
	if (!alloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	ret = urdma_engine_cpumask(mask);
	if (ret) {
		pr_err("urdma: bad engine_cpus \"%s\"\n", engine_cpus);
		goto out_mask;
	}

	udev->state_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	udev->engines = kcalloc(n, sizeof(*udev->engines), GFP_KERNEL);
	if (!udev->state_page || !udev->engines) {
		ret = -ENOMEM;
		goto err;
	}
	udev->engines_alloc = n;

	for (i = 0; i < n; i++) {
		struct urdma_engine *eng = &udev->engines[i];

		eng->udev = udev;
		eng->idx = i;
		eng->window_us = poll_us;
		eng->state = (struct urdma_engine_state *)
			page_address(udev->state_page) + i;
		spin_lock_init(&eng->lock);
		spin_lock_init(&eng->err_lock);
		mutex_init(&eng->run);
		INIT_LIST_HEAD(&eng->qps);
		init_waitqueue_head(&eng->pass_wq);
		skb_queue_head_init(&eng->rxq);
		INIT_LIST_HEAD(&eng->node);
		eng->scratch = urdma_scratch_alloc();
		if (!eng->scratch) {
			ret = -ENOMEM;
			goto err;
		}
		eng->task = kthread_create(urdma_engine_thread, eng,
					   "urdma/%s/%u", name, i);
		if (IS_ERR(eng->task)) {
			ret = PTR_ERR(eng->task);
			eng->task = NULL;
			goto err;
		}
		/* kthread_bind_mask() is not exported to modules. */
		set_cpus_allowed_ptr(eng->task, mask);
		udev->num_engines = i + 1;
		mutex_lock(&urdma_engines_lock);
		list_add_tail(&eng->node, &urdma_engines);
		mutex_unlock(&urdma_engines_lock);
		wake_up_process(eng->task);
	}
	free_cpumask_var(mask);
	return 0;

err:
	urdma_engines_stop(udev);
out_mask:
	free_cpumask_var(mask);
	return ret;
}

/*
 * Stop the threads; every QP is gone by now, and no frame comes in
 * (urdma_net_stop()).  Another device's pass may still hold one of these
 * engines to wake (urdma_engine_wake()): it ends first.
 */
void urdma_engines_stop(struct urdma_dev *udev)
{
	unsigned int i;

	urdma_engine_sync();

	for (i = 0; udev->engines && i < udev->num_engines; i++) {
		struct urdma_engine *eng = &udev->engines[i];

		WARN_ON(!list_empty(&eng->qps));
		mutex_lock(&urdma_engines_lock);
		list_del_init(&eng->node);
		mutex_unlock(&urdma_engines_lock);
		kthread_stop(eng->task);
		skb_queue_purge(&eng->rxq);
	}
	for (i = 0; udev->engines && i < udev->engines_alloc; i++)
		kfree(udev->engines[i].scratch);
	kfree(udev->engines);
	udev->engines = NULL;
	udev->num_engines = 0;
	if (udev->state_page)
		__free_page(udev->state_page);
	udev->state_page = NULL;
}
