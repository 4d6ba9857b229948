# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# The kernel's NFS server in a guest, for NFS over RDMA, and fs_copy, a
# copy checked through a network file system.  Sourced by t_clients.sh, by
# the two-host suite and by make bench's clients section (bench/clients.sh).

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

# nfsd_down: the server stopped, its listeners closed, everything unmounted.
nfsd_down() {
	rpc.nfsd 0
	pkill -x rpc.mountd
	pkill -x rpcbind
	umount /var/lib/nfs/rpc_pipefs /proc/fs/nfsd "$NFS_EXPORT"
} >/dev/null 2>&1

# fs_copy SRC DST: SRC copied to DST on a network file system, compared
# after the page cache is dropped (read back from the server).
fs_copy() {
	cp "$1" "$2" && sync && echo 3 >/proc/sys/vm/drop_caches && cmp "$1" "$2"
}
