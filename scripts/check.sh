#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# make check: run every test lane, print a summary table, and end with the
# line "N passed, N failed" counting every test of every lane.
#
#   scripts/check.sh [LANE...]     default: all lanes, in this order
#
# Lanes: build dkms provider deb kunit guest-6.12 guest-6.1 guest-debug fuzz
#        twohost bench
# Each lane writes TAP to build/check/LANE.tap and its log to LANE.log.
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=$TOP/build/check
ALL_LANES=(build dkms provider deb kunit guest-6.12 guest-6.1 guest-debug fuzz
	twohost bench)
LANES=("${@:-${ALL_LANES[@]}}")
VM=$TOP/scripts/urdma-vm
mkdir -p "$OUT"
cd "$TOP" || exit 1

say() { printf '[check %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# tap_keep: from a guest's output, the TAP lines, the "# --- X took"
# timings and the diagnostic lines ("# ...") that follow a "not ok".
tap_keep() {
	awk '/^(not )?ok / { print; d = /^not ok/; next }
		/^# --- .* took / { print; next }
		d && /^#/ { print; next }
		{ d = 0 }'
}

kver_612() { basename "$(ls -d /lib/modules/6.12.*-amd64 | sort | tail -1)"; }
kver_61() { basename "$(ls -d /lib/modules/6.1.*-amd64 | sort | tail -1)"; }

# tap_cmd NAME CMD...: run CMD, print one TAP line, log its output.
tap_cmd() {
	local name=$1
	shift
	if "$@" >>"$LOG" 2>&1; then
		echo "ok - $name"
	else
		echo "not ok - $name (see $LOG)"
	fi
}

# A build is warning-free if it succeeds and says "warning:" nowhere.
build_clean() {
	local kver=$1 out
	out=$(make -s modules KVER="$kver" 2>&1)
	local rc=$?
	echo "$out"
	[ $rc -eq 0 ] && ! grep -q 'warning:' <<<"$out"
}

sparse_clean() {
	local out
	out=$(make -s sparse KVER="$(kver_612)" 2>&1)
	local rc=$?
	echo "$out"
	[ $rc -eq 0 ] && ! grep -Eq 'warning:|error:' <<<"$out"
}

lane_build() {
	tap_cmd "urdma.ko builds warning-free for $(kver_612)" build_clean "$(kver_612)"
	tap_cmd "urdma.ko builds warning-free for $(kver_61)" build_clean "$(kver_61)"
	tap_cmd "sparse (C=2) is clean on $(kver_612)" sparse_clean
	"$TOP/scripts/checkpatch.sh"
	# docs/architecture.md's limits: file and function sizes, opcode switches
	python3 "$TOP/scripts/arch-limits.py" "$TOP"
}

dkms_build() {
	local kver=$1 tmp
	tmp=$(mktemp -d)
	mkdir -p "$tmp/src" "$tmp/tree"
	git -C "$TOP" ls-files -co --exclude-standard | \
		rsync -a --files-from=- "$TOP/" "$tmp/src/urdma-0.1/"
	dkms add -m urdma -v 0.1 --sourcetree "$tmp/src" --dkmstree "$tmp/tree" &&
	dkms build -m urdma -v 0.1 -k "$kver" --sourcetree "$tmp/src" \
		--dkmstree "$tmp/tree" &&
	find "$tmp/tree" -name 'urdma.ko*' | grep -q .
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

lane_dkms() {
	tap_cmd "dkms builds urdma for $(kver_612)" dkms_build "$(kver_612)"
	tap_cmd "dkms builds urdma for $(kver_61)" dkms_build "$(kver_61)"
}

lane_provider() {
	tap_cmd "rdma-core 56.1 builds with liburdma" "$TOP/scripts/rdma-core.sh" build
	local stage
	stage=$("$TOP/scripts/rdma-core.sh" dir)/stage
	tap_cmd "liburdma is staged" test -f \
		"$stage/usr/lib/x86_64-linux-gnu/libibverbs/liburdma-rdmav34.so"
	tap_cmd "urdma.driver is staged" test -f "$stage/etc/libibverbs.d/urdma.driver"
	tap_cmd "C++ tests build" "$TOP/scripts/build-tests.sh"
}

# make deb's packages: what they hold, then installed with dpkg -i in a
# guest with no urdma code and Debian 12's rdma-core, used, and removed
# (tests/guest/t_deb.sh).
# (Not a pipe into grep -q: dpkg-deb would die of SIGPIPE, and pipefail.)
deb_list() { DEB_LIST=$(dpkg-deb -c "$1"); }
deb_has() { deb_list "$1" && grep -q "$2" <<<"$DEB_LIST"; }
deb_lacks() { deb_list "$1" && ! grep -q "$2" <<<"$DEB_LIST"; }
lane_deb() {
	local d=$TOP/build/deb v=56.1-1~urdma1
	tap_cmd "make deb builds the packages" make -s deb
	tap_cmd "urdma-dkms holds dkms.conf and the sources" deb_has \
		"$d/urdma-dkms_0.1-1_all.deb" './usr/src/urdma-0.1/kernel/engine.c'
	tap_cmd "ibverbs-provider-urdma holds liburdma" deb_has \
		"$d/ibverbs-provider-urdma_${v}_amd64.deb" 'libibverbs/liburdma-rdmav34.so'
	tap_cmd "ibverbs-providers does not (no file conflict)" deb_lacks \
		"$d/ibverbs-providers_${v}_amd64.deb" 'liburdma'
	tap_cmd "librdmacm1 keeps its bookworm name" test -f "$d/librdmacm1_${v}_amd64.deb"
	tap_cmd "modules build for debian-6.12" make -s modules KVER="$(kver_612)"
	"$VM" --no-install --timeout 1500 -- "$TOP/tests/guest/t_deb.sh" "$d" \
		2>>"$LOG" | tee -a "$LOG" | tap_keep
	local rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && echo "ok - deb guest exits cleanly (no oops, WARN, KASAN or lockdep report)" ||
		echo "not ok - deb guest exits cleanly (exit $rc; see $LOG)"
}

lane_kunit() {
	local ddir ktap="$OUT/kunit.ktap"
	tap_cmd "debug kernel builds" "$TOP/scripts/build-debug-kernel.sh"
	tap_cmd "urdma builds for the debug kernel" make -s modules KVER=debug
	ddir=$("$TOP/scripts/build-debug-kernel.sh" --print-dir)
	rm -f "$ktap"
	tap_cmd "KUnit guest runs" "$VM" --kernel debug --bare -- \
		"$TOP/tests/kunit/run-in-guest.sh" "$ktap"
	if [ ! -s "$ktap" ]; then
		echo "not ok - KUnit produced no KTAP"
		return
	fi
	python3 "$ddir/src/tools/testing/kunit/kunit.py" parse "$ktap" \
		>"$OUT/kunit.parsed" 2>&1
	python3 "$TOP/tests/kunit/parsed2tap.py" <"$OUT/kunit.parsed"
}

# need_tests: a lane run alone (LANES=guest-6.12, LANES=twohost) still
# needs the C++ tests the provider lane builds; a full run has them.
need_tests() {
	[ -x "$TOP/build/tests/urdma_verbs_test" ] &&
		[ -x "$TOP/build/tests/urdma_xfer" ] && return 0
	{ "$TOP/scripts/rdma-core.sh" build &&
		"$TOP/scripts/build-tests.sh"; } >>"$LOG" 2>&1 ||
		echo "not ok - the C++ tests build for a lane run alone (see $LOG)"
}

lane_guest() {
	local kernel=$1
	tap_cmd "modules build for $kernel" make -s modules \
		KVER="$(case $kernel in debian-6.12) kver_612;; debian-6.1) kver_61;; debug) echo debug;; esac)"
	# The KASAN/lockdep kernel under TCG is several times slower.
	local timeout=2400
	[ "$kernel" = debug ] && timeout=4800
	need_tests
	"$VM" --kernel "$kernel" --timeout "$timeout" -- "$TOP/tests/guest/run.sh" \
		2>>"$LOG" | tee -a "$LOG" | tap_keep
	local rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && echo "ok - guest on $kernel exits cleanly (no oops, WARN, KASAN or lockdep report)" ||
		echo "not ok - guest on $kernel exits cleanly (exit $rc; see $LOG)"
}

# The long fuzzers under KASAN, lockdep and kmemleak, one guest boot: live
# rings, uverbs commands and RoCEv2 packets, FUZZ_SECONDS each, beside
# ordinary traffic (tests/guest/t_fuzz.sh).  make soak runs it for longer.
FUZZ_SECONDS=${URDMA_FUZZ_LANE_SECONDS:-40}
lane_fuzz() {
	tap_cmd "modules build for debug" make -s modules KVER=debug
	"$VM" --kernel debug --timeout $((FUZZ_SECONDS * 6 + 900)) \
		--env URDMA_FUZZ_LANE_SECONDS="$FUZZ_SECONDS" -- \
		"$TOP/tests/guest/run.sh" fuzz 2>>"$LOG" | tee -a "$LOG" | tap_keep
	local rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && echo "ok - fuzz guest exits cleanly (no oops, WARN, KASAN, lockdep or kmemleak report)" ||
		echo "not ok - fuzz guest exits cleanly (exit $rc; see $LOG)"
}

# Two guests on a Unix-socket network (scripts/urdma-2host), Debian 6.12: urdma
# against rxe in both directions, and urdma against urdma.
# twohost_tests SERVER-CLIENT: the tests tests/twohost/tests.list runs in
# that pair, in order.
twohost_tests() {
	awk -v pair="$1" '!/^#/ { for (i = 2; i <= NF; i++)
		if ($i == pair) { printf "%s ", $1; break } }' \
		"$TOP/tests/twohost/tests.list"
}
# twohost_run NAME SERVER_CMD CLIENT_CMD [URDMA_2HOST_OPTION...]: one
# urdma-2host run; its TAP.
twohost_run() {
	local name=$1 srv=$2 cli=$3
	shift 3
	"$TOP/scripts/urdma-2host" --timeout 900 "$@" \
		--vm-arg --env --vm-arg URDMA_TWOHOST_ITERS=20 \
		--vm-arg --env --vm-arg URDMA_TWOHOST_PAIR="$name" \
		-- "$srv" -- "$cli" 2>>"$LOG" | tee -a "$LOG" |
		sed -n 's/^\[[AB]\] //p' | tap_keep
	local rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && echo "ok - twohost $name: both guests exit cleanly" ||
		echo "not ok - twohost $name: both guests exit cleanly (exit $rc; see $LOG)"
}
twohost_pair() {
	twohost_run "$1-$2" \
		"URDMA_TWOHOST_PEER_KIND=$2 tests/twohost/t_suite.sh $1 $3" \
		"URDMA_TWOHOST_PEER_KIND=$1 tests/twohost/t_suite.sh $2 $3"
}

lane_twohost() {
	tap_cmd "modules build for debian-6.12" make -s modules KVER="$(kver_612)"
	need_tests
	twohost_pair urdma rxe "$(twohost_tests urdma-rxe)"
	twohost_pair rxe urdma "$(twohost_tests rxe-urdma)"
	twohost_pair urdma urdma "$(twohost_tests urdma-urdma)"
	# netem (256 MiB byte-exact through loss, reordering, duplication),
	# a 2 Mbit/s link (READs slower than the ACK timeout), a pulled link,
	# 5% loss, goodput with and without 1% loss, 8 QPs sharing a
	# 50 Mbit/s bottleneck; urdma on both sides.
	local fault="URDMA_FAULT_BYTES=268435456 URDMA_LOSS5_BYTES=33554432"
	fault+=" URDMA_GOODPUT_SECS=10 URDMA_FAIR_SECS=20 tests/twohost/t_fault.sh"
	twohost_run fault "$fault" "$fault"
	# The debug kernel (KASAN, lockdep, kmemleak; about 4x slower), urdma
	# on both sides: SMB Direct (only that kernel is built with it) and the
	# netem run with 32 MiB.  A splat on either console fails the run.
	tap_cmd "debug kernel builds" "$TOP/scripts/build-debug-kernel.sh"
	tap_cmd "modules build for the debug kernel" make -s modules KVER=debug
	local dbg="tests/twohost/t_suite.sh urdma smb; r=\$?;"
	dbg+=" URDMA_FAULT_BYTES=33554432 tests/twohost/t_fault.sh netem && exit \$r"
	twohost_run debug "$dbg" "$dbg" --kernel debug
}

# make bench's smoke run: that it runs and writes every file, not its
# numbers (no timed assertions in tests).
lane_bench() {
	local out=$OUT/bench rc=0 f
	rm -rf "$out"
	need_tests
	"$TOP/scripts/bench.sh" --quick --out "$out" >>"$LOG" 2>&1 || rc=$?
	[ $rc -eq 0 ] && echo "ok - bench: the smoke run measured every run of its matrix" ||
		echo "not ok - bench: the smoke run failed (exit $rc; see $LOG)"
	for f in README.md results.json bw.png lat.png wire.png; do
		[ -s "$out/$f" ] && echo "ok - bench: wrote $f" ||
			echo "not ok - bench: no $f in $out"
	done
	/usr/bin/python3 "$TOP/bench/report.py" --check "$out/results.json" ||
		echo "not ok - bench: results.json unreadable"
	grep -q '^| 64 KiB ib_write_bw vs rxe |' "$out/README.md" 2>/dev/null &&
		echo "ok - bench: README.md has the targets table" ||
		echo "not ok - bench: README.md has no targets table"
}

run_lane() {
	case $1 in
	build) lane_build ;;
	dkms) lane_dkms ;;
	provider) lane_provider ;;
	deb) lane_deb ;;
	kunit) lane_kunit ;;
	guest-6.12) lane_guest debian-6.12 ;;
	guest-6.1) lane_guest debian-6.1 ;;
	guest-debug) lane_guest debug ;;
	fuzz) lane_fuzz ;;
	twohost) lane_twohost ;;
	bench) lane_bench ;;
	*) echo "not ok - unknown lane $1" ;;
	esac
}

say "installing missing packages"
"$TOP/scripts/deps.sh" || { echo "0 passed, 1 failed"; exit 1; }

declare -A PASS FAIL SKIP SECS
for lane in "${LANES[@]}"; do
	LOG=$OUT/$lane.log
	: >"$LOG"
	say "lane $lane: start"
	start=$(date +%s)
	run_lane "$lane" | tee "$OUT/$lane.tap" | sed "s/^/  /"
	SECS[$lane]=$(( $(date +%s) - start ))
	# A skipped test ("ok ... # SKIP") is counted as skipped, not passed.
	SKIP[$lane]=$(grep -c '^ok .*# SKIP' "$OUT/$lane.tap")
	PASS[$lane]=$(( $(grep -c '^ok ' "$OUT/$lane.tap") - SKIP[$lane] ))
	FAIL[$lane]=$(grep -c '^not ok ' "$OUT/$lane.tap")
	if [ $((PASS[$lane] + SKIP[$lane] + FAIL[$lane])) -eq 0 ]; then
		FAIL[$lane]=1
		echo "not ok - lane $lane ran no test" >>"$OUT/$lane.tap"
	fi
	say "lane $lane: ${PASS[$lane]} passed, ${FAIL[$lane]} failed, ${SKIP[$lane]} skipped in ${SECS[$lane]}s"
done

tp=0 tf=0 ts=0
echo
printf '%-14s %7s %7s %7s %8s\n' lane passed failed skipped seconds
for lane in "${LANES[@]}"; do
	printf '%-14s %7d %7d %7d %8d\n' "$lane" "${PASS[$lane]}" \
		"${FAIL[$lane]}" "${SKIP[$lane]}" "${SECS[$lane]}"
	tp=$((tp + PASS[$lane])); tf=$((tf + FAIL[$lane]))
	ts=$((ts + SKIP[$lane]))
done
echo
if [ $tf -ne 0 ]; then
	for lane in "${LANES[@]}"; do
		# Each failure with its first diagnostic lines: CI shows the
		# head and tail of the output, and this tail must say why.
		awk '/^not ok/ { print "FAILED: " $0; n = 25; next }
			/^#/ && n > 0 { print "FAILED:   " $0; n--; next }
			{ n = 0 }' "$OUT/$lane.tap"
	done
fi
echo "$tp passed, $tf failed, $ts skipped"
[ $tf -eq 0 ]
