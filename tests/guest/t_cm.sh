#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# librdmacm's examples over $DEV, server and client in this guest on the
# netdev's IPv4 address: rping (RC, RDMA READ and WRITE), ucmatose (RC
# SEND), udaddy (UD through rdma_cm, on its fixed port 7174; its -p is the
# port space), rdma_server/rdma_client (the
# rdma_cm convenience API).  The connections go through QP1 (CM MADs).
. "$(dirname "$0")/lib.sh"
RESULTS=${URDMA_RESULTS:-/tmp}/cm
mkdir -p "$RESULTS"
IP=$(ip -4 -o addr show dev "$NETDEV" | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
if ! wait_gid_v4 "$DEV" || [ -z "$IP" ]; then
	tap_fail "$DEV has an IPv4 RoCE v2 GID and $NETDEV an address"
	tap_done
fi

# cm NAME PORT OKRE "SERVER CMD" "CLIENT CMD": the server starts first; once
# it listens on rdma_cm PORT the client runs.  The client must exit 0 with
# OKRE in its output, and the server must exit 0.
cm() {
	local name=$1 port=$2 okre=$3 log=$RESULTS/${1//\//-}
	local srv cli
	read -ra srv <<<"timeout -k 5 90 $4"
	read -ra cli <<<"timeout -k 5 60 $5"
	PAIR_CM=1 pair_run "$log" "$port" ${#srv[@]} "${srv[@]}" "${cli[@]}"
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] && grep -Eq "$okre" "$log.client"; then
		tap_ok "$name"
	else
		tap_fail "$name" "server: $4" "client: $5" "$(pair_diag "$log")"
	fi
}

cm rping 19901 'ping data: rdma-ping-9' "rping -s -a $IP -p 19901 -C 10 -S 4096 -v" \
	"rping -c -a $IP -p 19901 -C 10 -S 4096 -v"
cm ucmatose 19902 'data transfers complete' "ucmatose -b $IP -p 19902 -c 2 -C 10 -S 1024" \
	"ucmatose -s $IP -p 19902 -c 2 -C 10 -S 1024"
cm udaddy 7174 'data transfers complete' "udaddy -b $IP -c 2 -C 10 -S 512" \
	"udaddy -s $IP -c 2 -C 10 -S 512"
cm rdma_server/rdma_client 19904 'rdma_client: end 0' "rdma_server -s $IP -p 19904" \
	"rdma_client -s $IP -p 19904"
tap_done
