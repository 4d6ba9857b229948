#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Two-host interoperability suite.  This guest's side is urdma0 or rxe0 on
# its NIC; the other guest runs the same script with its own KIND, and the
# two walk the same list of tests in step: the server side of each test
# listens on its own TCP port, the client side retries until it connects.
# Each side prints its own TAP line per test.  Runs in a guest of
# scripts/urdma-2host (URDMA_ROLE, URDMA_NIC, URDMA_PEER_IP):
#   t_suite.sh KIND [TEST...]     KIND: urdma or rxe
# Tests: rc uc ud srq (ibv_*_pingpong), rc6 ud6 (the same over IPv6: the
# NICs' link-local GIDs), write_bw read_bw send_bw atomic_bw
# write_lat read_lat send_lat atomic_lat (perftest, TCP exchange),
# write_bw_odp read_bw_odp send_bw_odp (the same, urdma's MRs on demand),
# write_bw_R send_lat_R (perftest -R: rdma_cm, GSI over the wire), rping,
# xfer (urdma_xfer: 16 MiB of WRITE, ATOMIC_WRITE, READ, FETCH_ADD and
# SEND over rdma_cm, every byte and fetched value checked, and an rxe
# client's retries counted; FLUSH too when both sides are urdma, as
# URDMA_TWOHOST_PEER_KIND says), nvmeof (the kernel's NVMe-oF target and
# host, 8 MiB written through the fabric and found on the target), nfs
# (NFS over RDMA: 8 MiB written by the client, found in the server's
# export), qperf (rc_lat, rc_bw, rc_rdma_write_bw, rc_rdma_read_bw over
# rdma_cm), fabric (fi_pingpong -c: verbs msg, verbs;ofi_rxm rdm), ucx,
# mpi (Open MPI over UCX, a rank on each host, launched through dropbear).
# Asked for by make bench (bench/twohost.sh), in no pair of tests.list:
# rate (ib_write_bw -s 64 -q 4, the message rate) and tcp (qperf's tcp_bw
# of 64 KiB messages, and tcp_lat and udp_lat of 2 bytes: the same two
# guests' sockets).  URDMA_TWOHOST_BW_SIZE and URDMA_TWOHOST_LAT_SIZE set
# perftest's sizes (65536 and 64), URDMA_TWOHOST_LAT_ITERS and
# URDMA_TWOHOST_RATE_ITERS the iterations of the latency tests and of rate
# (URDMA_TWOHOST_ITERS, as every other test).
KIND=${1:?KIND: urdma or rxe}
shift
case $KIND in urdma | rxe) ;; *) echo "bad KIND $KIND" >&2; exit 2 ;; esac
# shellcheck disable=SC2034 # read by lib.sh
URDMA_DEV=${KIND}0
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# NVMe-oF moves 8 MiB each way over the TCG guests' wire (about 10 MB/s).
NVMF_MIB=8
# shellcheck source=../guest/nvmeof.sh
. "$(dirname "$0")/../guest/nvmeof.sh"
# shellcheck source=../guest/nfs.sh
. "$(dirname "$0")/../guest/nfs.sh"
# shellcheck source=../guest/smb.sh
. "$(dirname "$0")/../guest/smb.sh"
# shellcheck source=../guest/mpi.sh
. "$(dirname "$0")/../guest/mpi.sh"
# shellcheck disable=SC2034 # read by lib.sh
TAP_PREFIX="twohost ${URDMA_TWOHOST_PAIR:+$URDMA_TWOHOST_PAIR: }$KIND ($ROLE)"
ITERS=${URDMA_TWOHOST_ITERS:-100}
BW_SIZE=${URDMA_TWOHOST_BW_SIZE:-65536}
LAT_SIZE=${URDMA_TWOHOST_LAT_SIZE:-64}
LAT_ITERS=${URDMA_TWOHOST_LAT_ITERS:-$ITERS}
RATE_ITERS=${URDMA_TWOHOST_RATE_ITERS:-$ITERS}
RESULTS=${URDMA_RESULTS:-/tmp}/twohost-$KIND-$ROLE
mkdir -p "$RESULTS"
# Every test, in order: tests.list, the one list of them.
mapfile -t ALL < <(awk '!/^#/ && NF { print $1 }' "$(dirname "$0")/tests.list")
TESTS=("${@:-${ALL[@]}}")

if [ "$KIND" = rxe ]; then
	rdma link del urdma0 2>/dev/null || true
	check "rdma link add $DEV type rxe netdev $NIC" rdma link add "$DEV" type rxe netdev "$NIC"
fi
twohost_ready

# comp_retries: rxe's completer retries (a timeout, or an answer that came
# before the READ responses it follows; 0 on urdma, which has no such file).
comp_retries() {
	cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/completer_retry_err" \
		2>/dev/null || echo 0
}
# xfer_in_order N: the xfer client on rxe retried N times.  Its 86 rounds
# each post a READ, then a FETCH_ADD: an atomic ACK sent before the READ's
# responses made rxe retry the READ in about every round.  A spurious
# timeout under TCG may still cost one.
xfer_in_order() {
	if [ "$1" -le 8 ]; then
		tap_ok "xfer: the server's answers came in order ($1 completer retries)"
	else
		tap_fail "xfer: the server's answers came in order" \
			"$1 completer retries in 86 rounds of READ then FETCH_ADD"
	fi
}

# hung_state: what a side that timed out leaves behind, for its TAP line.
hung_state() {
	echo "--- rdma res show qp"
	rdma res show qp 2>&1 | grep -v " type GSI\| type SMI" | head -n 8
	echo "--- $DEV hw counters (non-zero)"
	grep -H . /sys/class/infiniband/"$DEV"/ports/1/hw_counters/* 2>/dev/null |
		grep -v ':0$' | sed 's|.*/||' | tr '\n' ' '
	echo
	echo "--- dmesg"
	dmesg | tail -n 8
}

# perftest -R (Debian 12's perftest 4.5) makes two rdma_cm connections: a
# control one, then the data one, for which the server listens anew on the
# same port.  A client whose data REQ comes before that listener is
# rejected (invalid service ID), retries on the cm_ids it has just
# destroyed (rdma_cm_client_connection()) and crashes in
# rdma_resolve_addr(), while the server waits for a data connection that
# never comes.  tests/guest/t_perftest.sh runs such a test again; here the
# two sides agree on that over a TCP side channel, the gate (PORT + 1000):
# the server opens it once 'rdma res show cm_id' shows its listener, and
# the client connects to it before it starts.  When its run ends the
# client says "again" (it lost perftest's race: both sides try once more,
# on the next port) or "done".
RCM_TRIES=5
listening() {
	rdma res show cm_id 2>/dev/null | grep -qE "state LISTEN .*:$1( |\$)"
}
# shellcheck disable=SC2317 # runs through wait_for
listening_or_gone() { listening "$1" || ! kill -0 "$2" 2>/dev/null; }
# gate_serve PORT: accept the client on PORT + 1000; print what it says.
gate_serve() {
	timeout 200 python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", int(sys.argv[1])))
s.listen(1)
c, _ = s.accept()
sys.stdout.write(c.makefile().readline())' $(($1 + 1000))
}
# gate_connect PORT: fd 3 is connected to the server's gate, within 90 s.
gate_connect() {
	local t=900
	while [ $t -gt 0 ]; do
		{ exec 3<>"/dev/tcp/$PEER/$(($1 + 1000))"; } 2>/dev/null && return 0
		sleep 0.1
		t=$((t - 1))
	done
	return 1
}

# run_server LOG PORT CMD...: the server's run; with PORT, behind a gate.
# Sets AGAIN when the client asked for another try.
run_server() {
	local log=$1 port=$2 pid gate='' verdict=$1.verdict rc=0
	shift 2
	AGAIN=0
	if [ -z "$port" ]; then
		timeout -k 5 150 stdbuf -oL -eL "$@" >"$log" 2>&1 || rc=$?
		return $rc
	fi
	: >"$verdict"
	timeout -k 5 150 stdbuf -oL -eL "$@" >"$log" 2>&1 &
	pid=$!
	wait_for 60 listening_or_gone "$port" "$pid"
	if listening "$port"; then
		gate_serve "$port" >"$verdict" &
		gate=$!
	fi
	while kill -0 "$pid" 2>/dev/null && ! grep -q again "$verdict"; do
		sleep 0.2
	done
	grep -q again "$verdict" && kill "$pid" 2>/dev/null
	wait "$pid" || rc=$?
	if [ -n "$gate" ]; then
		wait_for 30 test -s "$verdict"
		kill "$gate" 2>/dev/null
		wait "$gate" 2>/dev/null
	fi
	grep -q again "$verdict" && AGAIN=1
	return $rc
}

# run_client LOG PORT CMD...: the client's run, retried for up to 90 s
# while the server is not up yet; with PORT, through the gate.  What the
# earlier retries printed is kept in LOG.tries.  Sets AGAIN when it lost
# perftest's race and the caller may try again.
run_client() {
	local log=$1 port=$2 rc t=90 gated=0
	shift 2
	AGAIN=0
	if [ -n "$port" ]; then
		gate_connect "$port" && gated=1 ||
			echo "# the server's gate (port $((port + 1000))) did not open; trying anyway"
	fi
	while :; do
		rc=0
		timeout -k 5 120 stdbuf -oL -eL "$@" >"$log" 2>&1 || rc=$?
		[ "$rc" = 0 ] && break
		if [ -n "$port" ] && perftest_lost_race "$log"; then
			AGAIN=1
			break
		fi
		[ $t -le 0 ] && break
		grep -qiE "couldn't connect|connection refused|unable to|failed to connect|rdma_connect|reject|cma event RDMA_CM_EVENT_(ADDR|ROUTE)_ERROR" "$log" || break
		{ echo "--- retry: exit $rc"; tail -n 4 "$log"; } >>"$log.tries"
		sleep 2
		t=$((t - 2))
	done
	if [ $gated = 1 ]; then
		{ [ $AGAIN = 1 ] && echo again || echo "done"; } >&3 2>/dev/null
		exec 3>&-
	fi
	return $rc
}

# side NAME OK_REGEX SERVER_CMD... -- CLIENT_ARGS...: run this side of a test.
# With GATE set (perftest -R, whose -p GATE SERVER_CMD holds), both sides
# try up to RCM_TRIES times in step (see above).  The tools' output is
# line-buffered, so that a side killed by its timeout still shows how far
# it got.
side() {
	local name=$1 okre=$2 log=$RESULTS/$1 rc=0 srv=() cli=() try=1 port=$GATE i
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	: >"$log.tries"
	while :; do
		rc=0
		if [ "$ROLE" = server ]; then
			run_server "$log" "$port" "${srv[@]}" || rc=$?
		else
			run_client "$log" "$port" "${srv[@]}" "${cli[@]}" || rc=$?
		fi
		[ "$AGAIN" = 1 ] && [ $try -lt $RCM_TRIES ] || break
		echo "# $name, try $try: perftest's own race (see t_suite.sh); again"
		{ echo "--- try $try: perftest's race"; tail -n 4 "$log"; } >>"$log.tries"
		try=$((try + 1))
		# The next try on the next free port: -p's value goes up by 40.
		for i in "${!srv[@]}"; do
			[ "${srv[$i]}" = "$port" ] && [ "${srv[$((i - 1))]}" = -p ] &&
				srv[i]=$((port + 40))
		done
		port=$((port + 40))
	done
	if [ "$rc" = 0 ] && grep -qE "$okre" "$log"; then
		tap_ok "$name"
		grep -E "$okre" "$log" | head -n 2 | sed 's/^/# /'
	elif [ "$rc" = 124 ]; then
		tap_fail "$name" "timed out: ${srv[*]}" "$(tail -n 15 "$log")" \
			"$(hung_state)" "$(tail -n 10 "$log.tries")"
	else
		tap_fail "$name" "exit $rc: ${srv[*]}" "$(tail -n 15 "$log")" \
			"$(tail -n 10 "$log.tries")"
	fi
}

# NVMe over Fabrics (tests/guest/nvmeof.sh): the server exports a RAM disk
# with the kernel's target, the client connects the kernel's host to it,
# writes the pattern and reads it back; the server then finds the pattern
# on its RAM disk.
nvmeof_server() {
	local name="NVMe-oF target" out
	if ! out=$(nvmf_modules) || ! out=$(nvmet_up "$MYIP" 2>&1); then
		tap_fail "$name exports a RAM disk on $MYIP" "$out"
		nvmet_down
		return
	fi
	nvmf_pattern /tmp/nvmf.data
	if ! wait_for 120 rc_qps_at_least 2; then
		tap_fail "$name: a host connects" "$(rdma res show qp 2>&1)"
	elif ! wait_for 150 rc_qps_none; then
		tap_fail "$name: the host disconnects" "$(rdma res show qp 2>&1)"
	elif ! cmp /tmp/nvmf.data <(head -c $((NVMF_MIB << 20)) /dev/ram0); then
		tap_fail "$name: the RAM disk holds what the host wrote"
	else
		tap_ok "$name: served a host, whose $NVMF_MIB MiB are on the RAM disk"
	fi
	nvmet_down
}
# shellcheck disable=SC2317 # runs through wait_for
rc_qps_at_least() { [ "$(rc_qps "$DEV")" -ge "$1" ]; }
# shellcheck disable=SC2317 # runs through wait_for
rc_qps_none() { [ "$(rc_qps "$DEV")" = 0 ]; }
nvmeof_client() {
	local name="NVMe-oF host" out
	if ! out=$(nvmf_modules); then
		tap_fail "$name: the modules load" "$out"
		return
	fi
	nvmf_pattern /tmp/nvmf.data
	# The target may not be up yet.
	if ! wait_for 90 nvmf_connect "$PEER"; then
		tap_fail "$name connects to $PEER" "$(dmesg | tail -n 8)"
		return
	fi
	tap_ok "$name connects to $PEER ($NVMF_CTRL)"
	nvmf_data "$name" "$NVMF_CTRL" /tmp/nvmf.data
	check "$name disconnects" nvme_disconnect "$NVMF_CTRL"
	wait_for 20 rc_qps_none &&
		tap_ok "$name: no RC QP is left behind" ||
		tap_fail "$name: no RC QP is left behind" "$(rdma res show qp 2>&1)"
}

# Network file systems over RDMA: NFS (nfsd exports a tmpfs on RDMA port
# 20049; the client mounts it v4.2, proto=rdma) and SMB Direct (ksmbd
# shares a tmpfs; cifs mounts it with rdma, on the debug kernel, the one
# built with SMB Direct).  The client writes the pattern, reads it back
# after dropping its page cache and leaves a marker; the server then finds
# the pattern in its directory.  8 MiB over the TCG guests' wire.
# fs_server NAME DIR UP DOWN: the server's side.
fs_server() {
	local name=$1 dir=$2 up=$3 down=$4 out
	if ! out=$($up 2>&1); then
		tap_fail "$name shares a tmpfs over RDMA" "$out"
		$down
		return
	fi
	nvmf_pattern /tmp/fs.data
	if ! wait_for 150 test -e "$dir/client-done"; then
		tap_fail "$name: a client writes its data" "$(rdma res show qp 2>&1)"
	elif ! cmp /tmp/fs.data "$dir/data"; then
		tap_fail "$name: the share holds what the client wrote"
	else
		tap_ok "$name: served a client over RDMA, whose $NVMF_MIB MiB are in the share"
	fi
	# The client unmounts before the server goes.
	wait_for 60 rc_qps_none
	$down
}
# fs_client NAME MOUNTS_RE MOUNT_ARGS...: the client's side; MOUNTS_RE
# matches the mount's line in /proc/mounts after the mount point.
fs_client() {
	local name=$1 re=$2 mnt=/tmp/fs-mnt
	shift 2
	nvmf_pattern /tmp/fs.data
	mkdir -p "$mnt"
	# The server may not be up yet.
	if ! wait_for 90 timeout 30 mount "$@" "$mnt"; then
		tap_fail "$name mounts $PEER's share over RDMA" "$(dmesg | tail -n 8)"
		return
	fi
	grep -qE " $mnt $re" /proc/mounts && [ "$(rc_qps "$DEV")" -ge 1 ] &&
		tap_ok "$name mounts $PEER's share over RDMA, on $DEV's RC QPs" ||
		tap_fail "$name mounts $PEER's share over RDMA, on $DEV's RC QPs" \
			"$(grep " $mnt " /proc/mounts)" "$(rdma res show qp)"
	check "$name: $NVMF_MIB MiB written, read back equal (page cache dropped)" \
		fs_copy /tmp/fs.data "$mnt/data"
	touch "$mnt/client-done"
	check "$name unmounts" timeout 60 umount "$mnt"
}

# Open MPI over UCX, a rank in each guest.  mpirun's rsh launcher starts
# the server's orted through an sshd there (dropbear, on this test's port
# of the server's address, root by key only, no forwarding); the client
# sends its public key over the gate (port + 1000) and runs mpirun with a
# rank on each host.  urdma_mpi_check checks the data; on urdma the
# server's WQE counter shows its rank's traffic went through the device.
# The client ends the test with a verdict in the server's /tmp/mpi.done.
MPI_DIR=/tmp/mpi
mpi_server() {
	local port=$1 name="Open MPI: a rank served by this host's sshd" key pid before taken
	mkdir -p "$MPI_DIR" /root/.ssh
	chmod 700 /root/.ssh
	rm -f /tmp/mpi.done
	before=$(wqes "$DEV")
	dropbearkey -t ed25519 -f "$MPI_DIR/host" >/dev/null 2>&1
	dropbear -F -E -s -j -k -p "$MYIP:$port" -r "$MPI_DIR/host" \
		>"$RESULTS/dropbear" 2>&1 &
	pid=$!
	key=$(gate_serve "$port")
	if [[ $key != ssh-ed25519\ * ]]; then
		tap_fail "$name" "no key from the client: '$key'"
	else
		echo "$key" >/root/.ssh/authorized_keys
		chmod 600 /root/.ssh/authorized_keys
		wait_for 200 test -s /tmp/mpi.done
		taken=$(($(wqes "$DEV") - before))
		if [ ! -s /tmp/mpi.done ]; then
			tap_fail "$name" "no verdict from the client" "$(tail -n 5 "$RESULTS/dropbear")"
		elif [ "$(cat /tmp/mpi.done)" != OK ]; then
			tap_fail "$name" "the client's mpirun: $(cat /tmp/mpi.done)"
		elif [ "$KIND" = urdma ] && [ "$taken" -lt 20 ]; then
			tap_fail "$name" "$DEV took $taken WQEs"
		else
			tap_ok "$name"
			[ "$KIND" = urdma ] && echo "# $taken WQEs on $DEV"
		fi
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
mpi_client() {
	local port=$1 name="Open MPI over UCX, a rank on each host: point-to-point and allreduce data right"
	local agent log=$RESULTS/mpi rc=0 before taken verdict
	mkdir -p "$MPI_DIR"
	dropbearkey -t ed25519 -f "$MPI_DIR/id" >/dev/null 2>&1
	if ! gate_connect "$port"; then
		tap_fail "$name" "the server's gate (port $((port + 1000))) did not open"
		return
	fi
	dropbearkey -y -f "$MPI_DIR/id" | grep '^ssh-' >&3
	exec 3>&-
	# -y: the server's host key is new on every run.
	agent="dbclient -y -i $MPI_DIR/id -p $port"
	# shellcheck disable=SC2086 # the agent is a command line
	if ! wait_for 60 $agent "$PEER" true; then
		tap_fail "$name" "ssh to $PEER: $($agent "$PEER" true 2>&1 | tail -n 3)"
		return
	fi
	before=$(wqes "$DEV")
	# rxe reports wc.sl 0 on a UD receive (see ucx below).
	mpirun_ucx -np 2 --host "$MYIP,$PEER" --mca plm_rsh_agent "$agent" \
		--mca oob_tcp_if_include "$NIC" -x UCX_UD_VERBS_ETH_DGID_CHECK=n \
		"$MPI_CHECK" >"$log" 2>&1 || rc=$?
	taken=$(($(wqes "$DEV") - before))
	if mpi_ran "$KIND" "$log" "$rc" "$taken"; then
		tap_ok "$name"
		verdict=OK
	else
		tap_fail "$name" "exit $rc; $DEV took $taken WQEs" \
			"$(tail -n 20 "$log")"
		verdict="exit $rc"
	fi
	$agent "$PEER" "echo '$verdict' >/tmp/mpi.done" 2>/dev/null ||
		tap_fail "$name: the verdict reaches the server"
}

port=18800
GATE=
for t in "${TESTS[@]}"; do
	port=$((port + 1))
	case $t in
	rc | uc | srq | ud | rc6 | ud6)
		# rc6, ud6: RoCEv2 over IPv6; the tools still meet over IPv4 TCP.
		prog=ibv_${t%6}_pingpong name=$prog gid=$GIDIDX
		if [[ $t == *6 ]]; then
			name+=" over IPv6"
			if ! wait_gid_ll "$DEV"; then
				tap_fail "$name" "$DEV has no link-local GID" \
					"$(grep -H . /sys/class/infiniband/"$DEV"/ports/1/gids/* 2>&1 | head)"
				continue
			fi
			gid=$GIDIDX6
			echo "# $DEV: GID $gid = $(<"/sys/class/infiniband/$DEV/ports/1/gids/$gid")"
		fi
		args=(-d "$DEV" -g "$gid" -p "$port" -n "$ITERS" -c)
		[[ $t == ud* ]] && args+=(-s 512)
		side "$name" ' iters in ' "$prog" "${args[@]}" -- "$PEER"
		;;
	*_bw | *_lat | *_R | *_xrc | *_odp)
		# _xrc: perftest over XRC (-c XRC), between urdma devices.
		# _odp: urdma's side registers ODP MRs (--odp; rxe has none),
		# so the wire meets its page faults: RNR NAKs, stalled sends.
		tool=ib_${t%_R}
		tool=${tool%_xrc}
		tool=${tool%_odp}
		args=(-d "$DEV" -x "$GIDIDX" -p "$port" -F -n)
		[[ $t == *_lat* ]] && args+=("$LAT_ITERS") || args+=("$ITERS")
		[[ $t == atomic_* ]] || args+=(-s "$([[ $t == *_bw* ]] && echo "$BW_SIZE" || echo "$LAT_SIZE")")
		[[ $t == *_R ]] && args+=(-R)
		[[ $t == *_xrc ]] && args+=(-c XRC)
		[[ $t == *_odp && $KIND == urdma ]] && args+=(--odp)
		name=$tool
		[[ $t == *_R ]] && name+=" -R"
		[[ $t == *_xrc ]] && name+=" -c XRC"
		[[ $t == *_odp ]] && name+=" (urdma: --odp)"
		okre='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+([0-9]|inf|-?nan)'
		# The passive side of a READ or atomic latency test prints no row.
		[[ $ROLE == server && $t == @(read|atomic)_lat* ]] && okre='remote address'
		GATE=
		[[ $t == *_R ]] && GATE=$port
		side "$name" "$okre" "$tool" "${args[@]}" -- "$PEER"
		GATE=
		;;
	rate)
		side "ib_write_bw -s 64 -q 4" '^[[:space:]]*64[[:space:]]+[0-9]+[[:space:]]+[0-9]' \
			ib_write_bw -d "$DEV" -x "$GIDIDX" -p "$port" -n "$RATE_ITERS" -F -s 64 -q 4 -- "$PEER"
		;;
	tcp)
		# The sockets of the same two guests: the client runs the
		# stream, then the ping-pongs, and tells the server to quit.
		if [ "$ROLE" = server ]; then
			side "qperf tcp" '^served$' sh -c "qperf -lp $port && echo served" -- unused
		else
			side "qperf tcp" '^udp_lat:' sh -c "qperf $PEER -lp $port -t 3 -m 65536 tcp_bw &&
				qperf $PEER -lp $port -t 3 -m 2 tcp_lat udp_lat quit" --
		fi
		;;
	xsrq)
		# rdma-core's XRC example: each side's XRC_SEND QP sends to
		# the other's XRC SRQ through its XRC_RECV QP.
		side ibv_xsrq_pingpong '^success$' ibv_xsrq_pingpong -d "$DEV" \
			-g "$GIDIDX" -p "$port" -n "$ITERS" -- "$PEER"
		;;
	nvmeof)
		if [ "$ROLE" = server ]; then nvmeof_server; else nvmeof_client; fi
		;;
	nfs)
		if [ "$ROLE" = server ]; then
			fs_server "NFS server" "$NFS_EXPORT" nfsd_up nfsd_down
		else
			fs_client "NFS client" 'nfs.*proto=rdma' -t nfs \
				-o vers=4.2,proto=rdma,port=20049 "$PEER:/"
		fi
		;;
	smb)
		if [ "$ROLE" = server ]; then
			fs_server "ksmbd (SMB Direct)" "$SMB_SHARE" smbd_up smbd_down
		else
			fs_client "cifs (SMB Direct)" 'cifs .*rdma' -t cifs -o "$SMB_OPTS" \
				"//$PEER/share"
		fi
		;;
	qperf)
		# The client runs qperf's RC tests over rdma_cm, then tells the
		# server to quit.  qperf checks no data.
		tests=(rc_lat rc_bw rc_rdma_write_bw rc_rdma_read_bw)
		if [ "$ROLE" = server ]; then
			side qperf '^served$' sh -c "qperf -lp $port && echo served" -- unused
		else
			side qperf '^rc_rdma_read_bw:' qperf "$PEER" -lp "$port" -cm1 -t 1 \
				"${tests[@]}" quit --
		fi
		;;
	fabric)
		# libfabric's fi_pingpong with its data check (-c): 100 messages
		# each way, all acknowledged on both sides.  rxe's max_cqe is
		# smaller than ofi_rxm's CQ unless the universe is small.
		env=()
		[ "$KIND" = rxe ] && env=(FI_UNIVERSE_SIZE=64)
		for run in "verbs msg 4096 $port" "verbs;ofi_rxm rdm 65536 $((port + 500))"; do
			read -r prov ep size p <<<"$run"
			cmd=(env "${env[@]}" fi_pingpong -p "$prov" -e "$ep" -d "$DEV"
				-c -I 100 -S "$size")
			name="fi_pingpong -p '$prov' -e $ep -S $size -c"
			if [ "$ROLE" = server ]; then
				side "$name" '^[0-9]+k? +100 +=100 ' "${cmd[@]}" -B "$p" -- unused
			else
				side "$name" '^[0-9]+k? +100 +=100 ' "${cmd[@]}" -P "$p" -- "$PEER"
			fi
		done
		;;
	rping)
		if [ "$ROLE" = server ]; then
			side rping 'ping data' rping -s -a "$MYIP" -p "$port" -C 20 -S 4096 -v -- unused
		else
			side rping 'ping data' rping -c -a "$PEER" -p "$port" -C 20 -S 4096 -v --
		fi
		;;
	xfer)
		xfer=$(cd "$(dirname "$0")/../.." && pwd)/build/tests/urdma_xfer
		# FLUSH only between urdma: rxe computes a FLUSH packet's ICRC
		# over its headers twice (docs/wire.md), so they drop each
		# other's FLUSHes.
		peer=${URDMA_TWOHOST_PEER_KIND:-urdma}
		ops=(-A -X)
		[ "$KIND" = urdma ] && [ "$peer" = urdma ] && ops+=(-L)
		if [ "$ROLE" = server ]; then
			side xfer 'OK$' "$xfer" -s "${ops[@]}" -a "$MYIP" -p "$port" -t 120 -- unused
		else
			retries=$(comp_retries)
			side xfer 'OK$' "$xfer" "${ops[@]}" -a "$PEER" -p "$port" -b 16777216 -t 120 --
			[ "$KIND" = rxe ] && xfer_in_order $(($(comp_retries) - retries))
		fi
		;;
	mpi)
		if [ "$ROLE" = server ]; then
			mpi_server "$port"
		else
			mpi_client "$port"
		fi
		;;
	topology)
		# The device's sysfs parent is its NIC's (UCX and NCCL read it).
		want=$(readlink -f "/sys/class/net/$NIC/device")
		got=$(readlink -f "/sys/class/infiniband/$DEV/device" 2>&1)
		if [ "$KIND" = rxe ]; then
			tap_skip "$DEV's device is $NIC's" "rxe gives its device no parent"
		elif [ -n "$want" ] && [ "$got" = "$want" ]; then
			tap_ok "$DEV's device is $NIC's ($got)"
		else
			tap_fail "$DEV's device is $NIC's" "want '$want', got '$got'"
		fi
		;;
	ucx)
		# rxe reports wc.sl 0 for a RoCE UD receive (urdma and mlx5 the
		# frame type), and UCX then drops every UD packet unless told
		# not to check their destination.
		env=(UCX_NET_DEVICES="$DEV:1" UCX_TLS=rc_verbs,ud_verbs,self)
		[ "$KIND" = rxe ] && env+=(UCX_UD_VERBS_ETH_DGID_CHECK=n)
		for run in "tag_lat 8 $port" "ucp_put_bw 65536 $((port + 500))"; do
			read -r test size p <<<"$run"
			cmd=(env "${env[@]}" ucx_perftest -p "$p" -t "$test" -s "$size" -n 200 -w 20)
			if [ "$ROLE" = server ]; then
				side "ucx_perftest -t $test -s $size" '^Accepted connection' "${cmd[@]}" -- unused
			else
				side "ucx_perftest -t $test -s $size" '^Final: +200 ' "${cmd[@]}" -- "$PEER"
			fi
		done
		;;
	*)
		tap_fail "unknown test $t"
		;;
	esac
done
tap_done
