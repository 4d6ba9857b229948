#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Turn `kunit.py parse` output (stdin) into TAP lines, one per test case.

kunit.py prints "[PASSED] name", "[FAILED] name", "[SKIPPED] name" for each
case (parameterised cases included) and a "Testing complete" summary; a
suite header line "=== suite (N subtests) ===" names the suite.
"""
import re
import sys

STATUS = re.compile(r"\[(PASSED|FAILED|SKIPPED|CRASHED)\] (.*)$")
SUITE = re.compile(r"^(\S+) \(\d+ subtests\)$")
COMPLETE = re.compile(r"Testing complete\. Ran (\d+) tests")


def main():
    suite = "kunit"
    stack = []
    seen = 0
    complete = None
    failed = 0
    for raw in sys.stdin:
        line = re.sub(r"\x1b\[[0-9;]*m", "", raw).rstrip()
        text = re.sub(r"^\[[0-9:]+\] ", "", line)
        text = re.sub(r"^=+ *| *=+$", "", text)
        m = SUITE.search(text)
        if m:
            stack.append(m.group(1))
            continue
        m = COMPLETE.search(text)
        if m:
            complete = int(m.group(1))
            continue
        m = STATUS.search(text)
        if not m:
            if failed and text.strip().startswith("#"):
                print(text)
            continue
        status, name = m.groups()
        name = name.strip()
        where = "/".join(stack) or suite
        if stack and name == stack[-1]:
            stack.pop()           # the suite's (or parent's) own result
            continue
        seen += 1
        if status == "PASSED":
            print(f"ok - kunit: {where}: {name}")
        elif status == "SKIPPED":
            print(f"ok - kunit: {where}: {name} # SKIP reported by KUnit")
        else:
            failed += 1
            print(f"not ok - kunit: {where}: {name} ({status})")
    if complete is None:
        print("not ok - kunit: kunit.py parse did not complete")
        return 1
    if seen == 0:
        print("not ok - kunit: no test case parsed")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
