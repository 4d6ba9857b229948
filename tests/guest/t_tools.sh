#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The standard rdma-core tools see the device the harness created.
. "$(dirname "$0")/lib.sh"

check "ibv_devices lists $DEV" bash -c "ibv_devices | grep -qw $DEV"

info=$(ibv_devinfo -v -d "$DEV" 2>&1)
grepinfo() { grep -Eq "$1" <<<"$info"; }
check "ibv_devinfo -v runs" test -n "$info"
check "ibv_devinfo shows PORT_ACTIVE" grepinfo 'state:[[:space:]]+PORT_ACTIVE'
check "ibv_devinfo shows link_layer Ethernet" \
	grepinfo 'link_layer:[[:space:]]+Ethernet'
check "ibv_devinfo shows max_qp 16384" grepinfo 'max_qp:[[:space:]]+16384'
check "ibv_devinfo shows max_pd 16384" grepinfo 'max_pd:[[:space:]]+16384'
check "ibv_devinfo shows the GIDs as RoCE v2" grepinfo 'GID\[.*RoCE v2'
check "ibv_devinfo shows fw_ver 0.1.0" grepinfo 'fw_ver:[[:space:]]+0\.1\.0'

link=$(rdma link show "$DEV/1" 2>&1)
check "rdma link shows ACTIVE on $NETDEV" \
	grep -Eq "state ACTIVE physical_state LINK_UP netdev $NETDEV" <<<"$link"
check "rdma dev shows the device" bash -c "rdma dev show $DEV | grep -q node_guid"
uverbs_abi() {
	local d
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat "$d/ibdev")" = "$DEV" ] && cat "$d/abi_version"
	done
}
check "uverbs abi_version of $DEV is 1" test "$(uverbs_abi)" = 1
tap_done
