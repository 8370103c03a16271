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

# Reports: warnings never go into machine-readable output. A boot without FORMAT
# frames has pages nobody can parse; `report events --json` is still pure JSON (the
# warnings go to stderr) and every report runs on it.
start_daemon --listen "$T/sock" --domain-name vm1 --max-malformed 200
"$SYNTH_GUEST" --connect "$T/sock" --events 300 --no-formats --seed 4 -q >/dev/null ||
	fail "guest without formats"
wait_for grep -q "before the header_page and stack event formats" "$T/daemon.log" ||
	fail "no log line for pages before the formats"
b=$("$SQLITE3" "$(db_of vm1)" "SELECT MAX(id) FROM boots")
for r in boots top events folded; do
	report "$r" --json --domain-name vm1 --boot "$b" >"$T/r.json" 2>"$T/r.err" ||
		{ cat "$T/r.err"; fail "report $r --json on a boot without formats"; }
	python3 -m json.tool "$T/r.json" >/dev/null 2>&1 ||
		{ head -c 300 "$T/r.json"; fail "report $r --json is not pure JSON"; }
done
report events --json --domain-name vm1 --boot "$b" 2>"$T/r.err" >/dev/null
grep -q "unparsable page" "$T/r.err" || fail "the unparsable pages are not reported on stderr"
ok "reports on a boot without formats: pure JSON, $(grep -c unparsable "$T/r.err") warning line(s) on stderr"
stop_daemon
integrity_ok "$(db_of vm1)"

