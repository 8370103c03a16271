# A boot replicated while the ingest merges the CPU's newest chunk with older ones
# (ch-tail-merge.c forces the order): events whose stacks came after that round are
# sent again with them. The fleet's events equal the store's, and none of the fleet's
# is unresolved when the store resolves every one.
. "$1"
. "$(dirname "$0")/ch-lib.sh"
: "${CH_TAIL_MERGE:?}"
cleanup_ch() {
	[ -z "$CH_PID" ] || kill -9 "$CH_PID" 2>/dev/null
	cleanup
}
trap cleanup_ch EXIT

ch_config
ch_start
chq "CREATE DATABASE IF NOT EXISTS merge" || fail "create database"
URL="${CH_URL}?database=merge"
mkdir -p "$T/state"
"$CH_TAIL_MERGE" "$T/state" "$URL" || fail "ch-tail-merge"
ok "a boot shipped before, while and after its newest chunk was a merge of older ones"

echo "hostT t $(report events --json --limit 1000000 --domain-name t)" >"$T/union.events"
"$HOST_AGENT" report --clickhouse "$URL" events --json --limit 1000000 >"$T/fleet.events" ||
	fail "fleet events"
n=$(grep -o '"kind":"[a-z_]*"' "$T/union.events" | sort | uniq -c | tr -s ' ')
[ "$n" = " 48 \"kind\":\"stack_id\"" ] || fail "the store's events: $n, want 48 resolved"
if ! r=$(python3 "$(dirname "$0")/events-cmp.py" "$T/union.events" "$T/fleet.events"); then
	echo "$r"
	echo "the fleet's stacks: $(grep -o '"kind":"[a-z_]*"' "$T/fleet.events" | sort |
		uniq -c | tr -s ' \n' ' ')"
	fail "fleet events != the store's"
fi
ok "fleet events = the store's ($r events, every stack resolved)"
