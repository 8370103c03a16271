# Large boots export in bounded memory: the same synthetic workload stored as a boot of
# 50000 and one of 200000 traced events (4 CPUs, 8 epochs), exported to trace.dat and
# to perf-script; the peak RSS (VmHWM) of each export of the large boot stays within
# 25% of the small one's, where memory that grew with the boot would be 4 times it.
# Bounded means: what the exporters hold is one stored batch of pages (--batch-mb,
# here 1) and the caches of a boot's stacks, never the boot's events.
. "$1"
PEAK=$2
for n in 50000 200000; do
	start_daemon --listen "$T/sock$n" --domain-name b$n --batch-mb 1
	"$SYNTH_GUEST" --connect "$T/sock$n" --events $n --cpus 4 --epochs 8 --stacks 2000 \
		--seed 3 -q >/dev/null || fail "guest of $n events"
	wait_for daemon_says "closed the connection" || fail "no disconnect"
	stop_daemon
	: >"$T/daemon.log"
done
ha() { "$HOST_AGENT" "$@" --state-dir "$T/state"; }
for n in 50000 200000; do
	dat[$n]=$(python3 "$PEAK" "$T/dat$n.out" "$HOST_AGENT" export trace.dat -o "$T/b$n.dat" \
		--state-dir "$T/state" --domain-name b$n) || { cat "$T/dat$n.out.err"; fail "export $n"; }
	perf[$n]=$(python3 "$PEAK" "$T/perf$n" "$HOST_AGENT" report events --format perf-script \
		--state-dir "$T/state" --domain-name b$n) || { cat "$T/perf$n.err"; fail "perf-script $n"; }
	echo "boot of $n events: export trace.dat peak RSS ${dat[$n]} KiB, perf-script ${perf[$n]} KiB"
done
want=$(ha report events --domain-name b200000 -n 10000000 --json | python3 -c \
	'import json,sys; print(len(json.load(sys.stdin)["events"]))')
got=$(grep -c '^<' "$T/perf200000")
[ "$got" = "$want" ] && [ "$got" -ge 200000 ] || fail "perf-script: $got samples, want $want"
grep -q " $want events on 4 CPUs\| [0-9]* events on 4 CPUs" "$T/dat200000.out.err" ||
	{ cat "$T/dat200000.out.err"; fail "export summary"; }
[ "${dat[200000]}" -le $((dat[50000] * 5 / 4)) ] ||
	fail "export trace.dat: peak RSS ${dat[200000]} KiB for 4 times the events of ${dat[50000]} KiB"
[ "${perf[200000]}" -le $((perf[50000] * 5 / 4)) ] ||
	fail "perf-script: peak RSS ${perf[200000]} KiB for 4 times the events of ${perf[50000]} KiB"
ok "4 times the events, peak RSS within 25%: trace.dat ${dat[50000]} -> ${dat[200000]} KiB," \
	"perf-script ${perf[50000]} -> ${perf[200000]} KiB ($got samples)"
