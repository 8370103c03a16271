# stack_map_delta stress: function tracer with stacktrace + stackmap on all
# CPUs, a loop of resets, one delta reader (smdelta read) and one trace_pipe
# reader (smdelta pipe); then smdelta check: every stack_id of the trace was
# delivered by the delta reader for its epoch, no entry twice.
# stackmap.duration=SEC (default 120) is the length of the reset loop.
. /scenarios/delta-lib.sh
dur=$(param duration 120)
[ -e $T/stack_map_delta ] || fail "the kernel has no stack_map_delta"

delta_trace_setup 4096
rm -f /tmp/stop /tmp/stopwork /tmp/stopreset
epoch0=$(stat epoch)
smdelta read /tmp/delta.bin /tmp/stop &
rpid=$!
smdelta pipe /tmp/pipe.bin /tmp/stop &
ppid=$!
# both readers have their file open before tracing starts (opened: PID has FILE open)
opened() {
	for f in /proc/$1/fd/*; do
		[ "$(readlink "$f" 2> /dev/null)" = "$T/$2" ] && return 0
	done
	return 1
}
i=0
until opened $rpid stack_map_delta && opened $ppid trace_pipe; do
	kill -0 $rpid 2> /dev/null || fail "the delta reader exited before opening stack_map_delta"
	kill -0 $ppid 2> /dev/null || fail "the trace_pipe reader exited before opening trace_pipe"
	[ $i -lt 600 ] || fail "the readers did not open their files in 30 s"
	i=$((i + 1))
	usleep 50000
done
echo 1 > $T/tracing_on
delta_workload /tmp/stopwork &
wpid=$!
(sleep "$dur"; touch /tmp/stopreset) &

resets=0 busy=0 nospc=0 other=0
while [ ! -e /tmp/stopreset ]; do
	# No command substitution: a fork per reset would dominate the loop.
	if echo 0 2> /tmp/reset-err > $T/stack_map; then
		resets=$((resets + 1))
	else
		err=$(cat /tmp/reset-err)
		case "$err" in
		*busy*) busy=$((busy + 1)) ;;
		*space*) nospc=$((nospc + 1)) ;;
		*) other=$((other + 1)); say "reset failed: $err" ;;
		esac
	fi
done
touch /tmp/stopwork
wait $wpid
echo 0 > $T/tracing_on
epoch1=$(stat epoch)
say "STRESS-RESETS resets=$resets failed_busy=$busy failed_nospc=$nospc failed_other=$other epoch_before=$epoch0 epoch_after=$epoch1 seconds=$dur"
say "STRESS-STAT $(tr -s ' \n' ' ' < $T/stack_map_stat)"
say "STRESS-BUFFER $(cat $T/per_cpu/cpu*/stats | awk '$1 == "overrun:" { o += $2 } $1 == "entries:" { e += $2 } END { print "entries_left=" e " overrun=" o }')"
touch /tmp/stop
wait $rpid || fail "the delta reader failed"
wait $ppid || fail "the trace_pipe reader failed"
echo nop > $T/current_tracer
echo 0 > $T/options/func_stack_trace
echo 0 > $T/events/sched/sched_switch/enable
echo 0 > $T/options/stackmap
say "STRESS-FILES delta_bytes=$(wc -c < /tmp/delta.bin) pipe_bytes=$(wc -c < /tmp/pipe.bin)"
smdelta check /tmp/delta.bin /tmp/pipe.bin || fail "exactly-once check failed"
[ "$resets" -gt 0 ] || fail "no reset succeeded"
[ "$other" -eq 0 ] || fail "resets failed unexpectedly"
say "STRESS-OK"
