# Every event stored once and resolved to the stack the guest had; a clean BYE.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
"$SYNTH_GUEST" --connect "$T/sock" --events 60000 --cpus 3 --stacks 300 --seed 7 \
	--expect "$T/expect" -q >"$T/guest.out" || fail "synth-guest"
wait_for daemon_says "disconnected\|closed the connection" || fail "no disconnect seen"
stop_daemon || fail "daemon exit status"
integrity_ok "$(db_of vm1)"
compare_folded vm1 "$T/expect"
b=$(report boots --json --domain-name vm1) || fail "report boots"
[ "$(json_field "$b" ended)" = clean ] || fail "boot not ended clean: $b"
[ "$(json_field "$b" events)" = 60000 ] || fail "events: $b"
[ "$(json_field "$b" lost_frames)" = 0 ] || fail "lost frames: $b"
dups=$("$SQLITE3" "$(db_of vm1)" "SELECT dup_frames, gap_frames, malformed, orphan_stacks FROM streams")
[ "$dups" = "0|0|0|0" ] || fail "dup|gap|malformed|orphans = $dups"
grep -q "BYE (shutdown)" "$T/daemon.log" || fail "no BYE log line"
# a deep stack (a full kernel_stack event) found in the store gives no reason why not
report top -n 400 --json --domain-name vm1 | python3 -c '
import json, sys
full = [s["stack"] for s in json.load(sys.stdin)["stacks"] if s["stack"]["kind"] == "full"]
assert full and all("why" not in s and s["frames"] for s in full), full' ||
	fail "top --json: a full stack without frames or with a reason"
ok "clean boot recorded"

# A hole in the sequence numbers (frames the guest's window dropped) is recorded as
# loss, reported by `boots`, and everything around it is stored.
start_daemon --listen "$T/sock2" --domain-name gap
"$SYNTH_GUEST" --connect "$T/sock2" --events 20000 --seed 8 --gap-at 100 --gap 7 \
	--expect "$T/expect2" -q >/dev/null || fail "synth-guest with a gap"
wait_for daemon_says "frames 100..106 never arrived" || fail "no gap log line"
stop_daemon
b=$(report boots --json --domain-name gap)
[ "$(json_field "$b" lost_frames)" = 7 ] || fail "gap not counted: $b"
compare_folded gap "$T/expect2"
ok "a gap of 7 frames recorded as loss"

# A page flagged by the guest's ring buffer as preceded by lost events (6.1
# RB_MISSED_EVENTS | RB_MISSED_STORED, sign-extended, count after the data).
start_daemon --listen "$T/sock3" --domain-name missed
"$SYNTH_GUEST" --connect "$T/sock3" --events 20000 --seed 8 --missed 1234 \
	--expect "$T/expect3" -q >/dev/null || fail "synth-guest with missed events"
wait_for daemon_says "BYE" || fail "no BYE"
stop_daemon
b=$(report boots --json --domain-name missed)
[ "$(json_field "$b" lost_events)" = 1234 ] || fail "missed events not counted: $b"
compare_folded missed "$T/expect3"
ok "1234 events lost in the guest's ring buffer counted"
