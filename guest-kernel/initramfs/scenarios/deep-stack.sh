# Deep stacks: a stack of at most 64 frames (FTRACE_STACKMAP_MAX_DEPTH) is
# stored in the map as <stack_id N>; a deeper one must be recorded as a full
# kernel stack with every frame, never truncated into the map.
#
# Uses <debugfs>/ftrace_stackmap_test_deep (CONFIG_FTRACE_STACKMAP_TEST):
# writing N recurses N times through stackmap_test_recurse() and records the
# stack with trace_dump_stack(), the "stacktrace" trigger's path.
. /scenarios/lib.sh
hook=/sys/kernel/debug/ftrace_stackmap_test_deep
[ -e $hook ] || fail "$hook missing (CONFIG_FTRACE_STACKMAP_TEST)"

echo 0 > $T/tracing_on
echo 0 > $T/events/enable
echo nop > $T/current_tracer
echo 0 > $T/options/stacktrace
echo 1 > $T/options/stackmap
echo 0 > $T/stack_map || fail "stack_map reset"
echo 1 > $T/tracing_on

# record N: clear the buffer, recurse N deep, leave in /tmp/trace.N
#   frames.N  number of frames of the full stack (0 if none)
#   ids.N     number of <stack_id> events, id.N the first id
record() {
	echo > $T/trace
	echo "$1" > $hook || fail "write $1 to $hook"
	cat $T/trace > /tmp/trace.$1
	grep -c '^ => ' /tmp/trace.$1 > /tmp/frames.$1
	grep -c '<stack_id [0-9]*>' /tmp/trace.$1 > /tmp/ids.$1
	sed -n 's/.*<stack_id \([0-9]*\)>.*/\1/p' /tmp/trace.$1 | head -1 > /tmp/id.$1
	say "DEEP n=$1 full_frames=$(cat /tmp/frames.$1) stack_ids=$(cat /tmp/ids.$1) recurse_frames=$(grep -c '^ => stackmap_test_recurse' /tmp/trace.$1)"
}

# 1. Deep: 80 levels. Must be one full stack holding all 80 recursion
# frames (recurse(0) tail-calls trace_dump_stack(), so levels 80..1 show).
record 80
[ "$(cat /tmp/ids.80)" -eq 0 ] || fail "an 80-deep stack was stored as a stack_id"
frames=$(cat /tmp/frames.80)
[ "$frames" -gt 64 ] || fail "80-deep stack recorded with only $frames frames"
rec=$(grep -c '^ => stackmap_test_recurse' /tmp/trace.80)
[ "$rec" -eq 80 ] || fail "80-deep stack has $rec stackmap_test_recurse frames, expected 80"
base=$((frames - 80))
say "DEEP frames outside the recursion: $base"

# 2. Exactly 64 frames: fits the map, one stack_id of depth 64.
n64=$((64 - base))
record $n64
[ "$(cat /tmp/frames.$n64)" -eq 0 ] || fail "a 64-frame stack was recorded in full"
[ "$(cat /tmp/ids.$n64)" -eq 1 ] || fail "a 64-frame stack gave $(cat /tmp/ids.$n64) stack_id events"
id=$(cat /tmp/id.$n64)
grep "^stack_id $id " $T/stack_map
grep -q "^stack_id $id \[ref 1, depth 64\]" $T/stack_map ||
	fail "stack_id $id is not a depth-64 entry in stack_map"

# 3. 65 frames: one more than the map holds, recorded in full.
n65=$((65 - base))
before=$(stat entries)
record $n65
[ "$(cat /tmp/ids.$n65)" -eq 0 ] || fail "a 65-frame stack was stored as a stack_id"
[ "$(cat /tmp/frames.$n65)" -eq 65 ] ||
	fail "a 65-frame stack was recorded with $(cat /tmp/frames.$n65) frames"
[ "$(stat entries)" -eq "$before" ] || fail "a 65-frame stack added a map entry"
awk '$1 == "stack_id" { d = $5; sub(/\]/, "", d); if (d + 0 > 64) bad = 1 } END { exit bad }' $T/stack_map ||
	fail "stack_map holds an entry deeper than 64"

# 4. Shallow, twice: an existing stack must be found, not duplicated.
record 5
record 5
[ "$(cat /tmp/ids.5)" -eq 1 ] || fail "a 5-deep stack did not give a stack_id"
grep -q "^stack_id $(cat /tmp/id.5) \[ref 2," $T/stack_map ||
	fail "the repeated 5-deep stack did not reuse its stack_id (ref 2)"
cat $T/stack_map_stat
echo 0 > $T/options/stackmap
say "PASS deep stacks: 64 frames -> stack_id, 65 and $frames frames -> full stack"
