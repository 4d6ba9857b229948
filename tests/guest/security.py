#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The guest side of t_security.sh: attacks and races that need pyverbs or a
raw socket.  Each subcommand prints TAP diagnostics ("# ...") and exits 0 if
the device behaved, 1 if not.

  spoof  --dev D --tx-if IF --dst-mac MAC --dst-ip IP --peer-ip IP
         --spoof-ip IP [--count N]
        Forge RC NAKs (remote access error, correct ICRC) at D's connected
        RC QP in RTS while it transfers: N from an address the QP is not
        connected to, with random PSNs, then N from its peer's own address
        with PSNs long acknowledged.  The caller checks that the transfer
        was not disturbed.
  mtu   --dev-a A --gid-a G --dev-b B --gid-b G --seconds S
        RDMA WRITEs over the wire between A and B (path MTU 4096) while the
        caller changes the netdev MTU under them and drops packets: every
        WRITE completes, successfully (its bytes landed, byte-exact) or
        with a local error that fails its QP, which is then reconnected.
  stop  --dev-a A --gid-a G --dev-b B --gid-b G --rounds N
        Over the wire from A to B, a chain of three RDMA WRITEs whose second
        has a bad lkey: the first lands, the second fails (LOC_PROT_ERR)
        and the third is flushed and never reaches B's memory.
  sendinv --dev-a A --gid-a G --dev-b B --gid-b G --rounds N
        Over the wire from A to B, SEND_WITH_INV naming a type 2 window
        that B bound on its QP: B's completion says it invalidated that
        rkey (IBV_WC_WITH_INV), and a WRITE through it then fails with
        REM_ACCESS_ERR.  The IETH carries the rkey in network order, as rxe
        and every other RoCE device read it.
  ahloop --dev D --gid-index G --seconds S
        Create and destroy address handles on D, to a GID no urdma device
        has, as fast as possible (each one looks at every urdma device).
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

import roce


def diag(*lines):
    for line in lines:
        print("# " + line, flush=True)


def v4_gid(ip):
    a = [int(x) for x in ip.split(".")]
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(a)


# ---- spoof ---------------------------------------------------------------

def rc_qp_in_rts(dev, timeout):
    """(lqpn, sq_psn) of @dev's RC QP in RTS, as "rdma res" shows it."""
    end = time.time() + timeout
    while time.time() < end:
        out = subprocess.run(["rdma", "-j", "res", "show", "qp", "link",
                              f"{dev}/1"], capture_output=True, text=True)
        try:
            qps = json.loads(out.stdout or "[]")
        except json.JSONDecodeError:
            qps = []
        for q in qps:
            if q.get("type") == "RC" and q.get("state") == "RTS":
                return int(q["lqpn"]), int(q.get("sq-psn", 0))
        time.sleep(0.05)
    return None, None


def spoof(a):
    qpn, sq_psn = rc_qp_in_rts(a.dev, 60)
    if qpn is None:
        diag(f"no RC QP of {a.dev} reached RTS")
        return 1
    diag(f"target: {a.dev} QP {qpn:#x}, first PSN {sq_psn:#x}")
    rnd = random.Random(int(os.environ.get("URDMA_FUZZ_SEED",
                                           random.randrange(1 << 30))))
    link = roce.Link(roce.mac(a.tx_if), bytes.fromhex(
        a.dst_mac.replace(":", "")), a.peer_ip, a.dst_ip)

    def nak(psn):
        return roce.bth(roce.RC_ACK, qpn, psn) + \
            roce.aeth(roce.AETH_NAK_REM_ACCESS, rnd.randrange(1 << 24))

    # From an address the QP is not connected to, any PSN at all, the
    # in-window ones included.
    forged = [link.frame(nak(rnd.randrange(1 << 24)), src_ip=a.spoof_ip)
              for _ in range(a.count // 2)]
    forged += [link.frame(nak((sq_psn + rnd.randrange(4096)) & 0xFFFFFF),
                          src_ip=a.spoof_ip)
               for _ in range(a.count - a.count // 2)]
    roce.send(a.tx_if, forged)
    # From the peer's own address, PSNs acknowledged long ago.
    stale = [link.frame(nak((sq_psn - (1 << 22) - i) & 0xFFFFFF))
             for i in range(a.count)]
    roce.send(a.tx_if, stale)
    diag(f"sent {len(forged)} NAKs from {a.spoof_ip} and {len(stale)} "
         f"with stale PSNs from {a.peer_ip}")
    return 0


# ---- mtu -----------------------------------------------------------------

CHUNK = 64 * 1024
SLOTS = 16
WINDOW = 8


def access():
    return e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE


class Side:
    def __init__(self, dev, gid_index):
        self.ctx = Context(name=dev)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        self.mr = MR(self.pd, CHUNK * SLOTS, access())
        self.qp = None

    def new_qp(self):
        if self.qp:
            self.qp.close()
        cap = QPCap(max_send_wr=64, max_recv_wr=4, max_send_sge=1,
                    max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq,
                                         rcq=self.cq, cap=cap))

    def connect(self, peer, psn, peer_psn):
        gr = GlobalRoute(dgid=peer.gid, sgid_index=self.gid_index)
        attr = QPAttr(qp_state=e.IBV_QPS_INIT, cur_qp_state=e.IBV_QPS_RESET)
        attr.qp_access_flags = access()
        attr.ah_attr = AHAttr(port_num=1, is_global=1, gr=gr)
        attr.dest_qp_num = peer.qp.qp_num
        attr.path_mtu = e.IBV_MTU_4096
        attr.max_dest_rd_atomic = 1
        attr.max_rd_atomic = 1
        attr.min_rnr_timer = 1
        attr.rq_psn = peer_psn
        attr.sq_psn = psn
        attr.timeout = 12
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        self.qp.to_rts(attr)


def pair(sa, sb):
    """New RC QPs on both sides, connected to each other at random PSNs."""
    sa.new_qp()
    sb.new_qp()
    pa, pb = random.randrange(1 << 24), random.randrange(1 << 24)
    sa.connect(sb, pa, pb)
    sb.connect(sa, pb, pa)


def pattern(seq):
    r = random.Random(seq)
    return r.randbytes(CHUNK)


def mtu(a):
    sa, sb = Side(a.dev_a, a.gid_a), Side(a.dev_b, a.gid_b)

    def reconnect():
        pair(sa, sb)

    reconnect()
    end = time.time() + a.seconds
    seq = 0
    inflight = {}          # wr_id -> (slot, seq)
    ok = bad_bytes = errs = conns = 0
    statuses = {}
    broken = False         # a WRITE failed: drain, then reconnect
    while time.time() < end or inflight:
        while not broken and time.time() < end and len(inflight) < WINDOW:
            slot = seq % SLOTS
            if any(s == slot for s, _ in inflight.values()):
                break
            sa.mr.write(pattern(seq), CHUNK, slot * CHUNK)
            wr = SendWR(wr_id=seq, opcode=e.IBV_WR_RDMA_WRITE,
                        num_sge=1,
                        sg=[SGE(sa.mr.buf + slot * CHUNK, CHUNK, sa.mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_rdma(sb.mr.rkey, sb.mr.buf + slot * CHUNK)
            try:
                sa.qp.post_send(wr)
            except PyverbsRDMAError:
                break
            inflight[seq] = (slot, seq)
            seq += 1
        n, wcs = sa.cq.poll(num_entries=16)
        if not n:
            time.sleep(0.001)
            continue
        for wc in wcs:
            slot, s = inflight.pop(wc.wr_id)
            statuses[wc.status] = statuses.get(wc.status, 0) + 1
            if wc.status == e.IBV_WC_SUCCESS:
                if sb.mr.read(CHUNK, slot * CHUNK) != pattern(s):
                    bad_bytes += 1
                ok += 1
            else:
                errs += 1
                broken = True
        if broken and not inflight and time.time() < end:
            reconnect()
            conns += 1
            broken = False
    diag(f"{ok} WRITEs of {CHUNK} bytes landed, {errs} failed, "
         f"{conns} reconnections; completion statuses {statuses}")
    allowed = {e.IBV_WC_SUCCESS, e.IBV_WC_LOC_QP_OP_ERR,
               e.IBV_WC_WR_FLUSH_ERR, e.IBV_WC_RETRY_EXC_ERR}
    odd = {s: c for s, c in statuses.items() if s not in allowed}
    if bad_bytes:
        diag(f"{bad_bytes} WRITEs completed successfully with wrong bytes")
    if odd:
        diag(f"unexpected completion statuses {odd}")
    if not ok:
        diag("no WRITE landed at all")
    return 0 if ok and not bad_bytes and not odd else 1


# ---- stop ----------------------------------------------------------------

def stop(a):
    """A requester sends nothing after a WQE that failed: the failure takes
    the QP to ERROR, which flushes the WQEs behind it, so none of them may
    have touched the peer's memory (a flushed WRITE that landed anyway)."""
    sa, sb = Side(a.dev_a, a.gid_a), Side(a.dev_b, a.gid_b)
    size = 4096
    zero = bytes(size)
    problems = []
    for rnd in range(a.rounds):
        pair(sa, sb)
        sb.mr.write(zero, size, 0)
        sb.mr.write(zero, size, 2 * size)
        sa.mr.write(pattern(2 * rnd)[:size], size, 0)
        sa.mr.write(pattern(2 * rnd + 1)[:size], size, 2 * size)

        def write(wr_id, off, lkey, nxt=None):
            wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                        sg=[SGE(sa.mr.buf + off, size, lkey)],
                        send_flags=e.IBV_SEND_SIGNALED, next_wr=nxt)
            wr.set_wr_rdma(sb.mr.rkey, sb.mr.buf + off)
            return wr

        third = write(3, 2 * size, sa.mr.lkey)
        second = write(2, size, sa.mr.lkey ^ 0x5a5a00, third)
        sa.qp.post_send(write(1, 0, sa.mr.lkey, second))
        got = {}
        end = time.time() + 20
        while len(got) < 3 and time.time() < end:
            n, wcs = sa.cq.poll(num_entries=4)
            for wc in wcs[:n]:
                got[wc.wr_id] = int(wc.status)
            if not n:
                time.sleep(0.001)
        want = {1: int(e.IBV_WC_SUCCESS), 2: int(e.IBV_WC_LOC_PROT_ERR),
                3: int(e.IBV_WC_WR_FLUSH_ERR)}
        if got != want:
            problems.append(f"round {rnd}: completions {got}, want {want}")
        first = sb.mr.read(size, 0)
        if got.get(1) == e.IBV_WC_SUCCESS and \
                first != pattern(2 * rnd)[:size]:
            problems.append(f"round {rnd}: the first WRITE's bytes differ")
        landed = sb.mr.read(size, 2 * size)
        if landed != zero:
            what = "the third WRITE's bytes" \
                if landed == pattern(2 * rnd + 1)[:size] else "other bytes"
            problems.append(f"round {rnd}: {what} reached the peer's "
                            "memory at the flushed WRITE's address")
    diag(f"{a.rounds} rounds of WRITE, bad-lkey WRITE, WRITE",
         *problems[:10])
    return 1 if problems else 0


# ---- sendinv -------------------------------------------------------------

def poll_one(cq, secs=20):
    """The next completion on @cq, or None after @secs."""
    end = time.time() + secs
    while time.time() < end:
        n, wcs = cq.poll(num_entries=1)
        if n:
            return wcs[0]
        time.sleep(0.001)
    return None


def sendinv(a):
    """SEND_WITH_INV between two devices on the wire."""
    sa, sb = Side(a.dev_a, a.gid_a), Side(a.dev_b, a.gid_b)
    size = 4096
    wmr = MR(sb.pd, size, access() | e.IBV_ACCESS_MW_BIND)
    problems = []
    for rnd in range(a.rounds):
        pair(sa, sb)
        mw = MW(sb.pd, e.IBV_MW_TYPE_2)
        bind = SendWR(wr_id=10, opcode=e.IBV_WR_BIND_MW)
        bind.set_bind_wr(mw, MWBindInfo(wmr, wmr.buf, size,
                                        e.IBV_ACCESS_REMOTE_WRITE))
        sb.qp.post_send(bind)
        wc = poll_one(sb.cq)
        if not wc or wc.status != e.IBV_WC_SUCCESS:
            problems.append(f"round {rnd}: the bind: {wc and wc.status}")
            break
        rkey = bind.rkey
        sb.qp.post_recv(RecvWR(wr_id=33, num_sge=1,
                               sg=[SGE(sb.mr.buf, size, sb.mr.lkey)]))
        sa.mr.write(pattern(rnd)[:200], 200, 0)
        # imm_data shares the union with invalidate_rkey (CPU order).
        sa.qp.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND_WITH_INV,
                               num_sge=1, sg=[SGE(sa.mr.buf, 200,
                                                  sa.mr.lkey)],
                               imm_data=rkey))
        wa, wb = poll_one(sa.cq), poll_one(sb.cq)
        if not wa or wa.status != e.IBV_WC_SUCCESS:
            problems.append(f"round {rnd}: the SEND_WITH_INV completed "
                            f"with {wa and wa.status}")
        if not wb or wb.status != e.IBV_WC_SUCCESS or wb.wr_id != 33 or \
                not wb.wc_flags & e.IBV_WC_WITH_INV or \
                wb.imm_data != rkey or wb.byte_len != 200:
            problems.append(
                f"round {rnd}: receive completion status "
                f"{wb and wb.status}, flags {wb and wb.wc_flags:#x}, "
                f"rkey {wb and wb.imm_data:#x} (want {rkey:#x})")
        elif sb.mr.read(200, 0) != pattern(rnd)[:200]:
            problems.append(f"round {rnd}: the SEND's bytes differ")
        wr = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(sa.mr.buf, 64, sa.mr.lkey)])
        wr.set_wr_rdma(rkey, wmr.buf)
        sa.qp.post_send(wr)
        wa = poll_one(sa.cq)
        if not wa or wa.status != e.IBV_WC_REM_ACCESS_ERR:
            problems.append(f"round {rnd}: a WRITE through the invalidated "
                            f"window completed with {wa and wa.status}")
        mw.close()
    diag(f"{a.rounds} rounds of bind, SEND_WITH_INV, WRITE", *problems[:10])
    return 1 if problems else 0


# ---- ahloop --------------------------------------------------------------

def ahloop(a):
    ctx = Context(name=a.dev)
    pd = PD(ctx)
    gr = GlobalRoute(dgid=GID(v4_gid(a.dst_ip)), sgid_index=a.gid_index)
    attr = AHAttr(port_num=1, is_global=1, gr=gr)
    end = time.time() + a.seconds
    n = 0
    while time.time() < end:
        AH(pd, attr=attr).close()
        n += 1
    diag(f"{n} address handles created and destroyed on {a.dev}")
    return 0 if n else 1


def import_pyverbs():
    """pyverbs, for the subcommands that need it (spoof does not: it must
    start fast, and pyverbs is slow to load on the debug kernel)."""
    global AH, AHAttr, GID, GlobalRoute, CQ, Context, MR, MW, MWBindInfo, PD
    global PyverbsRDMAError, QP, QPAttr, QPCap, QPInitAttr, RecvWR, SendWR
    global SGE, e
    from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
    from pyverbs.cq import CQ
    from pyverbs.device import Context
    from pyverbs.mr import MR, MW, MWBindInfo
    from pyverbs.pd import PD
    from pyverbs.pyverbs_error import PyverbsRDMAError
    from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
    from pyverbs.wr import RecvWR, SendWR, SGE
    import pyverbs.enums as e


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("spoof")
    s.add_argument("--dev", required=True)
    s.add_argument("--tx-if", required=True)
    s.add_argument("--dst-mac", required=True)
    s.add_argument("--dst-ip", required=True)
    s.add_argument("--peer-ip", required=True)
    s.add_argument("--spoof-ip", required=True)
    s.add_argument("--count", type=int, default=256)
    for cmd in ("mtu", "stop", "sendinv"):    # two devices on the wire
        s = sub.add_parser(cmd)
        s.add_argument("--dev-a", required=True)
        s.add_argument("--gid-a", type=int, required=True)
        s.add_argument("--dev-b", required=True)
        s.add_argument("--gid-b", type=int, required=True)
        if cmd == "mtu":
            s.add_argument("--seconds", type=float, default=10)
        else:
            s.add_argument("--rounds", type=int, default=20)
    s = sub.add_parser("ahloop")
    s.add_argument("--dev", required=True)
    s.add_argument("--gid-index", type=int, required=True)
    s.add_argument("--dst-ip", required=True)
    s.add_argument("--seconds", type=float, default=10)
    a = p.parse_args()
    if a.cmd != "spoof":
        import_pyverbs()
    return {"spoof": spoof, "mtu": mtu, "stop": stop, "sendinv": sendinv,
            "ahloop": ahloop}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
