# Every report counts the same events of a boot that ended mid-stream: the guest
# "crashes" right after committing its last 6 events, before their stack events
# (synth-guest --cut-stacks), so the host keeps them waiting for a stack in its
# pairing state. boots, top, folded and events must all count them, the same way.
# Its first 7 events were traced before options/stacktrace was set (--late-stacks):
# no stack event ever follows them, and the next event of their CPU's task context
# says so (host-agent/pair.h). They must count as "no stack", not as waiting: the
# pairer used to keep them waiting under every later event that paired at once
# (issue 19: a real guest's first page listed as waiting hundreds of pages later).
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
"$SYNTH_GUEST" --connect "$T/sock" --events 3000 --seed 31 --no-bye --cut-stacks 6 \
	--late-stacks 7 \
	--boot-id 33333333333333333333333333333333 --expect "$T/expect" \
	--expect-events "$T/truth" -q >/dev/null || fail "guest"
wait_for daemon_says "disconnected without BYE" || fail "no disconnect log line"
stop_daemon
want=$(wc -l <"$T/truth")
[ "$want" -ge 3000 ] || fail "synth-guest truth has $want events"
compare_folded vm1 "$T/expect"
report boots --json --domain-name vm1 >"$T/boots" || fail "boots"
report top --json --domain-name vm1 >"$T/top" || fail "top"
report events -n 100000000 --json --domain-name vm1 >"$T/events" || fail "events"
report events -n 10 --domain-name vm1 >"$T/events.txt" || fail "events (text)"
python3 - "$T/boots" "$T/top" "$T/events" "$T/truth" <<'PY' || fail "reports disagree"
import json, sys
boots = json.load(open(sys.argv[1]))
top = json.load(open(sys.argv[2]))
evs = json.load(open(sys.argv[3]))["events"]
truth = [l.split(" ", 1) for l in open(sys.argv[4]).read().splitlines()]
b = boots[0]
pend = [e for e in evs if e["stack"]["kind"] == "none" and
        e["stack"].get("why") == "the stream ended before its stack event"]
print("truth %d, boots %d (%d without stack), top %d, events %d (%d pending)"
      % (len(truth), b["events"], b["stack_not_received"], top["events"], len(evs),
         len(pend)))
assert b["events"] == top["events"] == len(evs) == len(truth), "counts differ"
assert b["stack_not_received"] == len(pend) == 6, "pending events"
# exactly the guest's last 6 events, and only those
assert [str(e["ts"]) for e in pend] == [t for t, _ in truth[-6:]], "which events"
# the first 7, traced without stacks, are finished as such
late = {t for t, f in truth[:7]}
assert all(f == "[no stack]" for _, f in truth[:7]), "synth-guest's truth"
got = [e for e in evs if str(e["ts"]) in late]
assert len(got) == 7 and all(e["stack"]["kind"] == "none" and "why" not in e["stack"]
                             for e in got), "late events: %r" % [e["stack"] for e in got]
PY
[ "$(grep -c "stack not received: the stream ended before it" "$T/events.txt")" = 6 ] ||
	{ cat "$T/events.txt"; fail "events text: pending events not labelled"; }
ok "boots, top, folded and events count the same $want events, 6 of them waiting for a stack"
