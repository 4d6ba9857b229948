// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma_abi_test: attack urdma's uverbs ABI through the raw legacy write()
 * interface of /dev/infiniband/uverbsN, with valid and hostile input.
 *
 * Built on tools/testing/selftests/kselftest_harness.h from linux-source-6.12
 * (see build.sh).  Every test runs in its own process; tests that need the
 * device's whole PD space (max_pd, enforced by urdma per device) assume that
 * nothing else uses urdma0 while they run.
 *
 * The write ABI, as drivers/infiniband/core/uverbs_main.c implements it:
 *  - legacy command: [cmd_hdr][core cmd][driver cmd]; in_words counts all of
 *    it in 4-byte words and must equal the write() count.  The driver command
 *    is what follows the core struct (req_size).  The core response is
 *    written at cmd.response, the driver response right after it, at
 *    response + resp_size; out_words covers both, in 4-byte words.
 *  - extended command: [cmd_hdr][ex_cmd_hdr][core cmd][driver cmd], with
 *    in_words/out_words (core) and provider_in/out_words (driver) in 8-byte
 *    words, and the response address in ex_cmd_hdr.response.
 *
 * Device: the uverbs node whose ibdev is $URDMA_DEV (default urdma0).
 */

/*
 * One program, one translation unit: the harness keeps its list of tests in
 * static variables, so the parts in abi/, one per object, are included here
 * in an order where each sees the helpers it uses.
 */
#include "abi/common.h"
#include "abi/context.c"
#include "abi/pd.c"
#include "abi/device.c"
#include "abi/garbage.c"
#include "abi/queues.h"
#include "abi/cq.c"
#include "abi/qp.c"
#include "abi/qp_modify.c"
#include "abi/srq.c"
#include "abi/ah.c"
#include "abi/limits.c"
#include "abi/killed.c"
#include "abi/fuzz.c"

TEST_HARNESS_MAIN
