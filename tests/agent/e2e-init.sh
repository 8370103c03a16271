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
# the agent's progress (streaming, until_state): guest-kernel/initramfs/scenarios/
# agent-state.sh; a failed wait says FAIL and goes on (this is /init: it must not exit)
fail() { say "FAIL $*"; }
. /agent-state.sh
# unread: the events still in the ring buffers, summed over the CPUs
unread() { cat $T/per_cpu/cpu*/stats | awk '$1 == "entries:" { n += $2 } END { print n + 0 }'; }
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
