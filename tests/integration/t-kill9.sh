# kill -9 of the daemon at arbitrary instants mid-stream: the store stays intact, and
# after the guest resends, nothing is lost and nothing is duplicated. The guest is the
# server here, as QEMU with -chardev socket,server=on; the daemon reconnects.
. "$1"
# The daemon starts first: no socket yet, it retries with backoff (no spin).
start_daemon --socket "$T/sock" --domain-name vm1 --batch-mb 1
wait_for daemon_says "not available, retrying with backoff" || fail "no backoff"
"$SYNTH_GUEST" --listen "$T/sock" --events 150000 --cpus 2 --epochs 3 --seed 5 \
	--throttle-us 1500 --expect "$T/expect" >"$T/guest.out" 2>"$T/guest.err" &
GUEST=$!
wait_for test -S "$T/sock" || fail "guest socket"
for i in 1 2 3 4; do
	[ "$i" = 1 ] || start_daemon --socket "$T/sock" --domain-name vm1 --batch-mb 1
	sleep "0.$((RANDOM % 6 + 5))"
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	integrity_ok "$(db_of vm1)"
done
start_daemon --socket "$T/sock" --domain-name vm1
wait "$GUEST" || { cat "$T/guest.err"; fail "guest"; }
wait_for daemon_says "BYE" || fail "no BYE"
stop_daemon
integrity_ok "$(db_of vm1)"
grep -q "connection lost" "$T/guest.err" || fail "the kills did not interrupt the stream"
compare_folded vm1 "$T/expect"
r=$("$SQLITE3" "$(db_of vm1)" "SELECT SUM(gap_frames), SUM(malformed) FROM streams")
[ "$r" = "0|0" ] || fail "gaps|malformed after kill -9: $r"
n=$("$SQLITE3" "$(db_of vm1)" "SELECT COUNT(*) - COUNT(DISTINCT first_seq) FROM chunks WHERE nr_pages > 0")
[ "$n" = 0 ] || fail "$n pages stored twice"
ok "4 x kill -9: no loss, no duplicate ($(grep -o '[0-9]* resent' "$T/guest.err"))"
