#!/usr/bin/env python3
"""A real guest's boot exported to trace.dat and read back by Debian's trace-cmd
(suite e2e).

Usage: export_e2e.py --host-agent PATH --guestd PATH --ticker PATH
                     [--workdir DIR] [--trace-cmd PATH] [--kernelshark PATH]

Two boots of the patched kernel under QEMU stream to the real host-agent through
tests/e2e-stream's machinery (its guest scenarios, initramfs and launcher):
  * resets: slab and known-chain events with stacks, 12 map resets (13 epochs);
  * full: ftrace_stackmap.bits=10 and a wide workload, so the map fills (full
    kernel_stack events) and the guest's ring buffer overruns (lost events).
Each boot is exported (`host-agent export trace.dat`) and tracecmp.py compares
`trace-cmd report` with `host-agent report events --json` event by event: CPUs,
timestamps, names, fields and every stack's frames; trace-cmd must print no
warning; the events trace-cmd shows as dropped must be the ones the store counted
(pages flagged RB_MISSED_EVENTS). KernelShark loads each file under Xvfb
(kshark-load.sh) and its window's screenshot is left in --artifacts. Figures
printed: export speed and bytes per event, trace.dat vs the store's chunks.
"""
import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'e2e-stream'))
import e2s  # noqa: E402  (the guest scenarios, build and launch of tests/e2e-stream)

check, log = e2s.check, e2s.log


def db_one(run, sql):
    c = sqlite3.connect(run.db())
    try:
        return c.execute(sql).fetchone()
    finally:
        c.close()


def export_and_compare(args, run, name, want_full, want_epochs):
    dat = os.path.join(run.dir, name + '.dat')
    boots = run.report('boots')
    check(len(boots) == 1 and boots[0]['events'] > 0,
          'the guest stored %s boots (%s events): it never streamed (console: %s)'
          % (len(boots), boots[0]['events'] if boots else 0, run.console))
    t0 = time.monotonic()
    r = subprocess.run([args.host_agent, 'export', 'trace.dat', '-o', dat,
                        '--state-dir', run.state, '--domain-name', e2s.DOMAIN],
                       capture_output=True, text=True)
    secs = time.monotonic() - t0
    check(r.returncode == 0, 'export failed: %s' % r.stderr)
    log(r.stderr.strip())
    m = re.search(r': (\d+) events on (\d+) CPUs \((\d+) stacks from the map, (\d+) ids'
                  r' unresolved', r.stderr)
    check(m, 'no export summary')
    written, rehydrated, unresolved = int(m.group(1)), int(m.group(3)), int(m.group(4))
    check(unresolved == 0, '%d stack_ids unresolved in the export' % unresolved)
    b = run.report('boots')[0]
    check(b['epochs'] >= want_epochs, '%d epochs, want %d' % (b['epochs'], want_epochs))
    missed, uncounted = db_one(run, 'SELECT COALESCE(SUM(missed_events), 0),'
                               ' COALESCE(SUM(missed_uncounted), 0) FROM streams')
    cmd = [sys.executable, os.path.join(HERE, 'tracecmp.py'), '--trace-cmd', args.trace_cmd,
           '--host-agent', args.host_agent, '--state-dir', run.state,
           '--domain-name', e2s.DOMAIN, '--dat', dat]
    if missed or uncounted:
        cmd.append('--expect-dropped')
    c = subprocess.run(cmd, capture_output=True, text=True)
    log(c.stdout.strip())
    check(c.returncode == 0, 'trace-cmd report differs from report events')
    m = re.search(r'^tracecmp-json: (.*)$', c.stdout, re.M)
    check(m, 'no tracecmp summary')
    s = json.loads(m.group(1))
    nev, kinds, counted = s['events'], s['stacks'], s['dropped_counted']
    check(nev == b['events'], 'compared %d events, the boot has %d' % (nev, b['events']))
    check(kinds.get('frames', 0) > nev // 2, 'only %s events with frames' % kinds)
    check(counted == missed, 'trace-cmd shows %d events dropped, the store counted %d'
          % (counted, missed))
    if want_full:
        full = sum(1 for e in run.report('events', '-n', '100000000')['events']
                   if e['stack']['kind'] == 'full')
        check(full > 0, 'no full stack in the boot')
        log('full stacks: %d' % full)
    store = db_one(run, 'SELECT SUM(length(data)), SUM(nr_events) FROM chunks')
    size = os.path.getsize(dat)
    log('FIGURES export %s: %d ring-buffer events written in %.2f s = %.0f events/s;'
        ' trace.dat %d bytes = %.1f bytes/event; store chunks %d bytes = %.1f bytes/event'
        ' (database %d bytes)'
        % (name, written, secs, written / secs if secs else 0, size, size / max(1, written),
           store[0], store[0] / max(1, store[1]), os.path.getsize(run.db())))
    os.makedirs(args.artifacts, exist_ok=True)
    png = os.path.join(args.artifacts, 'kernelshark-%s.png' % name)
    k = subprocess.run(['bash', os.path.join(HERE, 'kshark-load.sh'), dat, png],
                       capture_output=True, text=True)
    log(k.stdout.strip())
    check(k.returncode == 0, 'KernelShark did not load %s' % dat)
    return dat


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--host-agent', required=True)
    ap.add_argument('--guestd', required=True)
    ap.add_argument('--ticker', required=True)
    ap.add_argument('--workdir', default='export-work')
    ap.add_argument('--trace-cmd', default='trace-cmd')
    ap.add_argument('--seed', type=int, default=7)
    ap.add_argument('--artifacts', default='artifacts',
                    help='where the KernelShark screenshots are left')
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    try:
        kout, initrd = e2s.build(args)
        # tracing set up once booted (stream.sh e2s_trace=late): boot-time stacks of
        # every slab allocation can starve the ACPI interpreter on a loaded TCG host
        run = e2s.boot_plain(args, kout, initrd, 'export-resets', 'resets', seconds=10,
                             trace=[], extra=['stackmap.e2s_trace=late',
                                              'stackmap.e2s_resets=12'])
        export_and_compare(args, run, 'resets', want_full=False, want_epochs=13)
        run.cleanup()
        # as e2s.py's own full scenario: traced from boot (with tracing set up late
        # a 20 s run filled 356 of the 1024-slot map's ids, no full stack)
        run = e2s.boot_plain(args, kout, initrd, 'export-full', 'full', seconds=15,
                             extra=['ftrace_stackmap.bits=10'])
        export_and_compare(args, run, 'full', want_full=True, want_epochs=1)
        run.cleanup()
    except e2s.Fail as e:
        log('FAIL: %s' % e)
        return 1
    log('PASS: export')
    return 0


if __name__ == '__main__':
    sys.exit(main())
