#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The structure's limits (docs/architecture.md), as TAP for make check.

  scripts/arch-limits.py [TOP]

- no kernel source file (kernel/*.c) over 800 lines;
- no function in kernel/ or provider/ over 80 lines, counted from the
  line of its opening brace to the line of its closing one;
- at most 20 `case URDMA_WQE_*:` labels outside the opcode table
  (uapi/rdma/urdma-abi.h's urdma_wqe_ops[]), in kernel/ and provider/.

Each limit is one TAP line; a "not ok" names what is over it.
"""
import glob
import os
import re
import sys

MAX_FILE = 800
MAX_FUNC = 80
MAX_CASES = 20


def functions(path):
    """(name, lines) of each function: a '{' and a '}' in column 0."""
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        if lines[i].startswith('{'):
            # The signature: the last line before it that starts a
            # declaration in column 0.
            j = i - 1
            while j > 0 and not re.match(r'[A-Za-z_]', lines[j]):
                j -= 1
            k = i + 1
            while k < len(lines) and not lines[k].startswith('}'):
                k += 1
            m = re.search(r'(\w+)\s*\(', lines[j])
            # A struct or array initializer is not a function.
            if m and not lines[j].rstrip().endswith('='):
                yield m.group(1), k - i + 1
            i = k
        i += 1


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(os.path.dirname(__file__), '..')
    os.chdir(top)
    kernel = sorted(glob.glob('kernel/*.c'))
    code = kernel + sorted(glob.glob('provider/*.c'))
    fail = 0

    big = [f'{f} ({n})' for f in kernel
           for n in [sum(1 for _ in open(f, encoding='utf-8'))]
           if n > MAX_FILE]
    print(('not ok' if big else 'ok') +
          f' - no kernel source file over {MAX_FILE} lines' +
          (': ' + ', '.join(big) if big else ''))
    fail += bool(big)

    long_fns = [f'{f}:{name} ({n})' for f in code
                for name, n in functions(f) if n > MAX_FUNC]
    print(('not ok' if long_fns else 'ok') +
          f' - no function in kernel/ or provider/ over {MAX_FUNC} lines' +
          (': ' + ', '.join(long_fns) if long_fns else ''))
    fail += bool(long_fns)

    cases = sum(len(re.findall(r'\bcase\s+URDMA_WQE_\w+\s*:',
                               open(f, encoding='utf-8').read()))
                for f in code)
    over = cases > MAX_CASES
    print(('not ok' if over else 'ok') +
          f' - at most {MAX_CASES} case URDMA_WQE_* labels outside the '
          f'opcode table ({cases})')
    fail += over
    return 1 if fail else 0


if __name__ == '__main__':
    sys.exit(main())
