# Retention benchmark, one side: a fixed per-CPU buffer in overwrite mode,
# kmem_cache_alloc events with a kernel stack each (options/stacktrace), a
# fixed slab allocation workload; stackmap off or on.
#
# Parameters (kernel command line):
#   stackmap.mode=on|off   options/stackmap
#   stackmap.bufkb=N       buffer_size_kb per CPU (default 4096)
#   stackmap.work=N        workload iterations (default 1500)
. /scenarios/lib.sh
mode=$(param mode off)
bufkb=$(param bufkb 4096)
work=$(param work 1500)
case "$mode" in on) flag=1 ;; off) flag=0 ;; *) fail "bad stackmap.mode=$mode" ;; esac

echo 0 > $T/tracing_on
echo 0 > $T/events/enable
echo "$bufkb" > $T/buffer_size_kb || fail "buffer_size_kb=$bufkb"
echo 1 > $T/options/overwrite
echo > $T/trace
echo 0 > $T/stack_map
echo $flag > $T/options/stackmap
echo 1 > $T/options/stacktrace
echo 1 > $T/events/kmem/kmem_cache_alloc/enable
say "RETENTION mode=$mode bufkb=$bufkb work=$work cpus=$(nproc)"

# The workload: file creation, lookup and removal on tmpfs plus pipes,
# all from shell builtins and a few forks: a small, repetitive set of
# slab allocation stacks, like the seed's kmem_cache_alloc workload.
start=$(cut -d' ' -f1 /proc/uptime)
echo 1 > $T/tracing_on
i=0
while [ $i -lt "$work" ]; do
	: > /tmp/w.$((i % 16))
	read -r x < /tmp/w.$((i % 16))
	echo $i | read -r y
	rm -f /tmp/w.$(((i + 8) % 16))
	i=$((i + 1))
done
echo 0 > $T/tracing_on
end=$(cut -d' ' -f1 /proc/uptime)
echo 0 > $T/events/enable
echo 0 > $T/options/stacktrace

bytes=0 entries=0 overrun=0
for s in $T/per_cpu/cpu*/stats; do
	b=$(awk '$1 == "bytes:" { print $2 }' $s)
	e=$(awk '$1 == "entries:" { print $2 }' $s)
	o=$(awk '$1 == "overrun:" { print $2 }' $s)
	bytes=$((bytes + b)) entries=$((entries + e)) overrun=$((overrun + o))
done
# Retained events and their time span, from the trace itself.
awk '
	/ kmem_cache_alloc: / {
		match($0, / [0-9]+\.[0-9]+: /)
		ts = substr($0, RSTART + 1, RLENGTH - 3)
		if (!n) first = ts
		last = ts
		n++
	}
	/: <stack_id [0-9]+>/ { ids++ }
	/: <stack trace>/ { full++ }
	END { printf "retained=%d first=%s last=%s stack_ids=%d full_stacks=%d\n", n, first, last, ids, full }
' $T/trace > /tmp/r
say "RESULT mode=$mode $(cat /tmp/r) bytes=$bytes entries=$entries overrun=$overrun workload_s=$(awk -v a=$start -v b=$end 'BEGIN { print b - a }')"
if [ "$mode" = on ]; then
	say "STAT $(tr -s ' \n' ' ' < $T/stack_map_stat)"
fi
echo 0 > $T/options/stackmap
say "PASS retention run done"
