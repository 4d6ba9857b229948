# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# Open MPI over UCX, shared by t_libs.sh (two ranks in one guest) and the
# two-host suite (a rank in each guest).  Source it after lib.sh.

# The MPI program: point-to-point patterns that each rank recomputes and
# allreduces with known sums (tests/guest/mpi_check.cpp); rank 0 prints OK.
# shellcheck disable=SC2034 # read by the scripts that source this file
MPI_CHECK=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/tests/urdma_mpi_check

# mpirun_ucx MPIRUN_ARGS...: mpirun as root, within 180 s, with UCX's
# verbs transports as its only way between ranks: pml ucx, no shared
# memory or TCP BTL, so that every message crosses an RDMA device.
mpirun_ucx() {
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout 180 mpirun --mca pml ucx --mca btl '^vader,sm,openib,tcp' \
		--mca osc ucx -x UCX_TLS=rc_verbs,ud_verbs,self "$@"
}

# wqes DEV: the WQEs urdma's DEV has taken (0 for a device without the
# counter).
wqes() {
	rdma statistic show link "$1/1" 2>/dev/null |
		grep -oE '(^| )wqes [0-9]+' | grep -oE '[0-9]+$' || echo 0
}

# mpi_ran KIND LOG RC TAKEN: the MPI run that wrote LOG and exited RC
# checked its data (rank 0 printed OK), and on urdma its device took
# TAKEN >= 20 WQEs meanwhile (the traffic went through it).
mpi_ran() {
	[ "$3" = 0 ] && grep -qx OK "$2" && { [ "$1" != urdma ] || [ "$4" -ge 20 ]; }
}
