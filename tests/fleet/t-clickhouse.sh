# The fleet store: two agents standing for two hosts (--socket-dir, each replicating
# into its own shard of a private clickhouse-server), synthetic guests, one crashing.
# ClickHouse killed -9 mid-replication and restarted, one agent killed -9 and
# restarted, ClickHouse down while the guests stream (their ACKs do not wait for it),
# `ship` of an existing store, a lost watermark (everything sent again): the fleet
# reports through the Distributed tables equal the union of the per-store reports,
# exactly.
. "$1"
. "$(dirname "$0")/ch-lib.sh"
FAKE_QMP=$(dirname "$0")/fake-qmp.py
PIDS=()
cleanup_ch() {
	[ "${KEEP:-0}" = 1 ] && for h in hostA hostB; do tail -5 "$T/$h.log"; done
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	[ -z "$CH_PID" ] || kill -9 "$CH_PID" 2>/dev/null
	cleanup
}
trap cleanup_ch EXIT

ch_config
t0=$(date +%s%N)
ch_start
ok "clickhouse-server $(chq 'SELECT version()') up in $((($(date +%s%N) - t0) / 1000000)) ms"
ch_fleet_schema

# agent HOST SHARD: host-agent --socket-dir for host HOST, replicating into SHARD
agent() {
	"$HOST_AGENT" --socket-dir "$T/$1/vms" --state-dir "$T/$1/state" --host "$1" \
		--clickhouse "${CH_URL}?database=$2" >>"$T/$1.log" 2>&1 &
	eval "AGENT_$1=$!"
	PIDS+=("$!")
}
# guest HOST NAME SEED [ARGS]: a synthetic guest of host HOST, about 3 s of stream,
# its ground truth in $T/NAME.expect
guest() {
	local h=$1 name=$2 seed=$3
	shift 3
	mkdir -p "$T/$h/vms"
	"$SYNTH_GUEST" --listen "$T/$h/vms/$name.sock" --events 30000 --cpus 2 --epochs 2 \
		--seed "$seed" --throttle-us 5000 --expect "$T/$name.expect" "$@" \
		>/dev/null 2>"$T/$name.err" &
	eval "GUEST_$name=$!"
	PIDS+=("$!")
}

T_START=$(date +%s)
agent hostA shard1
agent hostB shard2
wait_for ch_has shard1.boots || fail "hostA's agent did not create its tables"
# a1's first events are traced without stacks (a guest's before options/stacktrace
# is set): replicated while a1 streams on, they must not be sent as waiting for one
guest hostA a1 61 --late-stacks 7
guest hostB b1 63 --answer-time
guest hostB b2 64
wait_for grep -q "VM b2: serving" "$T/hostB.log" || fail "hostB does not serve b2"
wait_for ch_has shard2.boots || fail "hostB's agent did not create its tables"
ch_fleet_distributed
wait_for ch_rows_at_least fleet.boots 3 ||
	fail "nothing replicated"
ok "both hosts replicating while their guests stream"

# hostA's agent killed -9 at random instants while it replicates every 2 s (and
# streams); then ClickHouse killed -9 mid-replication, down while the guests stream on
for i in 1 2 3; do
	sleep "0.$((RANDOM % 5 + 3))"
	kill -9 "$AGENT_hostA"
	wait "$AGENT_hostA" 2>/dev/null
	agent hostA shard1
done
# a2 crashes: no BYE, then GUEST_PANICKED on its QMP socket (after the kills: a
# restarted agent cannot tell a crash that came before it from a power-off)
T_A2=$(date +%s)
python3 "$FAKE_QMP" "$T/hostA/vms/a2.qmp" "$T/a2.panic" &
PIDS+=("$!")
guest hostA a2 62 --no-bye
ch_kill
wait_for grep -q "replication to .*shard2: .*retrying every" "$T/hostB.log" ||
	fail "hostB did not notice ClickHouse away"
# a VM that boots, streams and ends while ClickHouse is away: every frame acknowledged
guest hostB b3 65
wait "$GUEST_b3" || { cat "$T/b3.err"; fail "guest b3 while ClickHouse is down"; }
[ -z "$(chq 'SELECT 1' 2>/dev/null)" ] || fail "ClickHouse was not down"
for g in a1 b1 b2; do
	wait "$(eval echo "\$GUEST_$g")" || { cat "$T/$g.err"; fail "guest $g"; }
done
wait "$GUEST_a2" || { cat "$T/a2.err"; fail "guest a2"; }
touch "$T/a2.panic"
wait_for grep -q "a2: QMP GUEST_PANICKED .* marked crashed" "$T/hostA.log" ||
	fail "a2 not marked crashed"
ok "ClickHouse down: a VM streamed its whole boot, every guest acknowledged"
ch_start
wait_for grep -q "replication to .*: caught up" "$T/hostB.log" || fail "hostB did not catch up"
# A stop ships what is committed (a last round).
for h in hostA hostB; do
	kill -TERM "$(eval echo "\$AGENT_$h")"
	wait "$(eval echo "\$AGENT_$h")" || fail "$h's agent exit status"
done

# `ship` of an existing store, as a third host into shard2
mkdir -p "$T/hostC/state"
cp "$T/hostB/state/b1.db" "$T/hostC/state/c1.db"
"$HOST_AGENT" ship "$T/hostC/state/c1.db" "${CH_URL}?database=shard2" --host hostC \
	2>"$T/ship.err" || { cat "$T/ship.err"; fail "ship"; }
grep -q "c1: 1 boots shipped (0 unchanged)" "$T/ship.err" || { cat "$T/ship.err"; fail "ship c1"; }
"$HOST_AGENT" ship "$T/hostC/state/c1.db" "${CH_URL}?database=shard2" --host hostC \
	2>"$T/ship.err" || fail "ship again"
grep -q "c1: 0 boots shipped (1 unchanged)" "$T/ship.err" || { cat "$T/ship.err"; fail "reship"; }
# a lost watermark: everything sent again, nothing counted twice
rm "$T/hostA/state/a1.db.ship"
"$HOST_AGENT" ship a1 "${CH_URL}?database=shard1" --host hostA --state-dir "$T/hostA/state" \
	2>"$T/ship.err" || { cat "$T/ship.err"; fail "ship a1"; }
grep -q "a1: 1 boots shipped" "$T/ship.err" || { cat "$T/ship.err"; fail "ship a1 again"; }
ok "ship: a new store, then nothing new; a lost watermark sends it again"

FLEET="${CH_URL}?database=fleet"
STORES="hostA:a1 hostA:a2 hostB:b1 hostB:b2 hostB:b3 hostC:c1"

# folded: the union of every store's, summed by stack
# shellcheck disable=SC2086
fleet_cmp_folded $STORES
ok "fleet folded = union of 6 stores' ($(awk '{s += $NF} END {print s}' "$T/fleet.folded") events)"

# boots: each store's lines, with host and domain in front
# shellcheck disable=SC2086
fleet_cmp_boots $STORES
grep -q "^hostA a2 1 .* crashed " "$T/fleet.boots" || fail "a2 not crashed in the fleet"
ok "fleet boots = union of the stores' boots ($(wc -l <"$T/fleet.boots") boots)"

# filters: the crashed boots' stacks are a2's; one host's boots
store hostA folded --domain-name a2 | sort >"$T/a2.folded"
fleet folded --ended crashed | sort >"$T/crashed.folded"
cmp -s "$T/a2.folded" "$T/crashed.folded" || fail "fleet folded --ended crashed != a2's"
[ "$(fleet boots --host hostB | tail -n +2 | wc -l)" = 3 ] || fail "boots --host hostB"
fleet top -n 3 --ended crashed >"$T/top" || fail "fleet top"
head -1 "$T/top" | grep -q "^30000 events in 1 boots" || { cat "$T/top"; fail "top header"; }
[ "$(grep -c '^#' "$T/top")" = 3 ] || { cat "$T/top"; fail "top -n 3"; }
top1=$(awk '/^#1 / {print $2}' "$T/top")
max=$(awk '{if ($NF > m) m = $NF} END {print m}' "$T/a2.folded")
[ "$top1" = "$max" ] || fail "top #1 $top1 events, a2's biggest stack $max"
store hostB folded --domain-name b1 | sort >"$T/b1.folded"
fleet folded --domain-name b1 | sort | cmp -s - "$T/b1.folded" || fail "folded --domain-name b1"
# time: boots alive in a range of host real time (a2 started after T_A2)
[ "$(fleet boots --since "$(($(date +%s) + 3600))" | tail -n +2 | wc -l)" = 0 ] ||
	fail "boots alive in an hour"
[ "$(fleet boots --until "$((T_START - 1))" | tail -n +2 | wc -l)" = 0 ] ||
	fail "boots before the test"
[ "$(fleet boots --since "$T_START" | tail -n +2 | wc -l)" = 6 ] || fail "boots --since"
want=0
for s in hostA:a1 hostA:a2; do
	n=$("$SQLITE3" "$T/${s%%:*}/state/${s#*:}.db" "SELECT COUNT(*) FROM boots WHERE
		COALESCE(end_time, last_time) >= $T_A2 * 1000000")
	want=$((want + n))
done
[ "$want" -ge 1 ] || fail "a2 not alive after its start"
[ "$(fleet boots --since "$T_A2" --host hostA | tail -n +2 | wc -l)" = "$want" ] ||
	fail "hostA's boots --since a2's start: not the $want of the stores"
ok "filters: --ended crashed, --host, --domain-name, --since/--until; top of the crashed boots"

# the stores are what the guests had: replication never held an ACK back
for s in hostA:a1 hostA:a2 hostB:b1 hostB:b2 hostB:b3; do
	r=$("$SQLITE3" "$T/${s%%:*}/state/${s#*:}.db" "SELECT SUM(gap_frames) FROM streams")
	[ "$r" = 0 ] || fail "${s#*:}: $r gap frames"
	store "${s%%:*}" folded --domain-name "${s#*:}" | sort >"$T/got.folded"
	sort "$T/${s#*:}.expect" | cmp -s - "$T/got.folded" ||
		fail "${s#*:}: the store differs from the guest's ground truth"
done
ok "every store equals its guest's ground truth"
# one row per stack of each boot, however often a streaming boot was shipped
for s in hostA:a1 hostA:a2 hostB:b1 hostB:b2 hostB:b3 hostC:c1; do
	store "${s%%:*}" folded --domain-name "${s#*:}"
done | wc -l >"$T/nstacks"
for t in shard1.stacks shard2.stacks; do chq "OPTIMIZE TABLE $t FINAL" || fail "optimize $t"; done
rows=$(chq "SELECT count() FROM fleet.stacks")
live=$(chq "SELECT count() FROM fleet.stacks WHERE events > 0")
[ "$live" = "$(cat "$T/nstacks")" ] || fail "fleet.stacks: $live rows with events, the stores have $(cat "$T/nstacks") stacks"
ok "fleet.stacks after merges: $live rows with events (one per stack of each boot), $((rows - live)) stacks gone to 0"

# events: every boot's events of every store, as `report events --json` gives them,
# equal the fleet's exactly (each event's text, cpu, pid, time and whole stack object)
# shellcheck disable=SC2086
n=$(fleet_cmp_events $STORES) || fail "fleet events != union of the stores': $n"
[ "$n" -ge 150000 ] || fail "only $n events in the stores"
ok "fleet events = union of 6 stores' events --json, exactly ($n events)"

# no loss, no duplicate, through the agent's kills -9 and ClickHouse's: one row per
# event once merged, as many as the stores have
for t in shard1.events shard2.events shard1.event_stacks shard2.event_stacks; do
	chq "OPTIMIZE TABLE $t FINAL" || fail "optimize $t"
done
rows=$(chq "SELECT count() FROM fleet.events")
[ "$rows" = "$n" ] || fail "fleet.events: $rows rows after merges, the stores have $n events"
keys=$(chq "SELECT uniqExact(host, domain, boot, cpu, page, idx) FROM fleet.events")
[ "$keys" = "$n" ] || fail "fleet.events: $keys keys for $n events"
ok "fleet.events after merges: $rows rows, one per event of the stores"

# the last second before every crash: a2's events of its last second of trace
fleet_last_second hostA a2
m=$LAST_EVENTS
[ "$m" -lt 30000 ] || fail "$m events in a2's last second"
fleet top -n 3 --last 1 --ended crashed >"$T/last.top" || fail "top --last 1"
head -1 "$T/last.top" | grep -q "^$m events in 1 boots" || { cat "$T/last.top"; fail "top --last"; }
[ "$(awk '/^#1 / {print $2}' "$T/last.top")" = \
  "$(awk '{if ($NF > m) m = $NF} END {print m}' "$T/last.folded")" ] || fail "top --last #1"
ok "the last second before the crash: events ($m) equal the store's, top and folded count them"

# sealing: every boot ended, each sealed once; top and folded of their events from the
# aggregates equal the stores' and, by hand, the events rows' (through the shards)
sealed=$(chq "SELECT count(), sum(events) FROM fleet.sealed FINAL")
[ "$sealed" = "6	$n" ] || fail "fleet.sealed: $sealed, want 6 boots of $n events"
fleet folded --event kmalloc | sort >"$T/ev.folded"
cmp -s "$T/union.folded" "$T/ev.folded" ||
	{ diff "$T/union.folded" "$T/ev.folded" | head; fail "folded --event != the stores'"; }
a2="host = 'hostA' AND domain = 'a2'"
ch_folded fleet "$a2 AND ts + 1000000000 >= (SELECT max(ts) FROM fleet.events WHERE $a2)" \
	>"$T/hand.last"
cmp -s "$T/hand.last" <(sort "$T/last.folded") || fail "folded --last 1 != a2's last second"
s=$(chq "SELECT intDiv(min(host_us), 1000000) + 1 FROM fleet.events")
u=$((s + 1))
fleet folded --event kmalloc --since "$s" --until "$u" | sort >"$T/hs.folded"
ch_folded fleet "host_us >= $s * 1000000 AND host_us <= $u * 1000000 AND (host, domain, boot)
	GLOBAL IN (SELECT host, domain, boot FROM fleet.boots FINAL
	WHERE end_us >= $s * 1000000 AND start_us <= $u * 1000000)" >"$T/hand.hs"
[ -s "$T/hand.hs" ] || fail "no events in [$s, $u]"
cmp -s "$T/hand.hs" "$T/hs.folded" || fail "folded --since $s --until $u != the events rows'"
ok "sealed: 6 boots; folded --event, --last 1, --since/--until from the aggregates exact"
