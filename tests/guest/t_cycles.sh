#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Repeated load / add / open / delete / unload; on a kmemleak kernel the
# cycles must leave no unreferenced object behind.
. "$(dirname "$0")/lib.sh"

# 200 cycles take ~18 min under KASAN+kmemleak in TCG; 10 there (the
# data-path tests and the real clients now fill that lane; each cycle
# takes the same paths, and kmemleak scans after the last).  Debian 6.12 runs 100 and 6.1, the
# kernel for API drift, 40, to leave time for the real clients; more only
# repeat the same paths.
case ${URDMA_KERNEL:-} in
debug) CYCLES=${URDMA_CYCLES:-10} ;;
debian-6.1) CYCLES=${URDMA_CYCLES:-40} ;;
*) CYCLES=${URDMA_CYCLES:-100} ;;
esac
KMEMLEAK=/sys/kernel/debug/kmemleak
PEER=veth1

rdma link delete "$DEV" 2>/dev/null
rmmod urdma 2>/dev/null
[ -w $KMEMLEAK ] && echo clear > $KMEMLEAK

fail_at=""
for i in $(seq 1 "$CYCLES"); do
	modprobe urdma || { fail_at="$i: modprobe"; break; }
	rdma link add urdma_c type urdma netdev "$PEER" ||
		{ fail_at="$i: link add"; break; }
	# Every tenth cycle also opens a user context and a PD.
	if [ $((i % 10)) -eq 0 ]; then
		ibv_devinfo -d urdma_c >/dev/null ||
			{ fail_at="$i: ibv_devinfo"; break; }
	fi
	rdma link delete urdma_c || { fail_at="$i: link delete"; break; }
	rmmod urdma || { fail_at="$i: rmmod"; break; }
done
if [ -z "$fail_at" ]; then
	tap_ok "$CYCLES cycles of modprobe/add/delete/rmmod"
else
	tap_fail "$CYCLES cycles of modprobe/add/delete/rmmod" "cycle $fail_at"
fi

if [ -w $KMEMLEAK ]; then
	# Two scans: kmemleak reports an object only once it was seen
	# unreferenced in two consecutive scans.
	echo scan > $KMEMLEAK; sleep 1; echo scan > $KMEMLEAK
	leaks=$(cat $KMEMLEAK)
	if [ -z "$leaks" ]; then
		tap_ok "kmemleak is clean after the cycles"
	else
		tap_fail "kmemleak is clean after the cycles" "$leaks"
	fi
else
	tap_skip "kmemleak is clean after the cycles" "kernel has no kmemleak"
fi

# Restore the device for whatever runs next.
modprobe urdma
rdma link add "$DEV" type urdma netdev "$NETDEV" 2>/dev/null
check "$DEV restored" wait_for 10 has_ibdev "$DEV"
tap_done
