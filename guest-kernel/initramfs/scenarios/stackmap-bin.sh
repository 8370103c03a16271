# Fill the map with real stacks (kmem_cache_alloc events with stacktrace),
# freeze it, and copy stack_map, stack_map_stat and stack_map_bin to the
# host over the console; the host parses stack_map_bin with the seed's
# stackmap_dump.py and checks that it agrees with stack_map.
. /scenarios/lib.sh
echo 0 > $T/tracing_on
echo > $T/trace
echo 0 > $T/stack_map || fail "stack_map reset"
echo 1 > $T/options/stackmap
echo 1 > $T/options/stacktrace
echo 1 > $T/events/kmem/kmem_cache_alloc/enable
echo 1 > $T/tracing_on
i=0
while [ $i -lt 200 ]; do
	ls /proc/self/ > /dev/null
	: > /tmp/f.$((i % 8))
	i=$((i + 1))
done
echo 0 > $T/tracing_on
echo 0 > $T/events/enable
echo 0 > $T/options/stacktrace

# Every stack_id in the trace must resolve in stack_map.
sed -n 's/.*<stack_id \([0-9]*\)>.*/\1/p' $T/trace | sort -u > /tmp/trace-ids
awk '$1 == "stack_id" { print $2 }' $T/stack_map | sort -u > /tmp/map-ids
say "BIN trace_ids=$(wc -l < /tmp/trace-ids) map_ids=$(wc -l < /tmp/map-ids)"
[ -s /tmp/trace-ids ] || fail "no <stack_id> events in the trace"
missing=0
for id in $(cat /tmp/trace-ids); do
	grep -qx "$id" /tmp/map-ids || missing=$((missing + 1))
done
[ "$missing" -eq 0 ] || fail "$missing stack_ids of the trace are not in stack_map"

cat $T/stack_map > /tmp/stack_map
cat $T/stack_map_bin > /tmp/stack_map_bin || fail "reading stack_map_bin"
cat $T/stack_map_stat > /tmp/stack_map_stat
emit stack_map /tmp/stack_map
emit stack_map_bin /tmp/stack_map_bin
emit stack_map_stat /tmp/stack_map_stat
echo 0 > $T/options/stackmap
say "PASS stack_map_bin copied"
