#!/bin/bash
# Build the C++ test programs and the examples (examples/) against the staged
# rdma-core 56.1 userland.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
STAGE=$("$TOP/scripts/rdma-core.sh" dir)/stage
[ -d "$STAGE/usr/include/infiniband" ] || {
	echo "build-tests: no rdma-core stage at $STAGE (make provider)"; exit 1; }

cmake -S "$TOP/tests/verbs" -B "$TOP/build/tests" -DRDMA_STAGE="$STAGE" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$TOP/build/tests" -j2
cmake -S "$TOP/examples" -B "$TOP/build/examples" -DRDMA_STAGE="$STAGE" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$TOP/build/examples" -j2
"$TOP/tests/selftests/build.sh"
