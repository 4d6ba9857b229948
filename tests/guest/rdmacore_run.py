#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Run rdma-core's test suite on one device, surviving hangs and crashes.

usage: rdmacore_run.py RUN_TESTS_PY JSONL LOG [--test-timeout S]
                       [--total-timeout S] -- [run_tests.py args...]

Runs the suite that RUN_TESTS_PY (rdma-core's tests/run_tests.py) runs, the
same way (its args parser, its tests package and load_tests protocol), with
unittest's verbose text output appended to LOG and one JSON record per test
appended to JSONL:

  {"id": "test_cq.CQTest.test_resize_cq", "status": "ok" | "skip" |
   "error" | "fail" | "xfail" | "xpass" | "hang" | "crash",
   "reason": "...", "secs": 0.12}

The suite runs in a child process.  If one test runs longer than
--test-timeout (default 120 s) the child's process group is killed, the test
is recorded as "hang", and the suite resumes after it; if the child dies
(a segfault in a provider, say), the test it was in is recorded as "crash"
and the suite resumes likewise.  At most 40 resumptions; the whole run stops
after --total-timeout (default 1800 s), and the tests not run by then are
recorded as "hang" with that reason.  Exit status 0 if the run completed
(whatever the tests' results), 1 otherwise.
"""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

CHILD_ENV = 'URDMA_RDMACORE_CHILD'


def short_id(tid):
    return tid[len('tests.'):] if tid.startswith('tests.') else tid


# ---- child: runs the suite -------------------------------------------------

class JsonResult(unittest.TextTestResult):
    """TextTestResult that also writes a JSON record per test."""
    jsonl = None
    skip_ids = frozenset()

    def _rec(self, test, status, reason=''):
        tid = short_id(test.id())
        secs = time.monotonic() - getattr(self, '_t0', time.monotonic())
        with open(self.jsonl, 'a') as f:
            f.write(json.dumps({'id': tid, 'status': status,
                                'reason': reason[-2000:],
                                'secs': round(secs, 3)}) + '\n')

    def startTest(self, test):
        self._t0 = time.monotonic()
        self._subfail = None
        with open(self.jsonl, 'a') as f:
            f.write(json.dumps({'id': short_id(test.id()),
                                'event': 'start'}) + '\n')
        super().startTest(test)

    def stopTest(self, test):
        if self._subfail:
            self._rec(test, *self._subfail)
        super().stopTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        if not self._subfail:
            self._rec(test, 'ok')

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._rec(test, 'skip', str(reason))

    def addError(self, test, err):
        super().addError(test, err)
        self._rec(test, 'error', self._exc_info_to_string(err, test))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._rec(test, 'fail', self._exc_info_to_string(err, test))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._rec(test, 'xfail', self._exc_info_to_string(err, test))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._rec(test, 'xpass')

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None and not self._subfail:
            kind = 'fail' if issubclass(err[0], test.failureException) \
                else 'error'
            self._subfail = (kind, f'{subtest.id()}: '
                             + self._exc_info_to_string(err, test))


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def child(run_tests, jsonl, skip_file, argv):
    from importlib.machinery import SourceFileLoader
    tdir = os.path.dirname(os.path.abspath(run_tests))
    sys.path.insert(0, tdir)
    sys.argv = [run_tests] + argv
    from args_parser import parser
    tests = SourceFileLoader('tests',
                             os.path.join(tdir, '__init__.py')).load_module()
    parser.parse_args()
    skip = set()
    if skip_file and os.path.exists(skip_file):
        with open(skip_file) as f:
            skip = {ln.strip() for ln in f if ln.strip()}
    loader = unittest.TestLoader()
    names = [a for a in sys.argv[1:] if not a.startswith('-')]
    if names:
        suite = loader.loadTestsFromNames(names, tests)
    else:
        suite = loader.loadTestsFromModule(tests)
    todo = unittest.TestSuite(t for t in flatten(suite)
                              if short_id(t.id()) not in skip)
    JsonResult.jsonl = jsonl
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2,
                                     resultclass=JsonResult)
    runner.run(todo)
    sys.stdout.flush()
    with open(jsonl, 'a') as f:
        f.write(json.dumps({'event': 'done'}) + '\n')
    return 0


# ---- parent: runs and resumes the child ------------------------------------

def read_records(jsonl):
    recs = []
    if os.path.exists(jsonl):
        with open(jsonl) as f:
            for ln in f:
                try:
                    recs.append(json.loads(ln))
                except ValueError:
                    pass
    return recs


def state(jsonl):
    """(ids with a result, id started without a result or None, done?)"""
    finished, current, done = set(), None, False
    for r in read_records(jsonl):
        if r.get('event') == 'start':
            current = r['id']
        elif r.get('event') == 'done':
            done = True
        elif 'status' in r:
            finished.add(r['id'])
            if r['id'] == current:
                current = None
    return finished, current, done


def record(jsonl, tid, status, reason):
    with open(jsonl, 'a') as f:
        f.write(json.dumps({'id': tid, 'status': status, 'reason': reason,
                            'secs': 0}) + '\n')


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def parent(run_tests, jsonl, log, test_timeout, total_timeout, argv):
    skip_file = jsonl + '.skip'
    try:
        return run_resuming(run_tests, jsonl, log, skip_file, test_timeout,
                            total_timeout, argv)
    finally:
        if os.path.exists(skip_file):
            os.unlink(skip_file)


def run_resuming(run_tests, jsonl, log, skip_file, test_timeout,
                 total_timeout, argv):
    for f in (jsonl, log):
        if os.path.exists(f):
            os.unlink(f)
    deadline = time.monotonic() + total_timeout
    env = dict(os.environ, **{CHILD_ENV: '1', 'PYTHONUNBUFFERED': '1'})
    for attempt in range(41):
        finished, _, _ = state(jsonl)
        with open(skip_file, 'w') as f:
            f.write(''.join(t + '\n' for t in sorted(finished)))
        with open(log, 'a') as out:
            if attempt:
                out.write(f'\n=== resuming the suite (attempt {attempt + 1}),'
                          f' {len(finished)} tests done ===\n')
                out.flush()
            p = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), run_tests, jsonl,
                 skip_file, '--'] + argv,
                stdout=out, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
            last, since = None, time.monotonic()
            while p.poll() is None:
                time.sleep(1)
                _, cur, _ = state(jsonl)
                if cur != last:
                    last, since = cur, time.monotonic()
                now = time.monotonic()
                if now > deadline or (cur and now - since > test_timeout):
                    kill_group(p)
                    break
            # Forked helpers (rdmacm tests) may outlive a crashed child.
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        finished, cur, done = state(jsonl)
        if done:
            return 0
        if time.monotonic() > deadline:
            if cur:
                record(jsonl, cur, 'hang', f'the suite hit its total timeout '
                       f'of {total_timeout} s in this test')
            with open(log, 'a') as out:
                out.write(f'\n=== total timeout ({total_timeout} s) ===\n')
            return 1
        if cur:
            hung = time.monotonic() - since > test_timeout
            status = 'hang' if hung else 'crash'
            why = (f'no result after {test_timeout} s; killed' if hung else
                   f'the test process died (exit status {p.returncode})')
            record(jsonl, cur, status, why)
            with open(log, 'a') as out:
                out.write(f'\n=== {cur}: {status}: {why} ===\n')
        else:
            with open(log, 'a') as out:
                out.write(f'\n=== the suite died outside a test (exit status'
                          f' {p.returncode}) ===\n')
            return 1
    return 1


def main():
    args = sys.argv[1:]
    if os.environ.get(CHILD_ENV):
        run_tests, jsonl, skip_file = args[:3]
        return child(run_tests, jsonl, skip_file, args[4:])
    if '--' in args:
        i = args.index('--')
        own, argv = args[:i], args[i + 1:]
    else:
        own, argv = args, []
    test_timeout, total_timeout = 120, 1800
    pos = []
    while own:
        a = own.pop(0)
        if a == '--test-timeout':
            test_timeout = float(own.pop(0))
        elif a == '--total-timeout':
            total_timeout = float(own.pop(0))
        else:
            pos.append(a)
    if len(pos) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    return parent(*pos, test_timeout, total_timeout, argv)


if __name__ == '__main__':
    sys.exit(main())
