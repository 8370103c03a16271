# Issue 21, from the exact frames: a guest that lies at the edges of the protocol is
# answered correctly and logged, and the reports stay right.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1 --max-malformed 200
wait_for test -S "$T/sock" || fail "daemon socket"

# seq 2^64-1 and a jump beyond SMP_SEQ_MAX_GAP: malformed, the next HELLO's WELCOME
# resumes right after the last good frame (it used to carry host stack memory).
"$SYNTH_GUEST" --connect "$T/sock" --hostile seq-wrap --seed 21 -q >/dev/null 2>"$T/h.err" ||
	{ cat "$T/h.err"; fail "seq-wrap: the second WELCOME is wrong"; }
wait_for daemon_says "seq 18446744073709551615 out of range" ||
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
wait_for daemon_says "before the header_page and stack event formats" ||
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

# A later HELLO of the same boot that changes the geometry (here: big-endian pages) is
# refused with a clear log line; the boot keeps its first values.
start_daemon --listen "$T/sock" --domain-name vm2 --max-malformed 200
"$SYNTH_GUEST" --connect "$T/sock" --hostile geometry --seed 22 -q >/dev/null 2>"$T/h.err" ||
	{ cat "$T/h.err"; fail "geometry: the daemon did not hang up"; }
wait_for grep -q "changes the boot's geometry (pages little-endian -> big-endian)" \
	"$T/daemon.log" || fail "geometry: no log line"
ok "geometry: $(grep -m1 "changes the boot's geometry" "$T/daemon.log" | sed 's/.*closing the connection: //;s/.*: HELLO/HELLO/')"
[ "$("$SQLITE3" "$(db_of vm2)" "SELECT flags & 2 FROM boots")" = 0 ] ||
	fail "geometry: the boot took the new byte order"

# A STACKS record that redefines a stored id with other frames: counted and logged.
"$SYNTH_GUEST" --connect "$T/sock" --hostile stack-conflict --seed 23 -q >/dev/null 2>"$T/h.err" ||
	{ cat "$T/h.err"; fail "stack-conflict: BYE not acknowledged"; }
wait_for daemon_says "redefines stack_id 0x5 of epoch 0" ||
	fail "stack-conflict: no log line"
m=$("$SQLITE3" "$(db_of vm2)" "SELECT s.malformed FROM streams s JOIN boots b ON b.id = s.boot ORDER BY s.id DESC LIMIT 1")
[ "$m" = 1 ] || fail "stack-conflict: malformed count $m"
ok "stack-conflict: 1 malformed, $(grep -m1 -o 'redefines stack_id.*' "$T/daemon.log" | cut -c1-90)"
stop_daemon
integrity_ok "$(db_of vm2)"
