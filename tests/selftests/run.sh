#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Run the uverbs ABI selftests (inside a urdma-vm guest, with urdma0 created)
# and turn the harness's TAP into the lanes' lines:
#   ok - abi: NAME | not ok - abi: NAME | ok - abi: NAME # SKIP reason
# with the harness's diagnostics of a failed test as "# " lines after it.
# The raw output is kept in $RESULTS/abi.log.  Exits non-zero if a test
# failed or the program did not finish.
# Usage: run.sh [harness options, e.g. -f ctx or -r dev.fuzz]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PREFIX=${TAP_PREFIX:-abi}
BIN=${URDMA_ABI_TEST:-$TOP/build/selftests/urdma_abi_test}
RESULTS=${URDMA_RESULTS:-$TOP/build/results/guest-${URDMA_KERNEL:-unknown}}
mkdir -p "$RESULTS"
LOG=$RESULTS/abi.log

stale() {
	local f
	for f in "$HERE/urdma_abi_test.c" "$HERE"/abi/*; do
		[ "$f" -nt "$BIN" ] && return 0
	done
	return 1
}

if [ ! -x "$BIN" ] || stale; then
	if ! out=$("$HERE/build.sh" 2>&1); then
		echo "not ok - $PREFIX: build"
		printf '%s\n' "$out" | sed 's/^/# /'
		exit 1
	fi
fi

# Each test's duration (seconds since the previous result) goes to
# $LOG.times; the slowest are reported at the end.
: >"$LOG.times"
"$BIN" "$@" 2>&1 | {
	prev=$EPOCHSECONDS
	while IFS= read -r l; do
		printf '%s\n' "$l"
		if [[ $l =~ ^(not\ )?ok\ [0-9]+\  ]]; then
			echo "$((EPOCHSECONDS - prev)) $l" >>"$LOG.times"
			prev=$EPOCHSECONDS
		fi
	done
} >"$LOG"
status=${PIPESTATUS[0]}

awk -v p="$PREFIX" -v status="$status" '
function flush_diag() { if (diag != "") printf "%s", diag; diag = "" }
/^1\.\.[0-9]+$/ { plan = substr($0, 4) + 0; next }
/^#  RUN / { diag = ""; next }
/^(not )?ok [0-9]+ / {
	bad = ($0 ~ /^not ok/)
	rest = $0
	sub(/^(not )?ok [0-9]+ /, "", rest)
	name = rest; dir = ""
	if ((i = index(rest, " # ")) > 0) {
		name = substr(rest, 1, i - 1)
		dir = substr(rest, i + 3)
		sub(/^ +/, "", dir)
	}
	seen++
	if (bad) {
		failed++
		print "not ok - " p ": " name (dir != "" ? " (" dir ")" : "")
		flush_diag()
	} else if (dir ~ /^SKIP/) {
		sub(/^SKIP */, "", dir)
		print "ok - " p ": " name " # SKIP " (dir != "" ? dir : "skipped by the test")
	} else {
		# XFAIL/XPASS are not used; report them plainly if they appear.
		print "ok - " p ": " name (dir != "" ? " # " dir : "")
	}
	diag = ""
	next
}
/^# / { diag = diag $0 "\n"; next }
{ diag = diag "# " $0 "\n" }
END {
	if (plan == 0 && seen == 0) {
		print "not ok - " p ": harness (no TAP output, exit status " status ")"
		flush_diag()
		exit 1
	}
	if (seen < plan) {
		print "not ok - " p ": harness (" seen " of " plan " tests reported, exit status " status ")"
		flush_diag()
		exit 1
	}
	exit failed ? 1 : 0
}' "$LOG"
rc=$?
# The harness exits non-zero when a test failed; awk already said which.
[ $rc -ne 0 ] || [ $status -eq 0 ] || {
	echo "not ok - $PREFIX: harness exit status $status"
	rc=1
}
sort -rn "$LOG.times" | head -n 5 | sed 's/^\([0-9]*\) \(not \)\?ok [0-9]* \([^ ]*\).*/# slow: \3 \1s/'
exit $rc
