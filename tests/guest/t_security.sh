#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What another user or another host must not be able to do to urdma
# (docs/security.md), in a guest: read other processes' MR keys; disturb a
# connection with forged packets; get kernel memory onto the wire by
# changing the MTU mid-message, or a WQE's data past one that failed (its
# QP in ERROR); crash the kernel by racing device creation
# with address handles; reach another namespace's multicast QPs.  The
# verbs-level attacks are in tests/verbs/test_security.cpp, the ABI ones in
# tests/selftests.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PY=(python3 "$HERE/security.py")
RESULTS=${URDMA_RESULTS:-/tmp}
LOG=$RESULTS/security
mkdir -p "$LOG"

if ! wait_gid_v4 "$DEV"; then
	tap_fail "$DEV has an IPv4 RoCE v2 GID"
	tap_done
fi
G0=$GIDIDX

# ---- MR keys are not shown to other users ---------------------------------

# A process holds an MR (a pingpong server waiting for its client); an
# unprivileged user dumps every MR with the driver's details.  The core
# shows lkey and rkey to CAP_NET_ADMIN only; the driver must not add them.
keys_hidden() {
	local pp pid out
	pp=(timeout -k 2 20 ibv_rc_pingpong -d "$DEV" -g "$G0" -p 18700)
	"${pp[@]}" >"$LOG/keys.server" 2>&1 &
	pid=$!
	if ! wait_for 10 sh -c "rdma res show mr dev $DEV | grep -q mrn"; then
		tap_fail "an MR shows in rdma res" "$(cat "$LOG/keys.server")"
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return
	fi
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
		rdma -dd res show mr dev "$DEV" 2>&1)
	if ! grep -q mrn <<<"$out"; then
		tap_fail "an unprivileged user sees the MRs (without keys)" "$out"
	elif grep -Eq '(^| )[a-z_]*key ' <<<"$out"; then
		tap_fail "an unprivileged 'rdma -dd res show mr' shows no key" \
			"$out"
	else
		tap_ok "an unprivileged 'rdma -dd res show mr' shows no key"
	fi
	out=$(rdma -dd res show mr dev "$DEV" 2>&1)
	if grep -q 'rkey ' <<<"$out"; then
		tap_ok "root still sees the keys (from the core)"
	else
		tap_fail "root still sees the keys (from the core)" "$out"
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# ---- two urdma devices on a veth pair across namespaces (wire_up) ---------

counter() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"; }

# Forged NAKs at a connection while it transfers (ib_write_bw, urdma_w0 to
# urdma_w1): from a stranger's address, and with stale PSNs from the peer's.
# Neither may end the transfer.
forged_naks() {
	local cpid spid ipid rc_s rc_c drops0 drops1 iters=20000 size=16384
	if ! wire_up; then
		tap_fail "forged NAKs: the wire pair comes up"
		return
	fi
	# The debug kernel moves about 1.5 MB/s over the wire: 20 s of it.
	[ "${URDMA_KERNEL:-}" = debug ] && iters=2000
	drops0=$(counter urdma_w0 rx_drops)
	# The injector first: it waits for the connection (Python is slow to
	# start on the debug kernel), then forges at once.
	ip netns exec wire "${PY[@]}" spoof --dev urdma_w0 --tx-if veth5 \
		--dst-mac "$(cat /sys/class/net/veth4/address)" \
		--dst-ip 10.79.0.1 --peer-ip 10.79.0.2 --spoof-ip 10.79.0.77 \
		>"$LOG/spoof.inject" 2>&1 &
	ipid=$!
	# -F: perftest's cycle calibration must not fail the run (t_fuzz.sh).
	ip netns exec wire "${TMO[@]}" ib_write_bw -d urdma_w1 -x "$GW1" \
		-s $size -n $iters -F >"$LOG/spoof.server" 2>&1 &
	spid=$!
	wait_for 30 tcp_listening 18515 "$spid"
	"${TMO[@]}" ib_write_bw -d urdma_w0 -x "$GW0" -s $size -n $iters -F \
		10.79.0.2 >"$LOG/spoof.client" 2>&1 &
	cpid=$!
	wait "$ipid"
	local inj=$? running=0
	kill -0 "$cpid" 2>/dev/null && running=1
	wait "$cpid"
	rc_c=$?
	wait "$spid"
	rc_s=$?
	drops1=$(counter urdma_w0 rx_drops)
	if [ $inj -ne 0 ]; then
		tap_fail "forged NAKs were sent" "$(cat "$LOG/spoof.inject")"
	elif [ $running = 0 ] && [ $rc_c = 0 ]; then
		tap_fail "forged NAKs arrived while the transfer ran" \
			"ib_write_bw ended before the injector did: raise -n" \
			"$(cat "$LOG/spoof.inject")"
	elif [ $rc_c = 0 ] && [ $rc_s = 0 ] &&
		grep -q '^ *[0-9]' "$LOG/spoof.client"; then
		tap_ok "forged NAKs (wrong address; stale PSNs) leave ib_write_bw unharmed"
		sed 's/^/#   /' "$LOG/spoof.inject"
	else
		tap_fail "forged NAKs (wrong address; stale PSNs) leave ib_write_bw unharmed" \
			"client exit $rc_c, server exit $rc_s" \
			"$(cat "$LOG/spoof.inject")" \
			"$(tail -n 8 "$LOG/spoof.client")"
	fi
	# Each NAK from the stranger is dropped (and counted) at the QP.
	if [ $((drops1 - drops0)) -ge 256 ]; then
		tap_ok "the stranger's packets are counted as drops"
	else
		tap_fail "the stranger's packets are counted as drops" \
			"rx_drops moved by $((drops1 - drops0))"
	fi
	wire_down
}

# WRITEs with path MTU 4096 over the wire while veth4's MTU flips between
# 1500 and 9000 and 3% of its packets are lost (go-back-N rewinds into
# messages cut at the other MTU).  No packet may leave with bytes the
# engine did not write (that once sent kernel memory and warned), and every
# WRITE either lands byte-exact or fails its QP with a local error (whose
# QP then sends nothing more: the next WQE once went out at a PSN in the
# middle of the failed message, and the responder NAKed it).
mtu_flips() {
	local secs=8 fpid rc
	[ "${URDMA_KERNEL:-}" = debug ] && secs=6
	if ! wire_up 9000; then
		tap_fail "MTU flips: the wire pair comes up"
		return
	fi
	tc qdisc add dev veth4 root netem loss 3% ||
		{ tap_fail "MTU flips: netem on veth4"; wire_down; return; }
	(
		m=1500
		while :; do
			ip link set veth4 mtu $m
			[ $m = 1500 ] && m=9000 || m=1500
			sleep 0.2
		done
	) &
	fpid=$!
	timeout -k 5 120 "${PY[@]}" mtu --dev-a urdma_w0 --gid-a "$GW0" \
		--dev-b urdma_w1 --gid-b "$GW1" --seconds $secs \
		>"$LOG/mtu.out" 2>&1
	rc=$?
	kill $fpid
	wait $fpid 2>/dev/null
	if [ $rc = 0 ]; then
		tap_ok "WRITEs across MTU changes land byte-exact or fail cleanly"
		sed 's/^/#   /' "$LOG/mtu.out"
	else
		tap_fail "WRITEs across MTU changes land byte-exact or fail cleanly" \
			"exit $rc" "$(tail -n 20 "$LOG/mtu.out")"
	fi
	wire_down
}

# wire_py TITLE LOG CMD [ARG...]: security.py CMD from urdma_w0 (A) to
# urdma_w1 (B) on the wire pair; TITLE passes if it exits 0.
wire_py() {
	local title=$1 log=$LOG/$2 rc
	shift 2
	if ! wire_up; then
		tap_fail "$title: the wire pair comes up"
		return
	fi
	timeout -k 5 120 "${PY[@]}" "$@" --dev-a urdma_w0 --gid-a "$GW0" \
		--dev-b urdma_w1 --gid-b "$GW1" >"$log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		tap_ok "$title"
	else
		tap_fail "$title" "exit $rc" "$(tail -n 12 "$log")"
	fi
	wire_down
}

# A WQE that fails at the requester (bad lkey; or, above, an MTU that fell
# under it) takes the QP to ERROR, which flushes the WQEs behind it: none of
# them may have gone out first.
failed_stops() {
	local rounds=20
	[ "${URDMA_KERNEL:-}" = debug ] && rounds=5
	wire_py "nothing is sent after a failed WQE; the flushed ones never land" \
		stop.out stop --rounds $rounds
}

# SEND_WITH_INV over the wire: the IETH names the rkey in network order, so
# the receiver invalidates the window it was told to (an NVMe-oF target's
# responses invalidate the host's MR this way), says so in its completion,
# and refuses a WRITE through it afterwards.
send_inv_wire() {
	local rounds=10
	[ "${URDMA_KERNEL:-}" = debug ] && rounds=3
	wire_py "SEND_WITH_INV on the wire invalidates the rkey it names" \
		sendinv.out sendinv --rounds $rounds
}

# ---- device creation racing address handles -------------------------------

# urdma devices come and go on a veth pair while a process creates address
# handles on urdma0 (each looks for the destination GID on every urdma
# device): a device must not be looked at before its GID table exists.
devices_vs_ahs() {
	local apid rc i ok=0 cycles=40
	[ "${URDMA_KERNEL:-}" = debug ] && cycles=15
	ip neigh replace 10.77.0.99 lladdr 02:00:00:00:00:99 dev "$NETDEV" \
		nud permanent
	ip link add veth6 type veth peer name veth7 && ip link set veth6 up ||
		{ tap_fail "devices vs AHs: veth6"; return; }
	"${PY[@]}" ahloop --dev "$DEV" --gid-index "$G0" --dst-ip 10.77.0.99 \
		--seconds 600 >"$LOG/ahloop.out" 2>&1 &
	apid=$!
	sleep 1
	for ((i = 0; i < cycles; i++)); do
		rdma link add urdma_race type urdma netdev veth6 &&
			rdma link del urdma_race && ok=$((ok + 1))
	done
	kill -INT $apid 2>/dev/null
	kill $apid 2>/dev/null
	wait $apid 2>/dev/null
	ip link del veth6
	if [ $ok = $cycles ] && has_ibdev "$DEV"; then
		tap_ok "$cycles device add/delete cycles race address handles on $DEV"
	else
		tap_fail "$cycles device add/delete cycles race address handles on $DEV" \
			"$ok cycles worked" "$(tail -n 5 "$LOG/ahloop.out")"
	fi
}

# ---- multicast stays in its namespace --------------------------------------

mcast_netns() {
	local out rc
	ip link add vm0 type veth peer name vm1 && ip netns add mc &&
		ip link set vm1 netns mc && ip link set vm0 up &&
		ip -n mc link set vm1 up && ip -n mc link set lo up &&
		ip -n mc addr add 10.80.0.2/24 dev vm1 &&
		ip netns exec mc rdma link add urdma_mc type urdma netdev vm1 ||
		{ tap_fail "multicast: a device in netns mc"; return; }
	out=$(timeout -k 5 60 "$TOP/build/tests/urdma_mcast_probe" "$DEV" \
		"$G0" urdma_mc 2>&1)
	rc=$?
	if [ $rc = 0 ]; then
		tap_ok "multicast is delivered in its namespace only"
		sed 's/^/#   /' <<<"$out"
	else
		tap_fail "multicast is delivered in its namespace only" "$out"
	fi
	ip netns exec mc rdma link del urdma_mc
	ip link del vm0 2>/dev/null
	ip netns del mc
}

if [ "$NETDEV" != veth0 ]; then
	tap_skip "security" "needs urdma0 on veth0 (netdev is $NETDEV)"
	tap_done
fi
# Arguments pick cases (a function name each); default: all of them.
CASES=(keys_hidden forged_naks mtu_flips failed_stops send_inv_wire
	devices_vs_ahs mcast_netns)
for c in "${@:-${CASES[@]}}"; do
	t0=$SECONDS
	"$c"
	echo "# $c: $((SECONDS - t0)) s"
done
tap_done
