// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* urdma_abi_test: processes killed with objects and transfers live. */

/* ---- killed processes --------------------------------------------------- */

/* Per kind of queue. */
struct fill_report {
	int made[NKINDS];	/* created */
	int err[NKINDS];	/* why the filling stopped */
	int more[NKINDS];	/* one more of each */
};

/*
 * @want[] of each kind, CQs first (the first CQ for the QPs), then QPs,
 * then SRQs; and one more of each.
 */
static void fill_all(struct qenv *e, const int want[NKINDS],
		     struct fill_report *f)
{
	struct cq cq;
	uint32_t x;
	int k;

	memset(f, 0, sizeof(*f));
	f->err[KIND_CQ] = cq_new(e, 1, &cq);
	if (f->err[KIND_CQ])
		return;
	f->made[KIND_CQ] = 1;	/* the first CQ counts */
	for (k = 0; k < NKINDS; k++) {
		f->made[k] += fill_kind(e, k, cq.handle, want[k] - f->made[k],
					NULL, &f->err[k]);
		f->more[k] = kind_new(e, k, cq.handle, &x);
	}
}

/* All of fill_all()'s @want were made and, if @full, not one more. */
static void expect_filled(struct __test_metadata *_metadata,
			  const struct fill_report *f,
			  const int want[NKINDS], bool full, const char *who)
{
	int k;

	for (k = 0; k < NKINDS; k++) {
		EXPECT_EQ(want[k], f->made[k])
			TH_LOG("%s%s %d: %s", who, kind_name[k],
			       f->made[k] + 1, ename(f->err[k]));
	}
	for (k = 0; full && k < NKINDS; k++) {
		EXPECT_EQ(-ENOMEM, f->more[k]);
	}
}

#define PIN_TOLERANCE	256	/* pages others may pin meanwhile */

/*
 * A child fills the device with CQs, QPs and SRQs (rings and doorbells
 * pinned) and is SIGKILLed: the device's counts and the system's pinned
 * pages return, and the parent can fill the device again.  On the debug
 * kernel the child creates a few hundred of each instead, and the limits
 * are not probed.
 */
TEST_F_TIMEOUT(q, sigkill_child_with_queues, 900)
{
	struct res_counts c0, now;
	struct fill_report f, g;
	long pins0, during, after, pages;
	int p[2], status, want[NKINDS], ret, i;
	struct dev_limits lim;
	struct cq cq;
	bool full;
	pid_t pid;

	REQUIRE_MEMLOCK();
	REQUIRE_COUNTS(c0);
	REQUIRE_LIMITS(lim);
	full = !on_debug_kernel();
	want[KIND_CQ] = full ? lim.cq - c0.cq : 256;
	want[KIND_QP] = full ? lim.qp - c0.qp : 256;
	want[KIND_SRQ] = full ? lim.srq - (c0.srq < 0 ? 0 : c0.srq) : 64;
	ASSERT_LT(0, want[KIND_CQ]);
	ASSERT_LT(0, want[KIND_QP]);
	pages = want[KIND_CQ] + 2L * want[KIND_QP] + want[KIND_SRQ];
	pins0 = settled_pins();
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct qenv e;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		memset(&f, 0, sizeof(f));
		f.err[KIND_CQ] = qenv_open(&e);
		if (!f.err[KIND_CQ])
			f.err[KIND_CQ] = qenv_arena(&e, pages + 64);
		if (!f.err[KIND_CQ])
			fill_all(&e, want, &f);
		if (write(p[1], &f, sizeof(f)) != sizeof(f))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ret = read(p[0], &f, sizeof(f));
	close(p[0]);
	during = pins_outstanding();
	if (ret != sizeof(f))
		kill(pid, SIGKILL);
	ASSERT_EQ(sizeof(f), ret);
	expect_filled(_metadata, &f, want, full, "child: ");
	if (full) {
		/* The device is full while the child lives. */
		ret = cq_new(&self->e, 1, &cq);
		EXPECT_EQ(-ENOMEM, ret);
		if (!ret)
			destroy_cq(self->e.fd, cq.handle);
	}
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* Its objects went with it ... */
	ret = wait_counts(&c0, 120, &now);
	ASSERT_EQ(0, ret)
		TH_LOG("device holds cq %ld qp %ld srq %ld, had %ld %ld %ld",
		       now.cq, now.qp, now.srq, c0.cq, c0.qp, c0.srq);
	/* ... and so did its pins (unrelated pins may come and go). */
	if (pins0 >= 0) {
		after = pins_outstanding();
		for (i = 0; i < 100 && after > pins0 + PIN_TOLERANCE; i++) {
			usleep(100 * 1000);
			after = pins_outstanding();
		}
		EXPECT_GE(pins0 + PIN_TOLERANCE, after)
			TH_LOG("pinned pages: %ld before, %ld after the child",
			       pins0, after);
		EXPECT_LE(pages * 9 / 10, during - after)
			TH_LOG("the child's %ld ring pages were not pinned (%ld)",
			       pages, during - after);
	} else {
		TH_LOG("no nr_foll_pin_* in /proc/vmstat: pins not checked");
	}
	/* The parent gets exactly as many. */
	ASSERT_RET(0, qenv_arena(&self->e, pages + 64));
	fill_all(&self->e, want, &g);
	expect_filled(_metadata, &g, want, full, "");
}

/* Children busy creating and destroying queues are SIGKILLed mid-flight. */
TEST_F_TIMEOUT(q, sigkill_busy_queue_children, 600)
{
	struct res_counts now;
	int round, status, ret;

	for (round = 0; round < 6; round++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;) {
				struct qenv e;
				struct qp_req r;
				struct srq s;
				struct cq cq;
				struct qp qp;
				int k;

				if (qenv_open(&e) || qenv_arena(&e, 64 * 6))
					_exit(1);
				for (k = 0; k < 64; k++) {
					if (cq_new(&e, 16, &cq))
						continue;
					if (!srq_new(&e, 16, &s) && k % 2 &&
					    !qp_req_srq(&e, &r, QPT_RC,
							cq.handle, s.handle, 4))
						qp_create(&e, &r, &qp);
					if (!qp_req_init(&e, &r, QPT_UD,
							 cq.handle, 4) &&
					    !qp_create(&e, &r, &qp) && k % 3)
						destroy_qp(e.fd, qp.handle);
				}
				qenv_close(&e);
			}
		}
		usleep(50000 + 50000 * round);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("child exited %d",
							WEXITSTATUS(status));
	}
	if (self->have_counts) {
		ret = wait_counts(&self->base, 60, &now);
		ASSERT_EQ(0, ret)
			TH_LOG("device holds cq %ld qp %ld srq %ld pd %ld",
			       now.cq, now.qp, now.srq, now.pd);
	}
}
