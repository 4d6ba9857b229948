# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared by the two-host tests: tests/guest/lib.sh, plus the setup both
# guests of scripts/urdma-2host go through.
# shellcheck source=../guest/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../guest/lib.sh"
ROLE=${URDMA_ROLE:?URDMA_ROLE (server or client) is not set}
NIC=${URDMA_NIC:?URDMA_NIC is not set: run under urdma-vm --nic}
PEER=${URDMA_PEER_IP:?URDMA_PEER_IP is not set}
# shellcheck disable=SC2034 # used by the tests that source this file
MYIP=${URDMA_NIC_IP:?URDMA_NIC_IP is not set}

# twohost_ready: $DEV has its IPv4 RoCE v2 GID (sets GIDIDX) and the peer
# answers pings; otherwise a failed test line and the script's end.
twohost_ready() {
	if ! wait_gid_v4 "$DEV"; then
		tap_fail "$DEV has an IPv4 RoCE v2 GID"
		tap_done
	fi
	if ! wait_for 120 peer_up; then
		tap_fail "ping $PEER" "$(ip neigh show dev "$NIC" 2>&1)"
		tap_done
	fi
}
# shellcheck disable=SC2317 # runs through wait_for
peer_up() { busybox ping -c 1 -W 1 "$PEER" >/dev/null 2>&1; }
