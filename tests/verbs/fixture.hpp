// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// GoogleTest fixtures and helpers the suites share.
#pragma once

#include "verbs.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace urdma::test {

// For a create that is expected to fail: the errno it left, 0 if @make
// made an object after all (which is released again).
template <class Make>
int create_errno(Make make)
{
	errno = 0;
	auto obj = make();
	return obj ? 0 : errno;
}

// A context on the device under test.
class ContextTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		ctx_ = open_device();
		ASSERT_TRUE(ctx_) << "cannot open " << device_name() << ": "
				  << strerror(errno);
	}

	Context ctx_;
};

// ... with the device's attributes and a PD.  A fixture that needs more
// calls ASSERT_NO_FATAL_FAILURE(PdTest::SetUp()) first.
class PdTest : public ContextTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(ContextTest::SetUp());
		ASSERT_EQ(ibv_query_device(ctx_.get(), &attr_), 0);
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << strerror(errno);
	}

	ibv_device_attr attr_{};
	Pd pd_;
};

/*
 * Fork a child that runs @child(report) and kill it once it has reported.
 * The child creates what it is to hold, then calls report('y') -- or, if a
 * step failed, report() with a letter that names the step -- which hands
 * the letter to the parent and waits, holding everything, to be killed.
 * The parent reads the letter into *@c and pins_outstanding() into
 * *@during while the child still holds its objects, then SIGKILLs and
 * reaps it.  A child that dies (or returns) before reporting is a fatal
 * failure: call this in ASSERT_NO_FATAL_FAILURE().
 */
template <class Child>
void run_then_kill_child(Child child, char *c, long *during)
{
	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		child([&](char r) {
			if (write(ready[1], &r, 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		});
		_exit(1);  // no report: EOF for the parent
	}
	// Only the child writes, so a child that dies early reads as EOF.
	close(ready[1]);
	*c = 0;
	ssize_t got = read(ready[0], c, 1);
	*during = pins_outstanding();
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, 0);
	close(ready[0]);
	ASSERT_EQ(got, 1) << "the child died before reporting";
}

/*
 * Run @child(ctx, pd) in a forked process that first lowers RLIMIT_MEMLOCK
 * to 64 KiB and drops root (and with it CAP_IPC_LOCK), then opens the
 * device and allocates a PD.  @child ends in _exit() with its verdict, 0
 * if all went as it should; *@status is the child's exit status, 10 if
 * the limit could not be set and 11 if the device or the PD could not be
 * had.
 */
template <class Child>
void run_memlock_limited_child(Child child, int *status)
{
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		rlimit rl = { 64 * 1024, 64 * 1024 };
		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setuid(65534))
			_exit(10);
		Context ctx = open_device();
		if (!ctx)
			_exit(11);
		Pd pd(ibv_alloc_pd(ctx.get()));
		if (!pd)
			_exit(11);
		child(ctx.get(), pd.get());
		_exit(0);  // @child returned: nothing failed
	}
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFEXITED(st));
	*status = WEXITSTATUS(st);
}

} // namespace urdma::test
