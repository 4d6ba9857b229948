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

# rmmod with devices present removes them all; reload restores ours.
check "rmmod urdma with two devices" rmmod urdma
check "all devices are gone" bash -c "no() { [ ! -e /sys/class/infiniband/\$1 ]; }; no $DEV && no urdma_b"
check "modprobe urdma again" modprobe urdma
check "recreate $DEV on $NETDEV" rdma link add "$DEV" type urdma netdev "$NETDEV"
check "$DEV is ACTIVE again" wait_for 10 bash -c \
	"rdma link show $DEV/1 | grep -q 'state ACTIVE'"
tap_done
