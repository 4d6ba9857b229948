#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make check's fuzz lane (on the KASAN/lockdep/kmemleak kernel): for
# URDMA_FUZZ_LANE_SECONDS each (default 40; make soak: 900), while ordinary traffic runs on
# urdma0 beside them,
#   - random and garbage WQEs in live rings (selftests q.fuzz_rings),
#   - random uverbs commands (selftests dev.fuzz),
#   - random RoCEv2 packets with correct ICRCs at live QPs (wirefuzz.py);
# then the traffic must never have failed, and the device must still work.
# The harness fails the run on any oops, WARN, KASAN or lockdep report.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
SECS=${URDMA_FUZZ_LANE_SECONDS:-40}
RESULTS=${URDMA_RESULTS:-/tmp}
LOG=$RESULTS/fuzz
mkdir -p "$LOG"

if [ "$NETDEV" != veth0 ] || ! wait_gid_v4 "$DEV"; then
	tap_fail "fuzz: urdma0 on veth0 with an IPv4 RoCE v2 GID"
	tap_done
fi

# Pages pinned with FOLL_PIN (ib_umem_get) and not yet released.
pins() {
	awk '$1 == "nr_foll_pin_acquired" { a = $2 }
	     $1 == "nr_foll_pin_released" { r = $2 }
	     END { print a - r }' /proc/vmstat
}
PINS0=$(pins)
pins_back() { [ "$(pins)" -le "$PINS0" ]; }

# Ordinary traffic on urdma0 (local path), over and over, until told to stop.
STOP=$LOG/stop
traffic() {
	local n=0 bad=0 port=18600 out
	# -F: the guest's CPU busy with the fuzzers, perftest's calibration
	# of its cycle counter can miss its r^2 >= 0.9, and without -F it then
	# exits 1 after a transfer that worked ("Can't produce a report").
	while [ ! -e "$STOP" ]; do
		PAIR_ADDR=10.77.0.1 run_pair "$LOG/traffic" $port \
			"${TMO[@]}" ib_write_bw -d "$DEV" -x "$GIDIDX" -p $port \
			-s 4096 -n 2000 -F
		n=$((n + 1))
		if [ "$PAIR_SRC" != 0 ] || [ "$PAIR_CRC" != 0 ]; then
			bad=$((bad + 1))
			# perftest's error lines go to stderr, unbuffered,
			# so they sit at the top of the logs: keep them whole.
			out=$(grep -Hv '^ ' "$LOG/traffic.client" \
				"$LOG/traffic.server" | head -n 20
			      dmesg | tail -n 10
			      pair_diag "$LOG/traffic")
			printf '%s\n' "$out" >"$LOG/traffic.failed.$bad"
			cp "$LOG/traffic.client" "$LOG/traffic-log.$bad.client"
			cp "$LOG/traffic.server" "$LOG/traffic-log.$bad.server"
		fi
	done
	echo "$n $bad" >"$LOG/traffic.count"
}
rm -f "$STOP" "$LOG/traffic.count"
traffic &
tpid=$!

say_took() { echo "# $1 took $(( $(date +%s) - $2 ))s"; }

t0=$(date +%s)
URDMA_ABI_SHARED=1 URDMA_RING_FUZZ_SECONDS=$SECS TAP_PREFIX=fuzz URDMA_RESULTS=$LOG/rings \
	"$TOP/tests/selftests/run.sh" -r q.fuzz_rings || TAP_FAILED=1
grep -ho 'URDMA_FUZZ_SEED=.*\|[0-9]* steps, .*' "$LOG/rings/abi.log" |
	sed 's/^/# live rings: /'
say_took "live rings" "$t0"

t0=$(date +%s)
URDMA_ABI_SHARED=1 URDMA_FUZZ_SECONDS=$SECS TAP_PREFIX=fuzz URDMA_RESULTS=$LOG/uverbs \
	"$TOP/tests/selftests/run.sh" -r dev.fuzz || TAP_FAILED=1
say_took "uverbs commands" "$t0"

t0=$(date +%s)
ip neigh replace 10.77.0.99 lladdr 02:00:00:00:00:99 dev veth0 nud permanent
out=$(timeout -k 5 $((SECS * 3 + 300)) python3 "$HERE/wirefuzz.py" \
	"$GIDIDX" "$SECS" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -E '^(ok|not ok|#) ' | sed 's/ - wirefuzz: / - fuzz: packets: /'
if ! grep -qE '^(ok|not ok) ' <<<"$out" || [ $rc -ne 0 ]; then
	tap_fail "random RoCEv2 packets: wirefuzz.py exits 0" "exit $rc" \
		"$(tail -n 20 <<<"$out")"
fi
say_took "packets" "$t0"

touch "$STOP"
wait $tpid
read -r runs bad <"$LOG/traffic.count"
if [ "${runs:-0}" -gt 0 ] && [ "${bad:-1}" = 0 ]; then
	tap_ok "$runs ib_write_bw runs beside the fuzzers all passed"
else
	tap_fail "ib_write_bw runs beside the fuzzers all passed" \
		"${runs:-0} runs, ${bad:-?} failed" \
		"$(cat "$LOG"/traffic.failed.* 2>/dev/null | head -n 40)"
fi

# The device still works afterwards.
PAIR_ADDR=10.77.0.1 run_pair "$LOG/after" 18650 "${TMO[@]}" \
	ibv_rc_pingpong -d "$DEV" -g "$GIDIDX" -p 18650 -n 200 -c
if pingpong_ok "$LOG/after"; then
	tap_ok "urdma0 still moves data after the fuzzers"
else
	tap_fail "urdma0 still moves data after the fuzzers" \
		"$(pair_diag "$LOG/after")"
fi

# Every process is gone: nothing they pinned is still pinned (released
# files may take a moment), and kmemleak finds nothing (it reports an
# object once two scans in a row saw it unreferenced).
wait_for 20 pins_back
pins1=$(pins)
if [ "$pins1" -le "$PINS0" ]; then
	tap_ok "no page the fuzzers' processes pinned is still pinned"
else
	tap_fail "no page the fuzzers' processes pinned is still pinned" \
		"$((pins1 - PINS0)) pages more than before"
fi
KMEMLEAK=/sys/kernel/debug/kmemleak
if [ -w $KMEMLEAK ]; then
	echo scan >$KMEMLEAK
	sleep 1
	echo scan >$KMEMLEAK
	leaks=$(cat $KMEMLEAK)
	if [ -z "$leaks" ]; then
		tap_ok "kmemleak is clean after the fuzzers"
	else
		tap_fail "kmemleak is clean after the fuzzers" "$leaks"
	fi
else
	tap_skip "kmemleak is clean after the fuzzers" "kernel has no kmemleak"
fi
tap_done
