# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# The kernel's SMB3 server in a guest, for SMB Direct.  Sourced by
# t_clients.sh and by the two-host suite.  Needs a kernel with
# SMB_SERVER_SMBDIRECT and CIFS_SMB_DIRECT (the debug kernel).

# SMB Direct: ksmbd, the kernel's SMB3 server (its daemon ksmbd.mountd is
# from ksmbd-tools), shares a tmpfs; it listens for SMB Direct on RDMA CM
# port 445 beside TCP.  The kernel's cifs client mounts the share with
# "rdma" (SMB 3.1.1 over SMB Direct: sends and receives for the messages,
# RDMA reads and writes through fast-registered MRs for the I/O).
SMB_SHARE=/run/urdma-smb
SMB_PASS=urdma-smb-test
# The cifs client's options for the share: SMB 3.1.1 over SMB Direct.
# shellcheck disable=SC2034 # read by the scripts that source this file
SMB_OPTS=rdma,vers=3.1.1,username=root,password=$SMB_PASS
smbd_up() {
	mkdir -p /etc/ksmbd "$SMB_SHARE" &&
		mount -t tmpfs tmpfs "$SMB_SHARE" || return 1
	cat >/etc/ksmbd/ksmbd.conf <<-EOF || return 1
		[global]
			server signing = disabled
		[share]
			path = $SMB_SHARE
			read only = no
			browseable = yes
	EOF
	rm -f /etc/ksmbd/ksmbdpwd.db
	ksmbd.adduser -a root -p "$SMB_PASS" && ksmbd.mountd || return 1
	wait_for 20 smb_listening || {
		echo "no RDMA CM listener on port 445"
		rdma res show cm_id
		return 1
	}
}
# ksmbd listens on 445 (SMB Direct over InfiniBand and RoCE), or on 5445
# if an iWARP device was there when it started: iWARP's listener is a TCP
# port, and ksmbd's own TCP socket holds 445.  cifs tries 5445, then 445.
smb_listening() { rdma res show cm_id 2>/dev/null | grep -qE "LISTEN.*:(445|5445)\b"; }

# smbd_down: ksmbd stopped, its share unmounted.
smbd_down() {
	ksmbd.control -s
	umount "$SMB_SHARE"
} >/dev/null 2>&1
