#!/bin/bash
# Install the Debian packages urdma needs on the build/test host.
# Idempotent: installs only what is missing.  Never loads a module.
set -euo pipefail

PKGS=(
	# guest harness
	qemu-system-x86 busybox-static kmod iproute2 cpio
	# guest kernels and headers (installed, never booted on the host)
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	linux-image-amd64 linux-headers-amd64
	# debug kernel source and its build tools
	linux-source-6.12 build-essential bc bison flex libelf-dev libssl-dev
	xz-utils rsync
	# rdma-core 56.1 from source
	dpkg-dev cmake ninja-build pkg-config libnl-3-dev libnl-route-3-dev
	libudev-dev cython3 python3-dev python3-docutils libsystemd-dev
	# userspace tools and tests run in the guest
	perftest rdmacm-utils ibverbs-utils libgtest-dev g++ python3
	# real clients run in the guest (tests/guest/t_clients.sh)
	qperf libfabric-bin ucx-utils fio openmpi-bin libopenmpi-dev
	# Open MPI between two guests: each guest's dropbear is its launcher's
	# sshd (dropbear-bin starts no service on the host)
	dropbear-bin
	# NFS over RDMA: the guest starts nfsd, mountd and rpcbind itself
	nfs-kernel-server
	# SMB Direct (debug kernel): the guest starts ksmbd.mountd itself
	ksmbd-tools cifs-utils
	# kernel style checks and packaging (make deb)
	sparse dkms debhelper dh-python
	# make bench's plots
	python3-matplotlib
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#PKGS[@]} packages present"
	exit 0
fi

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
# nfs-kernel-server's and ksmbd-tools' maintainer scripts would start a
# file server on this host; only the guests run one.  A policy-rc.d that denies every start
# keeps them from it (and is removed again if this script made it), and
# the server is not enabled at boot.
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e $policy ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee $policy >/dev/null
	$SUDO chmod 755 $policy
	made_policy=1
fi
rc=0
$SUDO apt-get update -qq &&
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" \
		>/dev/null || rc=$?
[ -z "$made_policy" ] || $SUDO rm -f $policy
[ $rc = 0 ] || exit $rc
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
	for pair in nfs-kernel-server:nfs-server ksmbd-tools:ksmbd; do
		[[ " ${missing[*]} " == *" ${pair%%:*} "* ]] || continue
		$SUDO systemctl disable --now "${pair#*:}.service" \
			>/dev/null 2>&1 || true
	done
fi
echo "deps: done"
