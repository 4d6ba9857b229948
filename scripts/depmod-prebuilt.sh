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
	# Built aside and renamed into place: another run may be using the
	# cache at the same time.
	tmp=$root.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp/lib/modules"
	# A hard-link (or symlink, across file systems) copy of the tree.
	cp -al "$MODDIR" "$tmp/lib/modules/$KVER" 2>/dev/null ||
		cp -as "$(realpath "$MODDIR")" "$tmp/lib/modules/$KVER"
	rm -rf "$tmp/lib/modules/$KVER/updates"
	mkdir -p "$tmp/lib/modules/$KVER/updates"
	cp "${kos[@]}" "$tmp/lib/modules/$KVER/updates/"
	depmod -b "$tmp" "$KVER"
	touch "$tmp/.done"
	mv -T "$tmp" "$root" 2>/dev/null || rm -rf "$tmp"
fi
touch "$root"
# Keep the cache small: drop the indexes of module builds unused for a day
# (not at once: a run for another build may still be using its index).
find "$CACHE/depmod" -mindepth 1 -maxdepth 1 -name "$KVER-*" ! -name "$KVER-$hash" \
	-mmin +1440 -exec rm -rf {} + 2>/dev/null || true
echo "$root/lib/modules/$KVER"
