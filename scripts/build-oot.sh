#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Build (once, cached) a driver of Debian's linux-source-6.12 out of tree,
# for a kernel whose config leaves it out:
#   siw      soft-iWARP: Debian's kernels do not ship it, and make bench
#            compares urdma with it;
#   udmabuf  the memfd dma-buf exporter: Debian's 6.12 has it built in, the
#            debug kernel's config does not, and the dma-buf MR tests need it
#            (scripts/urdma-vm loads it into the debug kernel).
#
#   scripts/build-oot.sh NAME [KVER|debug]   prints the module's path last
#
# Cache: ${URDMA_CACHE:-/var/cache/urdma}/NAME-<kver>-<hash>/NAME.ko, where
# <hash> covers the source package version, the kernel and this script.
set -euo pipefail

SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
CACHE=${URDMA_CACHE:-/var/cache/urdma}
TARBALL=${URDMA_LINUX_SOURCE:-/usr/src/linux-source-6.12.tar.xz}
NAME=${1:?usage: build-oot.sh siw|udmabuf [KVER|debug]}
KVER=${2:-$(basename "$(ls -d /lib/modules/6.12.*-amd64 | sort | tail -1)")}
die() { echo "build-oot: $*" >&2; exit 1; }

case $NAME in
siw) SRC=drivers/infiniband/sw/siw STRIP=5 ;;
udmabuf) SRC=drivers/dma-buf/udmabuf.c STRIP=3 ;;
*) die "unknown driver $NAME (siw or udmabuf)" ;;
esac
if [ "$KVER" = debug ]; then
	kdir=$("$(dirname "$SCRIPT")/build-debug-kernel.sh" --print-dir)
	KDIR=$kdir/src
	KVER=$(cat "$kdir/kernelrelease" 2>/dev/null) ||
		die "the debug kernel is not built (make debug-kernel)"
else
	KDIR=/lib/modules/$KVER/build
fi
[ -d "$KDIR" ] || die "no kernel build tree for $KVER ($KDIR)"
[ -r "$TARBALL" ] || die "$TARBALL missing (scripts/deps.sh)"
ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
hash=$( { echo "$ver $KVER $KDIR"; cat "$SCRIPT"; } | sha256sum | cut -c1-12)
dir=$CACHE/$NAME-$KVER-$hash
if [ -f "$dir/$NAME.ko" ]; then
	echo "$dir/$NAME.ko"
	exit 0
fi

tmp=$(mktemp -d "$CACHE/.$NAME-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf "$TARBALL" --strip-components=$STRIP "linux-source-6.12/$SRC"
# A lone file gets a Kbuild of its own (its directory's Makefile builds
# the core it sits beside); a driver directory brings its Makefile.
[ -f "$tmp/Makefile" ] || echo "obj-m := $NAME.o" >"$tmp/Kbuild"
if [ "$NAME" = udmabuf ]; then
	# Kconfig makes it built-in only: it reads a memfd's seals through
	# memfd_fcntl(), which modules cannot call, and declares no license.
	# Read shmem's seals directly (so hugetlbfs memfds are refused) and
	# add what a module needs.
	sed -i 's|memfd_fcntl(memfd, F_GET_SEALS, 0)|shmem_file(memfd) ? SHMEM_I(file_inode(memfd))->seals : -EINVAL|' \
		"$tmp/udmabuf.c"
	grep -q 'SHMEM_I(file_inode(memfd))->seals' "$tmp/udmabuf.c" ||
		die "udmabuf.c: the memfd_fcntl() call to replace is gone"
	printf '%s\n' 'MODULE_LICENSE("GPL");' 'MODULE_IMPORT_NS(DMA_BUF);' \
		>>"$tmp/udmabuf.c"
fi
make -s -C "$KDIR" M="$tmp" CONFIG_RDMA_SIW=m modules >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log" >&2; exit 1; }
mkdir -p "$dir"
cp "$tmp/$NAME.ko" "$dir/$NAME.ko.part"
mv "$dir/$NAME.ko.part" "$dir/$NAME.ko"
echo "$dir/$NAME.ko"
