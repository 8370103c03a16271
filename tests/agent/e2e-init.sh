#!/bin/busybox sh
# /init of the agent's end-to-end guest (tests/agent/e2e-agent.sh): trace the slab
# allocator with stacks, stream it with stackmap-guestd, reset the map midway when the
# kernel has one, stop tracing, SIGTERM the agent, and report on the console.
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing
T=/sys/kernel/tracing
say() { echo "AGENT-E2E: $*"; }
work() {
	i=0
	while [ $i -lt $1 ]; do
		ls -R /sys/class /proc/sys > /dev/null 2>&1
		i=$((i + 1))
	done
}

say "kernel $(uname -r) cpus $(nproc)"
if [ -e $T/stack_map_delta ]; then say "delta yes"; else say "delta no"; fi
opts="--events kmem:kmalloc,kmem:kfree --stacktrace --exclude-self --buffer-kb 2048"
[ -e $T/options/stackmap ] && opts="$opts --stackmap"
# streaming: the agent has every CPU's trace_pipe_raw open, and stack_map_delta when
# the kernel has one (a map reset before that would free stacks no reader kept)
streaming() {
	open=0 cpus=0 delta=0
	[ -e $T/stack_map_delta ] || delta=1
	for f in /proc/$AGENT/fd/*; do
		case "$(readlink "$f" 2> /dev/null)" in
		*/per_cpu/cpu*/trace_pipe_raw) open=$((open + 1)) ;;
		*/stack_map_delta) delta=1 ;;
		esac
	done
	for f in $T/per_cpu/cpu*; do cpus=$((cpus + 1)); done
	[ $open -ge $cpus ] && [ $delta = 1 ]
}
# unread: the events still in the ring buffers, summed over the CPUs
unread() { cat $T/per_cpu/cpu*/stats | awk '$1 == "entries:" { n += $2 } END { print n + 0 }'; }
# until_state WHAT CMD...: poll CMD every 50 ms, at most 60 s, while the agent runs
until_state() {
	what=$1
	shift
	i=0
	until "$@"; do
		kill -0 $AGENT 2> /dev/null || { say "FAIL stackmap-guestd exited before $what"; break; }
		[ $i -lt 1200 ] || { say "FAIL not $what within 60 s"; break; }
		i=$((i + 1))
		usleep 50000
	done
}
drained() { [ "$(unread)" = 0 ]; }

/stackmap-guestd $opts -v &
AGENT=$!
until_state "streaming" streaming
say "streaming"
work 60
if [ -e $T/stack_map ]; then
	echo 0 > $T/stack_map && say "map reset"
fi
work 60
echo 0 > $T/tracing_on
# with tracing off, the agent reads what the buffers hold within its flush bound
until_state "drained" drained
kill -TERM $AGENT
wait $AGENT
say "agent_exit $?"
cat $T/per_cpu/cpu*/stats | awk '
	/^read events/ { r += $3 }
	/^entries/ { e += $2 }
	/^overrun/ { o += $2 }
	END { print "AGENT-E2E: read_events " r; print "AGENT-E2E: unread " e;
	      print "AGENT-E2E: overrun " o }'
say "done"
poweroff -f
