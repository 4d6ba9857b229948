#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make demo: install what is missing, build everything, boot a Debian 6.12
# guest, create urdma0 on a veth and show it with the standard tools.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"

step() { printf '\n==> %s\n' "$*"; }

step "installing missing Debian packages"
scripts/deps.sh
step "building urdma.ko for Debian 6.12"
make -s modules
step "building rdma-core 56.1 with liburdma (cached after the first run)"
scripts/rdma-core.sh build
step "booting a guest: urdma0 on veth0"
exec scripts/urdma-vm --kernel debian-6.12 -- bash -c '
	set -e
	echo "\$ rdma link show"; rdma link show
	echo; echo "\$ ibv_devices"; ibv_devices
	echo; echo "\$ ibv_devinfo -d urdma0"; ibv_devinfo -d urdma0
	ibv_devinfo -d urdma0 | grep -q PORT_ACTIVE
	echo; echo "urdma0 is ACTIVE."'
