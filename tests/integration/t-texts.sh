# Issue 14: the texts a guest keys as it likes (KSYMS, MODULES, CMDLINES chunks, by
# stream, generation and chunk) are bounded per boot and kind (ingest.h): a guest
# floods 250000 tiny MODULES snapshots and 170 CMDLINES chunks of 200 KiB; the host
# stores each kind up to its budget, refuses the rest as malformed, acknowledges
# everything, and a later session of the same boot finds the budget spent.
. "$1"
BOOT=14141414141414141414141414141414
start_daemon --listen "$T/sock" --domain-name vm1 --max-malformed 1000000
wait_for test -S "$T/sock" || fail "daemon socket"
"$SYNTH_GUEST" --connect "$T/sock" --hostile text-flood --boot-id $BOOT -q >/dev/null \
	2>"$T/h.err" || { cat "$T/h.err"; fail "text-flood"; }
kill -0 "$DAEMON_PID" || fail "daemon died"
stop_daemon || fail "daemon exit status $?"
db=$(db_of vm1)
cost() { "$SQLITE3" "$db" "SELECT COALESCE(SUM(length(text)), 0) + 64 * COUNT(*) FROM texts WHERE kind = '$1'"; }
rows() { "$SQLITE3" "$db" "SELECT COUNT(*) FROM texts WHERE kind = '$1'"; }
mods=$(cost modules) cmds=$(cost cmdlines)
nmods=$(rows modules) ncmds=$(rows cmdlines)
malformed=$("$SQLITE3" "$db" "SELECT SUM(malformed) FROM streams")
[ "$mods" -le $((16 << 20)) ] || fail "modules: $mods bytes stored, budget 16 MiB"
[ "$mods" -gt $(((16 << 20) - 68)) ] || fail "modules: only $mods bytes stored"
[ "$cmds" -le $((32 << 20)) ] || fail "cmdlines: $cmds bytes stored, budget 32 MiB"
[ "$cmds" -gt $(((32 << 20) - 204864)) ] || fail "cmdlines: only $cmds bytes stored"
[ "$malformed" -eq $((250000 + 170 - nmods - ncmds)) ] ||
	fail "$malformed refused, $((250000 + 170 - nmods - ncmds)) not stored"
grep -q "modules text (generation [0-9]* chunk 0, 4 bytes) beyond the boot's budget" \
	"$T/daemon.log" || fail "no refusal logged"
ok "250170 texts sent: $nmods MODULES ($mods B) and $ncmds CMDLINES ($cmds B) stored, $malformed refused"

# the same boot again: its budget is spent, nothing more is stored
start_daemon --listen "$T/sock" --domain-name vm1 --max-malformed 1000000
wait_for test -S "$T/sock" || fail "daemon socket"
"$SYNTH_GUEST" --connect "$T/sock" --hostile text-flood --boot-id $BOOT --stream-id 2 -q \
	>/dev/null 2>"$T/h2.err" || { cat "$T/h2.err"; fail "text-flood again"; }
stop_daemon || fail "daemon exit status $?"
[ "$(rows modules)" -eq "$nmods" ] && [ "$(rows cmdlines)" -eq "$ncmds" ] ||
	fail "a later session stored texts beyond the budget"
again=$("$SQLITE3" "$db" "SELECT malformed FROM streams WHERE stream_id = 2")
[ "$again" -eq 250170 ] || fail "later session: $again of 250170 refused"
ok "a later session of the boot: all 250170 refused"
integrity_ok "$db"
