# Two guests at one --listen socket (one store): the store's one transaction holds one
# connection's batch, so a second guest is refused while the first is connected
# (logged), and served once the first is gone; both boots are then stored exactly once,
# each ended clean.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
wait_for test -S "$T/sock" || fail "daemon socket"
"$SYNTH_GUEST" --connect "$T/sock" --events 40000 --seed 21 --throttle-us 5000 \
	--boot-id 11111111111111111111111111111111 --reconnect-ms 100 \
	--expect "$T/expect1" -q >"$T/guest1.out" 2>"$T/guest1.err" &
G1=$!
wait_for daemon_says "connected (socket" || fail "first guest not connected"
"$SYNTH_GUEST" --connect "$T/sock" --events 30000 --seed 22 \
	--boot-id 22222222222222222222222222222222 --reconnect-ms 100 \
	--expect "$T/expect2" -q >"$T/guest2.out" 2>"$T/guest2.err" &
G2=$!
wait_for daemon_says "refusing a second connection while socket" ||
	fail "the second guest was not refused"
ok "$(grep -m1 "refusing a second connection" "$T/daemon.log" | sed 's/.*vm1: //')"
wait "$G1" || { cat "$T/guest1.err"; fail "first guest"; }
wait "$G2" || { cat "$T/guest2.err"; fail "second guest"; }
wait_for [ "$(grep -c "BYE (shutdown)" "$T/daemon.log")" -ge 2 ] || fail "two BYEs"
stop_daemon || fail "daemon exit status"
db=$(db_of vm1)
integrity_ok "$db"
ended=$("$SQLITE3" "$db" "SELECT group_concat(ended, ',') FROM (SELECT ended FROM boots ORDER BY id)")
[ "$ended" = "clean,clean" ] || fail "boots ended '$ended', not clean,clean"
dups=$("$SQLITE3" "$db" "SELECT sum(gap_frames), sum(malformed), sum(orphan_stacks) FROM streams")
[ "$dups" = "0|0|0" ] || fail "gap|malformed|orphans = $dups"
compare_folded vm1 "$T/expect1" 1
compare_folded vm1 "$T/expect2" 2
ok "both guests stored exactly once, one after the other"
