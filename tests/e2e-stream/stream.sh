# Guest side of tests/e2e-stream (run by /init as stackmap.scenario=stream).
# Tracing (kmem events with stacktrace + stackmap) runs from boot, set on the
# kernel command line. Parameters (kernel command line, stackmap.e2s_*):
#   e2s_mode     steady | resets | crash | kill | late | full
#   e2s_seconds  workload length (default 15)
#   e2s_resets   map resets in mode resets (default 50)
#   e2s_crash_ms in mode crash: panic this long after the workload starts
#   e2s_delay    seconds to trace before stackmap-guestd starts (default 0)
# Ground truth it leaves for the host (base64 files between FILE markers):
#   maps.tar.gz  the stack_map text of every epoch, taken just before each reset
#                (stat-E.txt + map-E.txt, E = the epoch from stack_map_stat) and
#                at the end after tracing stopped; "-racy" when tracing was on
#                while it was read (the dump may then miss ids added after it)
#   stats.txt    per-CPU stats after the agent exited
# and console lines "STACKMAP-E2E: MARK N" after trace_marker "e2s-mark N" was
# written and 300 ms passed (mode crash), "AGENT_CPU_TICKS", "AGENT_EXIT".
# In mode crash a background timer writes "e2s-precrash" to trace_marker, waits
# 20 ms (twice the agent's 10 ms flush window) and panics with sysrq-c.
. /scenarios/lib.sh
mode=$(param e2s_mode steady)
seconds=$(param e2s_seconds 15)
resets=$(param e2s_resets 50)
crash_ms=$(param e2s_crash_ms 5000)
delay=$(param e2s_delay 0)
mkdir -p /tmp/maps

work() {
	ls -R /sys/class /proc/sys > /dev/null 2>&1
	find /sys/devices -name uevent | head -n 100 | xargs cat > /dev/null 2>&1
	dd if=/dev/zero of=/tmp/f bs=64k count=4 2> /dev/null
	rm -f /tmp/f
}
# more distinct kernel paths, for the map-full case
work_wide() {
	work
	cat /proc/*/status /proc/*/maps /proc/*/stat > /dev/null 2>&1
	cat /sys/kernel/debug/*/* > /dev/null 2>&1
	for n in $(seq 1 60); do echo $n > /sys/kernel/debug/ftrace_stackmap_test_deep 2>/dev/null; done
	ip link > /dev/null 2>&1; mount > /dev/null; ps > /dev/null; df > /dev/null 2>&1
	sync
}
epoch() { sed -n 's/^epoch: *//p' $T/stack_map_stat; }
snap() {   # snap SUFFIX: save the current epoch's map
	e=$(epoch)
	cat $T/stack_map_stat > /tmp/maps/stat-$e$1.txt
	cat $T/stack_map > /tmp/maps/map-$e$1.txt
}

say "E2S mode=$mode seconds=$seconds epoch=$(epoch) bits: $(tr '\n' ' ' < $T/stack_map_stat)"
i=0
while [ $i -lt "$delay" ]; do work; i=$((i + 1)); done
/stackmap-guestd --exclude-self &
AGENT=$!
sleep 2
say "STREAMING agent=$AGENT"
end=$(($(date +%s) + seconds))
case "$mode" in
resets)
	i=0
	while [ $i -lt "$resets" ]; do
		work
		if [ $((i % 2)) = 0 ]; then
			# quiet reset: the dump is exact
			echo 0 > $T/tracing_on
			snap ""
			echo 0 > $T/stack_map || fail "reset $i"
			echo 1 > $T/tracing_on
		else
			# racing reset: events are recorded while the map is read and reset
			snap "-racy"
			echo 0 > $T/stack_map || fail "reset $i"
		fi
		i=$((i + 1))
	done
	say "RESETS $i"
	;;
crash)
	( sleep "$(echo "$crash_ms" | awk '{ printf "%.3f", $1 / 1000 }')"
	  echo "e2s-precrash" > $T/trace_marker
	  sleep 0.02
	  echo c > /proc/sysrq-trigger ) &
	n=0
	while :; do
		work
		n=$((n + 1))
		echo "e2s-mark $n" > $T/trace_marker
		sleep 0.3
		say "MARK $n"
	done
	;;
full)
	while [ "$(date +%s)" -lt "$end" ]; do work_wide; done
	;;
*)
	while [ "$(date +%s)" -lt "$end" ]; do work; done
	;;
esac
echo 0 > $T/tracing_on
say "map: $(tr '\n' ' ' < $T/stack_map_stat)"
snap ""
sleep 3
set -- $(cat /proc/$AGENT/stat)
say "AGENT_CPU_TICKS $((${14} + ${15})) hz=$(getconf CLK_TCK 2>/dev/null || echo 100)"
kill -TERM $AGENT
wait $AGENT
say "AGENT_EXIT $?"
cat $T/per_cpu/cpu*/stats > /tmp/stats.txt
(cd /tmp && tar czf /tmp/maps.tar.gz maps)
emit maps.tar.gz /tmp/maps.tar.gz
emit stats.txt /tmp/stats.txt
say "E2S DONE"
