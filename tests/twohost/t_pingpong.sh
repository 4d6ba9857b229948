#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two-host pingpong: this guest's side is urdma0 or rxe0 on its NIC, and
# ibv_<PROG>_pingpong runs on the IPv4 RoCE v2 GID against the other guest.
# Runs in a guest of scripts/urdma-2host (URDMA_ROLE server or client,
# URDMA_NIC, URDMA_PEER_IP).
#   t_pingpong.sh KIND PROG [ITERS]   KIND: urdma or rxe; PROG: rc, uc, ud, srq
# For example, urdma (server) against rxe (client), UD:
#   scripts/urdma-2host -- tests/twohost/t_pingpong.sh urdma ud \
#       -- tests/twohost/t_pingpong.sh rxe ud
KIND=${1:?KIND: urdma or rxe}
PROG=${2:?PROG: rc, uc, ud or srq}
ITERS=${3:-100}
case $KIND in urdma | rxe) ;; *) echo "bad KIND $KIND" >&2; exit 2 ;; esac
# shellcheck disable=SC2034 # read by lib.sh
URDMA_DEV=${KIND}0
# shellcheck source=../guest/lib.sh
. "$(dirname "$0")/../guest/lib.sh"
ROLE=${URDMA_ROLE:?URDMA_ROLE (server or client) is not set}
# shellcheck disable=SC2034 # read by lib.sh
TAP_PREFIX="twohost $KIND $PROG ($ROLE)"
NIC=${URDMA_NIC:?URDMA_NIC is not set: run under urdma-vm --nic}
PEER=${URDMA_PEER_IP:?URDMA_PEER_IP is not set}
PORT=18515
RESULTS=${URDMA_RESULTS:-/tmp}/twohost
mkdir -p "$RESULTS"
LOG=$RESULTS/${PROG}_pingpong.$KIND.$ROLE

# Without --no-urdma the harness put urdma0 on the NIC.
if [ "$KIND" = rxe ]; then
	rdma link del urdma0 2>/dev/null || true
	check "rdma link add $DEV type rxe netdev $NIC" rdma link add "$DEV" type rxe netdev "$NIC"
fi
if ! wait_gid_v4 "$DEV"; then
	tap_fail "$DEV has an IPv4 RoCE v2 GID" \
		"$(grep -H . /sys/class/infiniband/"$DEV"/ports/1/gids/* 2>&1 | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$' | head)"
	tap_done
fi
tap_ok "$DEV has an IPv4 RoCE v2 GID (index $GIDIDX)"
echo "# $(rdma link show "$DEV/1" 2>&1)"
echo "# $NIC: $(ip -br addr show dev "$NIC" 2>&1)"
echo "# $DEV: GID $GIDIDX = $(</sys/class/infiniband/"$DEV"/ports/1/gids/"$GIDIDX")"

# shellcheck disable=SC2317 # peer_up runs through wait_for
# The other guest may boot later: wait for it to answer (up to 120 s).  (Debian
# 12 has no ping by default; busybox-static, which urdma-vm needs, has one.)
peer_up() { busybox ping -c 1 -W 1 "$PEER" >/dev/null 2>&1; }
if wait_for 120 peer_up; then
	tap_ok "ping $PEER"
else
	tap_fail "ping $PEER" "$(ip neigh show dev "$NIC" 2>&1)"
	tap_done
fi

TMO=(timeout -k 5 120)
PP=("ibv_${PROG}_pingpong" -d "$DEV" -g "$GIDIDX" -p "$PORT" -n "$ITERS" -c)
# ud_pingpong's default 2048-byte message exceeds the 1024-byte MTU.
[ "$PROG" = ud ] && PP+=(-s 512)
rc=0
if [ "$ROLE" = server ]; then
	"${TMO[@]}" "${PP[@]}" >"$LOG" 2>&1 || rc=$?
	cmd="${PP[*]}"
else
	# Until the server listens the client fails at once ("Couldn't connect").
	t=90
	while :; do
		rc=0
		"${TMO[@]}" "${PP[@]}" "$PEER" >"$LOG" 2>&1 || rc=$?
		if [ "$rc" = 0 ] || [ $t -le 0 ] || ! grep -q "Couldn't connect" "$LOG"; then
			break
		fi
		sleep 1
		t=$((t - 1))
	done
	cmd="${PP[*]} $PEER"
fi
if [ "$rc" = 0 ] && grep -q ' bytes in .* seconds' "$LOG" && ! grep -q 'invalid data' "$LOG"; then
	tap_ok "$cmd"
	sed 's/^/# /' "$LOG"
else
	tap_fail "$cmd" "exit $rc" "$(tail -n 20 "$LOG")"
fi
tap_done
