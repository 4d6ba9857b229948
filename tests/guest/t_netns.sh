#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A device that goes away, or moves, under its users; RDMA network
# namespaces in exclusive mode.
#  - rdma link delete while ib_write_bw runs on the device and a process
#    waits for its async events: the delete completes, the waiting process
#    gets IBV_EVENT_DEVICE_FATAL, nothing is left.
#  - rmmod urdma while a process holds a context: the module unloads (the
#    core disassociates the context instead of pinning the module).
#  - rdma_cm into a namespace whose link is a macvlan (as a container's).
#  - rdma system set netns exclusive; a device moved with "rdma dev set
#    DEV netns NS" while a context is open on it; rdma_cm (rping) between
#    that namespace and this one over a veth pair; the namespace deleted
#    with the device in it; shared mode restored.
#  - completion timestamps inside a time namespace.
. "$(dirname "$0")/lib.sh"

LOGS=${URDMA_RESULTS:-/tmp}/netns
mkdir -p "$LOGS"

cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	rdma link delete urdma_d0 2>/dev/null
	rdma link delete urdma_d1 2>/dev/null
	rdma link delete urdma_x0 2>/dev/null
	rdma link delete rxe_x 2>/dev/null
	ip netns del rx 2>/dev/null
	ip netns del dl 2>/dev/null
	ip netns del mv 2>/dev/null
	rdma link delete urdma_m0 2>/dev/null
	ip link del vm0 2>/dev/null
	ip link del vd0 2>/dev/null
	ip link del vx0 2>/dev/null
	wait_for 10 bash -c '[ -z "$(ip netns list)" ]'
	rdma system set netns shared 2>/dev/null
}
trap cleanup EXIT

# asyncwatch DEV LOG: a process with a context on DEV that prints its async
# events; it ends when the context is disassociated (EIO after the event).
asyncwatch() {
	timeout -k 5 120 stdbuf -oL ibv_asyncwatch -d "$1" >"$2" 2>&1 &
	wait_for 10 grep -q "async event FD" "$2"
}
# within SECONDS CMD...: CMD succeeds within SECONDS of wall clock (wait_for
# counts polls, which a slow CMD on the debug kernel stretches).
within() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.2
	done
}
saw_fatal() { grep -q "event_type .*(8)" "$1"; }	# IBV_EVENT_DEVICE_FATAL

# pair NS VETH DEV NET: namespace NS, a veth pair VETH0 (here, NET.1) and
# VETH1 (in NS, NET.2), and devices DEV0 and DEV1 on them, each added from
# where its netdev is.  With both addresses in one namespace the route
# between them would be lo's; two hosts are two namespaces.
pair() {
	local ns=$1 a=${2}0 b=${2}1 dev=$3 net=$4
	ip netns add "$ns" && ip link add "$a" type veth peer name "$b" &&
		ip link set "$b" netns "$ns" && ip addr add "$net.1/24" dev "$a" &&
		ip link set "$a" up && ip -n "$ns" addr add "$net.2/24" dev "$b" &&
		ip -n "$ns" link set "$b" up && ip -n "$ns" link set lo up &&
		rdma link add "${dev}0" type urdma netdev "$a" &&
		ip netns exec "$ns" rdma link add "${dev}1" type urdma netdev "$b"
}

# rping_into NS DEV_THERE DEV_HERE ADDR PORT NAME: once both devices have
# an IPv4 GID, 10 verified rpings from here to a server in NS on ADDR.
rping_into() {
	local ns=$1 there=$2 here=$3 addr=$4 port=$5 name=$6 srv
	if ! ip netns exec "$ns" bash -c ". $(dirname "$0")/lib.sh; wait_gid_v4 $there" ||
		! wait_gid_v4 "$here"; then
		tap_fail "$name" "no IPv4 GID on $here or $there"
		return
	fi
	srv=(ip netns exec "$ns" timeout -k 5 60 rping -s -a "$addr" -p "$port" -C 10)
	PAIR_CM=1 pair_run "$LOGS/rping.$ns" "$port" ${#srv[@]} "${srv[@]}" \
		timeout -k 5 60 rping -c -a "$addr" -p "$port" -C 10 -V -v
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] &&
		[ "$(grep -c 'ping data' "$LOGS/rping.$ns.client")" = 10 ]; then
		tap_ok "$name"
	else
		tap_fail "$name" "$(pair_diag "$LOGS/rping.$ns")"
	fi
}

# ---- rdma link delete under traffic ---------------------------------------

check "two devices on a veth pair, the far end in namespace dl" pair dl vd urdma_d 10.83.0
if wait_gid_v4 urdma_d1 && g1=$GIDIDX && wait_gid_v4 urdma_d0; then
	g0=$GIDIDX
	bw=(ib_write_bw -F -s 65536 -D 60 -p 18720)
	ip netns exec dl timeout -k 5 120 "${bw[@]}" -d urdma_d1 -x "$g1" \
		>"$LOGS/bw.server" 2>&1 &
	spid=$!
	pair_wait_server "$spid" 18720
	timeout -k 5 120 "${bw[@]}" -d urdma_d0 -x "$g0" 10.83.0.2 \
		>"$LOGS/bw.client" 2>&1 &
	cpid=$!
	asyncwatch urdma_d0 "$LOGS/watch.d0"
	# Traffic flows before the delete (on the local path: both devices
	# are in this guest).
	check "ib_write_bw runs between the two" within 90 bash -c \
		"rdma statistic show link urdma_d0/1 | grep -Eq ' wqes [0-9]{3,}'"
	t0=$SECONDS
	check "rdma link delete while ib_write_bw runs on the device" \
		timeout 60 rdma link delete urdma_d0
	echo "# the delete took $((SECONDS - t0)) s"
	check "the device is gone" no_ibdev urdma_d0
	check "the context's owner got IBV_EVENT_DEVICE_FATAL" \
		wait_for 20 saw_fatal "$LOGS/watch.d0"
	# perftest polls its CQ forever once the device is gone; the client
	# is stopped, and with it its peer, which then reports the error.
	kill "$cpid" 2>/dev/null
	wait "$cpid" 2>/dev/null
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	echo "# both ends stopped $((SECONDS - t0)) s after the delete"
	check "the peer device holds no QP afterwards" wait_for 10 bash -c \
		"! rdma resource show qp | grep 'link urdma_d1/.* type RC'"
	rdma resource show qp | grep 'link urdma_d1/.* type RC' | sed 's/^/# left: /'
	check "the peer device is deleted" rdma link delete urdma_d1
else
	tap_fail "rdma link delete while ib_write_bw runs on the device" \
		"no IPv4 GID on urdma_d0 or urdma_d1"
fi
ip netns del dl
ip link del vd0 2>/dev/null

# ---- rmmod with a context open ---------------------------------------------

if asyncwatch "$DEV" "$LOGS/watch.rmmod"; then
	check "rmmod urdma while a process holds a context" timeout 60 rmmod urdma
	check "the process got IBV_EVENT_DEVICE_FATAL" \
		wait_for 20 saw_fatal "$LOGS/watch.rmmod"
	check "modprobe urdma again" modprobe urdma
	check "recreate $DEV on $NETDEV" rdma link add "$DEV" type urdma netdev "$NETDEV"
	check "$DEV is ACTIVE again" wait_for 10 bash -c \
		"rdma link show $DEV/1 | grep -q 'state ACTIVE'"
else
	tap_fail "rmmod urdma while a process holds a context" \
		"ibv_asyncwatch -d $DEV did not start: $(cat "$LOGS/watch.rmmod")"
fi

# ---- rdma_cm in a container's namespace on macvlan ------------------------

# A container's usual link: a macvlan (bridge mode) on a host netdev, moved
# into its namespace.  Here the host netdev is the far end of a veth pair,
# so the frames between the two devices cross a real link layer.
macvlan_pair() {
	ip link set mvl0 netns mv &&
		ip -n mv addr add 10.85.0.2/24 dev mvl0 &&
		ip -n mv link set mvl0 up && ip -n mv link set lo up &&
		rdma link add urdma_m0 type urdma netdev vm0 &&
		ip netns exec mv rdma link add urdma_m1 type urdma netdev mvl0
}
if ip netns add mv && ip link add vm0 type veth peer name vm1 &&
	ip addr add 10.85.0.1/24 dev vm0 && ip link set vm0 up &&
	ip link set vm1 up &&
	ip link add mvl0 link vm1 type macvlan mode bridge 2>"$LOGS/macvlan.err"; then
	check "urdma on a macvlan in namespace mv, its lower device's peer here" \
		macvlan_pair
	rping_into mv urdma_m1 urdma_m0 10.85.0.2 18722 \
		"rping from here to a server on the macvlan in mv (10 pings verified)"
	check "ip netns del mv" ip netns del mv
	check "urdma_m1 is gone with its macvlan" wait_for 20 no_ibdev urdma_m1
else
	# The debug kernel's config leaves macvlan out.
	tap_skip "rdma_cm into a namespace on a macvlan" \
		"no macvlan in this kernel: $(cat "$LOGS/macvlan.err")"
	ip netns del mv 2>/dev/null
fi
rdma link delete urdma_m0 2>/dev/null
ip link del vm0 2>/dev/null

# ---- exclusive network namespaces -----------------------------------------

# Only with no namespace but this one (a dying one counts until it is gone).
check "rdma system set netns exclusive" wait_for 20 rdma system set netns exclusive
check "a device on each end of a veth pair, the far end in rx" pair rx vx urdma_x 10.84.0
# New devices start in the initial namespace, wherever their netdev is.
check "urdma_x1 is not seen in rx before the move" bash -c \
	"! ip netns exec rx rdma dev show 2>&1 | grep -q urdma_x1"
asyncwatch urdma_x1 "$LOGS/watch.x1"
check "rdma dev set urdma_x1 netns rx, with a context open on it" \
	timeout 60 rdma dev set urdma_x1 netns rx
check "the context's owner got IBV_EVENT_DEVICE_FATAL" \
	wait_for 20 saw_fatal "$LOGS/watch.x1"
check "urdma_x1 is in rx" bash -c \
	"ip netns exec rx rdma dev show | grep -q urdma_x1"
check "and no longer here" bash -c "! rdma dev show | grep -q urdma_x1"
check "urdma_x0 is not seen in rx" bash -c \
	"! ip netns exec rx rdma dev show | grep -q urdma_x0"
# rxe (no disassociate_ucontext) cannot be moved: the same command, beside.
if out=$(rdma link add rxe_x type rxe netdev vx0 2>&1); then
	check_fails "rxe beside: rdma dev set rxe_x netns rx is refused" \
		rdma dev set rxe_x netns rx
	rdma link delete rxe_x
else
	tap_skip "rxe beside: rdma dev set rxe_x netns rx is refused" \
		"no rxe here: $out"
fi
# rdma_cm in the namespace finds the device that moved there.
rping_into rx urdma_x1 urdma_x0 10.84.0.2 18721 \
	"rping from here to a server in rx (rdma_cm, 10 pings verified)"
# A container ends: its namespace goes, and the device with its netdev.
check "ip netns del rx" ip netns del rx
check "urdma_x1 is gone with it" wait_for 20 no_ibdev urdma_x1
check "urdma_x0 is gone with its veth peer" wait_for 20 no_ibdev urdma_x0
ip link del vx0 2>/dev/null
check "no namespace is left" wait_for 20 bash -c '[ -z "$(ip netns list)" ]'
check "rdma system set netns shared, once rx is gone" \
	wait_for 20 rdma system set netns shared
check "$DEV still works after all this" bash -c "ibv_devinfo -d $DEV | grep -q PORT_ACTIVE"

# ---- a time namespace ------------------------------------------------------

# Completion stamps are on CLOCK_MONOTONIC as the CQ's creator reads it: in
# a time namespace 10^6 s ahead, the stamps must fall between that
# namespace's clock readings (the verbs test checks each one).
VERBS=$(cd "$(dirname "$0")/../.." && pwd)/build/tests/urdma_verbs_test
if [ ! -x "$VERBS" ]; then
	tap_fail "completion stamps on a time namespace's clock" "$VERBS missing (make tests)"
elif ! unshare --time --monotonic 1000000 true 2>"$LOGS/timens.err"; then
	tap_skip "completion stamps on a time namespace's clock" \
		"no time namespaces here: $(cat "$LOGS/timens.err")"
else
	check "completion stamps on a time namespace's clock (10^6 s ahead)" \
		bash -c "URDMA_DEV=$DEV unshare --time --monotonic 1000000 \
			$VERBS --gtest_filter='Timestamps.Every*:Timestamps.Device*' \
			>$LOGS/timens.log 2>&1"
fi

tap_done
