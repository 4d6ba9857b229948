#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make bench: one Debian 6.12 guest boot measures urdma, rxe and siw side by
# side (bench/run.sh), then pairs of guests measure urdma and rxe between
# two hosts (bench/twohost.sh), and bench/report.py writes the results.
#
#   scripts/bench.sh [--quick] [--out DIR] [--kernel K]
#
#   --quick     a smoke run (two sizes, few iterations); make check runs it
#   --out DIR   where the report goes (default docs/bench)
#   --kernel K  the guest kernel (default debian-6.12; siw.ko is built for it)
#   --smp N     the guest's vCPUs (default 2, as in every other guest)
#
# Needs the module, the provider and the test programs (make tests), and
# python3-matplotlib for the plots (scripts/deps.sh installs it).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0
OUTDIR=$TOP/docs/bench
KERNEL=debian-6.12
SMP=2
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--out) OUTDIR=$2; shift ;;
	--kernel) KERNEL=$2; shift ;;
	--smp) SMP=$2; shift ;;
	-h | --help) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
case $KERNEL in
debian-6.12) KVER=$(basename "$(ls -d /lib/modules/6.12.*-amd64 | sort | tail -1)") ;;
*) echo "bench: only debian-6.12 has a siw.ko build (scripts/build-oot.sh siw)" >&2; exit 2 ;;
esac

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
[ -x "$TOP/build/tests/urdma_limits" ] || { echo "bench: make tests first" >&2; exit 1; }
say "building urdma.ko and siw.ko for $KVER"
make -s -C "$TOP" modules KVER="$KVER"
SIW=$("$TOP/scripts/build-oot.sh" siw "$KVER" | tail -n 1)
RAW=$TOP/build/bench/results-$$.jsonl
mkdir -p "$(dirname "$RAW")"
commit=$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)
say "booting $KERNEL (commit $commit$([ $QUICK = 1 ] && echo ', quick'))"
rc=0
"$TOP/scripts/urdma-vm" --kernel "$KERNEL" --smp "$SMP" --timeout 5400 \
	--env URDMA_SIW_KO="$SIW" --env URDMA_BENCH_QUICK="$QUICK" \
	--env URDMA_BENCH_COMMIT="$commit" --env URDMA_BENCH_SMP="$SMP" \
	-- "$TOP/bench/run.sh" "$RAW" || rc=$?
say "guest exit $rc; two guests (bench/twohost.sh)"
URDMA_BENCH_QUICK=$QUICK "$TOP/bench/twohost.sh" "$RAW" || rc=1
say "writing the report"
/usr/bin/python3 "$TOP/bench/report.py" "$RAW" "$OUTDIR" || rc=1
exit $rc
