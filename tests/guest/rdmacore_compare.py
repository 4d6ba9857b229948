#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Compare rdma-core's suite on urdma with the same suite on rxe; print TAP.

usage: rdmacore_compare.py PREFIX URDMA_JSONL RXE_JSONL [--needs-engine FILE]
                           [--min-ok N] [--table FILE]
                           [--no-rxe REASON]

Both JSONL files come from rdmacore_run.py.  One TAP line per test, keyed
by urdma's result:

  ok                           -> ok
  skipped, and rxe does not pass it -> ok # SKIP (the test's reason)
  skipped although rxe passes it    -> not ok: urdma must pass whatever rxe
                                       passes
  error, failure, hang, crash  -> not ok
  not run at all               -> not ok

except for tests listed in the --needs-engine file (one "module.Class.test" per
line, "#" comments), a transition list: a listed test that does not pass is
"ok # SKIP ... needs the HCA engine", and one that passes is ok, so the
list can only shrink.

Then summary lines: each run completed; urdma has at least --min-ok passes
(default 100).  A side-by-side table (test, urdma, rxe; totals) is printed
as TAP comments and written to --table.  Exit 1 if any line is "not ok".
"""
import collections
import json
import sys

BAD = ('error', 'fail', 'hang', 'crash')


def load(path):
    """{id: record} in run order, and whether the run completed."""
    res, done = collections.OrderedDict(), False
    try:
        with open(path) as f:
            for ln in f:
                try:
                    r = json.loads(ln)
                except ValueError:
                    continue
                if r.get('event') == 'done':
                    done = True
                elif 'status' in r:
                    res[r['id']] = r
    except OSError:
        return None, False
    return res, done


def oneline(text):
    return ' '.join((text or '').split())[:200]


def first_line(text):
    lines = [ln.strip() for ln in (text or '').strip().splitlines()
             if ln.strip()]
    # A traceback's last line says what went wrong.
    return (lines[-1] if lines else '')[:160]


def main():
    args = sys.argv[1:]
    opts = {'--needs-engine': None, '--min-ok': '100', '--table': None,
            '--no-rxe': None}
    pos = []
    while args:
        a = args.pop(0)
        if a in opts:
            opts[a] = args.pop(0)
        else:
            pos.append(a)
    if len(pos) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    prefix, ujson, rjson = pos
    min_ok = int(opts['--min-ok'])
    needs_engine = set()
    if opts['--needs-engine']:
        with open(opts['--needs-engine']) as f:
            for ln in f:
                ln = ln.split('#', 1)[0].strip()
                if ln:
                    needs_engine.add(ln)

    urdma, udone = load(ujson)
    rxe, rdone = load(rjson)
    urdma = urdma or collections.OrderedDict()
    have_rxe = rxe is not None and len(rxe) > 0
    rxe = rxe or {}

    out = []
    failed = False

    def tap(ok, name, extra=''):
        nonlocal failed
        if not ok:
            failed = True
        out.append(f'{"ok" if ok else "not ok"} - {prefix}: {name}{extra}')

    ids = list(urdma) + [t for t in rxe if t not in urdma]
    for tid in ids:
        u = urdma.get(tid)
        r = rxe.get(tid)
        ust = u['status'] if u else 'not run'
        rst = r['status'] if r else 'not run'
        if ust in ('ok', 'xfail'):
            tap(True, tid)
        elif tid in needs_engine:
            tap(True, tid, f' # SKIP needs the HCA engine '
                f'(rdmacore-needs-engine.txt; urdma: {ust})')
        elif ust == 'skip' and rst != 'ok':
            tap(True, tid, f' # SKIP {oneline(u["reason"]) or "skipped by the test"}')
        elif ust == 'skip':
            tap(False, tid, f' (rxe passes it, urdma skips it: '
                f'{oneline(u["reason"])})')
        else:
            why = first_line(u['reason']) if u else ''
            tap(False, tid, f' ({ust}{": " + why if why else ""})')

    def counts(res):
        c = collections.Counter(r['status'] for r in res.values())
        return c

    uc, rc = counts(urdma), counts(rxe)
    u_ok = uc['ok'] + uc['xfail']
    tap(udone, 'the urdma run completed',
        '' if udone else f' ({len(urdma)} results; see the log)')
    if opts['--no-rxe']:
        tap(True, 'the rxe run completed (the baseline)',
            f' # SKIP {opts["--no-rxe"]}')
    else:
        tap(have_rxe and rdone, 'the rxe run completed (the baseline)',
            '' if have_rxe and rdone else
            f' ({len(rxe)} results; without it urdma is not compared)')
    tap(u_ok >= min_ok, f'urdma passes at least {min_ok} tests (passes {u_ok})')
    bad = sum(uc[s] for s in BAD)

    # The side-by-side table.
    w = max([len(t) for t in ids] + [20])
    table = [f'{"test":<{w}}  {"urdma":<8} {"rxe":<8}']
    for tid in ids:
        u, r = urdma.get(tid), rxe.get(tid)
        us = u['status'] if u else '-'
        rs = r['status'] if r else '-'
        mark = ''
        if us != rs:
            mark = '  <' if rs == 'ok' else '  >' if us == 'ok' else '  *'
        table.append(f'{tid:<{w}}  {us:<8} {rs:<8}{mark}')
    table.append('')
    keys = ['ok', 'skip', 'error', 'fail', 'hang', 'crash', 'xfail', 'xpass']
    table.append(f'{"totals":<{w}}  {"urdma":<8} {"rxe":<8}')
    table.append(f'{"tests":<{w}}  {len(urdma):<8} {len(rxe):<8}')
    for k in keys:
        if uc[k] or rc[k]:
            table.append(f'{k:<{w}}  {uc[k]:<8} {rc[k]:<8}')
    table.append('(< rxe passes, urdma does not; > urdma passes, rxe does '
                 'not; * other difference)')
    if opts['--table']:
        with open(opts['--table'], 'w') as f:
            f.write('\n'.join(table) + '\n')

    print('\n'.join(out))
    print('\n'.join('# ' + ln for ln in table))
    print(f'# {prefix}: urdma {u_ok} ok, {uc["skip"]} skipped, {bad} bad, of '
          f'{len(urdma)}; rxe {rc["ok"]} ok, {rc["skip"]} skipped, '
          f'{sum(rc[s] for s in BAD)} bad, of {len(rxe)}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
