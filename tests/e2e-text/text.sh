# Guest side of tests/e2e-text (run by /init as stackmap.scenario=text): trace a
# broad set of event types with stacks (stackmap), stop, keep the kernel's own text
# of what it traced, then let stackmap-guestd stream the very same ring-buffer
# contents to the host. Parameters (kernel command line, stackmap.e2t_*):
#   e2t_buffer_kb  per-CPU ring buffer (default 16384)
#   e2t_rounds     workload rounds (default 3)
# Console: "TEXT-EVENTS <enabled>", "TEXT-MISSING <events this kernel lacks>",
# "TEXT-DRAINED <seconds>", "AGENT_EXIT <status>", "TEXT DONE". Files (base64
# between FILE markers, lib.sh emit):
#   trace.txt.gz    the trace file (options stacktrace, stackmap, sym-offset),
#                   read after tracing stopped, before the agent ran
#   trace-nohash.txt.gz  the same read again with option nohash-ptr (pointers as
#                   %px; in 6.1 this option also blanks the first %s of each event,
#                   e2t.py's header)
#   stack_map.txt.gz  stack_map at the same moment (%pS frames of every stack_id)
#   stats.txt       per-CPU ring-buffer stats at the end (overrun, entries left)
#   formats.tar.gz  every event's format file of this kernel (which print fmt
#                   lines leave names unresolved)
. /scenarios/lib.sh
buffer_kb=$(param e2t_buffer_kb 16384)
rounds=$(param e2t_rounds 3)
EVENTS="sched:sched_switch sched:sched_wakeup sched:sched_waking
sched:sched_wakeup_new sched:sched_process_fork sched:sched_process_exec
sched:sched_process_exit sched:sched_process_free sched:sched_migrate_task
timer:timer_init timer:timer_start timer:timer_expire_entry timer:timer_expire_exit
timer:timer_cancel timer:hrtimer_init timer:hrtimer_start timer:hrtimer_expire_entry
timer:hrtimer_expire_exit timer:hrtimer_cancel timer:tick_stop
irq:irq_handler_entry irq:irq_handler_exit irq:softirq_raise irq:softirq_entry
irq:softirq_exit signal:signal_generate signal:signal_deliver
workqueue:workqueue_queue_work workqueue:workqueue_activate_work
workqueue:workqueue_execute_start workqueue:workqueue_execute_end
kmem:kmalloc kmem:kmem_cache_alloc kmem:kfree kmem:kmem_cache_free
kmem:mm_page_alloc kmem:mm_page_free"

echo 0 > $T/tracing_on
echo nop > $T/current_tracer
echo > $T/set_event
echo "$buffer_kb" > $T/buffer_size_kb
for o in stacktrace stackmap sym-offset hash-ptr; do
	echo $o > $T/trace_options || fail "trace option $o"
done
echo > $T/trace
on= missing=
for e in $EVENTS; do
	if [ -d "$T/events/${e%%:*}/${e#*:}" ]; then
		echo "$e" >> $T/set_event || fail "enable $e"
		on="$on $e"
	else
		missing="$missing $e"
	fi
done
say "TEXT-EVENTS$on"
say "TEXT-MISSING$missing"

work() {
	# signals: a shell with a handler, and one killed by the default action
	sh -c 'trap "echo usr1 > /dev/null" USR1; sleep 1 & wait' &
	s=$!
	sleep 0.1
	kill -USR1 $s
	sleep 5 &
	kill -TERM $!
	# slab, page allocator, block-less I/O, fork/exec/exit
	ls -R /sys/class > /dev/null 2>&1
	dd if=/dev/zero of=/tmp/f bs=64k count=8 2> /dev/null
	sync
	rm -f /tmp/f
	cat /proc/interrupts /proc/softirqs > /dev/null
	# timers: sleeps (hrtimers), usleep; workqueues: sync, vmstat
	usleep 20000
	wait $s
}
echo 1 > $T/tracing_on
i=0
while [ $i -lt "$rounds" ]; do work; i=$((i + 1)); done
echo 0 > $T/tracing_on

gzip -c $T/trace > /tmp/trace.txt.gz
echo nohash-ptr > $T/trace_options
gzip -c $T/trace > /tmp/trace-nohash.txt.gz
echo hash-ptr > $T/trace_options
gzip -c $T/stack_map > /tmp/stack_map.txt.gz
# tracefs files have no size: tar would store them empty
for f in $T/events/*/*/format; do
	d=/tmp/formats/${f#$T/events/}
	mkdir -p "${d%/format}"
	cat "$f" > "$d"
done
(cd /tmp/formats && tar czf /tmp/formats.tar.gz .)
# --linger-ms: on SIGTERM the agent exits once the host ACKed its BYE (all it sent),
# or after 120 s
/stackmap-guestd --linger-ms=120000 &
AGENT=$!
t=0
while [ $t -lt 600 ]; do
	left=$(cat $T/per_cpu/cpu*/stats | awk '$1 == "entries:" { n += $2 } END { print n + 0 }')
	[ "$left" = 0 ] && break
	usleep 100000
	t=$((t + 1))
done
say "TEXT-DRAINED $((t / 10))"
# SIGTERM: the agent sends what it read, then BYE, and exits once the host ACKed it
kill -TERM $AGENT
wait $AGENT
say "AGENT_EXIT $?"
cat $T/per_cpu/cpu*/stats > /tmp/stats.txt
emit trace.txt.gz /tmp/trace.txt.gz
emit trace-nohash.txt.gz /tmp/trace-nohash.txt.gz
emit stack_map.txt.gz /tmp/stack_map.txt.gz
emit formats.tar.gz /tmp/formats.tar.gz
emit stats.txt /tmp/stats.txt
say "TEXT DONE"
