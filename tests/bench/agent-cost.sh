# Guest side of tests/bench/agent-cost (run by /init as stackmap.scenario=agent-cost).
# Tracing (kmem events with stacktrace + stackmap) runs from boot, set on the kernel
# command line. Parameters (stackmap.ac_*): ac_rounds (per variant, default 5),
# ac_work (workload iterations per round, default 20), ac_dd_mb (default 256).
#
# 1. Raw port bandwidth: dd of ac_dd_mb MiB to the port while the host sinks it.
# 2. The same fixed workload in rounds of three, so that the host's load changes hit
#    all three alike: tracing off; tracing on without a reader (stackmap-guestd
#    stopped with SIGSTOP, the ring buffer overwrites); then the buffer is cleared and
#    the agent continued, streaming to host-agent -> "ROUND notrace|trace|agent N
#    SECONDS"; over the agent rounds (+2 s each to drain) the ring-buffer events read
#    and overwritten and the agent's CPU -> "STREAM".
# 3. A second agent run (a new stream) never stopped: two more slab rounds, then
#    heavier, with raw_syscalls and sched events enabled too, same accounting ("HEAVY").
# The trace clock is set to mono so that the agent measures each page's time from
# commit to the host's ACK (STATS DURABLE_*, read from the host's store): the second
# run's figures (a stopped agent would add its stop to the pages it holds).
# Times from /proc/uptime (10 ms); a round lasts seconds.
. /scenarios/lib.sh
rounds=$(param ac_rounds 5)
nwork=$(param ac_work 20)
mb=$(param ac_dd_mb 256)
port=
for d in /sys/class/virtio-ports/*; do
	[ "$(cat "$d/name")" = org.stackmap.0 ] && port=/dev/${d##*/}
done
[ -n "$port" ] || fail "no org.stackmap.0 port"

now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
round() {
	t=$(now)
	i=0
	while [ $i -lt "$nwork" ]; do slab_work; i=$((i + 1)); done
	since "$t"
}
# ring-buffer totals over all CPUs: "READ OVERRUN"
totals() {
	cat $T/per_cpu/cpu*/stats | awk '/^read events/ { r += $3 } /^overrun/ { o += $2 }
		END { print r + 0, o + 0 }'
}
agent_ticks() { set -- $(cat /proc/"$1"/stat); echo $((${14} + ${15})); }

# a trace clock user space reads too: the agent measures commit-to-durable latency
echo mono > $T/trace_clock || fail "trace_clock mono"
say "DD-START $port"
t=$(now)
dd if=/dev/zero of="$port" bs=32k count=$((mb * 32)) 2> /dev/null || fail "dd to $port"
say "DD bytes=$((mb * 1048576)) seconds=$(since "$t")"

echo > $T/trace		# the agent starts with an empty buffer
/stackmap-guestd --exclude-self &
AGENT=$!
sleep 3
kill -STOP $AGENT
slab_work
sum_s=0 sum_read=0 sum_over=0 sum_ticks=0
r=1
while [ $r -le "$rounds" ]; do
	echo 0 > $T/tracing_on
	say "ROUND notrace $r $(round)"
	echo 1 > $T/tracing_on
	say "ROUND trace $r $(round)"
	# drop what nobody read: the agent streams its own round only
	echo 0 > $T/tracing_on
	echo > $T/trace
	echo 1 > $T/tracing_on
	set -- $(totals)
	read0=$1 over0=$2
	kill -CONT $AGENT
	ticks0=$(agent_ticks $AGENT)
	secs=$(round)
	say "ROUND agent $r $secs"
	sleep 2		# let it drain, and the ACKs come back before it stops
	set -- $(totals)
	sum_read=$((sum_read + $1 - read0)) sum_over=$((sum_over + $2 - over0))
	sum_ticks=$((sum_ticks + $(agent_ticks $AGENT) - ticks0))
	sum_s=$(awk -v a="$sum_s" -v b="$secs" 'BEGIN { printf "%.2f", a + b + 2 }')
	kill -STOP $AGENT
	r=$((r + 1))
done
kill -CONT $AGENT
say "STREAM seconds=$sum_s read=$sum_read overrun=$sum_over ticks=$sum_ticks"
# a second agent (a new stream) that is never stopped: its latency figures are clean
kill -TERM $AGENT
wait $AGENT
echo > $T/trace
/stackmap-guestd --exclude-self &
AGENT=$!
t2=$(now)
sleep 3
round > /dev/null
round > /dev/null

echo 1 > $T/events/raw_syscalls/enable
echo 1 > $T/events/sched/enable
set -- $(totals)
read0=$1 over0=$2 ticks0=$(agent_ticks $AGENT) t=$(now)
r=1
while [ $r -le "$rounds" ]; do
	round > /dev/null
	r=$((r + 1))
done
sleep 1
set -- $(totals)
say "HEAVY seconds=$(since "$t") read=$(($1 - read0)) overrun=$(($2 - over0)) ticks=$(($(agent_ticks $AGENT) - ticks0))"

echo 0 > $T/tracing_on
sleep 3
say "RUN2 seconds=$(since "$t2")"
kill -TERM $AGENT
wait $AGENT
say "AGENT_EXIT $? hz=$(getconf CLK_TCK 2>/dev/null || echo 100)"
say "AC DONE"
