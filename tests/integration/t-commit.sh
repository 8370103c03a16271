# Commits off the main loop (host-agent/ingest-commit.c), on a disk that stops
# answering. One daemon serves two VMs (--socket-dir); vmA's store is on a "stalled
# disk" (slow-sync.so: its fsyncs block while a gate file exists), vmB's is not.
#  1. While vmA's commit is stuck between its write and its fsync, vmB streams
#     20000 events and gets every ACK: one store's disk delays nobody else.
#  2. The daemon is killed -9 with vmA's commit still stuck: vmA's guest was never
#     acknowledged a frame of that batch (its last ACK is below what the store had
#     committed before the stall).
#  3. Restarted (the disk answers again), vmA's guest resends and every event of both
#     VMs is stored exactly once, as their ground truths say.
. "$1"
: "${SLOWSYNC:?}"
D=$T/vms
GATE=$T/gate
mkdir -p "$D"
GUESTS=()
cleanup_commit() {
	rm -f "$GATE"
	for p in "${GUESTS[@]}"; do kill -9 "$p" 2>/dev/null; done
	cleanup
}
trap cleanup_commit EXIT

LD_PRELOAD=$SLOWSYNC SLOWSYNC_MATCH=/vmA.db SLOWSYNC_GATE=$GATE start_daemon --socket-dir "$D"
wait_for daemon_says "watching for NAME.sock" || fail "daemon did not start"
# vmA: a slow steady stream that outlasts the stall, its window big enough to keep
# every frame not acknowledged meanwhile (no drops: exactly once is checkable)
"$SYNTH_GUEST" --listen "$D/vmA.sock" --events 60000 --cpus 2 --epochs 2 --seed 61 \
	--throttle-us 3000 --window-mb 64 --expect "$T/vmA.expect" \
	>"$T/vmA.out" 2>"$T/vmA.err" &
PID_A=$!
GUESTS+=("$PID_A")
chunks() { "$SQLITE3" "$(db_of vmA)" "SELECT COUNT(*) FROM chunks" 2>/dev/null; }
has_chunks() { [ "$(chunks)" -ge 2 ]; }
wait_for has_chunks || fail "vmA stored nothing"
# the disk of vmA's store stops answering: its next commit blocks in fsync
touch "$GATE"
wait_for test -e "$GATE.held" || fail "no commit of vmA reached its fsync"
committed=$("$SQLITE3" "$(db_of vmA)" "SELECT next_seq - 1 FROM streams")
ok "vmA's commit is stuck in fsync; the store has committed vmA's frames up to seq $committed"

"$SYNTH_GUEST" --listen "$D/vmB.sock" --events 20000 --cpus 2 --epochs 2 --seed 62 \
	--expect "$T/vmB.expect" >"$T/vmB.out" 2>"$T/vmB.err" &
PID_B=$!
GUESTS+=("$PID_B")
b_done() { ! kill -0 "$PID_B"; }
wait_for b_done || fail "vmB was not acknowledged to its end while vmA's commit was stuck"
wait "$PID_B" || { cat "$T/vmB.err"; fail "vmB failed"; }
test -e "$GATE.held" || fail "vmA's commit finished before vmB did: nothing was shown"
grep -q ", 0 dropped)" "$T/vmB.err" || fail "vmB dropped frames"
ok "vmB streamed and was acknowledged to its end while vmA's commit stayed stuck"

kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
test -e "$GATE.held" || fail "vmA's commit finished before the kill"
# vmA's guest sees the connection end and says how far it was acknowledged
lost() { grep -q "connection lost at acked seq" "$T/vmA.err"; }
wait_for lost || fail "vmA's guest did not see the connection end"
acked=$(sed -n 's/.*connection lost at acked seq \([0-9]*\),.*/\1/p' "$T/vmA.err" | tail -1)
[ "$acked" -le "$committed" ] ||
	fail "vmA's guest was acknowledged seq $acked, beyond the $committed committed before the stall"
ok "killed -9 mid-commit: vmA acknowledged up to seq $acked, none of the stuck batch"

rm -f "$GATE"
start_daemon --socket-dir "$D"
wait "$PID_A" || { cat "$T/vmA.err"; fail "vmA did not finish after the restart"; }
grep -q ", 0 dropped)" "$T/vmA.err" || { tail -3 "$T/vmA.err"; fail "vmA dropped frames"; }
# (vmB's BYE went to the first daemon, before the kill)
wait_for daemon_says "vmA: .*BYE" || fail "no BYE of vmA after the restart"
stop_daemon
for vm in vmA vmB; do
	integrity_ok "$(db_of $vm)"
	gaps=$("$SQLITE3" "$(db_of $vm)" "SELECT SUM(gap_frames) FROM streams")
	[ "$gaps" = 0 ] || fail "$vm: $gaps frames recorded as never arrived"
	compare_folded "$vm" "$T/$vm.expect"
done
