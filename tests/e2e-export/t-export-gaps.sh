# Frames the guest's agent dropped (a sequence gap) in trace.dat: the daemon stores
# where the gap fell per CPU (table gaps), and the export marks it where trace-cmd
# shows lost events, "CPU:N [EVENTS DROPPED]" on each CPU before its first event after
# the gap (no count: the frames' content is unknown). Compared event by event with
# report events --json (tracecmp.py), whose pairing finishes the events waiting at the
# gap as lost, as the daemon did.
. "$1"
TRACECMP=$2
: "${TRACE_CMD:?}"
command -v "$TRACE_CMD" >/dev/null || fail "no trace-cmd ($TRACE_CMD): run .ci/install-deps"
start_daemon --listen "$T/sock" --domain-name vm
"$SYNTH_GUEST" --connect "$T/sock" --events 20000 --cpus 2 --epochs 2 --stacks 200 \
	--gap-at 200 --gap 5 --seed 7 -q >/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon
grep -q "frames 200..204 never arrived" "$T/daemon.log" || fail "the daemon saw no gap"
rows=$("$SQLITE3" "$(db_of vm)" "SELECT COUNT(*), MIN(seq_lo), MAX(seq_hi), COUNT(DISTINCT cpu) FROM gaps")
[ "$rows" = "2|200|204|2" ] || fail "gaps rows: $rows"
"$HOST_AGENT" export trace.dat -o "$T/g.dat" --state-dir "$T/state" --domain-name vm \
	2>"$T/export.log" || { cat "$T/export.log"; fail "export"; }
"$TRACE_CMD" report -i "$T/g.dat" >"$T/report" 2>"$T/report.err" || fail "trace-cmd report"
[ ! -s "$T/report.err" ] || { cat "$T/report.err"; fail "trace-cmd warned"; }
[ "$(grep -c '^CPU:0 \[EVENTS DROPPED\]$' "$T/report")" = 1 ] &&
	[ "$(grep -c '^CPU:1 \[EVENTS DROPPED\]$' "$T/report")" = 1 ] ||
	{ grep 'DROPPED' "$T/report"; fail "not one uncounted mark per CPU"; }
python3 "$TRACECMP" --trace-cmd "$TRACE_CMD" --host-agent "$HOST_AGENT" --state-dir "$T/state" \
	--domain-name vm --dat "$T/g.dat" --expect-dropped >"$T/cmp" || { cat "$T/cmp"; fail "tracecmp"; }
cat "$T/cmp"
grep -q "^tracecmp: 20000 events equal on 2 CPUs" "$T/cmp" || fail "not every event compared"
grep -q "dropped marks: 2 (0 events counted)" "$T/cmp" || fail "marks"
ok "the agent's frame gap: one [EVENTS DROPPED] per CPU where it fell, every event equal"
