#!/usr/bin/env python3
"""End-to-end text check: `host-agent report events` against the guest kernel's own
trace text for the same events (suite e2e).

Usage: e2t.py --host-agent PATH --guestd PATH [--workdir DIR] [--keep]

The patched guest kernel under QEMU (the e2e harness tests/lib/stackmap_e2e.py: StreamRun,
guest-kernel/launch, build-kernel's cache) traces sched, timer, irq, signal, workqueue
and kmem events with stacks (trace options stacktrace + stackmap), stops tracing and
keeps its own `trace` text and `stack_map` (guest side: text.sh). Only then does
stackmap-guestd stream the very same ring-buffer contents to host-agent, so the host
stores exactly the events the kernel printed. The check, per CPU in ring-buffer order,
for every event:

  * the event line: pid, the timestamp (the kernel prints microseconds, rounded from
    the trace clock's nanoseconds), and "name: fields" exactly as the kernel printed
    them (the host prints "system/name: fields");
  * its stack: the kernel's "<stack_id N>" line (paired with its event the way
    ftrace writes it: the next stack line on that CPU with the same pid and the same
    flags column) and stack_map's frames for N, or a full "<stack trace>"; every
    frame's text (%pS: name+0xoff/0xsize [module]) equal to the host's frame.

It runs the report twice: with --vmlinux (the boot's own vmlinux: its DWARF gives the
enum names the format files leave unresolved) every line and every frame must be
equal; without it, a line may differ only where the host says a value is raw, and
only in the events whose print fmt still holds such a name. Both the text and the
--json output are checked. Not compared, with the reason: the task name (the kernel's
comm cache; the host prints pid only) and the flags column (irqs-off, need-resched,
hardirq/softirq, preempt depth), which the host does not print. Allowed to differ,
and counted: a value the print fmt computes from a variable of the guest (UNKNOWN_OK),
which the host prints as "(unknown)".

The same boot exported (`host-agent export trace.dat --vmlinux`) and read by Debian's
trace-cmd (`trace-cmd report -N`: its plugins print sched_switch, hrtimer and kmem
events in their own words, not the kernel's): each of its event lines, per CPU in ring-buffer order,
must be the kernel's line (pid, the microsecond, the name), and its fields the
kernel's argument by argument of the print fmt, with only the renderings that
libtraceevent prints its own way (tests/e2e-export/tracecmp.py: %pS/%ps without size
and module, %p with glibc's 0x); an UNKNOWN_OK event may differ (libtraceevent
evaluates the guest variable as 0), and is counted.

Pointers (%p). By default (trace option hash-ptr) the kernel prints a hash keyed by a
secret of the boot, which no host can reproduce; with nohash-ptr it prints them as %px,
and so does the host. But in this 6.1 kernel nohash-ptr also blanks the first %s of
every event in the trace file (trace_event_format() returns iter->fmt with the %px
rewrite, and trace_check_vprintf() then uses iter->fmt as its scratch copy of the very
format it walks, so the first %s is printed with an empty format): prev_comm=,
gfp_flags=, mode=, [action=]. So the guest reads its trace twice, and each event's
expected text is the hash-ptr line with its pointers, in order, taken from the
nohash-ptr line (the two reads show the same records; the check fails if their
pointer counts differ). Events this kernel lacks are printed (TEXT-MISSING). All of it
under TCG, for one boot.
"""

import argparse
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time

import stackmap_e2e as sm   # the e2e harness (StreamRun: one guest boot streaming to host-agent)
import tracecmp   # tests/e2e-export: same_info(), print fmt arguments, renderer differences
from stackmap_e2e import check, log

HERE = os.path.dirname(os.path.abspath(__file__))

# One line of the kernel's trace file (6.1, default options: irq-info, no tgid).
TRACE_LINE = re.compile(r'^(?P<comm>.*)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<flags>\S+)\s+'
                        r'(?P<ts>\d+)\.(?P<us>\d{6}): (?P<rest>.*)$')
STACK_ID = re.compile(r'^<stack_id (\d+)>$')
MAP_HEAD = re.compile(r'^stack_id (\d+) \[ref \d+, depth \d+\]$')
MAP_FRAME = re.compile(r'^  \[\d+\] (.+)$')     # %pS, " [module]" included
HOST_HEAD = re.compile(r'^(\d+)\.(\d{9}) cpu(\d+) pid (-?\d+)  (.*)$')


def build(args):
    kout = sm.build_kernel()
    initrd = sm.build_initramfs(kout, os.path.join(args.workdir, 'initrd.cpio.gz'), [
        (args.guestd, '/stackmap-guestd'), (os.path.join(HERE, 'text.sh'), '/scenarios/text.sh')])
    return kout, initrd


def parse_stack_map(text):
    """{stack_id: [frame text, ...]} from the stack_map file."""
    out, cur = {}, None
    for l in text.split('\n'):
        m = MAP_HEAD.match(l)
        if m:
            cur = out.setdefault(int(m.group(1)), [])
            continue
        m = MAP_FRAME.match(l)
        if m and cur is not None:
            cur.append(m.group(1))
    return out


# Events whose print fmt computes a value from a variable of the guest kernel, which
# the host cannot read: kmem:mm_page_alloc/mm_page_free print page= from vmemmap_base
# (randomised with KASLR). The host prints "(unknown)" there (printfmt.h).
UNKNOWN_OK = {'mm_page_alloc', 'mm_page_free'}

PTR_HASHED = re.compile(r'\b[0-9a-f]{16}\b|\(____ptrval____\)')
PTR_REAL = re.compile(r'\b[0-9a-f]{16}\b')


def with_pointers(hashed, plain):
    """The hash-ptr line @hashed with its pointers taken, in order, from the
    nohash-ptr line @plain of the same record, or None when they do not align."""
    real = PTR_REAL.findall(plain)
    if len(real) != len(PTR_HASHED.findall(hashed)):
        return None
    it = iter(real)
    return PTR_HASHED.sub(lambda m: next(it), hashed)


def merge_reads(kern_h, kern_n):
    """The expected events: each hash-ptr event with the nohash-ptr pointers."""
    bad = []
    for cpu, evs in kern_h.items():
        other = kern_n.get(cpu, [])
        if len(other) != len(evs):
            bad.append('cpu%d: %d events in one read, %d in the other'
                       % (cpu, len(evs), len(other)))
            continue
        for a, b in zip(evs, other):
            t = with_pointers(a['text'], b['text'])
            if a['us'] != b['us'] or a['pid'] != b['pid'] or t is None:
                bad.append('cpu%d %d us: reads differ: %s | %s' % (cpu, a['us'], a['text'],
                                                                  b['text']))
                continue
            a['text'] = t
    return bad


def kernel_events(text, stack_map):
    """The kernel's events per CPU, in ring-buffer order: dicts with pid, us (the
    printed timestamp in us), flags, text ("name: fields") and frames (None: no
    stack line; else the frames' texts)."""
    per_cpu, waiting, bad = {}, {}, []
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        l = lines[i]
        i += 1
        if not l or l.startswith('#'):
            continue
        m = TRACE_LINE.match(l)
        if not m:
            bad.append(l)
            continue
        cpu, pid, flags = int(m.group('cpu')), int(m.group('pid')), m.group('flags')
        rest = m.group('rest')
        sm = STACK_ID.match(rest)
        if sm or rest == '<stack trace>':
            if sm:
                sid = int(sm.group(1))
                frames = stack_map.get(sid)
                if frames is None:
                    frames = ['<stack_id %d not in stack_map>' % sid]
            else:
                frames = []
                while i < len(lines) and lines[i].startswith(' => '):
                    frames.append(lines[i][4:])
                    i += 1
            # the most recent waiting event of this CPU with the same pid and flags
            # column (pair.h: ftrace reserves the stack right after its event)
            q = waiting.setdefault(cpu, [])
            for j in range(len(q) - 1, -1, -1):
                if q[j]['pid'] == pid and q[j]['flags'] == flags:
                    q[j]['frames'] = frames
                    del q[j:]
                    break
            continue
        ev = {'pid': pid, 'us': int(m.group('ts')) * 1000000 + int(m.group('us')),
              'flags': flags, 'text': rest, 'frames': None}
        per_cpu.setdefault(cpu, []).append(ev)
        waiting.setdefault(cpu, []).append(ev)
    return per_cpu, bad


def host_events_json(run, extra):
    evs = run.report('events', '-n', '100000000', *extra)['events']
    per_cpu = {}
    for e in evs:
        st = e['stack']
        frames = [f['sym'] for f in st['frames']] if st['kind'] in ('stack_id', 'full') \
            else None
        per_cpu.setdefault(e['cpu'], []).append(
            {'pid': e['pid'], 'ns': e['ts'], 'text': e['event'], 'frames': frames,
             'kind': st['kind']})
    return per_cpu, len(evs)


def host_events_text(run, extra):
    out = run.report_text('events', '-n', '100000000', *extra)
    per_cpu, cur, n = {}, None, 0
    for l in out.split('\n')[1:]:
        m = HOST_HEAD.match(l)
        if m:
            cur = {'pid': int(m.group(4)), 'ns': int(m.group(1)) * 10**9 + int(m.group(2)),
                   'text': m.group(5), 'frames': None, 'label': None}
            per_cpu.setdefault(int(m.group(3)), []).append(cur)
            n += 1
        elif cur is not None and l.startswith('    ') and not l.startswith('     '):
            cur['label'] = l.strip()
            if cur['label'].startswith('stack_id') or cur['label'].startswith('full stack'):
                cur['frames'] = []
        elif cur is not None and l.startswith('      ') and not l.startswith('       '):
            cur['frames'].append(l[6:])
    return per_cpu, n


def strip_system(text):
    """"sched/sched_switch: ..." -> "sched_switch: ..." (the kernel prints the name)."""
    head, sep, tail = text.partition(': ')
    return head.split('/', 1)[-1] + sep + tail


def compare(kern, host, raw_ok):
    """Mismatches between the kernel's and the host's events, per CPU."""
    out = []
    for cpu in sorted(set(kern) | set(host)):
        k, h = kern.get(cpu, []), host.get(cpu, [])
        if len(k) != len(h):
            out.append(('count', 'cpu%d: kernel %d events, host %d' % (cpu, len(k), len(h))))
        for a, b in zip(k, h):
            ht = strip_system(b['text'])
            us = (b['ns'] + 500) // 1000
            if a['pid'] != b['pid'] or a['us'] != us:
                out.append(('line', 'cpu%d: kernel pid %d at %d us, host pid %d at %d us (%s)'
                            % (cpu, a['pid'], a['us'], b['pid'], us, a['text'][:60])))
                continue
            if a['text'] != ht:
                if '(unknown)' in ht and re.fullmatch(
                        re.escape(ht).replace(re.escape('(unknown)'), r'\S+'), a['text']):
                    kind = 'unknown'
                else:
                    kind = 'raw' if raw_ok and '(raw)' in ht else 'text'
                out.append((kind, 'cpu%d %d us:\n      kernel %s\n      host   %s'
                            % (cpu, a['us'], a['text'], ht)))
            if a['frames'] != b['frames']:
                out.append(('stack', 'cpu%d %d us %s:\n      kernel %s\n      host   %s'
                            % (cpu, a['us'], a['text'][:50], a['frames'], b['frames'])))
    return out


def unresolved_events(formats_tgz):
    """The events whose print fmt keeps a name the host must resolve: names in a
    __print_symbolic()/__print_flags() table that are not numbers."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(formats_tgz)) as t:
        for m in t.getmembers():
            if not m.isfile() or not m.name.endswith('/format'):
                continue
            text = t.extractfile(m).read().decode(errors='replace')
            pf = [l for l in text.split('\n') if l.startswith('print fmt:')]
            names = set(re.findall(r'\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*"', pf[0] if pf else ''))
            if names:
                name = m.name[2:] if m.name.startswith('./') else m.name
                out[name[:-len('/format')]] = sorted(names)
    return out


TC_LINE = re.compile(r'^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}): ([^:\s]+):\s?(.*)$')


def check_tracedat(run, args, kern, kout):
    """The boot exported with --vmlinux, as trace-cmd prints it, against the kernel's
    text (module docstring). Returns the mismatches."""
    dat = os.path.join(run.dir, 'boot.dat')
    r = subprocess.run([args.host_agent, 'export', 'trace.dat', '-o', dat, '--vmlinux',
                        os.path.join(kout, 'vmlinux'), '--state-dir', run.state,
                        '--domain-name', sm.DOMAIN], capture_output=True, text=True)
    check(r.returncode == 0, 'export trace.dat: %s' % r.stderr)
    check('--vmlinux not used' not in r.stderr, 'export ignored --vmlinux: %s' % r.stderr)
    # -N: without trace-cmd's plugins, which print sched, hrtimer, kmem ... events in
    # their own words rather than the kernel's print fmt
    r = subprocess.run([args.trace_cmd, 'report', '-N', '-t', '-i', dat],
                       capture_output=True, text=True)
    check(r.returncode == 0 and not r.stderr.strip(),
          'trace-cmd report: rc %d, stderr %s' % (r.returncode, r.stderr[:2000]))
    syms = tracecmp.file_symbols(args.trace_cmd, dat)
    fmts = tracecmp.file_formats(args.trace_cmd, dat)
    per_cpu = {}
    for l in r.stdout.split('\n'):
        m = TC_LINE.match(l)
        if not m or m.group(6) in ('kernel_stack', 'stack_id'):
            continue
        per_cpu.setdefault(int(m.group(3)), []).append(
            {'pid': int(m.group(2)), 'ns': int(m.group(4)) * 10**9 + int(m.group(5)),
             'name': m.group(6), 'info': m.group(7)})
    out = []
    for cpu in sorted(set(kern) | set(per_cpu)):
        k, t = kern.get(cpu, []), per_cpu.get(cpu, [])
        if len(k) != len(t):
            out.append(('count', 'cpu%d: kernel %d events, trace-cmd %d' % (cpu, len(k), len(t))))
        for a, b in zip(k, t):
            name, _, info = a['text'].partition(': ')
            us = (b['ns'] + 500) // 1000
            if (a['pid'], a['us'], name) != (b['pid'], us, b['name']):
                out.append(('line', 'cpu%d: kernel %d %d us %s, trace-cmd %d %d us %s'
                            % (cpu, a['pid'], a['us'], name, b['pid'], us, b['name'])))
                continue
            if not tracecmp.same_info(name, b['info'], info, fmts, syms):
                kind = 'unknown' if name in UNKNOWN_OK else 'text'
                out.append((kind, 'cpu%d %d us:\n      kernel    %s\n      trace-cmd %s: %s'
                            % (cpu, a['us'], a['text'], b['name'], b['info'].strip())))
    return out


def summarize(mism, what):
    kinds = {}
    for k, _ in mism:
        kinds[k] = kinds.get(k, 0) + 1
    log('%s: %s' % (what, json.dumps(kinds) if kinds else 'every line and frame equal'))
    shown = {}
    for k, m in mism:
        if shown.get(k, 0) < 8:
            log('  %s %s' % (k.upper(), m))
            shown[k] = shown.get(k, 0) + 1
    return kinds


def t_text(args):
    kout, initrd = build(args)
    run = sm.StreamRun(args, 'text', ['stackmap.e2t_rounds=%d' % args.rounds],
                       scenario='text', launch_extra=['--mem', '1024'])
    try:
        run.start_agent()
        proc = run.launch(initrd, kout)
        rc = proc.wait()
        run.stop_after_bye()
    except BaseException:
        run.abort()
        raise
    mk = run.markers()
    log('launch exit %d, guest time %.0f s' % (rc, time.time() - run.t0))
    check(rc == 0, 'launch exited %d (console %s)' % (rc, run.console))
    check('TEXT DONE' in mk, 'the guest scenario did not finish (console %s)' % run.console)
    check('KERNEL-WARNINGS' not in mk, 'kernel warnings in the guest')
    check('AGENT_EXIT 0' in mk, 'stackmap-guestd did not exit 0')
    for m in mk:
        if m.startswith('TEXT-EVENTS') or m.startswith('TEXT-MISSING') or \
                m.startswith('TEXT-DRAINED'):
            log(m)
    stats = run.file('stats.txt').decode()
    overrun = sum(int(x) for x in re.findall(r'^overrun: (\d+)', stats, re.M))
    left = sum(int(x) for x in re.findall(r'^entries: (\d+)', stats, re.M))
    check(overrun == 0, 'the ring buffer overran (%d): the trace text misses events' % overrun)
    check(left == 0, '%d events left unread in the guest' % left)
    text = gzip.decompress(run.file('trace.txt.gz')).decode(errors='replace')
    text_n = gzip.decompress(run.file('trace-nohash.txt.gz')).decode(errors='replace')
    smap = parse_stack_map(gzip.decompress(run.file('stack_map.txt.gz')).decode())
    kern, bad = kernel_events(text, smap)
    check(not bad, 'unparsed trace lines: %r' % bad[:5])
    kern_n, bad = kernel_events(text_n, smap)
    check(not bad, 'unparsed trace lines (nohash-ptr): %r' % bad[:5])
    blank = sum(1 for v in kern_n.values() for e in v if re.search(r'=[ \]]|=$', e['text']))
    bad = merge_reads(kern, kern_n)
    check(not bad, 'the two reads of the trace differ: %s' % bad[:5])
    log('nohash-ptr read: %d event lines with an empty value (6.1 blanks the first %%s)'
        % blank)
    nk = sum(len(v) for v in kern.values())
    names = {}
    for v in kern.values():
        for e in v:
            n = e['text'].split(':', 1)[0]
            names[n] = names.get(n, 0) + 1
    log('kernel: %d events (%d with a stack line), by type: %s'
        % (nk, sum(1 for v in kern.values() for e in v if e['frames'] is not None),
           json.dumps(dict(sorted(names.items())))))
    check(nk > 0, 'the kernel traced nothing')
    unres = unresolved_events(run.file('formats.tar.gz'))
    log('formats with names left unresolved in a __print_symbolic/__print_flags table'
        ' (%d): %s' % (len(unres), json.dumps(unres)))
    boots = run.report('boots')
    check(len(boots) == 1 and boots[0]['ended'] == 'clean', 'boots: %r' % boots)
    check(boots[0]['events'] == nk, 'report boots counts %d events, the kernel printed %d'
          % (boots[0]['events'], nk))

    vml = ['--vmlinux', os.path.join(kout, 'vmlinux')]
    failed = []
    for what, extra, raw_ok in (('json --vmlinux', vml, False), ('text --vmlinux', vml, False),
                                ('json', [], True), ('text', [], True)):
        if what.startswith('json'):
            host, nh = host_events_json(run, extra)
        else:
            host, nh = host_events_text(run, extra)
        check(nh == nk, '%s: host %d events, kernel %d' % (what, nh, nk))
        kinds = summarize(compare(kern, host, raw_ok), 'report events ' + what)
        if set(kinds) - {'raw', 'unknown'}:
            failed.append(what)
        unk = {strip_system(e['text']).split(':', 1)[0] for v in host.values() for e in v
               if '(unknown)' in e['text']}
        check(unk <= UNKNOWN_OK, '%s: "(unknown)" values in %s' % (what, sorted(unk - UNKNOWN_OK)))
        if raw_ok and kinds.get('raw'):
            # raw only where a format keeps an unresolved name
            rawev = {strip_system(e['text']).split(':', 1)[0] for v in host.values()
                     for e in v if '(raw)' in e['text']}
            known = {k.split('/', 1)[1] for k in unres}
            check(rawev <= known, 'raw values in events whose format names nothing'
                  ' unresolved: %s' % sorted(rawev - known))
            log('  raw values (no --vmlinux) in: %s' % sorted(rawev))
    kinds = summarize(check_tracedat(run, args, kern, kout), 'trace.dat by trace-cmd')
    if set(kinds) - {'unknown'}:
        failed.append('trace.dat')
    check(not failed, 'host text differs from the kernel\'s in: %s' % failed)
    log('%d events, every line and frame as the kernel printed them' % nk)
    if not args.keep:
        run.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--host-agent', required=True)
    ap.add_argument('--guestd', required=True)
    ap.add_argument('--workdir', default='e2t-work')
    ap.add_argument('--trace-cmd', default='trace-cmd')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    return sm.main('text', t_text, args)


if __name__ == '__main__':
    sys.exit(main())
