# The disk quota, filled (issue 21): a guest streams past a small --quota-mb. The host
# promises (host-agent/README.md, "Untrusted guest"): a batch that would cross the quota
# is rolled back, not acknowledged, and logged; the connection ends. So no ACK covers a
# frame that is not stored, the store stays within the quota, the guest keeps what was
# not acknowledged and resends it, and once the quota is raised (a restart) the stream
# resumes and every event arrives exactly once.
. "$1"
Q=3
start_daemon --listen "$T/sock" --domain-name vm1 --quota-mb $Q
wait_for test -S "$T/sock" || fail "daemon socket"
"$SYNTH_GUEST" --connect "$T/sock" --events 200000 --stacks 2000 --seed 51 \
	--reconnect-ms 200 --expect "$T/expect" >"$T/guest.out" 2>"$T/guest.err" &
GUEST=$!
quota_hits() { [ "$(grep -c "disk quota of domain vm1 reached" "$T/daemon.log")" -ge "$1" ]; }
# the guest comes back and resends; each time the same batch is refused again
wait_for quota_hits 3 || { cat "$T/guest.err"; fail "the quota was not reached 3 times"; }
kill -0 "$DAEMON_PID" || fail "daemon died at the quota"
line=$(grep -m1 "disk quota of domain vm1 reached" "$T/daemon.log")
ok "log: ${line#*: vm1: }"
db=$(db_of vm1)
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
dbsz=$(size "$db") walsz=$(size "$db-wal")
stop_daemon
# what the guest was told is durable, against what the store holds
next=$("$SQLITE3" "$db" "SELECT next_seq FROM streams")
acked=$(sed -n 's/.*connection lost at acked seq \([0-9]*\),.*/\1/p' "$T/guest.err" | sort -n | tail -1)
[ -n "$acked" ] || { cat "$T/guest.err"; fail "the guest lost no connection"; }
[ "$acked" -ge 1 ] && [ "$acked" -lt "$next" ] ||
	fail "guest acked up to seq $acked, the store holds frames up to $((next - 1))"
# each refusal names the first frame not stored; a later, smaller batch may still fit
last=$(grep "disk quota of domain vm1 reached" "$T/daemon.log" | tail -1 |
	sed -n 's/.*frames from seq \([0-9]*\) are not stored or acknowledged.*/\1/p')
[ -n "$last" ] && [ "$last" -le "$next" ] && [ "$last" -gt "$acked" ] ||
	fail "the last refusal names seq '$last' (stored up to $((next - 1)), acked $acked)"
ok "acked $acked of the frames the store holds (up to seq $((next - 1))), none beyond"
# the database stays within the quota; its WAL, which SQLite checkpoints once it holds
# 1000 pages (4 MiB), holds at most one batch more (--batch-mb, 4 MiB, + 1 MiB of rows)
[ "$dbsz" -le $((Q << 20)) ] || fail "database $dbsz bytes above the $Q MiB quota"
[ $((dbsz + walsz)) -le $(((Q + 9) << 20)) ] ||
	fail "database + WAL $((dbsz + walsz)) bytes above the quota + 9 MiB"
ok "at the quota: database $dbsz bytes, WAL $walsz bytes (quota $((Q << 20)))"
used=$("$SQLITE3" "$db" "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")
[ "$used" -le $((Q << 20)) ] || fail "the store holds $used bytes, above the $Q MiB quota"
stored=$("$SQLITE3" "$db" "SELECT COALESCE(SUM(nr_events), 0) FROM chunks")
ok "stored: $used bytes"
# a raised quota: the guest (still retrying, frames kept) resumes and finishes
start_daemon --listen "$T/sock" --domain-name vm1 --quota-mb 64
wait "$GUEST" || { cat "$T/guest.err"; fail "guest did not finish after the restart"; }
GUEST=
wait_for daemon_says "BYE" || fail "no BYE after the restart"
stop_daemon
integrity_ok "$db"
grep -q ", 0 dropped)" "$T/guest.err" || { tail -3 "$T/guest.err"; fail "the guest dropped frames"; }
gaps=$("$SQLITE3" "$db" "SELECT SUM(gap_frames) FROM streams")
[ "$gaps" = 0 ] || fail "$gaps frames recorded as never arrived"
report boots --json --domain-name vm1 | python3 -c '
import json,sys; b=json.load(sys.stdin); assert len(b)==1, b; b=b[0]
assert b["ended"]=="clean" and b["lost_frames"]==0 and b["lost_events"]==0 and b["malformed"]==0, b' ||
	fail "boots after the restart"
compare_folded vm1 "$T/expect"
ok "$stored ring events (traced and stack events) stored before the quota; after the restart every event once ($(grep -o '[0-9]* resent' "$T/guest.err" | tail -1))"
