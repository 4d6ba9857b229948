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
    a = p.parse_args()
    return {"spoof": spoof}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
