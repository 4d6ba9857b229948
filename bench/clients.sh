#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make bench's clients section (bench/run.sh runs it last, in its boot):
# real clients on urdma, rxe and siw, and on their own TCP transport, side
# by side.
#
#   bench/clients.sh OUT.jsonl
#
# Appends one JSON object per figure to OUT.jsonl ({"dev", "path":
# "client", "test", and usec, iops or mbps}); dev "tcp" is the client's
# TCP transport.  Needs the devices bench/run.sh made: urdma0 on veth0
# (10.77.0.1), rxe0 on veth1 (10.77.0.2), siw0 on veth2 (10.78.0.1).
# Server and client run in this guest, so TCP crosses the loopback.
#   NVMe-oF   nvmet and nvme-rdma against nvmet-tcp and nvme-tcp, a RAM
#             disk: 4k random reads at QD1 (mean total latency) and
#             QD16 (IOPS), 128k sequential reads at QD16 (MB/s); fio
#   NFS       NFSv4.2 proto=rdma against proto=tcp, a tmpfs export: 1 MiB
#             sequential writes, then reads (MB/s, O_DIRECT); fio
#   UCX       ucx_perftest over rc_verbs,ud_verbs against tcp: tag_lat
#             8 B, tag_bw and ucp_put_bw 64 KiB (iWARP: not supported)
#   qperf     rc_lat and rc_bw (-cm1) against tcp_lat and tcp_bw
# URDMA_BENCH_QUICK=1: 1 s per fio job, fewer iterations (make check).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
# shellcheck source=tests/guest/lib.sh source-path=SCRIPTDIR/..
. "$TOP/tests/guest/lib.sh"
# shellcheck source=tests/guest/nvmeof.sh
. "$TOP/tests/guest/nvmeof.sh"
# shellcheck source=tests/guest/nfs.sh
. "$TOP/tests/guest/nfs.sh"
OUT=${1:?usage: clients.sh OUT.jsonl}
QUICK=${URDMA_BENCH_QUICK:-0}
LOGS=${URDMA_BENCH_LOGS:-/tmp/bench-logs}/clients
mkdir -p "$LOGS"
FAILS=0
if [ "$QUICK" = 1 ]; then
	SECS=1 UCX_ITERS=200 QPERF_SECS=1 NFS_MIB=16
else
	SECS=5 UCX_ITERS=2000 QPERF_SECS=3 NFS_MIB=128
fi

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# rec DEV TEST FIELD VALUE: one figure.
rec() {
	echo "{\"dev\":\"$1\",\"path\":\"client\",\"test\":\"$2\",\"$3\":$4}" >>"$OUT"
	say "clients: $1 $2 $3=$4"
}
# fail DEV TEST WHY: a figure that could not be measured.  It is recorded
# with its reason; only urdma's and TCP's count as the section's failures
# (rxe's and siw's are the peers' own, and the report lists them).
fail() {
	local why=${3//[\\\"]/ }
	why=$(tr -s '\n\t' '  ' <<<"$why")
	echo "{\"dev\":\"$1\",\"path\":\"client\",\"test\":\"$2\",\"error\":\"${why:0:300}\"}" >>"$OUT"
	say "clients: FAILED: $1 $2: $why"
	case $1 in
	urdma | tcp) FAILS=$((FAILS + 1)) ;;
	esac
}

# The devices: name, address, and the RDMA ones' netdev.
declare -A ADDR=([urdma]=10.77.0.1 [rxe]=10.77.0.2 [siw]=10.78.0.1 [tcp]=10.77.0.1)
declare -A IBDEV=([urdma]=urdma0 [rxe]=rxe0 [siw]=siw0)
KINDS=()
for k in urdma rxe siw; do
	if [ -e "/sys/class/infiniband/${IBDEV[$k]}" ]; then
		KINDS+=("$k")
	else
		fail "$k" device "${IBDEV[$k]} is missing"
	fi
done

# fio_json NAME FIO-ARGS...: runs fio; prints "iops lat_usec mbps" of its
# reads or writes (whichever moved data).  The latency is the total one,
# submission and completion: nvme-tcp on a loopback can complete an I/O
# inside io_submit(), which leaves fio's completion latency near 0.
fio_json() {
	local name=$1 log=$LOGS/fio-$1.json
	shift
	timeout -k 5 $((SECS * 4 + 60)) fio --name="$name" --output-format=json \
		--output="$log" --direct=1 --time_based --runtime="$SECS" \
		--ramp_time=0 "$@" >/dev/null 2>&1 || return 1
	python3 - "$log" <<-'EOF'
		import json, sys
		j = json.load(open(sys.argv[1]))["jobs"][0]
		d = j["read"] if j["read"]["io_bytes"] else j["write"]
		print("%.0f %.1f %.1f" % (d["iops"], d["lat_ns"]["mean"] / 1e3,
					  d["bw_bytes"] / 1e6))
	EOF
}

# nvmf DEV TRTYPE ADDR: the target on ADDR over TRTYPE, the host connects,
# fio measures the namespace.
nvmf() {
	local dev=$1 addr=$3 ns r
	NVMF_TRTYPE=$2
	if ! nvmet_up "$addr" >/dev/null 2>&1 || ! wait_for 20 nvmf_connect "$addr"; then
		fail "$dev" nvmf "the target or the connection: $(dmesg | tail -n 3)"
		nvmet_down
		return
	fi
	ns=/dev/${NVMF_CTRL}n1
	if wait_for 20 test -b "$ns"; then
		local base=(--filename="$ns" --ioengine=libaio)
		r=($(fio_json "nvmf-$dev-qd1" "${base[@]}" --rw=randread --bs=4k --iodepth=1)) &&
			rec "$dev" nvmf_4k_qd1 usec "${r[1]}" ||
			fail "$dev" nvmf_4k_qd1 "fio failed"
		r=($(fio_json "nvmf-$dev-qd16" "${base[@]}" --rw=randread --bs=4k --iodepth=16)) &&
			rec "$dev" nvmf_4k_qd16 iops "${r[0]}" ||
			fail "$dev" nvmf_4k_qd16 "fio failed"
		r=($(fio_json "nvmf-$dev-seq" "${base[@]}" --rw=read --bs=128k --iodepth=16)) &&
			rec "$dev" nvmf_128k_seq mbps "${r[2]}" ||
			fail "$dev" nvmf_128k_seq "fio failed"
	else
		fail "$dev" nvmf "no namespace"
	fi
	nvme_disconnect "$NVMF_CTRL"
	wait_for 20 test ! -e "/sys/class/nvme/$NVMF_CTRL"
	nvmet_down
}

# nfs_bench DEV PROTO ADDR: NFSv4.2 over PROTO; 1 MiB writes, then reads.
nfs_bench() {
	local dev=$1 proto=$2 addr=$3 mnt=$LOGS/mnt opts r
	opts=vers=4.2,proto=$proto
	[ "$proto" = rdma ] && opts+=,port=20049
	mkdir -p "$mnt"
	if ! timeout 60 mount -t nfs -o "$opts" "$addr:/" "$mnt" 2>/dev/null; then
		fail "$dev" nfs "mount -o $opts failed"
		return
	fi
	local f=(--filename="$mnt/bench" --size=${NFS_MIB}M --bs=1M --ioengine=psync)
	r=($(fio_json "nfs-$dev-write" "${f[@]}" --rw=write)) &&
		rec "$dev" nfs_write mbps "${r[2]}" || fail "$dev" nfs_write "fio failed"
	r=($(fio_json "nfs-$dev-read" "${f[@]}" --rw=read)) &&
		rec "$dev" nfs_read mbps "${r[2]}" || fail "$dev" nfs_read "fio failed"
	timeout 60 umount "$mnt" || fail "$dev" nfs "umount failed"
	rm -f "$NFS_EXPORT/bench"
}

# ucx_bench DEV TLS NETDEV: ucx_perftest's tag latency, tag and put bandwidth.
ucx_bench() {
	local dev=$1 tls=$2 nd=$3 t size row log
	for t in tag_lat:8 tag_bw:65536 ucp_put_bw:65536; do
		size=${t#*:} t=${t%:*}
		log=$LOGS/ucx-$dev-$t
		local cmd=(env UCX_NET_DEVICES="$nd" UCX_TLS="$tls"
			UCX_UD_VERBS_ETH_DGID_CHECK=n timeout 120 ucx_perftest)
		local args=(-t "$t" -s "$size" -n "$UCX_ITERS" -w 100)
		pair_run "$log" 13337 $((${#cmd[@]} + ${#args[@]})) \
			"${cmd[@]}" "${args[@]}" "${cmd[@]}" "${ADDR[$dev]}" "${args[@]}"
		# Final: iterations, latency 50%ile, average, overall (usec),
		# bandwidth average, overall (MB/s), message rate average, overall
		row=$(grep -E "^Final: +$UCX_ITERS " "$log.client")
		if [ "$PAIR_SRC" != 0 ] || [ "$PAIR_CRC" != 0 ] || [ -z "$row" ]; then
			fail "$dev" "ucx_$t" "$(tail -n 2 "$log.client")"
			continue
		fi
		# shellcheck disable=SC2086
		set -- $row
		case $t in
		*_lat) rec "$dev" "ucx_$t" usec "$4" ;;
		*) rec "$dev" "ucx_$t" mbps "$(awk -v v="$6" 'BEGIN { printf "%.1f", v * 1.048576 }')" ;;
		esac
	done
}

qperf_bench() {
	local spid k out t
	qperf >"$LOGS/qperf.server" 2>&1 &
	spid=$!
	if ! wait_for 30 tcp_listening 19765 "$spid"; then
		fail tcp qperf "the qperf server did not listen"
		return
	fi
	for k in "${KINDS[@]}" tcp; do
		for t in lat bw; do
			if [ "$k" = tcp ]; then
				out=$(timeout 60 qperf "${ADDR[$k]}" -t "$QPERF_SECS" "tcp_$t" 2>&1)
			else
				out=$(timeout 60 qperf "${ADDR[$k]}" -cm1 -t "$QPERF_SECS" "rc_$t" 2>&1)
			fi
			if v=$(qperf_val "$out"); then
				[ $t = lat ] && rec "$k" qperf_lat usec "$v" ||
					rec "$k" qperf_bw mbps "$v"
			else
				fail "$k" "qperf_$t" "$out"
			fi
		done
	done
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}

say "== clients: NVMe-oF"
if out=$(nvmf_modules && modprobe -a nvmet-tcp nvme-tcp 2>&1); then
	for k in "${KINDS[@]}"; do
		nvmf "$k" rdma "${ADDR[$k]}"
	done
	nvmf tcp tcp "${ADDR[tcp]}"
	NVMF_TRTYPE=rdma
else
	fail tcp nvmf "modules: $out"
fi

say "== clients: NFS"
if out=$(nfsd_up 2>&1); then
	for k in "${KINDS[@]}"; do
		nfs_bench "$k" rdma "${ADDR[$k]}"
	done
	nfs_bench tcp tcp "${ADDR[tcp]}"
	nfsd_down
else
	fail tcp nfs "nfsd: $out"
fi

say "== clients: UCX"
for k in "${KINDS[@]}"; do
	[ "$k" = siw ] && continue	# UCX's verbs transports need IB or RoCE
	ucx_bench "$k" rc_verbs,ud_verbs,self "${IBDEV[$k]}:1"
done
ucx_bench tcp tcp,self veth0

say "== clients: qperf"
qperf_bench

say "clients: $FAILS failed"
[ "$FAILS" = 0 ]
