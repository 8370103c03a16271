# Benchmark of the fleet store (prints figures, asserts nothing about time): one store
# of EVENTS synthetic events (default 1000000), shipped into a private clickhouse-server;
# rows/s and CPU of `ship`, bytes on disk in SQLite and in ClickHouse; then the same
# store shipped as COPIES hosts (default 100: 100 M events with the default) and the
# fleet `top` over all of them, timed.
. "$1"
. "$(dirname "$0")/ch-lib.sh"
EVENTS=${EVENTS:-1000000}
COPIES=${COPIES:-100}
trap '[ -z "$CH_PID" ] || kill -9 "$CH_PID"; cleanup' EXIT
ch_config
ch_start
chq "CREATE DATABASE bench" || fail "create database"
URL="${CH_URL}?database=bench"

start_daemon --listen "$T/sock" --domain-name big
wait_for test -S "$T/sock" || fail "daemon socket"
"$SYNTH_GUEST" --connect "$T/sock" --events "$EVENTS" --cpus 4 --epochs 2 --seed 3 -q \
	>/dev/null || fail "synth-guest"
wait_for grep -q "BYE" "$T/daemon.log" || fail "no BYE"
stop_daemon
db=$(db_of big)
"$SQLITE3" "$db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
sqlite_bytes=$(stat -c %s "$db")

TIMEFORMAT='%R %U %S'
{ time "$HOST_AGENT" ship "$db" "$URL" --host h0 2>"$T/ship.err"; } 2>"$T/ship.time" ||
	{ cat "$T/ship.err"; fail "ship"; }
read -r real user sys <"$T/ship.time"
rows=$(grep -o '[0-9]* rows' "$T/ship.err" | cut -d' ' -f1)
sent=$(grep -o '[0-9]* bytes' "$T/ship.err" | cut -d' ' -f1)
chq "OPTIMIZE TABLE bench.stacks FINAL" >/dev/null
ch_bytes=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'bench'
	AND active")
echo "store: $EVENTS events, $(chq 'SELECT count() FROM bench.stacks') stack rows"
echo "ship: $rows rows, $sent RowBinary bytes in ${real} s (CPU ${user} s user + ${sys} s sys):" \
	"$(awk -v r="$rows" -v u="$user" -v s="$sys" 'BEGIN {printf "%.0f", r / (u + s + 1e-9)}') rows/s per core of the agent"
echo "bytes per event: SQLite $(awk -v b="$sqlite_bytes" -v n="$EVENTS" 'BEGIN {printf "%.2f", b / n}')" \
	"(whole store: pages and stacks), ClickHouse $(awk -v b="$ch_bytes" -v n="$EVENTS" 'BEGIN {printf "%.4f", b / n}')" \
	"(boots, stacks with counts, LOST, STATS; no single events)"

for i in $(seq 2 "$COPIES"); do
	"$HOST_AGENT" ship "$db" "$URL" --host "h$i" 2>"$T/copy.err" ||
		{ cat "$T/copy.err"; fail "ship copy $i"; }
done
total=$(chq "SELECT sum(events) FROM bench.boots FINAL")
{ time "$HOST_AGENT" report --clickhouse "$URL" top -n 10 >"$T/top"; } 2>"$T/top.time" ||
	fail "fleet top"
read -r real user sys <"$T/top.time"
head -1 "$T/top"
echo "fleet top over $total events in $COPIES boots: ${real} s (wall, client and server)"
