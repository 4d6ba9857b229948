#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make demo: install what is missing, build everything, boot a Debian 6.12
# guest, create urdma0 on a veth, show it with the standard tools and move
# data over it (ibv_rc_pingpong, ib_write_bw).
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
step "booting a guest: urdma0 on veth0, then traffic over it"
# In the guest: the tools, then ibv_rc_pingpong and ib_write_bw with server
# and client in the guest, both on urdma0 (its IPv4 RoCE v2 GID).
exec scripts/urdma-vm --kernel debian-6.12 -- bash -c '
	set -e
	. tests/guest/lib.sh
	echo "\$ rdma link show"; rdma link show
	echo; echo "\$ ibv_devices"; ibv_devices
	echo; echo "\$ ibv_devinfo -d urdma0"; ibv_devinfo -d urdma0
	ibv_devinfo -d urdma0 | grep -q PORT_ACTIVE
	echo; echo "urdma0 is ACTIVE."
	wait_gid_v4 urdma0 || { echo "urdma0 has no IPv4 RoCE v2 GID"; exit 1; }
	# pair TITLE PORT CMD...: server and client, both outputs, both must exit 0.
	pair() {
		local title=$1 port=$2
		shift 2
		echo; echo "\$ $* &   # server"; echo "\$ $* 127.0.0.1   # client"
		run_pair /tmp/demo "$port" "${TMO[@]}" "$@"
		sed "s/^/[server] /" /tmp/demo.server
		sed "s/^/[client] /" /tmp/demo.client
		[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] ||
			{ echo "$title failed (server exit $PAIR_SRC, client exit $PAIR_CRC)"; exit 1; }
	}
	pair ibv_rc_pingpong 18515 ibv_rc_pingpong -d urdma0 -g "$GIDIDX" -n 1000 -s 65536
	pair ib_write_bw 18516 ib_write_bw -d urdma0 -x "$GIDIDX" -F -n 1000 -s 65536 -p 18516
	echo; echo "urdma0 moved data: ibv_rc_pingpong and ib_write_bw passed."'
