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
