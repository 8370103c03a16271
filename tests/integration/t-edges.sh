# Issue 21, from the exact frames: a guest that lies at the edges of the protocol is
# answered correctly and logged, and the reports stay right.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1 --max-malformed 200
wait_for test -S "$T/sock" || fail "daemon socket"

# seq 2^64-1 and a jump beyond SMP_SEQ_MAX_GAP: malformed, the next HELLO's WELCOME
# resumes right after the last good frame (it used to carry host stack memory).
"$SYNTH_GUEST" --connect "$T/sock" --hostile seq-wrap --seed 21 -q >/dev/null 2>"$T/h.err" ||
	{ cat "$T/h.err"; fail "seq-wrap: the second WELCOME is wrong"; }
wait_for grep -q "seq 18446744073709551615 out of range" "$T/daemon.log" ||
	fail "seq-wrap: no log line"
ok "seq-wrap: $(grep -o 'resumed at .*' "$T/h.err")"
ok "$(grep -m1 'seq 18446744073709551615 out of range' "$T/daemon.log" | sed 's/.*dropped: //')"
lost=$(report boots --json --domain-name vm1)
[ "$(json_field "$lost" lost_frames)" = 0 ] || fail "seq-wrap recorded as loss: $lost"
[ "$(json_field "$lost" malformed)" = 2 ] || fail "seq-wrap: malformed count: $lost"
ok "seq-wrap: no loss recorded, 2 malformed frames"
stop_daemon
integrity_ok "$(db_of vm1)"
