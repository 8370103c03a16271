# The reports a kernel engineer reads: top, events, stack, folded, JSON, config file.
. "$1"
cat >"$T/conf" <<CONF
[host-agent]
listen=$T/sock
domain-name=vm2
CONF
start_daemon --config "$T/conf"
"$SYNTH_GUEST" --connect "$T/sock" --events 10000 --stacks 50 --seed 21 --expect "$T/expect" -q \
	>/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon
[ -f "$(db_of vm2)" ] || fail "config file's domain-name not used"
# top: the hottest stack first, with its share and resolved frames
report top -n 3 --domain-name vm2 >"$T/top" || fail "top"
head -1 "$T/top" | grep -q "^10000 events in" || { cat "$T/top"; fail "top header"; }
first=$(sort -k2 -n -r "$T/expect" | grep -v "no stack" | head -1 | awk '{print $NF}')
grep -m1 "^#1 " "$T/top" | grep -q " $first events" || { cat "$T/top"; fail "top #1 count != $first"; }
grep -q "synth_fn_[0-9]*+0x" "$T/top" || fail "top frames not symbolized"
# JSON parses and carries the same total
report top --json --domain-name vm2 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["events"]==10000, d["events"]' ||
	fail "top --json"
report events -n 7 --json --domain-name vm2 | python3 -c '
import json,sys
d=json.load(sys.stdin); ev=d["events"]
assert len(ev)==7, len(ev)
assert all(e["event"].startswith("kmem/kmalloc") for e in ev)
assert sorted(e["ts"] for e in ev)==[e["ts"] for e in ev]
assert sum(1 for e in ev if e["stack"]["kind"] in ("stack_id","full")) >= 5' || fail "events --json"
# the last 50 are the tail of the last 5000: no CPU's events missing from the merge
report events -n 5000 --json --domain-name vm2 >"$T/ev5000" || fail "events -n 5000"
report events -n 50 --json --domain-name vm2 >"$T/ev50" || fail "events -n 50"
python3 -c '
import json,sys
a=json.load(open(sys.argv[1]))["events"]; b=json.load(open(sys.argv[2]))["events"]
assert len(a)==5000 and [e["ts"] for e in a[-50:]]==[e["ts"] for e in b]' "$T/ev5000" "$T/ev50" ||
	fail "last 50 events differ from the tail of the last 5000"
# a time range: the events between two of the last 50, both included, and only those
report events -n 50 --json --domain-name vm2 >"$T/ev50" || fail "events -n 50"
range=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["events"]; print("%.9f %.9f" % (e[10]["ts"]/1e9, e[20]["ts"]/1e9))' "$T/ev50")
report events -n 1000 --json --since "${range% *}" --until "${range#* }" --domain-name vm2 >"$T/evr" ||
	fail "events --since/--until"
python3 -c '
import json,sys
a=json.load(open(sys.argv[1]))["events"][10:21]; b=json.load(open(sys.argv[2]))["events"]
assert [e["ts"] for e in a]==[e["ts"] for e in b], (len(a), len(b))' "$T/ev50" "$T/evr" || fail "time range"
report boots --json --domain-name vm2 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[0]["ended"]=="clean"' ||
	fail "boots --json"
report stack 0xd --json --domain-name vm2 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["epochs"][0]["stack"]["kind"]=="stack_id"' ||
	fail "stack --json"
report bogus --domain-name vm2 2>/dev/null && fail "unknown report accepted"
report top --domain-name nosuch 2>/dev/null && fail "missing domain accepted"
"$HOST_AGENT" --version | grep -q "^host-agent " || fail "--version"
"$HOST_AGENT" --help | grep -q -- "--socket" || fail "--help"
"$HOST_AGENT" --domain-name ../etc --listen "$T/x" --state-dir "$T/state" 2>/dev/null &&
	fail "a domain name with a path accepted"
ok "reports"
# one daemon per domain
start_daemon --listen "$T/sock3" --domain-name vm2
wait_for test -S "$T/sock3" || fail "daemon"
"$HOST_AGENT" --state-dir "$T/state" --listen "$T/sock4" --domain-name vm2 2>"$T/second" &&
	fail "a second daemon on the same domain started"
grep -q "another host-agent is already storing this domain" "$T/second" || fail "lock message"
stop_daemon
ok "one daemon per domain"
# a store read that fails fails the report with the store's error, never reads as no
# rows (an unresolved stack, no events waiting, no marker)
mkdir -p "$T/broken"
cp "$(db_of vm2)" "$T/broken/vm2.db"
"$SQLITE3" "$T/broken/vm2.db" "ALTER TABLE stacks RENAME TO stacks_gone;" || fail "sqlite3"
for r in "top" "events -n 5" "stack 0xd" "boots"; do
	# shellcheck disable=SC2086
	"$HOST_AGENT" report --state-dir "$T/broken" --domain-name vm2 $r >"$T/broken/out" 2>&1 &&
		{ cat "$T/broken/out"; fail "report $r over a store without stacks succeeded"; }
	grep -q "stacks" "$T/broken/out" || { cat "$T/broken/out"; fail "report $r: no store error"; }
done
cp "$(db_of vm2)" "$T/broken/vm2.db"
"$SQLITE3" "$T/broken/vm2.db" "ALTER TABLE gaps RENAME TO gaps_gone;" || fail "sqlite3"
"$HOST_AGENT" report --state-dir "$T/broken" --domain-name vm2 events -n 5 >"$T/broken/out" 2>&1 &&
	fail "events over a store without gaps succeeded"
grep -q "gap" "$T/broken/out" || { cat "$T/broken/out"; fail "events: no store error"; }
cp "$(db_of vm2)" "$T/broken/vm2.db"
"$SQLITE3" "$T/broken/vm2.db" "ALTER TABLE texts RENAME TO texts_gone;" || fail "sqlite3"
"$HOST_AGENT" report --state-dir "$T/broken" --domain-name vm2 top >"$T/broken/out" 2>&1 &&
	fail "top over a store without texts (its kallsyms) succeeded"
grep -q "texts" "$T/broken/out" || { cat "$T/broken/out"; fail "top: no store error"; }
cp "$(db_of vm2)" "$T/broken/vm2.db"
"$SQLITE3" "$T/broken/vm2.db" "ALTER TABLE clock_samples RENAME TO clock_gone;" || fail "sqlite3"
"$HOST_AGENT" report --state-dir "$T/broken" --domain-name vm2 boots --json >"$T/broken/out" 2>&1 &&
	fail "boots --json over a store without clock samples succeeded"
grep -q "clock_samples" "$T/broken/out" || { cat "$T/broken/out"; fail "boots --json: no store error"; }
ok "a store error fails the report"
