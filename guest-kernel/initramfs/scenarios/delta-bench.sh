# stack_map_delta overhead: events/s written to the ring buffer by the
# function tracer (func_stack_trace on a set of hot functions, stackmap on)
# under a fixed workload, with a reset every 0.5 s, without and with an
# active delta reader, alternating. stackmap.duration=SEC per measurement
# (default 10), stackmap.rounds=N (default 3). Prints
# "STACKMAP-E2E: BENCH mode=... events=... seconds=... events_per_s=...".
# On a kernel without stack_map_delta (the seed's series, for comparison)
# only mode=noreader runs.
. /scenarios/delta-lib.sh
dur=$(param duration 10)
rounds=$(param rounds 3)

delta_trace_setup 4096

# measure MODE: one run of $dur seconds.
measure() {
	rm -f /tmp/stop /tmp/stopwork /tmp/stopreset
	echo > $T/trace
	echo 0 > $T/stack_map
	if [ "$1" = reader ]; then
		smdelta read /tmp/bench-delta.bin /tmp/stop > /tmp/bench-reader.txt &
		rpid=$!
	fi
	sleep 1
	delta_workload /tmp/stopwork &
	wpid=$!
	(while [ ! -e /tmp/stopreset ]; do echo 0 > $T/stack_map; usleep 500000; done) &
	xpid=$!
	t0=$(cut -d' ' -f1 /proc/uptime)
	echo 1 > $T/tracing_on
	sleep "$dur"
	echo 0 > $T/tracing_on
	t1=$(cut -d' ' -f1 /proc/uptime)
	touch /tmp/stopwork /tmp/stopreset
	wait $wpid $xpid
	n=$(delta_events)
	extra=
	if [ "$1" = reader ]; then
		cpu=$(awk '{ print $14 + $15 }' /proc/$rpid/stat)
		touch /tmp/stop
		wait $rpid
		extra=" reader_cpu_ticks=$cpu $(sed 's/.*DELTA-READER //' /tmp/bench-reader.txt)"
	fi
	say "BENCH mode=$1 events=$n seconds=$(echo "$t0 $t1" | awk '{ print $2 - $1 }') events_per_s=$(echo "$n $t0 $t1" | awk '{ printf "%d", $1 / ($3 - $2) }')$extra"
}

i=0
while [ $i -lt "$rounds" ]; do
	measure noreader
	[ -e $T/stack_map_delta ] && measure reader
	i=$((i + 1))
done
echo nop > $T/current_tracer
echo 0 > $T/options/func_stack_trace
echo 0 > $T/events/sched/sched_switch/enable
echo 0 > $T/options/stackmap
say "BENCH-DONE"
