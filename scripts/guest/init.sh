#!/bin/bash
# PID 1 of an urdma-vm guest, started by the initramfs (scripts/guest/initramfs-init.sh)
# after it has mounted the overlay root, the pseudo and scratch filesystems, the job
# directory (/run/urdma-vm), the project tree and, for the debug kernel, its modules
# at /lib/modules/<release>.
#
# Sources the job written by scripts/urdma-vm, sets up the kernel modules and the
# netdev, runs the command with stdout/stderr on virtio-serial ports (the host prints
# them), prints "URDMA-VM-EXIT=<rc>" on the console and resets the machine.
#
# No `set -e`: PID 1 must never exit; every path ends in finish().  Under TCG each
# exec costs ~0.1 s, so builtins are preferred.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
JOB=/run/urdma-vm
umask 022

# Messages go through the kernel log: they get timestamps, and the console prints
# them synchronously.  (Plain writes to the console tty are drained by interrupts
# and may be lost when the machine resets right after.)
log() { echo "<5>urdma-vm: $*" >/dev/kmsg; }

# Prints the exit marker, flushes, and resets (QEMU runs with -no-reboot, so it exits).
finish() {
	local rc=$1
	echo "$rc" >"$JOB/status" 2>/dev/null
	sync
	echo "<5>URDMA-VM-EXIT=$rc" >/dev/kmsg
	echo b >/proc/sysrq-trigger
	sleep 60
}

setup_failed() {
	local step=$1
	shift
	log "setup failed: $*"
	echo "<5>URDMA-VM-SETUP-FAILED=$step" >/dev/kmsg
	sleep 1 # let the console tty drain the failing step's output
	finish 125
}

check_environment() {
	# Without the guest's own proc, /proc would be the host's, read through 9p.
	{ [ -e /proc/sys/kernel/sysrq ] && [ "$(stat -f -c %T /proc)" = proc ]; } ||
		{ echo "urdma-vm: /proc is not the guest's procfs" >/dev/console; exit 1; }
	# shellcheck source=/dev/null
	. "$JOB/job.env" || setup_failed job "cannot read $JOB/job.env"
	if [ "${URDMA_VM_TRACE:-0}" = 1 ]; then
		PS4='+ $EPOCHREALTIME '
		set -x
	fi
}

setup_system() {
	echo urdma-vm >/proc/sys/kernel/hostname
	# 64 2-MiB huge pages (vm.nr_hugepages); normally reserved at boot by hugepages=64.
	[ "$(</proc/sys/vm/nr_hugepages)" -ge 64 ] || echo 64 >/proc/sys/vm/nr_hugepages
	# Command output goes over virtio-serial; Debian 6.1 has virtio_console as a module.
	[ -d /sys/bus/virtio/drivers/virtio_console ] || modprobe virtio_console
}

# The job's variables from older urdma-vm versions (a job is written by the same
# tree, but be lenient).
URDMA_VM_URDMA_LINK=1 URDMA_VM_NIC_MAC='' URDMA_VM_NIC_IP='' URDMA_NIC=''

# Prints the name of the interface with MAC address $1.
iface_by_mac() {
	local d mac
	for d in /sys/class/net/*; do
		read -r mac <"$d/address" 2>/dev/null || continue
		[ "$mac" = "$1" ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

# wait_until TENTHS CMD...: polls CMD every 0.1 s.
wait_until() {
	local t=$1
	shift
	while ! "$@"; do
		t=$((t - 1))
		[ $t -gt 0 ] || return 1
		sleep 0.1
	done
}

nic_has_carrier() { local c; read -r c <"/sys/class/net/$URDMA_NIC/carrier" 2>/dev/null && [ "$c" = 1 ]; }
nic_has_ip6ll() { [[ $(</proc/net/if_inet6) == *" $URDMA_NIC"* ]]; }

# --nic: the virtio-net NIC (found by its MAC) with the --ip address and an IPv6
# link-local address (DAD off on it, so both GIDs appear at once); URDMA_NETDEV
# becomes its name.
setup_nic() {
	local ip6=/proc/sys/net/ipv6/conf
	[ -d /sys/bus/virtio/drivers/virtio_net ] || modprobe virtio_net ||
		setup_failed network "modprobe virtio_net failed"
	wait_until 50 iface_by_mac "$URDMA_VM_NIC_MAC" >/dev/null ||
		setup_failed network "no interface with MAC $URDMA_VM_NIC_MAC"
	URDMA_NIC=$(iface_by_mac "$URDMA_VM_NIC_MAC")
	URDMA_NETDEV=$URDMA_NIC
	if [ -d "$ip6/$URDMA_NIC" ]; then
		echo 0 >"$ip6/$URDMA_NIC/accept_dad"
		echo 0 >"$ip6/$URDMA_NIC/disable_ipv6"
	fi
	ip -b - <<-EOF || setup_failed network "cannot configure $URDMA_NIC"
		addr add $URDMA_VM_NIC_IP dev $URDMA_NIC
		link set $URDMA_NIC up
	EOF
	# The socket backend's link is up at once; IPv4 needs no DAD.
	wait_until 50 nic_has_carrier || setup_failed network "$URDMA_NIC has no carrier"
	if [ -d "$ip6/$URDMA_NIC" ]; then
		wait_until 20 nic_has_ip6ll || log "warning: no IPv6 link-local address on $URDMA_NIC yet"
	fi
	log "$URDMA_NIC ($URDMA_VM_NIC_MAC): $URDMA_VM_NIC_IP"
}

# lo, and unless --bare or --netdev lo, the veth pair (one `ip` run: execs are slow);
# with --nic, the NIC instead of the veth pair.
setup_network() {
	local batch="link set lo up"
	if [ -n "$URDMA_VM_NIC_MAC" ]; then
		ip link set lo up || setup_failed network "network setup failed"
		setup_nic
		return
	fi
	if [ "$URDMA_VM_BARE" = 0 ] && [ "$URDMA_NETDEV" = veth ]; then
		batch+="
link add veth0 type veth peer name veth1
addr add 10.77.0.1/24 dev veth0
addr add 10.77.0.2/24 dev veth1
link set veth0 up
link set veth1 up"
	fi
	ip -b - <<<"$batch" || setup_failed network "network setup failed"
}

# Prints the /dev node of the virtio-serial port with the given name.
vport() {
	local d name
	for d in /sys/class/virtio-ports/*; do
		read -r name <"$d/name" 2>/dev/null || continue
		[ "$name" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}

# Drivers the host built for this kernel (urdma-vm's build_extra_modules).
load_extra_modules() {
	local ko
	for ko in $URDMA_VM_EXTRA_KO; do
		insmod "$ko" || setup_failed install "insmod $ko failed"
	done
}

install_urdma() {
	load_extra_modules
	[ "$URDMA_VM_INSTALL" = 1 ] || return 0
	if [ -n "$URDMA_VM_STAGE" ] && [ -n "$URDMA_VM_DEPMOD" ]; then
		# What make install would copy is already here: rdma-core's
		# stage is a layer of the root (urdma-vm's stage_layer), and
		# the module index urdma-vm made holds build/KVER's modules in
		# updates/.  Bound from the root overlay, it stays writable.
		log "rdma-core's stage is a layer; /lib/modules/$(uname -r) from $URDMA_VM_DEPMOD"
		mount --bind "$URDMA_VM_DEPMOD" "/lib/modules/$(uname -r)" ||
			setup_failed install "cannot bind $URDMA_VM_DEPMOD"
		if [ "$URDMA_VM_LDCONFIG" = 1 ]; then
			log "ldconfig (a library of the stage is not in the cache)"
			ldconfig
		fi
	else
		log "make -C $URDMA_VM_REPO install"
		make -C "$URDMA_VM_REPO" install \
			${URDMA_VM_DEPMOD:+DEPMOD_PREBUILT="$URDMA_VM_DEPMOD"} ||
			setup_failed install "make install failed"
	fi
	modprobe urdma || setup_failed install "modprobe urdma failed"
}

# urdma0 on the netdev, if the urdma module is loaded (always, unless --no-install),
# and not --no-urdma.
setup_rdma_link() {
	[ "$URDMA_VM_BARE" = 1 ] && return 0
	[ "$URDMA_VM_URDMA_LINK" = 0 ] && return 0
	local dev=veth0
	[ "$URDMA_NETDEV" = veth ] || dev=$URDMA_NETDEV # lo or the --nic interface
	if [ -d /sys/module/urdma ]; then
		rdma link add urdma0 type urdma netdev "$dev" ||
			setup_failed rdma "rdma link add urdma0 type urdma netdev $dev failed"
	fi
}

# The command's environment: a clean one plus URDMA_*, RDMA_CORE_TESTS and --env.
command_env() {
	CMD_ENV=(PATH="$PATH" HOME=/root LANG=C.UTF-8 TERM=dumb USER=root LOGNAME=root
		PAGER=cat GIT_PAGER=cat
		URDMA_KERNEL="$URDMA_KERNEL" URDMA_NETDEV="$URDMA_NETDEV" URDMA_VM=1)
	[ -z "$URDMA_VM_RDMA_CORE_TESTS" ] || CMD_ENV+=(RDMA_CORE_TESTS="$URDMA_VM_RDMA_CORE_TESTS")
	[ -z "$URDMA_NIC" ] || CMD_ENV+=(URDMA_NIC="$URDMA_NIC" URDMA_NIC_IP="${URDMA_VM_NIC_IP%/*}")
	CMD_ENV+=("${URDMA_VM_ENV[@]}")
}

# Runs the command: one argument is a shell command line, several are an argv.
run_command() {
	local out err rc
	out=$(vport urdma.stdout) || { log "warning: no stdout port"; out=/dev/console; }
	err=$(vport urdma.stderr) || { log "warning: no stderr port"; err=/dev/console; }
	cd "$URDMA_VM_CWD" 2>/dev/null || {
		log "warning: $URDMA_VM_CWD does not exist in the guest; running in $URDMA_VM_REPO"
		cd "$URDMA_VM_REPO" || setup_failed cwd "cannot cd to $URDMA_VM_REPO"
	}
	log "running command"
	if [ ${#URDMA_VM_CMD[@]} -eq 1 ]; then
		env -i "${CMD_ENV[@]}" /bin/sh -c "${URDMA_VM_CMD[0]}" </dev/null >"$out" 2>"$err"
	else
		env -i "${CMD_ENV[@]}" "${URDMA_VM_CMD[@]}" </dev/null >"$out" 2>"$err"
	fi
	rc=$?
	log "command exited with $rc"
	return $rc
}

# Optional (--kmemleak): an explicit scan; the kernel logs "N new suspected memory
# leaks", which the host treats as a problem, and the report goes to the console.
kmemleak_scan() {
	local f=/sys/kernel/debug/kmemleak
	[ "$URDMA_VM_KMEMLEAK" = 1 ] || return 0
	[ -w $f ] || { log "kmemleak: not available in this kernel"; return 0; }
	log "kmemleak scan"
	echo scan >$f && echo scan >$f
	[ -s $f ] && cat $f
}

main() {
	local rc
	log "init started"
	check_environment
	setup_system
	setup_network
	install_urdma
	setup_rdma_link
	command_env
	run_command
	rc=$?
	kmemleak_scan
	finish $rc
}

main
