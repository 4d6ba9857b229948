#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Turn debian/ of trixie's rdma-core 56.1 into a Debian 12 build with urdma.

    deb-debianize.py DEBIAN-DIR VERSION

scripts/deb.sh runs it on a copy of the source tree that has the provider
synced in (scripts/rdma-core.sh sync).  It changes only what bookworm or the
provider needs:
  - bookworm's dpkg-dev (1.21) has no t64 substvars and bookworm had no t64
    transition: librdmacm1t64 and libibnetdisc5t64 keep bookworm's names,
    librdmacm1 and libibnetdisc5, so that they upgrade those in place;
  - a package of its own, ibverbs-provider-urdma, for liburdma and
    urdma.driver, which ibverbs-providers' globs would otherwise take;
  - systemd units and udev rules go to /lib, as in bookworm's rdma-core 44:
    bookworm's debhelper looks for units there, and moving a file between
    /lib and /usr/lib in an upgrade is what bookworm's dpkg must not see
    (DEP17);
  - a changelog entry for VERSION.
"""
import os
import re
import sys

d, rev = sys.argv[1], sys.argv[2]
path = os.path.join(d, "control")
s = open(path).read()
s = s.replace("dpkg-dev (>= 1.22.5)", "dpkg-dev")
for new, old in (("librdmacm1t64", "librdmacm1"),
                 ("libibnetdisc5t64", "libibnetdisc5")):
    s, n = re.subn(r"Package: %s\nProvides: \$\{t64:Provides\}\n"
                   r"Replaces: %s\nBreaks: %s \(<< \$\{source:Version\}\)\n"
                   % (new, old, old), "Package: %s\n" % old, s)
    assert n == 1, "no %s stanza of the expected form" % new
    s = s.replace(new, old)
    for ext in ("install", "symbols"):
        src = os.path.join(d, "%s.%s" % (new, ext))
        if os.path.exists(src):
            text = open(src).read().replace(new, old)
            open(os.path.join(d, "%s.%s" % (old, ext)), "w").write(text)
            os.remove(src)
assert "t64" not in s, "t64 left in debian/control"
s = s.rstrip("\n") + """

Package: ibverbs-provider-urdma
Architecture: linux-any
Multi-Arch: same
Depends: libibverbs1 (= ${binary:Version}), ${misc:Depends}, ${shlibs:Depends}
Recommends: urdma-dkms
Description: urdma, a software RoCEv2 RDMA adapter: libibverbs provider
 liburdma maps the kernel module's rings and doorbells into the process,
 so that posting and polling do not enter the kernel.  It must come from
 the same rdma-core build as the libibverbs1 that loads it.
"""
open(path, "w").write(s)

for name in sorted(os.listdir(d)):
    f = os.path.join(d, name)
    if not os.path.isfile(f) or name in ("changelog", "copyright"):
        continue
    try:
        text = open(f).read()
    except UnicodeDecodeError:
        continue
    new = re.sub(r"(^|[^a-z])usr/lib/(systemd|udev)/", r"\1lib/\2/", text,
                 flags=re.M)
    if new != text:
        open(f, "w").write(new)

open(os.path.join(d, "ibverbs-provider-urdma.install"), "w").write(
    "etc/libibverbs.d/urdma.driver\n"
    "usr/lib/*/libibverbs/liburdma-rdmav*.so\n")
# ibverbs-providers installs every lib*-rdmav*.so and /etc/libibverbs.d/.
with open(os.path.join(d, "rules"), "a") as f:
    f.write("\nexecute_after_dh_install:\n"
            "\trm -f debian/ibverbs-providers/etc/libibverbs.d/urdma.driver"
            " debian/ibverbs-providers/usr/lib/*/libibverbs/liburdma-rdmav*.so\n")

path = os.path.join(d, "changelog")
old = open(path).read()
# The date of the entry it follows: the build is reproducible.
date = re.search(r"^ -- .*>  (.*)$", old, re.M).group(1)
open(path, "w").write(
    "rdma-core (%s) bookworm; urgency=medium\n\n"
    "  * Rebuilt for Debian 12 with the urdma provider (liburdma).\n"
    "  * librdmacm1 and libibnetdisc5 keep their bookworm names.\n\n"
    " -- urdma developers <urdma@localhost>  %s\n\n" % (rev, date) + old)
