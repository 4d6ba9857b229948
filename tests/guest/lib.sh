# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# TAP helpers for the guest tests.  Each test prints one line:
#   ok - NAME | not ok - NAME | ok - NAME # SKIP reason
# followed by "# " diagnostics.  Source this file; call tap_done last.

TAP_FAILED=0
TAP_PREFIX=${TAP_PREFIX:-$(basename "$0" .sh)}
DEV=${URDMA_DEV:-urdma0}
# The harness exports the mode (veth or lo); the device sits on veth0 or lo.
case ${URDMA_NETDEV:-veth} in
veth) NETDEV=veth0 ;;
*) NETDEV=$URDMA_NETDEV ;;
esac

tap_ok() { echo "ok - $TAP_PREFIX: $1"; }
tap_skip() { echo "ok - $TAP_PREFIX: $1 # SKIP $2"; }
tap_fail() {
	echo "not ok - $TAP_PREFIX: $1"
	shift
	[ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/# /'
	TAP_FAILED=1
}

# check NAME CMD...: passes when CMD exits 0.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		tap_ok "$name"
	else
		tap_fail "$name" "command: $*" "$out"
	fi
}

# check_fails NAME CMD...: passes when CMD exits non-zero and says why.
check_fails() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		tap_fail "$name" "command unexpectedly succeeded: $*" "$out"
	elif [ -z "$out" ]; then
		tap_fail "$name" "failed without an error message: $*"
	else
		tap_ok "$name"
		printf '%s\n' "$out" | sed 's/^/#   /'
	fi
}

# wait_for SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
	local t=$(( $1 * 10 ))
	shift
	while [ $t -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		t=$((t - 1))
	done
	return 1
}

# gid_v4 [DEV [PORT]]: prints the lowest index of DEV's RoCE v2 GID that holds
# an IPv4 address (::ffff:a.b.c.d), the one the tools' -g/-x need on a RoCEv2
# device.  Fails if there is none (yet: the core fills the table from the
# netdev's addresses asynchronously; see wait_gid_v4).  Builtins only.
gid_v4() { gid_match '0000:0000:0000:0000:0000:ffff:*' "$@"; }

# gid_ll [DEV [PORT]]: the same for the IPv6 link-local GID (fe80::/64).
gid_ll() { gid_match 'fe80:0000:0000:0000:*' "$@"; }

# gid_match PATTERN [DEV [PORT]]: the lowest index of a RoCE v2 GID that
# matches PATTERN (a glob over the sysfs form).
gid_match() {
	local pat=$1
	shift
	local dir=/sys/class/infiniband/${1:-$DEV}/ports/${2:-1} i=0 gid type
	[ -d "$dir/gids" ] || return 1
	while [ -e "$dir/gids/$i" ]; do
		# shellcheck disable=SC2053 # $pat is a glob
		if read -r gid <"$dir/gids/$i" 2>/dev/null &&
			[[ $gid == $pat ]] &&
			read -r type <"$dir/gid_attrs/types/$i" 2>/dev/null &&
			[ "$type" = "RoCE v2" ]; then
			echo "$i"
			return 0
		fi
		i=$((i + 1))
	done
	return 1
}

# wait_gid_v4 [DEV]: waits up to 10 s for that GID; sets GIDIDX.
wait_gid_v4() {
	GIDIDX=
	wait_for 10 gid_v4 "$@" && GIDIDX=$(gid_v4 "$@")
	[ -n "$GIDIDX" ]
}

# wait_gid_ll [DEV]: waits up to 20 s for the link-local GID (IPv6 duplicate
# address detection comes first); sets GIDIDX6.
wait_gid_ll() {
	GIDIDX6=
	wait_for 20 gid_ll "$@" && GIDIDX6=$(gid_ll "$@")
	[ -n "$GIDIDX6" ]
}

# tcp_listening PORT [PID]: something listens on TCP PORT (IPv4 or IPv6),
# in PID's network namespace (default: this one).
tcp_listening() {
	local hex f _sl addr _rem st _rest net=/proc/${2:-self}/net
	printf -v hex '%04X' "$1"
	for f in "$net/tcp" "$net/tcp6"; do
		[ -r "$f" ] || continue
		while read -r _sl addr _rem st _rest; do
			[ "$st" = 0A ] && [ "${addr##*:}" = "$hex" ] && return 0
		done <"$f"
	done
	return 1
}

# cm_listening PORT [PID]: an rdma_cm ID listens on PORT (any device,
# address and port space), as "rdma resource show cm_id" lists it in PID's
# network namespace (default: this one; with exclusive RDMA namespaces,
# each sees only its own devices).
cm_listening() {
	local ns=()
	[ -n "${2:-}" ] && ns=(nsenter -t "$2" -n)
	"${ns[@]}" rdma resource show cm_id 2>/dev/null |
		grep -Eq "state LISTEN .*src-addr [^ ]*:$1( |\$)"
}

# run_pair LOG PORT CMD...: a client/server pair in this guest: the server
# "CMD", then the client "CMD 127.0.0.1" (PAIR_ADDR overrides the address).
# CMD should carry its own timeout: "${TMO[@]}" CMD...  See pair_run.
# shellcheck disable=SC2034 # used by the tests that source this file
TMO=(timeout -k 5 60)
run_pair() {
	local log=$1 port=$2
	shift 2
	pair_run "$log" "$port" $# "$@" "$@" "${PAIR_ADDR:-127.0.0.1}"
}

# pair_run LOG PORT N SERVER... CLIENT...: the first N words are SERVER (a
# count, not a separator: commands may hold "--").  Starts SERVER in the background,
# waits until it listens on TCP PORT (with PAIR_CM set: on rdma_cm PORT),
# runs CLIENT and waits for the server.  Both should carry their own
# timeouts.  Output goes to LOG.server and LOG.client; sets PAIR_SRC and
# PAIR_CRC to the exit statuses (PAIR_CRC is "-" if the server never
# listened; the server is then killed).  Safe under set -e.
pair_run() {
	local log=$1 port=$2 spid server=("${@:4:$3}")
	shift $((3 + $3))
	PAIR_SRC=0 PAIR_CRC=0
	"${server[@]}" >"$log.server" 2>&1 &
	spid=$!
	if pair_wait_server "$spid" "$port"; then
		"$@" >"$log.client" 2>&1 || PAIR_CRC=$?
		# A client that failed early leaves the server waiting for it.
		if [ "$PAIR_CRC" != 0 ] && ! wait_for 5 pair_server_gone "$spid"; then
			kill "$spid" 2>/dev/null || true
		fi
	else
		PAIR_CRC=-
		echo "(the server did not listen on port $port)" >"$log.client"
		kill "$spid" 2>/dev/null || true
	fi
	wait "$spid" || PAIR_SRC=$?
}
# pair_wait_server PID PORT: up to 30 s for the server to listen on TCP
# PORT in PID's network namespace (PAIR_CM set: on rdma_cm PORT); gives up
# at once if PID ended.
pair_wait_server() {
	local t=300 listening=tcp_listening
	[ -n "${PAIR_CM:-}" ] && listening=cm_listening
	while [ $t -gt 0 ]; do
		$listening "$2" "$1" && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
		t=$((t - 1))
	done
	return 1
}
pair_server_gone() { ! kill -0 "$1" 2>/dev/null; }

# pingpong_ok LOG: a libibverbs pingpong pair under pair_run passed: both
# exited 0 and printed their "N bytes in S seconds" line, and neither saw
# invalid data (-c).
pingpong_ok() {
	[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] &&
		grep -q ' bytes in .* seconds' "$1.server" &&
		grep -q ' bytes in .* seconds' "$1.client" &&
		! grep -q 'invalid data' "$1.server" "$1.client"
}

# pair_diag LOG: the pair's exit statuses and both outputs, for tap_fail.
pair_diag() {
	echo "server exit $PAIR_SRC, client exit $PAIR_CRC"
	sed 's/^/server: /' "$1.server" 2>/dev/null | tail -n 15
	sed 's/^/client: /' "$1.client" 2>/dev/null | tail -n 15
}

# wire_up [MTU]: two urdma devices on a veth pair across namespaces:
# veth4 (10.79.0.1, urdma_w0) here, veth5 (10.79.0.2, urdma_w1) in netns
# "wire", so that traffic between them takes the wire path (RoCEv2
# packets).  Sets GW0 and GW1, the devices' IPv4 GID indices.
wire_up() {
	local mtu=${1:-1500}
	wire_down
	ip link add veth4 type veth peer name veth5 &&
		ip link set veth4 mtu "$mtu" && ip link set veth5 mtu "$mtu" &&
		ip netns add wire && ip link set veth5 netns wire &&
		ip addr add 10.79.0.1/24 dev veth4 && ip link set veth4 up &&
		ip -n wire addr add 10.79.0.2/24 dev veth5 &&
		ip -n wire link set veth5 up && ip -n wire link set lo up &&
		rdma link add urdma_w0 type urdma netdev veth4 &&
		ip netns exec wire rdma link add urdma_w1 type urdma netdev veth5 ||
		return 1
	wait_gid_v4 urdma_w0 || return 1
	GW0=$GIDIDX
	wait_gid_v4 urdma_w1 || return 1
	GW1=$GIDIDX
}

# wire_down: undo wire_up (whatever part of it was done).
wire_down() {
	rdma link del urdma_w0 2>/dev/null
	ip netns exec wire rdma link del urdma_w1 2>/dev/null
	ip link del veth4 2>/dev/null
	ip netns del wire 2>/dev/null
	true
}

# qperf_val OUT [TEST]: qperf's one figure in usec or MB/s; with TEST, the
# figure of that test's block in an output of several.
qperf_val() {
	awk -v t="${2:+$2:}" '$1 ~ /^[a-z_]+:$/ { on = t == "" || $1 == t; next }
		(t == "" || on) && /(latency|bw) +=/ {
		v = $3; u = $4
		if (u == "ns") v /= 1000; else if (u == "ms") v *= 1000
		else if (u == "GB/sec") v *= 1000; else if (u == "KB/sec") v /= 1000
		printf "%.2f", v; found = 1 }
		END { exit !found }' <<<"$1"
}

has_ibdev() { [ -e "/sys/class/infiniband/$1" ]; }
no_ibdev() { [ ! -e "/sys/class/infiniband/$1" ]; }

# perftest_lost_race LOG: with -R, Debian 12's perftest (4.5) connects
# twice: a control connection, then, after a handshake over it, the data
# connection, for which the server creates a new listener on the same port.
# The client does not wait for that listener: when its REQ arrives first,
# the CM answers REJ "invalid service ID" (reason 8), and perftest 4.5
# gives up (and then crashes in librdmacm).  Newer perftest (25.01) retries
# the data connection 10 times for this; t_perftest.sh and the two-host
# suite (t_suite.sh) try 5 times.  Any other failure is a failure.
perftest_lost_race() {
	grep -q 'RDMA_CM_EVENT_REJECTED; error: 8\.' "$1"
}

# client_kinds [KIND...]: sets KINDS, the devices a client test runs on:
# the arguments, else urdma and, beside it, rxe on 6.12 (on other kernels
# urdma only, for time; a TAP skip says so).
client_kinds() {
	if [ $# -gt 0 ]; then
		KINDS=("$@")
	elif [[ $(uname -r) == 6.12.* ]] && [ "${URDMA_KERNEL:-}" != debug ]; then
		KINDS=(urdma rxe)
	else
		KINDS=(urdma)
		tap_skip "rxe beside urdma" "rxe runs in Debian's 6.12 lane only (time)"
	fi
}

tap_done() { exit $TAP_FAILED; }
