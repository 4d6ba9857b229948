#!/bin/bash
# Build rdma-core 56.1 from Debian's source package with the urdma provider
# inside it, and install the result over Debian 12's packaged rdma-core 44.
#
#   fetch           get the 56.1 source (trixie deb-src) into the cache
#   sync            copy provider/ and uapi/rdma/urdma-abi.h into the tree
#   build           fetch + sync + configure (once) + ninja + stage (DESTDIR)
#   install [ROOT]  copy the stage onto ROOT (default /), then ldconfig;
#                   run in the guest, whose root is a writable overlay
#   tests-path      print the installed path of rdma-core's run_tests.py
#   dir             print the cache directory
#
# The cache directory is ${URDMA_CACHE:-/var/cache/urdma}/rdma-core-56.1-HASH,
# HASH being the first 12 hex digits of sha256(version, cmake flags, this
# script, the patches in scripts/rdma-core-patches/, which are applied to
# the unpacked source).  Inside: src/ (source tree), build/ (ninja tree),
# stage/ (DESTDIR install), and .stamp-* files.  Downloads are shared in
# ../downloads/.
set -euo pipefail
shopt -s nullglob

VERSION=56.1
SELF=$(readlink -f "${BASH_SOURCE[0]}")
TOP=$(dirname "$(dirname "$SELF")")
CACHE_ROOT=${URDMA_CACHE:-/var/cache/urdma}
DL=$CACHE_ROOT/downloads
APT_SRC=/etc/apt/sources.list.d/urdma-trixie-src.sources
MULTIARCH=x86_64-linux-gnu

# The install paths mirror debian/rules of rdma-core 56.1, so that the
# result lands on top of Debian 12's rdma-core 44 (merged /usr: udev and
# systemd files go to /usr/lib, never through the /lib symlink).  The build
# type is upstream's developer default, RelWithDebInfo (-O2 -g, asserts and
# VERBS_DEBUG on), not Debian's Release: this userland is for testing.
CMAKE_FLAGS=(
	-GNinja
	-DNO_MAN_PAGES=1
	-DPYTHON_EXECUTABLE=/usr/bin/python3
	-DDISTRO_FLAVOUR=Debian
	-DCMAKE_BUILD_TYPE=RelWithDebInfo
	-DCMAKE_INSTALL_PREFIX=/usr
	"-DCMAKE_INSTALL_LIBDIR=lib/$MULTIARCH"
	-DCMAKE_INSTALL_SYSCONFDIR=/etc
	-DCMAKE_INSTALL_SYSTEMD_SERVICEDIR=/usr/lib/systemd/system
	-DCMAKE_INSTALL_INITDDIR=/etc/init.d
	-DCMAKE_INSTALL_LIBEXECDIR=/usr/lib
	-DCMAKE_INSTALL_SHAREDSTATEDIR=/var/lib
	-DCMAKE_INSTALL_RUNDIR=/run
	-DCMAKE_INSTALL_UDEV_RULESDIR=/usr/lib/udev/rules.d
	-DCMAKE_INSTALL_PERLDIR=/usr/share/perl5
	-DCMAKE_INSTALL_PYTHON_ARCH_LIB=/usr/lib/python3/dist-packages
	-DENABLE_STATIC=0
)

# Patches to rdma-core's own code (not the provider), applied at unpacking.
PATCHES=("$TOP"/scripts/rdma-core-patches/*.patch)

HASH=$({
	echo "$VERSION"
	printf '%s\n' "${CMAKE_FLAGS[@]}"
	cat "$SELF" "${PATCHES[@]}"
} | sha256sum | cut -c1-12)
DIR=$CACHE_ROOT/rdma-core-$VERSION-$HASH
SRC=$DIR/src
BUILD=$DIR/build
STAGE=$DIR/stage

say() { echo "rdma-core: $*"; }
die() { echo "rdma-core: error: $*" >&2; exit 1; }

# Copy $1 to $2 only if the contents differ, so ninja stays incremental.
# Prints the destination when it changed.
sync_file() {
	if ! cmp -s "$1" "$2"; then
		install -m 0644 "$1" "$2"
		echo "$2"
	fi
}

# Is there an enabled deb-src entry for trixie in some apt source file?
have_trixie_src() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		grep -Eq '^[[:space:]]*deb-src[[:space:]].*[[:space:]]trixie([[:space:]]|$)' \
			"$f" && return 0
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822: check Types, Suites and Enabled per stanza.
		awk 'function check() {
			if (t ~ /deb-src/ && s ~ /[ \t]trixie([ \t]|$)/ && e != "no")
				found = 1
			t = s = e = ""
		     }
		     /^[ \t]*$/ { check() }
		     tolower($1) == "types:" { t = $0 }
		     tolower($1) == "suites:" { s = $0 }
		     tolower($1) == "enabled:" { e = tolower($2) }
		     END { check(); exit !found }' "$f" && return 0
	done
	return 1
}

# deb-src only: no binary package index from trixie, so nothing from
# trixie can ever be installed on this bookworm host.
add_trixie_src() {
	say "adding $APT_SRC (deb-src only)"
	cat >"$APT_SRC" <<-'EOF'
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: trixie
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	say "apt-get update"
	apt-get update -qq
}

# The exact Debian version of rdma-core 56.1 known to apt, e.g. 56.1-1.
src_version() {
	apt-cache showsrc rdma-core 2>/dev/null |
		sed -n "s/^Version: \($VERSION-[^ ]*\)$/\1/p" | sort -V | tail -n1
}

# Sets ORIG to the downloaded rdma-core_56.1.orig.tar.* (shared cache).
find_orig() {
	ORIG=$(find "$DL" -maxdepth 1 -name "rdma-core_$VERSION.orig.tar.*" \
		! -name '*.asc' 2>/dev/null | head -n1 || true)
}

download() {
	local ver

	find_orig
	[ -z "$ORIG" ] || return 0
	have_trixie_src || add_trixie_src
	ver=$(src_version)
	if [ -z "$ver" ]; then
		say "apt-get update (no rdma-core $VERSION source known yet)"
		apt-get update -qq
		ver=$(src_version)
	fi
	[ -n "$ver" ] || die "apt knows no rdma-core $VERSION-* source package"
	mkdir -p "$DL"
	# Let apt's sandbox user write here (avoids the "unsandboxed" warning).
	chown _apt "$DL" 2>/dev/null || true
	say "downloading rdma-core $ver source into $DL"
	# The .dsc may 404 while the tarballs arrive: do not trust the status.
	(cd "$DL" && apt-get source --download-only -qq "rdma-core=$ver" 2>&1) |
		grep -Ev '\.dsc|Failed to fetch some archives' | sed 's/^/rdma-core: apt: /' || true
	find_orig
	[ -n "$ORIG" ] || die "rdma-core_$VERSION.orig.tar.* did not download"
}

cmd_fetch() {
	local deb tmp p

	if [ -f "$DIR/.stamp-fetch" ]; then
		say "source present in $SRC"
		return
	fi
	download
	mkdir -p "$DIR"
	say "unpacking $(basename "$ORIG")"
	tmp=$(mktemp -d "$DIR.tmp.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	tar -xf "$ORIG" -C "$tmp"
	deb=$(find "$DL" -maxdepth 1 -name "rdma-core_$VERSION-*.debian.tar.*" |
		sort -V | tail -n1)
	if [ -n "$deb" ]; then
		# debian/ only for reference (debian/rules); no patches applied.
		tar -xf "$deb" -C "$tmp"/rdma-core-"$VERSION"
	fi
	for p in "${PATCHES[@]}"; do
		say "applying $(basename "$p")"
		patch -d "$tmp/rdma-core-$VERSION" -p1 -s --no-backup-if-mismatch <"$p" ||
			die "$p does not apply"
	done
	rm -rf "$SRC"
	mv "$tmp/rdma-core-$VERSION" "$SRC"
	rm -rf "$tmp"
	trap - EXIT
	touch "$DIR/.stamp-fetch"
	say "source ready in $SRC"
}

# Register rdma/urdma-abi.h next to rdma/siw-abi.h in kernel-headers/:
# in publish_internal_headers(rdma ...), which installs it into the build's
# include/rdma/, and in rdma_kernel_provider_abi(...), which generates
# include/kernel-abi/urdma-abi.h for DECLARE_DRV_CMD.
register_abi_header() {
	local f=$SRC/kernel-headers/CMakeLists.txt n

	n=$(grep -c '^  rdma/urdma-abi\.h$' "$f" || true)
	[ "$n" = 2 ] && return 0
	[ "$n" = 0 ] || die "$f: urdma-abi.h registered $n times, expected 2"
	[ "$(grep -c '^  rdma/siw-abi\.h$' "$f")" = 2 ] ||
		die "$f: expected rdma/siw-abi.h in exactly two lists"
	sed -i 's|^  rdma/siw-abi\.h$|&\n  rdma/urdma-abi.h|' "$f"
	echo "$f"
}

# Build providers/urdma with the other software providers (after siw).
register_provider() {
	local f=$SRC/CMakeLists.txt

	grep -q '^add_subdirectory(providers/urdma)$' "$f" && return 0
	grep -q '^add_subdirectory(providers/siw)$' "$f" ||
		die "$f: no add_subdirectory(providers/siw)"
	sed -i 's|^add_subdirectory(providers/siw)$|&\nadd_subdirectory(providers/urdma)|' "$f"
	echo "$f"
}

cmd_sync() {
	local f dst=$SRC/providers/urdma hdrs=$SRC/kernel-headers

	[ -f "$DIR/.stamp-fetch" ] || die "no source tree; run '$0 fetch' first"
	[ -f "$TOP/uapi/rdma/urdma-abi.h" ] || die "$TOP/uapi/rdma/urdma-abi.h missing"
	mkdir -p "$dst"
	{
		for f in "$TOP"/provider/*; do
			[ -f "$f" ] && sync_file "$f" "$dst/$(basename "$f")"
		done
		# Files removed from provider/ go away here too.
		for f in "$dst"/*; do
			[ -f "$f" ] || continue
			[ -e "$TOP/provider/$(basename "$f")" ] || { rm -f "$f"; echo "$f"; }
		done
		sync_file "$TOP/uapi/rdma/urdma-abi.h" "$hdrs/rdma/urdma-abi.h"
		# publish_internal_headers(rdma ...) list and the list of driver
		# ABI headers that kernel-abi/ wrappers are generated from.
		register_abi_header
		register_provider
	} | sed "s|^|rdma-core: synced |"
}

cmd_configure() {
	if [ ! -f "$BUILD/build.ninja" ]; then
		say "configuring in $BUILD"
		mkdir -p "$BUILD"
		(cd "$BUILD" && cmake "${CMAKE_FLAGS[@]}" "$SRC" >cmake.log 2>&1) || {
			tail -n 30 "$BUILD/cmake.log" >&2
			die "cmake failed, see $BUILD/cmake.log"
		}
	fi
	grep -q 'pyverbs' "$BUILD/build.ninja" ||
		die "pyverbs is not configured (cython3 missing?), see $BUILD/cmake.log"
}

# ninja, printing progress every 10% and the provider's warnings.
run_ninja() {
	local log=$BUILD/ninja.log rc=0

	say "ninja in $BUILD"
	ninja -C "$BUILD" 2>&1 | tee "$log" | awk -F'[][/ ]+' '
		/^\[[0-9]+\/[0-9]+\] / && $3 > 0 {
			p = int(100 * $2 / $3)
			if (p >= last + 10) {
				printf "rdma-core: ninja %d%% (%d/%d)\n", p, $2, $3
				last = p
				fflush()
			}
		}' || rc=$?
	if [ "$rc" != 0 ]; then
		grep -E -B2 -A8 'error|FAILED' "$log" | tail -n 40 >&2
		die "ninja failed, see $log"
	fi
	if grep -E 'providers/urdma/.*warning:' "$log" >&2; then
		die "the urdma provider compiles with warnings, see $log"
	fi
}

cmd_build() {
	cmd_fetch
	cmd_sync
	cmd_configure
	run_ninja
	cmd_stage
}

# Re-stage when any build output is newer than the last stage.
cmd_stage() {
	local d

	if [ -f "$DIR/.stamp-stage" ] &&
		[ -z "$(find "$BUILD" -newer "$DIR/.stamp-stage" -type f \
			! -name '*.log' ! -name '.ninja_*' -print -quit)" ]; then
		say "stage up to date in $STAGE"
		return
	fi
	say "staging into $STAGE"
	rm -rf "$STAGE" "$DIR/.stamp-stage"
	DESTDIR=$STAGE cmake --install "$BUILD" >"$BUILD/install.log" 2>&1 ||
		die "install into stage failed, see $BUILD/install.log"
	[ -f "$STAGE/usr/lib/$MULTIARCH/libibverbs/liburdma-rdmav34.so" ] ||
		die "liburdma-rdmav34.so missing from the stage"
	[ -f "$STAGE/etc/libibverbs.d/urdma.driver" ] ||
		die "urdma.driver missing from the stage"
	# Top-level entries must be real directories on a merged-/usr host.
	for d in "$STAGE"/*; do
		case ${d##*/} in
		usr | etc) ;;
		*) die "unexpected top-level ${d##*/}/ in the stage" ;;
		esac
	done
	touch "$DIR/.stamp-stage"
	say "staged $(du -sh "$STAGE" | cut -f1) in $STAGE"
	for d in "$CACHE_ROOT/rdma-core-$VERSION"-*/; do
		[ "${d%/}" = "$DIR" ] || say "note: stale cache ${d%/} (rm -rf it)"
	done
}

# Would the dynamic linker's cache send one of the stage's sonames to a
# file other than the stage's?  The stage replaces rdma-core 44's libraries
# at their own paths, and a soname the cache lacks is found in the system
# search path (/usr/lib/$MULTIARCH), so the cache is usually still right.
# ldconfig reads every library of the system: in a guest, over 9p and
# under TCG, that is a minute (on the debug kernel), at every boot.
ld_cache_stale() {
	local f so path cache

	cache=$(ldconfig -p) || return 0
	for f in "$STAGE/usr/lib/$MULTIARCH"/*.so.*; do
		so=${f##*/}
		[[ $so =~ \.so\.[0-9]+$ ]] || continue
		path=$(awk -v so="$so" '$1 == so && /x86-64/ { print $NF; exit }' <<<"$cache")
		[ -z "$path" ] && continue
		[ "$(readlink -f "$path")" = "$(readlink -f "/usr/lib/$MULTIARCH/$so")" ] ||
			return 0
	done
	return 1
}

# $1: the root to install into (default /; another root is for testing and
# skips ldconfig).
cmd_install() {
	local root=${1:-/}

	[ -f "$DIR/.stamp-stage" ] ||
		die "no stage in $STAGE; run scripts/rdma-core.sh build on the host first"
	[ -d "$root" ] || die "$root is not a directory"
	say "installing $STAGE onto $root"
	# cp cannot copy a directory over a symlink such as /lib -> usr/lib:
	# the stage holds only usr/ and etc/ (checked when staging).
	cp -a "$STAGE/." "$root"
	if [ "$root" = / ] && ld_cache_stale; then
		ldconfig
	fi
	say "installed rdma-core $VERSION with urdma"
}

cmd_tests_path() {
	local rel=usr/share/doc/rdma-core/tests/run_tests.py
	[ -f "$STAGE/$rel" ] ||
		die "$rel not in the stage; run scripts/rdma-core.sh build on the host first"
	echo "/$rel"
}

usage() {
	sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$SELF"
	exit "${1:-0}"
}

# One writer at a time per cache (fetch, sync and build).
lock() {
	mkdir -p "$CACHE_ROOT"
	exec 9>"$CACHE_ROOT/.lock"
	flock 9
}

case "${1:-}" in
fetch) lock; cmd_fetch ;;
sync) lock; cmd_fetch; cmd_sync ;;
build) lock; cmd_build ;;
install) cmd_install "${2:-/}" ;;
tests-path) cmd_tests_path ;;
dir) echo "$DIR" ;;
-h | --help | help) usage 0 ;;
*) usage 1 >&2 ;;
esac
