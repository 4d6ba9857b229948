#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Build build/selftests/urdma_abi_test against the kselftest harness of
# linux-source-6.12.  The two harness headers are extracted (once) from the
# Debian linux-source tarball into the cache; they are never copied into the
# source tree.
#
# Environment: URDMA_CACHE (default /var/cache/urdma), LINUX_SOURCE_TARBALL
# (default /usr/src/linux-source-6.12.tar.xz), CC (default gcc), OUT (default
# build/selftests under the repository).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
CACHE=${URDMA_CACHE:-/var/cache/urdma}/kselftest-6.12
TARBALL=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
OUT=${OUT:-$TOP/build/selftests}
CC=${CC:-gcc}
HDRS=(kselftest_harness.h kselftest.h)

have_headers() {
	local h
	for h in "${HDRS[@]}"; do
		[ -s "$CACHE/$h" ] || return 1
	done
}

if ! have_headers; then
	[ -r "$TARBALL" ] || {
		echo "selftests: $TARBALL missing (apt-get install linux-source-6.12)" >&2
		exit 1
	}
	echo "selftests: extracting the kselftest harness from $TARBALL" >&2
	mkdir -p "$(dirname "$CACHE")"
	tmp=$(mktemp -d "$(dirname "$CACHE")/.kselftest-6.12.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	members=()
	for h in "${HDRS[@]}"; do
		members+=("linux-source-6.12/tools/testing/selftests/$h")
	done
	chmod 755 "$tmp"
	tar -xJf "$TARBALL" -C "$tmp" --strip-components=4 "${members[@]}"
	# Publish atomically: a concurrent build sees all headers or none.
	if ! have_headers; then
		rm -rf "$CACHE"
		mv "$tmp" "$CACHE"
	fi
fi

mkdir -p "$OUT"
# C (gnu11), not C++: the 6.12 harness does not compile as C++ (its
# test_harness_run() assigns mmap()'s void * without a cast, and
# __wait_for_test() uses the designated initializer .sa_sigaction, which is a
# macro for a nested union member).  The -Wno-* options silence what the
# harness macros themselves trip under -Wextra.
"$CC" -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	-Wno-clobbered \
	-D_GNU_SOURCE -I"$CACHE" -I"$TOP/uapi" \
	-o "$OUT/urdma_abi_test" "$HERE/urdma_abi_test.c" -pthread
echo "selftests: built $OUT/urdma_abi_test" >&2
