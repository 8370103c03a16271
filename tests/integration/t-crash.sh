# A guest that vanishes without BYE is recorded as disconnected; when the domain boots
# again (a new boot_id), the old boot is recorded as crashed. Its data is all there.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
"$SYNTH_GUEST" --connect "$T/sock" --events 20000 --seed 11 --no-bye --epochs 2 \
	--boot-id 11111111111111111111111111111111 --expect "$T/expect1" \
	--expect-events "$T/truth1" -q >/dev/null ||
	fail "guest 1"
wait_for daemon_says "disconnected without BYE" || fail "no disconnect log line"
b=$(report boots --json --domain-name vm1)
[ "$(json_field "$b" ended)" = disconnected ] || fail "not disconnected: $b"
compare_folded vm1 "$T/expect1" 1
"$SYNTH_GUEST" --connect "$T/sock" --events 5000 --seed 12 \
	--boot-id 22222222222222222222222222222222 --expect "$T/expect2" -q >/dev/null ||
	fail "guest 2"
wait_for daemon_says "BYE" || fail "no BYE"
stop_daemon
b=$(report boots --json --domain-name vm1)
echo "$b" | grep -q '"boot":1,"boot_id":"11111111-1111-1111-1111-111111111111"[^}]*"ended":"crashed"' ||
	fail "boot 1 not crashed: $b"
echo "$b" | grep -q '"boot":2,[^}]*"ended":"clean"' || fail "boot 2 not clean: $b"
compare_folded vm1 "$T/expect2" 2
# post-mortem of the crashed boot: its last events with resolved stacks
report events -n 5 --boot 11111111-1111 --domain-name vm1 >"$T/pm" || fail "events report"
[ "$(grep -c "kmem/kmalloc" "$T/pm")" = 5 ] || { cat "$T/pm"; fail "post-mortem events"; }
grep -q "synth_fn_" "$T/pm" || fail "post-mortem stacks not resolved"
# ... and each of the last 400 events has the very stack the guest recorded for it
# (interrupt events nested between an event and its stack included)
report events -n 400 --json --boot 11111111-1111 --domain-name vm1 >"$T/pm.json" ||
	fail "events --json"
python3 -c '
import json,sys
ev=json.load(open(sys.argv[1]))["events"]
truth=[l.split(" ",1) for l in open(sys.argv[2]).read().splitlines()][-400:]
def folded(st):
    if st["kind"]=="none": return "[no stack]"
    return ";".join(f["sym"].split("+")[0] for f in reversed(st["frames"]))
got=[(str(e["ts"]), folded(e["stack"])) for e in ev]
want=[(t, f) for t, f in truth]
bad=[(g, w) for g, w in zip(got, want) if g != w]
assert len(got)==400 and not bad, (len(got), bad[:3])' "$T/pm.json" "$T/truth1" ||
	fail "post-mortem events do not carry the stacks the guest recorded"
ok "crashed boot and post-mortem"
# A post-mortem of boot 1 replayed CPU 1's last events (its chunks marked recovered, as
# the replay stores them; CPU 0 streamed all of its own): every report marks them.
db=$(db_of vm1)
"$SQLITE3" "$db" "UPDATE chunks SET recovered = 1 WHERE boot = 1 AND cpu = 1;
INSERT INTO postmortems(boot, time, source, status, kmsg_records, stream, seam_seq,
  arena_frames, ring_pages, ring_events, map_records, frames_stored, frames_dup,
  events_stored) VALUES(1, 1, 'test', 'recovered', 2, 1, 1234, 5, 3, 77, 9, 4, 1, 77);
INSERT INTO kmsg(boot, seq, ts_nsec, caller_id, text) VALUES
  (1, 1, 5000000000, 0, CAST('sysrq: Trigger a crash' AS BLOB)),
  (1, 2, 5000100000, 0, CAST('Kernel panic - not syncing: sysrq triggered crash' AS BLOB));" ||
	fail "a post-mortem row"
report events -n 400 --json --boot 1 --domain-name vm1 >"$T/rec.json" || fail "events --json"
python3 -c '
import json,sys
ev=json.load(open(sys.argv[1]))["events"]
assert all(e["recovered"] == (e["cpu"] == 1) for e in ev), [e for e in ev if e["recovered"] != (e["cpu"] == 1)][:2]
assert {e["cpu"] for e in ev} == {0, 1}, {e["cpu"] for e in ev}' "$T/rec.json" ||
	fail "events --json: recovered is not exactly CPU 1's events"
report events -n 40 --boot 1 --domain-name vm1 >"$T/rec.txt" || fail "events"
n1=$(grep -c "^[0-9.]* cpu1 pid [0-9]* \[recovered\]  " "$T/rec.txt")
[ "$n1" -gt 0 ] && [ "$n1" = "$(grep -c "^[0-9.]* cpu1 " "$T/rec.txt")" ] &&
	! grep -q "cpu0 pid [0-9]* \[recovered\]" "$T/rec.txt" ||
	{ cat "$T/rec.txt"; fail "events: [recovered] not exactly on CPU 1's events"; }
report postmortem 3 --boot 1 --domain-name vm1 >"$T/pm.txt" || fail "report postmortem"
grep -q "^Replay of what had not been streamed (post-mortem recovered): into stream 1 from seq 1234 (the seam)$" "$T/pm.txt" &&
	grep -q "^  the ring buffers: 3 pages no reader had consumed, 77 events$" "$T/pm.txt" &&
	grep -q "^  frames stored: 4, already streamed: 1 (duplicates), events stored: 77$" "$T/pm.txt" &&
	grep -q "^Events after the last streamed ones: 77 recovered$" "$T/pm.txt" &&
	[ "$(grep -c "^cpu[01]: 3 events$" "$T/pm.txt")" = 2 ] &&
	[ "$(grep -c "^[0-9.]* cpu0 pid [0-9]* \[streamed\]  kmem/kmalloc" "$T/pm.txt")" = 3 ] &&
	[ "$(grep -c "^[0-9.]* cpu1 pid [0-9]* \[recovered\]  kmem/kmalloc" "$T/pm.txt")" = 3 ] &&
	grep -q "^      synth_fn_" "$T/pm.txt" ||
	{ cat "$T/pm.txt"; fail "postmortem: the replay or the last events per CPU"; }
# the last events of each CPU: the tail of that CPU's events in events --json
report postmortem --json --boot 1 --domain-name vm1 >"$T/pm2.json" || fail "postmortem --json"
python3 -c '
import json,sys
pm=json.load(open(sys.argv[1])); ev=json.load(open(sys.argv[2]))["events"]
r=pm["postmortem"]
assert (r["stream"], r["seam_seq"], r["ring_events"], r["frames_dup"]) == (1, 1234, 77, 1), r
assert "events" not in pm
last=pm["last_events"]
assert [c["cpu"] for c in last] == [0, 1], last
for c in last:
    mine=[e for e in ev if e["cpu"] == c["cpu"]][-5:]
    assert len(c["events"]) == 5 and c["events"] == mine, (c["cpu"], c["events"][:1], mine[:1])
    assert all(e["recovered"] == (c["cpu"] == 1) for e in c["events"])' "$T/pm2.json" "$T/rec.json" ||
	fail "postmortem --json: last_events are not each CPU's last 5 events of events --json"
# a boot without a post-mortem: as before
report postmortem --boot 2 --domain-name vm1 >"$T/pm3.txt" || fail "postmortem of boot 2"
grep -q "^Post-mortem: none" "$T/pm3.txt" && ! grep -q "Replay\|\[streamed\]" "$T/pm3.txt" ||
	{ cat "$T/pm3.txt"; fail "postmortem of a boot without one"; }
report postmortem --json --boot 2 --domain-name vm1 | python3 -c '
import json,sys
d=json.load(sys.stdin)
assert d["postmortem"] is None and "last_events" not in d and isinstance(d["events"], str), d' ||
	fail "postmortem --json of a boot without one"
ok "recovered events marked in events and postmortem"
