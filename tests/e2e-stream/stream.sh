# Guest side of tests/e2e-stream (run by /init as stackmap.scenario=stream).
# Tracing (kmem events with stacktrace + stackmap) runs from boot, set on the
# kernel command line. Parameters (kernel command line, stackmap.e2s_*):
#   e2s_mode     steady | resets | crash | kill | late | full | overflow | module |
#                postmortem (e2s_panic sysrq|null|timer|panic) |
#                block | clockreset | unbounded | resetbench
#   e2s_seconds  workload length (default 15)
#   e2s_resets   map resets in mode resets (default 50); in mode resetbench, per
#                phase (default 20)
#   e2s_distinct in mode unbounded: distinct stacks fired while streaming
#                (default 16384)
#   e2s_poll_reset in mode unbounded: 1 = this script resets the map from its
#                counters (entries >= 3/4 of the pool, polled every 10 ms), the
#                policy a guest agent could have, for comparison with the
#                kernel's stack_map_auto_reset (boot with ftrace_stackmap.auto_reset=0)
#   e2s_crash_ms in mode crash: start the crash-window probe this long after
#                the first MARK (so a boot slowed down by a busy host still
#                has its marks before the panic)
#   e2s_ticks    in mode crash: the probe's K (default 500)
#   e2s_delay    seconds to trace before stackmap-guestd starts (default 0)
#   e2s_agent    extra stackmap-guestd options, comma-separated (default none)
#   e2s_trace    boot (default): tracing is set on the kernel command line;
#                late: this script sets it up (the same events, options and a
#                4 MiB buffer per CPU) once booted. Boot-time stack traces of
#                every slab allocation make the ACPI interpreter so slow on an
#                overloaded TCG host that its loop timeout can fire while it
#                routes the virtio-serial device's interrupt ("PCI INT A: no
#                GSI"): no port, no stream. Scenarios that need no boot-time
#                events use late.
# Mode overflow (the agent's test hooks force one order of a window overflow):
# the workload runs until the agent's log says its test hold ended (the host
# has every frame it held), then e2s_seconds more; the agent's log goes to
# /tmp/agent.log, copied to the console as it grows (copy_log).
# Ground truth it leaves for the host (base64 files between FILE markers):
#   maps.tar.gz  the stack_map text of every epoch, taken just before each reset
#                (stat-E.txt + map-E.txt, E = the epoch from stack_map_stat) and
#                at the end after tracing stopped; "-racy" when tracing was on
#                while it was read (the dump may then miss ids added after it)
#   stats.txt    per-CPU stats after the agent exited
#   chains.txt   <debugfs>/ftrace_stackmap_test_chains at the end: "C COUNT",
#                the stackmap_test:chain events each known call chain fired
#                (patch 0010), read after the emitter stopped
# Known call chains: from before stackmap-guestd starts to the end (or the
# panic), a background loop writes "C N" (N = 1..5) for each chain C = 0..3
# to ftrace_stackmap_test_chains every 20 ms, alongside the slab workload.
# It pauses for the quiet (exact) resets and races the others. "STREAMING" once
# the agent has every CPU's ring buffer and the stack_map_delta file open. In every mode with e2s_delay,
# "CHAINS-STREAMING <count per chain> overrun=N" gives the counts and the summed
# ring-buffer overrun once the agent has read what the ring buffers held when it
# started (the read events of every CPU at least its entries then).
# and console lines "STACKMAP-E2E: MARK N" after trace_marker "e2s-mark N" was
# written and 300 ms passed (mode crash), "AGENT_CPU_TICKS", "AGENT_EXIT".
# In mode crash each MARK round also printk()s "e2s-clock N" (/dev/kmsg): the
# host compares its console (printk clock) and printk:console (trace clock) times.
# In mode module: insmod /lib/modules/stackmap_testmod.ko once the agent
# streams, "N" writes to <debugfs>/stackmap_testmod alongside the workload (N
# kmalloc()s each through the module's own call chain), then a racy map dump
# (map-E-racy.txt, module frames still named), rmmod while tracing goes on,
# trace_marker "e2s-unloaded", more workload. modsyms.txt: the module's
# /proc/kallsyms lines; "MODULE-UNLOADED allocations=N" on the console.
# In mode unbounded (stackmap_test:distinct enabled; patch 0012): before the agent
# starts, with no delta reader, values 40000..42999 are fired from 3000 distinct call
# paths and "NOREADER <stack_map_stat>" printed: the map fills and stays full, as it
# always has. Once streaming, values 0..e2s_distinct-1 are fired, 256 at a time every
# 100 ms, between "UNBOUNDED-START <stat>" and "UNBOUNDED-END n=N <stat>".
# In mode resetbench (a benchmark, by hand: e2s.py resetbench): with the workload
# running, /e2s-resets (e2s-resets.c) resets the map e2s_resets times 100 ms apart,
# once before the agent starts (label noreader) and once while it streams (reader),
# between trace_marker lines "e2s-resets LABEL begin/end"; console lines
# "RESETBENCH LABEL BEFORE <stack_map_stat>", "RESETBENCH LABEL RESETS ...",
# "RESETBENCH LABEL AFTER <stack_map_stat>".
# hooksyms.txt (every mode, at the start): the /proc/kallsyms lines of the test
# hooks' module, trace_stackmap_test, when they are one (the real guest).
# In mode block: mke2fs + mount of the virtio-blk disk /dev/vda, then dd with
# conv=fsync to a file on it alongside the workload ("BLOCK-IO rounds=N").
# In mode clockreset: before stackmap-guestd starts, with tracing paused, the
# map's successes since boot are printed ("CLOCK-RESET successes=S") and the
# trace clock is set again, which resets the ring buffer: those S stack ids'
# events are gone and nothing in the ring buffer's counters says so.
# In mode crash a background timer starts /e2s-ticker K (e2s-ticker.c): it
# writes "e2s-tick I K MONO_NS" to trace_marker for I = 1..K, at least 1 ms
# apart, and panics with sysrq-c right after the K-th: tick I is committed at
# least K - I ms before the panic.
. /scenarios/lib.sh
. /scenarios/agent-state.sh
mode=$(param e2s_mode steady)
seconds=$(param e2s_seconds 15)
resets=$(param e2s_resets 50)
crash_ms=$(param e2s_crash_ms 5000)
ticks=$(param e2s_ticks 500)
delay=$(param e2s_delay 0)
agent_opts=$(param e2s_agent "" | tr , ' ')
TAIL=
# On SIGTERM the agent sends what it holds, then BYE, and exits once the host ACKed
# the BYE: that, not a sleep, is how the host gets the stream's tail; this only
# bounds the wait for a host that never ACKs (the host's checks then fail).
LINGER_MS=120000
mkdir -p /tmp/maps
if [ "$(param e2s_trace boot)" = late ]; then
	echo 4096 > $T/buffer_size_kb
	for e in kmem:kmalloc kmem:kmem_cache_alloc stackmap_test:chain; do
		echo "$e" >> $T/set_event || fail "cannot enable $e"
	done
	echo 1 > $T/options/stackmap || fail "cannot set options/stackmap"
	echo 1 > $T/options/stacktrace || fail "cannot set options/stacktrace"
fi

work() {
	ls -R /sys/class /proc/sys > /dev/null 2>&1
	find /sys/devices -name uevent | head -n 100 | xargs cat > /dev/null 2>&1
	dd if=/dev/zero of=/tmp/f bs=64k count=4 2> /dev/null
	rm -f /tmp/f
}
# more distinct kernel paths, for the map-full case
work_wide() {
	work
	cat /proc/*/status /proc/*/maps /proc/*/stat > /dev/null 2>&1
	cat /sys/kernel/debug/*/* > /dev/null 2>&1
	for n in $(seq 1 60); do echo $n > /sys/kernel/debug/ftrace_stackmap_test_deep 2>/dev/null; done
	ip link > /dev/null 2>&1; mount > /dev/null; ps > /dev/null; df > /dev/null 2>&1
	sync
}
CH=/sys/kernel/debug/ftrace_stackmap_test_chains
# The chain emitter (background). Control files in /tmp: chains-stop ends it;
# chains-pause holds it between two writes, acknowledged by chains-paused.
chains() {
	i=0
	while [ ! -e /tmp/chains-stop ]; do
		if [ -e /tmp/chains-pause ]; then
			: > /tmp/chains-paused
			while [ -e /tmp/chains-pause ]; do usleep 5000; done
			rm -f /tmp/chains-paused
		fi
		for c in 0 1 2 3; do
			echo "$c $((i % 5 + 1))" > $CH || { say "CHAINS-FAIL $c"; exit 1; }
		done
		i=$((i + 1))
		usleep 20000
	done
}
chains_pause() {
	: > /tmp/chains-pause
	while [ ! -e /tmp/chains-paused ]; do usleep 2000; done
}
chains_resume() {
	rm -f /tmp/chains-pause
	while [ -e /tmp/chains-paused ]; do usleep 2000; done
}
chains_counts() { awk '{ printf "%s%s", s, $2; s = " " }' $CH; }
entries() { cat $T/per_cpu/cpu*/stats | awk '$1 == "entries:" { n += $2 } END { print n + 0 }'; }
# copy_log FILE: FILE's lines to the console as they are written, until /tmp/log-stop
# exists and every line was copied
copy_log() {
	n=0
	while :; do
		total=$(wc -l < "$1")
		if [ "$total" -gt "$n" ]; then
			sed -n "$((n + 1)),${total}p" "$1" >&2
			n=$total
		elif [ -e /tmp/log-stop ]; then
			break
		else
			usleep 100000
		fi
	done
}
overrun() { cat $T/per_cpu/cpu*/stats | awk '$1 == "overrun:" { n += $2 } END { print n + 0 }'; }
epoch() { sed -n 's/^epoch: *//p' $T/stack_map_stat; }
snap() {   # snap SUFFIX: save the current epoch's map
	e=$(epoch)
	cat $T/stack_map_stat > /tmp/maps/stat-$e$1.txt
	cat $T/stack_map > /tmp/maps/map-$e$1.txt
}

# Mode overflow, while waiting for the hold to end: every 20 s one HOLD-WAIT
# line (workload rounds, per-CPU ring-buffer counters, the agent's state and
# where it sleeps); once no round ends in 20 s, the blocked tasks' stacks
# (sysrq w) and the agent's kernel stack, once.
hold_watch() {
	dumped=
	last=-1
	while :; do
		sleep 20
		n=$(wc -l < /tmp/work-rounds)
		set -- $(cat /proc/$AGENT/stat 2>/dev/null)
		say "HOLD-WAIT rounds=$n agent=${3:-gone} wchan=$(cat /proc/$AGENT/wchan 2>/dev/null)" \
		    "$(for d in $T/per_cpu/cpu*; do
			awk -v c="${d##*cpu}" '$1 == "entries:" { e = $2 } $1 == "overrun:" { o = $2 }
			    $1 == "read" { r = $3 } END { printf "cpu%s=%s/%s/%s ", c, e, o, r }' $d/stats
		      done)(entries/overrun/read) chains=$(chains_counts | tr ' ' ,)"
		if [ "$n" = "$last" ] && [ -z "$dumped" ]; then
			dumped=1
			say "HOLD-WAIT no workload round in 20 s: blocked tasks (sysrq w), the agent's stack"
			echo w > /proc/sysrq-trigger
			cat /proc/$AGENT/stack 2>/dev/null
			ps
		fi
		last=$n
	done
}

say "E2S mode=$mode seconds=$seconds epoch=$(epoch) bits: $(tr '\n' ' ' < $T/stack_map_stat)"
# The test hooks' own symbols when they are a module (the real guest): their chain
# frames are module addresses the host checks against these. Sent now, so that a
# run that ends in a panic has them too.
if grep '\[trace_stackmap_test\]$' /proc/kallsyms > /tmp/hooksyms.txt; then
	emit hooksyms.txt /tmp/hooksyms.txt
fi
[ -w $CH ] || fail "no $CH (kernel without patch 0010, or its module not loaded?)"
grep -qx 'stackmap_test:chain' $T/set_event || fail "stackmap_test:chain is not enabled"
chains &
CHAINS=$!
i=0
while [ $i -lt "$delay" ]; do work; i=$((i + 1)); done
if [ "$mode" = clockreset ]; then
	work
	chains_pause
	echo 0 > $T/tracing_on
	# the clock in use, set again below: tracing_set_clock() resets the buffers
	clock=$(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
	say "CLOCK-RESET successes=$(sed -n 's/^successes: *//p' $T/stack_map_stat)" \
	    "entries=$(cat $T/per_cpu/cpu*/stats | awk '$1 == "entries:" { n += $2 } END { print n }')" \
	    "clock=$clock chains=$(chains_counts | tr ' ' ,)"
	echo "$clock" > $T/trace_clock || fail "setting trace_clock $clock"
	echo 1 > $T/tracing_on
	chains_resume
fi
DISTINCT=/sys/kernel/debug/ftrace_stackmap_test_distinct
stat_line() { tr '\n' ' ' < $T/stack_map_stat; }
if [ "$mode" = unbounded ]; then
	[ -w $DISTINCT ] || fail "no $DISTINCT (kernel without patch 0012?)"
	grep -qx 'stackmap_test:distinct' $T/set_event || fail "stackmap_test:distinct is not enabled"
	echo "40000 3000" > $DISTINCT || fail "write $DISTINCT"
	say "NOREADER $(stat_line)"
fi
# resetbench LABEL: the workload in the background, the resets, their figures
resetbench() {
	rm -f /tmp/rb-stop
	( while [ ! -e /tmp/rb-stop ]; do work; done ) &
	rb_work=$!
	sleep 1
	say "RESETBENCH $1 BEFORE $(stat_line)"
	out=$(/e2s-resets "$resets" 100 "$1") || fail "e2s-resets $1"
	say "RESETBENCH $1 $out"
	say "RESETBENCH $1 AFTER $(stat_line)"
	: > /tmp/rb-stop
	wait $rb_work
}
[ "$mode" = resetbench ] && resetbench noreader
backlog=$(rb_sum entries)
# overflow and postmortem read the agent's log (postmortem: its "host WELCOME")
if [ "$mode" = overflow ] || [ "$mode" = postmortem ]; then
	: > /tmp/agent.log
	# shellcheck disable=SC2086
	/stackmap-guestd --exclude-self --linger-ms=$LINGER_MS $agent_opts 2>> /tmp/agent.log &
	AGENT=$!
	copy_log /tmp/agent.log &
	TAIL=$!
else
	# shellcheck disable=SC2086
	/stackmap-guestd --exclude-self --linger-ms=$LINGER_MS $agent_opts &
	AGENT=$!
fi
# The agent streams once it has every CPU's ring buffer and stack_map_delta open
# (agent-state.sh's streaming(): what a map reset needs). CHAINS-STREAMING below waits
# for its first reads.
until_state "streaming (every CPU's trace_pipe_raw and stack_map_delta open)" streaming
say "STREAMING agent=$AGENT"
if [ "$delay" != 0 ]; then
	# what the ring buffers held when the agent started is read: from here on every
	# event is, unless they overrun again
	# shellcheck disable=SC2086
	until_state "read the backlog ($backlog)" read_past $backlog
	say "CHAINS-STREAMING $(chains_counts) overrun=$(overrun)"
fi
end=$(($(date +%s) + seconds))
case "$mode" in
resets)
	i=0
	while [ $i -lt "$resets" ]; do
		work
		if [ $((i % 2)) = 0 ]; then
			# quiet reset: the dump is exact (the chain emitter is
			# held, so that no chain event is fired with tracing off)
			chains_pause
			echo 0 > $T/tracing_on
			snap ""
			echo 0 > $T/stack_map || fail "reset $i"
			echo 1 > $T/tracing_on
			chains_resume
		else
			# racing reset: events are recorded while the map is read and reset
			snap "-racy"
			echo 0 > $T/stack_map || fail "reset $i"
		fi
		i=$((i + 1))
	done
	say "RESETS $i"
	;;
resetbench)
	resetbench reader
	;;
unbounded)
	n=$(param e2s_distinct 16384)
	if [ "$(param e2s_poll_reset 0)" = 1 ]; then
		cap=$(sed -n 's/^entries: *[0-9]* \/ *//p' $T/stack_map_stat)
		( while [ ! -e /tmp/poll-stop ]; do
			e=$(sed -n 's/^entries: *\([0-9]*\).*/\1/p' $T/stack_map_stat)
			[ "$e" -lt $((cap * 3 / 4)) ] || echo 0 > $T/stack_map
			usleep 10000
		  done ) &
		POLL=$!
	fi
	say "UNBOUNDED-START $(stat_line)"
	v=0
	while [ $v -lt "$n" ]; do
		k=256
		[ $((n - v)) -ge 256 ] || k=$((n - v))
		echo "$v $k" > $DISTINCT || fail "write $DISTINCT $v $k"
		v=$((v + k))
		# at most 2560 new stacks a second: the agent must read the map's
		# entries as fast as they appear, or switches wait for it
		# (switch_waits) and the map fills meanwhile
		usleep 100000
	done
	if [ -n "${POLL:-}" ]; then
		: > /tmp/poll-stop
		wait $POLL
	fi
	say "UNBOUNDED-END n=$n $(stat_line)"
	;;
crash)
	( while [ ! -e /tmp/e2s-marked ]; do sleep 0.05; done
	  sleep "$(echo "$crash_ms" | awk '{ printf "%.3f", $1 / 1000 }')"
	  say "TICKER K=$ticks"
	  /e2s-ticker "$ticks"
	  # e2s-ticker only returns on an error: say what the tracing state
	  # was, then end the boot the same way (the host fails on the marker)
	  say "TICKER-FAIL rc=$? tracing_on=$(cat $T/tracing_on)" \
	      "buffer_total_size_kb=$(cat $T/buffer_total_size_kb)"
	  for f in $T/per_cpu/cpu*/stats; do say "TICKER-FAIL $f: $(tr '\n' ' ' < $f)"; done
	  echo c > /proc/sysrq-trigger ) &
	n=0
	while :; do
		work
		n=$((n + 1))
		# clock check: printk stamps this with the printk clock on the
		# console and (printk:console) with the trace clock in the trace
		echo "e2s-clock $n" > /dev/kmsg
		echo "e2s-mark $n" > $T/trace_marker ||
			say "MARK-WRITE-FAIL $n tracing_on=$(cat $T/tracing_on)"
		sleep 0.3
		say "MARK $n"
		: > /tmp/e2s-marked
	done
	;;
full)
	while [ "$(date +%s)" -lt "$end" ]; do work_wide; done
	;;
postmortem)
	# e2s_seconds of workload streamed, then the kernel dies in the context
	# e2s_panic names: sysrq (sysrq-c from this shell) or one of the test
	# module's (null, timer, panic: guest-kernel/testmod). The marker goes
	# through the kernel log, which the console shows whole (panic.sh).
	ctx=$(param e2s_panic null)
	[ "$ctx" = sysrq ] ||
		insmod /lib/modules/stackmap_testmod.ko || fail "insmod stackmap_testmod"
	# the host is connected (it may still be in its reconnect backoff when the
	# agent starts), then e2s_seconds of workload from then on
	i=0
	until grep -q 'host WELCOME' /tmp/agent.log; do
		[ $i -lt 1200 ] || fail "the host did not connect in 60 s"
		i=$((i + 1))
		usleep 50000
	done
	end=$(($(date +%s) + seconds))
	while [ "$(date +%s)" -lt "$end" ]; do work; done
	echo "STACKMAP-E2E: PANIC $ctx" > /dev/kmsg
	if [ "$ctx" = sysrq ]; then
		echo c > /proc/sysrq-trigger
	else
		echo "$ctx" > /sys/kernel/debug/stackmap_testmod_crash
	fi
	# the timer context dies a jiffy later, in the timer's softirq
	sleep 10
	fail "still alive 10 s after the $ctx crash"
	;;
module)
	M=/sys/kernel/debug/stackmap_testmod
	insmod /lib/modules/stackmap_testmod.ko || fail "insmod stackmap_testmod"
	grep '\[stackmap_testmod\]$' /proc/kallsyms > /tmp/modsyms.txt
	say "MODULE-LOADED $(wc -l < /tmp/modsyms.txt) symbols"
	# at least 3 rounds and 5 s loaded (the agent rescans /proc/modules every
	# second), however long loading took
	loaded=$(date +%s)
	i=0
	while [ $i -lt 3 ] || [ "$(date +%s)" -lt "$end" ] ||
	      [ "$(date +%s)" -lt $((loaded + 5)) ]; do
		work
		echo 20 > $M || fail "write $M"
		i=$((i + 1))
	done
	n=$(cat $M)
	snap "-racy"
	rmmod stackmap_testmod || fail "rmmod stackmap_testmod"
	echo "e2s-unloaded" > $T/trace_marker
	say "MODULE-UNLOADED allocations=$n"
	i=0
	while [ $i -lt 3 ]; do work; i=$((i + 1)); done
	emit modsyms.txt /tmp/modsyms.txt
	;;
block)
	mke2fs -F /dev/vda > /dev/null || fail "mke2fs /dev/vda"
	mkdir -p /mnt
	mount -t ext2 /dev/vda /mnt || fail "mount /dev/vda"
	n=0
	# at least 5 rounds, however long mke2fs took
	while [ $n -lt 5 ] || [ "$(date +%s)" -lt "$end" ]; do
		work
		dd if=/dev/zero of=/mnt/f bs=64k count=8 conv=fsync 2> /dev/null ||
			fail "dd to /mnt/f"
		rm -f /mnt/f
		sync
		n=$((n + 1))
	done
	umount /mnt || fail "umount /mnt"
	say "BLOCK-IO rounds=$n"
	;;
overflow)
	limit=$(($(date +%s) + 600))
	: > /tmp/work-rounds
	hold_watch &
	WATCH=$!
	until grep -q 'test hook: the host has every frame held' /tmp/agent.log; do
		[ "$(date +%s)" -lt "$limit" ] || fail "the agent's test hold did not end in 600 s"
		work
		echo >> /tmp/work-rounds
	done
	kill $WATCH
	say "HOLD-ENDED"
	end=$(($(date +%s) + seconds))
	while [ "$(date +%s)" -lt "$end" ]; do work; done
	;;
*)
	while [ "$(date +%s)" -lt "$end" ]; do work; done
	;;
esac
: > /tmp/chains-stop
wait $CHAINS
cat $CH > /tmp/chains.txt
say "CHAINS $(chains_counts)"
echo 0 > $T/tracing_on
say "map: $(tr '\n' ' ' < $T/stack_map_stat)"
snap ""
# tracing is off: let the agent drain the ring buffers (the host checks what is left;
# SIGTERM then sends the rest, see LINGER_MS)
i=0
while [ "$(entries)" != 0 ] && [ $i -lt 300 ]; do
	usleep 100000
	i=$((i + 1))
done
[ "$(entries)" = 0 ] || say "DRAIN-WAIT $(entries) entries left after 30 s"
set -- $(cat /proc/$AGENT/stat)
say "AGENT_CPU_TICKS $((${14} + ${15})) hz=$(getconf CLK_TCK 2>/dev/null || echo 100)"
kill -TERM $AGENT
wait $AGENT
say "AGENT_EXIT $?"
if [ -n "$TAIL" ]; then
	: > /tmp/log-stop	# copy_log ends once it copied the agent's last lines
	wait $TAIL
fi
cat $T/per_cpu/cpu*/stats > /tmp/stats.txt
# A CPU whose stats still count entries after the agent drained it: keep what
# tells "not yet readable" from "lost for good" (what the reader race patch
# 0001 fixes looked like: the iterator shows nothing, and after one more
# event on that CPU and a full drain the count is unchanged).
: > /tmp/unread.txt
unread=$(for d in $T/per_cpu/cpu*; do
	awk -v c="${d##*cpu}" '$1 == "entries:" && $2 != 0 { print c }' $d/stats
done)
for c in $unread; do
	d=$T/per_cpu/cpu$c
	say "UNREAD cpu$c $(awk '$1 == "entries:" { print $2 }' $d/stats) entries"
	{ echo "=== cpu$c"; cat $d/stats
	  echo "--- trace (iterator, last 40)"; tail -n 40 $d/trace
	  echo "--- after one trace_marker write on cpu$c and a full drain"
	  echo 1 > $T/tracing_on
	  taskset -c "$c" sh -c "echo e2s-poke > $T/trace_marker"
	  echo 0 > $T/tracing_on
	  timeout 3 cat $d/trace_pipe_raw > /tmp/raw
	  echo "drained $(wc -c < /tmp/raw) bytes; page headers (time_stamp, commit):"
	  off=0
	  while [ $off -lt "$(wc -c < /tmp/raw)" ]; do
		od -A d -t x8 -N 16 -j $off /tmp/raw | head -n 1
		off=$((off + 4096))
	  done
	  cat $d/stats; } >> /tmp/unread.txt
done
[ -s /tmp/unread.txt ] && emit unread.txt /tmp/unread.txt
(cd /tmp && tar czf /tmp/maps.tar.gz maps)
emit maps.tar.gz /tmp/maps.tar.gz
emit stats.txt /tmp/stats.txt
emit chains.txt /tmp/chains.txt
say "E2S DONE"
