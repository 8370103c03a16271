# Benchmark (meson test --benchmark export-bench): export speed and size of a
# synthetic boot (EVENTS traced events, each with its stack event, 4 CPUs, 2000
# distinct stacks in each of 4 epochs), trace.dat v7 (zstd) and v6 against the store,
# and the perf-script text. Prints figures; asserts only that each export worked.
. "$1"
EVENTS=${EVENTS:-400000}
start_daemon --listen "$T/sock" --domain-name vm
"$SYNTH_GUEST" --connect "$T/sock" --events "$EVENTS" --cpus 4 --epochs 4 --stacks 2000 \
	--seed 3 -q >/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon
ha() { "$HOST_AGENT" "$@" --state-dir "$T/state" --domain-name vm; }
db=$(db_of vm)
"$SQLITE3" "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
chunk_bytes=$("$SQLITE3" "$db" "SELECT SUM(length(data)) FROM chunks")
db_bytes=$(stat -c %s "$db")

now() { date +%s.%N; }
for v in 7 6; do
	t0=$(now)
	ha export trace.dat --dat-version $v -o "$T/v$v.dat" 2>"$T/v$v.log" ||
		{ cat "$T/v$v.log"; fail "export v$v"; }
	t1=$(now)
	n=$(sed -n 's/.*: \([0-9]*\) events on.*/\1/p' "$T/v$v.log")
	[ -n "$n" ] && [ "$n" -gt 0 ] || { cat "$T/v$v.log"; fail "v$v: no event count"; }
	awk -v v=$v -v n="$n" -v s="$(stat -c %s "$T/v$v.dat")" -v t0="$t0" -v t1="$t1" \
		'BEGIN { printf "export-bench: trace.dat v%d: %d events (stack events included) in %.2f s, %.0f events/s, %d bytes, %.1f bytes/event\n", v, n, t1 - t0, n / (t1 - t0), s, s / n }'
done
traced=$(ha report boots --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["events"])') || fail "report boots"
t0=$(now)
ha report events --format perf-script >"$T/ps" || fail "perf-script"
t1=$(now)
awk -v n="$traced" -v s="$(stat -c %s "$T/ps")" -v t0="$t0" -v t1="$t1" \
	'BEGIN { printf "export-bench: perf-script: %d samples in %.2f s, %.0f samples/s, %.1f bytes/sample\n", n, t1 - t0, n / (t1 - t0), s / n }'
awk -v n="$n" -v c="$chunk_bytes" -v d="$db_bytes" \
	'BEGIN { printf "export-bench: the store: %d bytes of page chunks (%.1f bytes/event), database %d bytes (%.1f bytes/event)\n", c, c / n, d, d / n }'
ok "export figures printed"
