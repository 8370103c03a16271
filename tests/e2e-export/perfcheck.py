#!/usr/bin/env python3
"""Check `report events --format perf-script` and `report flamegraph` of a boot
against host-agent's own counts.

Usage: perfcheck.py perf-script PERF_SCRIPT EVENTS_JSON FOLDED
       perfcheck.py flamegraph SVG FOLDED [DUMPED_DOM]

perf-script: one sample per event of EVENTS_JSON (same order, pid, CPU, timestamp,
frame addresses); its stacks collapsed as FlameGraph's stackcollapse-perf.pl does
(frames outermost first, "+0x..." offsets dropped, joined by ';') count exactly
what FOLDED (`report folded`) counts for the stacks with frames.
flamegraph: every frame of the SVG, placed under its parent by its sample range,
has the title "FUNCTION (N events, P%)" with N the events FOLDED has under that
path, and every path of FOLDED is drawn; with DUMPED_DOM (Chromium's --dump-dom
after the page's script ran) the script saw every frame (data-ready).
"""
import bisect
import json
import math
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter

HEAD = re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}): (\S+): ')
FRAME = re.compile(r'^\t\s*([0-9a-f]+) (.+) \((\S*)\)$')


def fail(msg):
    print('perfcheck FAIL: ' + msg)
    sys.exit(1)


def read_folded(path):
    c = Counter()
    for line in open(path):
        line = line.rstrip('\n')
        if line:
            stack, n = line.rsplit(' ', 1)
            c[stack] += int(n)
    return c


def perf_script(ps, evj, folded):
    blocks = [b for b in open(ps).read().split('\n\n') if b.strip()]
    evs = json.load(open(evj))['events']
    if len(blocks) != len(evs):
        fail('%d perf-script samples, %d events' % (len(blocks), len(evs)))
    got = Counter()
    for b, e in zip(blocks, evs):
        lines = b.split('\n')
        m = HEAD.match(lines[0])
        if not m:
            fail('sample line not in the perf script layout: %r' % lines[0])
        ts = int(m.group(4)) * 10**9 + int(m.group(5))
        if (int(m.group(2)), int(m.group(3)), ts) != (e['pid'], e['cpu'], e['ts']):
            fail('sample %r is not event %r' % (lines[0], e))
        if m.group(6) != e['event'].split(':')[0].replace('/', ':', 1):
            fail('event name %s, want %s' % (m.group(6), e['event']))
        frames = []
        for l in lines[1:]:
            f = FRAME.match(l)
            if not f:
                fail('frame line not in the perf script layout: %r' % l)
            frames.append((int(f.group(1), 16), re.sub(r'\+0x[0-9a-f]+$', '', f.group(2))))
        want = [int(f['ip'], 16) for f in e['stack']['frames']] \
            if e['stack']['kind'] in ('stack_id', 'full') else []
        if [a for a, _ in frames] != want:
            fail('frames of %r: %s, want %s' % (lines[0], frames, want))
        if frames:
            got[';'.join(n for _, n in reversed(frames))] += 1
    want = Counter({k: v for k, v in folded.items() if not k.startswith('[')
                    and 'UNRESOLVED' not in k})
    if got != want:
        diff = set(got.items()) ^ set(want.items())
        fail('collapsed perf-script differs from report folded: %s' % sorted(diff)[:5])
    print('perfcheck: %d samples, %d with frames in %d distinct stacks, collapsed equal to'
          ' report folded' % (len(blocks), sum(got.values()), len(got)))


def flamegraph(svg, folded, dom=None):
    ns = '{http://www.w3.org/2000/svg}'
    root = ET.parse(svg).getroot()
    frames, sizes = [], {}
    for g in root.iter(ns + 'g'):
        if g.get('class') != 'f':
            continue
        t = g.find(ns + 'title').text
        m = re.fullmatch(r'(.*) \((\d+) events, [0-9.]+%\)', t)
        if not m or m.group(1) != g.get('data-name') or int(m.group(2)) != int(g.get('data-n')):
            fail('frame title %r does not match its frame' % t)
        frames.append((int(g.get('data-d')), int(g.get('data-s')), int(g.get('data-n')),
                       g.get('data-name')))
    frames.sort()
    paths = {}
    starts = {}         # depth -> sorted starts of its frames (frames are sorted)
    for d, s, n, name in frames:
        if d == 0:
            paths[(d, s)] = ()
        else:
            st = starts.get(d - 1, [])
            i = bisect.bisect_right(st, s) - 1
            if i < 0 or not s + n <= st[i] + sizes[(d - 1, st[i])]:
                fail('frame %s at depth %d has no parent' % (name, d))
            paths[(d, s)] = paths[(d - 1, st[i])] + (name,)
        starts.setdefault(d, []).append(s)
        sizes[(d, s)] = n
    drawn = {paths[(d, s)]: n for d, s, n, _ in frames if d > 0}
    want = Counter()
    for stack, n in folded.items():
        fr = tuple(stack.split(';'))
        for i in range(1, len(fr) + 1):
            want[fr[:i]] += n
    total = sum(folded.values())
    # drawn: exactly the paths of at least data-min-count events, each with its count;
    # that is 0.1 px wide at least (flamegraph.h), more only to stay within 8000 frames
    minc = int(root.get('data-min-count'))
    if minc < max(1, math.ceil(0.1 * total / (1200 - 2 * 10))):
        fail('data-min-count %d is under 0.1 px' % minc)
    allw = sorted(want.values(), reverse=True)
    if len(allw) + 1 > 8000 and minc > 1 and sum(1 for n in allw if n >= minc - 1) + 1 <= 8000:
        fail('data-min-count %d leaves out more than the 8000 frames cap needs' % minc)
    want = {p: n for p, n in want.items() if n >= minc}
    if len(want) + 1 > 8000:
        fail('%d frames drawn, over the cap of 8000' % (len(want) + 1))
    if drawn != want:
        diff = set(drawn.items()) ^ set(want.items())
        fail('flame graph frames differ from report folded: %s' % sorted(diff)[:5])
    if int(root.get('data-total')) != total:
        fail('total %s, folded %d' % (root.get('data-total'), total))
    if dom is not None:
        m = re.search(r'data-ready="(\d+)"', open(dom).read())
        if not m or int(m.group(1)) != len(frames):
            fail('the page script did not run over every frame (data-ready %s, %d frames)'
                 % (m.group(1) if m else None, len(frames)))
    print('perfcheck: flame graph of %d events, %d frames, every title equal to report folded%s'
          % (total, len(frames), ', script ran in the browser' if dom else ''))


if __name__ == '__main__':
    if sys.argv[1] == 'perf-script':
        perf_script(sys.argv[2], sys.argv[3], read_folded(sys.argv[4]))
    else:
        flamegraph(sys.argv[2], read_folded(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
