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

has_ibdev() { [ -e "/sys/class/infiniband/$1" ]; }
no_ibdev() { [ ! -e "/sys/class/infiniband/$1" ]; }

tap_done() { exit $TAP_FAILED; }
