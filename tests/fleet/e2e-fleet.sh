# The fleet store with a real guest (suite e2e): the patched kernel under QEMU, its
# sockets in host A's VM directory (real.sock, real.qmp: the README's naming rule;
# QEMU pauses at the panic and host A's agent does the post-mortem),
# streamed by host A's `host-agent --socket-dir`, which replicates into shard1 of a
# private clickhouse-server; beside it host B's agent with a synthetic guest,
# replicating into shard2. The real guest crashes (tests/e2e-stream's stream.sh in
# mode crash: e2s-ticker writes ticks to trace_marker, then sysrq-c; pvpanic, QMP
# GUEST_PANICKED). Then the fleet reports through the Distributed tables (boots,
# folded, events) equal the union of the two stores' reports, exactly, and the fleet
# question "top stacks of the last second before every crash" answers with the real
# guest's stacks: its last events, the ticker's trace_marker writes among them.
# Every wait is for a state (a log line, a stored row, the crash mark), bounded.
. "$1"
. "$(dirname "$0")/ch-lib.sh"
: "${GUESTD:?}" "${TICKER:?}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PIDS=()
QEMU_PID=
cleanup_e() {
	[ -z "$QEMU_PID" ] || kill -9 -- "-$QEMU_PID" 2>/dev/null
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	[ -z "$CH_PID" ] || kill -9 "$CH_PID" 2>/dev/null
	cleanup
}
trap cleanup_e EXIT
efail() {
	for f in "$T/real.console" "$T/hostA.log" "$T/hostB.log"; do
		[ -f "$f" ] && { echo "--- $f (tail)"; tail -n 25 "$f" | tr -d '\r'; }
	done
	fail "$@"
}
# wait_long SECONDS COND-COMMAND...: wait_for with a longer bound (a guest boots)
wait_long() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# The kernel (guest-kernel/build-kernel, cached) and stream.sh's initramfs, from the
# e2e harness (tests/lib/stackmap_e2e.py)
mkdir -p "$T/guest"
python3 - "$GUESTD" "$TICKER" "$T/guest" "$T/guest/built" <<'EOF' || efail "building the guest"
import sys, types
import stackmap_e2e as sm
a = types.SimpleNamespace(guestd=sys.argv[1], ticker=sys.argv[2], workdir=sys.argv[3])
kout, initrd = sm.build_stream(a)
with open(sys.argv[4], 'w') as f:
    print(kout, initrd, file=f)
EOF
read -r KOUT INITRD <"$T/guest/built"
ok "guest kernel $KOUT ($(sed -n 's/^guest=//p' "$KOUT/build-info") guest)"

ch_config
ch_start
ok "clickhouse-server $(chq 'SELECT version()') up"
ch_fleet_schema

# agent HOST SHARD: host-agent --socket-dir for host HOST, replicating into SHARD
agent() {
	mkdir -p "$T/$1/vms"
	"$HOST_AGENT" --socket-dir "$T/$1/vms" --state-dir "$T/$1/state" --host "$1" \
		--clickhouse "${CH_URL}?database=$2" >>"$T/$1.log" 2>&1 &
	eval "AGENT_$1=$!"
	PIDS+=("$!")
}
agent hostA shard1
agent hostB shard2
wait_for ch_has shard1.boots || efail "hostA's agent did not create its tables"
wait_for ch_has shard2.boots || efail "hostB's agent did not create its tables"
ch_fleet_distributed

# The real guest: tracing set up once booted (stream.sh's e2s_trace=late: slab events
# with stacks, stackmap), the crash probe started 3 s after the first MARK (the
# agent's QMP connection is up long before), K ticks of at least 1 ms, then sysrq-c.
K=300
setsid "$ROOT/guest-kernel/launch" --kernel "$KOUT/bzImage" --initrd "$INITRD" \
	--scenario stream --console "$T/real.console" --timeout 600 \
	--socket "$T/hostA/vms/real.sock" --qmp "$T/hostA/vms/real.qmp" --on-panic pause \
	--append "stackmap.e2s_trace=late stackmap.e2s_mode=crash" \
	--append "stackmap.e2s_crash_ms=3000 stackmap.e2s_ticks=$K" \
	>"$T/launch.log" 2>&1 &
QEMU_PID=$!
# host B's synthetic guest, streaming while the real one does
"$SYNTH_GUEST" --listen "$T/hostB/vms/s1.sock" --events 30000 --cpus 2 --epochs 2 \
	--seed 71 --throttle-us 5000 --expect "$T/s1.expect" >/dev/null 2>"$T/s1.err" &
SYNTH_PID=$!
PIDS+=("$SYNTH_PID")
wait_long 60 grep -q "VM real: serving" "$T/hostA.log" || efail "hostA does not serve real"
wait_long 60 grep -q "real: QMP .*: watching for guest panics" "$T/hostA.log" ||
	efail "hostA does not watch real's QMP socket"
wait_long 300 grep -q "STACKMAP-E2E: STREAMING" "$T/real.console" || efail "the guest never streamed"
wait_long 120 ch_rows_at_least "shard1.events WHERE domain = 'real'" 1 ||
	efail "nothing of the real guest replicated while it streams"
ok "the real guest streams to hostA, replicated while it runs"

wait "$QEMU_PID"
rc=$?
QEMU_PID=
grep -q "sysrq: Trigger a crash" "$T/real.console" || efail "the guest did not crash (launch $rc)"
! grep -q "STACKMAP-E2E: TICKER-FAIL" "$T/real.console" || efail "e2s-ticker failed"
crashed() { [ "$("$SQLITE3" "$T/hostA/state/real.db" "SELECT ended FROM boots")" = crashed ]; }
wait_long 60 crashed || efail "the real boot is not marked crashed"
# --on-panic pause: hostA dumps the paused guest (real.qmp, --socket-dir mode), replays
# what it had not streamed into real's store, then ends QEMU
wait_long 60 grep -q "real: boot .*: closed after its post-mortem" "$T/hostA.log" ||
	efail "hostA did not retire real's connection for the post-mortem"
pm=$("$SQLITE3" "$T/hostA/state/real.db" "SELECT status FROM postmortems")
[ "$pm" = recovered ] || efail "real's post-mortem: '$pm'"
[ ! -e "$T/hostA/state/real.core" ] || efail "real's dump was not deleted"
ticks=$("$HOST_AGENT" report events -n 100000000 --state-dir "$T/hostA/state" \
	--domain-name real | grep -c "e2s-tick [0-9]* $K ")
[ "$ticks" = "$K" ] || efail "real: $ticks of the $K ticks stored after the post-mortem"
ok "real's post-mortem (socket-dir mode): recovered, all $K ticks stored"
wait "$SYNTH_PID" || { cat "$T/s1.err"; efail "synthetic guest s1"; }
ok "the real guest crashed (QMP GUEST_PANICKED), the synthetic one ended"
# A stop ships what is committed (a last round).
for h in hostA hostB; do
	kill -TERM "$(eval echo "\$AGENT_$h")"
	wait "$(eval echo "\$AGENT_$h")" || efail "$h's agent exit status"
done
r=$("$SQLITE3" "$T/hostA/state/real.db" "SELECT COUNT(*), SUM(gap_frames) FROM streams")
[ "$r" = "1|0" ] || efail "real: streams, gap frames: $r"
"$HOST_AGENT" report folded --state-dir "$T/hostB/state" --domain-name s1 | sort |
	cmp -s - <(sort "$T/s1.expect") || efail "s1: the store differs from the guest's ground truth"

STORES="hostA:real hostB:s1"
FLEET="${CH_URL}?database=fleet"

# boots, folded, events: the fleet's equal the union of the stores'
# shellcheck disable=SC2086
fleet_cmp_boots $STORES
grep -q "^hostA real 1 .* crashed " "$T/fleet.boots" || efail "real not crashed in the fleet"
ok "fleet boots = the stores' ($(wc -l <"$T/fleet.boots") boots, real crashed)"
# shellcheck disable=SC2086
fleet_cmp_folded $STORES
ok "fleet folded = the stores' ($(awk '{s += $NF} END {print s}' "$T/fleet.folded") events)"
# shellcheck disable=SC2086
n=$(fleet_cmp_events $STORES) || efail "fleet events != the stores': $n"
want=$(awk '{s += $NF} END {print s}' "$T/fleet.folded")
[ "$n" = "$want" ] || efail "$n events in the fleet's events, folded counts $want"
for t in shard1.events shard2.events; do chq "OPTIMIZE TABLE $t FINAL" || efail "optimize $t"; done
rows=$(chq "SELECT count() FROM fleet.events")
[ "$rows" = "$n" ] || efail "fleet.events: $rows rows after merges, the stores have $n events"
ok "fleet events = the stores' events --json, exactly ($n events, $rows rows once merged)"

# The last second before every crash of the fleet: the real guest's last second
fleet_last_second hostA real
m=$LAST_EVENTS
# the ticker's writes (its last ones came right before its sysrq-c), real stacks
grep -q "tracing_mark_write: e2s-tick [0-9]* $K " "$T/fleet.last" ||
	efail "the last second before the crash has none of the ticker's ticks"
grep -q "do_syscall_64" "$T/last.folded" ||
	{ head -5 "$T/last.folded"; efail "no syscall in the stacks of the last second"; }
fleet top -n 5 --ended crashed --last 1 >"$T/last.top" || efail "fleet top --last 1"
head -1 "$T/last.top" | grep -q "^$m events in 1 boots" || { cat "$T/last.top"; efail "top --last"; }
[ "$(awk '/^#1 / {print $2}' "$T/last.top")" = \
  "$(awk '{if ($NF > m) m = $NF} END {print m}' "$T/last.folded")" ] || efail "top --last #1"
ok "top stacks of the last second before every crash: the real guest's $m last events"
sed -n '1,12p' "$T/last.top"
