#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# scripts/depmod-prebuilt.sh KVER MODDIR
#
# Prints a directory holding the module index (modules.dep and friends) of
# kernel KVER with build/KVER/*.ko added under updates/, computed on the
# host.  Inside a TCG guest, "depmod -a" reads every module of the kernel
# over 9p and takes minutes (145 s measured for Debian 6.12); here it takes
# seconds.  "make install-module DEPMOD_PREBUILT=DIR" uses the result when
# it matches the modules being installed, and runs depmod otherwise.
#
# MODDIR is the kernel's module tree (/lib/modules/KVER for Debian kernels).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
KVER=$1
MODDIR=$2
CACHE=${URDMA_CACHE:-/var/cache/urdma}

shopt -s nullglob
kos=("$TOP/build/$KVER"/*.ko)
[ ${#kos[@]} -gt 0 ] || { echo "no modules in build/$KVER" >&2; exit 1; }

hash=$( { cat "$MODDIR/modules.order" 2>/dev/null; cat "${kos[@]}"; } |
	sha256sum | cut -c1-12)
root=$CACHE/depmod/$KVER-$hash
if [ ! -f "$root/.done" ]; then
	rm -rf "$root"
	mkdir -p "$root/lib/modules"
	# A hard-link (or symlink, across file systems) copy of the tree.
	cp -al "$MODDIR" "$root/lib/modules/$KVER" 2>/dev/null ||
		cp -as "$(realpath "$MODDIR")" "$root/lib/modules/$KVER"
	rm -rf "$root/lib/modules/$KVER/updates"
	mkdir -p "$root/lib/modules/$KVER/updates"
	cp "${kos[@]}" "$root/lib/modules/$KVER/updates/"
	depmod -b "$root" "$KVER"
	touch "$root/.done"
	# Keep the cache small: drop indexes of older module builds.
	find "$CACHE/depmod" -maxdepth 1 -name "$KVER-*" ! -name "$KVER-$hash" \
		-exec rm -rf {} + 2>/dev/null || true
fi
echo "$root/lib/modules/$KVER"
