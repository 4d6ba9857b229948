# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""RoCEv2 frames built by hand, for the tests that play a forger on the wire
(wirefuzz.py, wirespoof.py): IPv4, UDP to 4791, a BTH and whatever follows,
and a correct ICRC (IBTA A17.3.3), sent from a raw socket on an interface."""
import socket
import struct
import time
import zlib

ROCE_PORT = 4791

# Opcodes (IBTA 9.2, table 35) the tests use.
RC_SEND_ONLY = 0x04
RC_WRITE_ONLY = 0x0A
RC_ACK = 0x11
UD_SEND_ONLY = 0x64
CNP = 0x81

# The ECN field of the IP header (RFC 3168).
ECN_ECT0 = 2
ECN_CE = 3

# AETH syndromes (IBTA 9.7.5.2.3, table 42).
AETH_NAK_REM_ACCESS = 0x62
AETH_NAK_INV_REQ = 0x61
AETH_NAK_PSN_SEQ = 0x60


def ip_csum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def icrc(ip_udp_bth_rest):
    """ICRC over IP + UDP + transport headers + payload (IPv4)."""
    m = bytearray(ip_udp_bth_rest)
    m[1] = 0xFF                     # TOS
    m[8] = 0xFF                     # TTL
    m[10:12] = b"\xff\xff"          # IP checksum
    m[26:28] = b"\xff\xff"          # UDP checksum
    if len(m) > 32:
        m[32] = 0xFF                # BTH resv8a
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(m)))


def bth(opcode, qpn, psn, pad=0, se=0, ackreq=0, tver=0, pkey=0xFFFF):
    w0 = (opcode << 24) | (se << 23) | (pad << 20) | (tver << 16) | pkey
    return struct.pack("!III", w0, qpn & 0xFFFFFF,
                       (ackreq << 31) | (psn & 0xFFFFFF))


def aeth(syndrome, msn):
    return struct.pack("!I", (syndrome << 24) | (msn & 0xFFFFFF))


class Link:
    """Frames from (src_mac, src_ip) to (dst_mac, dst_ip)."""

    def __init__(self, src_mac, dst_mac, src_ip, dst_ip):
        self.src_mac, self.dst_mac = src_mac, dst_mac
        self.src_ip, self.dst_ip = src_ip, dst_ip

    def frame(self, transport, good_icrc=True, udp_len_delta=0, src_ip=None,
              tos=0):
        """An Ethernet frame carrying @transport (BTH onwards, no ICRC)."""
        udp_len = 8 + len(transport) + 4
        tot = 20 + udp_len
        ip = bytearray(struct.pack(
            "!BBHHHBBH4s4s", 0x45, tos, tot, 0x1234, 0x4000, 64, 17, 0,
            socket.inet_aton(src_ip or self.src_ip),
            socket.inet_aton(self.dst_ip)))
        ip[10:12] = struct.pack("!H", ip_csum(bytes(ip)))
        udp = struct.pack("!HHHH", 49152, ROCE_PORT, udp_len + udp_len_delta,
                          0)
        body = bytes(ip) + udp + transport
        crc = icrc(body)
        if not good_icrc:
            crc = bytes([crc[0] ^ 0xFF]) + crc[1:]
        return self.dst_mac + self.src_mac + b"\x08\x00" + body + crc


def mac(ifname):
    return bytes.fromhex(open(f"/sys/class/net/{ifname}/address")
                         .read().strip().replace(":", ""))


def send(ifname, frames, pace=64):
    """Send @frames on @ifname, resting 10 ms after every @pace frames so
    that the engine's receive queue (4096 frames) keeps up."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    for i, f in enumerate(frames):
        s.send(f)
        if i % pace == pace - 1:
            time.sleep(0.01)
    s.close()


class Capture:
    """The RoCEv2 packets an interface sees from @src_ip, IPv4: open it
    before sending what should draw them.  packets() returns each as a
    dict: tos, src, dst, opcode, becn, qpn, psn, payload (after the BTH,
    without the ICRC), ackreq, icrc_ok."""

    def __init__(self, ifname, src_ip):
        self.src = socket.inet_aton(src_ip)
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                               socket.htons(0x0800))
        self.s.bind((ifname, 0))
        self.s.settimeout(0.05)

    def packets(self, secs=1.0, count=None):
        """What came within @secs, or as soon as @count packets came."""
        out = []
        end = time.time() + secs
        while time.time() < end and (count is None or len(out) < count):
            try:
                f = self.s.recv(65536)
            except socket.timeout:
                continue
            ip = f[14:]
            if len(ip) < 20 + 8 + 12 + 4 or ip[9] != 17 or \
                    ip[12:16] != self.src:
                continue
            tot = struct.unpack("!H", ip[2:4])[0]
            ip = ip[:tot]
            if struct.unpack("!H", ip[22:24])[0] != ROCE_PORT:
                continue
            w0, w1, w2 = struct.unpack("!III", ip[28:40])
            out.append({
                "tos": ip[1], "src": socket.inet_ntoa(ip[12:16]),
                "dst": socket.inet_ntoa(ip[16:20]), "opcode": w0 >> 24,
                "becn": bool(w1 & (1 << 30)), "qpn": w1 & 0xFFFFFF,
                "psn": w2 & 0xFFFFFF, "ackreq": w2 >> 31,
                "payload": ip[40:-4],
                "icrc_ok": icrc(ip[:-4]) == ip[-4:]})
        return out

    def close(self):
        self.s.close()
