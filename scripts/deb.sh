#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make deb: Debian 12 (amd64) packages for installing urdma on a real
# machine.  Writes into build/deb/ (or --out DIR):
#
#   urdma-dkms_0.1-1_all.deb
#       the kernel module's source in /usr/src/urdma-0.1; DKMS builds and
#       installs urdma.ko for each installed kernel with headers, and again
#       for each new kernel; removal unbuilds it and deletes the modules
#   ibverbs-provider-urdma_56.1-1~urdma1_amd64.deb
#       liburdma (the rdma-core provider) and /etc/libibverbs.d/urdma.driver
#   rdma-core's other packages, 56.1-1~urdma1 (libibverbs1,
#       ibverbs-providers, librdmacm1, ibverbs-utils, rdmacm-utils, ...)
#       Debian's own packaging of rdma-core 56.1 (trixie's source package),
#       rebuilt on bookworm with liburdma in its tree.  A provider must come
#       from the same rdma-core as the libibverbs that loads it, so these
#       upgrade Debian 12's rdma-core 44 in place.  Only the t64 package
#       names of trixie are put back to bookworm's (librdmacm1,
#       libibnetdisc5); everything else is Debian's.
#
# The rdma-core build is cached in ${URDMA_CACHE:-/var/cache/urdma}/
# rdma-core-debs-56.1-HASH (HASH: this script, the provider, the ABI
# header); the DKMS package is made each time (seconds).
# Needs debhelper and dh-python (scripts/deps.sh installs them).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=$TOP/build/deb
while [ $# -gt 0 ]; do
	case $1 in
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "deb: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

RC_VERSION=56.1
DEB_REV=56.1-1~urdma1
DKMS_VERSION=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$TOP/dkms.conf")
CACHE_ROOT=${URDMA_CACHE:-/var/cache/urdma}
say() { echo "deb: $*"; }
die() { echo "deb: error: $*" >&2; exit 1; }

HASH=$({
	cat "$0" "$TOP/scripts/deb-debianize.py" "$TOP/uapi/rdma/urdma-abi.h"
	for f in "$TOP"/provider/*; do echo "${f##*/}"; cat "$f"; done
} | sha256sum | cut -c1-12)
DIR=$CACHE_ROOT/rdma-core-debs-$RC_VERSION-$HASH
mkdir -p "$OUT"
rm -f "$OUT"/*.deb

# ---- urdma-dkms ------------------------------------------------------------

dkms_deb() {
	local root pkg=urdma-dkms ver=$DKMS_VERSION-1 src
	root=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$root'" RETURN
	src=$root/usr/src/urdma-$DKMS_VERSION
	mkdir -p "$src" "$root/DEBIAN"
	# What DKMS needs: Kbuild, dkms.conf and the sources Kbuild names.
	git -C "$TOP" ls-files -co --exclude-standard -- Kbuild dkms.conf \
		kernel uapi tests/kunit | rsync -a --files-from=- "$TOP/" "$src/"
	cat >"$root/DEBIAN/control" <<-EOF
		Package: $pkg
		Version: $ver
		Architecture: all
		Maintainer: urdma developers <urdma@localhost>
		Depends: dkms (>= 2.1.0.0)
		Recommends: ibverbs-provider-urdma, rdma-core, iproute2
		Section: kernel
		Priority: optional
		Description: urdma, a software RoCEv2 RDMA adapter: kernel module (DKMS)
		 urdma.ko registers an RDMA device on a network interface
		 ("rdma link add urdma0 type urdma netdev eth0").  This package
		 holds its source; DKMS builds it for every installed kernel that
		 has its headers (linux-headers-*), and for each kernel installed
		 later.
	EOF
	# The same maintainer scripts as dh_dkms writes.
	cat >"$root/DEBIAN/postinst" <<-EOF
		#!/bin/sh
		set -e
		if [ "\$1" = configure ]; then
		    /usr/lib/dkms/common.postinst urdma $DKMS_VERSION "" "" "\$2"
		fi
	EOF
	cat >"$root/DEBIAN/prerm" <<-EOF
		#!/bin/sh
		set -e
		if [ "\$1" = remove ] || [ "\$1" = upgrade ] || [ "\$1" = deconfigure ]; then
		    if [ "\$(dkms status -m urdma -v $DKMS_VERSION)" ]; then
		        dkms remove -m urdma -v $DKMS_VERSION --all
		    fi
		fi
	EOF
	chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm"
	dpkg-deb --root-owner-group -Zxz -b "$root" "$OUT/${pkg}_${ver}_all.deb" >/dev/null
	say "built $OUT/${pkg}_${ver}_all.deb"
}

# ---- rdma-core 56.1 with liburdma ---------------------------------------------

rdma_core_debs() {
	local src tree log deb
	if [ -f "$DIR/.stamp" ]; then
		say "rdma-core $DEB_REV packages up to date in $DIR"
		return
	fi
	# The provider synced into the 56.1 tree, as for the guests' build.
	"$TOP/scripts/rdma-core.sh" fetch
	"$TOP/scripts/rdma-core.sh" sync
	src=$("$TOP/scripts/rdma-core.sh" dir)/src
	rm -rf "$DIR"
	mkdir -p "$DIR"
	tree=$DIR/rdma-core-$RC_VERSION
	say "copying $src into $tree"
	rsync -a --exclude=build-deb --exclude=debian "$src/" "$tree/"
	# The orig tarball has upstream's own debian/; Debian's replaces it.
	deb=$(find "$CACHE_ROOT/downloads" -maxdepth 1 \
		-name "rdma-core_$RC_VERSION-*.debian.tar.*" | sort -V | tail -n1)
	[ -n "$deb" ] || die "no rdma-core_$RC_VERSION-*.debian.tar.* in $CACHE_ROOT/downloads"
	tar -xf "$deb" -C "$tree"
	# The static libibverbs (libibverbs-dev) names every provider.
	grep -q verbs_provider_urdma "$tree/libibverbs/verbs.h" ||
		sed -i 's/^extern const struct verbs_device_ops verbs_provider_siw;$/&\nextern const struct verbs_device_ops verbs_provider_urdma;/' \
			"$tree/libibverbs/verbs.h"
	grep -q verbs_provider_urdma "$tree/libibverbs/verbs.h" ||
		die "could not declare verbs_provider_urdma in libibverbs/verbs.h"
	python3 "$TOP/scripts/deb-debianize.py" "$tree/debian" "$DEB_REV"
	log=$DIR/build.log
	say "dpkg-buildpackage in $tree (log: $log)"
	# -d: trixie's build dependencies name versions bookworm lacks
	# (dpkg-dev); the build itself needs nothing newer.
	if ! (cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
		dpkg-buildpackage -b -uc -us -d) >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		die "dpkg-buildpackage failed, see $log"
	fi
	rm -rf "$tree"
	[ -f "$DIR/ibverbs-provider-urdma_${DEB_REV}_amd64.deb" ] ||
		die "no ibverbs-provider-urdma package in $DIR"
	touch "$DIR/.stamp"
	for d in "$CACHE_ROOT/rdma-core-debs-$RC_VERSION"-*/; do
		[ "${d%/}" = "$DIR" ] || say "note: stale cache ${d%/} (rm -rf it)"
	done
}

dkms_deb
rdma_core_debs
# Debug symbols stay in the cache.
find "$DIR" -maxdepth 1 -name '*.deb' ! -name '*-dbgsym_*' -exec cp {} "$OUT/" \;
say "$(find "$OUT" -name '*.deb' | wc -l) packages in $OUT"
