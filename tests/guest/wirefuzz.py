#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Malformed RoCEv2 packets against urdma's receive path.

Runs in a urdma-vm guest (urdma0 on veth0 10.77.0.1, peer veth1).
Frames are written with a raw socket on veth1, so they arrive on veth0 as
if from another host.  A live RC QP on urdma0, "connected" to 10.77.0.99
(a made-up host, a static neighbour; the QP takes the wire path), is the target of the
packets that need one.

Each case sends a batch, waits for the engine to drain it, and checks the
hw_counters it must move: every frame is accounted for as rx_pkts (taken by
a QP), rx_drops or icrc_errs.  A last case sends random headers with a
correct ICRC to the live QP; it only has to leave the kernel alive (the
harness fails the run on an oops, WARN or KASAN report) and the QP
destroyable.  Prints TAP; the seed is printed and URDMA_FUZZ_SEED sets it.

A connected QP takes packets only from the address it is connected to:
the same frames from a stranger's address are dropped.  An XRC target
takes only XRC requests, and puts them only into an XRC SRQ of its domain.

Usage: wirefuzz.py GID_INDEX [SECONDS]
With SECONDS, the random-header rounds go on for that long (make check's
fuzz lane) instead of 10 rounds, and also carry random opcodes, source
addresses and a UD QP as a target.
"""
import os
import random
import re
import socket
import struct
import subprocess
import sys
import time

import roce
from roce import bth
from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqInitAttrEx
from pyverbs.wr import SGE, RecvWR, SendWR
from pyverbs.xrcd import XRCD, XRCDInitAttr
import pyverbs.enums as e

DEV, PORT = "urdma0", 1
TX_IF, RX_IF = "veth1", "veth0"
SRC_IP, DST_IP = "10.77.0.99", "10.77.0.1"  # .99: a static neighbour
COUNTERS = ("rx_pkts", "rx_drops", "icrc_errs")
failed = 0


def tap(ok, name, *diag):
    global failed
    print(("ok" if ok else "not ok") + " - wirefuzz: " + name)
    for d in diag:
        print("# " + d)
    if not ok:
        failed = 1


def counters():
    return {c: hw(c) for c in COUNTERS}


def hw(name):
    return int(open(f"/sys/class/infiniband/{DEV}/ports/{PORT}/hw_counters/"
                    f"{name}").read())


ECN_PARAM = "/sys/module/urdma/parameters/ecn"


def set_ecn(on):
    with open(ECN_PARAM, "w") as f:
        f.write("1" if on else "0")


def ce_case(qpn, on):
    """Ten CE-marked duplicates from the peer: with ECN on, they draw CNPs
    to the peer's QP (one per 50 us at most) and the ACKs leave as ECT(0);
    off, neither.  ecn_marked counts them either way."""
    peer_qpn = 0x123456
    set_ecn(on)
    cap = roce.Capture(TX_IF, DST_IP)
    marked0, sent0 = hw("ecn_marked"), hw("cnps_sent")
    send([LINK.frame(bth(roce.RC_SEND_ONLY, qpn, 999) + b"c" * 8,
                     tos=roce.ECN_CE)
          for _ in range(10)])
    pkts = cap.packets(1.5)
    cap.close()
    cnps = [p for p in pkts if p["opcode"] == roce.CNP]
    acks = [p for p in pkts if p["opcode"] == roce.RC_ACK]
    good_cnps = all(p["becn"] and p["qpn"] == peer_qpn and p["psn"] == 0 and
                    p["payload"] == b"\0" * 16 and p["icrc_ok"] and
                    p["tos"] & 3 == 0 and p["dst"] == SRC_IP for p in cnps)
    marked = hw("ecn_marked") - marked0
    cnps_sent = hw("cnps_sent") - sent0
    if on:
        ok = (1 <= len(cnps) <= 10 and good_cnps and cnps_sent == len(cnps)
              and acks and all(p["tos"] & 3 == roce.ECN_ECT0 for p in acks))
        name = "CE-marked packets draw CNPs to the peer's QP; ACKs are ECT(0)"
    else:
        ok = not cnps and cnps_sent == 0 and acks and \
            all(p["tos"] & 3 == 0 for p in acks)
        name = "ecn=0: CE-marked packets draw no CNP; ACKs are not ECT"
    tap(ok and marked == 10, name,
        f"ecn_marked +{marked}, cnps_sent +{cnps_sent}, captured "
        f"{len(cnps)} CNPs {cnps[:2]}, ACK TOS {[p['tos'] for p in acks][:5]}")


def probe_case(gid_index):
    """The requester's tail loss probe, with this script as the peer: a
    first SEND (3 packets of 1 KiB) is acknowledged, which times a round
    trip; a second goes unanswered.  When the adaptive RTO runs out, the
    QP sends its last packet again, asking for an ACK, and nothing else
    (not the whole message, as a go-back would); only when that draws
    nothing either does it go back to the message's first PSN.  An ACK
    then completes both SENDs."""
    ctx, pd, cq, qp, mr, _ = live_qp(gid_index, timeout=18, retry_cnt=7)
    peer_qpn, psn0 = 0x123456, 5000
    cap = roce.Capture(TX_IF, DST_IP)
    probes0 = hw("probes")

    def post(wr_id):
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1,
                    sg=[SGE(mr.buf, 3072, mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        qp.post_send(wr)

    def data(pkts):
        return [(p["psn"], p["ackreq"]) for p in pkts
                if p["qpn"] == peer_qpn and p["opcode"] in (0, 1, 2)]

    def ack(psn, msn):
        send([frame(bth(roce.RC_ACK, qp.qp_num, psn) +
                    roce.aeth(0x1F, msn))])

    post(1)
    first = data(cap.packets(2, count=3))
    ack(psn0 + 2, 1)
    post(2)
    # The RTO: a few round trips of this script (one timed); the ACK
    # timeout: 1.07 s.
    second = data(cap.packets(1, count=4))
    later = data(cap.packets(1.0))
    ack(psn0 + 5, 2)
    got = {}
    end = time.time() + 5
    while len(got) < 2 and time.time() < end:
        n, wcs = cq.poll(num_entries=2)
        for wc in wcs[:n]:
            got[wc.wr_id] = int(wc.status)
    cap.close()
    want_first = [(psn0, 0), (psn0 + 1, 0), (psn0 + 2, 1)]
    want_second = [(psn0 + 3, 0), (psn0 + 4, 0), (psn0 + 5, 1),
                   (psn0 + 5, 1)]
    ok = (first == want_first and second[:4] == want_second and
          hw("probes") - probes0 >= 1 and
          got == {1: e.IBV_WC_SUCCESS, 2: e.IBV_WC_SUCCESS})
    tap(ok, "an unanswered message draws a probe of its last packet first",
        f"first {first}, second {second}, then {later[:6]}, "
        f"probes +{hw('probes') - probes0}, completions {got}")
    # Its congestion state (`rdma res show qp -dd`): the first SEND's three
    # PSNs, acknowledged, grew the window from 16 to 19 and timed a round
    # trip; the timeout before the go-back halved it into the threshold (10)
    # and went back with 2; the last ACK's three PSNs grew that to 5.
    cc, raw = qp_cc(qp.qp_num)
    tap(cc.get("cwnd") == 5 and cc.get("ssthresh") == 10 and
        cc.get("srtt_us", 0) > 0 and cc.get("rto_us", 0) > 0,
        "rdma res show qp -dd: the window, threshold and round trip",
        f"{cc} in: {raw}")
    # The go-back after the probe: the message again, from its first PSN
    # (as much of it as the window, down to 2 after a timeout, lets out).
    after = [psn for psn, _ in second[4:] + later]
    tap(after[:2] == [psn0 + 3, psn0 + 4],
        "a probe that draws nothing is followed by a go-back",
        f"after the probe {second[4:8]} {later[:4]}")
    qp.close()
    mr.close()
    cq.close()
    pd.close()
    ctx.close()


def qp_cc(qpn):
    """The congestion control urdma shows for QP qpn (rdma res -dd)."""
    out = subprocess.run(["rdma", "-dd", "res", "show", "qp", "link",
                          f"{DEV}/{PORT}", "lqpn", str(qpn)],
                         capture_output=True, text=True).stdout
    return {k: int(v) for k, v in
            re.findall(r"\bdrv_(cwnd|ssthresh|srtt_us|rttvar_us|rto_us) (\d+)",
                       out)}, out.strip()


def frame(transport, good_icrc=True, udp_len_delta=0):
    return LINK.frame(transport, good_icrc, udp_len_delta)


def send(frames):
    roce.send(TX_IF, frames)


def settle(before, want, timeout=20.0):
    """Wait until the counters moved by @want frames in all; return deltas."""
    end = time.time() + timeout
    while True:
        now = counters()
        d = {c: now[c] - before[c] for c in COUNTERS}
        if sum(d.values()) >= want or time.time() > end:
            return d
        time.sleep(0.1)


def case(name, frames, expect):
    """Send @frames; @expect maps a counter to the delta it must show."""
    before = counters()
    send(frames)
    d = settle(before, len(frames))
    ok = all(d[c] == expect.get(c, 0) for c in COUNTERS)
    tap(ok, f"{name}: {len(frames)} frames counted as {expect}",
        f"deltas {d}")


def live_qp(gid_index, timeout=10, retry_cnt=1):
    """An RC QP on urdma0 whose peer (10.77.0.99) is on the wire."""
    ctx = Context(name=DEV)
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1,
                max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    mr = MR(pd, 65536, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
            e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)
    a = socket.inet_aton(SRC_IP)
    dgid = "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(a)
    gr = GlobalRoute(dgid=GID(dgid), sgid_index=gid_index)
    attr = QPAttr(qp_state=e.IBV_QPS_INIT, cur_qp_state=e.IBV_QPS_RESET)
    attr.qp_access_flags = (e.IBV_ACCESS_LOCAL_WRITE |
                            e.IBV_ACCESS_REMOTE_WRITE |
                            e.IBV_ACCESS_REMOTE_READ |
                            e.IBV_ACCESS_REMOTE_ATOMIC)
    attr.ah_attr = AHAttr(port_num=PORT, is_global=1, gr=gr)
    attr.dest_qp_num = 0x123456
    attr.path_mtu = e.IBV_MTU_1024
    attr.max_dest_rd_atomic = 4
    attr.max_rd_atomic = 4
    attr.min_rnr_timer = 1
    attr.rq_psn = 1000
    attr.sq_psn = 5000
    attr.timeout = timeout
    attr.retry_cnt = retry_cnt
    attr.rnr_retry = 1
    qp.to_rts(attr)
    return ctx, pd, cq, qp, mr, attr


UD_QKEY = 0x11111111
XRC_SEND_FIRST = 0xA0   # XRC SENDs: BTH, XRCETH, payload
XRC_SEND_MIDDLE = 0xA1
XRC_SEND_ONLY = 0xA4
XRC_ACK = 0xB1


def xrceth(srqn):
    return struct.pack("!I", srqn & 0xFFFFFF)


def poll_some(cq, timeout=10):
    """The first completions @cq gives within @timeout seconds, or []."""
    end = time.time() + timeout
    while time.time() < end:
        n, wcs = cq.poll()
        if n > 0:
            return wcs[:n]
        time.sleep(0.05)
    return []


def xrc_case(ctx, pd, cq, gid_index, rc_qpn):
    """An XRC_RECV QP connected to 10.77.0.99 and an XRC SRQ of its domain:
    a SEND naming the SRQ lands in it; the XRC transport reaches no RC QP,
    RC packets and XRC responses no XRC target; a SEND whose later packet
    names an SRQ that is not of the domain is NAKed, lands nowhere, and
    the receive WQE its first packet took is flushed back to its SRQ."""
    xrcd = XRCD(ctx, XRCDInitAttr(e.IBV_XRCD_INIT_ATTR_FD |
                                  e.IBV_XRCD_INIT_ATTR_OFLAGS,
                                  os.O_CREAT, -1))
    scq = CQ(ctx, 16)
    sa = SrqInitAttrEx(max_wr=16)
    sa.srq_type = e.IBV_SRQT_XRC
    sa.pd = pd
    sa.xrcd = xrcd
    sa.cq = scq
    sa.comp_mask = (e.IBV_SRQ_INIT_ATTR_TYPE | e.IBV_SRQ_INIT_ATTR_PD |
                    e.IBV_SRQ_INIT_ATTR_CQ | e.IBV_SRQ_INIT_ATTR_XRCD)
    srq = SRQ(ctx, sa)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    for wr_id in (5, 6):
        srq.post_recv(RecvWR(wr_id=wr_id, num_sge=1,
                             sg=[SGE(mr.buf, 4096, mr.lkey)]))
    tgt = QP(ctx, QPInitAttrEx(qp_type=e.IBV_QPT_XRC_RECV,
                               comp_mask=e.IBV_QP_INIT_ATTR_XRCD, xrcd=xrcd))
    a = socket.inet_aton(SRC_IP)
    dgid = "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(a)
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.pkey_index = 0
    attr.port_num = PORT
    attr.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE
    tgt.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
               e.IBV_QP_ACCESS_FLAGS)
    attr = QPAttr(qp_state=e.IBV_QPS_RTR)
    attr.ah_attr = AHAttr(port_num=PORT, is_global=1,
                          gr=GlobalRoute(dgid=GID(dgid),
                                         sgid_index=gid_index))
    attr.path_mtu = e.IBV_MTU_1024
    attr.dest_qp_num = 0x123457
    attr.rq_psn = 3000
    attr.max_dest_rd_atomic = 1
    attr.min_rnr_timer = 1
    tgt.modify(attr, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU |
               e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN |
               e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    tq, sn = tgt.qp_num, srq.get_srq_num()
    print(f"# XRC target {tq:#x}, XRC SRQ {sn}")
    good = bth(XRC_SEND_ONLY, tq, 3000) + xrceth(sn) + b"x" * 40
    case("an XRC SEND to the target, naming its SRQ", [frame(good)],
         {"rx_pkts": 1})
    wc = poll_some(scq)
    tap(len(wc) == 1 and wc[0].status == e.IBV_WC_SUCCESS and
        wc[0].qp_num == tq and wc[0].byte_len == 40 and
        mr.read(40, 0) == b"x" * 40,
        "XRC: it completed on the SRQ's CQ with the target's QP number",
        f"{[(w.status, w.qp_num, w.byte_len) for w in wc]}")
    case("XRC requests to an RC QP",
         [frame(bth(XRC_SEND_ONLY, rc_qpn, 1000) + xrceth(sn) + b"r" * 8)
          for _ in range(20)], {"rx_drops": 20})
    case("RC requests to an XRC target",
         [frame(bth(0x04, tq, 3001) + b"r" * 8) for _ in range(20)],
         {"rx_drops": 20})
    case("XRC responses to an XRC target",
         [frame(bth(XRC_ACK, tq, 3001) + roce.aeth(0, 1)) for _ in range(20)],
         {"rx_drops": 20})
    case("an XRC SEND whose second packet names an SRQ of no domain",
         [frame(bth(XRC_SEND_FIRST, tq, 3001) + xrceth(sn) + b"y" * 1024),
          frame(bth(XRC_SEND_MIDDLE, tq, 3002) + xrceth(sn + 1000) +
                b"y" * 1024)],
         {"rx_pkts": 2})
    time.sleep(0.5)
    npolled, wcs = scq.poll(4)
    st, _ = tgt.query(e.IBV_QP_STATE)
    tap(npolled == 1 and wcs[0].wr_id == 6 and
        wcs[0].status == e.IBV_WC_WR_FLUSH_ERR and
        st.qp_state == e.IBV_QPS_ERR,
        "XRC: the WQE it took is flushed to its SRQ; the target is in "
        "ERROR (NAK: invalid request)",
        f"{[(w.wr_id, w.status) for w in wcs[:npolled]]}, "
        f"state {st.qp_state}")
    tgt.close()
    srq.close()
    mr.close()
    scq.close()
    xrcd.close()


def poke_rwqe(wr_id, sge_addr, off, data):
    """Writes @data at byte @off of the receive WQE posted with @wr_id (one
    SGE at @sge_addr), in slot 0 of liburdma's RQ ring: what a process may
    do to its own ring after ibv_post_recv, before a message takes the WQE.
    The ring is page aligned (posix_memalign), so only a page-aligned match
    is the WQE, never a copy in some Python object.  Returns the matches."""
    head = struct.pack("<QB7x", wr_id, 1)
    sge = struct.pack("<Q", sge_addr)
    hits = []
    with open("/proc/self/maps") as maps, \
            open("/proc/self/mem", "r+b", buffering=0) as mem:
        for line in maps:
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            if not f[1].startswith("rw") or hi - lo > 64 << 20:
                continue
            for a in range(lo, hi, 4096):
                try:
                    mem.seek(a)
                    b = mem.read(24)
                except OSError:
                    break
                if b == head + sge:
                    hits.append(a)
        for a in hits:
            mem.seek(a + off)
            mem.write(data)
    return len(hits)


def garbage_rwqe_case(gid_index):
    """A receive WQE whose header the process garbled after posting it (a
    reserved bit set, or more SGEs than the queue holds): a SEND from the
    peer that takes it completes it with LOC_QP_OP_ERR and its own wr_id,
    as on the local path, and the reserved bits stay free to gain a
    meaning."""
    for name, off, data in (("a reserved bit", 9, b"\x01"),
                            ("255 SGEs", 8, b"\xff")):
        ctx, pd, cq, qp, mr, _ = live_qp(gid_index)
        wr_id = 0x5EED0000 + off
        qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1,
                            sg=[SGE(mr.buf, 64, mr.lkey)]))
        hits = poke_rwqe(wr_id, mr.buf, off, data)
        cap = roce.Capture(TX_IF, DST_IP)
        send([frame(bth(roce.RC_SEND_ONLY, qp.qp_num, 1000) + b"g" * 8)])
        wcs = poll_some(cq)
        naks = [p for p in cap.packets(0.5) if p["opcode"] == roce.RC_ACK
                and p["payload"][:1] == bytes([roce.AETH_NAK_INV_REQ])]
        cap.close()
        tap(hits == 1 and len(wcs) == 1 and wcs[0].wr_id == wr_id and
            wcs[0].status == e.IBV_WC_LOC_QP_OP_ERR and naks,
            f"a receive WQE with {name} completes in LOC_QP_OP_ERR with its "
            "wr_id, and the peer is NAKed (invalid request)",
            f"{hits} WQE found, completions "
            f"{[(hex(w.wr_id), w.status) for w in wcs]}, {len(naks)} NAKs")
        qp.close()
        mr.close()
        cq.close()
        pd.close()
        ctx.close()


def ud_qp(pd, cq):
    """A UD QP in RTS, a target for UD frames (with no receive posted, UD
    drops what arrives)."""
    cap = QPCap(max_send_wr=4, max_recv_wr=64, max_send_sge=1,
                max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap))
    attr = QPAttr()
    attr.qkey = UD_QKEY
    attr.sq_psn = 0
    qp.to_rts(attr)
    return qp


def main():
    global LINK
    gid_index = int(sys.argv[1])
    seed = int(os.environ.get("URDMA_FUZZ_SEED", random.randrange(1 << 30)))
    print(f"# seed {seed}")
    rnd = random.Random(seed)
    LINK = roce.Link(roce.mac(TX_IF), roce.mac(RX_IF), SRC_IP, DST_IP)

    ctx, pd, cq, qp, mr, rts = live_qp(gid_index)
    qpn = qp.qp_num
    print(f"# live RC QP {qpn:#x}, MR rkey {mr.rkey:#x} at {mr.buf:#x}")
    nobody = 0xABCDE0 | rnd.randrange(16)
    send_only = 0x04        # RC SEND_ONLY
    ud_send = 0x64          # UD SEND_ONLY (needs a DETH)

    case("bad ICRC", [frame(bth(send_only, qpn, 1000) + b"x" * 32,
                            good_icrc=False) for _ in range(100)],
         {"icrc_errs": 100})
    case("unknown QPN", [frame(bth(send_only, nobody, 1000) + b"y" * 16)
                         for _ in range(100)], {"rx_drops": 100})
    unknown_ops = [0x15, 0x18, 0x1E, 0x1F, 0x41, 0x80, 0x82, 0xC0, 0xFF, 0x3F]
    case("unknown opcodes",
         [frame(bth(op, qpn, 1000) + b"z" * 16) for op in unknown_ops * 10],
         {"rx_drops": 100})
    case("TVer 1", [frame(bth(send_only, qpn, 1000, tver=1))
                    for _ in range(50)], {"rx_drops": 50})
    case("truncated headers",
         [frame(bth(0x0A, qpn, 1000)[:12] + b"\0" * n)     # WRITE_ONLY: RETH cut
          for n in range(0, 16)] +
         [frame(bth(ud_send, qpn, 1000)[:12] + b"\0" * n)  # DETH cut
          for n in range(0, 8)] +
         [frame(b"\0" * n) for n in range(0, 12)],         # BTH cut
         {"rx_drops": 36})
    case("pad longer than the payload",
         [frame(bth(send_only, qpn, 1000, pad=3)) for _ in range(20)],
         {"rx_drops": 20})
    case("wrong P_Key", [frame(bth(send_only, qpn, 1000, pkey=0x1234))
                         for _ in range(20)], {"rx_drops": 20})
    case("UD opcode to an RC QP",
         [frame(bth(ud_send, qpn, 1000) + b"\0" * 8) for _ in range(20)],
         {"rx_drops": 20})
    # Far-off PSNs are taken by the QP (it answers with a NAK or an ACK) and
    # do not disturb it: it stays in RTS.
    case("wrong PSNs",
         [frame(bth(send_only, qpn, (1000 + d) & 0xFFFFFF) + b"w" * 8)
          for d in (5, 100, 1 << 22, -1, -100, 1 << 23) for _ in range(10)],
         {"rx_pkts": 60})
    # The expected PSN, but from an address the QP is not connected to.
    case("a stranger's address",
         [LINK.frame(bth(send_only, qpn, 1000) + b"s" * 8,
                     src_ip="10.77.0.77") for _ in range(50)],
         {"rx_drops": 50})
    # ECN (IBTA A17.9): a CNP counts only from the peer, 16 bytes long.
    cnp = bth(roce.CNP, qpn, 0) + b"\0" * 16
    rcvd0 = hw("cnps_rcvd")
    case("CNPs from the peer", [frame(cnp) for _ in range(20)],
         {"rx_pkts": 20})
    tap(hw("cnps_rcvd") - rcvd0 == 20, "the QP took the peer's 20 CNPs",
        f"cnps_rcvd +{hw('cnps_rcvd') - rcvd0}")
    case("CNPs from a stranger",
         [LINK.frame(cnp, src_ip="10.77.0.77") for _ in range(20)],
         {"rx_drops": 20})
    case("CNPs of another length",
         [frame(bth(roce.CNP, qpn, 0) + b"\0" * n)
          for n in (0, 4, 12, 20, 32) * 4], {"rx_drops": 20})
    probe_case(gid_index)
    garbage_rwqe_case(gid_index)
    xrc_case(ctx, pd, cq, gid_index, qpn)
    try:
        ce_case(qpn, True)
        ce_case(qpn, False)
    finally:
        set_ecn(True)
    attr, _ = qp.query(e.IBV_QP_STATE)
    tap(attr.qp_state == e.IBV_QPS_RTS, "the QP is still in RTS",
        f"state {attr.qp_state}")

    # Random headers with a correct ICRC at the live QP: anything goes but
    # a crash.  Known opcodes, random extended headers, payload and PSN.
    # Many of them move the QP to ERROR (a NAK): each round of 200 starts
    # from RESET again, so every round reaches the responder.
    known = [op for op in range(256) if op < 0x18 or op in (0x1C, 0x1D)]
    ud_ops = [0x64, 0x65]
    timed = len(sys.argv) > 2
    end = time.time() + (float(sys.argv[2]) if timed else 0)
    ud = ud_qp(pd, cq) if timed else None
    total = {c: 0 for c in COUNTERS}
    states = []
    rounds = sent = 0
    while rounds < 10 if not timed else time.time() < end:
        frames = []
        for _ in range(200):
            to_ud = timed and rnd.random() < 0.2
            op = rnd.choice(ud_ops if to_ud else known)
            if timed and rnd.random() < 0.05:
                op = rnd.randrange(256)
            psn = (1000 + rnd.randrange(-4, 64)) & 0xFFFFFF
            rest = bytes(rnd.getrandbits(8)
                         for _ in range(rnd.randrange(0, 64)))
            if to_ud and rnd.random() < 0.7:    # a DETH with its Q_Key
                rest = struct.pack("!II", UD_QKEY, 77) + rest
            elif rnd.random() < 0.3:   # an RETH naming the MR
                rest = struct.pack("!QII", mr.buf + rnd.randrange(0, 65536),
                                   mr.rkey, rnd.randrange(0, 4096)) + rest
            src = "10.77.0.77" if timed and rnd.random() < 0.1 else None
            frames.append(LINK.frame(
                bth(op, ud.qp_num if to_ud else qpn, psn,
                    pad=rnd.randrange(4), se=rnd.randrange(2),
                    ackreq=rnd.randrange(2)) + rest, src_ip=src))
        before = counters()
        send(frames)
        d = settle(before, len(frames), timeout=60)
        for c in COUNTERS:
            total[c] += d[c]
        sent += len(frames)
        rounds += 1
        attr, _ = qp.query(e.IBV_QP_STATE)
        states.append(attr.qp_state)
        qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
        qp.to_rts(rts)
    tap(sum(total.values()) == sent,
        f"random headers: {sent} frames in {rounds} rounds all accounted for",
        f"deltas {total}, QP states after the last rounds {states[-10:]}")
    if ud:
        ud.close()
    qp.close()
    mr.close()
    cq.close()
    pd.close()
    ctx.close()
    tap(True, "the QP, MR, CQ and PD are destroyed")
    return failed


if __name__ == "__main__":
    sys.exit(main())
