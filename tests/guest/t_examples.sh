#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The C++ examples (examples/, built into build/examples by
# scripts/build-tests.sh) over $DEV, server and client in this guest on the
# netdev's IPv4 address: write_server/write_client (an RDMA WRITE into the
# buffer the server advertised in rdma_accept's private data, then an
# RDMA_WRITE_WITH_IMM that says "done") and echo_server/echo_client
# (SEND/RECV echo).  Each server checks what it got and says so.
. "$(dirname "$0")/lib.sh"
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$TOP/build/examples
RESULTS=${URDMA_RESULTS:-/tmp}/examples
mkdir -p "$RESULTS"
IP=$(ip -4 -o addr show dev "$NETDEV" | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
if ! wait_gid_v4 "$DEV" || [ -z "$IP" ]; then
	tap_fail "$DEV has an IPv4 RoCE v2 GID and $NETDEV an address"
	tap_done
fi

# example NAME PORT OKRE "SERVER CMD" "CLIENT CMD": the server starts first;
# once it listens on rdma_cm PORT the client runs.  Both must exit 0 and the
# server's output must match OKRE (its verification line).  The server's
# output and the client's last line follow as diagnostics.
example() {
	local name=$1 port=$2 okre=$3 log=$RESULTS/$1 prog
	for prog in ${4%% *} ${5%% *}; do
		if [ ! -x "$prog" ]; then
			tap_fail "$name" "$prog missing (scripts/build-tests.sh)"
			return
		fi
	done
	local srv cli
	read -ra srv <<<"timeout -k 5 60 $4"
	read -ra cli <<<"timeout -k 5 60 $5"
	PAIR_CM=1 pair_run "$log" "$port" ${#srv[@]} "${srv[@]}" "${cli[@]}"
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] && grep -Eq "$okre" "$log.server"; then
		tap_ok "$name"
		{ cat "$log.server"; tail -n 1 "$log.client"; } | sed 's/^/#   /'
	else
		tap_fail "$name" "server: $4" "client: $5" "$(pair_diag "$log")"
	fi
}

# The client writes 4000 of the server's 4096 bytes: the server also checks
# that the last 96 stayed untouched.
example rdma_write 19911 'write_server: verified 4000 bytes: OK' \
	"$BIN/write_server -a $IP -p 19911 -s 4096" \
	"$BIN/write_client -a $IP -p 19911 -s 4000"
example echo 19912 'echo_server: echoed 20 messages: OK' \
	"$BIN/echo_server -a $IP -p 19912" \
	"$BIN/echo_client -a $IP -p 19912 -n 20"
tap_done
