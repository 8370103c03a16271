# Boot-time activation: the kernel command line carries
#   trace_options=stackmap,stacktrace trace_event=kmem:kmem_cache_alloc
# Events before the map is published (fs_initcall) must be full stacks,
# later ones <stack_id N> that resolve in stack_map.
. /scenarios/lib.sh
echo 0 > $T/tracing_on
echo 0 > $T/events/enable

grep -q 'trace_options=stackmap,stacktrace' /proc/cmdline ||
	fail "not booted with trace_options=stackmap,stacktrace"
[ "$(cat $T/options/stackmap)" = 1 ] || fail "options/stackmap is not 1 after boot"
[ "$(cat $T/options/stacktrace)" = 1 ] || fail "options/stacktrace is not 1 after boot"

cat $T/stack_map_stat
entries=$(stat entries)
successes=$(stat successes)
[ "${entries:-0}" -gt 0 ] || fail "stack_map has no entries after boot"
[ "${successes:-0}" -gt 0 ] || fail "stack_map_stat has no successes after boot"

# Timestamps of the first full stack and the first stack_id event.
awk '
	match($0, / [0-9]+\.[0-9]+: /) { ts = substr($0, RSTART + 1, RLENGTH - 3) }
	/: <stack trace>/ { stacks++; if (!full) full = ts }
	/: <stack_id [0-9]+>/ {
		ids++
		if (!first_id) {
			first_id = ts
			match($0, /<stack_id [0-9]+>/)
			id = substr($0, RSTART + 10, RLENGTH - 11)
		}
	}
	END { printf "full=%d first_full_ts=%s ids=%d first_id_ts=%s first_id=%s\n", stacks, full == "" ? "none" : full, ids, first_id == "" ? "none" : first_id, id == "" ? "none" : id }
' $T/trace > /tmp/summary
cat /tmp/summary
set -- $(sed 's/[a-z_]*=//g' /tmp/summary)
stacks=$1 first_full=$2 ids=$3 first_id_ts=$4 id=$5
say "BOOT full_stacks=$stacks stack_ids=$ids first_full_ts=$first_full first_id_ts=$first_id_ts"
[ "$ids" -gt 0 ] || fail "no <stack_id> event recorded since boot"
[ "$stacks" -gt 0 ] || fail "no early-boot full stack recorded before the map was published"
awk -v a="$first_full" -v b="$first_id_ts" 'BEGIN { exit !(a < b) }' ||
	fail "the first full stack ($first_full) is not older than the first stack_id ($first_id_ts)"
grep -q "^stack_id $id \[" $T/stack_map || fail "stack_id $id from the trace is not in stack_map"
say "BOOT stack_id $id resolves:"
awk -v id="$id" '$1 == "stack_id" { on = ($2 == id) } on' $T/stack_map
say "PASS boot-time activation"
