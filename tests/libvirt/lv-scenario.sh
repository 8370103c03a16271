#!/bin/sh
# Guest scenario of the libvirt tests (run by /init as stackmap.scenario=lv).
# stackmap.lv=crash|idle|poweroff: after stackmap.lv_seconds of slab work, crash on
# purpose once the host has the stream (sysrq-c: pvpanic tells the host), keep
# running until the host stops the domain, or kill the agent (no BYE) and power off.
# stackmap-guestd retries until the port shows up (a hot-plugged channel).
mode=idle
seconds=5
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	stackmap.lv=*) mode=${arg#stackmap.lv=} ;;
	stackmap.lv_seconds=*) seconds=${arg#stackmap.lv_seconds=} ;;
	esac
done
say() { echo "STACKMAP-LV: $*"; }
T=/sys/kernel/tracing
fail() { say "FAIL $*"; exit 1; }
. /scenarios/agent-state.sh
# streamed: the host has the stream, and every event the ring buffers held so far is
# on the port (agent-state.sh's sent_held)
streamed() {
	# Not before the host has the stream: a slow host (TCG on a busy machine) can
	# take longer than the workload to connect, and a crash before HELLO records
	# no boot at all. Unbounded here (a hot-plugged channel comes when the test
	# plugs it): the host side's waits bound the test.
	until grep -q "host WELCOME" /tmp/guestd.log; do
		kill -0 "$AGENT" 2> /dev/null || fail "stackmap-guestd exited before the host's WELCOME"
		usleep 50000
	done
	sent_held
}
# Its messages go to a file (read below) and on to the console.
/stackmap-guestd --exclude-self 2> /tmp/guestd.log &
AGENT=$!
tail -f /tmp/guestd.log &
say "guestd started, mode $mode"
end=$(($(date +%s) + seconds))
while [ "$(date +%s)" -lt "$end" ]; do
	ls -R /sys/class /proc/sys > /dev/null 2>&1
done
say "workload done"
if [ "$mode" = crash ]; then
	streamed
	say "crashing on purpose (sysrq-c)"
	echo c > /proc/sysrq-trigger
elif [ "$mode" = poweroff ]; then
	# the host must have a boot for the power-off to end
	streamed
	kill -9 "$AGENT"
	say "agent killed; powering off"
	poweroff -f
fi
# The virtio-serial ports the guest sees, printed whenever they change (hot-plug).
ports=
while :; do
	now=$(cat /sys/class/virtio-ports/*/name 2> /dev/null | sort | tr '\n' ' ')
	if [ "$now" != "$ports" ]; then
		ports=$now
		say "ports: $ports"
	fi
	ls /sys/class > /dev/null 2>&1
	sleep 1
done
