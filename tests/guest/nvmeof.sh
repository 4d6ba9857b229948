# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# NVMe over Fabrics with the kernel's own target and host, no nvme-cli:
# the target (nvmet-rdma) is set up through configfs and exports a RAM disk
# (brd); the host (nvme-rdma) connects through /dev/nvme-fabrics.  Sourced
# by t_clients.sh and by the two-host suite, after lib.sh.

NVMF_CFS=/sys/kernel/config/nvmet
NVMF_NQN=nqn.2026-12.org.urdma:clients
NVMF_MIB=${NVMF_MIB:-32}

# nvmf_modules: load the modules (a RAM disk of 2 x NVMF_MIB); says why not.
nvmf_modules() {
	modprobe -a nvmet nvmet-rdma nvme-rdma 2>&1 &&
		modprobe brd rd_nr=1 rd_size=$((NVMF_MIB * 2048)) 2>&1 &&
		{ mountpoint -q /sys/kernel/config ||
			mount -t configfs none /sys/kernel/config 2>&1; }
}

# NVMF_TRTYPE: the transport of nvmet_up's port and nvme_connect's
# request: rdma (the default) or tcp (make bench's comparison).
NVMF_TRTYPE=${NVMF_TRTYPE:-rdma}

# nvmet_up ADDR: the target exports /dev/ram0 as namespace 1 on ADDR:4420.
nvmet_up() {
	local s=$NVMF_CFS/subsystems/$NVMF_NQN p=$NVMF_CFS/ports/1
	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" &&
		mkdir "$s/namespaces/1" &&
		echo /dev/ram0 >"$s/namespaces/1/device_path" &&
		echo 1 >"$s/namespaces/1/enable" &&
		mkdir "$p" && echo "$NVMF_TRTYPE" >"$p/addr_trtype" &&
		echo ipv4 >"$p/addr_adrfam" && echo "$1" >"$p/addr_traddr" &&
		echo 4420 >"$p/addr_trsvcid" &&
		ln -s "$s" "$p/subsystems/$NVMF_NQN"
}
nvmet_down() {
	local s=$NVMF_CFS/subsystems/$NVMF_NQN p=$NVMF_CFS/ports/1
	rm -f "$p/subsystems/$NVMF_NQN"
	rmdir "$p" 2>/dev/null
	[ -d "$s" ] || return 0
	echo 0 >"$s/namespaces/1/enable" 2>/dev/null
	rmdir "$s/namespaces/1" 2>/dev/null
	rmdir "$s" 2>/dev/null
}

# nvme_connect ADDR [OPTS]: connects, with OPTS (k=v,...) added to the
# request; prints the new controller's name (nvmeN).
nvme_connect() {
	local out
	exec 3<>/dev/nvme-fabrics || return 1
	echo "transport=$NVMF_TRTYPE,traddr=$1,trsvcid=4420,nqn=$NVMF_NQN${2:+,$2}" >&3 ||
		{ exec 3>&-; return 1; }
	read -r out <&3
	exec 3>&-
	out=${out#*instance=}
	echo "nvme${out%%,*}"
}
nvme_disconnect() { echo 1 >"/sys/class/nvme/$1/delete_controller"; }
# nvmf_connect ADDR: connects; NVMF_CTRL is the controller (a retry loop
# may call it through wait_for).
nvmf_connect() {
	NVMF_CTRL=$(nvme_connect "$1" 2>/dev/null) &&
		[ -d "/sys/class/nvme/$NVMF_CTRL" ]
}

# rc_qps DEV: how many RC QPs DEV has.
rc_qps() { rdma res show qp link "$1/1" 2>/dev/null | grep -c " type RC "; }

# nvmf_data NAME CTRL DATA: once controller CTRL's namespace 1 appears,
# DATA (NVMF_MIB MiB) written to it around the page cache, read back
# equal; then through the page cache at an offset, read back equal after
# the cache is dropped.  TAP lines.
nvmf_data() {
	local name=$1 ns=/dev/${2}n1 data=$3 out
	if ! wait_for 20 test -b "$ns"; then
		tap_fail "$name: the namespace appears" "$(ls /dev/nvme* 2>&1)"
		return
	fi
	if ! out=$(dd if="$data" of="$ns" bs=1M oflag=direct 2>&1); then
		tap_fail "$name: $NVMF_MIB MiB written through the fabric (O_DIRECT)" "$out"
		return
	fi
	cmp "$data" <(dd if="$ns" bs=1M count=$NVMF_MIB iflag=direct 2>/dev/null) &&
		tap_ok "$name: $NVMF_MIB MiB written and read back (O_DIRECT), byte for byte" ||
		tap_fail "$name: $NVMF_MIB MiB written and read back (O_DIRECT), byte for byte"
	dd if="$data" of="$ns" bs=4k seek=$((NVMF_MIB * 256)) conv=fsync 2>/dev/null &&
		echo 3 >/proc/sys/vm/drop_caches &&
		cmp "$data" <(dd if="$ns" bs=4k skip=$((NVMF_MIB * 256)) \
			count=$((NVMF_MIB * 256)) 2>/dev/null) &&
		tap_ok "$name: $NVMF_MIB MiB through the page cache read back equal" ||
		tap_fail "$name: $NVMF_MIB MiB through the page cache read back equal"
}

# nvmf_pattern FILE: NVMF_MIB MiB of pseudo-random bytes, the same on every
# host (a fixed seed): the two-host target checks what its host wrote.
nvmf_pattern() {
	python3 -c 'import random, sys
random.seed(21)
sys.stdout.buffer.write(random.randbytes(int(sys.argv[1]) << 20))' \
		"$NVMF_MIB" >"$1"
}
