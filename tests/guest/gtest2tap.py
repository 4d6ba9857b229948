#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Turn a GoogleTest JSON report into TAP lines: one per test case."""
import json
import sys


def main():
    prefix, path = sys.argv[1], sys.argv[2]
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
