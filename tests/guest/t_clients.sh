#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Kernel clients that nobody here wrote, on urdma and, beside it, on rxe in
# the same boot.  NVMe over Fabrics (nvmeof.sh): the kernel target exports
# a RAM disk on the device's address, the kernel host connects to it, and
# 32 MiB of random data written through the fabric read back byte for
# byte, around the page cache and through it.  The queues must be the
# device's RC QPs, and none may be left when the host has disconnected.
# NFS over RDMA (nfs-kernel-server's nfsd on RDMA port 20049, the kernel
# client with proto=rdma): v4.2 and v3 with data checked, and
# mount/unmount cycles.  The Debian kernels only (the debug kernel is
# built without NVMe-oF and NFS).
#   t_clients.sh [KIND...]     KIND: urdma rxe (default: both; rxe on
#                              6.12 only, for time)
. "$(dirname "$0")/lib.sh"
# shellcheck source=nvmeof.sh
. "$(dirname "$0")/nvmeof.sh"

client_kinds "$@"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# nvmeof KIND DEV ADDR: the target on ADDR (DEV's), the host connects to it.
nvmeof() {
	local kind=$1 dev=$2 addr=$3 out
	if ! out=$(nvmet_up "$addr" 2>&1); then
		tap_fail "$kind: nvmet-rdma exports a RAM disk on $addr" "$out"
		nvmet_down
		return
	fi
	if ! nvmf_connect "$addr"; then
		tap_fail "$kind: nvme-rdma connects to $addr" "$(dmesg | tail -n 8)"
		nvmet_down
		return
	fi
	tap_ok "$kind: nvme-rdma connects to $addr ($NVMF_CTRL)"
	# The admin queue and an I/O queue per CPU, a QP on each side of each.
	[ "$(rc_qps "$dev")" -ge 4 ] &&
		tap_ok "$kind: the queues are $dev's RC QPs" ||
		tap_fail "$kind: the queues are $dev's RC QPs" "$(rdma res show qp 2>&1)"
	nvmf_data "$kind" "$NVMF_CTRL" "$WORK/data"
	check "$kind: the host disconnects" nvme_disconnect "$NVMF_CTRL"
	nvmet_down
	check "$kind: the target is taken down" test ! -e "$NVMF_CFS/ports/1"
	[ "$(rc_qps "$dev")" = 0 ] &&
		tap_ok "$kind: no RC QP is left behind" ||
		tap_fail "$kind: no RC QP is left behind" "$(rdma res show qp 2>&1)"
}

# nvmeof_hard DEV ADDR: what a storage user does to NVMe-oF beyond moving
# data, on urdma: fio with crc32c verification (4k/128k random reads and
# writes, QD 1 and 32, a job per I/O queue), the target with and without
# an SRQ, 50 connect/disconnect cycles, the target's port removed during
# verified I/O and put back (the host reconnects and the I/O completes),
# and a writer killed mid-I/O (the controller stays live and moves data).
NVMF_CYCLES=${NVMF_CYCLES:-50}
nvmf_fio() {
	timeout 300 fio --name=v --filename="/dev/${1}n1" --direct=1 \
		--ioengine=libaio --rw=randrw --bssplit=4k/50:128k/50 \
		--iodepth="$2" --numjobs=2 --size=4M --offset_increment=8M \
		--verify=crc32c --do_verify=1 --verify_fatal=1 \
		--verify_state_save=0 --group_reporting --output=/dev/null "${@:3}"
}
nvmf_state() { cat "/sys/class/nvme/$1/state" 2>/dev/null; }
nvmf_live() { [ "$(nvmf_state "$1")" = live ]; }
nvmeof_hard() {
	local dev=$1 addr=$2 srq out i c p=$NVMF_CFS/ports/1 fpid
	local t0=$SECONDS
	for srq in N Y; do
		nvmet_down
		# rmmod, not modprobe -r: that would unload nvmet and its
		# configfs tree with it.
		rmmod nvmet_rdma && modprobe nvmet-rdma use_srq=$srq &&
			out=$(nvmet_up "$addr" 2>&1) && nvmf_connect "$addr" &&
			wait_for 20 test -b "/dev/${NVMF_CTRL}n1" || {
			tap_fail "urdma: nvmet-rdma use_srq=$srq: the host connects" "$out"
			continue
		}
		if [ $srq = Y ]; then
			rdma res show srq 2>/dev/null | grep -q "dev $dev .*nvmet_rdma" &&
				tap_ok "urdma: use_srq=Y: the target's queues share $dev's SRQ" ||
				tap_fail "urdma: use_srq=Y: the target's queues share $dev's SRQ" \
					"$(rdma res show srq 2>&1)"
		fi
		for qd in 1 32; do
			check "urdma: use_srq=$srq: fio 4k/128k random I/O, QD $qd, 2 jobs, crc32c verified" \
				nvmf_fio "$NVMF_CTRL" $qd
		done
		nvme_disconnect "$NVMF_CTRL"
	done
	echo "# fio with and without SRQ: $((SECONDS - t0)) s"
	t0=$SECONDS
	for ((i = 1; i <= NVMF_CYCLES; i++)); do
		nvmf_connect "$addr" && nvme_disconnect "$NVMF_CTRL" || break
	done
	echo "# $NVMF_CYCLES cycles: $((SECONDS - t0)) s"
	t0=$SECONDS
	# Both sides' QPs go with each disconnect: the target's once
	# ib_drain_qp() has seen Last WQE Reached on its SRQ (without it, it
	# waits 60 s a QP, and 150 QPs were left after 50 cycles).
	[ $i -gt "$NVMF_CYCLES" ] && wait_for 10 nvmf_no_qps "$dev" &&
		tap_ok "urdma: $NVMF_CYCLES connect/disconnect cycles (SRQ target), no RC QP left" ||
		tap_fail "urdma: $NVMF_CYCLES connect/disconnect cycles (SRQ target), no RC QP left" \
			"stopped at cycle $i; $(rc_qps "$dev") RC QPs" "$(dmesg | tail -n 5)"

	# The port goes away under verified I/O and comes back.
	c=$(nvme_connect "$addr" reconnect_delay=1,ctrl_loss_tmo=60 2>&1)
	if ! nvmf_live "$c" || ! wait_for 20 test -b "/dev/${c}n1"; then
		tap_fail "urdma: the host connects with reconnect_delay=1" "$c"
		return
	fi
	nvmf_fio "$c" 8 --time_based --runtime=10 &
	fpid=$!
	sleep 3
	rm -f "$p/subsystems/$NVMF_NQN"
	wait_for 10 eval '! nvmf_live "$c"'
	out="state with the port gone: $(nvmf_state "$c")"
	sleep 2
	ln -s "$NVMF_CFS/subsystems/$NVMF_NQN" "$p/subsystems/$NVMF_NQN"
	if wait "$fpid" && nvmf_live "$c"; then
		tap_ok "urdma: port removed under verified I/O and put back: reconnected, I/O completed"
		echo "# $out"
	else
		tap_fail "urdma: port removed under verified I/O and put back: reconnected, I/O completed" \
			"$out; now $(nvmf_state "$c")" "$(dmesg | grep nvme | tail -n 8)"
	fi

	echo "# port removal: $((SECONDS - t0)) s"
	t0=$SECONDS
	# A writer killed with I/O in flight: fio itself, its job a thread
	# (a timeout(1) wrapper, or fio's parent process, would die and
	# leave the job writing).
	fio --name=k --filename="/dev/${c}n1" --direct=1 --thread \
		--ioengine=libaio --rw=randwrite --bs=128k --iodepth=16 \
		--size=16M --time_based --runtime=30 --output=/dev/null &
	fpid=$!
	sleep 3
	kill -9 $fpid
	wait $fpid
	nvmf_live "$c" && NVMF_MIB=8 nvmf_data "urdma: after a writer was killed mid-I/O" "$c" "$WORK/data8" ||
		tap_fail "urdma: the controller is live after a writer was killed mid-I/O" "$(nvmf_state "$c")"
	echo "# killed writer: $((SECONDS - t0)) s"
	nvme_disconnect "$c"
	nvmet_down
	rmmod nvmet_rdma && modprobe nvmet-rdma	# use_srq back to its default
	wait_for 20 nvmf_no_qps "$dev" &&
		tap_ok "urdma: no RC QP is left behind" ||
		tap_fail "urdma: no RC QP is left behind" "$(rdma res show qp 2>&1)"
}
nvmf_no_qps() { [ "$(rc_qps "$1")" = 0 ]; }

# nfsd_up: the kernel's NFS server, exporting a tmpfs, listening on RDMA
# port 20049 (and TCP 2049), NFSv3 and v4.2; rpcbind and mountd for v3.
NFS_EXPORT=/run/urdma-nfs
nfsd_up() {
	modprobe nfsd && modprobe rpcrdma || return 1
	mkdir -p "$NFS_EXPORT" /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery
	mount -t tmpfs tmpfs "$NFS_EXPORT" &&
		mount -t nfsd nfsd /proc/fs/nfsd &&
		mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs || return 1
	rpcbind -w || return 1
	echo "$NFS_EXPORT *(rw,fsid=0,no_root_squash,insecure,no_subtree_check)" \
		>/etc/exports
	exportfs -ra && rpc.mountd && rpc.nfsd 4 || return 1
	echo 'rdma 20049' >/proc/fs/nfsd/portlist &&
		grep -q '^rdma 20049' /proc/fs/nfsd/portlist
}

# nfs KIND DEV ADDR: NFS over RDMA to the server on ADDR (DEV's): v4.2
# and v3, each mounted, data checked (a file copied and compared around
# the page cache, fio with crc32c verification, a source tree copied and
# compared), unmounted with no RC QP left; then mount/unmount cycles.
NFS_CYCLES=${NFS_CYCLES:-3}
nfs() {
	local kind=$1 dev=$2 addr=$3 mnt=$WORK/mnt vers out i
	mkdir -p "$mnt"
	for vers in 4.2 3; do
		local opts=vers=$vers,proto=rdma,port=20049 name="$kind: NFSv$vers"
		local path=/
		[ "$vers" = 3 ] && opts+=,nolock && path=$NFS_EXPORT
		if ! out=$(timeout 60 mount -t nfs -o "$opts" "$addr:$path" "$mnt" 2>&1); then
			tap_fail "$name mounts over RDMA ($opts)" "$out" "$(dmesg | tail -n 8)"
			continue
		fi
		grep -q " $mnt nfs.*proto=rdma" /proc/mounts &&
			[ "$(rc_qps "$dev")" -ge 1 ] &&
			tap_ok "$name mounts over RDMA, on $dev's RC QPs" ||
			tap_fail "$name mounts over RDMA, on $dev's RC QPs" \
				"$(grep " $mnt " /proc/mounts)" "$(rdma res show qp)"
		check "$name: 32 MiB written, read back equal (page cache dropped)" \
			nfs_copy "$WORK/data" "$mnt/data-$vers"
		check "$name: the server holds the same bytes" \
			cmp "$WORK/data" "$NFS_EXPORT/data-$vers"
		check "$name: fio 4k/128k random writes, crc32c verified" \
			timeout 120 fio --name=nfs --filename="$mnt/fio-$vers" \
			--size=8M --rw=randwrite --bssplit=4k/50:128k/50 \
			--direct=1 --ioengine=psync --verify=crc32c \
			--do_verify=1 --verify_fatal=1 --verify_state_save=0 \
			--output=/dev/null
		check "$name: a source tree copied, compared file by file" \
			nfs_tree "$mnt/tree-$vers"
		check "$name unmounts" timeout 60 umount "$mnt"
		[ "$(rc_qps "$dev")" = 0 ] &&
			tap_ok "$name: no RC QP is left behind" ||
			tap_fail "$name: no RC QP is left behind" "$(rdma res show qp 2>&1)"
	done
	for ((i = 1; i <= NFS_CYCLES; i++)); do
		timeout 60 mount -t nfs -o vers=4.2,proto=rdma,port=20049 \
			"$addr:/" "$mnt" && cmp "$WORK/data" "$mnt/data-4.2" &&
			timeout 60 umount "$mnt" || break
	done
	[ "$i" -gt "$NFS_CYCLES" ] && [ "$(rc_qps "$dev")" = 0 ] &&
		tap_ok "$kind: $NFS_CYCLES NFSv4.2 mount/read/unmount cycles" ||
		tap_fail "$kind: $NFS_CYCLES NFSv4.2 mount/read/unmount cycles" \
			"cycle $i failed" "$(dmesg | tail -n 8)"
	umount "$mnt" 2>/dev/null
	rm -rf "${NFS_EXPORT:?}"/*
}
nfs_copy() {
	cp "$1" "$2" && sync && echo 3 >/proc/sys/vm/drop_caches && cmp "$1" "$2"
}
nfs_tree() {
	local src d
	src=$(cd "$(dirname "$0")/../.." && pwd)
	mkdir -p "$1" && cp -a "$src/kernel" "$src/provider" "$src/uapi" "$1"/ &&
		sync && echo 3 >/proc/sys/vm/drop_caches || return 1
	for d in kernel provider uapi; do
		diff -r "$src/$d" "$1/$d" || return 1
	done
}
# nfsd_down: the server stopped, its listeners closed, everything unmounted.
nfsd_down() {
	rpc.nfsd 0
	pkill -x rpc.mountd
	pkill -x rpcbind
	umount /var/lib/nfs/rpc_pipefs /proc/fs/nfsd "$NFS_EXPORT"
} >/dev/null 2>&1

head -c $((NVMF_MIB << 20)) /dev/urandom >"$WORK/data"
head -c $((8 << 20)) "$WORK/data" >"$WORK/data8"
NFS=${NFS-1}
if ! out=$(nfsd_up 2>&1); then
	tap_fail "nfsd serves a tmpfs on RDMA port 20049" "$out"
	NFS=
fi
NVMF=1
if ! out=$(nvmf_modules); then
	tap_skip "NVMe over Fabrics" "the kernel's modules would not load: $out"
	NVMF=
fi
for kind in "${KINDS[@]}"; do
	case $kind in
	urdma)
		wait_gid_v4 "$DEV" || { tap_fail "$DEV has an IPv4 GID"; continue; }
		[ -z "$NVMF" ] || nvmeof urdma "$DEV" 10.77.0.1
		if [ -z "$NVMF" ]; then
			:
		elif [[ $(uname -r) == 6.12.* ]]; then
			nvmeof_hard "$DEV" 10.77.0.1
		else
			tap_skip "urdma: NVMe-oF beyond moving data" "the 6.12 lane runs it (time)"
		fi
		[ -z "$NFS" ] || nfs urdma "$DEV" 10.77.0.1
		;;
	rxe)
		if ! out=$(rdma link add rxe0 type rxe netdev veth1 2>&1); then
			tap_fail "rdma link add rxe0 type rxe netdev veth1" "$out"
			continue
		fi
		if wait_gid_v4 rxe0; then
			[ -z "$NVMF" ] || nvmeof rxe rxe0 10.77.0.2
			[ -z "$NFS" ] || nfs rxe rxe0 10.77.0.2
		fi
		rdma link del rxe0
		;;
	*)
		tap_fail "unknown KIND $kind"
		;;
	esac
done
[ -z "$NFS" ] || nfsd_down
tap_done
