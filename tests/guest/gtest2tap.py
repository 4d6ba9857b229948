#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Turn a GoogleTest JSON report into TAP lines: one per test case.

gtest2tap.py PREFIX REPORT.json [CONSOLE.log]: GoogleTest 1.12 (Debian 12)
leaves GTEST_SKIP()'s message out of the JSON report, so a skip's reason
is taken from the console log when one is given.
"""
import json
import re
import sys


def skip_reasons(path):
    """Suite.Test -> the message its GTEST_SKIP() printed, from a log."""
    reasons, cur, lines = {}, None, []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"\[ RUN      \] (\S+)", line)
                if m:
                    cur, lines = m.group(1), []
                    continue
                m = re.match(r"\[  SKIPPED \] (\S+)", line)
                if m and m.group(1) == cur:
                    text = " ".join(x.strip() for x in lines
                                    if x.strip() and
                                    not x.rstrip().endswith(": Skipped"))
                    if text:
                        reasons[cur] = text
                    cur = None
                    continue
                if cur:
                    lines.append(line)
    except OSError:
        pass
    return reasons


def main():
    prefix, path = sys.argv[1], sys.argv[2]
    logged = skip_reasons(sys.argv[3]) if len(sys.argv) > 3 else {}
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"not ok - {prefix}: gtest report unreadable ({e})")
        return 1
    failed = 0
    for suite in report.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{prefix}: {suite['name']}.{t['name']}"
            if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                msg = " ".join(x.get("failure", "") for x in t.get("skipped", []))
                msg = msg or logged.get(f"{suite['name']}.{t['name']}")
                print(f"ok - {name} # SKIP {msg or 'skipped by the test'}")
            elif t.get("failures"):
                failed += 1
                print(f"not ok - {name}")
                for x in t["failures"]:
                    for line in x.get("failure", "").splitlines():
                        print(f"# {line}")
            else:
                print(f"ok - {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
