#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""make bench's report: bench/run.sh's records to JSON, markdown and plots.

    bench/report.py RESULTS.jsonl OUTDIR
    bench/report.py --check OUTDIR/results.json   (make check's TAP lines)

Writes OUTDIR/results.json (every record), OUTDIR/README.md (each figure
with its ratio to rxe, to siw and to the guest's limit; the issue's
targets, met or missed) and the plots OUTDIR/bw.png, OUTDIR/lat.png and
OUTDIR/wire.png.  Needs Debian's python3-matplotlib (/usr/bin/python3) for
the plots.
"""
import json
import os
import sys

MIB = 1048576.0
BW_TESTS = ["write_bw", "read_bw", "send_bw"]
LAT_TESTS = ["write_lat", "send_lat", "read_lat", "atomic_lat"]
SERIES = [("urdma", "local"), ("urdma", "wire"), ("rxe", "local"),
          ("siw", "local")]


def load(path):
    meta, recs = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if r.get("meta"):
                meta = r
            else:
                recs.append(r)
    return meta, recs


class Table:
    def __init__(self, recs):
        self.recs = recs

    def get(self, dev, path, test, size, qps=1, field=None):
        for r in self.recs:
            if (r.get("dev") == dev and r.get("path") == path and
                    r.get("test") == test and r.get("size") == size and
                    r.get("qps", 1) == qps and not r.get("error")):
                return r.get(field) if field else r
        return None

    def best(self, test, size, field, pick, path=None):
        """A limit: the best of its measurements (run.sh takes two, and
        with path "beside" the two around urdma's 64 KiB write_bw)."""
        vals = [r[field] for r in self.recs
                if r.get("dev") == "limit" and r.get("test") == test and
                r.get("size") == size and field in r and
                path in (None, r.get("path"))]
        return pick(vals) if vals else None

    def bw(self, dev, path, test, size, qps=1):
        """MB/s (10^6), perftest's MiB/s converted, or memcpy's MB/s."""
        if dev == "limit":
            return self.best("memcpy", size, "mbps", max)
        v = self.get(dev, path, test, size, qps, "mibps")
        return None if v is None else v * MIB / 1e6

    def kcopy(self, size):
        """MB/s of the kernel's memcpy loop on a CPU without FSRM."""
        return self.best("memcpy", size, "kernel_style_mbps", max)

    def lat(self, dev, path, test, size):
        if dev == "limit":
            return self.best("pingpong", size, "usec", min)
        return self.get(dev, path, test, size, 1, "usec")

    def kicks_per_iter(self, dev, path, test, size):
        r = self.get(dev, path, test, size)
        return None if not r or "kicks" not in r else r["kicks"] / r["iters"]

    def sizes(self, tests):
        return sorted({r["size"] for r in self.recs
                       if r.get("test") in tests and "size" in r})


def fmt(v, digits=1):
    return "-" if v is None else f"{v:,.{digits}f}"


def ratio(a, b, digits=2):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.{digits}f}"


def bw_table(t, out):
    out.append("| test | size | urdma | urdma wire | rxe | siw | memcpy | "
               "kernel copy | urdma/rxe | urdma/siw | urdma/memcpy | "
               "urdma/kernel copy | wire/rxe |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for test in BW_TESTS:
        for s in t.sizes(BW_TESTS):
            u = t.bw("urdma", "local", test, s)
            w = t.bw("urdma", "wire", test, s)
            x = t.bw("rxe", "local", test, s)
            i = t.bw("siw", "local", test, s)
            m = t.bw("limit", "local", test, s)
            k = t.kcopy(s)
            out.append(f"| {test} | {s} | {fmt(u)} | {fmt(w)} | {fmt(x)} | "
                       f"{fmt(i)} | {fmt(m)} | {fmt(k)} | {ratio(u, x)} | "
                       f"{ratio(u, i)} | {ratio(u, m)} | {ratio(u, k)} | "
                       f"{ratio(w, x)} |")


def lat_table(t, out):
    out.append("| test | size | urdma | urdma wire | rxe | siw | shm ping-pong | "
               "urdma/rxe | urdma/siw | urdma/limit | urdma kicks/iter |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for test in LAT_TESTS:
        sizes = [8] if test == "atomic_lat" else t.sizes(LAT_TESTS[:3])
        for s in sizes:
            u = t.lat("urdma", "local", test, s)
            w = t.lat("urdma", "wire", test, s)
            x = t.lat("rxe", "local", test, s)
            i = t.lat("siw", "local", test, s)
            m = t.lat("limit", "local", test, s)
            k = t.kicks_per_iter("urdma", "local", test, s)
            out.append(f"| {test} | {s} | {fmt(u, 2)} | {fmt(w, 2)} | "
                       f"{fmt(x, 2)} | {fmt(i, 2)} | {fmt(m, 2)} | "
                       f"{ratio(u, x, 3)} | {ratio(u, i, 3)} | {ratio(u, m)} | "
                       f"{fmt(k, 2)} |")


def rate_table(t, out):
    qs = sorted({r["qps"] for r in t.recs if r.get("test") == "rate"})
    out.append("| QPs | urdma | urdma wire | rxe | siw | urdma/rxe | urdma/siw |")
    out.append("|---:|---:|---:|---:|---:|---:|---:|")
    for q in qs:
        v = [t.get(d, p, "rate", 64, q, "mpps") for d, p in SERIES]
        out.append(f"| {q} | {fmt(v[0], 3)} | {fmt(v[1], 3)} | {fmt(v[2], 3)} | "
                   f"{fmt(v[3], 3)} | {ratio(v[0], v[2])} | {ratio(v[0], v[3])} |")


def engines_table(t, out):
    out.append("| test | QPs | engines=1 | engines=2 | 2/1 |")
    out.append("|---|---:|---:|---:|---:|")
    rows = sorted({(r["test"], r["size"], r["qps"]) for r in t.recs
                   if r.get("path") == "engines2" and not r.get("error")})
    for test, size, q in rows:
        one = t.bw("urdma", "local", test, size, q)
        two = t.bw("urdma", "engines2", test, size, q)
        name = "rate (write_bw)" if test == "rate" else test
        out.append(f"| {name} {size} B | {q} | {fmt(one)} | {fmt(two)} | "
                   f"{ratio(two, one)} |")


def beside_rc_table(t, out, test, name):
    """urdma's 64 KiB write_bw under perftest option @name beside RC."""
    out.append(f"| path | RC | {name} | {name}/RC |")
    out.append("|---|---:|---:|---:|")
    for path in ("local", "wire"):
        rc = t.bw("urdma", path, "write_bw", 65536)
        other = t.bw("urdma", path, test, 65536)
        if rc is None and other is None:
            continue
        out.append(f"| {path} | {fmt(rc)} | {fmt(other)} | "
                   f"{ratio(other, rc)} |")


# The clients section (bench/clients.sh): (test, field, what, unit,
# lower is better).
CLIENT_ROWS = [
    ("nvmf_4k_qd1", "usec", "NVMe-oF 4k random read, QD1", "usec", True),
    ("nvmf_4k_qd16", "iops", "NVMe-oF 4k random read, QD16", "IOPS", False),
    ("nvmf_128k_seq", "mbps", "NVMe-oF 128k sequential read, QD16", "MB/s",
     False),
    ("nfs_write", "mbps", "NFSv4.2 1 MiB sequential write", "MB/s", False),
    ("nfs_read", "mbps", "NFSv4.2 1 MiB sequential read", "MB/s", False),
    ("ucx_tag_lat", "usec", "UCX tag_lat 8 B", "usec", True),
    ("ucx_tag_bw", "mbps", "UCX tag_bw 64 KiB", "MB/s", False),
    ("ucx_ucp_put_bw", "mbps", "UCX ucp_put_bw 64 KiB", "MB/s", False),
    ("qperf_lat", "usec", "qperf rc_lat / tcp_lat", "usec", True),
    ("qperf_bw", "mbps", "qperf rc_bw / tcp_bw", "MB/s", False),
]
CLIENT_DEVS = ["urdma", "rxe", "siw", "tcp"]


def client(t, dev, test, field):
    for r in t.recs:
        if (r.get("path") == "client" and r.get("dev") == dev and
                r.get("test") == test and field in r):
            return r[field]
    return None


def clients_table(t, out):
    out.append("| client | unit | urdma | rxe | siw | TCP | urdma/TCP | "
               "urdma/rxe | urdma/siw |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for test, field, what, unit, _ in CLIENT_ROWS:
        v = [client(t, d, test, field) for d in CLIENT_DEVS]
        digits = 0 if unit == "IOPS" else 1
        out.append(f"| {what} | {unit} | " +
                   " | ".join(fmt(x, digits) for x in v) +
                   f" | {ratio(v[0], v[3])} | {ratio(v[0], v[1])} | "
                   f"{ratio(v[0], v[2])} |")


def client_targets(t, add):
    """The clients' targets: urdma against the client's TCP transport."""
    def goal(what, test, field, goal, ok, how):
        x, y = client(t, "urdma", test, field), client(t, "tcp", test, field)
        r = None if x is None or y is None or y == 0 else x / y
        add(what, fmt(r, 2) + "x", goal, None if r is None else ok(r),
            "clients: " + how)

    goal("NVMe-oF over urdma vs NVMe/TCP, 4k QD16 IOPS", "nvmf_4k_qd16",
         "iops", ">= 3x", lambda r: r >= 3, "fio 4k random read, QD16")
    goal("NVMe-oF over urdma vs NVMe/TCP, 4k QD1 latency", "nvmf_4k_qd1",
         "usec", "<= 0.5x", lambda r: r <= 0.5,
         "fio 4k random read, QD1, mean total latency (submission and completion)")
    for test, what in (("nfs_write", "writes"), ("nfs_read", "reads")):
        goal(f"NFS over urdma vs NFS over TCP, 1 MiB {what}", test, "mbps",
             ">= 1x", lambda r: r >= 1, "fio, NFSv4.2, O_DIRECT")
    goal("UCX over urdma vs UCX over tcp, ucp_put_bw 64 KiB",
         "ucx_ucp_put_bw", "mbps", ">= 2x", lambda r: r >= 2,
         "ucx_perftest")


def tcp_wire(t, dev, test, field):
    """qperf's figure on the wire path's veth pair (bench/run.sh tcp_wire)."""
    size = 65536 if test == "stream" else 2
    return t.get(dev, "wire", test, size, 1, field)


def wire_targets(t, add, w):
    """The wire path against TCP on the same veth pair, and against rxe."""
    s = tcp_wire(t, "tcp", "stream", "mbps")
    r = None if None in (w, s) else w / s
    add("wire path, 64 KiB ib_write_bw vs a TCP stream", fmt(r, 2) + "x",
        ">= 2x", None if r is None else r >= 2,
        f"urdma over veth / qperf tcp_bw over the same veth pair "
        f"({fmt(s)} MB/s)")
    p = tcp_wire(t, "tcp", "pingpong", "usec")
    for test in ("write_lat", "send_lat"):
        u = t.lat("urdma", "wire", test, 2)
        r = None if None in (u, p) else u / p
        add(f"wire path, 2 B ib_{test} vs a TCP ping-pong", fmt(r, 2) + "x",
            "<= 0.5x", None if r is None else r <= 0.5,
            f"urdma over veth / qperf tcp_lat over the same veth pair "
            f"({fmt(p, 2)} us one way)")
        x = t.lat("rxe", "local", test, 2)
        r = None if None in (u, x) else u / x
        add(f"wire path, 2 B ib_{test} vs rxe", fmt(r, 2) + "x", "<= 0.5x",
            None if r is None else r <= 0.5, "urdma over veth / rxe loopback")
    u = t.get("urdma", "wire", "rate", 64, 4, "mpps")
    x = t.get("rxe", "local", "rate", 64, 4, "mpps")
    r = None if None in (u, x) else u / x
    add("wire path, 64 B message rate, 4 QPs, vs rxe", fmt(r, 2) + "x",
        ">= 5x", None if r is None else r >= 5,
        "urdma over veth / rxe loopback, ib_write_bw -s 64 -q 4")


def wire_table(t, out):
    """urdma's wire path beside TCP and UDP on the same veth pair."""
    out.append("| what | urdma wire | TCP | UDP | urdma/TCP | urdma/UDP |")
    out.append("|---|---:|---:|---:|---:|---:|")
    w = t.bw("urdma", "wire", "write_bw", 65536)
    s = tcp_wire(t, "tcp", "stream", "mbps")
    out.append(f"| 64 KiB stream, MB/s (ib_write_bw; qperf tcp_bw) | {fmt(w)} "
               f"| {fmt(s)} | - | {ratio(w, s)} | - |")
    tp = tcp_wire(t, "tcp", "pingpong", "usec")
    up = tcp_wire(t, "udp", "pingpong", "usec")
    for test in ("write_lat", "send_lat"):
        u = t.lat("urdma", "wire", test, 2)
        out.append(f"| 2 B one way, usec (ib_{test}; qperf tcp_lat, udp_lat) "
                   f"| {fmt(u, 2)} | {fmt(tp, 2)} | {fmt(up, 2)} | "
                   f"{ratio(u, tp)} | {ratio(u, up)} |")


PAIRS = ["urdma-urdma", "rxe-rxe", "urdma-rxe"]


def twohost_table(t, out):
    """bench/twohost.sh: each pair between two guests, and their sockets."""
    out.append("| pair | write_bw 64 KiB, MB/s | write_lat 2 B, usec | "
               "send_lat 2 B, usec | rate 64 B x 4 QPs, Mpps |")
    out.append("|---|---:|---:|---:|---:|")
    for p in PAIRS:
        bw = t.bw(p, "2host", "write_bw", 65536)
        wl = t.lat(p, "2host", "write_lat", 2)
        sl = t.lat(p, "2host", "send_lat", 2)
        rt = t.get(p, "2host", "rate", 64, 4, "mpps")
        out.append(f"| {p} | {fmt(bw)} | {fmt(wl, 1)} | {fmt(sl, 1)} | "
                   f"{fmt(rt, 4)} |")
    s = t.get("tcp", "2host", "stream", 65536, 1, "mbps")
    tl = t.get("tcp", "2host", "pingpong", 2, 1, "usec")
    ul = t.get("udp", "2host", "pingpong", 2, 1, "usec")
    out.append(f"| TCP (qperf tcp_bw; tcp_lat) | {fmt(s)} | {fmt(tl, 1)} | - | - |")
    out.append(f"| UDP (qperf udp_lat) | - | {fmt(ul, 1)} | - | - |")


def twohost_targets(t, add):
    """Two guests: urdma against the same guests' TCP, and against rxe."""
    w = t.bw("urdma-urdma", "2host", "write_bw", 65536)
    s = t.get("tcp", "2host", "stream", 65536, 1, "mbps")
    r = None if None in (w, s) else w / s
    add("two guests, 64 KiB ib_write_bw vs a TCP stream", fmt(r, 2) + "x",
        ">= 2x", None if r is None else r >= 2,
        f"urdma-urdma / qperf tcp_bw between the same two guests "
        f"({fmt(s)} MB/s)")
    u = t.lat("urdma-urdma", "2host", "write_lat", 2)
    p = t.get("tcp", "2host", "pingpong", 2, 1, "usec")
    r = None if None in (u, p) else u / p
    add("two guests, 2 B ib_write_lat vs a TCP ping-pong", fmt(r, 2) + "x",
        "<= 0.5x", None if r is None else r <= 0.5,
        f"urdma-urdma / qperf tcp_lat between the same two guests "
        f"({fmt(p, 1)} us one way)")
    x = t.bw("rxe-rxe", "2host", "write_bw", 65536)
    r = None if None in (w, x) else w / x
    add("two guests, 64 KiB ib_write_bw vs rxe", fmt(r, 2) + "x", "(context)",
        None, "urdma-urdma / rxe-rxe, each pair in its own boot")


def targets(t, out):
    """The issue's targets: (what, measured ratio, goal, met)."""
    rows = []

    def add(what, val, goal, ok, how):
        rows.append((what, val, goal,
                     "n/a" if ok is None else ("met" if ok else "missed"), how))

    u = t.bw("urdma", "local", "write_bw", 65536)
    x = t.bw("rxe", "local", "write_bw", 65536)
    m = t.bw("limit", "local", "memcpy", 65536)
    r = None if None in (u, x) else u / x
    add("64 KiB ib_write_bw vs rxe", fmt(r, 2) + "x", ">= 5x",
        None if r is None else r >= 5, "urdma / rxe, local path")
    # The copy rate of the same minutes of the boot: measured just before
    # and after urdma's runs (older results have none: the boot's best).
    mb = t.best("memcpy", 65536, "mbps", max, "beside")
    lim = mb or m
    r = None if None in (u, lim) else u / lim
    add("64 KiB ib_write_bw vs memcpy", fmt(r and 100 * r, 0) + "%", ">= 70%",
        None if r is None else r >= 0.7,
        "urdma / the guest's fastest copy of 64 KiB, measured just before "
        f"and after urdma's runs ({fmt(lim)} MB/s)" if mb else
        "urdma / the guest's fastest copy of 64 KiB")
    r = None if None in (u, m) else u / m
    # Only when the boot's best copy was another one than the target's.
    if mb and m and m > mb:
        add("64 KiB ib_write_bw vs the boot's best memcpy",
            fmt(r and 100 * r, 0) + "%", "(context)", None,
            f"urdma / the fastest 64 KiB copy of the whole boot "
            f"({fmt(m)} MB/s)")
    k = t.kcopy(65536)
    r = None if None in (u, k) else u / k
    add("64 KiB ib_write_bw vs the kernel's copy loop",
        fmt(r and 100 * r, 0) + "%", "(context)", None,
        "urdma / the loop the kernel's memcpy() runs without FSRM")
    sc = t.best("syscall", 0, "usec", min)
    for test, goal in (("write_lat", 0.1), ("send_lat", 0.1),
                       ("read_lat", 0.2)):
        u = t.lat("urdma", "local", test, 2)
        x = t.lat("rxe", "local", test, 2)
        r = None if None in (u, x) else u / x
        add(f"2 B ib_{test} vs rxe", fmt(r, 3) + "x", f"<= {goal}x",
            None if r is None else r <= goal, "urdma / rxe, t_typical")
        k = t.kicks_per_iter("urdma", "local", test, 2)
        if test != "read_lat" and sc is not None:
            add(f"2 B ib_{test} vs a null system call",
                fmt(u and u / sc, 1) + "x", "(context)", None,
                f"urdma / getppid() ({fmt(sc, 2)} us); "
                f"{fmt(k, 2)} kicks per iteration")
    u = t.get("urdma", "local", "rate", 64, 4, "mpps")
    x = t.get("rxe", "local", "rate", 64, 4, "mpps")
    r = None if None in (u, x) else u / x
    add("64 B message rate, 4 QPs, vs rxe", fmt(r, 2) + "x", ">= 10x",
        None if r is None else r >= 10,
        "ib_write_bw -s 64 -q 4, 20,000 WRITEs per QP, Mpps")
    w = t.bw("urdma", "wire", "write_bw", 65536)
    x = t.bw("rxe", "local", "write_bw", 65536)
    r = None if None in (w, x) else w / x
    add("wire path, 64 KiB ib_write_bw vs rxe", fmt(r, 2) + "x", ">= 3x",
        None if r is None else r >= 3,
        "urdma over veth / rxe loopback (rxe over a wire can only be slower)")
    wire_targets(t, add, w)
    twohost_targets(t, add)
    crc = {}
    for r in t.recs:
        if r.get("test") == "crc32" and r.get("dev") == "limit":
            crc[r["driver"]] = max(crc.get(r["driver"], 0), r["mbps"])
    g, p = crc.get("crc32-generic"), crc.get("crc32-pclmul")
    r = None if None in (w, g) else w / g
    add("wire path, 64 KiB ib_write_bw vs the ICRC's CRC-32",
        fmt(r and 100 * r, 0) + "%", "(context)", None,
        f"urdma over veth / crc32_le over 4 KiB, {fmt(g)} MB/s (tcrypt "
        f"crc32-generic); every byte is CRC'd twice, by the sender and the "
        f"receiver; rxe's crc32-pclmul: {fmt(p)} MB/s")
    many = max([r["qps"] for r in t.recs if r.get("test") == "write_bw" and
                r.get("size") == 65536 and r.get("dev") == "urdma" and
                r.get("path") == "local"] or [1])
    one = t.bw("urdma", "local", "write_bw", 65536, 1)
    lots = t.bw("urdma", "local", "write_bw", 65536, many) if many > 1 else None
    r = None if None in (one, lots) else lots / one
    add(f"{many} QPs vs 1 QP", fmt(r and 100 * r, 0) + "%", ">= 80%",
        None if r is None else r >= 0.8, "ib_write_bw -s 65536, urdma")
    idle = [r for r in t.recs if r.get("test") == "engine_cpu"]
    c = idle[0]["cpu_pct"] if idle else None
    add("engine CPU while idle", fmt(c, 2) + "% of a CPU", "~ 0",
        None if c is None else c < 1, "5 s, 1 s after the last work")
    client_targets(t, add)
    out.append("| target | measured | goal | | how |")
    out.append("|---|---:|---|---|---|")
    for what, val, goal, met, how in rows:
        out.append(f"| {what} | {val} | {goal} | {met} | {how} |")
    return rows


def plot(plt, tests, sizes, value, limit_label, ylabel, path):
    """One figure, a panel per test: value(dev, path, test, size) vs size."""
    styles = {("urdma", "local"): "o-", ("urdma", "wire"): "o--",
              ("rxe", "local"): "s-", ("siw", "local"): "^-",
              ("limit", "local"): "k:"}
    fig, axes = plt.subplots(1, len(tests), figsize=(15, 4.5))
    for ax, test in zip(axes, tests):
        for d, p in SERIES + [("limit", "local")]:
            pts = [(s, value(d, p, test, s)) for s in sizes]
            pts = [q for q in pts if q[1]]  # no None, no 0 on a log scale
            if pts:
                label = limit_label if d == "limit" else f"{d} {p}"
                ax.plot(*zip(*pts), styles[(d, p)], label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"ib_{test}")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def wire_plot(plt, t, path):
    """The wire against TCP and UDP: on the veth pair, between two guests."""
    groups = [("veth pair", [("urdma", ("urdma", "wire")), ("TCP", ("tcp", "wire")),
                             ("UDP", ("udp", "wire"))]),
              ("two guests", [(p, (p, "2host")) for p in PAIRS] +
               [("TCP", ("tcp", "2host")), ("UDP", ("udp", "2host"))])]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))

    def bw(dev, p):
        if dev in ("tcp", "udp"):
            return t.get(dev, p, "stream", 65536, 1, "mbps")
        return t.bw(dev, p, "write_bw", 65536)

    def lat(dev, p):
        if dev in ("tcp", "udp"):
            return t.get(dev, p, "pingpong", 2, 1, "usec")
        return t.lat(dev, p, "write_lat", 2)

    for ax, (value, title, unit) in zip(axes, [
            (bw, "64 KiB stream (ib_write_bw; qperf tcp_bw)", "MB/s"),
            (lat, "2 B one way (ib_write_lat; qperf tcp_lat, udp_lat)",
             "usec")]):
        labels, vals, x = [], [], 0
        for group, series in groups:
            for name, (dev, p) in series:
                v = value(dev, p)
                if v:
                    ax.bar(x, v, color="C1" if dev in ("tcp", "udp") else "C0")
                    labels.append(f"{name}\n{group}")
                    vals.append(x)
                x += 1
            x += 0.5
        ax.set_xticks(vals)
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(unit)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plots(t, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no matplotlib (python3-matplotlib): no plots"
    plot(plt, BW_TESTS, t.sizes(BW_TESTS), t.bw, "memcpy", "MB/s",
         os.path.join(outdir, "bw.png"))
    plot(plt, LAT_TESTS[:3], t.sizes(LAT_TESTS[:3]), t.lat, "shm ping-pong",
         "usec (typical)", os.path.join(outdir, "lat.png"))
    wire_plot(plt, t, os.path.join(outdir, "wire.png"))
    return None


def check(path):
    """make check's smoke test: TAP lines on what a results.json holds."""
    with open(path) as f:
        recs = json.load(f)["records"]
    for dev, p in SERIES + [("limit", "local"), ("limit", "beside")]:
        n = sum(1 for r in recs if r.get("dev") == dev and
                r.get("path") == p and not r.get("error"))
        print(("ok" if n else "not ok") +
              f" - bench: results.json holds {n} {dev} {p} measurements")
    rate = [r for r in recs if r.get("test") == "rate" and
            r.get("dev") == "urdma" and not r.get("error")]
    print(("ok" if rate else "not ok") +
          f" - bench: results.json holds {len(rate)} urdma message-rate runs")
    for test, what in (("write_bw_xrc", "XRC"), ("write_bw_odp", "ODP")):
        n = sum(1 for r in recs if r.get("dev") == "urdma" and
                r.get("test") == test and not r.get("error"))
        print(("ok" if n else "not ok") +
              f" - bench: results.json holds {n} urdma {what} runs")
    for dev, test in (("tcp", "stream"), ("tcp", "pingpong"),
                      ("udp", "pingpong")):
        n = sum(1 for r in recs if r.get("dev") == dev and
                r.get("path") == "wire" and r.get("test") == test)
        print(("ok" if n else "not ok") +
              f" - bench: the wire path's veth pair: a {dev.upper()} {test} "
              f"was measured")
    for dev in ("urdma-urdma", "tcp"):
        n = sum(1 for r in recs if r.get("dev") == dev and
                r.get("path") == "2host")
        print(("ok" if n else "not ok") +
              f" - bench: results.json holds {n} {dev} two-guest measurements")
    idle = [r for r in recs if r.get("test") == "engine_cpu"]
    print(("ok" if idle else "not ok") +
          " - bench: the engine's idle CPU use was measured")
    for test, field, what, _, _ in CLIENT_ROWS:
        devs = sorted({r["dev"] for r in recs if r.get("path") == "client"
                       and r.get("test") == test and field in r})
        need = {"urdma", "tcp"}
        print(("ok" if need <= set(devs) else "not ok") +
              f" - bench: clients: {what} measured on urdma and TCP "
              f"(has: {', '.join(devs) or 'none'})")
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        return check(sys.argv[2])
    if len(sys.argv) != 3:
        sys.exit("usage: report.py RESULTS.jsonl OUTDIR")
    meta, recs = load(sys.argv[1])
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    t = Table(recs)
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump({"meta": meta, "records": recs}, f, indent=1)
    out = ["# urdma benchmark results", "",
           "Produced by `make bench` (bench/run.sh, bench/report.py); do not "
           "edit. Every figure comes from one guest boot: urdma, rxe and siw "
           "side by side, with the guest's own limits. Under QEMU TCG the "
           "absolute numbers mean little; the ratios are the result. See "
           "docs/performance.md for what they mean.", "",
           f"- commit `{meta.get('commit', '?')}`, {meta.get('date', '?')}"
           f"{' (quick smoke run)' if meta.get('quick') else ''}",
           f"- kernel {meta.get('kernel', '?')}, {meta.get('cpus', '?')} vCPUs "
           f"({meta.get('cpu', '?')}; ERMS/FSRM: "
           f"{meta.get('copy_flags', '').strip() or 'none'}), "
           f"netdev MTU {meta.get('mtu', '?')}",
           "- bandwidth in MB/s (10^6 bytes/s; perftest's MiB/s converted), "
           "latency in usec (perftest's t_typical); the limits are the "
           "fastest copy of the guest (libc memcpy, rep movsq, rep movsb or "
           "the loop the kernel's memcpy() runs without FSRM, which is "
           "also shown on its own as \"kernel copy\") "
           "and a one-way shared-memory ping-pong between two processes "
           "(bench/limits.cpp)",
           "- kicks/iter: the system calls urdma's posters made to wake "
           "the engine, per iteration (0 is pure kernel bypass)",
           "- local path: server and client on one device; wire: urdma "
           "to urdma over a veth pair, the far end in its own network "
           "namespace", ""]
    failed = [r for r in recs if r.get("error") and r.get("path") != "client"]
    if failed:
        out.append(f"**{len(failed)} runs failed:** " + ", ".join(
            f"{r['dev']}/{r['path']} {r['test']} {r['size']} x{r['qps']}"
            for r in failed))
        out.append("")
    out += ["## Targets", ""]
    targets(t, out)
    out += ["", "## Bandwidth", "", "![bandwidth](bw.png)", ""]
    bw_table(t, out)
    out += ["", "## Latency", "", "![latency](lat.png)", ""]
    lat_table(t, out)
    out += ["", "## Message rate (ib_write_bw -s 64, Mpps)", "",
            "Each QP posts its own run of 64-byte WRITEs (20,000; quick: "
            "500), the median of three runs.", ""]
    rate_table(t, out)
    out += ["", "## Engine threads (urdma local path, MB/s)", ""]
    engines_table(t, out)
    out += ["", "## XRC (urdma, 64 KiB ib_write_bw, MB/s)", "",
            "perftest's `-c XRC` beside its RC run, on the local path and "
            "on the wire path (rxe and siw have no XRC).", ""]
    beside_rc_table(t, out, "write_bw_xrc", "XRC")
    out += ["", "## On-demand paging (urdma, 64 KiB ib_write_bw, MB/s)", "",
            "perftest's `--odp --perform_warm_up` (both sides' buffers "
            "are ODP MRs, faulted in by the warm-up WRITEs) beside the same "
            "run on pinned MRs. Target: within 10% (ODP/RC at least 0.90).",
            ""]
    beside_rc_table(t, out, "write_bw_odp", "ODP")
    out += ["", "## The wire path against TCP and UDP", "",
            "urdma to urdma over the wire path's veth pair, beside qperf's "
            "TCP stream and TCP and UDP ping-pongs over the same pair, "
            "between the same two network namespaces (5 s each; quick: "
            "2 s). Latency is one way for both.", ""]
    out += ["", "![the wire against TCP](wire.png)", ""]
    wire_table(t, out)
    out += ["", "## Two guests", "",
            "bench/twohost.sh: two guests of scripts/urdma-2host (one vCPU "
            "each, joined by a QEMU stream network over a Unix socket), a "
            "boot per pair (server-client), and qperf's TCP and UDP "
            "between the same two guests in the urdma-urdma boot "
            "(docs/performance.md).", ""]
    twohost_table(t, out)
    out += ["", "## Clients", "",
            "Real clients (bench/clients.sh) on each device and on their own "
            "TCP transport, server and client in this guest (TCP crosses "
            "the loopback; the RDMA devices their own paths). NVMe-oF: the "
            "kernel's nvmet and host over a RAM disk; NFS: NFSv4.2 on a "
            "tmpfs export; UCX: ucx_perftest over rc_verbs,ud_verbs or tcp "
            "(siw: UCX needs IB or RoCE); qperf: rc_* with -cm1 or tcp_*. "
            "Each figure is one run of 5 s (quick: 1 s).", ""]
    clients_table(t, out)
    errs = [r for r in recs if r.get("path") == "client" and r.get("error")]
    if errs:
        out += ["", "Not measured:", ""]
        out += [f"- {r['dev']} {r['test']}: {r['error']}" for r in errs]
    note = plots(t, outdir)
    if note:
        out += ["", f"({note})"]
    with open(os.path.join(outdir, "README.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"report: {len(recs)} records, {len(failed)} failed runs -> "
          f"{outdir}/README.md results.json bw.png lat.png wire.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
