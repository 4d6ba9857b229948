#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# "rdma link" life cycle: errors, netdev events, removal paths.
# Leaves $DEV on $NETDEV as it found it.
. "$(dirname "$0")/lib.sh"

OTHER=veth1
[ "$NETDEV" = lo ] && OTHER=veth1
ip link show "$OTHER" >/dev/null 2>&1 || {
	ip link add veth0 type veth peer name veth1 2>/dev/null
	ip link set veth0 up; ip link set veth1 up
}

check_fails "add on a nonexistent netdev fails" \
	rdma link add urdma_x type urdma netdev nosuch0
check "no device left behind by the failed add" no_ibdev urdma_x

check_fails "a second device on the same netdev fails" \
	rdma link add urdma_dup type urdma netdev "$NETDEV"
check "the first device survives the duplicate add" has_ibdev "$DEV"
check "no duplicate device appeared" no_ibdev urdma_dup

check_fails "a taken device name fails" \
	rdma link add "$DEV" type urdma netdev "$OTHER"

check_fails "an unknown link type fails" \
	rdma link add urdma_t type nosuchtype netdev "$OTHER"

check "add on $OTHER" rdma link add urdma_b type urdma netdev "$OTHER"
check "it appears in sysfs" has_ibdev urdma_b
check "delete it" rdma link delete urdma_b
check "it is gone" no_ibdev urdma_b
check "add it again after delete" rdma link add urdma_b type urdma netdev "$OTHER"

# The engine threads carry the device's name (the ib_device has none
# before registration, where they start).
engine_thread() { grep -qx "$1" /proc/[0-9]*/comm; }
check "urdma_b's engine thread is named urdma/urdma_b/0" \
	engine_thread urdma/urdma_b/0
check "no engine thread is named after a null string" \
	bash -c '! grep -q "(null)" /proc/[0-9]*/comm'

# Port state follows the netdev.
port_state() { rdma link show urdma_b/1 | grep -q "state $1 "; }
ip link set "$OTHER" down
check "netdev down makes the port DOWN" wait_for 5 port_state DOWN
ip link set "$OTHER" up
check "netdev up makes the port ACTIVE" wait_for 5 port_state ACTIVE

# The netdev going away removes the device.
ip link add vtmp0 type veth peer name vtmp1
ip link set vtmp0 up
check "add on a temporary veth" rdma link add urdma_tmp type urdma netdev vtmp0
ip link del vtmp0
check "deleting the netdev removes the device" wait_for 10 no_ibdev urdma_tmp

# Receive without the rx_handler (kernel/net.c): a macvlan holds it, so
# the device falls back to packet handlers.  RC traffic to a device whose
# netdev, the far end of a veth pair in its own namespace, has its
# rx_handler still flows both ways.
fb_cleanup() {
	rdma link delete urdma_fb0 2>/dev/null
	rdma link delete urdma_fb1 2>/dev/null
	ip netns del fbns 2>/dev/null
	ip link del vfb0 2>/dev/null
}
if ip link add vfb0 type veth peer name vfb1 &&
	ip link add link vfb0 name mvfb0 type macvlan 2>/dev/null; then
	ip netns add fbns && ip link set vfb1 netns fbns &&
		ip addr add 10.81.0.1/24 dev vfb0 && ip link set vfb0 up &&
		ip link set mvfb0 up &&
		ip -n fbns addr add 10.81.0.2/24 dev vfb1 &&
		ip -n fbns link set vfb1 up && ip -n fbns link set lo up
	check "add on a netdev whose rx_handler a macvlan holds" \
		rdma link add urdma_fb0 type urdma netdev vfb0
	check "it receives by packet handlers (kernel log)" \
		bash -c "dmesg | grep -q 'vfb0: urdma: rx_handler taken'"
	check "add on the far end, in its own namespace" \
		ip netns exec fbns rdma link add urdma_fb1 type urdma netdev vfb1
	if wait_gid_v4 urdma_fb1 && g1=$GIDIDX && wait_gid_v4 urdma_fb0; then
		log=${URDMA_RESULTS:-/tmp}/link-fallback
		pp=(ibv_rc_pingpong -p 18690 -n 100 -s 8192 -c)
		pair_run "$log" 18690 $((${#TMO[@]} + ${#pp[@]} + 8)) \
			ip netns exec fbns "${TMO[@]}" "${pp[@]}" -d urdma_fb1 -g "$g1" \
			"${TMO[@]}" "${pp[@]}" -d urdma_fb0 -g "$GIDIDX" 10.81.0.2
		if pingpong_ok "$log"; then
			tap_ok "RC between packet handlers and an rx_handler"
		else
			tap_fail "RC between packet handlers and an rx_handler" \
				"$(pair_diag "$log")"
		fi
	else
		tap_fail "RC between packet handlers and an rx_handler" \
			"no IPv4 GID on urdma_fb0 or urdma_fb1"
	fi
	fb_cleanup
	check "the fallback devices are gone" \
		bash -c "[ ! -e /sys/class/infiniband/urdma_fb0 ] && [ ! -e /sys/class/infiniband/urdma_fb1 ]"
else
	ip link del vfb0 2>/dev/null
	tap_skip "receive by packet handlers" "no macvlan in this kernel"
fi

# rmmod with devices present removes them all; reload restores ours.
check "rmmod urdma with two devices" rmmod urdma
check "all devices are gone" bash -c "no() { [ ! -e /sys/class/infiniband/\$1 ]; }; no $DEV && no urdma_b"
check "modprobe urdma again" modprobe urdma
check "recreate $DEV on $NETDEV" rdma link add "$DEV" type urdma netdev "$NETDEV"
check "$DEV is ACTIVE again" wait_for 10 bash -c \
	"rdma link show $DEV/1 | grep -q 'state ACTIVE'"
tap_done
