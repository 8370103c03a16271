#!/usr/bin/env python3
"""Compare a boot exported to trace.dat, as Debian's `trace-cmd report` reads it,
with `host-agent report events --json` of the same boot, event by event.

Usage: tracecmp.py --host-agent PATH --state-dir DIR --domain-name NAME
                   --dat FILE [--boot B] [--trace-cmd PATH] [--expect-dropped]

trace-cmd is run as a user runs it (`trace-cmd report -l -t`, plugins loaded): its
stderr must be empty (no warning), and every record is taken from its text output:
  * a traced event: CPU, pid, latency flags, timestamp (ns), event name and the
    printed fields; host-agent's text for the same event must be the end of
    trace-cmd's (trace-cmd's kmem plugin prefixes the call site in parentheses),
    argument by argument of the event's print fmt (from the file: trace-cmd dump
    --events). Two renderers print the same values, and only these conversions
    legitimately differ, because host-agent prints what the guest kernel printed and
    libtraceevent prints its own way (host-agent/printfmt.h):
      %pS %pF  kernel "name+0xoff/0xsize [module]", libtraceevent "name+0xoff" (it
               has no symbol sizes and prints no module);
      %ps %pf  kernel "name [module]", libtraceevent "name";
      %p       kernel (nohash-ptr, as %px) 16 hex digits, libtraceevent glibc's %p
               ("0x" and the digits, "(nil)" for 0);
    and a %pS/%ps name may be another name at the same address (same_frame()).
    Every other argument, and all the text between them, must be equal;
  * a kernel_stack record ("<stack trace >" and its "=> func (addr)" lines): it is
    given to its event by the kernel's own rule (host-agent/pair.h: the most recent
    event of the same CPU still waiting, with the same pid and flags; the events
    nested above it finish without one, and a new event finishes the waiting events
    of its own or a deeper context without one), and its frames must be, address for address
    and function for function, the frames host-agent resolved for that event;
  * a stack_id record: an id host-agent could not resolve either; or, with
    --plugin-map (a file exported with --stack-ids, as trace-cmd record in the
    guest has it, read through plugin_stackmap), a stack_id record with the
    plugin's "=> func (addr)" lines (compared like kernel_stack's) or its "from
    another epoch" for an id host-agent resolved in an epoch other than --map-epoch;
  * "CPU:N [COUNT EVENTS DROPPED]": events lost before the next record of CPU N
    (the waiting events finish as "lost", as host-agent's pairing does).
Events are compared per CPU as sorted lists (a coarse trace clock gives equal
timestamps, which neither side orders the same way). Exits 1 on the first
difference, printing both sides.
"""
import argparse
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict

REC = re.compile(r'^\s*(.*)-(\d+)\s+(\d+)(\S+)\s+(\d+)\.(\d{9}): ([^:\s]+):\s?(.*)$')
FRAME = re.compile(r'^=> (\S+)(?: \(([0-9a-f]+)\))?$')  # no "(addr)": unresolved
DROPPED = re.compile(r'^CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]$')


class Fail(Exception):
    pass


def parse_report(text):
    """Records per CPU in file order: dicts with kind event|stack|stack_id|dropped."""
    per_cpu = defaultdict(list)
    cur = None
    for line in text.split('\n'):
        if not line or line.startswith('cpus='):
            cur = None
            continue
        m = FRAME.match(line)
        if m:
            if cur is None or cur['kind'] not in ('stack', 'stack_id'):
                raise Fail('a frame line outside a stack record: %r' % line)
            if m.group(2):
                cur['frames'].append((m.group(1), int(m.group(2), 16)))
            else:
                cur['frames'].append((None, int(m.group(1), 16)))
            continue
        m = DROPPED.match(line)
        if m:
            per_cpu[int(m.group(1))].append(
                {'kind': 'dropped', 'count': int(m.group(2)) if m.group(2) else -1})
            cur = None
            continue
        m = REC.match(line)
        if not m:
            raise Fail('unparsed trace-cmd line: %r' % line)
        comm, pid, cpu, flags, s, ns, name, info = m.groups()
        r = {'pid': int(pid), 'cpu': int(cpu), 'flags': flags,
             'ts': int(s) * 1000000000 + int(ns), 'name': name, 'info': info}
        if name == 'kernel_stack':
            if info.strip() != '<stack trace >':
                raise Fail('kernel_stack not printed as a stack trace: %r' % line)
            r['kind'] = 'stack'
            r['frames'] = []
        elif name == 'stack_id':
            r['kind'] = 'stack_id'      # frames when plugin_stackmap resolved it
            r['frames'] = []
        else:
            r['kind'] = 'event'
        per_cpu[r['cpu']].append(r)
        cur = r
    return per_cpu


def context_of(flags):
    """The context an event was traced in (pair.h: 0 task, 1 softirq, 2 hardirq, 3
    NMI), from the latency flags as libtraceevent prints them: the third character is
    'h' (hardirq), 'H' (hardirq over softirq) or 's' (softirq); 'z' and 'Z' (NMI) where
    the library prints NMIs."""
    c = flags[2:3]
    return 3 if c in ('z', 'Z') else 2 if c in ('h', 'H') else 1 if c == 's' else 0


def pair(records):
    """The kernel's rule (pair.h): per CPU, events waiting for their stack. Only a
    nested context can come between an event and its stack, so a new event first
    finishes stackless every waiting event of its own context or a deeper one."""
    waiting, done = [], []
    for r in records:
        if r['kind'] == 'event':
            ctx = context_of(r['flags'])
            keep = 0
            while keep < len(waiting) and context_of(waiting[keep]['flags']) < ctx:
                keep += 1
            done.extend(waiting[keep:])
            del waiting[keep:]
            r['stack'] = ('none',)
            waiting.append(r)
            if len(waiting) > 8:            # HA_PAIR_DEPTH
                done.append(waiting.pop(0))
        elif r['kind'] == 'dropped':
            for w in waiting:
                w['stack'] = ('lost',)
            done.extend(waiting)
            waiting = []
        else:
            for i in range(len(waiting) - 1, -1, -1):
                w = waiting[i]
                if w['pid'] == r['pid'] and w['flags'] == r['flags']:
                    if r['kind'] == 'stack' or r['frames']:
                        w['stack'] = ('frames', tuple(r['frames']))
                    elif 'from another epoch' in r['info']:
                        w['stack'] = ('other-epoch',)
                    else:
                        w['stack'] = ('unresolved',)
                    done.extend(waiting[i:])
                    del waiting[i:]
                    break
    done.extend(waiting)
    return done


def host_stack(st, map_epoch=None):
    k = st['kind']
    if k == 'stack_id' and map_epoch is not None and st['epoch'] != map_epoch:
        return ('other-epoch',)
    if k in ('stack_id', 'full'):
        fr = []
        for f in st['frames']:
            sym = f['sym'].split('+')[0]
            fr.append((None if sym.startswith('0x') else sym, int(f['ip'], 16)))
        return ('frames', tuple(fr))
    if k == 'unresolved':
        return ('unresolved',)
    return (k,)


def same_frame(tcf, haf, syms):
    (n, a), (s, c) = tcf, haf
    if a != c:
        return False
    if s == n:
        return True
    # Two names at one address (__do_sys_vfork and __x64_sys_vfork): libtraceevent
    # and host-agent may each pick another; both are the function at that address.
    if n is not None and s is not None:
        return bool(syms['addr'].get(n, set()) & syms['addr'].get(s, set()))
    # libtraceevent resolves no address past the start of the highest symbol of the
    # file's kallsyms (it bounds a function by the next one); host-agent does, up to
    # HA_SYM_MAX_SIZE. Any other address unresolved on one side must be on the other.
    return n is None and s == syms['last']


def same_stack(tc, ha, syms):
    if tc[0] != ha[0]:
        return False
    if tc[0] != 'frames':
        return True
    if len(tc[1]) != len(ha[1]):
        return False
    return all(same_frame(t, h, syms) for t, h in zip(tc[1], ha[1]))


CONV = re.compile(r'%(?:%|[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|Z|t)*'
                  r'([diouxXcs]|p(?:[SsFf]R?|[A-Za-z0-9]*)))')


def fmt_pattern(fmt):
    """A print fmt's format string (C escapes resolved) as a regex with one group per
    conversion, and each conversion's kind: 'sym' (%pS %pF), 'name' (%ps %pf), 'ptr'
    (%p) or 'v' (any other: must be equal)."""
    pat, kinds, i = [], [], 0
    for m in CONV.finditer(fmt):
        pat.append(re.escape(fmt[i:m.start()]))
        i = m.end()
        c = m.group(1)
        if c is None:
            pat.append('%')
            continue
        pat.append('(.*?)')
        kinds.append('sym' if c[:2] in ('pS', 'pF') else 'name' if c[:2] in ('ps', 'pf')
                     else 'ptr' if c == 'p' else 'v')
    pat.append(re.escape(fmt[i:]))
    return ''.join(pat), kinds


def file_formats(trace_cmd, dat):
    """{event name: (regex, kinds)} from the file's formats (trace-cmd dump --events)."""
    r = subprocess.run([trace_cmd, 'dump', '-i', dat, '--events'], capture_output=True,
                       text=True)
    out, name = {}, None
    for line in r.stdout.split('\n'):
        if line.startswith('name: '):
            name = line[6:].strip()
        elif line.startswith('print fmt: "') and name:
            lit = re.match(r'"((?:[^"\\]|\\.)*)"', line[11:])
            if lit:
                fmt = re.sub(r'\\(.)', lambda m: {'n': '\n', 't': '\t'}.get(m.group(1),
                                                                            m.group(1)),
                             lit.group(1))
                out[name] = fmt_pattern(fmt)
            name = None
    return out


def same_sym(tc, ha, syms):
    """Two printed symbol names (with "+0xoff" or not) for one address."""
    if tc == ha:
        return True
    a, _, ao = tc.partition('+')
    b, _, bo = ha.partition('+')
    if ao == bo and syms['addr'].get(a, set()) & syms['addr'].get(b, set()):
        return True
    # as same_frame(): past the highest symbol libtraceevent prints the address
    return b == syms['last'] and re.fullmatch(r'0x[0-9a-f]+', tc) is not None and \
        int(tc, 16) in {x + int(bo or '0', 16) for x in syms['addr'].get(b, ())}


def same_arg(kind, tc, ha, syms):
    if tc == ha:
        return True
    if kind == 'ptr':
        m = re.fullmatch(r'[0-9a-f]{16}', ha)
        return bool(m) and (tc == '(nil)' if int(ha, 16) == 0 else tc == '0x%x' % int(ha, 16))
    if kind == 'sym':
        # no "/0xsize" where host-agent has no size (the highest symbol)
        m = re.fullmatch(r'(\S+\+0x[0-9a-f]+)(?:/0x[0-9a-f]+)?(?: \[\S+\])?', ha)
        return bool(m) and same_sym(tc, m.group(1), syms)
    if kind == 'name':
        m = re.fullmatch(r'(\S+)(?: \[\S+\])?', ha)
        return bool(m) and same_sym(tc, m.group(1), syms)
    return False


def same_info(name, tc, ha, fmts, syms):
    """trace-cmd's text @tc ends with host-agent's @ha for event @name, argument by
    argument (the module docstring)."""
    if tc.endswith(ha):
        return True
    f = fmts.get(name)
    if not f:
        return False
    pat, kinds = f
    mh = re.fullmatch(pat, ha, re.S)
    mt = re.fullmatch('.*?' + pat, tc, re.S)
    if not mh or not mt:
        return False
    return all(same_arg(k, mt.group(i + 1), mh.group(i + 1), syms)
               for i, k in enumerate(kinds))


def file_symbols(trace_cmd, dat):
    """The file's kallsyms (trace-cmd dump): name -> addresses, and the highest name."""
    r = subprocess.run([trace_cmd, 'dump', '-i', dat, '--kallsyms'], capture_output=True,
                       text=True)
    best, addr = (-1, None), {}
    for line in r.stdout.split('\n'):
        f = line.split()
        if len(f) >= 3 and re.fullmatch(r'[0-9a-f]{8,16}', f[0]):
            best = max(best, (int(f[0], 16), f[2]))
            addr.setdefault(f[2], set()).add(int(f[0], 16))
    return {'addr': addr, 'last': best[1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--host-agent', required=True)
    ap.add_argument('--state-dir', required=True)
    ap.add_argument('--domain-name', required=True)
    ap.add_argument('--dat', required=True)
    ap.add_argument('--boot')
    ap.add_argument('--trace-cmd', default='trace-cmd')
    ap.add_argument('--expect-dropped', action='store_true',
                    help='fail unless trace-cmd shows lost events')
    ap.add_argument('--plugin-map', help='a stack_map_bin for plugin_stackmap (the file'
                    ' keeps its stack_id events: export --stack-ids)')
    ap.add_argument('--map-epoch', type=int, help='the epoch of --plugin-map: its ids'
                    ' must resolve to host-agent\'s frames, those of other epochs must be'
                    ' said to be from another epoch')
    a = ap.parse_args()
    try:
        cmd = [a.trace_cmd, 'report', '-l', '-t', '-i', a.dat]
        if a.plugin_map:
            cmd[2:2] = ['-O', 'stackmap:map=' + a.plugin_map]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            raise Fail('trace-cmd report: rc %d, stderr: %s' % (r.returncode, r.stderr[:2000]))
        per_cpu = parse_report(r.stdout)
        syms = file_symbols(a.trace_cmd, a.dat)
        fmts = file_formats(a.trace_cmd, a.dat)
        cmd = [a.host_agent, 'report', 'events', '-n', '100000000', '--json',
               '--state-dir', a.state_dir, '--domain-name', a.domain_name]
        if a.boot:
            cmd += ['--boot', a.boot]
        h = subprocess.run(cmd, capture_output=True, text=True)
        if h.returncode != 0:
            raise Fail('report events: %s' % h.stderr)
        host = json.loads(h.stdout)['events']
        by_cpu = defaultdict(list)
        for e in host:
            by_cpu[e['cpu']].append(e)
        kinds, dropped, nev = Counter(), Counter(), 0
        for cpu in sorted(set(per_cpu) | set(by_cpu)):
            recs = per_cpu.get(cpu, [])
            for x in recs:
                if x['kind'] == 'dropped':
                    dropped[cpu] += max(x['count'], 0) if x['count'] >= 0 else 0
                    dropped['marks'] += 1
            tc = sorted(pair(recs), key=lambda x: (x['ts'], x['pid'], x['name'], x['info']))
            ha = []
            for e in by_cpu.get(cpu, []):
                sysname, _, info = e['event'].partition(': ')
                ha.append({'ts': e['ts'], 'pid': e['pid'], 'name': sysname.split('/')[-1],
                           'info': info, 'stack': host_stack(e['stack'], a.map_epoch)})
            ha.sort(key=lambda x: (x['ts'], x['pid'], x['name']))
            if len(tc) != len(ha):
                raise Fail('CPU %d: trace-cmd shows %d events, host-agent %d'
                           % (cpu, len(tc), len(ha)))
            # equal timestamps: match within each (ts, pid, name) group by text
            i = 0
            while i < len(tc):
                j = i
                while j < len(tc) and (tc[j]['ts'], tc[j]['pid'], tc[j]['name']) == \
                        (tc[i]['ts'], tc[i]['pid'], tc[i]['name']):
                    j += 1
                grp_h = ha[i:j]
                for t in tc[i:j]:
                    m = next((k for k, x in enumerate(grp_h)
                              if (x['ts'], x['pid'], x['name']) == (t['ts'], t['pid'], t['name'])
                              and same_info(t['name'], t['info'], x['info'], fmts, syms)
                              and same_stack(t['stack'], x['stack'], syms)), None)
                    if m is None:
                        raise Fail('CPU %d: trace-cmd event without its twin in host-agent:\n'
                                   '  trace-cmd: %s\n  host-agent candidates: %s'
                                   % (cpu, t, grp_h[:3]))
                    kinds[t['stack'][0]] += 1
                    grp_h.pop(m)
                    nev += 1
                i = j
        if a.expect_dropped and not dropped['marks']:
            raise Fail('no [EVENTS DROPPED] line although the boot lost events')
        print('tracecmp: %d events equal on %d CPUs; stacks: %s; dropped marks: %d (%d events'
              ' counted)' % (nev, len(set(per_cpu) | set(by_cpu)), dict(kinds),
                             dropped['marks'],
                             sum(v for k, v in dropped.items() if k != 'marks')))
        print('tracecmp-json: ' + json.dumps({
            'events': nev, 'cpus': len(set(per_cpu) | set(by_cpu)), 'stacks': dict(kinds),
            'dropped_marks': dropped['marks'],
            'dropped_counted': sum(v for k, v in dropped.items() if k != 'marks')}))
        return 0
    except Fail as e:
        print('tracecmp FAIL: %s' % e)
        return 1


if __name__ == '__main__':
    sys.exit(main())
