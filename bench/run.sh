#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The guest side of make bench (scripts/bench.sh boots the guest): urdma,
# rxe and siw side by side in one boot, and the guest's own limits.
#
#   bench/run.sh OUT.jsonl
#
# Writes one JSON object per measurement to OUT.jsonl and progress to
# stderr.  Environment: URDMA_BENCH_QUICK=1 (a smoke run: two sizes, few
# iterations), URDMA_SIW_KO (siw.ko to load; siw is left out without it),
# URDMA_BENCH_LOGS (perftest outputs, default /tmp/bench-logs).
#
# Devices and paths (urdma-vm's veth mode: urdma0 on veth0 10.77.0.1):
#   urdma  local  urdma0, server and client on it (the engine's local path)
#   rxe    local  rxe0 on veth1 (10.77.0.2), server and client on it
#   siw    local  siw0 on veth2 (10.78.0.1); iWARP: perftest -R (rdma_cm)
#   urdma  wire   urdma_w0 on veth4 (10.79.0.1) to urdma_w1 on veth5
#                 (10.79.0.2) in network namespace "wire": RoCEv2 packets
#                 through the veth pair (docs/engine.md, the local path)
#   tcp    wire   qperf's TCP stream and TCP and UDP ping-pongs over that
#                 same veth pair, between the same two namespaces
# Last, real clients on urdma0, rxe0 and siw0 and over TCP (clients.sh).
# rxe has no wire path in one boot: its UDP socket exists only in the
# initial namespace, and within it the IP layer carries a datagram to a
# local address over lo, where no rxe device listens (docs/performance.md).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
# shellcheck source=tests/guest/lib.sh source-path=SCRIPTDIR/..
. "$TOP/tests/guest/lib.sh"
OUT=${1:?usage: run.sh OUT.jsonl}
LOGS=${URDMA_BENCH_LOGS:-/tmp/bench-logs}
LIMITS=$TOP/build/tests/urdma_limits
QUICK=${URDMA_BENCH_QUICK:-0}
mkdir -p "$LOGS"
: >"$OUT"

if [ "$QUICK" = 1 ]; then
	BW_SIZES=(64 65536)
	LAT_SIZES=(2 4096)
	RATE_QPS=(1 4)
	MANY_QPS=16
	LAT_ITERS=100
	RATE_ITERS=500
else
	BW_SIZES=(2 64 1024 4096 65536 1048576)
	LAT_SIZES=(2 64 1024 4096 65536)
	RATE_QPS=(1 4 16)
	MANY_QPS=1024
	LAT_ITERS=1000
	# Message rate: 64-byte WRITEs per QP.  5000 took urdma 7 ms, too
	# short a run: its start (the engine waking, the first kicks) and a
	# scheduler tick or two moved the figure by 2x between runs.
	RATE_ITERS=20000
fi
BTMO=(timeout -k 5 120)
PORT=19000
FAILS=0

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
emit() { echo "$1" >>"$OUT"; }

# bw_iters KEY SIZE: about 64 MiB per run (quick: 4 MiB), 64 to 5000
# messages.  urdma's local path moves 16 times as much, up to 20,000
# messages: at 5 GB/s, 64 MiB of 64 KiB WRITEs took 13 ms, a run whose
# start (the engine waking, the first kicks) cost it 5-10% and moved the
# figure by as much between runs (docs/performance.md).  The other
# devices take 0.1-0.7 s for 64 MiB.
bw_iters() {
	local bytes=$((64 << 20)) max=5000 n
	case $1 in
	urdma/local | urdma/engines2) bytes=$((1 << 30)) max=20000 ;;
	esac
	[ "$QUICK" = 1 ] && bytes=$((4 << 20)) max=5000
	n=$((bytes / $2))
	[ $n -gt $max ] && n=$max
	[ $n -lt 64 ] && n=64
	echo $n
}

# ---- devices ---------------------------------------------------------------

declare -A SRV_PRE CLI_ADDR DEVARGS_S DEVARGS_C
# Every netdev of the benchmark gets MTU 9000: a 4096-byte path MTU, as
# RoCE is deployed (the local paths ignore it; rxe and the wire use it).
MTU=9000
setup_urdma() {
	ip link set veth0 mtu $MTU && ip link set veth1 mtu $MTU || return 1
	wait_gid_v4 urdma0 || { say "urdma0 has no IPv4 GID"; return 1; }
	DEVARGS_S[urdma/local]="-d urdma0 -x $GIDIDX"
	DEVARGS_C[urdma/local]="-d urdma0 -x $GIDIDX"
	CLI_ADDR[urdma/local]=127.0.0.1
}
setup_rxe() {
	rdma link add rxe0 type rxe netdev veth1 || return 1
	wait_gid_v4 rxe0 || { say "rxe0 has no IPv4 GID"; return 1; }
	DEVARGS_S[rxe/local]="-d rxe0 -x $GIDIDX"
	DEVARGS_C[rxe/local]="-d rxe0 -x $GIDIDX"
	CLI_ADDR[rxe/local]=127.0.0.1
}
setup_siw() {
	[ -n "${URDMA_SIW_KO:-}" ] || { say "no URDMA_SIW_KO: siw left out"; return 1; }
	modprobe libcrc32c && insmod "$URDMA_SIW_KO" || return 1
	ip link add veth2 type veth peer name veth3 &&
		ip link set veth2 mtu $MTU && ip link set veth3 mtu $MTU &&
		ip addr add 10.78.0.1/24 dev veth2 &&
		ip link set veth2 up && ip link set veth3 up &&
		rdma link add siw0 type siw netdev veth2 || return 1
	DEVARGS_S[siw/local]="-d siw0 -R"
	DEVARGS_C[siw/local]="-d siw0 -R"
	CLI_ADDR[siw/local]=10.78.0.1
}
setup_wire() {
	wire_up "$MTU" || return 1
	DEVARGS_S[urdma/wire]="-d urdma_w1 -x $GW1"
	SRV_PRE[urdma/wire]="ip netns exec wire"
	DEVARGS_C[urdma/wire]="-d urdma_w0 -x $GW0"
	CLI_ADDR[urdma/wire]=10.79.0.2
}

# ---- one perftest run --------------------------------------------------------

# perf KEY TOOL SIZE QPS ITERS: runs TOOL on KEY (dev/path), emits a record
# whose test is TOOL without "ib_" (PERF_TEST overrides it, e.g. "rate").
perf() {
	local key=$1 tool=$2 size=$3 qps=$4 iters=$5 args log row kind rec
	local dev=${key%/*} path=${key#*/} srv cli test=${PERF_TEST:-${2#ib_}}
	log=$LOGS/${dev}-${path}-${test}-${size}-q${qps}
	kind=bw
	[[ $tool == *_lat ]] && kind=lat
	local kdev=${DEVARGS_C[$key]#-d } k0=0 k1
	kdev=/sys/class/infiniband/${kdev%% *}/ports/1/hw_counters/kicks
	local fails=0
	for _ in 1 2 3 4 5; do
		[ -r "$kdev" ] && read -r k0 <"$kdev"
		row=
		PORT=$((PORT + 1))
		args=(-p "$PORT" -F -n "$iters")
		[[ $tool == ib_atomic_* ]] || args+=(-s "$size")
		[ "$qps" -gt 1 ] && args+=(-q "$qps")
		# shellcheck disable=SC2206 # PERF_EXTRA: more options, a word list
		args+=(${PERF_EXTRA:-})
		# shellcheck disable=SC2206 # word lists
		srv=(${SRV_PRE[$key]:-} "${BTMO[@]}" "$tool" ${DEVARGS_S[$key]} "${args[@]}")
		# shellcheck disable=SC2206
		cli=("${BTMO[@]}" "$tool" ${DEVARGS_C[$key]} "${args[@]}" "${CLI_ADDR[$key]}")
		pair_run "$log" "$PORT" ${#srv[@]} "${srv[@]}" "${cli[@]}"
		# perftest 4.5's -R race with itself (tests/guest/t_perftest.sh);
		# on iWARP (siw) the rejection carries ECONNREFUSED instead.
		grep -q 'RDMA_CM_EVENT_REJECTED' "$log.client" && continue
		row=$(grep -E "^[[:space:]]*${size}[[:space:]]+[0-9]+[[:space:]]+([0-9]|inf|-?nan)" "$log.client" | tail -n 1)
		# Under TCG perftest's CPU-frequency calibration sometimes
		# fails, and its figures come out inf, nan or 0: measure again.
		# A run that failed otherwise gets one more try (siw's
		# control QP once flushed mid-handshake); the report counts
		# the tries.
		if [ "$PAIR_SRC" != 0 ] || [ "$PAIR_CRC" != 0 ] || [ -z "$row" ]; then
			fails=$((fails + 1))
			[ $fails -lt 2 ] && continue
			break
		fi
		# shellcheck disable=SC2086
		set -- $row
		[[ $row == *inf* || $row == *nan* ]] ||
			{ [ $kind = bw ] && [ "$4" = 0.00 ]; } || break
	done
	if [ "$PAIR_SRC" != 0 ] || [ "$PAIR_CRC" != 0 ] || [ -z "$row" ]; then
		mkdir -p "$TOP/build/bench/failed"
		cp "$log".* "$TOP/build/bench/failed/"
		say "FAILED: $key $tool -s $size -q $qps (server $PAIR_SRC, client $PAIR_CRC; build/bench/failed/${log##*/}.*)"
		[ -n "${PERF_QUIET:-}" ] && return 1
		FAILS=$((FAILS + 1))
		emit "{\"dev\":\"$dev\",\"path\":\"$path\",\"test\":\"$test\",\"size\":$size,\"qps\":$qps,\"error\":true}"
		return 1
	fi
	# bw: #bytes #iterations peak avg[MiB/s] rate[Mpps]
	# lat: #bytes #iterations t_min t_max t_typical t_avg ...  (usec)
	# shellcheck disable=SC2086
	set -- $row
	if [ $kind = bw ]; then
		rec="\"mibps\":$4,\"mpps\":$5"
		PERF_VAL=$4
	else
		rec="\"usec\":$5,\"usec_avg\":$6"
		PERF_VAL=$5
	fi
	[ $fails -gt 0 ] && rec+=",\"failed_tries\":$fails"
	rec=${rec//inf/null}
	rec=${rec//-nan/null}
	rec=${rec//nan/null}
	# urdma: the engine's wake-ups asked for by posters (system calls).
	if [ -r "$kdev" ]; then
		read -r k1 <"$kdev"
		rec+=",\"kicks\":$((k1 - k0))"
	fi
	PERF_LAST="{\"dev\":\"$dev\",\"path\":\"$path\",\"test\":\"$test\",\"size\":$size,\"qps\":$qps,\"iters\":$iters,$rec}"
	say "$key $test $size B${qps:+ x$qps QP}: $rec"
	[ -n "${PERF_QUIET:-}" ] || emit "$PERF_LAST"
}

# perf3 KEY TOOL SIZE QPS ITERS: the median of three runs, for the figures
# the targets use: one run in this guest varies by tens of percent with
# where the scheduler puts the engine and the pollers.  (The quick smoke
# run: one run.)
perf3() {
	local lines=() vals=() i m runs=3
	[ "$QUICK" = 1 ] && runs=1
	for ((i = 0; i < runs; i++)); do
		PERF_QUIET=1 perf "$@" || continue
		lines+=("$PERF_LAST")
		vals+=("$PERF_VAL $((${#lines[@]} - 1))")
	done
	if [ ${#lines[@]} -eq 0 ]; then
		perf "$@"	# records the failure
		return
	fi
	m=$(printf '%s\n' "${vals[@]}" | sort -g | sed -n "$(( (${#vals[@]} + 1) / 2 ))p")
	emit "${lines[${m#* }]%\}},\"runs\":${#lines[@]}}"
}

# matrix KEY: the bandwidth, latency and message-rate tests on one device.
matrix() {
	local key=$1 t s q run near
	for t in write_bw read_bw send_bw; do
		for s in "${BW_SIZES[@]}"; do
			run=perf
			[ "$s" = 65536 ] && run=perf3
			# The memcpy target's limit, measured beside its runs.
			near=:
			[ "$key/$t/$s" = urdma/local/write_bw/65536 ] && near=beside
			$near
			$run "$key" "ib_$t" "$s" 1 "$(bw_iters "$key" "$s")"
			$near
		done
	done
	for t in write_lat send_lat read_lat atomic_lat; do
		[[ $key == siw/* && $t == atomic_* ]] && continue	# siw: no atomics
		if [ $t = atomic_lat ]; then
			perf3 "$key" ib_atomic_lat 8 1 "$LAT_ITERS"
			continue
		fi
		for s in "${LAT_SIZES[@]}"; do
			run=perf
			[ "$s" = 2 ] && run=perf3
			$run "$key" "ib_$t" "$s" 1 "$LAT_ITERS"
		done
	done
	for q in "${RATE_QPS[@]}"; do
		PERF_TEST=rate perf3 "$key" ib_write_bw 64 "$q" "$RATE_ITERS"
	done
}

# tcp_wire: the wire path's own peers on the same veth pair, between the
# same two namespaces (qperf, its server in "wire"): a TCP stream of 64 KiB
# messages, and TCP and UDP ping-pongs of 2 bytes (one-way latency, as
# perftest's).  Records: dev tcp or udp, path wire, test stream or
# pingpong.
tcp_wire() {
	local spid proto size t out v secs=5 port=19766
	[ "$QUICK" = 1 ] && secs=2
	ip netns exec wire qperf -lp $port >"$LOGS/qperf-wire.server" 2>&1 &
	spid=$!
	if ! wait_for 30 tcp_listening $port "$spid"; then
		say "tcp/wire: the qperf server did not listen"
		FAILS=$((FAILS + 1))
		return
	fi
	for t in tcp_bw tcp_lat udp_lat; do
		proto=${t%_*} size=2
		[ $t = tcp_bw ] && size=65536
		out=$(timeout 60 qperf 10.79.0.2 -lp $port -t $secs -m $size $t 2>&1)
		if ! v=$(qperf_val "$out"); then
			say "tcp/wire: FAILED: qperf $t: $(tr -s '\n' ' ' <<<"$out")"
			FAILS=$((FAILS + 1))
		elif [ $t = tcp_bw ]; then
			emit "{\"dev\":\"$proto\",\"path\":\"wire\",\"test\":\"stream\",\"size\":65536,\"mbps\":$v}"
		else
			emit "{\"dev\":\"$proto\",\"path\":\"wire\",\"test\":\"pingpong\",\"size\":2,\"usec\":$v}"
		fi
		say "tcp/wire: qperf $t: ${v:-failed}"
	done
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}

# engine_idle_cpu: the engine threads' CPU use, in percent of one CPU, over
# 5 s that start 1 s after the last work (well past the polling window).
engine_idle_cpu() {
	local pids tck t0=0 t1=0 p f
	pids=$(pgrep '^urdma/')
	[ -n "$pids" ] || return 1
	tck=$(getconf CLK_TCK)
	sleep 1
	for p in $pids; do
		read -ra f <"/proc/$p/stat"
		t0=$((t0 + f[13] + f[14]))
	done
	sleep 5
	for p in $pids; do
		read -ra f <"/proc/$p/stat"
		t1=$((t1 + f[13] + f[14]))
	done
	emit "{\"dev\":\"urdma\",\"path\":\"idle\",\"test\":\"engine_cpu\",\"threads\":$(wc -w <<<"$pids"),\"cpu_pct\":$(awk -v d=$((t1 - t0)) -v t="$tck" 'BEGIN { printf "%.2f", 100 * d / (5 * t) }')}"
	say "engine CPU while idle: $(tail -n 1 "$OUT")"
}

# ---- the run -------------------------------------------------------------------

# crc_rate ALG: MB/s of the kernel's CRC-32 driver ALG over 4 KiB buffers
# (tcrypt's hash speed test).  The wire path computes the ICRC of every
# packet with crc32_le(), which is what crc32-generic runs; rxe's
# crypto_shash("crc32") gets crc32-pclmul on x86.
crc_rate() {
	modprobe tcrypt mode=300 alg="$1" sec=1 2>/dev/null
	dmesg | awk -v a="($1)" '
		/tcrypt: testing speed of/ { on = index($0, a) > 0; next }
		on && /4096 byte blocks, 4096 bytes per update/ { v = $(NF - 1) }
		END { if (v) printf "%.1f", v / 1e6 }'
}
# limit_rec [PATH]: urdma_limits' records, marked as the guest's limits
# (path "local" unless given).
limit_rec() { sed "s/^{/{\"dev\":\"limit\",\"path\":\"${1:-local}\",/" >>"$OUT"; }
# beside: 64 KiB memcpy, just before and after urdma's 64 KiB write_bw runs
# (path "beside"): the memcpy target sets urdma against the copy rate of
# the same minutes of the boot (docs/performance.md).
beside() { "$LIMITS" memcpy 65536 | limit_rec beside; }
# limits [again]: the guest's own limits.  Measured before and after the
# matrix; the report takes the best of the two (a run right after boot, or
# one that a background task disturbed, reads low).  The quick smoke run
# measures the CRC rate (tcrypt, about 25 s a driver) only the first time,
# and only crc32-generic's, the one urdma's ICRC runs.
limits() {
	say "limits: memcpy, shared-memory ping-pong, a system call"
	for s in "${BW_SIZES[@]}"; do
		"$LIMITS" memcpy "$s" | limit_rec
	done
	"$LIMITS" pingpong "${LAT_SIZES[@]}" -n $((LAT_ITERS * 20)) | limit_rec
	"$LIMITS" syscall 0 -n $((LAT_ITERS * 100)) | limit_rec
	[ "$QUICK" = 1 ] && [ "${1:-}" = again ] && return
	say "limits: the ICRC's CRC-32 (tcrypt)"
	local algs=(crc32-generic crc32-pclmul)
	[ "$QUICK" = 1 ] && algs=(crc32-generic)
	for alg in "${algs[@]}"; do
		modprobe "$alg" 2>/dev/null
		v=$(crc_rate "$alg")
		if [ -n "$v" ]; then
			emit "{\"dev\":\"limit\",\"path\":\"local\",\"test\":\"crc32\",\"size\":4096,\"driver\":\"$alg\",\"mbps\":$v}"
		else
			say "tcrypt gave no figure for $alg"
		fi
	done
}
limits
emit "{\"meta\":true,\"kernel\":\"$(uname -r)\",\"cpus\":$(nproc),\"cpu\":\"$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)\",\"quick\":$QUICK,\"commit\":\"${URDMA_BENCH_COMMIT:-unknown}\",\"date\":\"$(date -u +%FT%TZ)\",\"mtu\":$MTU,\"copy_flags\":\"$(grep -m1 -owE 'erms|fsrm' /proc/cpuinfo | sort -u | tr '\n' ' ')\"}"

KEYS=()
for key in urdma/local rxe/local siw/local urdma/wire; do
	setup=setup_${key%/*}
	[ "$key" = urdma/wire ] && setup=setup_wire
	if $setup; then
		KEYS+=("$key")
	else
		say "$key: setup failed or left out"
		FAILS=$((FAILS + 1))
	fi
done
for key in "${KEYS[@]}"; do
	say "== $key"
	matrix "$key"
done
if [[ " ${KEYS[*]} " == *" urdma/wire "* ]]; then
	say "== TCP and UDP on the wire path's veth pair"
	tcp_wire
fi
say "== urdma/local: $MANY_QPS QPs against 1"
# (One QP: the matrix's run.)  perftest wants at least 16 messages per QP.
n=$(bw_iters urdma/local 65536)
perf3 urdma/local ib_write_bw 65536 "$MANY_QPS" $((n / MANY_QPS > 16 ? n / MANY_QPS : 16))
perf urdma/local ib_write_bw 65536 4 "$n"
# XRC and ODP beside RC: the same 64 KiB WRITEs through an XRC_SEND QP
# (perftest -c XRC), and between ODP MRs once they are warm (--odp
# --perform_warm_up: the target is ODP on pages already faulted in).
for variant in "write_bw_xrc:-c XRC" "write_bw_odp:--odp --perform_warm_up"; do
	say "== urdma with perftest ${variant#*:}"
	for key in urdma/local urdma/wire; do
		[[ " ${KEYS[*]} " == *" $key "* ]] || continue
		PERF_TEST=${variant%%:*} PERF_EXTRA=${variant#*:} \
			perf3 "$key" ib_write_bw 65536 1 "$(bw_iters "$key" 65536)"
	done
done
engine_idle_cpu || { say "no engine threads found"; FAILS=$((FAILS + 1)); }

# reload_urdma [PARAMETER...]: urdma0 (and only it) on a module loaded
# again with these parameters.
reload_urdma() {
	rdma link del urdma0 2>/dev/null
	rmmod urdma && modprobe urdma "$@" &&
		rdma link add urdma0 type urdma netdev veth0 && setup_urdma
}

# Engine threads: urdma again with engines=2 (a module parameter), on the
# local path: the message rate and 64 KiB with 4 QPs, which spread over
# both threads.
say "== urdma/local with engines=2"
ip netns exec wire rdma link del urdma_w1 2>/dev/null
rdma link del urdma_w0 2>/dev/null
if reload_urdma engines=2; then
	DEVARGS_S[urdma/engines2]=${DEVARGS_S[urdma/local]}
	DEVARGS_C[urdma/engines2]=${DEVARGS_C[urdma/local]}
	CLI_ADDR[urdma/engines2]=127.0.0.1
	for q in "${RATE_QPS[@]}"; do
		PERF_TEST=rate perf urdma/engines2 ib_write_bw 64 "$q" "$RATE_ITERS"
	done
	perf urdma/engines2 ib_write_bw 65536 4 "$(bw_iters urdma/engines2 65536)"
else
	say "could not reload urdma with engines=2"
	FAILS=$((FAILS + 1))
fi
# The clients run on urdma as loaded by default (one engine thread per
# device).  Left with engines=2, NVMe-oF's QD16 made 10,764 IOPS instead
# of 17,081 (bench/clients.sh alone, in one boot each): a second engine
# thread on two vCPUs takes them from fio and nvmet's threads.
if ! reload_urdma; then
	say "could not reload urdma with its defaults"
	FAILS=$((FAILS + 1))
fi
# Real clients, and their TCP transports (bench/clients.sh).
say "== clients"
"$HERE/clients.sh" "$OUT" || FAILS=$((FAILS + 1))
limits again
say "done: $(grep -c . "$OUT") records, $FAILS failed runs"
[ $FAILS -eq 0 ]
