# A private clickhouse-server for the fleet tests (sourced after lib.sh): its own
# config, users and data under $T, ports free on localhost, no system service. Its
# cluster `fleet` has two shards on this one server, as ClickHouse's own test layout
# (test_cluster_two_shards_localhost) has, each shard its own database (shard1,
# shard2) through <default_database>: one per host of the fleet.
: "${CLICKHOUSE_SERVER:?}" "${CLICKHOUSE_CLIENT:?}"
CH_PID=

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ch_config() {
	mkdir -p "$T/ch/data" "$T/ch/log"
	CH_HTTP=$(free_port)
	CH_TCP=$(free_port)
	cat >"$T/ch/users.xml" <<EOU
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
EOU
	cat >"$T/ch/config.xml" <<EOC
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$T/ch/log/server.log</log>
    <errorlog>$T/ch/log/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>$CH_HTTP</http_port>
  <tcp_port>$CH_TCP</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <max_connections>64</max_connections>
  <max_concurrent_queries>16</max_concurrent_queries>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <mark_cache_size>67108864</mark_cache_size>
  <path>$T/ch/data/</path>
  <tmp_path>$T/ch/data/tmp/</tmp_path>
  <user_files_path>$T/ch/data/user_files/</user_files_path>
  <users_config>$T/ch/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mlock_executable>false</mlock_executable>
  <remote_servers>
    <fleet>
      <shard><replica><host>127.0.0.1</host><port>$CH_TCP</port>
        <default_database>shard1</default_database></replica></shard>
      <shard><replica><host>127.0.0.1</host><port>$CH_TCP</port>
        <default_database>shard2</default_database></replica></shard>
    </fleet>
  </remote_servers>
</yandex>
EOC
	CH_URL="http://127.0.0.1:$CH_HTTP/"
}

ch_start() {
	"$CLICKHOUSE_SERVER" --config-file="$T/ch/config.xml" >>"$T/ch/log/stdout" 2>&1 &
	CH_PID=$!
	wait_for chq "SELECT 1" || { tail "$T/ch/log/server.err.log"; fail "clickhouse-server"; }
}

ch_kill() {
	kill -9 "$CH_PID" 2>/dev/null
	wait "$CH_PID" 2>/dev/null
	CH_PID=
}

# chq SQL: one query through clickhouse-client, TabSeparated
chq() { "$CLICKHOUSE_CLIENT" --host 127.0.0.1 --port "$CH_TCP" -q "$1"; }

ch_has() { [ "$(chq "EXISTS TABLE $1")" = 1 ]; }
ch_rows_at_least() { [ "$(chq "SELECT count() FROM $1")" -ge "$2" ]; }

# The fleet's databases: a shard database per host, and `fleet` with a Distributed
# table over both shards for each of the shipper's tables (README.md, Fleets).
ch_fleet_schema() {
	chq "CREATE DATABASE IF NOT EXISTS shard1" || fail "create shard1"
	chq "CREATE DATABASE IF NOT EXISTS shard2" || fail "create shard2"
	chq "CREATE DATABASE IF NOT EXISTS fleet" || fail "create fleet"
}
ch_fleet_distributed() {
	for t in boots stacks lost stats events event_stacks sealed event_counts event_totals \
		 stack_names; do
		chq "CREATE TABLE IF NOT EXISTS fleet.$t AS shard1.$t
		     ENGINE = Distributed(fleet, '', $t, rand())" || fail "fleet.$t"
	done
}

# ch_folded DB COND: folded counts of the events rows of DB that pass COND, by hand
# (events FINAL joined with their stacks), sorted as `sort` sorts
ch_folded() {
	chq "SELECT folded, sum(n) FROM (SELECT host, domain, boot, stack, count() AS n
	     FROM $1.events FINAL WHERE $2 GROUP BY host, domain, boot, stack)
	     ANY INNER JOIN (SELECT host, domain, boot, stack, folded FROM $1.event_stacks
	     FINAL) USING (host, domain, boot, stack) GROUP BY folded FORMAT TSV" |
		tr '\t' ' ' | sort
}

# The fleet reports against the stores'. A store is named HOST:DOMAIN, its host's
# state directory $T/HOST/state; the fleet is $FLEET (a URL of the fleet database).
store() { local h=$1; shift; "$HOST_AGENT" report --state-dir "$T/$h/state" "$@"; }
fleet() { "$HOST_AGENT" report --clickhouse "$FLEET" "$@"; }

# fleet_cmp_folded STORE...: the fleet's folded stacks equal the stores' summed by
# stack ($T/union.folded, $T/fleet.folded)
fleet_cmp_folded() {
	local s
	for s in "$@"; do
		store "${s%%:*}" folded --boot all --domain-name "${s#*:}"
	done | awk '{n = $NF; $NF = ""; sub(/ $/, ""); c[$0] += n} END {for (k in c) print k, c[k]}' |
		sort >"$T/union.folded"
	fleet folded | sort >"$T/fleet.folded" || fail "fleet folded"
	[ -s "$T/union.folded" ] || fail "no stacks in the stores"
	cmp -s "$T/union.folded" "$T/fleet.folded" ||
		{ diff "$T/union.folded" "$T/fleet.folded" | head; fail "fleet folded != union of stores"; }
}

# fleet_cmp_boots STORE...: the fleet's boots are the stores' lines with host and
# domain in front ($T/union.boots, $T/fleet.boots)
fleet_cmp_boots() {
	local s
	for s in "$@"; do
		store "${s%%:*}" boots --domain-name "${s#*:}" | grep -E '^[0-9]' |
			sed "s/^/${s%%:*} ${s#*:} /"
	done | awk '{$1 = $1; print}' | sort >"$T/union.boots"
	fleet boots | tail -n +2 | awk '{$1 = $1; print}' | sort >"$T/fleet.boots" ||
		fail "fleet boots"
	cmp -s "$T/union.boots" "$T/fleet.boots" ||
		{ diff "$T/union.boots" "$T/fleet.boots"; fail "fleet boots != union of stores"; }
}

# fleet_cmp_events STORE...: every boot's events of the stores, as `report events
# --json` gives them, equal the fleet's exactly (events-cmp.py; $T/union.events,
# $T/fleet.events); prints the number of events, or what differs (status 1)
fleet_cmp_events() {
	local s h d b
	for s in "$@"; do
		h=${s%%:*} d=${s#*:}
		for b in $("$SQLITE3" "$T/$h/state/$d.db" "SELECT id FROM boots ORDER BY id"); do
			echo "$h $d $(store "$h" events --json --boot "$b" --limit 1000000000 \
				--domain-name "$d")"
		done
	done >"$T/union.events"
	fleet events --json --limit 1000000000 >"$T/fleet.events" || { echo "fleet events failed"; return 1; }
	python3 "$(dirname "${BASH_SOURCE[0]}")/events-cmp.py" "$T/union.events" "$T/fleet.events"
}

# fleet_last_second HOST DOMAIN: after fleet_cmp_events, with DOMAIN the fleet's only
# crashed boot: `events --last 1 --ended crashed` equal the store's events of its last
# second of trace, and `folded` of the same counts them ($T/last.folded). Sets
# LAST_EVENTS to their number.
fleet_last_second() {
	local lastts since
	lastts=$(python3 -c 'import json, sys
print(max(e["ts"] for l in open(sys.argv[1]) for e in json.loads(l.split(" ", 2)[2])["events"]
          if l.startswith(sys.argv[2] + " ")))' "$T/union.events" "$1 $2")
	since=$(python3 -c "print('%.9f' % (($lastts - 10**9) / 1e9))")
	echo "$1 $2 $(store "$1" events --json --domain-name "$2" --since "$since" \
		--limit 1000000000)" >"$T/$2.last"
	fleet events --json --last 1 --ended crashed --limit 1000000000 >"$T/fleet.last" ||
		fail "fleet events --last 1"
	LAST_EVENTS=$(python3 "$(dirname "${BASH_SOURCE[0]}")/events-cmp.py" "$T/$2.last" \
		"$T/fleet.last") || fail "fleet events --last 1 --ended crashed != $2's last second: $LAST_EVENTS"
	[ "$LAST_EVENTS" -gt 0 ] || fail "no events in $2's last second"
	fleet folded --last 1 --ended crashed >"$T/last.folded" || fail "folded --last 1"
	[ "$(awk '{s += $NF} END {print s}' "$T/last.folded")" = "$LAST_EVENTS" ] ||
		fail "folded --last 1 --ended crashed does not count $2's $LAST_EVENTS last events"
}
