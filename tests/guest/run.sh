#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Guest-side test runner: runs inside a urdma-vm guest with urdma0 created.
# Prints TAP lines ("ok - ..." / "not ok - ...") and exits non-zero if any
# test failed.  Usage: run.sh [TEST...]  (default: all, in order)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
FINAL=${URDMA_RESULTS:-$TOP/build/results/guest-${URDMA_KERNEL:-unknown}}
RESULTS=$FINAL
# In a guest the tree is a 9p share.  The tests write their logs to the
# guest's tmpfs, and the whole directory is copied over once at the end:
# thousands of small appends over 9p once left Debian 6.12's netfs write
# path stuck ("No submit") and the lane waiting for its timeout.
if [ -n "${URDMA_VM:-}" ]; then
	RESULTS=/tmp/urdma-results
	save_results() {
		mkdir -p "$FINAL" && cp -r "$RESULTS/." "$FINAL/"
	}
	trap save_results EXIT
fi
mkdir -p "$RESULTS"

# The lane's tests: lanes.list, the one list of them.
LANE=debian
ABI_ARGS=()
# The debug kernel (KASAN, lockdep, kmemleak) runs several times slower
# under TCG: it leaves out the ABI fuzzers, which the fuzz lane runs on it
# for minutes.
if [ "${URDMA_KERNEL:-}" = debug ]; then
	LANE=debug
	ABI_ARGS=(-T fuzz -T fuzz_rings)
fi
mapfile -t ALL < <(awk -v lane="$LANE" '!/^#/ {
	for (i = 2; i <= NF; i++) if ($i == lane) print $1 }' "$HERE/lanes.list")
if [ ${#ALL[@]} -eq 0 ]; then
	echo "not ok - guest: no test for lane $LANE in $HERE/lanes.list"
	exit 1
fi
TESTS=("${@:-${ALL[@]}}")
rc=0

run_verbs() {
	local bin=$TOP/build/tests/urdma_verbs_test json=$RESULTS/verbs.json
	if [ ! -x "$bin" ]; then
		echo "not ok - verbs: $bin missing (make tests)"
		return 1
	fi
	"$bin" --gtest_output="json:$json" >"$RESULTS/verbs.log" 2>&1
	python3 "$HERE/gtest2tap.py" verbs "$json" "$RESULTS/verbs.log"
}

run_abi() {
	TAP_PREFIX=abi URDMA_RESULTS=$RESULTS "$TOP/tests/selftests/run.sh" \
		"${ABI_ARGS[@]}"
}

for t in "${TESTS[@]}"; do
	echo "# --- $t"
	t0=$(date +%s)
	if [ "$t" = verbs ]; then
		run_verbs || rc=1
	elif [ "$t" = abi ]; then
		run_abi || rc=1
	else
		TAP_PREFIX=$t URDMA_RESULTS=$RESULTS "$HERE/t_$t.sh" || rc=1
	fi
	echo "# --- $t took $(( $(date +%s) - t0 ))s"
done
exit $rc
