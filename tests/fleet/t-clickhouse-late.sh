# Events whose stacks come after they were shipped (ch-late-stacks.c forces the
# orders): a boot replicated while the ingest merges the CPU's newest chunk with older
# ones, and a boot replicated while disconnected whose stream then resumes, with a
# few waiting pages and with more than the watermark remembers. The
# events are sent again with their stacks: the fleet's events equal the store's, none
# unresolved when the store resolves every one.
. "$1"
. "$(dirname "$0")/ch-lib.sh"
: "${CH_LATE_STACKS:?}"
cleanup_ch() {
	[ -z "$CH_PID" ] || kill -9 "$CH_PID" 2>/dev/null
	cleanup
}
trap cleanup_ch EXIT

ch_config
ch_start
for s in merge resume overflow; do
	chq "CREATE DATABASE IF NOT EXISTS $s" || fail "create database $s"
	url="${CH_URL}?database=$s"
	mkdir -p "$T/$s"
	"$CH_LATE_STACKS" "$s" "$T/$s" "$url" || fail "ch-late-stacks $s"
	echo "hostT t $("$HOST_AGENT" report --state-dir "$T/$s" events --json --limit 1000000 \
		--domain-name t)" >"$T/$s.union"
	"$HOST_AGENT" report --clickhouse "$url" events --json --limit 1000000 >"$T/$s.fleet" ||
		fail "$s: fleet events"
	n=$(grep -o '"kind":"[a-z_]*"' "$T/$s.union" | sort | uniq -c | tr -s ' ')
	case $s in merge) want=48 ;; resume) want=40 ;; overflow) want=2408 ;; esac
	[ "$n" = " $want \"kind\":\"stack_id\"" ] ||
		fail "$s: the store's events: $n, want $want resolved"
	if ! r=$(python3 "$(dirname "$0")/events-cmp.py" "$T/$s.union" "$T/$s.fleet"); then
		echo "$r"
		echo "the fleet's stacks: $(grep -o '"kind":"[a-z_]*"' "$T/$s.fleet" | sort |
			uniq -c | tr -s ' \n' ' ')"
		fail "$s: fleet events != the store's"
	fi
	ok "$s: fleet events = the store's ($r events, every stack resolved)"
done
