#!/usr/bin/env python3
"""End-to-end tests of the epoch-tagged stack ids and stack_map_delta (issue 4).

Usage: e2e_delta.py TEST --smdelta FILE [--workdir DIR] [--duration SEC] [--rounds N]

Like tests/e2e/e2e.py, through the shared harness (tests/lib/stackmap_e2e.py), every
test builds what it needs through guest-kernel/build-kernel and build-initramfs and
boots the guest with guest-kernel/launch. The in-guest helper smdelta (smdelta.c here,
linked statically with proto/delta.c by meson: FILE) is installed in the initramfs at
/usr/bin/smdelta (build-initramfs --add).

Tests:
  selftests  the seed's three stackmap .tc selftests and the new
             stackmap-epoch.tc, stackmap-delta.tc and stackmap-auto-reset.tc
             pass under ftracetest
  stress     scenario delta-stress: function tracer + func_stack_trace +
             stackmap on 2 vCPUs, a reset loop, one delta reader; every
             stack_id of trace_pipe was delivered by the delta reader for its
             epoch, no entry twice (default --duration 120)
  bench      (not an assertion) scenario delta-bench: events/s with and
             without an active delta reader; prints the figures (--kout DIR
             boots another build-kernel output, e.g. the seed's series, for
             a baseline without the delta export)
"""

import argparse
import os
import re
import sys

import stackmap_e2e as sm
from stackmap_e2e import check, log, build_kernel, marker_fields as marker

SELFTESTS = sm.SEED_TESTS + ['test.d/ftrace/stackmap-epoch.tc',
                             'test.d/ftrace/stackmap-delta.tc',
                             'test.d/ftrace/stackmap-auto-reset.tc']


def boot(kout, workdir, smdelta, scenario, append=(), timeout=1800, tag=None):
    """A boot of SCENARIO with smdelta (built by meson) at /usr/bin/smdelta."""
    initrd = sm.build_initramfs(
        kout, os.path.join(workdir, 'initrd-delta-%s.cpio.gz' % os.path.basename(kout)),
        [(smdelta, '/usr/bin/smdelta')])
    return sm.boot(kout, initrd, workdir, scenario, append, timeout, 2, tag, port=False)


# --- tests -------------------------------------------------------------------

def t_selftests(workdir, args):
    kout = build_kernel()
    run = boot(kout, workdir, args.smdelta, 'ftracetest',
               append=['stackmap.tests=' + ','.join(SELFTESTS)], tag='delta-selftests')
    check(run.has('FTRACETEST-DONE'), 'ftracetest did not finish')
    res = sm.ftracetest_results(run)
    log('ftracetest: ' + sm.summary(res))
    for desc, r in sorted(res.items()):
        log('  %-11s %s' % (r, desc))
    check(len(res) == len(SELFTESTS),
          'expected %d results, got %d' % (len(SELFTESTS), len(res)))
    bad = {d: r for d, r in res.items() if r != 'PASS'}
    check(not bad, 'selftests not passing: %s' % bad)


def t_stress(workdir, args):
    kout = build_kernel()
    dur = args.duration or 120
    run = boot(kout, workdir, args.smdelta, 'delta-stress', append=['stackmap.duration=%d' % dur],
               timeout=dur * 6 + 900)
    check(run.has('STRESS-OK'), 'the stress scenario did not report STRESS-OK')
    res = marker(run, 'STRESS-RESETS')
    chk = marker(run, 'STRESS-CHECK')
    rd = marker(run, 'DELTA-READER')
    for k in ('duplicates', 'unresolved', 'bad_tags', 'epoch_gaps'):
        check(chk[k] == '0', '%s = %s' % (k, chk[k]))
    check(int(res['resets']) > 0, 'no reset')
    check(int(chk['trace_ids_checked']) > 0, 'no stack_id in the trace')
    check(int(chk['epochs']) == int(res['resets']) + 1,
          'the reader saw %s epoch records for %s resets' % (chk['epochs'], res['resets']))
    log('stress: %s resets in %s s (%s refused busy, %s refused nospc); '
        'delta reader: %s entries in %s epochs, %s reads; '
        'trace: %s stack_id events checked (%s distinct ids), %s unresolved, '
        '%s duplicates' % (
            res['resets'], res['seconds'], res['failed_busy'], res['failed_nospc'],
            chk['entries_delivered'], chk['epochs'], rd['reads'],
            chk['trace_ids_checked'], chk['distinct_trace_ids'], chk['unresolved'],
            chk['duplicates']))


BENCH = re.compile(r'BENCH mode=(\S+) events=(\d+) seconds=(\S+) events_per_s=(\d+)')


def t_bench(workdir, args):
    # --kout: another build-kernel output, e.g. the seed's series alone,
    # for a baseline (its kernel has no stack_map_delta: noreader only).
    kout = args.kout or build_kernel()
    dur = args.duration or 10
    rounds = args.rounds or 3
    run = boot(kout, workdir, args.smdelta, 'delta-bench',
               append=['stackmap.duration=%d' % dur, 'stackmap.rounds=%d' % rounds],
               timeout=(dur + 15) * rounds * 2 + 600)
    check(run.has('BENCH-DONE'), 'the bench scenario did not finish')
    rates = {}
    for m in run.markers():
        b = BENCH.match(m)
        if b:
            rates.setdefault(b.group(1), []).append(int(b.group(4)))
    check(rates.get('noreader'), 'no noreader figures')
    for mode in ('noreader', 'reader'):
        if not rates.get(mode):
            log('bench: no %s figures (kernel without stack_map_delta)' % mode)
            return
        v = sorted(rates[mode])
        log('bench: %-8s events/s per run %s, median %d' % (mode, v, v[len(v) // 2]))
    a = sorted(rates['noreader'])[len(rates['noreader']) // 2]
    b = sorted(rates['reader'])[len(rates['reader']) // 2]
    log('bench: with an active reader the median is %.1f%% of the median without' %
        (100.0 * b / a if a else 0))


TESTS = {'selftests': t_selftests, 'stress': t_stress, 'bench': t_bench}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('test', choices=sorted(TESTS))
    ap.add_argument('--workdir', default=os.environ.get('E2E_WORKDIR', 'e2e-delta-work'))
    ap.add_argument('--duration', type=int, default=0)
    ap.add_argument('--rounds', type=int, default=0)
    ap.add_argument('--kout', help='bench: a build-kernel output directory to boot')
    ap.add_argument('--smdelta', required=True,
                    help='the static in-guest helper (meson builds tests/e2e-delta/smdelta)')
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    return sm.main(args.test, TESTS[args.test], os.path.abspath(args.workdir), args)


if __name__ == '__main__':
    sys.exit(main())
