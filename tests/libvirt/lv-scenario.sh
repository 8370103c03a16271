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
# read_events: per CPU, in CPU order, the events read from its ring buffer; held: the
# same plus those still in it (what the agent will have read once it catches up)
read_events() { awk '$1 == "read" && $2 == "events:" { print $3 }' $T/per_cpu/cpu*/stats; }
held() {
	for d in $T/per_cpu/cpu*; do
		awk '$1 == "entries:" || ($1 == "read" && $2 == "events:") { n += $NF }
			END { print n + 0 }' "$d/stats"
	done
}
# read_past COUNT...: every CPU's read events have reached its COUNT
read_past() {
	for r in $(read_events); do
		[ "$r" -ge "$1" ] || return 1
		shift
	done
}
# port_sent: bytes the guest has put on the org.stackmap.0 port (virtio_console debugfs)
port_sent() {
	for f in /sys/kernel/debug/virtio-ports/*; do
		grep -qx 'name: org.stackmap.0' "$f" && sed -n 's/^bytes_sent: //p' "$f"
	done
}
sent_past() { [ "$(port_sent)" -gt "$1" ]; }
# until_state CMD...: poll CMD every 50 ms while the agent runs (the host side's waits
# bound this)
until_state() {
	until "$@"; do
		kill -0 "$guestd" 2> /dev/null || { say "stackmap-guestd exited"; return 1; }
		usleep 50000
	done
}
# streamed: the host has the stream, and every event the ring buffers held so far is
# on the port (read by the agent, and port bytes sent after that read: it writes its
# frames in order, right after each read, and its STATS at least every 10 s)
streamed() {
	# Not before the host has the stream: a slow host (TCG on a busy machine) can
	# take longer than the workload to connect, and a crash before HELLO records
	# no boot at all.
	until_state grep -q "host WELCOME" /tmp/guestd.log || return 1
	# shellcheck disable=SC2046
	until_state read_past $(held) || return 1
	sent=$(port_sent)
	[ -n "$sent" ] || { say "no org.stackmap.0 in /sys/kernel/debug/virtio-ports"; return 1; }
	until_state sent_past "$sent"
}
# Its messages go to a file (read below) and on to the console.
/stackmap-guestd --exclude-self 2> /tmp/guestd.log &
guestd=$!
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
	kill -9 "$guestd"
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
