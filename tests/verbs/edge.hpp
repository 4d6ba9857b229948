// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Device-wide object limits, checked at their edge.
#pragma once

#include "verbs.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace urdma::test {

/*
 * @room more objects fit on the device (its max_* minus device_usage()),
 * so: @room calls of @make succeed, the next fails with ENOMEM, freeing
 * one makes room for exactly one more, and the one after that fails
 * again.  @make returns a smart pointer (Pd, Cq, ...) and leaves errno set
 * when it fails.
 */
template <class Make>
void expect_limit_edge(const std::string &what, long long room, Make make)
{
	using Ptr = decltype(make());

	ASSERT_GT(room, 0) << "no room for a single " << what;
	std::vector<Ptr> objs;
	objs.reserve(room);
	for (long long i = 0; i < room; i++) {
		errno = 0;
		Ptr p = make();
		ASSERT_TRUE(p) << what << " " << i + 1 << " of " << room
			       << " failed: " << strerror(errno);
		objs.push_back(std::move(p));
	}

	errno = 0;
	Ptr extra = make();
	EXPECT_FALSE(extra) << "one " << what << " beyond the limit exists";
	EXPECT_EQ(errno, ENOMEM) << strerror(errno);
	if (extra)
		objs.push_back(std::move(extra));

	// Freeing one makes room for exactly one.
	objs.pop_back();
	errno = 0;
	Ptr again = make();
	EXPECT_TRUE(again) << what << " after freeing one: " << strerror(errno);
	errno = 0;
	Ptr beyond = make();
	EXPECT_FALSE(beyond) << "one " << what << " beyond the limit exists";
	EXPECT_EQ(errno, ENOMEM) << strerror(errno);
}

} // namespace urdma::test
