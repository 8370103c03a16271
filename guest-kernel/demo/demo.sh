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

# streaming: the agent has every CPU's trace_pipe_raw and stack_map_delta open (it
# reads the buffers, and a map reset would keep their stacks for it)
streaming() {
	_open=0 _cpus=0 _delta=0
	[ -e $T/stack_map_delta ] || _delta=1
	for _f in /proc/$AGENT/fd/*; do
		case "$(readlink "$_f" 2> /dev/null)" in
		*/per_cpu/cpu*/trace_pipe_raw) _open=$((_open + 1)) ;;
		*/stack_map_delta) _delta=1 ;;
		esac
	done
	for _f in $T/per_cpu/cpu*; do _cpus=$((_cpus + 1)); done
	[ $_open -ge $_cpus ] && [ $_delta = 1 ]
}
# rb_sum FIELD...: per CPU, in CPU order, the sum of these fields of its ring-buffer stats
rb_sum() {
	for _d in $T/per_cpu/cpu*; do
		for _k in "$@"; do awk -v k="$_k:" 'index($0, k) == 1 { print $NF }' $_d/stats; done |
			awk '{ n += $1 } END { print n + 0 }'
	done
}
# read_past COUNT...: every CPU's "read events" has reached its COUNT
read_past() {
	for _r in $(rb_sum 'read events'); do
		[ "$_r" -ge "$1" ] || return 1
		shift
	done
}
# port_sent: bytes the guest has put on the org.stackmap.0 port (virtio_console debugfs)
port_sent() {
	for _f in /sys/kernel/debug/virtio-ports/*; do
		grep -qx 'name: org.stackmap.0' "$_f" && sed -n 's/^bytes_sent: //p' "$_f"
	done
}
sent_past() { [ "$(port_sent)" -gt "$1" ]; }
# until_state WHAT CMD...: poll CMD every 50 ms while the agent runs, at most 60 s
until_state() {
	_what=$1
	shift
	_i=0
	until "$@"; do
		kill -0 $AGENT 2> /dev/null || fail "stackmap-guestd exited before $_what"
		[ $_i -lt 1200 ] || fail "not $_what within 60 s"
		_i=$((_i + 1))
		usleep 50000
	done
}

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
# agent has read every event the buffers held after the count (read + entries now),
# and the port carried bytes after that read (the agent writes its frames in order,
# right after each read; tracing stays on, and its STATS come every second).
map=$(tr '\n' ' ' < $T/stack_map_stat)
# shellcheck disable=SC2046
set -- $(rb_sum 'read events' entries)
say "map: $map"
until_state "read up to the map's counters" read_past "$@"
sent=$(port_sent)
[ -n "$sent" ] || fail "no org.stackmap.0 port in /sys/kernel/debug/virtio-ports"
until_state "sent past the map's counters" sent_past "$sent"
say "crashing the guest on purpose (sysrq-c)"
echo c > /proc/sysrq-trigger
