# Benchmark of the fleet store (prints figures, asserts nothing about time): one store
# of EVENTS synthetic events (default 1000000), shipped into a private clickhouse-server;
# rows/s and CPU of `ship`, bytes per event on disk in SQLite and in ClickHouse; then
# FLEET events (default 100 M) generated in ClickHouse itself (INSERT ... SELECT FROM
# numbers(), the shipped store's stacks over 100 hosts) and the fleet `top` over them
# (from the events rows), timed.
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
evrows=$(grep -o '([0-9]* events)' "$T/ship.err" | tr -dc 0-9)
sent=$(grep -o '[0-9]* bytes' "$T/ship.err" | cut -d' ' -f1)
for t in boots stacks lost stats events event_stacks; do
	chq "OPTIMIZE TABLE bench.$t FINAL" >/dev/null
done
ch_bytes=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'bench'
	AND active")
ev_bytes=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'bench'
	AND active AND table IN ('events', 'event_stacks')")
echo "store: $EVENTS events, $(chq 'SELECT count() FROM bench.stacks') stack rows"
echo "ship: $rows rows ($evrows events), $sent RowBinary bytes in ${real} s (CPU ${user} s user + ${sys} s sys):" \
	"$(awk -v r="$rows" -v u="$user" -v s="$sys" 'BEGIN {printf "%.0f", r / (u + s + 1e-9)}') rows/s per core of the agent"
echo "bytes per event: SQLite $(awk -v b="$sqlite_bytes" -v n="$EVENTS" 'BEGIN {printf "%.2f", b / n}')" \
	"(whole store: pages and stacks), ClickHouse $(awk -v b="$ch_bytes" -v n="$EVENTS" 'BEGIN {printf "%.2f", b / n}')" \
	"(all tables; events and event_stacks: $(awk -v b="$ev_bytes" -v n="$EVENTS" 'BEGIN {printf "%.2f", b / n}'))"

# FLEET events in ClickHouse directly: 100 hosts, one boot each, the shipped boot's
# stacks, events spread over them
FLEET=${FLEET:-100000000}
chq "CREATE DATABASE gen" || fail "create gen"
for t in boots events event_stacks; do
	chq "CREATE TABLE gen.$t AS bench.$t" || fail "gen.$t"
done
nst=$(chq "SELECT count() FROM bench.event_stacks")
chq "INSERT INTO gen.event_stacks SELECT concat('h', toString(h)), domain, boot, stack,
	kind, stack_id, epoch, folded, json, version FROM bench.event_stacks
	ARRAY JOIN range(100) AS h" || fail "gen stacks"
chq "INSERT INTO gen.boots SELECT concat('h', toString(h)), domain, boot, boot_no, kernel,
	start_us, end_us, if(h % 10 = 0, 'crashed', ended), $FLEET / 100, lost_frames,
	lost_events, stacks, epochs, malformed, stack_not_received, snap, version
	FROM bench.boots ARRAY JOIN range(100) AS h" || fail "gen boots"
t0=$(date +%s%N)
chq "INSERT INTO gen.events SELECT concat('h', toString(number % 100)), 'big',
	(SELECT any(boot) FROM bench.boots), toUInt32(number % 4), intDiv(number, 100), 0,
	number * 1000, 0, -1, 'kmem/kmalloc', 1000, 'bytes_req=64',
	-1, (SELECT groupArray(stack) FROM bench.event_stacks)[number % $nst + 1], 1
	FROM numbers($FLEET)" || fail "gen events"
echo "generated $FLEET events in ClickHouse in $((($(date +%s%N) - t0) / 1000000)) ms"
chq "OPTIMIZE TABLE gen.events FINAL" >/dev/null
GURL="${CH_URL}?database=gen"
for args in "top -n 10 --event kmalloc" "top -n 10 --ended crashed --last 1"; do
	# shellcheck disable=SC2086
	{ time "$HOST_AGENT" report --clickhouse "$GURL" $args >"$T/top"; } 2>"$T/top.time" ||
		fail "fleet $args"
	read -r real user sys <"$T/top.time"
	echo "fleet $args: ${real} s (wall, client and server): $(head -1 "$T/top")"
done
