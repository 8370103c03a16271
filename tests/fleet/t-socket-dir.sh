# host-agent --socket-dir: one daemon for every plain-QEMU VM whose sockets appear in a
# directory (NAME.sock, NAME.qmp beside it). 8 synthetic guests at once (QEMU's side,
# server=on): six honest, one crashing (no BYE, GUEST_PANICKED on its QMP socket), one
# hostile; the daemon killed -9 mid-stream and restarted; a VM removed and one added
# while running; a socket whose name is not a store name. Every honest store equals
# its guest's ground truth exactly, and the hostile guest stalls nobody.
. "$1"
FAKE_QMP=$(dirname "$0")/fake-qmp.py
D=$T/vms
GUESTS=()
cleanup_fleet() {
	for p in "${GUESTS[@]}"; do kill -9 "$p" 2>/dev/null; done
	[ -z "${QMP_PID:-}" ] || kill -9 "$QMP_PID" 2>/dev/null
	cleanup
}
trap cleanup_fleet EXIT

# guest NAME SEED [ARGS...]: a synthetic guest serving $D/NAME.sock, ground truth in
# $T/NAME.expect; 20000 events over about two seconds.
guest() {
	local name=$1 seed=$2
	shift 2
	"$SYNTH_GUEST" --listen "$D/$name.sock" --events 20000 --cpus 2 --epochs 2 \
		--seed "$seed" --throttle-us 5000 --expect "$T/$name.expect" "$@" \
		>"$T/$name.out" 2>"$T/$name.err" &
	GUESTS+=("$!")
	eval "PID_$name=$!"
}

start_daemon --socket-dir "$D"
wait_for daemon_says "watching for NAME.sock" || fail "daemon did not start"
# vm7's QEMU: a QMP socket that reports the panic once the guest's stream stopped
python3 "$FAKE_QMP" "$D/vm7.qmp" "$T/vm7.panic" &
QMP_PID=$!
# vm1 and vm2 stream longer: they are still streaming when their sockets go
guest vm1 41 --events 300000
guest vm2 42 --events 100000
for i in 3 4 5 6; do guest "vm$i" "$((40 + i))"; done
guest vm7 47 --no-bye --boot-id 77777777777777777777777777777777
"$SYNTH_GUEST" --listen "$D/vm8.sock" --hostile garbage --seed 9 -q >/dev/null \
	2>"$T/vm8.err" &
HOSTILE=$!
GUESTS+=("$HOSTILE")
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
	"$D/bad name.sock"

for i in 1 2 3 4 5 6 7 8; do
	wait_for daemon_says "VM vm$i: serving" || fail "vm$i not served"
done
wait_for daemon_says "bad name.sock: not a usable VM name" ||
	fail "the bad name was not refused"
wait_for daemon_says "vm7: QMP .*watching for guest panics" ||
	fail "vm7's QMP socket not watched"
ok "8 VMs served by one daemon, a bad socket name refused"

# kill -9 mid-stream: every guest keeps its unacknowledged frames and resends them.
# Mid-stream is when every honest guest's store holds pages (vm1..vm6 end with BYE, so
# the short ones, 20000 events each, are the ones the kill can miss).
mid_stream() {
	local i n
	for i in 1 2 3 4 5 6 7; do
		[ -s "$(db_of "vm$i")" ] || return 1	# never create it here
		n=$("$SQLITE3" "$(db_of "vm$i")" "SELECT COUNT(*) FROM chunks WHERE nr_pages > 0") ||
			return 1
		[ "${n:-0}" -gt 0 ] || return 1
	done
}
wait_for mid_stream || fail "not every guest had pages stored within 30 s"
byes=$(grep -c "vm[1-7]: boot .*BYE" "$T/daemon.log")
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
start_daemon --socket-dir "$D"
for i in 3 4 5 6; do
	wait "$(eval echo "\$PID_vm$i")" || { cat "$T/vm$i.err"; fail "guest vm$i"; }
done
wait "$HOSTILE" || { cat "$T/vm8.err"; fail "the hostile guest was not hung up on"; }
grep -q "vm8: .*closing the connection: .*framing errors" "$T/daemon.log" ||
	fail "no hang-up line for the hostile guest"
wait "$PID_vm7" || { cat "$T/vm7.err"; fail "guest vm7"; }
touch "$T/vm7.panic"
wait_for grep -q "vm7: QMP GUEST_PANICKED (action poweroff): boot 1 marked crashed" \
	"$T/daemon.log" || fail "vm7 not marked crashed"
resent=0
for i in 1 2 3 4 5 6 7; do
	grep -q "connection lost" "$T/vm$i.err" && resent=$((resent + 1))
done
[ "$resent" -ge 6 ] ||
	fail "the kill -9 interrupted only $resent streams ($byes had ended with BYE before it)"
ok "kill -9 mid-stream: $resent guests resent; the hostile one hung up, vm7 crashed"

# removed while running: vm1's QEMU goes away (its socket with it) ...
kill -9 "$PID_vm1" 2>/dev/null
rm -f "$D/vm1.sock"
# ... vm2's socket is removed while its QEMU still streams: served to its end
rm -f "$D/vm2.sock"
wait_for daemon_says "VM vm1: disconnected, no longer served" ||
	fail "vm1 still served after its socket went"
grep -q "VM vm2: socket removed; served until its connection ends" "$T/daemon.log" ||
	fail "vm2's socket removal not seen"
kill -0 "$PID_vm2" || fail "vm2 ended before its socket was removed: make it longer"
wait "$PID_vm2" || { cat "$T/vm2.err"; fail "guest vm2"; }
wait_for daemon_says "VM vm2: disconnected, no longer served" ||
	fail "vm2 still served after its stream ended"
# ... vm9 appears, and vm2 boots again (a new QEMU on the same name: a new boot)
cp "$T/vm2.expect" "$T/vm2.expect.boot1"
guest vm9 49
guest vm2 52 --boot-id 22222222222222222222222222222222
wait "$PID_vm9" || { cat "$T/vm9.err"; fail "guest vm9"; }
wait "$PID_vm2" || { cat "$T/vm2.err"; fail "guest vm2 (second boot)"; }
wait_for daemon_says "vm9: .*BYE" || fail "vm9: no BYE"
wait_for daemon_says "vm2: boot 22222222-.*BYE" || fail "vm2: no second BYE"
ok "VMs removed and added while running"

hwm=$(awk '/VmHWM/ {print $2}' /proc/"$DAEMON_PID"/status)
stop_daemon || fail "daemon exit status"
[ "$hwm" -lt 262144 ] || fail "daemon peak RSS $hwm kB for 9 VMs"
ok "peak RSS ${hwm} kB of the restarted daemon"

for i in 1 2 3 4 5 6 7 9; do integrity_ok "$(db_of vm$i)"; done
for i in 3 4 5 6 9; do compare_folded "vm$i" "$T/vm$i.expect"; done
compare_folded vm2 "$T/vm2.expect.boot1" 1
compare_folded vm2 "$T/vm2.expect" 2
compare_folded vm7 "$T/vm7.expect"
b=$(report boots --json --domain-name vm7)
[ "$(json_field "$b" ended)" = crashed ] || fail "vm7's boot: $b"
for i in 2 3 4 5 6 9; do
	r=$("$SQLITE3" "$(db_of vm$i)" "SELECT SUM(gap_frames), SUM(malformed) FROM streams")
	[ "$r" = "0|0" ] || fail "vm$i: gaps|malformed $r"
	n=$("$SQLITE3" "$(db_of vm$i)" \
		"SELECT COUNT(*) FROM (SELECT 1 FROM chunks WHERE nr_pages > 0
		 GROUP BY boot, first_seq HAVING COUNT(*) > 1)")
	[ "$n" = 0 ] || fail "vm$i: $n pages stored twice"
done
# vm1 was killed mid-stream: what reached the host is a prefix, stored intact
b=$(report boots --json --domain-name vm1)
[ "$(json_field "$b" ended)" = disconnected ] || fail "vm1's boot: $b"
n=$(json_field "$b" events)
[ "$n" -gt 0 ] && [ "$n" -lt 300000 ] || fail "vm1: $n events stored"
[ ! -e "$(db_of "bad name")" ] || fail "a store for the refused name"
ok "every store equals its guest's ground truth; no loss, no duplicate"
