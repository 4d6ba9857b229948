#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs in the debug-kernel guest: load urdma_kunit (its suites run at load)
# and write one well-formed KTAP document with every urdma suite to $1.
set -euo pipefail
out=$1
KUNIT=/sys/kernel/debug/kunit

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
modprobe urdma
modprobe urdma_kunit

mapfile -t suites < <(ls -d $KUNIT/urdma_* 2>/dev/null)
[ ${#suites[@]} -gt 0 ] || { echo "no urdma KUnit suites ran" >&2; exit 1; }

# Each results file is a KTAP document holding one suite numbered 1:
# drop its header and renumber the suite line.
{
	echo "KTAP version 1"
	echo "1..${#suites[@]}"
	i=0
	for s in "${suites[@]}"; do
		i=$((i + 1))
		tail -n +3 "$s/results" |
			sed -E "\$s/^(not )?ok 1 /\\1ok $i /"
	done
} >"$out"
cat "$out"
rmmod urdma_kunit
