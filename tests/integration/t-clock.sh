# Host time (PROTOCOL.md 4.11): a guest that offers TIME is probed while it streams;
# every stored sample brackets the synthetic trace clock the guest used (its own log is
# the ground truth); the probe markers are not traced events; an old guest is never
# probed and its boot simply has no samples.
. "$1"
OFF=1000000000000
start_daemon --listen "$T/sock" --domain-name clk --time-probe-ms 50
"$SYNTH_GUEST" --connect "$T/sock" --events 20000 --cpus 2 --seed 3 --answer-time \
	--time-offset-ns $OFF --time-drift-ppm 300 --time-ms 4500 --time-log "$T/time.log" \
	--expect "$T/expect" -q >"$T/guest.out" || fail "synth-guest --answer-time"
wait_for daemon_says "BYE" || fail "no BYE"
stop_daemon || fail "daemon exit status"
db=$(db_of clk)
integrity_ok "$db"
answered=$(wc -l <"$T/time.log")
[ "$answered" -ge 20 ] || fail "only $answered probes answered in 4.5 s at 50 ms"
res=$("$SQLITE3" -separator ' ' "$db" <<SQL
CREATE TEMP TABLE truth(id INTEGER, g INTEGER, m INTEGER);
.import $T/time.log truth
SELECT (SELECT count(*) FROM clock_samples),
       (SELECT count(*) FROM clock_samples s JOIN truth t ON s.guest_ts = t.g
         WHERE t.m BETWEEN s.mono_lo AND s.mono_hi AND s.cpu = 2),
       (SELECT count(*) FROM clock_samples WHERE real_hi < real_lo OR mono_hi < mono_lo),
       (SELECT max(mono_hi - mono_lo) FROM clock_samples),
       (SELECT min(mono_hi - mono_lo) FROM clock_samples);
SQL
) || fail "sqlite3"
read -r n good bad maxrtt minrtt <<<"$res"
# Probes answered while the stream ends may miss their commit: all but a few are stored.
[ "$n" -ge $((answered - 3)) ] || fail "$n samples stored of $answered answered"
[ "$good" = "$n" ] || fail "only $good of $n samples bracket the guest's clock ($res)"
[ "$bad" = 0 ] || fail "$bad samples with hi < lo"
echo "# $n samples, round trip $minrtt..$maxrtt ns"
ok "$n clock samples stored, each bracketing the guest's trace clock"

grep -q "clock probes, $n samples" "$T/daemon.log" || fail "no clock summary line"
compare_folded clk "$T/expect"
ev=$(report events --domain-name clk -n 1000000) || fail "report events"
if grep -q "stackmap-time" <<<"$ev"; then fail "probe markers shown as events"; fi
b=$(report boots --json --domain-name clk)
[ "$(json_field "$b" events)" = 20000 ] || fail "markers counted as traced events: $b"
[ "$(json_field "$b" host_time_points)" -ge 1 ] || fail "boots: no host time points: $b"
ok "probe markers are not traced events"

# report events --host-time: every event's host time, on the guest's clock's terms
# (trace clock = mono + OFF, 300 ppm fast: a few ms over the run), with its uncertainty.
report events --domain-name clk --host-time mono --json -n 100000 >"$T/ev.json" ||
	fail "report events --host-time"
python3 - "$T/ev.json" $OFF <<'PY' || fail "host times off"
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
off = int(sys.argv[2])
assert len(ev) == 20000, len(ev)
worst = max(abs(e["host_time"]["ns"] - (e["ts"] - off)) for e in ev)
unc = max(e["host_time"]["uncertainty_ns"] for e in ev)
assert all(e["host_time"]["clock"] == "mono" for e in ev)
assert worst < 5000000, worst
assert 0 < unc < 50000000, unc
print("# host time - (guest - offset): at most %d ns; uncertainty at most %d ns" % (worst, unc))
PY
ok "report events --host-time mono: each event's host time and uncertainty"

# export --host-time: TRACEID + TIME_SHIFT, which Debian's trace-cmd applies: its
# timestamps are report's host times; merged with another file on one time line.
"$HOST_AGENT" export trace.dat --state-dir "$T/state" --domain-name clk -o "$T/g.dat" \
	--host-time mono 2>"$T/export.err" || fail "export --host-time: $(cat "$T/export.err")"
grep -q "TIME_SHIFT to host mono: [0-9]* samples" "$T/export.err" || fail "no TIME_SHIFT line"
# --host-trace-id: the host recording's TRACEID becomes TIME_SHIFT's peer
"$HOST_AGENT" export trace.dat --state-dir "$T/state" --domain-name clk -o "$T/p.dat" \
	--host-time mono --host-trace-id 0x1234ABCDEF567890 2>/dev/null || fail "export --host-trace-id"
trace-cmd dump --options -i "$T/p.dat" 2>&1 | grep -q "^0x1234ABCDEF567890 \[peer's trace id\]" ||
	fail "TIME_SHIFT's peer trace id not the one given"
"$HOST_AGENT" export trace.dat --state-dir "$T/state" --domain-name clk -o "$T/p2.dat" \
	--host-trace-id 12zz 2>/dev/null && fail "--host-trace-id 12zz (and no --host-time) accepted"
"$HOST_AGENT" export trace.dat --state-dir "$T/state" --domain-name clk -o "$T/raw.dat" \
	--dat-version 6 2>/dev/null || fail "export"
trace-cmd report -t -i "$T/g.dat" >"$T/g.txt" 2>"$T/tc.err" || fail "trace-cmd report"
[ ! -s "$T/tc.err" ] || fail "trace-cmd warned: $(head -3 "$T/tc.err")"
trace-cmd report -t -i "$T/raw.dat" -i "$T/g.dat" >"$T/merged.txt" 2>"$T/tc.err" ||
	fail "trace-cmd report -i -i"
[ ! -s "$T/tc.err" ] || fail "trace-cmd warned (merge): $(head -3 "$T/tc.err")"
python3 - "$T/ev.json" "$T/g.txt" "$T/merged.txt" <<'PY' || fail "trace-cmd times"
import json, re, sys
host = sorted(e["host_time"]["ns"] for e in json.load(open(sys.argv[1]))["events"])
line = re.compile(r"\[(\d+)\]\s+(\d+)\.(\d{9}): kmalloc:")
def stamps(path, prefix=None):
    out = []
    for l in open(path):
        if prefix is not None and not l.lstrip().startswith(prefix):
            continue
        m = line.search(l)
        if m:
            out.append(int(m.group(2)) * 10**9 + int(m.group(3)))
    return out
tc = sorted(stamps(sys.argv[2]))
assert len(tc) == len(host), (len(tc), len(host))
d = max(abs(a - b) for a, b in zip(tc, host))
assert d <= 2, d
merged = stamps(sys.argv[3])
g = stamps(sys.argv[3], "g.dat:")
r = stamps(sys.argv[3], "raw.dat:")
assert len(g) == len(r) == len(host), (len(g), len(r))
assert merged == sorted(merged), "merge not in time order"
assert sorted(g) == tc, "merged g.dat events not shifted"
print("# trace-cmd's shifted timestamps = report's host times within %d ns" % d)
PY
ok "trace-cmd applies TIME_SHIFT (report's host times) and merges on one time line"
bash "$(dirname "$1")/../e2e-export/kshark-load.sh" "$T/g.dat" "$T/kshark.png" >"$T/ks.out" 2>&1 ||
	fail "KernelShark did not load the TIME_SHIFT file: $(tail -3 "$T/ks.out")"
ok "KernelShark loads the file with TIME_SHIFT"

# A guest without TIME in its HELLO (an older agent) is never probed.
start_daemon --listen "$T/sock2" --domain-name old --time-probe-ms 50
"$SYNTH_GUEST" --connect "$T/sock2" --events 20000 --seed 4 --throttle-us 100 \
	--expect "$T/expect2" -q >/dev/null || fail "synth-guest without TIME"
wait_for daemon_says "BYE" || fail "no BYE (old guest)"
stop_daemon
[ "$("$SQLITE3" "$(db_of old)" "SELECT count(*) FROM clock_samples")" = 0 ] ||
	fail "samples for a guest that never offered TIME"
compare_folded old "$T/expect2"
[ "$(json_field "$(report boots --json --domain-name old)" host_time_points)" = 0 ] ||
	fail "boots: host time points for the old guest"
report events --domain-name old --host-time mono -n 3 >/dev/null 2>"$T/old.err" ||
	fail "report events --host-time on a boot without samples"
grep -q "has no host time" "$T/old.err" || fail "no note about the missing host time"
if "$HOST_AGENT" export trace.dat --state-dir "$T/state" --domain-name old -o "$T/o.dat" \
	--host-time mono 2>"$T/old.err"; then fail "export --host-time without samples"; fi
grep -q "has no host time" "$T/old.err" || fail "export: $(cat "$T/old.err")"
[ "$(grep -c "clock probes" "$T/daemon.log")" = 1 ] || fail "the old guest was probed"
ok "a guest without TIME: no probes, nothing else changes"
