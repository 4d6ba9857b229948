#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Kernel clients that nobody here wrote, on urdma and, beside it, on rxe in
# the same boot.  NVMe over Fabrics (nvmeof.sh): the kernel target exports
# a RAM disk on the device's address, the kernel host connects to it, and
# 32 MiB of random data written through the fabric read back byte for
# byte, around the page cache and through it.  The queues must be the
# device's RC QPs, and none may be left when the host has disconnected.
# The Debian kernels only (the debug kernel has no block layer).
#   t_clients.sh [KIND...]     KIND: urdma rxe (default: both)
. "$(dirname "$0")/lib.sh"
# shellcheck source=nvmeof.sh
. "$(dirname "$0")/nvmeof.sh"

read -ra KINDS <<<"${*:-urdma rxe}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# nvmeof KIND DEV ADDR: the target on ADDR (DEV's), the host connects to it.
nvmeof() {
	local kind=$1 dev=$2 addr=$3 out
	if ! out=$(nvmet_up "$addr" 2>&1); then
		tap_fail "$kind: nvmet-rdma exports a RAM disk on $addr" "$out"
		nvmet_down
		return
	fi
	if ! nvmf_connect "$addr"; then
		tap_fail "$kind: nvme-rdma connects to $addr" "$(dmesg | tail -n 8)"
		nvmet_down
		return
	fi
	tap_ok "$kind: nvme-rdma connects to $addr ($NVMF_CTRL)"
	# The admin queue and an I/O queue per CPU, a QP on each side of each.
	[ "$(rc_qps "$dev")" -ge 4 ] &&
		tap_ok "$kind: the queues are $dev's RC QPs" ||
		tap_fail "$kind: the queues are $dev's RC QPs" "$(rdma res show qp 2>&1)"
	nvmf_data "$kind" "$NVMF_CTRL" "$WORK/data"
	check "$kind: the host disconnects" nvme_disconnect "$NVMF_CTRL"
	nvmet_down
	check "$kind: the target is taken down" test ! -e "$NVMF_CFS/ports/1"
	[ "$(rc_qps "$dev")" = 0 ] &&
		tap_ok "$kind: no RC QP is left behind" ||
		tap_fail "$kind: no RC QP is left behind" "$(rdma res show qp 2>&1)"
}

if ! out=$(nvmf_modules); then
	tap_skip "NVMe over Fabrics" "the kernel's modules would not load: $out"
	tap_done
fi
head -c $((NVMF_MIB << 20)) /dev/urandom >"$WORK/data"
for kind in "${KINDS[@]}"; do
	case $kind in
	urdma)
		wait_gid_v4 "$DEV" || { tap_fail "$DEV has an IPv4 GID"; continue; }
		nvmeof urdma "$DEV" 10.77.0.1
		;;
	rxe)
		if ! out=$(rdma link add rxe0 type rxe netdev veth1 2>&1); then
			tap_fail "rdma link add rxe0 type rxe netdev veth1" "$out"
			continue
		fi
		wait_gid_v4 rxe0 && nvmeof rxe rxe0 10.77.0.2
		rdma link del rxe0
		;;
	*)
		tap_fail "unknown KIND $kind"
		;;
	esac
done
tap_done
