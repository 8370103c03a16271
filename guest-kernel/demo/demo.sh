#!/bin/sh
# The demo's guest scenario (run by /init as stackmap.scenario=demo). Tracing was set up
# from boot on the kernel command line (slab events, stacktrace, stackmap, and the trace
# clock, which launch sets so that the kernel does not switch it at late_initcall and
# reset the buffer), so the ring buffer already holds everything since boot when the
# agent starts; the agent streams it, a slab-heavy workload runs, and the guest
# crashes on purpose with sysrq-c.
T=/sys/kernel/tracing
seconds=20
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	stackmap.demo_seconds=*) seconds=${arg#stackmap.demo_seconds=} ;;
	esac
done
say() { echo "STACKMAP-DEMO: $*"; }
fail() { say "FAIL $*"; exit 1; }

. /scenarios/agent-state.sh

say "tracing since boot: options $(grep -c '^stackmap\|^stacktrace' $T/trace_options) of stackmap/stacktrace on, events: $(tr '\n' ' ' < $T/set_event)"
# STATS every second: the host compares the map's successes (stack ids handed
# out) with the stack_id events it stored, so that a loss the ring buffer's
# counters cannot show (a buffer reset) is reported in LOST.
/stackmap-guestd --exclude-self --stats-ms 1000 &
AGENT=$!
until_state "streaming" streaming
say "stackmap-guestd streaming; slab workload for ${seconds}s"
end=$(($(date +%s) + seconds))
while [ "$(date +%s)" -lt "$end" ]; do
	ls -R /sys/class /proc/sys > /dev/null 2>&1
	find /sys/devices -name uevent | head -n 200 | xargs cat > /dev/null 2>&1
	dd if=/dev/zero of=/tmp/f bs=64k count=16 2> /dev/null
	rm -f /tmp/f
done
# Every stack id counted below must be on its way to the host before the crash: the
# agent has read every event the buffers held after the count, and the port carried
# bytes after that read (tracing stays on, and its STATS come every second).
say "map: $(tr '\n' ' ' < $T/stack_map_stat)"
sent_held
say "crashing the guest on purpose (sysrq-c)"
echo c > /proc/sysrq-trigger
