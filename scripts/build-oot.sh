#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Build (once, cached) siw.ko, the in-kernel soft-iWARP driver, out of tree
# from Debian's linux-source-6.12 against the Debian 6.12 headers: Debian's
# kernel does not ship it, and make bench compares urdma with it.
#
#   scripts/build-siw.sh [KVER]     prints the module's path on its last line
#
# Cache: ${URDMA_CACHE:-/var/cache/urdma}/siw-<kver>-<hash>/siw.ko, where
# <hash> covers the source package version, KVER and this script.
set -euo pipefail

SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
CACHE=${URDMA_CACHE:-/var/cache/urdma}
TARBALL=${URDMA_LINUX_SOURCE:-/usr/src/linux-source-6.12.tar.xz}
KVER=${1:-$(basename "$(ls -d /lib/modules/6.12.*-amd64 | sort | tail -1)")}
KDIR=/lib/modules/$KVER/build

[ -d "$KDIR" ] || { echo "build-siw: no headers for $KVER ($KDIR)" >&2; exit 1; }
[ -r "$TARBALL" ] || { echo "build-siw: $TARBALL missing (scripts/deps.sh)" >&2; exit 1; }
ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
hash=$( { echo "$ver $KVER"; cat "$SCRIPT"; } | sha256sum | cut -c1-12)
dir=$CACHE/siw-$KVER-$hash
if [ -f "$dir/siw.ko" ]; then
	echo "$dir/siw.ko"
	exit 0
fi

tmp=$(mktemp -d "$CACHE/.siw-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf "$TARBALL" --strip-components=5 \
	linux-source-6.12/drivers/infiniband/sw/siw
make -s -C "$KDIR" M="$tmp" CONFIG_RDMA_SIW=m modules >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log" >&2; exit 1; }
mkdir -p "$dir"
cp "$tmp/siw.ko" "$dir/siw.ko.part"
mv "$dir/siw.ko.part" "$dir/siw.ko"
echo "$dir/siw.ko"
