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
    for f in fails[1:]:
        log('also: ' + f)
    check(not fails, fails[0] if fails else '')
    log('the demo store holds every event from boot')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--host-agent', required=True)
    ap.add_argument('--guestd', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--seconds', type=int, default=8)
    return sm.main('demo', t_demo, ap.parse_args())


if __name__ == '__main__':
    sys.exit(main())
