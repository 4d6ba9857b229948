#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two-host fault tests, urdma0 on both sides (scripts/urdma-2host runs this
# script in both guests; they walk the tests in step, as t_suite.sh does):
#   netem     netem on both ends of the link: 1 ms delay, 1% loss, 1%
#             reordering, 1% duplication.  urdma_xfer moves URDMA_FAULT_BYTES
#             (default 1 GiB) in WRITE, READ and SEND, every byte checked;
#             the requester's retry counters must show that recovery ran.
#   slowlink  the server's side of the link sends at 2 Mbit/s (netem rate):
#             a 64 KiB READ's 16 responses take about 270 ms, four times
#             the ACK timeout (timeout 14: 67 ms), but one comes every
#             17 ms.  Each READ response the requester takes restarts its
#             timer, so 4 rounds move byte-exact.  (When only an ACK
#             restarted it, the READ failed RETRY_EXC_ERR.)
#   linkdown  the client pulls its link mid-transfer: its QP must fail with
#             RETRY_EXC_ERR within the retry budget (urdma_xfer checks),
#             every WR completes, and after the link comes back a new QP
#             moves 16 MiB byte-exact.
#   loss5     5% loss on both ends: URDMA_LOSS5_BYTES (default 64 MiB)
#             byte-exact.
#   ecn       netem on both ends marks 5% of the ECN-capable packets CE
#             instead of dropping them (loss 5% ecn): URDMA_LOSS5_BYTES
#             byte-exact, and each side saw marks, sent CNPs and took
#             CNPs, the client's window was cut, and no responder ever
#             saw a gap (every RC packet is ECT(0), so none was lost).
#   goodput   URDMA_GOODPUT_SECS (default 15) of transfer over a 1 ms link,
#             then as long with 1% loss on both ends, byte-exact; prints
#             the ratio of the two goodputs (a measurement, not asserted:
#             docs/wire.md, "Congestion control").
#   fair      8 QPs (8 urdma_xfer pairs) share the client's side of the
#             link, a 50 Mbit/s netem bottleneck with a 64-packet queue,
#             for URDMA_FAIR_SECS (default 30), all 8 over the same
#             interval (they connect, then start together): each QP's
#             goodput within 2x of the mean, and together at least 80% of
#             the link.
# Both NICs get MTU 9000 (RoCE path MTU 4096) for the test's throughput.
#   t_fault.sh [TEST...]
# shellcheck disable=SC2034 # read by lib.sh
URDMA_DEV=urdma0
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034 # read by lib.sh
TAP_PREFIX="twohost fault: urdma ($ROLE)"
XFER=$(cd "$(dirname "$0")/../.." && pwd)/build/tests/urdma_xfer
BYTES=${URDMA_FAULT_BYTES:-1073741824}
LOSS5_BYTES=${URDMA_LOSS5_BYTES:-67108864}
GOODPUT_SECS=${URDMA_GOODPUT_SECS:-15}
FAIR_SECS=${URDMA_FAIR_SECS:-30}
FAIR_QPS=8
RESULTS=${URDMA_RESULTS:-/tmp}/twohost-fault-$ROLE
mkdir -p "$RESULTS"
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=(netem slowlink linkdown loss5 ecn goodput fair)

if [ ! -x "$XFER" ]; then
	tap_fail "urdma_xfer is built" "$XFER missing (scripts/build-tests.sh)"
	tap_done
fi
check "MTU 9000 on $NIC" ip link set dev "$NIC" mtu 9000
twohost_ready

# counter NAME: this device's counter NAME.
counter() {
	cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1" 2>/dev/null || echo 0
}
COUNTERS=(retries seq_naks_rcvd timeouts early_timeouts probes read_gaps cwnd_cuts rtt_samples rtt_us seq_naks_sent dup_reqs ecn_marked cnps_sent cnps_rcvd tx_errs rx_drops tx_pkts rx_pkts)
counters() {
	local c
	for c in "${COUNTERS[@]}"; do printf '%s=%s ' "$c" "$(counter "$c")"; done
}

# netem_off: print the netem qdisc's statistics, then remove it.
netem_off() {
	tc -s qdisc show dev "$NIC" | sed 's/^/# /'
	check "netem removed" tc qdisc del dev "$NIC" root
}

# xfer_client SECS LOG PORT ARGS...: the client's urdma_xfer (killed after
# SECS), output in LOG; it retries for up to 90 s while the server does not
# listen yet (rejected before it connected).  Returns urdma_xfer's status.
xfer_client() {
	local secs=$1 log=$2 port=$3 rc t=90
	shift 3
	while :; do
		rc=0
		timeout -k 5 "$secs" "$XFER" -a "$PEER" -p "$port" "$@" >"$log" 2>&1 || rc=$?
		[ "$rc" = 0 ] || [ $t -le 0 ] && break
		grep -q 'connected' "$log" && break
		grep -qE 'REJECTED|UNREACHABLE|ADDR_ERROR|ROUTE_ERROR' "$log" || break
		sleep 2
		t=$((t - 2))
	done
	return "$rc"
}

# xfer NAME PORT OKRE SERVER_ARGS -- CLIENT_ARGS: this side of one transfer.
xfer() {
	local name=$1 port=$2 okre=$3 log=$RESULTS/$1 rc=0 srv=() cli=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	if [ "$ROLE" = server ]; then
		timeout -k 5 900 "$XFER" -s -a "$MYIP" -p "$port" "${srv[@]}" >"$log" 2>&1 || rc=$?
	else
		xfer_client 900 "$log" "$port" "${cli[@]}" || rc=$?
	fi
	if [ "$rc" = 0 ] && grep -qE "$okre" "$log"; then
		tap_ok "$name"
		sed 's/^/# /' "$log"
		return 0
	fi
	tap_fail "$name" "exit $rc" "$(tail -n 20 "$log")"
	return 1
}

# rate_of LOG: the MB/s a client's urdma_xfer reported (WRITE, READ and
# SEND bytes over its time).
rate_of() {
	sed -n 's/.*every byte checked, in .* s (\([0-9.]*\) MB\/s)$/\1/p' "$1" | tail -n 1
}

# fair PORT: FAIR_QPS transfers at once through the client's bottleneck.
fair() {
	local base=$1 i rc=0 pids=() log rates=() r mb start
	if [ "$ROLE" = client ]; then
		check "netem on $NIC: rate 50mbit, a 64-packet queue" \
			tc qdisc add dev "$NIC" root netem rate 50mbit limit 64 || return
	fi
	# Time for all 8 to connect (the server listens within 90 s).
	start=$(($(date +%s) + 20))
	for ((i = 0; i < FAIR_QPS; i++)); do
		log=$RESULTS/fair.$i
		if [ "$ROLE" = server ]; then
			timeout -k 5 600 "$XFER" -s -a "$MYIP" -p $((base + i)) -t 120 \
				>"$log" 2>&1 &
		else
			xfer_client 600 "$log" $((base + i)) -d "$FAIR_SECS" \
				--start-at "$start" -t 120 --ack-timeout 16 &
		fi
		pids+=($!)
	done
	for ((i = 0; i < FAIR_QPS; i++)); do
		wait "${pids[$i]}" || rc=$?
	done
	if [ "$rc" != 0 ] || grep -L 'OK$' "$RESULTS"/fair.* | grep -q .; then
		tap_fail "fair: $FAIR_QPS QPs through a 50 Mbit/s bottleneck, byte-exact" \
			"exit $rc" "$(tail -n 5 "$RESULTS"/fair.*)"
		[ "$ROLE" = client ] && netem_off
		return
	fi
	tap_ok "fair: $FAIR_QPS QPs through a 50 Mbit/s bottleneck, byte-exact"
	[ "$ROLE" = client ] || return 0
	echo "# counters: $(counters)"
	netem_off
	mb=0
	for ((i = 0; i < FAIR_QPS; i++)); do
		r=$(rate_of "$RESULTS/fair.$i")
		rates+=("${r:-0}")
		mb=$(awk -v a="$mb" -v b="$(sed -n 's/.* rounds, \([0-9.]*\) MB moved.*/\1/p' "$RESULTS/fair.$i")" \
			'BEGIN { print a + b }')
	done
	# The bottleneck carries each round's WRITE and SEND, 2/3 of its
	# bytes; READ responses come back the other way.  50 Mbit/s is
	# 6.25 MB/s.  All 8 ran over the same FAIR_SECS (--start-at).
	echo "# fair: MB/s per QP (WRITE, READ, SEND): ${rates[*]}; $mb MB in all"
	# Together: the sum of their rates, over the same interval.
	awk -v n="$FAIR_QPS" -v r="${rates[*]}" 'BEGIN {
		split(r, a, " "); for (i = 1; i <= n; i++) sum += a[i]
		mean = sum / n; lo = a[1]; hi = a[1]
		for (i = 1; i <= n; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
		printf "# fair: mean %.2f, min %.2f, max %.2f MB/s\n", mean, lo, hi
		exit !(lo >= mean / 2 && hi <= mean * 2)
	}' && tap_ok "fair: every QP within 2x of the mean" ||
		tap_fail "fair: every QP within 2x of the mean" "rates ${rates[*]}"
	awk -v r="${rates[*]}" 'BEGIN { split(r, a, " "); for (i in a) g += a[i] * 2 / 3
		printf "# fair: bottleneck goodput %.2f MB/s of 6.25\n", g
		exit !(g >= 0.8 * 6.25) }' &&
		tap_ok "fair: together at least 80% of the 50 Mbit/s link" ||
		tap_fail "fair: together at least 80% of the 50 Mbit/s link" "rates ${rates[*]}"
}

port=19800
for t in "${TESTS[@]}"; do
	port=$((port + 1))
	case $t in
	netem)
		before_retries=$(counter retries)
		before_dups=$(counter dup_reqs)
		if ! check "netem on $NIC: delay 1ms, loss 1%, reorder 1%, duplicate 1%" \
			tc qdisc add dev "$NIC" root netem delay 1ms loss 1% reorder 1% duplicate 1%; then
			continue
		fi
		xfer "netem: $((BYTES >> 20)) MiB of WRITE, READ and SEND, byte-exact" \
			"$port" 'OK$' -c 1 -t 300 -- -b "$BYTES" -t 300
		echo "# counters: $(counters)"
		netem_off
		# Each side sends (client: requests; server: responses) through
		# its own netem, so each side's requester or responder recovered.
		if [ "$ROLE" = client ]; then
			r=$(($(counter retries) - before_retries))
			if [ "$r" -gt 0 ]; then
				tap_ok "netem: the requester went back $r times"
			else
				tap_fail "netem: the requester went back $r times" "$(counters)"
			fi
		else
			d=$(($(counter dup_reqs) - before_dups))
			if [ "$d" -gt 0 ]; then
				tap_ok "netem: the responder saw $d duplicate requests"
			else
				tap_fail "netem: the responder saw $d duplicate requests" "$(counters)"
			fi
		fi
		;;
	slowlink)
		before_timeouts=$(counter timeouts)
		if [ "$ROLE" = server ]; then
			check "netem on $NIC: rate 2mbit" \
				tc qdisc add dev "$NIC" root netem rate 2mbit || continue
		fi
		xfer "slow link: READs slower than the ACK timeout complete, byte-exact" \
			"$port" 'OK$' -c 1 -t 120 -- -b 786432 -t 120 --ack-timeout 14
		echo "# counters: $(counters)"
		if [ "$ROLE" = server ]; then
			netem_off
		else
			# Not asserted: a stalled guest may time out once.
			echo "# slow link: the requester timed out $(($(counter timeouts) - before_timeouts)) times"
		fi
		;;
	linkdown)
		xfer "link down: the QP fails within its retry budget; a new QP works" \
			"$port" 'OK$' -c 2 -t 120 -- -b 16777216 -t 60 --ack-timeout 14 \
			--fault-after 20 --fault-cmd "ip link set dev $NIC down" \
			--recover-cmd "ip link set dev $NIC up"
		# The link must be up for whatever runs next.
		ip link set dev "$NIC" up
		;;
	loss5)
		if ! check "netem on $NIC: loss 5%" tc qdisc add dev "$NIC" root netem loss 5%; then
			continue
		fi
		xfer "loss5: $((LOSS5_BYTES >> 20)) MiB of WRITE, READ and SEND at 5% loss, byte-exact" \
			"$port" 'OK$' -c 1 -t 300 -- -b "$LOSS5_BYTES" -t 300
		echo "# counters: $(counters)"
		netem_off
		;;
	ecn)
		declare -A c0
		for c in ecn_marked cnps_sent cnps_rcvd cwnd_cuts seq_naks_sent; do
			c0[$c]=$(counter "$c")
		done
		if ! check "netem on $NIC: loss 5% ecn (CE marks for ECT packets)" \
			tc qdisc add dev "$NIC" root netem loss 5% ecn; then
			continue
		fi
		xfer "ecn: $((LOSS5_BYTES >> 20)) MiB of WRITE, READ and SEND with 5% CE marks, byte-exact" \
			"$port" 'OK$' -c 1 -t 300 -- -b "$LOSS5_BYTES" -t 300
		echo "# counters: $(counters)"
		netem_off
		declare -A d
		for c in "${!c0[@]}"; do
			d[$c]=$(($(counter "$c") - c0[$c]))
		done
		if [ "${d[ecn_marked]}" -gt 0 ] && [ "${d[cnps_sent]}" -gt 0 ] &&
		   [ "${d[cnps_rcvd]}" -gt 0 ] && [ "${d[seq_naks_sent]}" = 0 ] &&
		   { [ "$ROLE" = server ] || [ "${d[cwnd_cuts]}" -gt 0 ]; }; then
			tap_ok "ecn: marks drew CNPs both ways, cut the window, and lost nothing"
			for c in "${!d[@]}"; do printf '# %s +%s\n' "$c" "${d[$c]}"; done
		else
			tap_fail "ecn: marks drew CNPs both ways, cut the window, and lost nothing" \
				"$(for c in "${!d[@]}"; do printf '%s +%s ' "$c" "${d[$c]}"; done)"
		fi
		;;
	goodput)
		check "netem on $NIC: delay 1ms" tc qdisc add dev "$NIC" root netem delay 1ms || continue
		xfer "goodput: ${GOODPUT_SECS} s over a 1 ms link, byte-exact" \
			"$port" 'OK$' -c 1 -t 120 -- -d "$GOODPUT_SECS" -t 120
		clean=$(rate_of "$RESULTS/goodput: ${GOODPUT_SECS} s over a 1 ms link, byte-exact" 2>/dev/null)
		check "netem on $NIC: delay 1ms, loss 1%" \
			tc qdisc change dev "$NIC" root netem delay 1ms loss 1% || continue
		before_cuts=$(counter cwnd_cuts)
		xfer "goodput: ${GOODPUT_SECS} s over a 1 ms link with 1% loss, byte-exact" \
			"$((port + 100))" 'OK$' -c 1 -t 120 -- -d "$GOODPUT_SECS" -t 120
		lossy=$(rate_of "$RESULTS/goodput: ${GOODPUT_SECS} s over a 1 ms link with 1% loss, byte-exact" 2>/dev/null)
		echo "# counters: $(counters)"
		netem_off
		if [ "$ROLE" = client ] && [ -n "$clean" ] && [ -n "$lossy" ]; then
			echo "# goodput: ${clean} MB/s clean, ${lossy} MB/s at 1% loss ($(awk -v c="$clean" -v l="$lossy" \
				'BEGIN { printf "%.2f", l / c }')x); $(($(counter cwnd_cuts) - before_cuts)) window cuts"
		fi
		;;
	fair)
		fair 19900
		;;
	*)
		tap_fail "unknown test $t"
		;;
	esac
done
tap_done
