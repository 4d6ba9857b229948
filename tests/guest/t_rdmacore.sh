#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdma-core's own test suite ($RDMA_CORE_TESTS, pyverbs) on the device under
# test: the modules that exercise objects without moving data.  Every test
# becomes one TAP line; see unittest2tap.py for how skips and the tests that
# need the engine are reported.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=${URDMA_RESULTS:-/tmp}
MODULES=(tests.test_device tests.test_pd tests.test_mr tests.test_cq
	tests.test_cqex)

if [ -z "${RDMA_CORE_TESTS:-}" ] || [ ! -f "$RDMA_CORE_TESTS" ]; then
	tap_fail "run_tests.py present" "RDMA_CORE_TESTS=${RDMA_CORE_TESTS:-unset}"
	tap_done
fi

log=$RESULTS/rdmacore.log
python3 "$RDMA_CORE_TESTS" --dev "$DEV" -v "${MODULES[@]}" >"$log" 2>&1
python3 "$HERE/unittest2tap.py" "$TAP_PREFIX" "$log" \
	"$HERE/rdmacore-needs-engine.txt" || TAP_FAILED=1
tap_done
