#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Malformed RoCEv2 frames into urdma0's netdev from a raw socket on the peer
# veth (wirefuzz.py): dropped and counted, never a crash.  Needs the veth
# pair (urdma-vm's default --netdev veth).
. "$(dirname "$0")/lib.sh"
if [ "$NETDEV" != veth0 ]; then
	tap_skip "wirefuzz" "needs urdma0 on veth0 (netdev is $NETDEV)"
	tap_done
fi
if ! wait_gid_v4 "$DEV"; then
	tap_fail "$DEV has an IPv4 RoCE v2 GID"
	tap_done
fi
# The live QP's peer: a made-up host whose MAC the kernel need not resolve.
ip neigh replace 10.77.0.99 lladdr 02:00:00:00:00:99 dev veth0 nud permanent
out=$(timeout -k 5 300 python3 "$(dirname "$0")/wirefuzz.py" "$GIDIDX" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -E '^(ok|not ok|#) '
if ! grep -qE '^(ok|not ok) ' <<<"$out" || [ $rc -ne 0 ]; then
	tap_fail "wirefuzz.py exits 0" "exit $rc" "$(tail -n 20 <<<"$out")"
fi
tap_done
