#!/usr/bin/env python3
"""Check what speedscope's own importer made of `report events --format perf-script`.

Usage: speedcheck.py PERF_SCRIPT DUMPED_DOM

DUMPED_DOM is Chromium's --dump-dom of speedscope's page after speedscope-load.js fed
it PERF_SCRIPT and pressed speedscope's Export: the page holds speedscope's exported
JSON (<pre id="ss-export">) or an error (<pre id="ss-error">).

speedscope's perf-script importer keeps one profile per "COMM tid: N" (perf's lone number is a TID) and weighs each
sample by time: a sample spans from the midpoint with the one before it to the midpoint
with the one after it (the first starts at its own time, the last ends there), samples
of zero weight are left out, and consecutive samples of one stack merge. Its exporter
writes each profile as open/close frame events. So this reads every sample of
PERF_SCRIPT the way the importer documents it, computes the runs (stack, weight) each
profile must have, and compares them with the runs the exported events describe: a
sample speedscope missed, misread or misplaced changes a run or a weight (a sample
without frames is a gap between runs). Printed: the
samples read, the profiles and runs that matched.
"""
import html
import json
import re
import sys
from collections import OrderedDict

HEAD = re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[\d+\]\s+(\d+\.\d+): ')
FRAME = re.compile(r'^\s*(\w+)\s*(.+) \((\S*)\)')


def fail(msg):
    print('speedcheck FAIL: ' + msg)
    sys.exit(1)


def expected(path):
    """Profile name -> list of (stack tuple, weight in seconds), speedscope's rule."""
    samples = OrderedDict()
    n = 0
    for block in open(path).read().split('\n\n'):
        lines = [l for l in block.split('\n') if l.strip()]
        if not lines:
            continue
        m = HEAD.match(lines[0])
        if not m:
            fail('sample line not in the perf script layout: %r' % lines[0])
        stack = []
        for l in lines[1:]:
            f = FRAME.match(l)
            if not f:
                fail('frame line not in the perf script layout: %r' % l)
            name = re.sub(r'\+0x[\da-f]+$', '', f.group(2))
            stack.append(('??? (%s)' % f.group(3)) if name == '[unknown]' else name)
        stack.reverse()
        samples.setdefault('%s tid: %s' % (m.group(1), m.group(2)), []).append(
            (float(m.group(3)), tuple(stack)))
        n += 1
    runs = {}
    for name, ss in samples.items():
        w = []
        for i, (t, st) in enumerate(ss):
            if i and t < ss[i - 1][0]:
                fail('%s: sample at %.9f after one at %.9f (speedscope refuses that)'
                     % (name, t, ss[i - 1][0]))
            start = t if i == 0 else (t + ss[i - 1][0]) / 2
            end = t if i == len(ss) - 1 else (t + ss[i + 1][0]) / 2
            w.append((st, end - start))
        if len(ss) == 1:
            w = [(ss[0][1], 1.0)]	# a lone sample gets weight 1
        runs[name] = merge(w)
    return n, runs


def merge(segments):
    """Drop zero weights, merge consecutive equal stacks, drop the empty stack."""
    out = []
    for st, w in segments:
        if w <= 0:
            continue
        if out and out[-1][0] == st:
            out[-1] = (st, out[-1][1] + w)
        else:
            out.append((st, w))
    return [r for r in out if r[0]]


def exported(dom):
    text = open(dom).read()
    err = re.search(r'<pre id="ss-error">(.*?)</pre>', text, re.S)
    if err:
        fail('speedscope: ' + html.unescape(err.group(1)))
    m = re.search(r'<pre id="ss-export">(.*?)</pre>', text, re.S)
    if not m:
        fail('no export in the page (speedscope did not load the profile in time)')
    doc = json.loads(html.unescape(m.group(1)))
    frames = [f['name'] for f in doc['shared']['frames']]
    runs = {}
    for p in doc['profiles']:
        if p['type'] != 'evented':
            fail('profile %s of type %s' % (p['name'], p['type']))
        stack, segs, at = [], [], p['startValue']
        for e in p['events']:
            if e['at'] > at:
                segs.append((tuple(stack), e['at'] - at))
                at = e['at']
            if e['type'] == 'O':
                stack.append(frames[e['frame']])
            elif not stack or stack.pop() != frames[e['frame']]:
                fail('%s: close of %s not the open frame' % (p['name'], frames[e['frame']]))
        if p['endValue'] > at:
            segs.append((tuple(stack), p['endValue'] - at))
        runs[p['name']] = merge(segs)
    return doc.get('exporter', '?'), runs


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    n, want = expected(sys.argv[1])
    exporter, got = exported(sys.argv[2])
    if sorted(got) != sorted(want):
        fail('profiles %s, want %s' % (sorted(got)[:5], sorted(want)[:5]))
    nruns = 0
    for name, wr in want.items():
        gr = got[name]
        if [s for s, _ in gr] != [s for s, _ in wr]:
            i = next(i for i, (a, b) in enumerate(zip(gr + [None] * len(wr), wr))
                     if a is None or a[0] != b[0])
            fail('%s: run %d is %r, want %r' % (name, i, gr[i] if i < len(gr) else None,
                                               wr[i]))
        for i, ((_, a), (_, b)) in enumerate(zip(gr, wr)):
            if abs(a - b) > 1e-9 * max(1.0, abs(b)) + 1e-12:
                fail('%s: run %d weighs %.12f s, want %.12f s' % (name, i, a, b))
        nruns += len(wr)
    print('speedcheck: %s read %d samples into %d profiles, %d runs with their weights'
          ' as expected' % (exporter, n, len(want), nruns))


main()
