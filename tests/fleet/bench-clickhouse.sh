# Benchmark of the fleet store (prints figures, asserts nothing about time): one store
# of EVENTS synthetic events (default 1000000), shipped into a private clickhouse-server;
# rows/s and CPU of `ship`, bytes per event on disk in SQLite and in ClickHouse; then
# FLEET events (default 100 M) generated in ClickHouse itself (INSERT ... SELECT FROM
# numbers(), the shipped store's stacks over 100 hosts), sealed, and the fleet `top`
# over them (from the sealed boots' aggregates), timed.
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
wait_for daemon_says "BYE" || fail "no BYE"
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

# FLEET events in ClickHouse directly: 100 hosts, one boot each, every stack of the
# shipped boot in turn on each host, 1 event per us across the fleet; then sealed as
# the agent seals (a ship into the same database seals every boot of it that ended)
# and the fleet `top` over them, from the aggregates, timed (median of 5)
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
	number * 1000, 1700000000000000 + number, -1, 'kmem/kmalloc', 1000, 'bytes_req=64',
	-1, (SELECT groupArray(stack) FROM bench.event_stacks)[intDiv(number, 100) % $nst + 1],
	1 FROM numbers($FLEET)" || fail "gen events"
echo "generated $FLEET events in ClickHouse in $((($(date +%s%N) - t0) / 1000000)) ms"
GURL="${CH_URL}?database=gen"
t0=$(date +%s%N)
"$HOST_AGENT" ship "$db" "$GURL" --host real 2>"$T/ship.err" || { cat "$T/ship.err"; fail "ship"; }
echo "ship into it and seal: $(chq "SELECT count(), sum(events) FROM gen.sealed FINAL" |
	awk '{print $1 " boots, " $2 " events"}') sealed in" \
	"$((($(date +%s%N) - t0) / 1000000)) ms (with the ship of the $EVENTS events);" \
	"aggregates: $(chq "SELECT count() FROM gen.event_totals") event_totals rows," \
	"$(chq "SELECT count() FROM gen.event_counts") event_counts rows"
for args in "top -n 10 --event kmalloc" "top -n 10 --ended crashed --last 1"; do
	times=()
	for _ in 1 2 3 4 5; do
		t0=$(date +%s%N)
		# shellcheck disable=SC2086
		"$HOST_AGENT" report --clickhouse "$GURL" $args >"$T/top" || fail "fleet $args"
		times+=("$((($(date +%s%N) - t0) / 1000000))")
	done
	echo "fleet $args: median $(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p) ms" \
		"of 5 (${times[*]} ms; wall, client and server): $(head -1 "$T/top")"
done
