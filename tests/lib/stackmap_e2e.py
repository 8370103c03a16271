"""stackmap_e2e: the one harness of the end-to-end drivers (tests/e2e, tests/e2e-delta,
tests/e2e-stream, tests/e2e-text, tests/e2e-export, tests/bench/retention).

meson puts this directory on PYTHONPATH for every test that uses it (tests/meson.build,
e2e_env); run a driver by hand with `PYTHONPATH=tests/lib`.

What it holds, in the order a test uses it:
  * failing: Fail (check() raises it), log(), main() (runs one test function, turns a
    Fail or meson's SIGTERM into "FAIL: ..." and exit status 1, after printing the ends
    of the newest boot's logs);
  * building: build_kernel() (guest-kernel/build-kernel, cached), build_initramfs()
    (guest-kernel/initramfs/build-initramfs, with files added: the static helpers meson
    built, scenarios from a test directory);
  * booting: Console (what the guest printed: STACKMAP-E2E markers and files sent with
    emit), Boot + launch() + boot() (a guest that runs a scenario to its end with no
    host side), StreamRun (a guest that streams with stackmap-guestd to a real
    host-agent, started and stopped by the test) and stream_boot() (the tests/e2e-stream
    scenario stream.sh);
  * the guest's ground truth: ftracetest results, the stack_map text, the boot's KASLR
    slide and a symbol table at runtime addresses.

Synchronisation is on state, never on time: a StreamRun waits for the store to hold the
guest's BYE (or the crash mark and the end of the connection), for the host-agent that
is running now (never an earlier one in the same appended log) to store frames, for a
console marker; every wait has a bound that only limits how long a broken product is
waited for, and the assertions after it are what decides.
"""

import base64
import bisect
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GK = os.path.join(ROOT, 'guest-kernel')
MARK = 'STACKMAP-E2E: '
DOMAIN = 'e2s'


# --- failing -----------------------------------------------------------------------

class Fail(Exception):
    pass


TestFailure = Fail          # the name tests/e2e used


class Interrupted(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def wait_for(pred, timeout, what, proc=None, poll=0.2):
    """Poll pred() until it returns a true value (returned) or timeout seconds pass
    (None, logged). With proc: also stop once that process has exited and pred() is
    still false."""
    end = time.time() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.time() >= end:
            log('waited %.0f s for %s: not reached' % (timeout, what))
            return None
        if proc is not None and proc.poll() is not None:
            v = pred()
            if not v:
                log('waiting for %s: the guest ended first' % what)
            return v
        time.sleep(poll)


# The newest boot: its logs are printed when the test fails (CI keeps only what the
# test prints; a rerun starts with an empty directory).
_LAST = []


def _set_last(b):
    _LAST[:] = [b]


def tail_file(path, lines=60, prefix='| '):
    try:
        with open(path, 'rb') as f:
            text = f.read().decode('utf-8', 'replace').replace('\r', '')
    except OSError as e:
        log('(%s: %s)' % (path, e))
        return
    tail = text.rstrip('\n').split('\n')[-lines:]
    log('--- last %d lines of %s' % (len(tail), path))
    for l in tail:
        log(prefix + l)


def _on_sigterm(signum, frame):
    # meson's timeout: fail like any test (guest killed, logs printed)
    raise Interrupted('killed by signal %d' % signum)


def main(name, fn, *args):
    """Run fn(*args) as the test NAME: exit status 0 when it returns, 1 when it fails
    (a Fail, or SIGTERM from meson's timeout), with the newest boot's logs printed
    and its guest and host-agent killed."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        fn(*args)
    except (Fail, Interrupted) as e:
        for b in _LAST:
            b.abort()
            b.print_tails()
        log('FAIL: %s' % e)
        return 1
    log('PASS: %s' % name)
    return 0


# --- building ----------------------------------------------------------------------

def build_kernel(unpatched=False):
    """guest-kernel/build-kernel (cached by its inputs): the output directory."""
    cmd = [os.path.join(GK, 'build-kernel')] + (['--unpatched'] if unpatched else [])
    log('$ ' + ' '.join(cmd))
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    check(out.returncode == 0, 'build-kernel failed (its stderr is above)')
    kout = out.stdout.strip().splitlines()[-1]
    check(os.path.exists(os.path.join(kout, 'bzImage')), 'build-kernel gave no bzImage')
    return kout


def kernel_guest(kout):
    """Which guest configuration kout was built for (build-kernel --guest: real,
    tiny, or config for --config), from its build-info."""
    with open(os.path.join(kout, 'build-info')) as f:
        info = dict(l.rstrip('\n').split('=', 1) for l in f if '=' in l)
    return info['guest']


def build_initramfs(kout, path, add=()):
    """build-initramfs KOUT PATH with every (file, /guest/path) of ADD installed too."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cmd = [os.path.join(GK, 'initramfs', 'build-initramfs')]
    for src, dst in add:
        check(os.path.isfile(src), 'no %s to put at %s in the initramfs' % (src, dst))
        cmd += ['--add', '%s=%s' % (src, dst)]
    rc = subprocess.run(cmd + [kout, path], check=False,
                        stdout=subprocess.DEVNULL).returncode
    check(rc == 0, 'build-initramfs failed (its stderr is above)')
    return path


# --- what the guest printed --------------------------------------------------------

class Console:
    """The guest's serial console (read again whenever it grew): the STACKMAP-E2E
    markers /init and the scenarios print (say) and the files they send (emit)."""

    def __init__(self, path):
        self.console = path
        self._size, self._text = -1, ''

    def text(self):
        try:
            size = os.path.getsize(self.console)
        except OSError:
            return ''
        if size != self._size:
            with open(self.console, 'rb') as f:
                data = f.read()
            self._size = len(data)
            self._text = data.decode('utf-8', 'replace').replace('\r', '')
        return self._text

    def lines(self):
        return self.text().split('\n')

    def markers(self):
        """What follows the marker on every line that has one."""
        return [l[l.index(MARK) + len(MARK):] for l in self.lines() if MARK in l]

    def has(self, prefix):
        return any(m.startswith(prefix) for m in self.markers())

    def has_file(self, name):
        return any(l.strip() == MARK + 'FILE-BEGIN ' + name for l in self.lines())

    def file(self, name):
        """A file the guest sent with emit: base64 between FILE-BEGIN and FILE-END
        (both required, nothing in between but base64; the last copy if sent twice)."""
        begin, end = MARK + 'FILE-BEGIN ' + name, MARK + 'FILE-END ' + name
        out, inside, got = [], False, None
        for l in self.lines():
            if l.strip() == begin:
                inside, out = True, []
            elif l.strip() == end and inside:
                inside, got = False, list(out)
            elif inside:
                out.append(l.strip())
        check(got, 'the guest did not send %s' % name)
        try:
            return base64.b64decode(''.join(got), validate=True)
        except ValueError as e:
            raise Fail('%s: not base64 (%s): a line of the console broke into it' % (name, e))

    def wait_marker(self, prefix, proc, timeout):
        return bool(wait_for(lambda: self.has(prefix), timeout,
                             'marker %s' % prefix, proc, poll=0.5))

    def wait_text(self, rx, proc, timeout):
        return bool(wait_for(lambda: re.search(rx, self.text()), timeout,
                             '/%s/ on the console' % rx, proc, poll=0.5))


def launch_cmd(kout, initrd, console, scenario, append=(), timeout=900, smp=None,
               extra=()):
    cmd = [os.path.join(GK, 'launch'), '--kernel', os.path.join(kout, 'bzImage'),
           '--initrd', initrd, '--scenario', scenario, '--console', console,
           '--timeout', str(timeout)] + (['--smp', str(smp)] if smp else []) + list(extra)
    for a in append:
        cmd += ['--append', a]
    return cmd


class Boot(Console):
    """One guest boot that ran a scenario with no host side: its console and
    launch's exit status."""

    def __init__(self, console, rc=None):
        super().__init__(console)
        self.console_path = console
        self.rc = rc

    def abort(self):
        pass

    def print_tails(self):
        tail_file(self.console, 40, '  > ')


def launch(kout, initrd, workdir, scenario, append=(), timeout=900, smp=2, tag=None):
    """Boot KOUT with INITRD and run SCENARIO to its end: the Boot."""
    console = os.path.join(workdir, 'console-%s.log' % (tag or scenario))
    cmd = launch_cmd(kout, initrd, console, scenario, append, timeout, smp)
    log('$ ' + ' '.join(cmd))
    b = Boot(console)
    _set_last(b)
    b.rc = subprocess.run(cmd, check=False).returncode
    log('launch exited with %d' % b.rc)
    return b


def boot(kout, initrd, workdir, scenario, append=(), timeout=900, smp=2, tag=None,
         port=True):
    """launch(), then the checks every clean boot must pass: QEMU exited 0, the
    scenario ended with rc=0, no kernel warning, KASLR on, and (port) the guest has
    the virtio-serial port org.stackmap.0."""
    run = launch(kout, initrd, workdir, scenario, append, timeout, smp, tag)
    console = run.console_path
    for m in run.markers():
        if not m.startswith('FILE-'):
            log('  guest: ' + m)
    check(run.rc == 0, 'QEMU exited with %d (console: %s)' % (run.rc, console))
    check(run.has('END %s rc=0' % scenario),
          'scenario %s did not end with rc=0 (console: %s)' % (scenario, console))
    check(not run.has('KERNEL-WARNINGS'),
          'the guest kernel logged warnings (console: %s)' % console)
    if port:
        check(run.has('PORT org.stackmap.0 /dev/vport'),
              'the guest has no virtio-serial port named org.stackmap.0')
    cmdline = [l for l in run.lines() if 'Command line:' in l]
    check(cmdline and 'nokaslr' not in cmdline[0], 'KASLR is off: %s' % cmdline[:1])
    check('KASLR disabled' not in run.text(), 'the kernel disabled KASLR')
    return run


def marker_fields(run, name):
    """The key=value fields of the last "NAME k=v ..." marker."""
    for m in reversed(run.markers()):
        if m.startswith(name + ' '):
            return dict(kv.split('=', 1) for kv in m.split()[1:] if '=' in kv)
    raise Fail('the guest did not report %s' % name)


# --- ftracetest --------------------------------------------------------------------

RESULTS = ('PASS', 'FAIL', 'UNRESOLVED', 'UNTESTED', 'UNSUPPORTED', 'XFAIL',
           'UNDEFINED')
SEED_TESTS = ['test.d/ftrace/stackmap-basic.tc',
              'test.d/ftrace/stackmap-reset.tc',
              'test.d/ftrace/stackmap-instance-gate.tc']
ANSI = re.compile(r'\x1b\[[0-9;]*[mK]')
CASE = re.compile(r'^\[(\d+)\](.*?)\s*\[(%s)\]\s*$' % '|'.join(RESULTS))


class Results(dict):
    """{description: result}, and the boot (.run) they came from."""

    def __init__(self, run):
        super().__init__()
        self.run = run


def ftracetest_results(run):
    """{description: result} from the "[N] desc [RESULT]" lines of ftracetest.log,
    which the guest sends after the run."""
    res = Results(run)
    for l in run.file('ftracetest.log').decode('utf-8', 'replace').split('\n'):
        m = CASE.match(ANSI.sub('', l).strip())
        if m:
            res[m.group(2).strip()] = m.group(3)
    return res


def summary(res):
    counts = {}
    for r in res.values():
        counts[r] = counts.get(r, 0) + 1
    return ', '.join('%s %d' % (k, counts[k]) for k in RESULTS if k in counts)


def case_log(run, desc):
    """What ftracetest -v printed of the case DESC after its result line (the log of
    a case that did not pass)."""
    out, inside = [], False
    for l in run.lines():
        plain = ANSI.sub('', l).strip()
        m = CASE.match(plain)
        if m:
            if inside:
                break
            inside = m.group(2).strip() == desc and m.group(3) != 'PASS'
            continue
        if inside:
            out.append(plain)
    return out


def run_ftracetest(kout, initrd, workdir, tests, tag, append=(), options=None,
                   timeout=900):
    """Boot the ftracetest scenario on TESTS: {description: result}. OPTIONS, if
    given, is {option: '0'/'1'} the run must start with (the guest reports
    options/NAME first)."""
    run = boot(kout, initrd, workdir, 'ftracetest',
               append=['stackmap.tests=' + ','.join(tests)] + list(append),
               timeout=timeout, tag=tag)
    for o, v in (options or {}).items():
        check(run.has('FTRACETEST-OPTION %s=%s' % (o, v)),
              'ftracetest did not start with options/%s=%s (console: %s)'
              % (o, v, run.console_path))
    check(run.has('FTRACETEST-DONE'), 'ftracetest did not finish')
    res = ftracetest_results(run)
    check(res, 'no ftracetest results on the console')
    log('ftracetest: ' + summary(res))
    for desc, r in sorted(res.items()):
        log('  %-11s %s' % (r, desc))
    return res


# --- stacks and symbols ------------------------------------------------------------

# "%pS": "func+0xoff/0xsize", and " [module]" after it for a module's text
PS_FRAME = re.compile(r'^  \[(\d+)\] (\S+)(?: \[(\S+)\])?$')
PS_HEAD = re.compile(r'^stack_id (\d+) \[ref (\d+), depth (\d+)\]$')


def parse_stack_map(text):
    """{id: (ref, depth, [symbol+off/size ...])} from the stack_map text."""
    stacks, cur = {}, None
    for l in text.split('\n'):
        m = PS_HEAD.match(l)
        if m:
            cur = int(m.group(1))
            stacks[cur] = (int(m.group(2)), int(m.group(3)), [])
            continue
        m = PS_FRAME.match(l)
        if m and cur is not None:
            stacks[cur][2].append(m.group(2))
    return stacks


def kaslr_slide(kout, markers):
    """The boot's KASLR offset: its runtime _text (/init's "TEXT" marker, read from
    the guest's /proc/kallsyms) minus System.map's."""
    text = [m.split()[1] for m in markers if m.startswith('TEXT ')]
    check(text and re.match(r'^[0-9a-f]{16}$', text[0]),
          'the guest did not say where its _text is (TEXT marker): %s' % text)
    with open(os.path.join(kout, 'System.map')) as f:
        link = [int(l.split()[0], 16) for l in f if l.split()[2:3] == ['_text']]
    check(link, 'no _text in System.map')
    return int(text[0], 16) - link[0]


class SymbolTable:
    """Text symbols of one boot at their runtime addresses: System.map moved by the
    boot's KASLR slide, plus module symbols from the guest's /proc/kallsyms lines."""

    def __init__(self, system_map, slide=0):
        syms = []
        with open(system_map) as f:
            for l in f:
                a, t, n = l.split()[:3]
                if t in 'tTwW':
                    syms.append(((int(a, 16) + slide) & (2**64 - 1), n))
        self.slide = slide
        self._set(syms)

    def _set(self, syms):
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def add_kallsyms(self, text):
        """Add the text symbols of modules ("ADDR t NAME [MODULE]" lines)."""
        syms = list(zip(self.addrs, self.names))
        for l in text.split('\n'):
            f = l.split()
            if len(f) == 4 and f[1] in 'tTwW' and f[3].startswith('['):
                syms.append((int(f[0], 16), f[2]))
        self._set(syms)

    def sym_offs(self, addr):
        """Every "name+0xoff" rendering of addr (aliases share an address)."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return set()
        base, out = self.addrs[i], set()
        while i >= 0 and self.addrs[i] == base:
            out.add('%s+0x%x' % (self.names[i], addr - base))
            i -= 1
        return out


# --- a guest streaming to host-agent -----------------------------------------------

# host-agent's log line (ingest) once a stream that ended without BYE (the guest's
# side closed: QEMU exited after a panic) has its last batch stored.
# how a connection of a boot that ended without BYE closes: plainly, or after the
# post-mortem retired it (host-agent --qmp with --on-panic pause)
CONN_END = re.compile(r'disconnected without BYE|closed after its post-mortem')


class StreamRun(Console):
    """One guest boot with host-agent storing its stream: WORKDIR/NAME holds the
    console, host-agent.log (appended by every host-agent started), launch.log and the
    store (state/). args: host_agent, workdir."""

    def __init__(self, args, name, append, qemu_timeout=700, disk=False,
                 scenario='stream', launch_extra=()):
        self.args, self.name = args, name
        self.disk = disk
        self.dir = os.path.join(args.workdir, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        super().__init__(os.path.join(self.dir, 'console.log'))
        self.state = os.path.join(self.dir, 'state')
        os.makedirs(self.state)
        self.tmp = tempfile.mkdtemp(prefix='e2s.')   # short path for sockets
        self.sock = os.path.join(self.tmp, 'port.sock')
        self.qmp = os.path.join(self.tmp, 'qmp.sock')
        self.ha_log = os.path.join(self.dir, 'host-agent.log')
        self.append = append
        self.qemu_timeout = qemu_timeout
        self.scenario = scenario
        self.launch_extra = list(launch_extra)
        self.ha = None
        self.ha_cpu = 0.0
        self.ha_starts = 0
        self.ha_log_from = 0     # where the running host-agent's lines start
        self.proc = None
        _set_last(self)

    # host-agent

    def start_agent(self, extra=()):
        logf = open(self.ha_log, 'a')
        self.ha_log_from = logf.tell()
        self.ha_starts += 1
        self.ha = subprocess.Popen(
            [self.args.host_agent, '--socket', self.sock, '--qmp', self.qmp,
             '--state-dir', self.state, '--domain-name', DOMAIN] + list(extra),
            stdout=logf, stderr=logf)
        logf.close()

    def reap_agent(self, sig):
        if self.ha is None:
            return
        if self.ha.poll() is None:
            self.ha.send_signal(sig)
        try:
            _, status, ru = os.wait4(self.ha.pid, 0)
            self.ha.returncode = status
        except ChildProcessError:
            ru = None
        if ru:
            self.ha_cpu += ru.ru_utime + ru.ru_stime
        self.ha = None

    def agent_log(self):
        """What the host-agent running now (or the last one) logged: not the lines of
        the ones before it in the same appended file."""
        try:
            with open(self.ha_log, 'rb') as f:
                f.seek(self.ha_log_from)
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''

    # the guest

    def launch(self, initrd, kout):
        cmd = launch_cmd(kout, initrd, self.console, self.scenario, self.append,
                         self.qemu_timeout,
                         extra=['--socket', self.sock, '--qmp', self.qmp] +
                         (['--disk', 'new'] if self.disk else []) + self.launch_extra)
        self.t0 = time.time()
        with open(os.path.join(self.dir, 'launch.log'), 'w') as err:
            self.proc = subprocess.Popen(cmd, start_new_session=True, stderr=err)
        return self.proc

    def kill_guest(self):
        p = self.proc
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()

    def abort(self):
        self.kill_guest()
        if self.ha is not None:
            self.reap_agent(signal.SIGKILL)

    def print_tails(self):
        for path in (self.console, self.ha_log):
            tail_file(path)

    # the store

    def db(self):
        return os.path.join(self.state, DOMAIN + '.db')

    def query(self, sql, args=()):
        """Rows of SQL on the store (the test's own connection, while host-agent may
        be writing it); a store that does not exist is a failure."""
        check(os.path.exists(self.db()), 'no store at %s' % self.db())
        c = sqlite3.connect(self.db(), timeout=30)
        try:
            return c.execute(sql, args).fetchall()
        finally:
            c.close()

    def _peek(self, sql):
        """query() for a wait: None while there is no store or it is not readable yet
        (no tables, busy)."""
        if not os.path.exists(self.db()):
            return None
        try:
            r = self.query(sql)
        except sqlite3.Error:
            return None
        return r[0][0] if r else None

    def stored_seq(self):
        """The highest frame seq the store holds of any stream (0: none)."""
        return self._peek('SELECT MAX(next_seq) - 1 FROM streams') or 0

    def boot_ended(self):
        return self._peek('SELECT ended FROM boots ORDER BY id DESC LIMIT 1')

    def wait_stored_beyond(self, seq, timeout=300):
        """Until the running host-agent has stored frames past SEQ (its first commit
        after it resumed there): the new stored seq, or None."""
        return wait_for(lambda: self.stored_seq() > seq and self.stored_seq(), timeout,
                        'host-agent to store frames past seq %d' % seq, self.proc)

    def stop_after_bye(self, timeout=120):
        """The guest is gone (QEMU exited) after its agent said BYE: wait until the
        store holds the BYE (ended 'clean': every frame before it is stored, as they
        are applied in order), then SIGTERM host-agent."""
        wait_for(lambda: self.boot_ended() == 'clean', timeout, 'the stored BYE')
        self.reap_agent(signal.SIGTERM)

    def stop_after_crash(self, timeout=120):
        """The guest panicked and QEMU exited: wait until the store marks the boot
        crashed (QMP GUEST_PANICKED) and the running host-agent has read its
        connection to the end, then SIGTERM host-agent."""
        wait_for(lambda: self.boot_ended() == 'crashed', timeout, 'the crash mark')
        wait_for(lambda: CONN_END.search(self.agent_log()), timeout,
                 'host-agent to read the connection to its end (/%s/ in its log)'
                 % CONN_END.pattern)
        self.reap_agent(signal.SIGTERM)

    def report(self, *what):
        r = subprocess.run([self.args.host_agent, 'report', *what, '--json',
                            '--state-dir', self.state, '--domain-name', DOMAIN],
                           capture_output=True, text=True)
        check(r.returncode == 0, 'report %s failed: %s' % (' '.join(what), r.stderr))
        return json.loads(r.stdout)

    def report_text(self, *what):
        r = subprocess.run([self.args.host_agent, 'report', *what, '--state-dir',
                            self.state, '--domain-name', DOMAIN],
                           capture_output=True, text=True)
        check(r.returncode == 0, 'report %s failed: %s' % (' '.join(what), r.stderr))
        return r.stdout

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


# --- tests/e2e-stream's scenario (stream.sh) ---------------------------------------

STREAM_SH = os.path.join(ROOT, 'tests', 'e2e-stream', 'stream.sh')
# 32 MiB per CPU: tracing runs from boot and nothing resets the buffer (launch sets the
# trace clock), so everything the boot recorded before stackmap-guestd starts (about
# 230,000 ring-buffer events, most on one CPU, measured under TCG) must fit.
BOOT_TRACE = ['trace_event=kmem:kmalloc,kmem:kmem_cache_alloc,stackmap_test:chain',
              'trace_options=stackmap,stacktrace', 'trace_buf_size=32M']


def build_stream(args):
    """The kernel and an initramfs for stream.sh (with stackmap-guestd and
    e2s-ticker, both built by meson): (kout, initrd). args: guestd, ticker, workdir."""
    kout = build_kernel()
    initrd = build_initramfs(kout, os.path.join(args.workdir, 'initrd.cpio.gz'), [
        (args.guestd, '/stackmap-guestd'), (args.ticker, '/e2s-ticker'),
        (STREAM_SH, '/scenarios/stream.sh')])
    return kout, initrd


def finish_clean(run, proc):
    """The guest ran its scenario to the end: stop host-agent once the store holds the
    BYE, and check the guest's side ended well."""
    rc = proc.wait()
    run.stop_after_bye()
    log('launch exit %d, guest time %.0f s' % (rc, time.time() - run.t0))
    mk = run.markers()
    check(rc == 0, 'launch exited %d (console %s)' % (rc, run.console))
    check('E2S DONE' in mk, 'the guest scenario did not finish')
    check('KERNEL-WARNINGS' not in mk, 'kernel warnings in the guest')
    check(not [m for m in mk if m.startswith('CHAINS-FAIL')], 'the chain emitter failed')
    check('AGENT_EXIT 0' in mk, 'stackmap-guestd did not exit 0: %s'
          % [m for m in mk if m.startswith('AGENT_EXIT')])


def integrity(run):
    r = run.query('PRAGMA integrity_check')
    check(r == [('ok',)], 'integrity_check: %r' % r)


def stream_boot(args, kout, initrd, name, mode, extra=(), seconds=15, late_s=0,
                kills=0, trace=BOOT_TRACE, disk=False):
    """Boot stream.sh in MODE (stackmap.e2s_mode) with host-agent storing its stream,
    to the end (finish_clean): the StreamRun.
      late_s  host-agent starts this long after the guest streams (the guest's agent
              keeps what the host has not acknowledged meanwhile)
      kills   host-agent is killed -9 this often while the guest streams, each time
              once it stored frames past where it started, and started again once the
              guest saw it go"""
    run = StreamRun(args, name, trace + ['stackmap.e2s_mode=' + mode,
                                         'stackmap.e2s_seconds=%d' % seconds] + list(extra),
                    disk=disk)
    try:
        if not late_s:
            run.start_agent()
        proc = run.launch(initrd, kout)
        if late_s:
            check(run.wait_marker('STREAMING', proc, 600), 'the guest never streamed')
            time.sleep(late_s)
            log('starting host-agent %.0f s after boot' % (time.time() - run.t0))
            run.start_agent()
        if kills:
            check(run.wait_marker('STREAMING', proc, 600), 'the guest never streamed')
        for k in range(kills):
            start = run.stored_seq()
            got = run.wait_stored_beyond(start)
            check(got, 'host-agent (start %d) stored nothing past seq %d'
                  % (run.ha_starts, start))
            log('kill -9 host-agent (pid %d), the store at seq %d' % (run.ha.pid, got))
            gone = len(re.findall(r'stackmap-guestd: \w+: host disconnected', run.text()))
            run.reap_agent(signal.SIGKILL)
            integrity(run)
            check(wait_for(lambda: len(re.findall(r'stackmap-guestd: \w+: host disconnected',
                                                  run.text())) > gone,
                           120, 'the guest to see host-agent go', proc, poll=0.2),
                  'the guest did not see host-agent go (no "host disconnected")')
            run.start_agent()
        finish_clean(run, proc)
        return run
    except BaseException:
        run.abort()
        raise


KLINE = re.compile(r'^\[ *\d+\.\d{6}\] ')
# The first line of a crash report on the console, as report postmortem starts it.
CRASH_FIRST = re.compile(r'^\[ *\d+\.\d{6}\] (sysrq: Trigger a crash|BUG: |Oops|'
                         r'general protection fault|watchdog: BUG: soft lockup|'
                         r'Kernel panic - not syncing)')


def console_crash_report(text):
    """The console's kernel lines of the last crash report: from the first line of the
    burst that starts it (CRASH_FIRST, the first after the last "PANIC" marker when
    there is one) to the panic's "---[ end Kernel panic" line, as report postmortem
    --json's oops_text has them. [] when there is none."""
    lines = [l for l in text.replace('\r', '').split('\n') if KLINE.match(l)]
    mark = [i for i, l in enumerate(lines) if 'STACKMAP-E2E: PANIC' in l]
    lo = mark[-1] + 1 if mark else 0
    first = [i for i in range(lo, len(lines)) if CRASH_FIRST.match(lines[i])]
    if not first:
        return []
    out = []
    for l in lines[first[0]:]:
        out.append(l)
        if '---[ end Kernel panic' in l:
            break
    return out
