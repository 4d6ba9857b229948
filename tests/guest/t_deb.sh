#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make deb's packages installed as a user installs them on a Debian 12
# machine: in a guest booted with --no-install (no urdma code, Debian 12's
# rdma-core 44), dpkg -i; then urdma0 is added, ibv_devinfo and
# ibv_rc_pingpong run on it; then urdma's packages are removed and must
# leave nothing behind.  The check lane's deb lane runs it:
#
#   scripts/urdma-vm --no-install -- tests/guest/t_deb.sh DEBDIR
# shellcheck disable=SC2317 # the helpers below run through check
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TAP_PREFIX=deb
# shellcheck source=tests/guest/lib.sh
. "$HERE/lib.sh"
DEBS=${1:?usage: t_deb.sh DEBDIR}
KVER=$(uname -r)
LOGS=$HERE/../../build/results/deb
mkdir -p "$LOGS"

# The packages to install: urdma's two, and every rdma-core package that
# is installed now (the 56.1 build replaces 44 in place; a 44 package left
# behind would depend on libibverbs1 (= 44.0-2)).
deb_pkg() { dpkg-deb -f "$1" Package; }
installed() { dpkg-query -W -f '${Status}' "$1" 2>/dev/null | grep -q ' installed$'; }
set_list() {
	local f p
	LIST=()
	for f in "$DEBS"/*.deb; do
		p=$(deb_pkg "$f")
		case $p in
		urdma-dkms | ibverbs-provider-urdma) LIST+=("$f") ;;
		*) installed "$p" && LIST+=("$f") ;;
		esac
	done
}

audit_clean() { [ -z "$(dpkg --audit)" ]; }
loaded() { lsmod | grep -q '^urdma '; }
no_urdma() {
	! loaded && ! modinfo urdma >/dev/null 2>&1 &&
		[ -z "$(find /lib/modules/"$KVER" -name 'urdma*.ko*')" ] &&
		! ls /usr/lib/x86_64-linux-gnu/libibverbs/liburdma-* >/dev/null 2>&1
}
no_urdma_left() { no_urdma && [ -z "$(dkms status -m urdma)" ]; }
ibdev_listed() { ibv_devices | grep -qw urdma0; }
unloaded() { ! loaded; }
purged() { [ -z "$left" ] && ! dpkg-query -W "${PKGS[@]}" >/dev/null 2>&1; }
rdma_core_works() { ibv_devices >/dev/null && rdma link >/dev/null; }
dkms_installed() {
	dkms status -m urdma -k "$KVER" | grep -q ': installed' &&
		modinfo -n urdma | grep -q "^/lib/modules/$KVER/updates/dkms/urdma.ko"
}

check "no urdma code before the packages (--no-install)" no_urdma
before=$(dpkg-query -W -f '${Version}' libibverbs1)
set_list
if [ ${#LIST[@]} -lt 3 ]; then
	tap_fail "the packages are in $DEBS" "found: ${LIST[*]:-none}"
	tap_done
fi
# DKMS builds the module in the guest (TCG): minutes.  man-db's trigger
# would index every manual page again under TCG: not what is tested.
rm -f /var/lib/man-db/auto-update
t0=$(date +%s)
if dpkg -i "${LIST[@]}" >"$LOGS/install.log" 2>&1; then
	tap_ok "dpkg -i: ${#LIST[@]} packages (rdma-core $before -> $(dpkg-query -W -f '${Version}' libibverbs1), urdma-dkms, ibverbs-provider-urdma)"
else
	tap_fail "dpkg -i ${LIST[*]##*/}" "$(tail -n 20 "$LOGS/install.log")"
fi
echo "# dpkg -i took $(($(date +%s) - t0)) s"
check "dpkg --audit finds nothing half-installed" audit_clean
check "DKMS built and installed urdma for $KVER" dkms_installed
check "rdma link add loads the module (rdma-link-urdma alias)" \
	rdma link add urdma0 type urdma netdev "$NETDEV"
check "ibv_devices lists urdma0" ibdev_listed
out=$(ibv_devinfo -d urdma0 2>&1)
if grep -q 'state:.*PORT_ACTIVE' <<<"$out" &&
	grep -q 'link_layer:.*Ethernet' <<<"$out"; then
	tap_ok "ibv_devinfo -d urdma0: port active, Ethernet (RoCE)"
else
	tap_fail "ibv_devinfo -d urdma0" "$out"
fi
if wait_gid_ll urdma0; then
	run_pair "$LOGS/rc_pingpong" 18515 "${TMO[@]}" \
		ibv_rc_pingpong -d urdma0 -g "$GIDIDX6" -n 200 -c
	if pingpong_ok "$LOGS/rc_pingpong"; then
		tap_ok "ibv_rc_pingpong -c on urdma0 (200 iterations, data checked)"
	else
		tap_fail "ibv_rc_pingpong on urdma0" "$(pair_diag "$LOGS/rc_pingpong")"
	fi
else
	tap_fail "urdma0 has a link-local GID"
fi

# Removal, as a user removes them: the device and module first.
rdma link del urdma0 >/dev/null 2>&1
modprobe -r urdma >/dev/null 2>&1
check "the module unloads" unloaded
PKGS=(urdma-dkms ibverbs-provider-urdma)
files=$(dpkg -L "${PKGS[@]}" 2>/dev/null |
	while read -r f; do [ -f "$f" ] && echo "$f"; done)
conffiles=$(dpkg-query -W -f '${Conffiles}\n' "${PKGS[@]}" | awk 'NF { print $1 }')
if dpkg -r "${PKGS[@]}" >"$LOGS/remove.log" 2>&1; then
	tap_ok "dpkg -r ${PKGS[*]}"
else
	tap_fail "dpkg -r ${PKGS[*]}" "$(tail -n 20 "$LOGS/remove.log")"
fi
# Removal keeps conffiles (urdma.driver); purging takes them too.
left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done)
check "removed: only their conffiles are left ($(wc -w <<<"$files") files were installed)" \
	test "$left" = "$conffiles"
if dpkg -P "${PKGS[@]}" >>"$LOGS/remove.log" 2>&1; then
	tap_ok "dpkg -P ${PKGS[*]}"
else
	tap_fail "dpkg -P ${PKGS[*]}" "$(tail -n 20 "$LOGS/remove.log")"
fi
left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done)
check "purged: no file of theirs is left, dpkg knows neither" purged
check "no urdma module or provider is left, DKMS knows none" \
	no_urdma_left
check "rdma-core $(dpkg-query -W -f '${Version}' libibverbs1) still works (ibv_devices, rdma link)" \
	rdma_core_works
check "dpkg --audit finds nothing after removal" audit_clean
tap_done
