# Commit to durable as the daemon measures it (ingest.h, ha_conn_durable()): at the end
# of a session it logs each frame's time from the read that took it off the link to
# the write of the ACK that covers it. Checked on a steady stream (a commit every few
# frames) and a burst (large batches): one line per session, over every frame the
# guest saw acknowledged, p50 <= p99 <= max, none of them longer than the session.
. "$1"

# check_line GUEST-STDERR LABEL START-NS END-NS: the daemon's line for the guest's one
# session against what the guest says it got acknowledged
check_line() {
	local acked line n p50 p99 max
	acked=$(sed -n 's/.* acked \([0-9]*\),.*/\1/p' "$1")
	[ -n "$acked" ] && [ "$acked" -gt 0 ] || fail "$2: the guest says acked '$acked'"
	[ "$(grep -c "commit to durable" "$T/daemon.log")" = 1 ] ||
		fail "$2: want one commit to durable line"
	line=$(grep "commit to durable (frame read -> its ACK written)" "$T/daemon.log")
	read -r p50 p99 max n < <(echo "$line" | sed -n \
		's/.*: p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms, max \([0-9.]*\) ms over \([0-9]*\) frames$/\1 \2 \3 \4/p')
	[ -n "${n:-}" ] || fail "$2: line not understood: $line"
	[ "$n" = "$acked" ] || fail "$2: $n frames timed, the guest saw $acked acknowledged"
	python3 -c '
import sys
p50, p99, mx, secs = map(float, sys.argv[1:])
assert 0 <= p50 <= p99 <= mx, (p50, p99, mx)
assert mx > 0 and mx <= secs * 1000, (mx, secs)' "$p50" "$p99" "$max" \
		"$(( ($4 - $3) / 1000000 + 1 ))e-3" || fail "$2: not sane: $line"
	ok "$2: $n frames, p50 $p50 ms <= p99 $p99 ms <= max $max ms"
}

start_daemon --listen "$T/sock" --domain-name vm1
t0=$(date +%s%N)
"$SYNTH_GUEST" --connect "$T/sock" --events 20000 --cpus 2 --seed 5 --throttle-us 1000 \
	>/dev/null 2>"$T/steady.err" || fail "synth-guest (steady)"
t1=$(date +%s%N)
wait_for daemon_says "commit to durable" || fail "no commit to durable line (steady)"
stop_daemon || fail "daemon exit status"
check_line "$T/steady.err" "a steady stream" "$t0" "$t1"

: >"$T/daemon.log"
start_daemon --listen "$T/sock2" --domain-name vm2
t0=$(date +%s%N)
"$SYNTH_GUEST" --connect "$T/sock2" --events 200000 --cpus 2 --seed 6 \
	>/dev/null 2>"$T/burst.err" || fail "synth-guest (burst)"
t1=$(date +%s%N)
wait_for daemon_says "commit to durable" || fail "no commit to durable line (burst)"
stop_daemon || fail "daemon exit status"
check_line "$T/burst.err" "a burst" "$t0" "$t1"
