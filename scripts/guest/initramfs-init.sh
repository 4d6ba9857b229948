#!/bin/sh
# /init of the urdma-vm initramfs (busybox sh, PID 1).
#
# Loads the modules listed in /modules.list, mounts the host's root (9p, read-only)
# and the rdma-core stage above it under a tmpfs-backed overlay, mounts the usual
# pseudo and scratch filesystems, the job directory and the project tree into it,
# and switch_roots, running the init named by urdmavm.init= (scripts/guest/init.sh).
#
# The mounts are done here rather than in init.sh because busybox is static and
# already in memory: under TCG every dynamically linked exec over 9p costs ~0.1 s.
export PATH=/bin
NEW=/newroot
OPT9P=trans=virtio,version=9p2000.L,msize=262144

# (The applet links in /bin are made when the initramfs is built.)
mkdir -p /dev /proc /sys /lower /rw $NEW
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

fail() {
	echo "<3>urdma-vm: initramfs: $*" >/dev/kmsg
	echo "<3>URDMA-VM-SETUP-FAILED=initramfs" >/dev/kmsg
	sleep 1
	echo b >/proc/sysrq-trigger
	sleep 60
}

init=/sbin/init
roottag=urdmaroot
stagetag=
for arg in $(cat /proc/cmdline); do
	case $arg in
	urdmavm.init=*) init=${arg#*=} ;;
	urdmavm.root=*) roottag=${arg#*=} ;;
	urdmavm.stage=*) stagetag=${arg#*=} ;;
	esac
done

for m in $(cat /modules.list); do
	insmod "/modules/$m" || fail "insmod $m failed"
done

# The host's root is read-only (QEMU refuses writes too), so cache=loose is safe and
# much faster.  The overlay's upper layer is a tmpfs: the guest may write anywhere
# (install into /usr, /lib/modules, /etc); everything is discarded at power-off.
mount -t 9p -o ro,$OPT9P,cache=loose "$roottag" /lower ||
	fail "cannot mount the 9p root ($roottag)"
# The rdma-core stage, if urdma-vm shares it, is a layer above the host's root
# (its own share: a layer inside another layer is refused as overlapping).
lower=/lower
if [ -n "$stagetag" ]; then
	mkdir -p /stage
	mount -t 9p -o ro,$OPT9P,cache=loose "$stagetag" /stage ||
		fail "cannot mount the rdma-core stage ($stagetag)"
	lower=/stage:/lower
fi
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=$lower,upperdir=/rw/upper,workdir=/rw/work overlay $NEW ||
	fail "cannot mount the overlay root"
[ -x "$NEW$init" ] || fail "init $init not found or not executable in the new root"

# Until they are mounted, the new root's /proc, /sys and /dev are the HOST's, seen
# through 9p: mount the guest's own before anything runs there.
mount --move /dev $NEW/dev
mount --move /proc $NEW/proc
mount --move /sys $NEW/sys
mkdir -p $NEW/dev/pts $NEW/dev/shm $NEW/dev/hugepages
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $NEW/dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs $NEW/dev/shm
mount -t hugetlbfs -o mode=1770 hugetlbfs $NEW/dev/hugepages
ln -sfn /proc/self/fd $NEW/dev/fd
ln -sfn /proc/self/fd/0 $NEW/dev/stdin
ln -sfn /proc/self/fd/1 $NEW/dev/stdout
ln -sfn /proc/self/fd/2 $NEW/dev/stderr
for d in /run /tmp /var/tmp /root; do
	case $d in /run) mode=0755 ;; /root) mode=0700 ;; *) mode=1777 ;; esac
	mount -t tmpfs -o mode=$mode,nosuid,nodev tmpfs $NEW$d
done
mount -t debugfs -o mode=0700 debugfs $NEW/sys/kernel/debug
mount -t tracefs -o mode=0700 tracefs $NEW/sys/kernel/tracing 2>/dev/null
mount -t configfs configfs $NEW/sys/kernel/config 2>/dev/null

# The job (written by scripts/urdma-vm) and the project tree, read-write, at its
# host path.  cache=mmap allows shared writable mappings and keeps reads coherent.
mkdir -p $NEW/run/urdma-vm
mount -t 9p -o $OPT9P urdmajob $NEW/run/urdma-vm || fail "cannot mount the job directory"
repo=$(cat $NEW/run/urdma-vm/repo) || fail "no repo path in the job directory"
mkdir -p "$NEW$repo"
mount -t 9p -o $OPT9P,cache=mmap urdmarepo "$NEW$repo" ||
	fail "cannot mount the project tree at $repo"

# The debug kernel's modules live in its build cache.  Through the overlay they are
# writable (e.g. for `make install` into updates/).
if [ -s $NEW/run/urdma-vm/debug-modules ]; then
	mods=$(cat $NEW/run/urdma-vm/debug-modules)
	target=$NEW/lib/modules/$(uname -r)
	mkdir -p "$target"
	mount --bind "$NEW$mods" "$target" || fail "cannot bind $mods to /lib/modules"
fi

exec switch_root $NEW "$init"
