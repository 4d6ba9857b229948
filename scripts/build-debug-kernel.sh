#!/bin/bash
# Build (once, cached) the urdma debug kernel from Debian's linux-source-6.12:
# allnoconfig + scripts/debug-kernel.config (KASAN, lockdep, kmemleak, KUnit, rxe, siw).
# The full build log is build.log in the cache directory.
#
# Cache layout: ${URDMA_CACHE:-/var/cache/urdma}/kernel-debug-<kver>-<hash>/
#   src/             configured, built source tree; usable as KDIR (make -C src M=...)
#   bzImage          the kernel image
#   kernelrelease    `make kernelrelease` (e.g. 6.12.117-urdma-debug)
#   modules/         INSTALL_MOD_PATH: modules/lib/modules/<kernelrelease>/
#   build.log        full build output
#   .stamp           present only once everything above is complete
# <hash> covers the source package version, the config fragment and this script,
# so editing either triggers a fresh build in a new directory.
set -euo pipefail

SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
SCRIPT_DIR=$(dirname "$SCRIPT")
FRAGMENT="$SCRIPT_DIR/debug-kernel.config"
CACHE=${URDMA_CACHE:-/var/cache/urdma}
TARBALL=${URDMA_LINUX_SOURCE:-/usr/src/linux-source-6.12.tar.xz}
SRC_PKG=linux-source-6.12
JOBS=${URDMA_JOBS:-3}

usage() {
	cat <<EOF
Usage: $(basename "$0") [--print-dir | --check | --force] [-h|--help]

Builds the urdma debug kernel (cached; a rerun after a complete build is instant)
and prints the cache directory on the last line of output.

  --print-dir   only print the cache directory (does not build)
  --check       exit 0 if the cached build is complete, 1 otherwise (no output)
  --force       delete any cached build for the current hash and rebuild

Environment: URDMA_CACHE (default /var/cache/urdma), URDMA_JOBS (default 3),
             URDMA_LINUX_SOURCE (default $TARBALL).
EOF
}

log() { printf '[build-debug-kernel %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# The source version string: the Debian package version, or (if the tarball did not
# come from the package) its size and mtime.
source_version() {
	local v
	if v=$(dpkg-query -W -f='${Version}' "$SRC_PKG" 2>/dev/null) && [ -n "$v" ]; then
		echo "$SRC_PKG $v"
	else
		stat -c '%n %s %Y' "$TARBALL"
	fi
}

# Upstream kernel version, e.g. 6.12.117 (for the directory name only).
kernel_version() {
	local v
	v=$(dpkg-query -W -f='${Version}' "$SRC_PKG" 2>/dev/null || true)
	v=${v%%-*}
	echo "${v:-6.12}"
}

cache_dir() {
	local hash
	hash=$({ source_version; cat "$FRAGMENT" "$SCRIPT"; } | sha256sum | cut -c1-12)
	echo "$CACHE/kernel-debug-$(kernel_version)-$hash"
}

# Every CONFIG_X=val and "# CONFIG_X is not set" line of the fragment must hold in .config.
verify_config() {
	local config=$1 bad=0 line sym want have
	while IFS= read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
			sym=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]}
		elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			sym=${BASH_REMATCH[1]} want=n
		else
			continue
		fi
		have=$(sed -n "s/^$sym=//p" "$config")
		[ -n "$have" ] || have=n
		if [ "$have" != "$want" ]; then
			log "config: $sym wanted '$want', got '$have'"
			bad=1
		fi
	done <"$FRAGMENT"
	[ "$bad" -eq 0 ] || die "config fragment did not fully apply (missing dependencies?)"
	log "config: all $(grep -cE '^(CONFIG_|# CONFIG_)' "$FRAGMENT") requested symbols verified"
}

# Run make in the source tree; the full output goes to build.log, a progress line
# every 250 compiled files and all errors go to stderr.
run_make() {
	local dir=$1
	shift
	log "make $*"
	make -C "$dir/src" "$@" 2>&1 | tee -a "$dir/build.log" | awk '
		/^  (CC|AS)/ { n++; if (n % 250 == 0) { printf "  ... %d files compiled (%s)\n", n, $NF; fflush() } }
		/error:|Error [0-9]|\*\*\*/ { print; fflush() }' >&2
}

build() {
	local dir=$1 start=$SECONDS release
	[ -r "$TARBALL" ] || die "$TARBALL not found (install $SRC_PKG; see scripts/deps.sh)"
	[ -r "$FRAGMENT" ] || die "$FRAGMENT not found"

	log "building debug kernel in $dir"
	rm -rf "$dir"
	mkdir -p "$dir/src"
	: >"$dir/build.log"

	log "extracting $TARBALL"
	tar -xf "$TARBALL" -C "$dir/src" --strip-components=1

	log "configuring: allnoconfig + $(basename "$FRAGMENT")"
	run_make "$dir" allnoconfig
	(cd "$dir/src" && scripts/kconfig/merge_config.sh -m .config "$FRAGMENT") \
		>>"$dir/build.log" 2>&1
	run_make "$dir" olddefconfig
	verify_config "$dir/src/.config"

	run_make "$dir" -j"$JOBS" all
	run_make "$dir" modules_prepare
	rm -rf "$dir/modules"
	run_make "$dir" INSTALL_MOD_PATH="$dir/modules" modules_install

	release=$(make -s --no-print-directory -C "$dir/src" kernelrelease)
	echo "$release" >"$dir/kernelrelease"
	cp "$dir/src/arch/x86/boot/bzImage" "$dir/bzImage"
	[ -d "$dir/modules/lib/modules/$release" ] || die "modules not installed for $release"

	date -u +%FT%TZ >"$dir/.stamp"
	log "done: $release in $((SECONDS - start)) s"
}

main() {
	local mode=build dir
	case "${1:-}" in
	"") ;;
	--print-dir) mode=print ;;
	--check) mode=check ;;
	--force) mode=force ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac

	dir=$(cache_dir)
	case $mode in
	print) echo "$dir"; exit 0 ;;
	check) [ -f "$dir/.stamp" ]; exit ;;
	esac

	mkdir -p "$CACHE"
	# One builder at a time per cache directory; a second caller waits, then finds the stamp.
	exec 9>"$dir.lock"
	if ! flock -n 9; then
		log "another build of $dir is running; waiting for it"
		flock 9
	fi
	if [ "$mode" = force ] || [ ! -f "$dir/.stamp" ]; then
		build "$dir"
	else
		log "up to date: $dir"
	fi
	note_stale "$dir"
	echo "$dir"
}

# Builds for other hashes are not used any more (about 2 GB each).
note_stale() {
	local d
	for d in "$CACHE"/kernel-debug-*/; do
		[ -d "$d" ] && [ "${d%/}" != "$1" ] && log "note: stale build ${d%/} (rm -rf it)"
	done
	return 0
}

main "$@"
