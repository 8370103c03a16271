# Hostile guests end with a clear log line; the daemon survives with bounded memory and
# disk, and still serves an honest guest afterwards.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1 --quota-mb 24 --max-malformed 200
wait_for test -S "$T/sock" || fail "daemon socket"

hostile() {
	"$SYNTH_GUEST" --connect "$T/sock" --hostile "$1" --seed 9 -q >/dev/null 2>"$T/h.err" ||
		{ cat "$T/h.err"; fail "hostile $1: the daemon did not hang up"; }
	wait_for daemon_says "$2" || fail "hostile $1: no log line '$2'"
	kill -0 "$DAEMON_PID" || fail "daemon died on $1"
	ok "$1: $(grep -m1 "$2" "$T/daemon.log" | sed 's/.*closing the connection: //' | cut -c1-110)"
}
hostile before-hello "frame before HELLO"
hostile version "protocol version 2\.[0-9]*, this host-agent 1\.[0-9]*"
hostile hello-flood "HELLOs on one connection"
hostile garbage "framing errors (limit 200)"
hostile lies "malformed frames (limit 200)"
# an honest guest still gets through (a new boot, below the quota)
"$SYNTH_GUEST" --connect "$T/sock" --events 2000 --seed 1 --expect "$T/expect" -q >/dev/null ||
	fail "honest guest after the hostile ones"
wait_for daemon_says "BYE" || fail "honest guest BYE"
last=$("$SQLITE3" "$(db_of vm1)" "SELECT MAX(id) FROM boots")
# last: a flood of tiny stacks in ever new epochs runs into the disk quota
hostile tiny-stacks "disk quota of domain vm1 reached"

hwm=$(awk '/VmHWM/ {print $2}' /proc/"$DAEMON_PID"/status)
[ "$hwm" -lt 131072 ] || fail "daemon peak RSS $hwm kB"
size=$(du -k "$(db_of vm1)" | cut -f1)
[ "$size" -lt $((24 * 1024 + 4096)) ] || fail "database $size kB above the 24 MiB quota"
ok "peak RSS ${hwm} kB, database ${size} kB under a 24 MiB quota"

# the lies were counted as malformed and none of them was applied
m=$("$SQLITE3" "$(db_of vm1)" "SELECT SUM(malformed) FROM streams")
[ "${m:-0}" -gt 0 ] || fail "malformed frames not counted"
stop_daemon
integrity_ok "$(db_of vm1)"
compare_folded vm1 "$T/expect" "$last"
