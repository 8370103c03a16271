# A FORMAT the host refuses, end to end (issue 21): the guest sends, among its real
# formats, one on which libtraceevent 1.7's parser crashes (synth-guest
# --refused-format), and every 10th traced event is of that type, each with its stack.
# The daemon survives, logs and counts the refusal, stores the text as refused; no event
# is silently missing: `events` names the refused ones as such, `top` says so on stderr,
# and every event, refused or not, keeps the stack the guest gave it.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
"$SYNTH_GUEST" --connect "$T/sock" --events 4000 --seed 41 --refused-format 10 \
	--expect "$T/expect" --expect-events "$T/truth" --expect-refused "$T/refused" -q \
	>/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
kill -0 "$DAEMON_PID" || fail "daemon died on the refused format"
grep -q "malformed FORMAT frame seq [0-9]* .*format of synth/crashy refused: libtraceevent's parser died on it in the sandbox" \
	"$T/daemon.log" || fail "no log line for the refused format"
ok "$(grep -m1 "synth/crashy refused" "$T/daemon.log" | sed 's/.*dropped: //')"
# the daemon still serves: a second guest (another boot) after it
"$SYNTH_GUEST" --connect "$T/sock" --events 500 --seed 42 -q >/dev/null || fail "second guest"
stop_daemon
db=$(db_of vm1)
integrity_ok "$db"
boot=$("$SQLITE3" "$db" "SELECT boot FROM texts WHERE kind = 'format-refused' AND name = 'synth/crashy'")
[ -n "$boot" ] || fail "the refused text is not stored as format-refused"
[ "$("$SQLITE3" "$db" "SELECT COUNT(*) FROM texts WHERE boot = $boot AND kind = 'format' AND name = 'synth/crashy'")" = 0 ] ||
	fail "the refused text is stored as a format"
m=$("$SQLITE3" "$db" "SELECT SUM(malformed) FROM streams WHERE boot = $boot")
[ "$m" = 1 ] || fail "malformed count $m, not 1"
report boots --json --boot "$boot" --domain-name vm1 | python3 -c '
import json,sys; b=json.load(sys.stdin)[0]; assert b["malformed"]==1, b' ||
	fail "boots: malformed not 1"
compare_folded vm1 "$T/expect" "$boot"

report top --json --boot "$boot" --domain-name vm1 >"$T/top" 2>"$T/top.err" || fail "top"
grep -q "boot $boot: the host refused 1 event format(s) (synth/crashy)" "$T/top.err" ||
	{ cat "$T/top.err"; fail "top: no note of the refused format"; }
report events -n 100000000 --json --boot "$boot" --domain-name vm1 >"$T/events" 2>"$T/ev.err" ||
	fail "events"
report events -n 100000000 --json --event synth/crashy --boot "$boot" --domain-name vm1 \
	>"$T/events.refused" || fail "events --event synth/crashy"
python3 - "$T/top" "$T/events" "$T/events.refused" "$T/truth" "$T/refused" <<'PY' || fail "reports"
import json, re, sys
top = json.load(open(sys.argv[1]))
evs = json.load(open(sys.argv[2]))["events"]
only = json.load(open(sys.argv[3]))["events"]
truth = dict(l.split(" ", 1) for l in open(sys.argv[4]).read().splitlines())
refused = set(open(sys.argv[5]).read().split())
assert len(refused) >= 300, len(refused)
assert top["events"] == len(evs) == len(truth), (top["events"], len(evs), len(truth))
def folded(st):
    return ";".join(re.sub(r"\+0x.*", "", f["sym"]) for f in reversed(st["frames"]))
seen = 0
for e in evs:
    ts = str(e["ts"])
    assert ts in truth, ts
    want = truth[ts]
    got = folded(e["stack"]) if e["stack"]["frames"] else "[no stack]"
    assert got == want, (ts, e["event"], got, want)
    if ts in refused:
        seen += 1
        assert e["event"] == ("synth/crashy: <event type 900 of a format the host"
                              " refused: fields not decoded>"), e["event"]
    else:
        assert e["event"].startswith("kmem/kmalloc: call_site=synth"), e["event"]
assert seen == len(refused), (seen, len(refused))
assert sorted(str(e["ts"]) for e in only) == sorted(refused), len(only)
print("%d events, %d of the refused format, each with the guest's stack" % (len(evs), seen))
PY
[ ! -s "$T/ev.err" ] || { cat "$T/ev.err"; fail "events: warnings on stderr"; }
ok "refused format: counted, logged, stored as refused; its events named as such, all stacks intact"
