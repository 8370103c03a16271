# Helpers of the stack_map_delta scenarios (sourced, not a scenario itself).
# They need smdelta (tests/e2e-delta/smdelta.c), which tests/e2e-delta
# appends to the initramfs as a second cpio archive (/usr/bin/smdelta).
. /scenarios/lib.sh

command -v smdelta > /dev/null || fail "no smdelta in the initramfs (see tests/e2e-delta)"

# Functions whose every call records a stack (func_stack_trace): called
# from many paths, so the map keeps getting new stacks after each reset.
DELTA_FUNCS="kmem_cache_alloc kmem_cache_free __kmalloc kfree vfs_read vfs_write
do_sys_openat2 path_lookupat schedule mutex_lock down_read up_read filp_close"

# delta_trace_setup BUFFER_KB: function tracer + func_stack_trace on
# DELTA_FUNCS, sched_switch stacks, stackmap on, tracing off, map reset.
delta_trace_setup() {
	echo 0 > $T/tracing_on
	echo nop > $T/current_tracer
	echo "$1" > $T/buffer_size_kb
	echo > $T/trace
	echo 0 > $T/stack_map || fail "reset"
	echo 1 > $T/options/stackmap
	echo 1 > $T/options/stacktrace
	for f in $DELTA_FUNCS; do
		echo "$f" >> $T/set_ftrace_filter 2>/dev/null
	done
	grep -q . $T/set_ftrace_filter || fail "set_ftrace_filter is empty"
	say "DELTA-FILTER $(tr "\n" " " < $T/set_ftrace_filter)"
	echo function > $T/current_tracer
	echo 1 > $T/options/func_stack_trace
	echo 1 > $T/events/sched/sched_switch/enable
}

# delta_workload STOPFILE: syscalls and allocations until STOPFILE exists.
delta_workload() {
	while [ ! -e "$1" ]; do
		ls -R /sys/kernel /proc/sys > /dev/null 2>&1
		cat /proc/self/maps /proc/meminfo > /dev/null
		dd if=/dev/zero of=/tmp/delta-work bs=4k count=16 2> /dev/null
	done
	rm -f /tmp/delta-work
}

# delta_events: events written to the ring buffer since the last clear
# (entries still there + those overwritten), summed over the CPUs.
delta_events() {
	cat $T/per_cpu/cpu*/stats |
		awk '$1 == "entries:" || $1 == "overrun:" { n += $2 } END { print n + 0 }'
}
