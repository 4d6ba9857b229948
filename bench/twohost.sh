#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make bench's two-guest section (the host side; scripts/bench.sh runs it
# after the one-guest boot): urdma<->urdma, rxe<->rxe and urdma<->rxe
# between two guests of scripts/urdma-2host (one vCPU each, a QEMU socket
# network), and the same two guests' TCP and UDP (qperf), through
# tests/twohost/t_suite.sh's tests in each pair's boot.
#
#   bench/twohost.sh OUT.jsonl
#
# Appends one JSON object per figure to OUT.jsonl, path "2host": dev is the
# pair (SERVER-CLIENT) for perftest (write_bw of 64 KiB, write_lat and
# send_lat of 2 B, rate: ib_write_bw -s 64 -q 4), or tcp / udp for qperf
# (test stream or pingpong), measured in the urdma-urdma boot.  Environment:
# URDMA_BENCH_QUICK=1: the urdma-urdma pair only, fewer iterations.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
# shellcheck source=tests/guest/lib.sh source-path=SCRIPTDIR/..
. "$TOP/tests/guest/lib.sh"	# qperf_val
OUT=${1:?usage: twohost.sh OUT.jsonl}
QUICK=${URDMA_BENCH_QUICK:-0}
PAIRS=(urdma-urdma rxe-rxe urdma-rxe)
# Between two TCG guests a round trip takes about 1 ms (docs/performance.md).
BW_ITERS=2000 LAT_ITERS=1000 RATE_ITERS=5000
if [ "$QUICK" = 1 ]; then
	PAIRS=(urdma-urdma)
	BW_ITERS=200 LAT_ITERS=100 RATE_ITERS=500
fi
FAILS=0

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
emit() { echo "$1" >>"$OUT"; }

# perftest_row LOG SIZE: the client's result row of a perftest log.
perftest_row() {
	grep -E "^[[:space:]]*$2[[:space:]]+[0-9]+[[:space:]]+[0-9]" "$1" 2>/dev/null | tail -n 1
}

# collect PAIR DIR: the figures of one pair's boot, from its client's logs.
collect() {
	local pair=$1 dir=$2/twohost-${1#*-}-client row name test v
	for name in ib_write_bw ib_write_lat ib_send_lat "ib_write_bw -s 64 -q 4"; do
		case $name in
		ib_write_bw) test=write_bw size=65536 ;;
		ib_write_lat) test=write_lat size=2 ;;
		ib_send_lat) test=send_lat size=2 ;;
		*) test=rate size=64 ;;
		esac
		row=$(perftest_row "$dir/$name" "$size")
		if [ -z "$row" ]; then
			say "2host $pair: no result for $name (build/bench/2host/$pair)"
			FAILS=$((FAILS + 1))
			continue
		fi
		# shellcheck disable=SC2086
		set -- $row
		case $test in
		*_lat) emit "{\"dev\":\"$pair\",\"path\":\"2host\",\"test\":\"$test\",\"size\":$size,\"usec\":$5,\"usec_avg\":$6}" ;;
		rate) emit "{\"dev\":\"$pair\",\"path\":\"2host\",\"test\":\"rate\",\"size\":64,\"qps\":4,\"mpps\":$5}" ;;
		*) emit "{\"dev\":\"$pair\",\"path\":\"2host\",\"test\":\"$test\",\"size\":$size,\"mibps\":$4}" ;;
		esac
		say "2host $pair $test: $(tail -n 1 "$OUT")"
	done
	[ "$pair" = urdma-urdma ] || return
	for test in tcp_bw tcp_lat udp_lat; do
		if ! v=$(qperf_val "$(<"$dir/qperf tcp")" $test); then
			say "2host: no result for qperf $test"
			FAILS=$((FAILS + 1))
		elif [ $test = tcp_bw ]; then
			emit "{\"dev\":\"tcp\",\"path\":\"2host\",\"test\":\"stream\",\"size\":65536,\"mbps\":$v}"
		else
			emit "{\"dev\":\"${test%_lat}\",\"path\":\"2host\",\"test\":\"pingpong\",\"size\":2,\"usec\":$v}"
		fi
	done
}

for pair in "${PAIRS[@]}"; do
	srv=${pair%-*} cli=${pair#*-} dir=$TOP/build/bench/2host/$pair
	tests="write_bw write_lat send_lat rate"
	[ "$pair" = urdma-urdma ] && tests+=" tcp"
	rm -rf "$dir"
	mkdir -p "$dir"
	say "== two guests: $pair ($tests)"
	env="URDMA_TWOHOST_ITERS=$BW_ITERS URDMA_TWOHOST_LAT_ITERS=$LAT_ITERS"
	env+=" URDMA_TWOHOST_RATE_ITERS=$RATE_ITERS URDMA_TWOHOST_LAT_SIZE=2"
	"$TOP/scripts/urdma-2host" --timeout 900 \
		--vm-arg --env --vm-arg URDMA_RESULTS="$dir" \
		--vm-arg --env --vm-arg URDMA_TWOHOST_PAIR="$pair" \
		-- "$env URDMA_TWOHOST_PEER_KIND=$cli tests/twohost/t_suite.sh $srv $tests" \
		-- "$env URDMA_TWOHOST_PEER_KIND=$srv tests/twohost/t_suite.sh $cli $tests" \
		>"$dir/run.log" 2>&1 || {
		say "2host $pair: the run failed (build/bench/2host/$pair/run.log)"
		FAILS=$((FAILS + 1))
	}
	collect "$pair" "$dir"
done
say "two guests: $FAILS failed"
[ "$FAILS" = 0 ]
