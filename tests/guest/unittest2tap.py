#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Turn `python3 -m unittest -v` output into TAP lines.

usage: unittest2tap.py PREFIX LOG NEEDS_ENGINE_LIST

ok -> ok; skipped 'why' -> ok # SKIP why; ERROR/FAIL -> not ok, except for
the tests named in NEEDS_ENGINE_LIST (one "module.Class.test" per line,
"#" comments): they move data, which needs the HCA engine (the next issue),
and are reported as SKIP with that reason.  A listed test that passes is
reported ok, so the list can only shrink.  Exit 1 if any test failed or if
the log has no summary line (the run crashed).
"""
import re
import sys

LINE = re.compile(r'^(test\w*) \(([\w.]+)\)(?:\n.*?)?\s*\.\.\.\s*(.*)$')


def main():
    prefix, log, listfile = sys.argv[1:4]
    needs_engine = set()
    with open(listfile) as f:
        for ln in f:
            ln = ln.split('#', 1)[0].strip()
            if ln:
                needs_engine.add(ln)
    text = open(log, errors='replace').read()
    failed = False
    seen = 0
    # unittest -v prints "name (id) ... result", but a docstring pushes the
    # result onto the next line: "name (id)\ndoc ... result".
    for m in re.finditer(r'^(test\w*) \(([\w.]+)\)\n?(?:[^\n]*?)\.\.\. ?(.*)$',
                         text, re.M):
        seen += 1
        tid = m.group(2)
        if tid.startswith('tests.'):
            tid = tid[len('tests.'):]
        res = m.group(3).strip()
        name = f'{prefix}: {tid}'
        if res == 'ok':
            print(f'ok - {name}')
        elif res.startswith('skipped'):
            why = res[len('skipped'):].strip().strip("'\"")
            print(f'ok - {name} # SKIP {why or "skipped by the test"}')
        elif tid in needs_engine:
            print(f'ok - {name} # SKIP moves data: needs the HCA engine '
                  f'(issue 4), got {res}')
        else:
            print(f'not ok - {name} ({res})')
            failed = True
    summary = re.search(r'^Ran (\d+) tests?', text, re.M)
    if not summary:
        print(f'not ok - {prefix}: the run finished with a summary line')
        failed = True
    elif int(summary.group(1)) != seen:
        print(f'not ok - {prefix}: parsed {seen} results of '
              f'{summary.group(1)} tests')
        failed = True
    if failed:
        for ln in text.splitlines()[-60:]:
            print(f'# {ln}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
