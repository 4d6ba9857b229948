#!/bin/bash
# Run the kernel's checkpatch.pl --strict over urdma's kernel C sources.
# checkpatch comes from linux-source-6.12, extracted once into the cache.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${URDMA_CACHE:-/var/cache/urdma}
TARBALL=/usr/src/linux-source-6.12.tar.xz
DIR=$CACHE/checkpatch-6.12

if [ ! -x "$DIR/scripts/checkpatch.pl" ]; then
	[ -f "$TARBALL" ] || { echo "checkpatch: $TARBALL missing (make deps)"; exit 1; }
	mkdir -p "$DIR.tmp"
	tar -C "$DIR.tmp" --strip-components=1 -xf "$TARBALL" \
		linux-source-6.12/scripts/checkpatch.pl \
		linux-source-6.12/scripts/spelling.txt \
		linux-source-6.12/scripts/const_structs.checkpatch
	rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"
fi

cd "$TOP"
mapfile -t files < <(git ls-files 'kernel/*.[ch]' 'tests/kunit/*.[ch]' \
	'uapi/*.h' 2>/dev/null || find kernel tests/kunit uapi -name '*.[ch]')
# Files not yet committed count too.
mapfile -t -O "${#files[@]}" files < <(git ls-files --others --exclude-standard \
	'kernel/*.[ch]' 'tests/kunit/*.[ch]' 'uapi/*.h' 2>/dev/null)

rc=0
for f in "${files[@]}"; do
	ignore=FILE_PATH_CHANGES
	case "$f" in
	# The one place allowed to test kernel versions.
	kernel/compat.h) ignore+=,LINUX_VERSION_CODE,CONSTANT_COMPARISON,NEW_TYPEDEFS ;;
	# C11 _Static_assert keeps the ABI sizes checked in C and C++.
	uapi/*) ignore+=,CAMELCASE ;;
	# Table macros name a field three ways: string, offset and size.
	tests/kunit/*) ignore+=,MACRO_ARG_REUSE ;;
	esac
	if out=$("$DIR/scripts/checkpatch.pl" --strict --no-tree --terse \
		--show-types --ignore "$ignore" -f "$f" 2>&1); then
		echo "ok - checkpatch $f"
	else
		echo "not ok - checkpatch $f"
		echo "$out" | sed 's/^/# /'
		rc=1
	fi
done
exit $rc
