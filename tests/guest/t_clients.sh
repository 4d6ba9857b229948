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
# mount/unmount cycles; Debian's kernels (the debug kernel is built
# without NFS).  SMB Direct (ksmbd and the cifs client with "rdma"): the
# debug kernel only (Debian's kernels are built without it).
#   t_clients.sh [KIND...]     KIND: urdma rxe (default: both; rxe on
#                              Debian's 6.12 only, for time)
. "$(dirname "$0")/lib.sh"
# The data each client moves and checks: 32 MiB; 8 on the debug kernel,
# where KASAN checks every byte (the same paths, for time).
[ "${URDMA_KERNEL:-}" = debug ] && NVMF_MIB=${NVMF_MIB:-8}
# shellcheck source=nvmeof.sh
. "$(dirname "$0")/nvmeof.sh"
# shellcheck source=nfs.sh
. "$(dirname "$0")/nfs.sh"
# shellcheck source=smb.sh
. "$(dirname "$0")/smb.sh"

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
# 50 cycles; 10 on the debug kernel (time: the same paths, 5x slower).
if [ "${URDMA_KERNEL:-}" = debug ]; then
	NVMF_CYCLES=${NVMF_CYCLES:-10}
else
	NVMF_CYCLES=${NVMF_CYCLES:-50}
fi
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
		fs_data "$name" "$mnt" "$NFS_EXPORT" "$vers"
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
# fs_data NAME MNT SERVERDIR TAG: a network file system's data checked:
# NVMF_MIB MiB copied in and compared after the page cache is dropped, and
# compared again in the server's directory; fio 4k/128k random writes with
# crc32c verification; a source tree copied and compared file by file.
fs_data() {
	local name=$1 mnt=$2 srv=$3 tag=$4
	fs_data_copy "$@"
	check "$name: fio 4k/128k random writes, crc32c verified" \
		timeout 180 fio --name=fsdata --filename="$mnt/fio-$tag" \
		--size=8M --rw=randwrite --bssplit=4k/50:128k/50 \
		--direct=1 --ioengine=psync --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--output=/dev/null
	check "$name: a source tree copied, compared file by file" \
		fs_tree "$mnt/tree-$tag"
}
# fs_data_copy NAME MNT SERVERDIR TAG: fs_data's first part, the NVMF_MIB MiB.
fs_data_copy() {
	check "$1: $NVMF_MIB MiB written, read back equal (page cache dropped)" \
		fs_copy "$WORK/data" "$2/data-$4"
	check "$1: the server holds the same bytes" cmp "$WORK/data" "$3/data-$4"
}
fs_tree() {
	local src d
	src=$(cd "$(dirname "$0")/../.." && pwd)
	mkdir -p "$1" && cp -a "$src/kernel" "$src/provider" "$src/uapi" "$1"/ &&
		sync && echo 3 >/proc/sys/vm/drop_caches || return 1
	for d in kernel provider uapi; do
		diff -r "$src/$d" "$1/$d" || return 1
	done
}

# smb KIND DEV ADDR: the share on ADDR (DEV's) mounted over SMB Direct,
# data checked, unmounted with no RC QP left; then mount/unmount cycles.
# The peers (rxe, siw) are compared on the mount and the data copy only,
# for time: this runs on the debug kernel.
SMB_CYCLES=${SMB_CYCLES:-3}
smb() {
	local kind=$1 dev=$2 addr=$3 mnt=$WORK/smb out i
	local name="$kind: SMB Direct"
	mkdir -p "$mnt"
	if ! out=$(timeout 60 mount -t cifs -o "$SMB_OPTS" "//$addr/share" "$mnt" 2>&1); then
		tap_fail "$name: cifs mounts ksmbd's share with rdma" "$out" \
			"$(dmesg | tail -n 12)"
		return
	fi
	grep -q " $mnt cifs .*rdma" /proc/mounts && [ "$(rc_qps "$dev")" -ge 1 ] &&
		tap_ok "$name: cifs mounts ksmbd's share with rdma, on $dev's RC QPs" ||
		tap_fail "$name: cifs mounts ksmbd's share with rdma, on $dev's RC QPs" \
			"$(grep " $mnt " /proc/mounts)" "$(rdma res show qp)"
	if [ "$kind" != urdma ]; then
		fs_data_copy "$name" "$mnt" "$SMB_SHARE" "$kind"
		check "$name: unmounts" timeout 60 umount "$mnt"
		rm -rf "${SMB_SHARE:?}"/*
		return
	fi
	fs_data "$name" "$mnt" "$SMB_SHARE" "$kind"
	check "$name: unmounts" timeout 60 umount "$mnt"
	wait_for 10 nvmf_no_qps "$dev" &&
		tap_ok "$name: no RC QP is left behind" ||
		tap_fail "$name: no RC QP is left behind" "$(rdma res show qp 2>&1)"
	for ((i = 1; i <= SMB_CYCLES; i++)); do
		timeout 60 mount -t cifs -o "$SMB_OPTS" "//$addr/share" "$mnt" &&
			cmp "$WORK/data" "$mnt/data-$kind" &&
			timeout 60 umount "$mnt" || break
	done
	[ "$i" -gt "$SMB_CYCLES" ] && wait_for 10 nvmf_no_qps "$dev" &&
		tap_ok "$name: $SMB_CYCLES mount/read/unmount cycles" ||
		tap_fail "$name: $SMB_CYCLES mount/read/unmount cycles" \
			"cycle $i failed" "$(dmesg | tail -n 8)"
	umount "$mnt" 2>/dev/null
	rm -rf "${SMB_SHARE:?}"/*
}
# smb_peers_up: rxe0 on veth1 (10.77.0.2) and siw0 on veth2 (10.78.0.1),
# to compare SMB Direct on them; up before ksmbd starts (see above).
# SMB_PEERS: "KIND DEV ADDR" of each that came up.
SMB_PEERS=()
smb_peers_up() {
	local out
	if out=$(rdma link add rxe0 type rxe netdev veth1 2>&1) && wait_gid_v4 rxe0; then
		SMB_PEERS+=("rxe rxe0 10.77.0.2")
	else
		tap_fail "SMB Direct: rxe0 on veth1 for the comparison" "$out"
	fi
	if out=$(modprobe siw 2>&1 && ip link add veth2 type veth peer name veth3 &&
		ip addr add 10.78.0.1/24 dev veth2 && ip link set veth2 up &&
		ip link set veth3 up && rdma link add siw0 type siw netdev veth2 2>&1); then
		SMB_PEERS+=("siw siw0 10.78.0.1")
	else
		tap_fail "SMB Direct: siw0 on veth2 for the comparison" "$out"
	fi
}
smb_peers_down() {
	rdma link del rxe0
	rdma link del siw0
	ip link del veth2
} >/dev/null 2>&1

head -c $((NVMF_MIB << 20)) /dev/urandom >"$WORK/data"
head -c $((8 << 20)) "$WORK/data" >"$WORK/data8"
NFS=${NFS-1}
if [ -n "$NFS" ] && ! modprobe -q nfsd; then
	tap_skip "NFS over RDMA" "the kernel has no nfsd (the debug kernel is built without NFS)"
	NFS=
elif [ -n "$NFS" ] && ! out=$(nfsd_up 2>&1); then
	tap_fail "nfsd serves a tmpfs on RDMA port 20049" "$out"
	NFS=
fi
# CIFS_SMB_DIRECT's tunables are in /proc/fs/cifs; SMB_SERVER_SMBDIRECT
# shows only in the listener.
SMB=${SMB-1}
modprobe -q cifs 2>/dev/null
if [ -z "$SMB" ]; then
	:
elif [ ! -e /proc/fs/cifs/rdma_readwrite_threshold ]; then
	tap_skip "SMB Direct" "the kernel is built without CONFIG_CIFS_SMB_DIRECT, as Debian's kernels are; the debug kernel runs it"
	SMB=
else
	smb_peers_up
	if ! out=$(smbd_up 2>&1); then
		tap_fail "ksmbd shares a tmpfs over SMB Direct" "$out"
		SMB=
	fi
fi
NVMF=${NVMF-1}
if [ -n "$NVMF" ] && ! out=$(nvmf_modules); then
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
		[ -z "$SMB" ] || smb urdma "$DEV" 10.77.0.1
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
if [ -n "$SMB" ]; then
	for p in "${SMB_PEERS[@]}"; do
		# shellcheck disable=SC2086 # KIND DEV ADDR
		smb $p
	done
	smbd_down
fi
smb_peers_down
tap_done
