#!/usr/bin/env python3
"""e2e-demo: guest-kernel/run-demo as a user runs it, checked for completeness from boot.

Usage: demo.py --host-agent FILE --guestd FILE --workdir DIR [--seconds N]

run-demo traces kmem events with stacks from boot on the kernel command line, streams
them to host-agent, and crashes the guest. The store must hold every event since boot:
  * no ring-buffer reset after events were recorded: the kernel did not switch its
    trace clock at late_initcall ("Unstable clock detected" is absent) because run-demo's
    launch sets trace_clock=;
  * host-agent reports no loss of any kind (LOST frames and events 0, no unread events,
    no stack ids handed out beyond the stored stack_id events);
  * the stack_id events stored are at least the map's successes the guest printed just
    before its crash (its own counter of the ids handed out since boot): a reset, an
    overwrite or a lost page would leave fewer.
The post-mortem (run-demo's QEMU pauses on panic; host-agent dumps the guest, reads its
kernel log from the dump and quits QEMU):
  * report postmortem --json: status recovered, the panic message is sysrq's, and the
    crash report stored (from "sysrq: Trigger a crash" to the panic's "---[ end" line)
    equals, line for line, the one on the serial console;
  * the recovered log starts at the kernel's first record (seq 0, "Linux version"),
    and every kernel line the console showed before the crash is in it;
  * the dump was deleted (no --dump-keep).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import stackmap_e2e as sm
from stackmap_e2e import check, log

DOMAIN = 'demo'


def t_demo(a):
    state = os.path.join(a.workdir, 'demo-state')
    shutil.rmtree(state, ignore_errors=True)
    os.makedirs(state)
    cmd = [os.path.join(sm.GK, 'run-demo'), '--seconds', str(a.seconds),
           '--state-dir', state, '--host-agent', a.host_agent, '--guestd', a.guestd]
    log('$ ' + ' '.join(cmd))
    rc = subprocess.run(cmd, check=False).returncode
    fails = []
    if rc != 0:
        fails.append('run-demo exited with %d' % rc)
    with open(os.path.join(state, 'console.log'), 'rb') as f:
        console = f.read().decode('utf-8', 'replace')
    if 'Unstable clock detected' in console:
        fails.append('the guest switched its trace clock after boot (ring buffer reset)')
    m = re.findall(r'STACKMAP-DEMO: map: .*?successes: *(\d+)', console)
    if not m:
        fails.append('the guest did not print its map counters before the crash')
    guest_successes = int(m[-1]) if m else 0
    out = subprocess.run([a.host_agent, 'report', 'boots', '--json', '--state-dir', state,
                          '--domain-name', DOMAIN], stdout=subprocess.PIPE, text=True,
                         check=False)
    boots = json.loads(out.stdout) if out.returncode == 0 else []
    if len(boots) != 1:
        fails.append('report boots: %d boots, want 1 (rc %d)' % (len(boots), out.returncode))
    else:
        b = boots[0]
        log('boot: %s' % json.dumps(b))
        log('guest map successes before the crash: %d; host: map successes %d, stack_id'
            ' events stored %d, events %d, LOST %d' % (
                guest_successes, b['map_successes'], b['stack_id_events'], b['events'],
                b['lost_events']))
        if b['ended'] != 'crashed':
            fails.append('the boot ended %r, not crashed' % b['ended'])
        for k in ('lost_frames', 'lost_events', 'unread_events', 'unseen_stack_ids',
                  'malformed'):
            if b[k] != 0:
                fails.append('%s %d' % (k, b[k]))
        if b['map_epoch'] != 0:
            fails.append('map epoch %d: the demo never resets its map' % b['map_epoch'])
        if guest_successes <= 0 or b['stack_id_events'] < guest_successes:
            fails.append('%d stack_id events stored, the guest handed out %d stack ids'
                         ' before its crash' % (b['stack_id_events'], guest_successes))
    fails += postmortem_checks(a, state, console)
    for f in fails[1:]:
        log('also: ' + f)
    check(not fails, fails[0] if fails else '')
    log('the demo store holds every event from boot, and the crash report of its panic')


KLINE = sm.KLINE


def postmortem_checks(a, state, console):
    """The post-mortem of the demo's crash (module docstring); returns failures."""
    fails = []
    out = subprocess.run([a.host_agent, 'report', 'postmortem', '--json', '--state-dir',
                          state, '--domain-name', DOMAIN], stdout=subprocess.PIPE,
                         text=True, check=False)
    if out.returncode != 0:
        return ['report postmortem exited %d' % out.returncode]
    pm = json.loads(out.stdout)
    p = pm.get('postmortem')
    if not p:
        return ['no post-mortem stored for the crashed boot']
    log('post-mortem: %s' % json.dumps(p))
    with open(os.path.join(state, 'host-agent.log'), errors='replace') as f:
        for line in f:
            if 'post-mortem of boot' in line:
                log('host-agent: ' + line.strip())
    if p['status'] != 'recovered':
        fails.append('post-mortem status %s: %s' % (p['status'], p['message']))
    if pm['panic'] != 'Kernel panic - not syncing: sysrq triggered crash':
        fails.append('panic message %r' % pm['panic'])
    lines = [l.rstrip('\r') for l in console.split('\n')]
    start = [i for i, l in enumerate(lines) if KLINE.match(l) and
             l.endswith('] sysrq: Trigger a crash')]
    if not start:
        return fails + ['no sysrq line on the console']
    want = sm.console_crash_report(console)
    got = pm['oops_text'].rstrip('\n').split('\n')
    log('crash report: %d lines on the console, %d stored; backtrace lines stored: %d'
        % (len(want), len(got), len([l for l in got if re.search(r'\] +\w+\+0x', l)])))
    if got != want:
        diff = [(i, w, g) for i, (w, g) in enumerate(zip(want, got)) if w != g][:3]
        fails.append('the stored crash report is not the console\'s: %d vs %d lines,'
                     ' first differences %s' % (len(got), len(want), diff))
    if not any('Call Trace:' in l for l in got):
        fails.append('no "Call Trace:" in the stored crash report')
    every = subprocess.run([a.host_agent, 'report', 'postmortem', '--json', '--limit',
                            '1000000', '--state-dir', state, '--domain-name', DOMAIN],
                           stdout=subprocess.PIPE, text=True, check=False)
    recs = json.loads(every.stdout)['before'] if every.returncode == 0 else []
    if not recs or recs[0]['seq'] != 0 or not recs[0]['text'].startswith('Linux version'):
        fails.append('the recovered log does not start at the first record: %s'
                     % (recs[:1],))
    stored = set()
    for r in recs:
        for t in r['text'].split('\n'):
            stored.add('[%5d.%06d] %s' % (r['ts_nsec'] // 10**9,
                                          r['ts_nsec'] % 10**9 // 1000, t))
    shown = [l for l in lines[:start[-1]] if KLINE.match(l)]
    missing = [l for l in shown if l not in stored]
    log('kernel log: %d records before the crash report recovered; %d of the console\'s'
        ' %d kernel lines before it are in them' % (len(recs), len(shown) - len(missing),
                                                      len(shown)))
    if missing:
        fails.append('%d kernel lines of the console are not in the recovered log, e.g. %s'
                     % (len(missing), missing[:3]))
    if os.path.exists(os.path.join(state, DOMAIN + '.core')):
        fails.append('the dump was not deleted')
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--host-agent', required=True)
    ap.add_argument('--guestd', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--seconds', type=int, default=8)
    return sm.main('demo', t_demo, ap.parse_args())


if __name__ == '__main__':
    sys.exit(main())
