#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Communication libraries and tools that nobody here wrote, on urdma and,
# beside it, on rxe in the same boot (Debian 12's packages on the rdma-core
# 56.1 userland): qperf, libfabric's verbs and verbs;ofi_rxm providers
# (fi_pingpong, with its data check -c), UCX (ucx_perftest over
# rc_verbs with UD wire-up, and over ud_verbs alone) and Open MPI over UCX
# (urdma_mpi_check: point-to-point and allreduce, data checked).  Server and client
# run in this guest, on the device's IPv4 address.
#   t_libs.sh [KIND...]     KIND: urdma rxe (default: both; rxe on 6.12
#                           only, for time)
. "$(dirname "$0")/lib.sh"
# shellcheck source=mpi.sh
. "$(dirname "$0")/mpi.sh"
RESULTS=${URDMA_RESULTS:-/tmp}/libs
mkdir -p "$RESULTS"

client_kinds "$@"

# qperf KIND ADDR TEST...: qperf's RC tests over rdma_cm (-cm1).  Each
# must print its figure, and a non-zero one.  qperf's UD tests cannot run
# over rdma_cm on RoCE: its server builds the AH from the SIDR request
# event, which carries no address (the kernel fills no ah_attr for it),
# and ibv_create_ah refuses an AH without a GRH on RoCE, on any device.
qperf_tests() {
	local kind=$1 addr=$2 log=$RESULTS/qperf-$1 spid t out
	shift 2
	qperf >"$log.server" 2>&1 &
	spid=$!
	if ! wait_for 30 tcp_listening 19765 "$spid"; then
		tap_fail "$kind: qperf server listens" "$(cat "$log.server")"
		kill "$spid" 2>/dev/null
		return
	fi
	for t in "$@"; do
		if out=$(timeout 60 qperf "$addr" -cm1 -t 1 "$t" 2>&1) &&
			grep -qE '^ *(latency|bw) += +[0-9.]*[1-9][0-9.]* ' <<<"$out"; then
			tap_ok "$kind: qperf -cm1 $t"
			echo "# $(tr -s ' \n' ' ' <<<"$out")"
		else
			tap_fail "$kind: qperf -cm1 $t" "$out" "$(tail -n 5 "$log.server")"
		fi
	done
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}

# fabric KIND DEV ADDR NAME PROVIDER EP SIZE [ENV...]: fi_pingpong with
# data checks (-c): 100 messages of SIZE each way; both sides must report
# all of them acknowledged.
fabric() {
	local kind=$1 dev=$2 addr=$3 name=$4 prov=$5 ep=$6 size=$7 log
	shift 7
	log=$RESULTS/fi-$kind-$name
	local args=(-p "$prov" -e "$ep" -d "$dev" -c -I 100 -S "$size")
	[ "$ep" = dgram ] && args[5]=$dev-dgram
	local cmd=(env "$@" timeout 60 fi_pingpong "${args[@]}")
	pair_run "$log" 47592 "${#cmd[@]}" "${cmd[@]}" "${cmd[@]}" "$addr"
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] &&
		grep -qE '^[0-9]+k? +100 +=100 ' "$log.server" &&
		grep -qE '^[0-9]+k? +100 +=100 ' "$log.client"; then
		tap_ok "$kind: fi_pingpong -p '$prov' -e $ep -S $size -c"
		echo "# $(tail -n 1 "$log.client" | tr -s ' ')"
	else
		tap_fail "$kind: fi_pingpong -p '$prov' -e $ep -S $size -c" \
			"command: fi_pingpong ${args[*]} $addr" "$(pair_diag "$log")"
	fi
}

# ucx KIND DEV ADDR TLS TEST SIZE [ENV...]: ucx_perftest TEST with 1000
# iterations of SIZE bytes; the client must report all 1000.
ucx() {
	local kind=$1 dev=$2 addr=$3 tls=$4 t=$5 size=$6 log
	shift 6
	log=$RESULTS/ucx-$kind-$t-${tls%%,*}
	local envs=(UCX_NET_DEVICES="$dev:1" UCX_TLS="$tls" "$@")
	local args=(-t "$t" -s "$size" -n 1000 -w 100)
	local cmd=(env "${envs[@]}" timeout 60 ucx_perftest)
	pair_run "$log" 13337 $((${#cmd[@]} + ${#args[@]})) \
		"${cmd[@]}" "${args[@]}" "${cmd[@]}" "$addr" "${args[@]}"
	local row
	row=$(grep -E '^Final: +1000 ' "$log.client")
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] && [ -n "$row" ]; then
		tap_ok "$kind: ucx_perftest -t $t -s $size over $tls"
		echo "# $(tr -s ' ' <<<"$row")"
	else
		tap_fail "$kind: ucx_perftest -t $t -s $size over $tls" \
			"env: ${envs[*]}" "$(pair_diag "$log")"
	fi
}

# mpi KIND DEV [UCX_ENV]: Open MPI over UCX (pml ucx; no shared memory,
# so every message crosses DEV), two ranks here: urdma_mpi_check's
# point-to-point patterns and allreduce sums must all be right.  On urdma
# the device's WQE counter shows the traffic went through it.
mpi() {
	local kind=$1 dev=$2 log=$RESULTS/mpi-$1 before after rc=0
	shift 2
	local x=(-x UCX_NET_DEVICES="$dev:1")
	for e in "$@"; do x+=(-x "$e"); done
	before=$(wqes "$dev")
	mpirun_ucx -np 2 --oversubscribe "${x[@]}" "$MPI_CHECK" >"$log" 2>&1 || rc=$?
	after=$(wqes "$dev")
	if mpi_ran "$kind" "$log" "$rc" $((after - before)); then
		tap_ok "$kind: Open MPI over UCX: point-to-point and allreduce data right"
		[ "$kind" = urdma ] && echo "# $((after - before)) WQEs on $dev"
	else
		tap_fail "$kind: Open MPI over UCX: point-to-point and allreduce data right" \
			"exit $rc; WQEs on $dev: $before -> $after" "$(tail -n 20 "$log")"
	fi
}

# everything KIND DEV ADDR [FI_ENV] [UCX_ENV]
everything() {
	local kind=$1 dev=$2 addr=$3 fienv=${4:-} ucxenv=${5:-}
	qperf_tests "$kind" "$addr" rc_lat rc_bw rc_rdma_write_bw rc_rdma_read_bw
	fabric "$kind" "$dev" "$addr" msg verbs msg 4096
	fabric "$kind" "$dev" "$addr" dgram verbs dgram 1024
	# shellcheck disable=SC2086 # one word or none
	fabric "$kind" "$dev" "$addr" rdm 'verbs;ofi_rxm' rdm 65536 $fienv
	local rc=rc_verbs,ud_verbs,self ud=ud_verbs,self
	# shellcheck disable=SC2086
	{
		ucx "$kind" "$dev" "$addr" $rc tag_lat 8 $ucxenv
		ucx "$kind" "$dev" "$addr" $rc tag_bw 65536 $ucxenv
		ucx "$kind" "$dev" "$addr" $rc ucp_put_bw 65536 $ucxenv
		ucx "$kind" "$dev" "$addr" $rc ucp_get 65536 $ucxenv
		ucx "$kind" "$dev" "$addr" $ud tag_lat 8 $ucxenv
		ucx "$kind" "$dev" "$addr" $ud tag_bw 65536 $ucxenv
		mpi "$kind" "$dev" $ucxenv
	}
}

for tool in qperf fi_pingpong ucx_perftest mpirun "$MPI_CHECK"; do
	if ! command -v "$tool" >/dev/null; then
		tap_fail "$tool is installed" "run scripts/deps.sh"
		tap_done
	fi
done

for kind in "${KINDS[@]}"; do
	case $kind in
	urdma)
		wait_gid_v4 "$DEV" || { tap_fail "$DEV has an IPv4 GID"; continue; }
		everything urdma "$DEV" 10.77.0.1
		;;
	rxe)
		if ! out=$(rdma link add rxe0 type rxe netdev veth1 2>&1); then
			tap_fail "rdma link add rxe0 type rxe netdev veth1" "$out"
			continue
		fi
		# rxe's deviations, each needed for the client to run at all:
		# - max_cqe 32767: ofi_rxm's CQ for 256 peers is larger;
		# - wc.sl 0 on a RoCE UD receive (mlx5 and urdma report the
		#   frame type there): UCX reads the IPv4 GRH area as IPv6
		#   and drops every UD packet unless told not to check.
		wait_gid_v4 rxe0 && everything rxe rxe0 10.77.0.2 \
			FI_UNIVERSE_SIZE=64 UCX_UD_VERBS_ETH_DGID_CHECK=n
		rdma link del rxe0
		;;
	*)
		tap_fail "unknown KIND $kind"
		;;
	esac
done
tap_done
