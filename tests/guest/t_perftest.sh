#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# perftest (Debian 12's package, on the rdma-core 56.1 userland) over $DEV:
# the bandwidth and latency tests of WRITE, READ, SEND and atomics, RC,
# connected over TCP (no -R: rdma_cm is not needed), server and client in
# this guest on $DEV with its IPv4 RoCE v2 GID; then the same with -R
# (rdma_cm).  Short fixed-iteration runs
# (-n; -D reports 0 iterations under TCG).  A test passes when both sides
# exit 0 and the client printed the result row for the size and iteration
# count asked for.  Works for any RoCE device (URDMA_DEV=rxe0 for rxe).
# URDMA_PERF_ITERS sets the iteration count (-n, default 200).
. "$(dirname "$0")/lib.sh"
RESULTS=${URDMA_RESULTS:-/tmp}/perftest
mkdir -p "$RESULTS"
ITERS=${URDMA_PERF_ITERS:-200}
PORT=18700

if ! wait_gid_v4 "$DEV"; then
	tap_fail "$DEV has an IPv4 RoCE v2 GID"
	tap_done
fi
tap_ok "$DEV has an IPv4 RoCE v2 GID (index $GIDIDX)"

# perf TOOL SIZE ARGS...: SIZE is what the result row shows (atomics: 8).
perf() {
	local tool=$1 size=$2 name log row
	shift 2
	name="$tool -s $size${*:+ $*}"
	[[ $tool == ib_atomic_* ]] && name="$tool${*:+ $*}"
	log=$RESULTS/$tool-$size
	local args try
	for try in 1 2 3 4 5; do
		PORT=$((PORT + 1))
		args=(-d "$DEV" -x "$GIDIDX" -p "$PORT" -n "$ITERS" -F "$@")
		[[ $tool == ib_atomic_* ]] || args+=(-s "$size")
		run_pair "$log" "$PORT" "${TMO[@]}" "$tool" "${args[@]}"
		perftest_lost_race "$log.client" || break
		echo "# $name, try $try: perftest's own race (see perftest_lost_race); again"
	done
	# The figures are not judged here; under TCG perftest's cycle
	# calibration sometimes yields "inf" latencies for a run that worked.
	row=$(grep -E "^[[:space:]]*${size}[[:space:]]+${ITERS}[[:space:]]+([0-9]|inf|-?nan)" "$log.client")
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] && [ -n "$row" ]; then
		tap_ok "$name"
		echo "# $(grep -m1 -E '^[[:space:]]*#bytes' "$log.client" | tr -s ' ')"
		echo "# $(tr -s ' ' <<<"$row")"
	else
		tap_fail "$name" "command: $tool ${args[*]} [127.0.0.1]" "$(pair_diag "$log")"
	fi
}

# Bandwidth: 65536-byte messages span 16 pages and 64 packets at MTU 1024.
# perftest turns inline data off for devices it does not know (rxe, urdma;
# -I is ignored), and on rxe it reports "ibv_wr* API: OFF": ibv_post_send.
perf ib_write_bw 65536
perf ib_read_bw 65536
perf ib_send_bw 65536
perf ib_atomic_bw 8
perf ib_write_lat 64
perf ib_send_lat 64
perf ib_read_lat 64
perf ib_atomic_lat 8
# -R: rdma_cm connects the QPs (QP1 carries the CM MADs), to the netdev's
# address: the client must name an address of a RoCE device.
PAIR_CM=1
PAIR_ADDR=$(ip -4 -o addr show dev "$NETDEV" | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
perf ib_write_bw 65536 -R
perf ib_send_lat 64 -R
# The debug kernel (KASAN under TCG) runs two of the -R tests, for time.
if [ "${URDMA_KERNEL:-}" != debug ]; then
	perf ib_read_bw 65536 -R
	perf ib_send_bw 65536 -R
	perf ib_atomic_bw 8 -R
	perf ib_write_lat 64 -R
	perf ib_read_lat 64 -R
	perf ib_atomic_lat 8 -R
fi
tap_done
