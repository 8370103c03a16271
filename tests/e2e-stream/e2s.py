#!/usr/bin/env python3
"""End-to-end streaming scenarios: the patched guest kernel under QEMU streams
with stackmap-guestd to the real host-agent (suite e2e).

Usage: e2s.py SCENARIO --host-agent PATH --guestd PATH [--ticker PATH]
              [--workdir DIR] [--seed N] [--crash-runs N] [--panics LIST]

Scenarios: steady, resets, crash, kill, late, full, postmortem (t_postmortem: the
kernel log recovered from a panicked guest's memory), the window-overflow paths
(OVERFLOW_PATHS: late-overflow, late-overflow-meta, live-overflow,
live-overflow-after-epoch), unbounded and unbounded-off (16x a 1024-entry map's
capacity in distinct stacks, with the map's automatic reset and without); by hand,
for figures: unbounded-poll and resetbench [--bits N] [--kernel-out DIR]; see
SCENARIOS below.

The guest runs with KASLR: its addresses are checked against System.map moved by
the boot's slide (the TEXT marker of /init) and, for a module, against the module's
own /proc/kallsyms lines (modsyms.txt).

Ground truth (the heart of every scenario):
  * Stacks. The guest keeps the text of its own stack_map for every epoch: it
    reads it just before each reset (with tracing paused for half of the resets,
    so that dump is exact; with tracing running for the other half, "racy") and at
    the end after tracing stopped (guest side: stream.sh). The host test asks
    host-agent for every stored event (`report events --json`) and checks that
    every event carrying a stack_id resolved (kind "stack_id", none "unresolved")
    and that its frames, as func+0xoff, are exactly the frames the guest's map of
    that epoch held for that stack_id. An event whose id is missing from an exact
    dump fails; one missing from a racy dump (added after the read) is counted as
    unverified and printed. Full stacks (kind "full", map drops and deep stacks)
    must have frames and are counted.
  * Counts. The guest stops tracing, lets the agent drain, SIGTERMs it and dumps
    its per-CPU ring-buffer stats: the host's stored ring-buffer events (every
    chunk's nr_events, traced events and their stack events) must equal the sum of
    the guest's "read events", with no entry left unread and LOST 0 unless the
    scenario expects ring-buffer loss. That equality is also the duplicate check: a
    frame stored twice (or a page applied twice after an agent restart) would make
    the host's count larger. (Equal (cpu, ts, text) tuples are no evidence: under
    TCG the trace clock is coarse, and a names_cache object freed and reallocated
    gives the same text at the same timestamp many times over.)
  * Per event, from known call chains (kernel patch 0010). From before
    stackmap-guestd starts to the end (or the panic), a background loop in the
    guest fires stackmap_test:chain events (fields chain, seq) from four known
    call chains through <debugfs>/ftrace_stackmap_test_chains, alongside the
    slab workload, on both vCPUs; it is held for the quiet resets and races the
    others. The guest's per-chain counts are read at the end (chains.txt). Every
    stored chain event's resolved stack (stack_id or full) must be, innermost
    first, the tracepoint, the leaf all chains share, its own chain's functions
    in reverse call order and the debugfs write, with no function of another
    chain anywhere: unresolved 0, misattributed 0, (chain, seq) pairs unique
    (check_chains). Without ring-buffer loss (steady, resets, kill) every chain's
    stored seqs are exactly 0 .. count-1 of the guest's own count. With loss
    (late, full): no event the guest did not fire, the missing ones at most the
    LOST count, and in late (CHAINS-STREAMING marker) every event fired once the
    agent was streaming is stored unless the guest overran again after that.
    crash: see below.
  * Crash. The guest writes "e2s-mark N" to trace_marker, waits 300 ms and only
    then prints "MARK N" on the console, in a loop with the slab workload; at a
    seeded moment after the first MARK (a busy host slows the boot down) it
    starts e2s-ticker (e2s-ticker.c) with a seeded K: it writes
    "e2s-tick I K" to trace_marker for I = 1..K with a relative 1 ms
    clock_nanosleep between two ticks and writes 'c' to /proc/sysrq-trigger right
    after the K-th, so tick I is committed at least K - I ms before the panic.
    QEMU pauses the panicked guest (--on-panic pause), host-agent (--qmp) dumps its
    memory and replays what was not streamed (the agent's window, the ring
    buffers' unread pages, the map's unread entries): every tick 1..K must then be
    stored (K - I >= 0), and the post-mortem say 'recovered'; the events it added
    are counted (RECOVERED: without the replay they would be lost). Also every MARK the console shows, every stored stack_id must
    resolve, the boot must be marked crashed (host-agent --qmp); a hole in a
    chain's stored seqs is not allowed, and a chain event may lack its stack only as the
    newest stored event of its CPU. Printed per crash (CRASH-WINDOW), in time
    (the printk time of the sysrq line, moved to the trace clock, which is
    "global" here since TCG's TSC is unstable: the guest printk()s
    "e2s-clock N" now and then, traced by printk:console, so each gives printk
    clock - trace clock; measured -0.04..-0.02 ms, printed): the
    newest stored tick and event; an upper bound on how long before
    the panic the ticks not stored were committed (the stored tick before the
    first of them + 1 ms); the age beyond which every event is stored (each
    CPU's stored events are a prefix of its ring buffer, so what is missing is
    newer than its CPU's newest stored event: the oldest of those); the ticks'
    real spacing (the 1 ms sleeps last 1.1-1.8 ms under TCG, so K - I >= 10 is
    in fact 11 ms or more).
What this does not prove: the slab events' stacks are still checked per
(epoch, stack_id) against the guest's map, not event by event: a pairing error
that hits only slab events (never a chain event sharing their ring buffers)
would pass. Which events a lossy scenario lost is checked only by count (late
also by time: none after the agent streams). The crash bound is asserted for the
ticker's events (on whichever vCPU they ran) in tick counts, not in time; the
time bounds are printed, not asserted (a vCPU that ran only the agent, whose
events are excluded, or idled has no recent event and widens the per-CPU one).
All of it under TCG, for the few seeds run.
"""

import argparse
import bisect
import io
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import time

import stackmap_e2e as sm
from stackmap_e2e import check, log

BOOT_TRACE = sm.BOOT_TRACE
BOOT_TRACE_SMALL = BOOT_TRACE[:2] + ['trace_buf_size=512K']
BLOCK_EVENTS = ['block:block_bio_queue', 'block:block_rq_issue']
BOOT_TRACE_BLOCK = [BOOT_TRACE[0] + ',' + ','.join(BLOCK_EVENTS)] + BOOT_TRACE[1:]
# full: the frees too, whose call paths are as many again as the allocations'. On
# the distribution-like guest the allocations alone gave 933 distinct stacks, and
# no drop in 315 s of the wide workload: the 1024-entry map never filled.
FULL_EVENTS = ['kmem:kfree', 'kmem:kmem_cache_free']
BOOT_TRACE_FULL = [BOOT_TRACE[0] + ',' + ','.join(FULL_EVENTS)] + BOOT_TRACE[1:]

def parse_map(text):
    """{stack_id: [func+0xoff, ...]} from a stack_map text (sm.parse_stack_map)."""
    return {sid: [f.split('/')[0] for f in frames]
            for sid, (_, _, frames) in sm.parse_stack_map(text).items()}


def guest_maps(run):
    """{epoch: (exact, {stack_id: [func+0xoff, ...]})}, merged over the dumps."""
    maps = {}
    with tarfile.open(fileobj=io.BytesIO(run.file('maps.tar.gz'))) as t:
        for m in t.getmembers():
            mm = re.match(r'maps/map-(\d+)(-racy)?\.txt$', m.name)
            if not mm:
                continue
            e, exact = int(mm.group(1)), not mm.group(2)
            st = parse_map(t.extractfile(m).read().decode())
            old = maps.get(e, (False, {}))
            merged = dict(old[1])
            # A dump taken after a module was unloaded prints its addresses as raw
            # hex (%pS finds no symbol): keep a dump's frames that name them.
            merged.update({sid: fr for sid, fr in st.items() if sid not in merged
                           or not any(f.startswith('0x') for f in fr)})
            maps[e] = (old[0] or exact, merged)
    return maps


def guest_stats(run):
    tot = {}
    for l in run.file('stats.txt').decode().split('\n'):
        m = re.match(r'^([a-z ]+): *(\d+)', l)
        if m:
            tot[m.group(1)] = tot.get(m.group(1), 0) + int(m.group(2))
    return tot


def host_sym(frame):
    return frame['sym'].split(' ')[0].split('/')[0]


def symbol_table(kout, run):
    """The guest's System.map at this boot's KASLR slide (its TEXT marker), plus the
    module symbols it sent from /proc/kallsyms (hooksyms.txt: the test hooks when
    they are a module; modsyms.txt: the test module of mode module; if any):
    sm.SymbolTable.sym_offs() gives every "name+0xoff" rendering of an address, since
    aliases (__x64_sys_vfork, __do_sys_vfork) share one and the guest and host may pick
    different ones."""
    slide = sm.kaslr_slide(kout, run.markers())
    log('KASLR slide of this boot: %#x' % slide)
    syms = sm.SymbolTable(os.path.join(kout, 'System.map'), slide)
    for f in ('hooksyms.txt', 'modsyms.txt'):
        if run.has_file(f):
            syms.add_kallsyms(run.file(f).decode())
    return syms


def same_stack(frames, want, syms):
    """Host frames (ip + sym) against the guest's func+0xoff list."""
    if len(frames) != len(want):
        return False
    for f, w in zip(frames, want):
        ip = int(f['ip'], 16)
        # An address the guest itself printed raw (a module's freed init text) must
        # be printed raw by the host too, not named after a nearby symbol.
        if w.startswith('0x') and int(w, 16) == ip:
            if host_sym(f) != w:
                return False
            continue
        alias = syms.sym_offs(ip)
        if w not in alias or host_sym(f) not in alias:
            return False
    return True


def check_events(run, events, maps, syms, full_ok=True):
    """The ground-truth check of every stored event's stack. Returns counts."""
    kinds, bad, unverified = {}, [], 0
    for ev in events:
        st = ev['stack']
        kinds[st['kind']] = kinds.get(st['kind'], 0) + 1
        if st['kind'] == 'unresolved':
            bad.append('unresolved %s: %s' % (ev['event'][:60], st.get('why')))
        elif st['kind'] == 'stack_id':
            got = [host_sym(f) for f in st['frames']]
            exact, m = maps.get(st['epoch'], (False, {}))
            want = m.get(st['stack_id'])
            if want is None:
                if exact:
                    bad.append('stack_id %#x epoch %d: not in the guest map of that epoch'
                               % (st['stack_id'], st['epoch']))
                else:
                    unverified += 1
            elif not same_stack(st['frames'], want, syms):
                bad.append('stack_id %#x epoch %d: host %s, guest %s'
                           % (st['stack_id'], st['epoch'], got, want))
        elif st['kind'] == 'full':
            if not st['frames']:
                bad.append('full stack without frames: %s' % ev['event'][:60])
            if not full_ok:
                bad.append('unexpected full stack: %s' % ev['event'][:60])
    for b in bad[:20]:
        log('  MISMATCH ' + b)
    check(not bad, '%d events not resolved to the guest\'s own stack' % len(bad))
    return kinds, unverified


# The known call chains of guest-kernel/patches/0010 (trace_stackmap_test.c):
# chain C calls C + 1 functions of its own, in this order, the last one calls the
# shared leaf, which fires stackmap_test:chain (chain=C seq=N).
NR_CHAINS = 4
CHAIN_FUNCS = {c: ['stackmap_test_chain%d_%s' % (c, x) for x in 'abcd'[:c + 1]]
               for c in range(NR_CHAINS)}
CHAIN_LEAF = 'stackmap_test_chain_fire'
CHAIN_ABOVE = ['trace_event_raw_event_chain']      # frames above the leaf
CHAIN_BELOW = 'stackmap_test_chains_write'          # the caller of chain C's first
CHAIN_EVENT = re.compile(r'^stackmap_test/chain: chain=(\d+) seq=(\d+)$')


def chain_want(c):
    """The frames (innermost first) from the tracepoint down to the debugfs write."""
    return CHAIN_ABOVE + [CHAIN_LEAF] + CHAIN_FUNCS[c][::-1] + [CHAIN_BELOW]


def chain_of_stack(names):
    """Which chain's stack this is (names innermost first), or None."""
    for c in range(NR_CHAINS):
        w = chain_want(c)
        if names[:len(w)] == w and not any(
                f in names for d in range(NR_CHAINS) if d != c for f in CHAIN_FUNCS[d]):
            return c
    return None


def guest_chains(run):
    """{chain: events the guest fired} from ftrace_stackmap_test_chains."""
    out = {}
    for l in run.file('chains.txt').decode().split('\n'):
        if l.strip():
            c, n = l.split()
            out[int(c)] = int(n)
    check(sorted(out) == list(range(NR_CHAINS)), 'chains.txt: %r' % out)
    return out


def check_chains(run, evs, b, mode, guest=None, panic_ts=None, window_ns=None):
    """Per-event ground truth from the known call chains (patch 0010).

    Every stored stackmap_test:chain event must carry a stack (stack_id or full)
    whose frames are, innermost first, the tracepoint, the shared leaf, its own
    chain's functions in reverse call order and the debugfs write, with no
    function of another chain anywhere: else it counts as unresolved (no stack)
    or misattributed (some other stack); both must be 0. (chain, seq) pairs must
    be unique. Then, by mode:
      exact  every chain's stored seqs are exactly 0 .. count-1, count = the
             guest's own counter at the end (no loss in the scenario);
      lost   the ring buffer lost events (LOST reported): the events missing
             from the store, summed over the chains, are at most the host's
             LOST count; with a CHAINS-STREAMING marker (late start) and no
             overrun after it, every event fired after it must be stored;
      crash  no guest count survives: a hole in a chain's stored seqs must lie
             within window_ns before the panic (the stored event after the
             hole, committed after it, is newer than panic_ts - window_ns);
             an event without a stack is allowed only as the newest stored
             event of its CPU (its stack event may be the one not flushed).
    In mode lost an event may also have kind "lost": the host saw events lost right
    after it (RB_MISSED_EVENTS on the next page, or dropped frames), so its stack
    event may have been one of them; it is counted, never given another stack.
    Returns {chain: stored}."""
    per = {c: {} for c in range(NR_CHAINS)}
    unresolved, misattr, dups, nostack_tail, lost_stack, unflagged = [], [], [], 0, 0, 0
    last_on_cpu = {}
    for i, e in enumerate(evs):
        last_on_cpu[e['cpu']] = i
    for i, e in enumerate(evs):
        m = CHAIN_EVENT.match(e['event'])
        if not m:
            continue
        c, seq = int(m.group(1)), int(m.group(2))
        check(c in per, 'chain %d out of range: %s' % (c, e['event']))
        if seq in per[c]:
            dups.append((c, seq))
        per[c][seq] = e['ts']
        st = e['stack']
        if st['kind'] not in ('stack_id', 'full') or not st.get('frames'):
            if mode == 'crash' and st['kind'] == 'none' and last_on_cpu[e['cpu']] == i:
                nostack_tail += 1
            elif mode == 'lost' and st['kind'] == 'lost':
                # the host saw events lost right after it: its stack may be one of them
                lost_stack += 1
            elif mode == 'lost' and st['kind'] == 'none':
                # its stack event may have been dropped by a commit overrun, which
                # flags no page: bounded by the guest's count below
                unflagged += 1
            else:
                unresolved.append('%s: %s %s' % (e['event'], st['kind'], st.get('why', '')))
            continue
        names = [host_sym(f).split('+')[0] for f in st['frames']]
        got = chain_of_stack(names)
        if got != c:
            misattr.append('%s (cpu %d ts %d) has %s: %s'
                           % (e['event'], e['cpu'], e['ts'],
                              "chain %d's stack" % got if got is not None else 'another stack',
                              names[:8]))
    for x in (unresolved + misattr)[:10]:
        log('  CHAIN MISMATCH ' + x)
    stored = {c: len(per[c]) for c in per}
    log('chains: stored per chain %s, unresolved %d, misattributed %d, duplicates %d%s'
        % (stored, len(unresolved), len(misattr), len(dups),
           ', without stack (newest on their CPU) %d' % nostack_tail if mode == 'crash' else
           ', stack lost with the events after them %d' % lost_stack if mode == 'lost'
           else ''))
    check(sum(stored.values()) > 0, 'no stackmap_test:chain event stored')
    check(all(stored.values()), 'a chain has no stored event: %s' % stored)
    check(not unresolved, '%d chain events without their stack' % len(unresolved))
    if mode == 'lost':
        # A commit overrun (a writer that wraps onto the page being committed) drops
        # the event and marks no page as missing events: a chain event whose stack
        # event was dropped that way has no stack, and nothing tells the host why.
        co = guest_stats(run).get('commit overrun', 0)
        log('chains: %d without a stack, against %d commit overruns in the guest'
            % (unflagged, co))
        check(unflagged <= co, '%d chain events without their stack, more than the %d'
              ' events the guest dropped by commit overrun' % (unflagged, co))
    check(not misattr, '%d chain events misattributed' % len(misattr))
    check(not dups, 'duplicate (chain, seq): %s' % dups[:10])
    if mode == 'exact':
        log('chains: guest fired %s' % guest)
        for c in per:
            missing = sorted(set(range(guest[c])) - set(per[c]))
            extra = sorted(set(per[c]) - set(range(guest[c])))
            check(not missing and not extra,
                  'chain %d: guest fired %d, host stored %d (missing %s, unknown %s)'
                  % (c, guest[c], stored[c], missing[:10], extra[:10]))
    elif mode == 'lost':
        missing = {c: sorted(set(range(guest[c])) - set(per[c])) for c in per}
        extra = {c: sorted(set(per[c]) - set(range(guest[c]))) for c in per}
        nmiss = sum(len(v) for v in missing.values())
        log('chains: guest fired %s, missing %s, host LOST %d events'
            % (guest, {c: len(v) for c, v in missing.items()}, b['lost_events']))
        check(not any(extra.values()), 'stored chain events the guest never fired: %s' % extra)
        check(nmiss <= b['lost_events'], '%d chain events missing, more than the %d LOST'
              % (nmiss, b['lost_events']))
        mk = [x for x in run.markers() if x.startswith('CHAINS-STREAMING ')]
        if mk:
            f = mk[0].split()[1:]
            at = {c: int(f[c]) for c in range(NR_CHAINS)}
            ov_at = int(f[NR_CHAINS].split('=')[1])
            ov_end = guest_stats(run).get('overrun', 0)
            late = {c: [s for s in v if s >= at[c]] for c, v in missing.items()}
            log('chains: streaming from %s (overrun then %d, at the end %d); missing after'
                ' it %s' % (at, ov_at, ov_end, {c: len(v) for c, v in late.items()}))
            if ov_end == ov_at:
                check(not any(late.values()), 'chain events fired while the agent streamed'
                      ' with no overrun are missing: %s' % late)
    elif mode == 'crash':
        holes = []
        for c in per:
            seqs = sorted(per[c])
            for s in range(seqs[-1]):
                if s in per[c]:
                    continue
                nxt = per[c][seqs[bisect.bisect_right(seqs, s)]]
                holes.append((c, s, (panic_ts - nxt) / 1e6))
        log('chains: %d holes below the newest stored seq of their chain: %s'
            % (len(holes), ['chain %d seq %d (next stored %.1f ms before the panic)' % h
                            for h in holes[:8]]))
        old = [h for h in holes if h[2] * 1e6 > window_ns]
        check(not old, 'chain events missing although a later one of the chain, committed'
              ' after them, was %.0f ms or more before the panic: %s'
              % (window_ns / 1e6, old[:10]))
    return stored


def db_sum(run, sql):
    return run.query(sql)[0][0] or 0


def common_checks(run, expect_ended='clean'):
    """Counts + ground truth; returns a dict of figures."""
    boots = run.report('boots')
    check(len(boots) == 1, '%d boots stored, want 1' % len(boots))
    b = boots[0]
    log('boot: %s' % json.dumps(b))
    check(b['ended'] == expect_ended, 'boot ended %s, want %s' % (b['ended'], expect_ended))
    check(b['malformed'] == 0, '%d malformed frames' % b['malformed'])
    evs = run.report('events', '-n', '100000000')['events']
    maps = guest_maps(run) if expect_ended == 'clean' else {}
    sm.integrity(run)
    return b, evs, maps


def counts(run, b, evs, expect_lost=False):
    gs = guest_stats(run)
    stored = db_sum(run, 'SELECT SUM(nr_events) FROM chunks')
    log('guest per-CPU stats (sum): %s' % json.dumps(gs))
    log('host: %d ring-buffer events stored (%d traced, %d in report events)'
        % (stored, b['events'], len(evs)))
    if gs.get('entries', 0) and run.has_file('unread.txt'):
        log(run.file('unread.txt').decode(errors='replace'))
    check(gs.get('entries', 0) == 0, '%d events left unread in the guest' % gs.get('entries', 0))
    check(stored == gs['read events'], 'host stored %d ring-buffer events, the guest read %d'
          % (stored, gs['read events']))
    check(len(evs) == b['events'], 'report events shows %d, boots says %d'
          % (len(evs), b['events']))
    check(b['lost_frames'] == 0, 'LOST frames %d' % b['lost_frames'])
    guest_lost = gs.get('overrun', 0) + gs.get('dropped events', 0)
    if expect_lost:
        check(b['lost_events'] == guest_lost, 'host LOST %d, guest overrun+dropped %d'
              % (b['lost_events'], guest_lost))
    else:
        check(b['lost_events'] == 0 and guest_lost == 0, 'LOST %d events (guest %d)'
              % (b['lost_events'], guest_lost))
    return gs, stored


def agent_cpu(run):
    m = [x for x in run.markers() if x.startswith('AGENT_CPU_TICKS')]
    if not m:
        return None
    t, hz = re.match(r'AGENT_CPU_TICKS (\d+) hz=(\d+)', m[0]).groups()
    return int(t) / int(hz)


def stat_value(run, key):
    return db_sum(run, 'SELECT MAX(value) FROM stats WHERE key = %d' % key)


# ---------------------------------------------------------------------------

def t_steady(args):
    kout, initrd = sm.build_stream(args)
    run = sm.stream_boot(args, kout, initrd, 'steady', 'steady', seconds=15)
    b, evs, maps = common_checks(run)
    gs, stored = counts(run, b, evs)
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    check(unv == 0, '%d events unverified in a scenario without racy dumps' % unv)
    check(b['epochs'] == 1, '%d epochs, want 1' % b['epochs'])
    check(kinds.get('stack_id', 0) > 0, 'no event with a stack_id')
    log('stack kinds: %s' % kinds)
    check_chains(run, evs, b, 'exact', guest_chains(run))
    # figures (printed, not asserted)
    ts = [e['ts'] for e in evs]
    span = (max(ts) - min(ts)) / 1e9 if ts else 0
    wire = stat_value(run, 17)
    dbsize = os.path.getsize(run.db())
    cpu_ns = stat_value(run, 19)
    log('FIGURES steady: %d traced events (%d ring-buffer events) over %.1f s of guest'
        ' trace time: %.0f traced events/s' % (len(evs), stored, span, len(evs) / span if span else 0))
    log('FIGURES wire: %d bytes (agent STATS) = %.1f bytes/traced event, %.1f bytes/rb event'
        % (wire, wire / max(1, len(evs)), wire / max(1, stored)))
    log('FIGURES store: %d bytes db = %.1f bytes/traced event' % (dbsize, dbsize / max(1, len(evs))))
    log('FIGURES host CPU: %.2f s = %.1f us/traced event' % (run.ha_cpu, run.ha_cpu * 1e6 / max(1, len(evs))))
    gc = agent_cpu(run)
    log('FIGURES guest agent CPU: STATS %.2f s, /proc %s s = %.1f us/traced event (TCG)'
        % (cpu_ns / 1e9, gc, cpu_ns / 1e3 / max(1, len(evs))))
    log('stacks verified against the guest map: %d events' % kinds.get('stack_id', 0))
    run.cleanup()


def t_resets(args):
    kout, initrd = sm.build_stream(args)
    n = 50
    run = sm.stream_boot(args, kout, initrd, 'resets', 'resets',
                         extra=['stackmap.e2s_resets=%d' % n])
    b, evs, maps = common_checks(run)
    counts(run, b, evs)
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    check('RESETS %d' % n in run.markers(), 'the guest did not make %d resets' % n)
    check(b['epochs'] == n + 1, '%d epochs stored, want %d' % (b['epochs'], n + 1))
    ep = {e['stack']['epoch'] for e in evs if e['stack']['kind'] == 'stack_id'}
    log('stack kinds: %s; events in %d distinct epochs; %d events unverified (racy dumps);'
        ' guest maps of %d epochs' % (kinds, len(ep), unv, len(maps)))
    check(len(ep) > n // 2, 'events in only %d epochs' % len(ep))
    check_chains(run, evs, b, 'exact', guest_chains(run))
    cep = {e['stack']['epoch'] for e in evs if CHAIN_EVENT.match(e['event'])
           and e['stack']['kind'] == 'stack_id'}
    log('chain events in %d distinct epochs' % len(cep))
    check(len(cep) > n // 2, 'chain events in only %d epochs' % len(cep))
    run.cleanup()


TICK = re.compile(r'e2s-tick (\d+) (\d+) (\d+)')


def t_crash(args):
    """Crashes the guest args.crash_runs times (seeded) while it streams. See the
    module docstring ("Crash")."""
    kout, initrd = sm.build_stream(args)
    rnd = random.Random(args.seed)
    # QEMU pauses the panicked guest, host-agent dumps it and replays what was not
    # streamed: every tick committed before the panic must be stored (K - I >= 0)
    bound = 0
    figures = []
    for i in range(args.crash_runs):
        crash_ms = rnd.randint(4000, 14000)
        k = rnd.randint(100, 1000)
        log('--- crash %d: seed %d, e2s-ticker K=%d started %d ms after the first MARK'
            % (i, args.seed, k, crash_ms))
        trace = [BOOT_TRACE[0] + ',printk:console'] + BOOT_TRACE[1:]
        run = sm.StreamRun(args, 'crash-%d' % i, trace + [
            'stackmap.e2s_mode=crash', 'stackmap.e2s_crash_ms=%d' % crash_ms,
            'stackmap.e2s_ticks=%d' % k], launch_extra=['--on-panic', 'pause'])
        try:
            run.start_agent()
            proc = run.launch(initrd, kout)
            rc = proc.wait()
            run.stop_after_crash()
        except BaseException:
            run.abort()
            raise
        check('sysrq: Trigger a crash' in run.text(), 'the guest did not crash (launch %d)' % rc)
        figures.append(crash_checks(run, i, k, bound))
        run.cleanup()
    log('CRASH-LOSS summary over %d panics: ticks lost streamed only %s, streamed +'
        ' recovered %s; chain events recovered %s; events recovered %s'
        % (len(figures), [f['ticks_streamed_lost'] for f in figures],
           [f['ticks_not_stored'] for f in figures],
           [f['chains_recovered'] for f in figures],
           [f['events_recovered'] for f in figures]))
    log('CRASH-WINDOW summary (bound %d ms): ticks not stored %s;'
        ' not stored within (ms before the panic) %s; all stored beyond (per-CPU) %s;'
        ' newest stored tick %s; newest stored event %s'
        % (bound, [f['ticks_not_stored'] for f in figures],
           ['%.1f' % f['lost_within_ms'] for f in figures],
           ['%.1f' % f['cpu_bound_ms'] for f in figures],
           ['%.1f' % f['newest_tick_ms'] for f in figures],
           ['%.1f' % f['newest_event_ms'] for f in figures]))


def crash_checks(run, i, k, bound):
    """The checks of one crashed boot (e2e-stream 'crash'); returns its figures."""
    text = run.text()
    check(not [m for m in run.markers()
               if m.startswith(('TICKER-FAIL', 'CHAINS-FAIL', 'MARK-WRITE-FAIL'))],
          'a guest helper failed: %s' % [m for m in run.markers() if 'FAIL' in m][:8])
    marks = [int(m.split()[1]) for m in run.markers() if re.match(r'^MARK \d+$', m)]
    b, evs, _ = common_checks(run, expect_ended='crashed')
    check(b['lost_frames'] == 0, 'LOST frames %d' % b['lost_frames'])
    stored_marks, ticks = set(), {}
    for e in evs:
        m = re.search(r'e2s-mark (\d+)', e['event'])
        if m:
            stored_marks.add(int(m.group(1)))
        m = TICK.search(e['event'])
        if m:
            check(int(m.group(2)) == k, 'a tick of another K: %s' % e['event'])
            check(int(m.group(1)) not in ticks, 'tick stored twice: %s' % e['event'])
            ticks[int(m.group(1))] = e['ts']
    unres = [e for e in evs if e['stack']['kind'] == 'unresolved']
    check(not unres, '%d stored events unresolved, e.g. %s' % (len(unres), unres[:1]))
    check(marks, 'no MARK before the crash')
    missing = [m for m in marks if m not in stored_marks]
    check(not missing, 'marks %s were on the console before the crash but are not stored'
          % missing)
    pm = re.search(r'\[ *(\d+)\.(\d+)\] sysrq: Trigger a crash', text)
    check(pm, 'no printk time on the sysrq line')
    pts = int(pm.group(1)) * 10**9 + int(pm.group(2)) * 1000
    # The printk clock is local_clock(), the trace clock another one ("global" under
    # TCG, whose TSC the kernel finds unstable): they may differ. The guest printk()s
    # "e2s-clock N" (via /dev/kmsg) now and then; the console shows it with the printk
    # time, the trace (printk:console) with the trace time, both taken in the same
    # printk() call. Move the panic's time to the trace clock by their difference.
    con = {int(m.group(3)): int(m.group(1)) * 10**9 + int(m.group(2)) * 1000
           for m in re.finditer(r'\[ *(\d+)\.(\d+)\] e2s-clock (\d+)', text)}
    offs = sorted(con[int(m.group(1))] - e['ts'] for e in evs
                  for m in [re.search(r'^printk/console: e2s-clock (\d+)', e['event'])]
                  if m and int(m.group(1)) in con)
    check(offs, 'no e2s-clock printk both on the console and in the trace')
    off = offs[len(offs) // 2]
    log('crash %d: printk clock - trace clock = %.3f ms (median of %d, spread %.3f ms)'
        % (i, off / 1e6, len(offs), (offs[-1] - offs[0]) / 1e6))
    pts -= off
    # The crash window: tick I was committed at least K - I ms before the panic.
    check(ticks, 'no e2s-tick stored')
    newest = max(ticks)
    miss = [t for t in range(1, k + 1) if t not in ticks]
    gaps = sorted((ticks[t + 1] - ticks[t]) / 1e6 for t in ticks if t + 1 in ticks)
    fig = {
        'K': k,
        'ticks_not_stored': k - newest,
        'newest_tick_ms': (pts - ticks[newest]) / 1e6,
        'newest_event_ms': (pts - max(e['ts'] for e in evs)) / 1e6,
        'holes': len([t for t in miss if t < newest]),
        'gap_ms': (gaps[0], gaps[len(gaps) // 2], gaps[-1]) if gaps else None,
        # the oldest tick not stored was committed at least 1 ms after the tick
        # before it: every tick not stored is at most this close to the panic
        'lost_within_ms': ((pts - ticks[miss[0] - 1]) / 1e6 - 1
                           if miss and miss[0] - 1 in ticks else 0.0),
    }
    # Each CPU's stored events are a prefix of its ring buffer (pages go out in
    # order; LOST 0): what was not stored was committed after the newest stored
    # event of its CPU, so everything older than the oldest of those is stored.
    last_cpu = {}
    for e in evs:
        last_cpu[e['cpu']] = max(last_cpu.get(e['cpu'], 0), e['ts'])
    fig['cpu_bound_ms'] = max((pts - t) / 1e6 for t in last_cpu.values())
    log('crash %d: CRASH-WINDOW K=%d: ticks stored 1..%d (%d holes), the last %d not;'
        ' newest stored tick %.2f ms, newest stored event %.2f ms before the panic'
        ' (trace clock); the ticks not stored were committed less than %.2f ms'
        ' before it; every event older than %.2f ms is stored (newest stored per'
        ' CPU: %s ms); tick gaps min/median/max %s ms'
        % (i, k, newest, fig['holes'], fig['ticks_not_stored'], fig['newest_tick_ms'],
           fig['newest_event_ms'], fig['lost_within_ms'], fig['cpu_bound_ms'],
           {c: round((pts - t) / 1e6, 2) for c, t in sorted(last_cpu.items())},
           '/'.join('%.2f' % g for g in fig['gap_ms']) if gaps else '-'))
    late = [t for t in miss if k - t >= bound]
    check(not late, 'ticks committed at least %d ms before the panic are not stored: %s'
          ' (of K=%d; newest stored %d)' % (bound, late[:10], k, newest))
    # what the replay of the dump added: without it, these would be lost
    pm = run.report('postmortem')['postmortem']
    check(pm and pm['status'] == 'recovered', 'post-mortem: %s' % pm)
    rec_ticks = [e for e in evs if e.get('recovered') and TICK.search(e['event'])]
    fig['ticks_streamed_lost'] = len(rec_ticks) + len(miss)
    fig['chains_recovered'] = sum(1 for e in evs if e.get('recovered') and
                                  CHAIN_EVENT.match(e['event']))
    fig['events_recovered'] = sum(1 for e in evs if e.get('recovered'))
    log('crash %d: RECOVERED %d events (%d ticks, %d chain events) from the dump; the'
        ' replay: %s' % (i, fig['events_recovered'], len(rec_ticks),
                         fig['chains_recovered'],
                         {x: pm.get(x) for x in ('seam_seq', 'arena_frames', 'ring_pages',
                                                 'ring_events', 'map_records',
                                                 'frames_stored', 'frames_dup',
                                                 'events_stored')}))
    check_chains(run, evs, b, 'crash', panic_ts=pts, window_ns=bound * 10**6)
    last = evs[-5:]
    for e in last:
        check(e['stack']['kind'] in ('stack_id', 'full', 'none'), 'last events: %s' % e)
    nk = sum(1 for e in evs if e['stack']['kind'] == 'stack_id')
    log('crash %d: %d events stored (%d with stack_id, all resolved), marks 1..%d all'
        ' stored (stored up to %d), last event %s'
        % (i, len(evs), nk, max(marks), max(stored_marks), evs[-1]['event'][:70]))
    return fig


def t_kill(args):
    kout, initrd = sm.build_stream(args)
    run = sm.stream_boot(args, kout, initrd, 'kill', 'steady', seconds=20, kills=2)
    b, evs, maps = common_checks(run)
    counts(run, b, evs)
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    check(unv == 0, '%d unverified' % unv)
    welcomes = re.findall(r'host WELCOME: resuming at seq (\d+) \((\d+) to resend\)', run.text())
    check(len(welcomes) == run.ha_starts, 'the guest saw %d WELCOMEs for %d host-agent starts'
          % (len(welcomes), run.ha_starts))
    check(all(int(w[0]) > 1 for w in welcomes[1:]), 'a restarted host-agent did not resume: %s'
          % welcomes)
    check_chains(run, evs, b, 'exact', guest_chains(run))
    log('host-agent started %d times; guest resumed at %s; stack kinds %s; dup frames %d;'
        ' resent (STATS) %d' % (run.ha_starts, welcomes, kinds,
                                db_sum(run, 'SELECT SUM(dup_frames) FROM streams'),
                                stat_value(run, 18)))
    run.cleanup()


# t_late's window: less than the guest's ring buffers hold when the agent starts (4 MiB
# per CPU, overflowed by then), so the hold always starts before the host comes; and
# more than twice the real guest's kallsyms (2.3 MiB), the room a module load's KSYMS
# needs while the window is held full
LATE_WINDOW_KB = 8192


def t_late(args):
    """The guest traces from boot into a small ring buffer (512 KiB per CPU) and
    overflows it before stackmap-guestd starts; host-agent starts 8 s after the
    guest streams. The agent runs with --hold-when-full and a window (LATE_WINDOW_KB)
    that those 8 s always fill, whatever the guest's rate: it must stop reading the
    rings instead of dropping frames it has read, so the only loss is the ring
    buffer's own overrun. What the ring buffer held must all be stored and resolved
    (every event the guest read, no frame lost), and what it overwrote must be
    reported as LOST, equal to the guest's own overrun count; the agent must have held
    at least once. (Frames it dropped from the window after writing them, to make room
    for a module load's KSYMS, are counted but not lost: the host has them.)"""
    kout, initrd = sm.build_stream(args)
    run = sm.stream_boot(args, kout, initrd, 'late', 'steady', seconds=12, late_s=8,
                         extra=['stackmap.e2s_delay=8',
                                'stackmap.e2s_agent=--hold-when-full,--window-kb=%d'
                                % LATE_WINDOW_KB],
                         trace=BOOT_TRACE_SMALL)
    b, evs, maps = common_checks(run)
    gs, _ = counts(run, b, evs, expect_lost=True)
    check(gs.get('overrun', 0) > 0, 'the ring buffer did not overflow before the agent'
          ' started: nothing tested about LOST')
    ex = agent_line(run.text(), r'exiting: .*?(\d+) frames dropped, \d+ resent,'
                    r' (\d+) holds on a full window', 'the exit')
    dropped, holds = int(ex.group(1)), int(ex.group(2))
    log('agent: %d holds on a full %d KiB window, %d frames dropped'
        % (holds, LATE_WINDOW_KB, dropped))
    check(holds > 0, 'the window never filled while the host was away: the hold is untested')
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    check(unv == 0, '%d unverified' % unv)
    check_chains(run, evs, b, 'lost', guest_chains(run))
    log('stack kinds %s; LOST reported %d events (guest overrun %d, dropped %d)'
        % (kinds, b['lost_events'], gs.get('overrun', 0), gs.get('dropped events', 0)))
    run.cleanup()


# The window-overflow paths (issue 12), each forced by stackmap-guestd's test hooks
# (--test-hold-drops, --test-stall) so that every run takes the path it names:
#   name: (host-agent starts late, agent options, what the drop range holds)
OVERFLOW_WINDOW_KB = 4096
OVERFLOW_PATHS = {
    # away from the start; the window drops 600+ frames: the snapshot and the
    # first EPOCH among them
    'late-overflow': (True, ['--test-hold-drops=600'], 'first-epoch'),
    # away from the start; the hold starts at the first drop: only metadata is
    # dropped, and the room kept behind the new snapshot takes the first EPOCH
    # (the path of the issue 12 failure)
    'late-overflow-meta': (True, ['--test-hold-drops=1'], 'meta-only'),
    # connected; the agent stops sending at its first EPOCH (a host that stops
    # reading), the window overflows from there
    'live-overflow': (False, ['--test-stall=first-epoch', '--test-hold-drops=1'],
                      'from-first-epoch'),
    # the same one frame later: the first EPOCH reached the host, its STACKS did not
    'live-overflow-after-epoch': (False, ['--test-stall=after-first-epoch',
                                          '--test-hold-drops=1'], 'after-first-epoch'),
}


def agent_line(text, rx, what):
    m = re.search(rx, text)
    check(m, 'no agent log line for %s (/%s/)' % (what, rx))
    return m


def t_overflow(args, name):
    """stackmap-guestd's window overflows (OVERFLOW_PATHS says which way, forced by
    its test hooks): the frames it dropped must be reported as LOST (the gap the
    host sees equal to the agent's own count when the host was away, at most that
    when it was connected), and what it still held must be stored and resolved:
    ahead of the held frames the agent sends what the host lacks, decided on every
    frame it will not get (the ones dropped to make room included): a new metadata
    snapshot if metadata was lost, the epoch in effect if map records were, and the
    whole current map after them. No frame may be refused (malformed 0: a STACKS
    frame before the stream's first EPOCH would be), every stack_id must resolve to
    the guest's own stack, and the agent's log must show the path taken."""
    late, opts, drop = OVERFLOW_PATHS[name]
    kout, initrd = sm.build_stream(args)
    run = sm.StreamRun(args, name, [
        'stackmap.e2s_trace=late', 'stackmap.e2s_mode=overflow', 'stackmap.e2s_seconds=8',
        'stackmap.e2s_agent=' + ','.join(['--window-kb=%d' % OVERFLOW_WINDOW_KB] + opts)])
    try:
        if not late:
            run.start_agent()
        proc = run.launch(initrd, kout)
        check(run.wait_marker('STREAMING', proc, 600), 'the guest never streamed')
        if late:
            check(run.wait_text(r'test hook: \d+ frames dropped', proc, 600),
                  'the window did not overflow (no test hold)')
            log('starting host-agent %.0f s after boot, the agent holding'
                % (time.time() - run.t0))
            run.start_agent()
        sm.finish_clean(run, proc)
    except BaseException:
        run.abort()
        raise
    b, evs, maps = common_checks(run)
    text = run.text()
    check('HOLD-ENDED' in run.markers(), 'the test hold never ended')
    dropped = int(agent_line(text, r'exiting: .*?(\d+) frames dropped', 'the exit').group(1))
    first_epoch = int(agent_line(text, r"the stream's first EPOCH \(epoch \d+\) is seq (\d+)",
                                 'the first EPOCH').group(1))
    g = agent_line(text, r'frames (\d+)\.\.(\d+) were dropped before the host got them'
                   r' \((\d+) of them to make room\): sending (.*?) ahead of the (\d+)'
                   r' frames held(.*)', 'the gap')
    g_from, g_to, room, ahead, tail = (int(g.group(1)), int(g.group(2)), int(g.group(3)),
                                       g.group(4), g.group(6))
    log('path %s: first EPOCH seq %d; gap %d..%d (%d to make room); ahead: %s%s;'
        ' agent dropped %d, host LOST frames %d'
        % (name, first_epoch, g_from, g_to, room, ahead, tail, dropped, b['lost_frames']))
    check(dropped > 0, 'the window did not overflow')
    check('the epoch in effect' in ahead and 'the whole stack map' in tail,
          'map records were lost but the epoch in effect / the map were not sent again')
    if late:
        w = agent_line(text, r'host resumes at (\d+) but the window starts at (\d+)',
                       'the late WELCOME')
        check(int(w.group(1)) == 1 and g_from == 1, 'the late host did not resume at 1')
        check('a new snapshot' in ahead, 'metadata was lost but no new snapshot sent')
        check(b['lost_frames'] == dropped, 'host LOST frames %d, guest dropped %d'
              % (b['lost_frames'], dropped))
        if drop == 'first-epoch':
            check(int(w.group(2)) > first_epoch, 'path %s: the window still held the'
                  ' first EPOCH (seq %d) at WELCOME (window from %s)'
                  % (name, first_epoch, w.group(2)))
        else:
            check(int(w.group(2)) <= first_epoch and room > 0 and g_to >= first_epoch,
                  'path %s: the first EPOCH (seq %d) was not dropped to make room'
                  ' (window from %s at WELCOME, gap to %d, %d to make room)'
                  % (name, first_epoch, w.group(2), g_to, room))
    else:
        check(g_from == first_epoch + (drop == 'after-first-epoch'),
              'path %s: the gap starts at %d, not at the first EPOCH (%d)%s'
              % (name, g_from, first_epoch, ' + 1' if drop == 'after-first-epoch' else ''))
        check('a new snapshot' not in ahead, 'no metadata was lost: no snapshot wanted')
        # frames written just before they were dropped may still arrive
        check(0 < b['lost_frames'] <= dropped, 'host LOST frames %d, guest dropped %d'
              % (b['lost_frames'], dropped))
    check(b['epochs'] >= 1 and b['stacks'] > 0, 'the host stored %d epochs, %d stacks'
          % (b['epochs'], b['stacks']))
    unparsed = db_sum(run, 'SELECT COUNT(*) FROM chunks WHERE nr_pages > 0 AND nr_events = 0')
    check(unparsed == 0, '%d chunks stored unparsed (pages before their formats)' % unparsed)
    gs = guest_stats(run)
    stored = db_sum(run, 'SELECT SUM(nr_events) FROM chunks')
    # late: thousands of frames dropped, pages among them; live: the drop may be the
    # EPOCH and STACKS frames alone
    check(0 < stored <= gs['read events'] and (stored < gs['read events'] or not late),
          'host stored %d ring-buffer events of the %d the guest read: want some, and'
          ' %s' % (stored, gs['read events'], 'fewer (pages were dropped)' if late
                   else 'no more'))
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    check(kinds.get('stack_id', 0) > 0, 'no stack_id event resolved after the gap')
    log('stack kinds %s; LOST frames %d; %d of the %d ring-buffer events the guest read '
        'stored' % (kinds, b['lost_frames'], stored, gs['read events']))
    run.cleanup()


def t_full(args):
    kout, initrd = sm.build_stream(args)
    # the map stays full while the agent reads it (patch 0011 would reset it: the
    # unbounded scenario tests that). The agent holds when its window is full: it
    # reads the 32 MiB boot backlog as fast as it can, and on a loaded host the
    # daemon's commits can fall behind that by more than a window (it then dropped
    # frames it had read, an unknown count of events; live-overflow tests that
    # path), where a hold leaves the loss to the ring buffer's overrun, which this
    # test counts exactly.
    run = sm.stream_boot(args, kout, initrd, 'full', 'full', seconds=15,
                         extra=['ftrace_stackmap.bits=10', 'ftrace_stackmap.auto_reset=0',
                                'stackmap.e2s_agent=--hold-when-full'],
                         trace=BOOT_TRACE_FULL)
    b, evs, maps = common_checks(run)
    # The workload is wide on purpose (> 1024 distinct stacks) and outruns the agent
    # under TCG: what the guest's ring buffer overwrote must be reported exactly.
    counts(run, b, evs, expect_lost=True)
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    st = [m for m in run.markers() if m.startswith('map: ')]
    log('guest %s' % st)
    drops = stat_value(run, 4)
    log('stack kinds %s; map drops (STATS) %d' % (kinds, drops))
    check(drops > 0, 'the map never filled (no drops): workload too narrow')
    check(kinds.get('full', 0) > 0, 'no full stack stored although the map dropped')
    check_chains(run, evs, b, 'lost', guest_chains(run))
    run.cleanup()


def t_module(args):
    """A module loaded at run time (guest-kernel/testmod), traced, unloaded while
    tracing goes on: every allocation it made is stored with its stack resolved to the
    module's own symbols ([stackmap_testmod]), also after the unload, and every other
    stack still resolves."""
    kout, initrd = sm.build_stream(args)
    run = sm.stream_boot(args, kout, initrd, 'module', 'module', seconds=12)
    b, evs, maps = common_checks(run)
    counts(run, b, evs)
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    mk = [m for m in run.markers() if m.startswith('MODULE-UNLOADED allocations=')]
    check(mk, 'the guest did not unload the module')
    want = int(mk[0].split('=')[1])
    check(want > 0, 'the module made no allocation')
    inner = 'stackmap_testmod_inner'
    # gcc may name it after a clone it made (stackmap_testmod_inner.constprop.0)
    mod = [e for e in evs if e['stack']['kind'] in ('stack_id', 'full') and
           any(host_sym(f).split('+')[0].split('.')[0] == inner
               for f in e['stack']['frames'])]
    bad = [e for e in mod if not e['event'].startswith('kmem/kmalloc') or
           not all('[stackmap_testmod]' in f['sym'] for f in e['stack']['frames']
                   if host_sym(f).split('+')[0].startswith('stackmap_testmod_'))]
    for e in bad[:5]:
        log('  MODULE MISMATCH %s: %s' % (e['event'][:60],
                                          [f['sym'] for f in e['stack']['frames']][:6]))
    check(not bad, '%d module events without [stackmap_testmod] frames' % len(bad))
    check(len(mod) == want, 'the module made %d allocations, %d stored with its stack'
          % (want, len(mod)))
    unloaded = [e['ts'] for e in evs if 'e2s-unloaded' in e['event']]
    check(unloaded, 'the trace_marker write after the unload is not stored')
    after = [e for e in evs if e['ts'] > unloaded[0] and e['stack']['kind'] == 'stack_id']
    check(after, 'no event with a stack after the unload')
    check(unv == 0, '%d unverified' % unv)
    check_chains(run, evs, b, 'exact', guest_chains(run))
    log('module: %d allocations, all stored with [stackmap_testmod] frames, e.g. %s;'
        ' %d stack_id events after the unload; stack kinds %s'
        % (want, [f['sym'] for f in mod[0]['stack']['frames']][:4], len(after), kinds))
    run.cleanup()


def t_block(args):
    """Block I/O on the virtio-blk disk (ext2, dd conv=fsync): the block layer's
    events are stored with stacks that resolve to the guest's own, through submit_bio."""
    kout, initrd = sm.build_stream(args)
    run = sm.stream_boot(args, kout, initrd, 'block', 'block', seconds=12,
                         trace=BOOT_TRACE_BLOCK, disk=True)
    b, evs, maps = common_checks(run)
    counts(run, b, evs)
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    check(unv == 0, '%d unverified' % unv)
    check([m for m in run.markers() if m.startswith('BLOCK-IO rounds=')],
          'the guest did not finish its block I/O')
    blk = {}
    for e in evs:
        name = e['event'].split(':')[0]
        if name in ('block/block_bio_queue', 'block/block_rq_issue'):
            blk.setdefault(name, []).append(e)
    log('block events stored: %s' % {k: len(v) for k, v in blk.items()})
    check(len(blk) == 2, 'not both block events stored: %s' % sorted(blk))
    nostack = [e for v in blk.values() for e in v
               if e['stack']['kind'] not in ('stack_id', 'full')]
    check(not nostack, '%d block events without a resolved stack' % len(nostack))
    via = [e for e in blk['block/block_bio_queue']
           if any(host_sym(f).startswith('submit_bio') for f in e['stack']['frames'])]
    check(via, 'no block_bio_queue stack through submit_bio*')
    fsync = [e for e in via if any('fsync' in host_sym(f) for f in e['stack']['frames'])]
    log('block: %d bio_queue stacks through submit_bio, %d of them from fsync, e.g. %s'
        % (len(via), len(fsync), [host_sym(f) for f in (fsync or via)[0]['stack']['frames']][:10]))
    check(fsync, 'no block I/O stack from an fsync')
    check_chains(run, evs, b, 'exact', guest_chains(run))
    run.cleanup()


def t_clockreset(args):
    """Loss the ring buffer's counters cannot see, provoked: before the agent starts
    the guest sets its trace clock again, which resets the ring buffer (what 6.1 does
    at late_initcall under TCG when no trace_clock= is given) and zeroes its counters.
    host-agent must report exactly the stack ids the map handed out before the reset
    as LOST (map successes against stored stack_id events), and every chain event
    fired before the reset, and none after it, must be missing."""
    kout, initrd = sm.build_stream(args)
    run = sm.stream_boot(args, kout, initrd, 'clockreset', 'clockreset', seconds=8)
    b, evs, maps = common_checks(run)
    mk = [m for m in run.markers() if m.startswith('CLOCK-RESET ')]
    check(mk, 'the guest did not reset its ring buffer')
    f = dict(x.split('=', 1) for x in mk[0].split()[1:] if '=' in x)
    lost = int(f['successes'])
    at = [int(x) for x in f['chains'].split(',')]
    log('guest before the reset: %s' % mk[0])
    check(lost > 0, 'no stack id handed out before the reset: nothing provoked')
    gs = guest_stats(run)
    stored = db_sum(run, 'SELECT SUM(nr_events) FROM chunks')
    check(gs.get('entries', 0) == 0, '%d events left unread' % gs.get('entries', 0))
    check(stored == gs['read events'], 'host stored %d, the guest read %d'
          % (stored, gs['read events']))
    check(gs.get('overrun', 0) == 0, 'the ring buffer overran: %d' % gs['overrun'])
    log('boots: lost_events %d, unseen_stack_ids %d, map successes %d (epoch %d),'
        ' stack_id events stored %d' % (b['lost_events'], b['unseen_stack_ids'],
                                         b['map_successes'], b['map_epoch'],
                                         b['stack_id_events']))
    check(b['unseen_stack_ids'] == lost and b['lost_events'] == lost,
          'the reset lost the events of %d stack ids; host-agent reports LOST %d'
          ' (unseen stack ids %d)' % (lost, b['lost_events'], b['unseen_stack_ids']))
    kinds, unv = check_events(run, evs, maps, symbol_table(kout, run))
    check(unv == 0, '%d unverified' % unv)
    guest = guest_chains(run)
    check_chains(run, evs, b, 'lost', guest)
    seqs = {c: {int(m.group(2)) for e in evs for m in [CHAIN_EVENT.match(e['event'])]
                if m and int(m.group(1)) == c} for c in range(NR_CHAINS)}
    for c in range(NR_CHAINS):
        want = set(range(at[c], guest[c]))
        check(seqs[c] == want, 'chain %d: stored %d events, want exactly seqs %d..%d'
              ' (the ones fired after the reset)' % (c, len(seqs[c]), at[c], guest[c] - 1))
    log('clockreset: LOST %d = the stack ids handed out before the reset; chain events'
        ' stored from seqs %s on, all of them' % (b['lost_events'], at))
    run.cleanup()


# What each context's crash report must show: its panic message, and a frame of the
# backtrace that only that context has (the timer callback's own frame is gone: gcc
# makes its call of stackmap_testmod_oops() a tail call; the RIP line names that).
PM_CONTEXTS = {
    'sysrq': ('Kernel panic - not syncing: sysrq triggered crash', 'sysrq_handle_crash'),
    'null': ('Kernel panic - not syncing: Fatal exception', 'testmod_crash_write'),
    'timer': ('Kernel panic - not syncing: Fatal exception in interrupt', 'call_timer_fn'),
    'panic': ('Kernel panic - not syncing: stackmap_testmod: panic on request',
              'testmod_crash_write'),
    # a soft lockup (the test module spins with preemption off), panicked by the
    # watchdog: softlockup_panic=1 watchdog_thresh=1 on this context's command line
    'lockup': ('Kernel panic - not syncing: softlockup: hung tasks', 'testmod_crash_write'),
}
PM_CMDLINE = {'lockup': ['softlockup_panic=1', 'watchdog_thresh=1']}


def core_layout(path):
    """(PT_LOAD segments [(paddr, offset, size)], VMCOREINFO {key: value}) of an ELF
    core, read here independently of host-agent's parser."""
    with open(path, 'rb') as f:
        eh = f.read(64)
        phoff, = struct.unpack_from('<Q', eh, 32)
        phnum, = struct.unpack_from('<H', eh, 56)
        f.seek(phoff)
        ph = f.read(56 * phnum)
        loads, vmci = [], {}
        for k in range(phnum):
            typ, _, off, _, paddr, filesz = struct.unpack_from('<IIQQQQ', ph, 56 * k)
            if typ == 1:
                loads.append((paddr, off, filesz))
            elif typ == 4:
                f.seek(off)
                notes, at = f.read(filesz), 0
                while at + 12 <= len(notes):
                    nsz, dsz, _ = struct.unpack_from('<III', notes, at)
                    name = notes[at + 12:at + 12 + nsz].rstrip(b'\0')
                    d0 = at + 12 + (nsz + 3) // 4 * 4
                    if name == b'VMCOREINFO':
                        for line in notes[d0:d0 + dsz].decode().split('\n'):
                            if '=' in line:
                                key, val = line.split('=', 1)
                                vmci.setdefault(key, val)
                    at = d0 + (dsz + 3) // 4 * 4
    return loads, vmci


def corrupt_checks(run, kout, core, nevs, good):
    """A real dump made hostile on purpose (the guest's memory scribbled over where
    the printk ring's structures are, a ring buffer's page list made a loop, the
    stack map's pool pointer sent into unmapped space, or the file cut short), fed
    to `host-agent recover` into the same crashed boot: each is refused or read in
    part, never a crash, the report says what could not be recovered, and every
    stored event is still there, none twice; the good dump then recovers the same
    crash report again, and adds nothing (it was all recovered at the panic)."""
    loads, vi = core_layout(core)
    slide = int(vi['KERNELOFFSET'], 16)
    nstacks = run.report('boots')[0]['stacks']

    def phys_off(pa):
        for paddr, off, size in loads:
            if paddr <= pa < paddr + size:
                return off + pa - paddr
        raise AssertionError('physical 0x%x not in the dump' % pa)

    def file_off(va):
        return phys_off(va - 0xffffffff80000000 + int(vi['NUMBER(phys_base)']))

    def u64(off):
        with open(core, 'rb') as f:
            f.seek(off)
            return struct.unpack('<Q', f.read(8))[0]

    def u32s(off, n):
        with open(core, 'rb') as f:
            f.seek(off)
            return struct.unpack('<%dI' % n, f.read(4 * n))

    # the direct map: its base is the kernel variable page_offset_base (KASLR)
    with open(os.path.join(kout, 'System.map')) as f:
        pob_sym = next(int(l.split()[0], 16) for l in f if l.split()[2:3] == ['page_offset_base'])
    pob = u64(file_off(pob_sym + slide))

    def direct_off(va):
        return phys_off(va - pob)

    # patch 0014's descriptions (field order of struct ring_buffer_dump_info and
    # struct ftrace_stackmap_dump_info)
    rbi = u32s(file_off(int(vi['SYMBOL(ring_buffer_dump_info)'], 16)), 22)
    smi = u32s(file_off(int(vi['SYMBOL(ftrace_stackmap_dump_info)'], 16)), 31)
    tr = int(vi['SYMBOL(global_trace)'], 16)
    tb = u64(file_off(tr + int(vi['OFFSET(trace_array.array_buffer)']) +
                      int(vi['OFFSET(array_buffer.buffer)'])))
    cb0 = u64(direct_off(u64(direct_off(tb + rbi[8]))))     # tb_buffers, then cpu 0
    hint = u64(direct_off(cb0 + rbi[11]))                     # cpu_head_page
    smap = u64(file_off(tr + smi[5]))                          # tr_stackmap
    cur = u64(direct_off(smap + smi[9]))                       # sm_cur
    def recover(path):
        return subprocess.run([run.args.host_agent, 'recover', path, '--state-dir',
                               run.state, '--domain-name', sm.DOMAIN],
                              capture_output=True, text=True)

    bad = core + '.bad'
    with open(core, 'rb') as f:
        prb_ptr = file_off(int(vi['SYMBOL(prb)'], 16))
        f.seek(prb_ptr)
        rb, = struct.unpack('<Q', f.read(8))
    off_rb = file_off(rb)
    cases = [
        # count_bits of the descriptor ring: 2^60 records
        ('descriptor count 2^60', off_rb + int(vi['OFFSET(prb_desc_ring.count_bits)']),
         struct.pack('<I', 60), 'partial', 'the kernel log: '),
        # the descs pointer into unmapped space
        ('descriptor array pointer wild',
         off_rb + int(vi['OFFSET(prb_desc_ring.descs)']),
         struct.pack('<Q', 0xffffc90000000000 - 4096), 'partial', 'could not be read'),
        # the prb pointer itself NULL
        ('prb NULL', prb_ptr, struct.pack('<Q', 0), 'partial', 'not mapped'),
        # cpu 0's ring: the head page hint's list pointer made a loop onto itself,
        # and its commit page moved there, so that the walk must look for the head
        # (an agent that read everything leaves the writer on the reader page)
        ('ring buffer page list loop', [(direct_off(hint + rbi[15]),
                                         struct.pack('<Q', hint + rbi[15])),
                                        (direct_off(cb0 + rbi[13]), struct.pack('<Q', hint))],
         None, 'partial', 'the ring buffers of 1 CPUs'),
        # the current map's elt pool pointer into unmapped space
        ('stack map pool pointer wild', direct_off(cur + smi[18]),
         struct.pack('<Q', 0xffffc90000000000 - 4096), 'partial', 'the stack map: '),
    ]
    for what, at, data, want_status, want_msg in cases:
        shutil.copyfile(core, bad)
        with open(bad, 'r+b') as f:
            for a, d in (at if data is None else [(at, data)]):
                f.seek(a)
                f.write(d)
        r = recover(bad)
        pm = run.report('postmortem')['postmortem']
        log('corrupted dump (%s): recover exit %d: %s; stored: %s: %s' % (
            what, r.returncode, (r.stderr or r.stdout).strip()[:160], pm['status'],
            pm['message']))
        check(r.returncode in (0, 1) and pm['status'] == want_status and
              want_msg in (pm['message'] or ''), 'corrupted dump (%s): status %s (%s),'
              ' want %s (%s)' % (what, pm['status'], pm['message'], want_status, want_msg))
    shutil.copyfile(core, bad)
    with open(bad, 'r+b') as f:
        f.truncate(os.path.getsize(core) // 2)
    r = recover(bad)
    pm = run.report('postmortem')['postmortem']
    log('truncated dump: recover exit %d: %s' % (r.returncode, r.stderr.strip()[:160]))
    check(r.returncode == 1 and pm['status'] == 'failed' and 'truncated' in pm['message'],
          'truncated dump: %s (%s)' % (pm['status'], pm['message']))
    evs = run.report('events', '-n', '100000000')['events']
    check(len(evs) == nevs, 'the stored events changed: %d, were %d' % (len(evs), nevs))
    r = recover(core)
    pm = run.report('postmortem')
    check(r.returncode == 0 and pm['postmortem']['status'] == 'recovered' and
          pm['oops_text'].rstrip('\n').split('\n') == good,
          'the good dump after the bad ones: %s' % pm['postmortem'])
    evs = run.report('events', '-n', '100000000')['events']
    stacks = run.report('boots')[0]['stacks']
    check(len(evs) == nevs and stacks == nstacks,
          'the good dump again: %d events (were %d), %d stacks (were %d)'
          % (len(evs), nevs, stacks, nstacks))
    os.unlink(bad)
    os.unlink(core)
    log('corrupted dumps: 5 scribbled and 1 truncated refused or read in part, the %d'
        ' stored events intact, the good dump recovered again, adding nothing' % nevs)


def t_postmortem(args):
    """The post-mortem of a panic: QEMU pauses the panicked guest (launch --on-panic
    pause), host-agent (--qmp) dumps its memory, recovers the kernel log into the
    crashed boot and quits QEMU. For each context of --panics (sysrq, null, timer,
    panic; CI runs one): report postmortem --json says recovered, with the context's
    panic message, and its crash report equals the console's line for line, with a
    Call Trace through the context's own function; the streamed boot is intact (ended
    crashed, no malformed frame, every stored event's chunk readable); the dump was
    deleted. Figures: GUEST_PANICKED to the post-mortem stored, the dump's time."""
    kout, initrd = sm.build_stream(args)
    figures = []
    for i, ctx in enumerate(args.panics.split(',')):
        want_panic, want_frame = PM_CONTEXTS[ctx]
        log('--- post-mortem %d: panic from %s' % (i, ctx))
        run = sm.StreamRun(args, 'postmortem-%d-%s' % (i, ctx), BOOT_TRACE + [
            'stackmap.e2s_mode=postmortem', 'stackmap.e2s_panic=' + ctx,
            'stackmap.e2s_seconds=3'] + PM_CMDLINE.get(ctx, []),
            launch_extra=['--on-panic', 'pause'])
        try:
            run.start_agent(['--dump-keep'] if i == 0 else [])
            proc = run.launch(initrd, kout)
            rc = proc.wait()
            run.stop_after_crash()
        except BaseException:
            run.abort()
            raise
        text = run.text()
        check('STACKMAP-E2E: PANIC ' + ctx in text, 'the guest did not reach the %s crash'
              ' (launch %d)' % (ctx, rc))
        b, evs, _ = common_checks(run, expect_ended='crashed')
        check(evs, 'no event stored before the crash')
        pm = run.report('postmortem')
        p = pm['postmortem']
        check(p, 'no post-mortem stored (host-agent log: %s)' % run.agent_log()[-2000:])
        log('post-mortem %d (%s): %s' % (i, ctx, json.dumps(p)))
        check(p['status'] == 'recovered', 'post-mortem %s: %s' % (p['status'], p['message']))
        check(pm['panic'] == want_panic, 'panic message %r, want %r' % (pm['panic'],
                                                                         want_panic))
        want = sm.console_crash_report(text)
        got = pm['oops_text'].rstrip('\n').split('\n')
        diff = [(j, w, g) for j, (w, g) in enumerate(zip(want, got)) if w != g][:3]
        check(want and got == want, 'the stored crash report is not the console\'s: %d'
              ' lines stored, %d on the console, first differences %s'
              % (len(got), len(want), diff))
        check(any('Call Trace:' in l for l in got), 'no Call Trace in the crash report')
        check(any(want_frame in l for l in got), 'no %s frame in the crash report'
              % want_frame)
        core = os.path.join(run.state, sm.DOMAIN + '.core')
        if i == 0:
            check(os.path.exists(core), 'the dump was not kept (--dump-keep)')
            corrupt_checks(run, kout, core, len(evs), got)
        else:
            check(not os.path.exists(core), 'the dump was not deleted')
        m = re.search(r'post-mortem of boot \d+ ready ([\d.]+) s after GUEST_PANICKED'
                      r' \(dump ([\d.]+) s\)', run.agent_log())
        rd = re.search(r'post-mortem: read (\d+) bytes of the (\d+) MiB dump in (\d+) ms',
                       run.agent_log())
        check(m and rd, 'host-agent did not log the post-mortem\'s times')
        figures.append((ctx, float(m.group(1)), float(m.group(2)), int(rd.group(1)),
                        int(rd.group(2)), int(rd.group(3)), len(got)))
        log('post-mortem %d (%s): crash report of %d lines equal to the console\'s;'
            ' %d events streamed before it; ready %.2f s after GUEST_PANICKED (dump %.2f'
            ' s), read %d bytes of the %d MiB dump in %d ms'
            % (i, ctx, len(got), len(evs), figures[-1][1], figures[-1][2],
               figures[-1][3], figures[-1][4], figures[-1][5]))
        run.cleanup()
    log('POSTMORTEM summary (context, ready s, dump s, bytes read, MiB, read ms,'
        ' report lines): %s' % figures)


# The distinct call paths of guest-kernel/patches/0012 (trace_stackmap_test.c):
# value v is fired from one stackmap_test_distinct_bit0/_bit1 frame per bit of its
# 16, most significant bit outermost.
DISTINCT_EVENT = re.compile(r'^stackmap_test/distinct: value=(\d+)$')
DISTINCT_BITS = 16
DISTINCT_NOREADER = (40000, 3000)       # stream.sh: fired before the agent starts
BOOT_TRACE_DISTINCT = [BOOT_TRACE[0] + ',stackmap_test:distinct'] + BOOT_TRACE[1:]


def distinct_value(frames):
    """The value the stack's bitN frames spell, or None."""
    bits = []
    for f in frames:
        name = host_sym(f).split('+')[0]
        if name in ('stackmap_test_distinct_bit0', 'stackmap_test_distinct_bit1'):
            bits.append(name[-1])
    if len(bits) != DISTINCT_BITS:
        return None
    return int(''.join(reversed(bits)), 2)


def map_stat(run, prefix):
    """The stack_map_stat fields of the console marker that starts with prefix."""
    m = [x for x in run.markers() if x.startswith(prefix)]
    check(m, 'no "%s" line from the guest' % prefix)
    return {k: int(v) for k, v in re.findall(r'([a-z_]+): +(\d+)', m[0])}


def unbounded_run(args, name, extra):
    """Boot with a 1024-entry map and fire 16x its capacity in distinct stacks while
    streaming (stream.sh mode unbounded). Every distinct event must be stored once,
    and every stack resolved must spell its own value. Returns
    (boot, figures, streaming-phase distinct events by stack kind)."""
    kout, initrd = sm.build_stream(args)
    n = 16384
    run = sm.stream_boot(args, kout, initrd, name, 'unbounded', seconds=1,
                         trace=BOOT_TRACE_DISTINCT,
                         extra=['ftrace_stackmap.bits=10', 'stackmap.e2s_distinct=%d' % n]
                         + extra)
    b, evs, maps = common_checks(run)
    counts(run, b, evs)
    check_events(run, evs, maps, symbol_table(kout, run))
    check_chains(run, evs, b, 'exact', guest_chains(run))
    pre = map_stat(run, 'NOREADER ')
    start = map_stat(run, 'UNBOUNDED-START ')
    end = map_stat(run, 'UNBOUNDED-END ')
    log('map without a reader: %s; streaming start %s; end %s' % (pre, start, end))
    # The seed's behaviour without a reader: the map filled and stayed full.
    check(pre['epoch'] == 0 and pre['auto_resets'] == 0,
          'the map reset itself without a reader: %s' % pre)
    check(pre['entries'] == 1024 and pre['drops'] > 0,
          'the map did not fill before the reader attached: %s' % pre)
    lo, nr = DISTINCT_NOREADER
    kinds, wrong, seen = {}, [], {}
    for e in evs:
        m = DISTINCT_EVENT.match(e['event'])
        if not m:
            continue
        v, st = int(m.group(1)), e['stack']
        seen[v] = seen.get(v, 0) + 1
        if v < n:
            kinds[st['kind']] = kinds.get(st['kind'], 0) + 1
        if st['kind'] not in ('stack_id', 'full'):
            wrong.append('value %d: stack %s' % (v, st['kind']))
        elif distinct_value(st['frames']) != v:
            wrong.append('value %d: its %s stack spells %s (epoch %s, id %s)'
                         % (v, st['kind'], distinct_value(st['frames']), st.get('epoch'),
                            st.get('stack_id')))
    for w in wrong[:20]:
        log('  MISMATCH ' + w)
    check(not wrong, '%d distinct events resolved to another stack' % len(wrong))
    want = set(range(n)) | set(range(lo, lo + nr))
    check(set(seen) == want and all(c == 1 for c in seen.values()),
          'distinct events: %d values stored, %d missing, %d stored twice'
          % (len(seen), len(want - set(seen)), sum(1 for c in seen.values() if c > 1)))
    # top and folded show one stack once, whatever epochs' ids carried it (the chains'
    # stacks are in every epoch)
    top = run.report('top', '-n', '100000000')
    frames = {}
    for e in top['stacks']:
        if e['stack']['kind'] in ('stack_id', 'full'):
            k = tuple(f['ip'] for f in e['stack']['frames'])
            frames[k] = frames.get(k, 0) + 1
    dup = sum(1 for n_ in frames.values() if n_ > 1)
    most = max((e['ids'] for e in top['stacks']), default=0)
    log('report top: %d stacks, one entry carried by the ids of %d epochs at most'
        % (len(frames), most))
    check(not dup, 'report top shows %d stacks more than once' % dup)
    check(b['epochs'] == 1 or most > 1, 'report top merged no ids of several epochs')
    folded = [l.rsplit(' ', 1)[0] for l in run.report_text('folded').splitlines() if l]
    check(len(folded) == len(set(folded)), 'report folded prints %d stacks more than once'
          % (len(folded) - len(set(folded))))
    raw, nev = [db_sum(run, 'SELECT SUM(%s) FROM chunks' % c) for c in ('raw_bytes', 'nr_events')]
    ds = end['successes_total'] - start['successes_total']
    dd = end['drops_total'] - start['drops_total']
    df = end['reset_fallbacks'] - start['reset_fallbacks']
    fig = {'distinct_stack_id': kinds.get('stack_id', 0), 'distinct_full': kinds.get('full', 0),
           'map_success_pct': 100.0 * ds / max(1, ds + dd + df), 'drops': dd,
           'reset_fallbacks': df, 'resets': end['epoch'] - start['epoch'],
           'auto_resets': end['auto_resets'], 'last_reset_us': end['last_reset_us'],
           'max_reset_us': end['max_reset_us'], 'epochs': b['epochs'],
           'rb_bytes_per_event': raw / max(1, nev), 'switch_waits': end.get('switch_waits')}
    log('FIGURES %s: %d distinct stacks fired while streaming into a 1024-entry map:'
        ' %d with a stack_id, %d full; map while streaming: %.2f%% success (%d successes,'
        ' %d drops, %d reset fallbacks), %d resets (%d automatic), last reset %d us,'
        ' longest %d us, %s put off for the reader; %d epochs stored; %.1f ring-buffer'
        ' bytes per event (whole boot)'
        % (name, n, fig['distinct_stack_id'], fig['distinct_full'], fig['map_success_pct'],
           ds, dd, df, fig['resets'], fig['auto_resets'], fig['last_reset_us'],
           fig['max_reset_us'], fig['switch_waits'], fig['epochs'], fig['rb_bytes_per_event']))
    run.cleanup()
    return b, fig, kinds


def t_unbounded(args):
    """The map resets itself while a reader streams (patch 0011): 16x its capacity in
    distinct stacks, every one deduplicated (>= 99 %) and resolved to its own stack."""
    b, fig, kinds = unbounded_run(args, 'unbounded', [])
    check(fig['auto_resets'] >= 10, 'only %d automatic resets for 16x the map\'s capacity'
          % fig['auto_resets'])
    check(b['epochs'] > 10, 'only %d epochs stored' % b['epochs'])
    check(fig['map_success_pct'] >= 99.0, 'map success rate %.2f%% while streaming, want'
          ' >= 99%%' % fig['map_success_pct'])
    check(kinds.get('stack_id', 0) >= 0.99 * 16384, 'only %d of 16384 distinct stacks'
          ' deduplicated' % kinds.get('stack_id', 0))


def t_unbounded_off(args):
    """The same with ftrace_stackmap.auto_reset=0: the map stays full with a reader
    attached, as before patch 0011 (the figures' baseline)."""
    b, fig, kinds = unbounded_run(args, 'unbounded-off', ['ftrace_stackmap.auto_reset=0'])
    check(fig['auto_resets'] == 0 and b['epochs'] == 1,
          'the map reset itself with stack_map_auto_reset 0: %s' % fig)
    check(kinds.get('full', 0) > 16384 // 2, 'only %d of 16384 distinct stacks in full'
          ' although the map was full' % kinds.get('full', 0))


def t_unbounded_poll(args):
    """By hand (figures): the map reset from user space when its counters say 3/4
    full, polled every 10 ms, which is what a guest agent could do instead."""
    unbounded_run(args, 'unbounded-poll', ['ftrace_stackmap.auto_reset=0',
                                           'stackmap.e2s_poll_reset=1'])


def t_resetbench(args):
    """By hand (figures): the latency of map resets and the events that fall back to
    full stacks while they run, without and with a delta reader attached (stream.sh
    mode resetbench), at ftrace_stackmap.bits=args.bits. --kernel-out boots another
    build-kernel output (e.g. one built from an older series, for "before")."""
    resetter = os.path.join(os.path.dirname(os.path.abspath(args.ticker)), 'e2s-resets')
    check(os.path.isfile(resetter), 'no %s (built by meson next to e2s-ticker)' % resetter)
    kout = args.kernel_out or sm.build_kernel()
    initrd = sm.build_initramfs(kout, os.path.join(args.workdir, 'initrd-resetbench.cpio.gz'), [
        (args.guestd, '/stackmap-guestd'), (args.ticker, '/e2s-ticker'),
        (resetter, '/e2s-resets'), (sm.STREAM_SH, '/scenarios/stream.sh')])
    n = 20
    run = sm.stream_boot(args, kout, initrd, 'resetbench-%d' % args.bits, 'resetbench',
                         extra=['ftrace_stackmap.bits=%d' % args.bits,
                                'stackmap.e2s_resets=%d' % n])
    b, evs, maps = common_checks(run)
    counts(run, b, evs)
    # The epochs of the resets made before the agent started were never announced
    # to anyone (no reader): their events' ids are unresolved by design. Every
    # event after them must resolve.
    nr_end = [e['ts'] for e in evs if 'e2s-resets noreader end' in e['event']]
    check(nr_end, 'the noreader end marker is not stored')
    check_events(run, [e for e in evs if e['ts'] > nr_end[0]], maps, symbol_table(kout, run))
    rows = []
    for label in ('noreader', 'reader'):
        lat = [m for m in run.markers() if m.startswith('RESETBENCH %s RESETS' % label)]
        check(lat, 'no reset figures for %s' % label)
        fig = dict(re.findall(r'(\w+)=(\d+)', lat[0]))
        bef = map_stat(run, 'RESETBENCH %s BEFORE ' % label)
        aft = map_stat(run, 'RESETBENCH %s AFTER ' % label)
        ts = {}
        for e in evs:
            m = re.search(r'e2s-resets %s (begin|end)' % label, e['event'])
            if m:
                ts[m.group(1)] = e['ts']
        check(len(ts) == 2, 'the %s markers are not stored' % label)
        inside = [e for e in evs if ts['begin'] <= e['ts'] <= ts['end']]
        full = sum(1 for e in inside if e['stack']['kind'] == 'full')
        sid = sum(1 for e in inside if e['stack']['kind'] == 'stack_id')
        kf = (aft['reset_fallbacks'] - bef['reset_fallbacks']
              if 'reset_fallbacks' in aft else None)
        rows.append((label, fig, full, sid, kf, aft.get('switches')))
        log('FIGURES resetbench bits=%d %s: %s resets, write latency median %s us, p90 %s'
            ' us, max %s us; between the markers %d events with a full stack, %d with a'
            ' stack_id (%.2f full stacks per reset); kernel reset_fallbacks %s, switches %s'
            % (args.bits, label, fig['n'], fig['median_us'], fig['p90_us'], fig['max_us'],
               full, sid, full / int(fig['n']), kf, aft.get('switches')))
    run.cleanup()


SCENARIOS = {'module': t_module, 'block': t_block, 'clockreset': t_clockreset,
             'steady': t_steady, 'resets': t_resets, 'crash': t_crash,
             'kill': t_kill, 'late': t_late, 'full': t_full, 'postmortem': t_postmortem,
             'unbounded': t_unbounded, 'unbounded-off': t_unbounded_off,
             'unbounded-poll': t_unbounded_poll, 'resetbench': t_resetbench}
SCENARIOS.update({n: (lambda args, n=n: t_overflow(args, n)) for n in OVERFLOW_PATHS})


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('scenario', choices=sorted(SCENARIOS))
    ap.add_argument('--host-agent', required=True)
    ap.add_argument('--guestd', required=True)
    ap.add_argument('--ticker', required=True,
                    help='e2s-ticker (static, built by meson: tests/e2e-stream/e2s-ticker)')
    ap.add_argument('--crash-runs', type=int, default=3, help='crashes in scenario crash')
    ap.add_argument('--panics', default='null,timer,lockup',
                    help='scenario postmortem: the panics, in order, comma-separated'
                    ' (%s; CI: null,timer,lockup: process, interrupt and watchdog'
                    ' context; scenario crash panics by sysrq-c)'
                    % ', '.join(sorted(PM_CONTEXTS)))
    ap.add_argument('--bits', type=int, default=14,
                    help='scenario resetbench: ftrace_stackmap.bits= (default 14)')
    ap.add_argument('--kernel-out', help='scenario resetbench: boot this build-kernel'
                    ' output directory instead of building the current series')
    ap.add_argument('--workdir', default='e2s-work')
    ap.add_argument('--seed', type=int, default=int(os.environ.get('E2S_SEED', '7')))
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    check_args = [a for a in (args.host_agent, args.guestd, args.ticker)
                  if not os.path.isfile(a)]
    if check_args:
        ap.error('not a file: %s' % ', '.join(check_args))
    return sm.main(args.scenario, SCENARIOS[args.scenario], args)


if __name__ == '__main__':
    sys.exit(main())
