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
RESULTS=${URDMA_RESULTS:-/tmp}/twohost-fault-$ROLE
mkdir -p "$RESULTS"
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=(netem slowlink linkdown)

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
COUNTERS=(retries seq_naks_rcvd timeouts read_gaps seq_naks_sent dup_reqs tx_errs rx_drops tx_pkts rx_pkts)
counters() {
	local c
	for c in "${COUNTERS[@]}"; do printf '%s=%s ' "$c" "$(counter "$c")"; done
}

# netem_off: print the netem qdisc's statistics, then remove it.
netem_off() {
	tc -s qdisc show dev "$NIC" | sed 's/^/# /'
	check "netem removed" tc qdisc del dev "$NIC" root
}

# xfer NAME PORT OKRE SERVER_ARGS -- CLIENT_ARGS: this side of one transfer.
# The client retries for up to 90 s while the server does not listen yet
# (rejected before it connected).
xfer() {
	local name=$1 port=$2 okre=$3 log=$RESULTS/$1 rc=0 t=90 srv=() cli=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	if [ "$ROLE" = server ]; then
		timeout -k 5 900 "$XFER" -s -a "$MYIP" -p "$port" "${srv[@]}" >"$log" 2>&1 || rc=$?
	else
		while :; do
			rc=0
			timeout -k 5 900 "$XFER" -a "$PEER" -p "$port" "${cli[@]}" >"$log" 2>&1 || rc=$?
			[ "$rc" = 0 ] || [ $t -le 0 ] && break
			grep -q 'connected' "$log" && break
			grep -qE 'REJECTED|UNREACHABLE|ADDR_ERROR|ROUTE_ERROR' "$log" || break
			sleep 2
			t=$((t - 2))
		done
	fi
	if [ "$rc" = 0 ] && grep -qE "$okre" "$log"; then
		tap_ok "$name"
		sed 's/^/# /' "$log"
		return 0
	fi
	tap_fail "$name" "exit $rc" "$(tail -n 20 "$log")"
	return 1
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
	*)
		tap_fail "unknown test $t"
		;;
	esac
done
tap_done
