# Guest side of tests/bench/agent-cost (run by /init as stackmap.scenario=agent-cost).
# Tracing (kmem events with stacktrace + stackmap) runs from boot, set on the kernel
# command line. Parameters (stackmap.ac_*): ac_rounds (per variant, default 7),
# ac_work (workload iterations per round, default 6), ac_dd_mb (default 256),
# ac_peer (1: the kernel's virtio-trace agent is at /virtio-trace-agent, default 0),
# ac_base (1: another stackmap-guestd, e.g. a build before a change, is at
# /stackmap-guestd-base, default 0), ac_pin (1: the workload on CPU 0 and
# stackmap-guestd on CPU 1, default 0).
#
# 1. Raw port bandwidth: dd of ac_dd_mb MiB to the port while the host sinks it.
# 2. The same fixed workload in rounds, one of each variant per round, so that the
#    host's load changes hit all alike:
#      notrace  tracing off
#      full     tracing on, options/stackmap off (full stacks), no reader
#      vt       the same, streamed by virtio-trace (splice of whole pages, one port
#               per CPU)
#      id       tracing on, options/stackmap on (stack_id), no reader
#      agent    the same, streamed by stackmap-guestd to host-agent
#      base     the same, streamed by /stackmap-guestd-base (with ac_base=1)
#    virtio-trace is stopped (SIGSTOP) outside its own rounds. stackmap-guestd is
#    started for each of its rounds and stopped (SIGTERM) after it: only one reader
#    may hold stack_map_delta, so the two builds cannot both be kept; the round starts
#    once the new agent's start (HELLO, the metadata snapshot, the map) is done, i.e.
#    its CPU time stands still. Before every round the buffer is cleared, and a
#    streaming round gets 2 s after the workload to drain. The order of the pairs
#    alternates from round to round (and that of agent and base). Per round:
#    "ROUND VARIANT N SECONDS read=R overrun=O bytes=B ticks=T ctxt=C intr=I": the
#    workload's wall time, the ring-buffer entries read and overwritten, the bytes the
#    guest sent on the agent's ports (virtio_console's own counters in debugfs), the
#    agent's CPU ticks (drain included), the guest's context switches and interrupts
#    during the workload (/proc/stat); for the agent's rounds "SPAN VARIANT N FROM TO", the
#    workload's start and end (uptime, as the trace clock mono). "B VARIANT N" and
#    "E VARIANT N" on the ac-ctl port at the workload's start and end: the host takes
#    QEMU's CPU time (single-threaded TCG: the guest's vCPUs and its device
#    emulation), the round's cost whatever else the host runs.
# 3. A second stackmap-guestd run (a new stream) never stopped: two more slab rounds
#    (the agent's system calls counted by call: "SYSCALL NAME COUNT"), then heavier,
#    with raw_syscalls and sched events enabled too ("HEAVY").
# The trace clock is set to mono so that the agent measures each page's time from
# commit to the host's ACK (STATS DURABLE_*, read from the host's store): the second
# run's figures (a stopped agent would add its stop to the pages it holds).
# Times from /ac-clock (CLOCK_MONOTONIC to the ns) when agent-cost --guest-clock put it
# there, else from /proc/uptime (10 ms); a round lasts seconds.
. /scenarios/lib.sh
rounds=$(param ac_rounds 7)
nwork=$(param ac_work 6)
mb=$(param ac_dd_mb 256)
peer=$(param ac_peer 0)
base=$(param ac_base 0)
pin=$(param ac_pin 0)
port=
for d in /sys/class/virtio-ports/*; do
	[ "$(cat "$d/name")" = org.stackmap.0 ] && port=/dev/${d##*/}
done
[ -n "$port" ] || fail "no org.stackmap.0 port"
# the host's side of "ac-ctl" takes QEMU's CPU time at each line written to it
ctl=
for d in /sys/class/virtio-ports/*; do
	[ "$(cat "$d/name")" = ac-ctl ] && ctl=/dev/${d##*/}
done
[ -n "$ctl" ] || fail "no ac-ctl port"
exec 3> "$ctl"

if [ -x /ac-clock ]; then
	now() { /ac-clock; }
else
	now() { cut -d' ' -f1 /proc/uptime; }
fi
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.4f", b - a }'; }
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
agent_ticks() {
	[ -n "$1" ] || { echo 0; return; }
	set -- $(cat /proc/"$1"/stat)
	echo $((${14} + ${15}))
}
# bytes the guest sent on the ports whose name matches the regex $1
port_bytes() {
	awk -v pat="$1" 'FNR == 1 { n = "" } /^name:/ { n = $2 }
		/^bytes_sent:/ && n ~ pat { b += $2 } END { print b + 0 }' \
		/sys/kernel/debug/virtio-ports/*
}
[ -d /sys/kernel/debug/virtio-ports ] || fail "no /sys/kernel/debug/virtio-ports"
# the guest's context switches and interrupts so far: "CTXT INTR" (/proc/stat)
sched_totals() {
	awk '$1 == "ctxt" { c = $2 } $1 == "intr" { i = $2 } END { print c + 0, i + 0 }' \
		/proc/stat
}

# measure VARIANT ROUND STACKMAP PID PORTS: one round; PID (or "") streams it.
measure() {
	echo 0 > $T/tracing_on
	echo "$3" > $T/options/stackmap
	echo > $T/trace		# each round starts with an empty buffer
	[ "$1" = notrace ] || echo 1 > $T/tracing_on
	set -- "$@" $(totals) $(port_bytes "$5") $(agent_ticks "$4")
	[ -z "$4" ] || kill -CONT "$4"
	w0=$(now)
	s0=$(sched_totals)
	echo "B $1 $2" >&3
	secs=$(round)
	echo "E $1 $2" >&3
	s1=$(sched_totals)
	w1=$(now)
	if [ -n "$4" ]; then
		sleep 2		# let it drain (and the ACKs come back) before it stops
		kill -STOP "$4"
	fi
	r1=$(totals)
	say "ROUND $1 $2 $secs read=$((${r1% *} - $6)) overrun=$((${r1#* } - $7))" \
	    "bytes=$(($(port_bytes "$5") - $8)) ticks=$(($(agent_ticks "$4") - $9))" \
	    "ctxt=$((${s1% *} - ${s0% *})) intr=$((${s1#* } - ${s0#* }))"
	# a streaming round that read nothing: the ring buffer disabled itself (a WARN
	# in the console), and every round after it would measure nothing as well
	[ -z "$4" ] || [ $((${r1% *} - $6 + ${r1#* } - $7)) -gt 0 ] ||
		fail "round $1 $2 recorded no event: is the ring buffer disabled?"
}

# a trace clock user space reads too: the agent measures commit-to-durable latency
echo mono > $T/trace_clock || fail "trace_clock mono"
say "DD-START $port"
t=$(now)
dd if=/dev/zero of="$port" bs=32k count=$((mb * 32)) 2> /dev/null || fail "dd to $port"
say "DD bytes=$((mb * 1048576)) seconds=$(since "$t")"

# round_agent VARIANT ROUND BINARY: a fresh agent streams one round (see the top)
round_agent() {
	echo 1 > $T/options/stackmap	# as in its round, from its HELLO on
	$on_cpu1 $3 --exclude-self &
	a=$!
	sleep 2
	t0=$(agent_ticks $a)
	n=0
	while [ $n -lt 60 ]; do
		sleep 1
		t1=$(agent_ticks $a)
		[ $((t1 - t0)) -le 2 ] && break
		t0=$t1
		n=$((n + 1))
	done
	kill -STOP $a
	measure "$1" "$2" 1 $a '^org\.stackmap\.0$'
	say "SPAN $1 $2 $w0 $w1"	# the workload's time, for the host's clock probes
	kill -TERM $a
	kill -CONT $a
	wait $a
}

echo > $T/trace
# ac_pin=1: the workload (this shell and its children) on CPU 0, stackmap-guestd on
# CPU 1 (virtio-trace binds a thread to each CPU itself)
on_cpu1=
if [ "$pin" = 1 ]; then
	taskset -p 1 $$ > /dev/null || fail "taskset"
	on_cpu1="taskset -c 1"
fi
VT=
if [ "$peer" = 1 ]; then
	# virtio-trace opens /dev/virtio-ports/NAME (udev's links; this guest has no udev)
	mkdir -p /dev/virtio-ports
	for d in /sys/class/virtio-ports/*; do
		ln -sf "/dev/${d##*/}" "/dev/virtio-ports/$(cat "$d/name")"
	done
	/virtio-trace-agent &
	VT=$!
	say "VT-STARTED"	# the host writes "1" to agent-ctl-path: its threads run
fi
if [ -n "$VT" ]; then
	sleep 3
	# the same as the agent's --exclude-self: its threads' own allocations untraced
	for t in /proc/$VT/task/*; do
		echo "${t##*/}" >> $T/set_event_notrace_pid
	done
	kill -STOP $VT
fi
r=1
while [ $r -le "$rounds" ]; do
	measure notrace $r 1 "" '^$'
	if [ $((r % 2)) = 1 ] && [ -n "$VT" ]; then
		measure full $r 0 "" '^$'
		measure vt $r 0 $VT '^trace-path-cpu'
	fi
	measure id $r 1 "" '^$'
	if [ "$base" = 1 ] && [ $((r % 2)) = 0 ]; then
		round_agent base $r /stackmap-guestd-base
	fi
	round_agent agent $r /stackmap-guestd
	if [ "$base" = 1 ] && [ $((r % 2)) = 1 ]; then
		round_agent base $r /stackmap-guestd-base
	fi
	if [ $((r % 2)) = 0 ] && [ -n "$VT" ]; then
		measure full $r 0 "" '^$'
		measure vt $r 0 $VT '^trace-path-cpu'
	fi
	r=$((r + 1))
done
echo 1 > $T/options/stackmap
if [ -n "$VT" ]; then
	kill -KILL $VT
	wait $VT
fi
# a second agent run (a new stream) that is never stopped: its latency figures are clean
echo > $T/trace
/stackmap-guestd --exclude-self &
AGENT=$!
t2=$(now)
sleep 3
# its system calls in the two slab rounds, by call: a hist trigger in an instance of
# its own (the top instance's pid filter, --exclude-self, hides the agent's events
# from triggers there too), whose own buffer nothing records into
inst=$T/instances/ac-syscalls
mkdir "$inst" && echo 4 > "$inst/buffer_size_kb"
sc=$inst/events/raw_syscalls/sys_enter/trigger
trig="hist:keys=id.syscall:vals=hitcount:sort=hitcount.descending if common_pid == $AGENT"
echo "$trig" > "$sc" || say "no hist trigger on raw_syscalls:sys_enter"
round > /dev/null
round > /dev/null
awk 'index($0, "{ id:") == 1 { print "SYSCALL", $3, $NF }' \
	"$inst/events/raw_syscalls/sys_enter/hist" |
while read -r line; do say "$line"; done
echo "!$trig" > "$sc" 2> /dev/null
rmdir "$inst" 2> /dev/null

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
