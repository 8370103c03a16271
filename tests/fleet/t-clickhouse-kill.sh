# Replication killed mid-way, deterministically: `ship` killed -9 while ClickHouse has
# some of a store's events rows and not all, then ClickHouse killed -9 while the next
# `ship` is half done; a last `ship` completes. ClickHouse then holds exactly the
# store's events (byte for byte as `report events --json`), one row per event once
# merged, and the boot's stacks; nothing sent twice counts twice.
. "$1"
. "$(dirname "$0")/ch-lib.sh"
SHIP_PID=
cleanup_k() {
	[ -z "$SHIP_PID" ] || kill -9 "$SHIP_PID" 2>/dev/null
	[ -z "$CH_PID" ] || kill -9 "$CH_PID" 2>/dev/null
	cleanup
}
trap cleanup_k EXIT

# a store of one crashed boot of 200000 events on 4 CPUs
start_daemon --listen "$T/sock" --domain-name k1
"$SYNTH_GUEST" --connect "$T/sock" --events 200000 --cpus 4 --epochs 3 --seed 91 \
	--no-bye -q >/dev/null 2>"$T/guest.err" || { cat "$T/guest.err"; fail "synth-guest"; }
wait_for daemon_says "disconnected\|closed the connection" || fail "no disconnect"
stop_daemon || fail "daemon exit status"

ch_config
ch_start
chq "CREATE DATABASE k" || fail "create k"
URL="${CH_URL}?database=k"
nrows() { chq "SELECT count() FROM k.events" 2>/dev/null || echo -1; }
ship_bg() {
	"$HOST_AGENT" ship k1 "$URL" --host h --state-dir "$T/state" >>"$T/ship.log" 2>&1 &
	SHIP_PID=$!
}
# mid_way N: wait until k.events has more than N rows while the ship still runs
mid_way() {
	for _ in $(seq 3000); do
		kill -0 "$SHIP_PID" 2>/dev/null || return 1
		[ "$(nrows)" -gt "$1" ] && return 0
		sleep 0.01
	done
	return 1
}

ship_bg
mid_way 0 || fail "the first ship ended before any events row"
kill -9 "$SHIP_PID"
wait "$SHIP_PID" 2>/dev/null
SHIP_PID=
r1=$(nrows)
[ "$r1" -lt 200000 ] || fail "the ship was not killed mid-way ($r1 rows)"
ok "ship killed -9 with $r1 of 200000 events rows in ClickHouse"

ship_bg
mid_way "$r1" || fail "the second ship added no row"
ch_kill
wait "$SHIP_PID" && fail "ship succeeded with ClickHouse killed"
SHIP_PID=
grep -q "ship: ClickHouse .*: " "$T/ship.log" || { cat "$T/ship.log"; fail "no error from ship"; }
ch_start
r2=$(nrows)
ok "ClickHouse killed -9 mid-ship: $r2 rows kept, ship failed and said why"

"$HOST_AGENT" ship k1 "$URL" --host h --state-dir "$T/state" 2>"$T/ship.err" ||
	{ cat "$T/ship.err"; fail "the last ship"; }
echo "h k1 $(report events --json --limit 1000000000 --domain-name k1)" >"$T/store.events"
"$HOST_AGENT" report --clickhouse "$URL" events --json --limit 1000000000 >"$T/ch.events" ||
	fail "report --clickhouse events"
n=$(python3 "$(dirname "$0")/events-cmp.py" "$T/store.events" "$T/ch.events") ||
	fail "ClickHouse's events != the store's: $n"
[ "$n" = 200000 ] || fail "$n events compared, the guest traced 200000"
chq "OPTIMIZE TABLE k.events FINAL" || fail "optimize"
[ "$(nrows)" = 200000 ] || fail "$(nrows) rows after merges for 200000 events"
report folded --domain-name k1 | sort >"$T/store.folded"
"$HOST_AGENT" report --clickhouse "$URL" folded | sort | cmp -s - "$T/store.folded" ||
	fail "folded differs"
ok "after the kills: ClickHouse's events = the store's, byte for byte, one row each ($n)"

# The boot ended: the last ship sealed it, its aggregates count every event once
[ "$(chq "SELECT count(), sum(events) FROM k.sealed FINAL")" = "1	200000" ] ||
	fail "k.sealed: $(chq "SELECT count(), sum(events) FROM k.sealed FINAL")"
# the store's: every event is a kmalloc; the last second, by hand from the events rows
report folded --domain-name k1 | sort >"$T/store.ev"
[ "$(awk '{s += $NF} END {print s}' "$T/store.ev")" = 200000 ] || fail "store's folded"
ch_folded k "ts + 1000000000 >= (SELECT max(ts) FROM k.events)" >"$T/hand.last"
ch_folded k "ts + 1500000000 >= (SELECT max(ts) FROM k.events)" >"$T/hand.last1.5"
[ -s "$T/hand.last" ] || fail "no events in the last second"
# check WHAT: folded --event equals the store's folded, --last 1 (whole seconds: from
# the aggregates once sealed) and --last 1.5 (from the events rows) the hand's
check() {
	"$HOST_AGENT" report --clickhouse "$URL" folded --event kmalloc | sort |
		cmp -s - "$T/store.ev" || fail "$1: folded --event kmalloc != the store's"
	"$HOST_AGENT" report --clickhouse "$URL" folded --last 1 --ended "$ended" | sort |
		cmp -s - "$T/hand.last" || fail "$1: folded --last 1 != the last second's"
	"$HOST_AGENT" report --clickhouse "$URL" folded --last 1.5 | sort |
		cmp -s - "$T/hand.last1.5" || fail "$1: folded --last 1.5 != the last 1.5 s'"
}
ended=$(chq "SELECT ended FROM k.boots FINAL")
check "sealed"
ok "sealed: folded --event, --last 1 from its aggregates equal the store's, the events rows'"
# rows of a seal that died before its sealed row count nothing
chq "INSERT INTO k.event_totals SELECT host, domain, boot, event, fstack, n * 7, 1
     FROM k.event_totals" || fail "insert"
chq "INSERT INTO k.event_counts SELECT tail_s, host, domain, boot, hs, hs_frac, event, fstack,
     n * 7, 1 FROM k.event_counts" || fail "insert"
check "a dead seal's rows"
# a sealed row of another snap (the boot moved after its seal): its events rows count
chq "INSERT INTO k.sealed SELECT host, domain, boot, snap + 1, last_ts, events, version + 1
     FROM k.sealed" || fail "insert"
check "a stale seal"
ok "a dead seal's rows count nothing; a stale seal: the events rows count"

# Sealed again (a ship whose seal had not finished: the watermark's seal flag; the
# boots row's snap is not the stale seal's): the aggregates of every older version
# are deleted, the new ones count every event once
sed -i 's/^seal=false$/seal=true/' "$T/state/k1.db.ship"
grep -q '^seal=true$' "$T/state/k1.db.ship" || fail "no seal flag in the watermark"
"$HOST_AGENT" ship k1 "$URL" --host h --state-dir "$T/state" 2>"$T/ship.err" ||
	{ cat "$T/ship.err"; fail "ship to seal again"; }
mutations_done() { [ "$(chq "SELECT count() FROM system.mutations WHERE database = 'k'
	AND is_done = 0")" = 0 ]; }
wait_for mutations_done || fail "the stale aggregates' deletion did not finish"
v=$(chq "SELECT version FROM k.sealed FINAL")
for t in event_totals event_counts; do
	[ "$(chq "SELECT count() FROM k.$t WHERE version != $v")" = 0 ] ||
		fail "k.$t: rows of older seals left after the boot was sealed again"
done
[ "$(chq "SELECT sum(n) FROM k.event_totals")" = 200000 ] || fail "event_totals after the re-seal"
check "sealed again"
ok "sealed again: the older seals' aggregates deleted, the new ones exact"

# A running boot (the agent killed -9 mid-stream: no end recorded), shipped twice with
# ClickHouse's merges stopped, the second time with its watermark lost: every row is
# in ClickHouse twice, unmerged, and every report still counts it once (FINAL)
start_daemon --listen "$T/sock2" --domain-name r1
"$SYNTH_GUEST" --connect "$T/sock2" --events 100000 --cpus 2 --epochs 2 --seed 93 \
	--throttle-us 5000 -q >/dev/null 2>"$T/guest2.err" &
GUEST2=$!
stored() { [ "$("$SQLITE3" "$T/state/r1.db" "SELECT COUNT(*) FROM chunks" 2>/dev/null)" -ge 4 ]; }
wait_for stored || fail "r1: nothing stored"
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
kill "$GUEST2" 2>/dev/null
wait "$GUEST2" 2>/dev/null
chq "CREATE DATABASE r" || fail "create r"
RURL="${CH_URL}?database=r"
"$HOST_AGENT" ship r1 "$RURL" --host h --state-dir "$T/state" 2>"$T/ship.err" ||
	{ cat "$T/ship.err"; fail "ship r1"; }
chq "SYSTEM STOP MERGES" || fail "stop merges"
rm "$T/state/r1.db.ship"
"$HOST_AGENT" ship r1 "$RURL" --host h --state-dir "$T/state" 2>"$T/ship.err" ||
	{ cat "$T/ship.err"; fail "ship r1 again"; }
[ "$(chq "SELECT ended FROM r.boots FINAL")" = running ] || fail "r1 is not running"
rfleet() { "$HOST_AGENT" report --clickhouse "$RURL" "$@"; }
report folded --domain-name r1 | sort >"$T/r1.folded"
n0=$(awk '{s += $NF} END {print s}' "$T/r1.folded")
[ "$n0" -gt 0 ] || fail "r1: no events stored"
# each ship sends every event at least once (pages that may change more than once)
[ "$(chq "SELECT count() FROM r.events")" -ge $((2 * n0)) ] ||
	fail "r.events: $(chq "SELECT count() FROM r.events") rows, want each of $n0 events twice"
[ "$(chq "SELECT uniqExact(cpu, page, idx) FROM r.events")" = "$n0" ] ||
	fail "r.events: not $n0 distinct events"
[ "$(chq "SELECT count() FROM r.boots")" = 2 ] || fail "r.boots: not two rows"
rfleet folded | sort | cmp -s - "$T/r1.folded" || fail "running boot: folded counts twice"
rfleet folded --event kmalloc | sort | cmp -s - "$T/r1.folded" ||
	fail "running boot: folded --event counts twice"
rfleet top -n 1 | head -1 | grep -q "^$n0 events in 1 boots" || fail "running boot: top"
rfleet top -n 1 --event kmalloc | head -1 | grep -q "^$n0 events in 1 boots" ||
	fail "running boot: top --event"
[ "$(rfleet boots | tail -n +2 | wc -l)" = 1 ] || fail "running boot: boots lists it twice"
echo "h r1 $(report events --json --limit 1000000000 --domain-name r1)" >"$T/r1.events"
rfleet events --json --limit 1000000000 >"$T/r1.ch" || fail "running boot: events"
n=$(python3 "$(dirname "$0")/events-cmp.py" "$T/r1.events" "$T/r1.ch") ||
	fail "running boot: events != the store's: $n"
chq "SYSTEM START MERGES" || fail "start merges"
ok "a running boot's rows twice in ClickHouse, unmerged: boots, top, folded, events count it once ($n events)"
