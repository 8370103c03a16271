# Issue 21: the memory a hostile guest can make the daemon hold, and the disk. A guest
# floods event formats (big ones, each under a new name, and texts cut inside a field
# declaration, which libtraceevent 1.7 leaked) over three sessions of one boot, then
# 300000 distinct kernel stacks (the full-stack cache, the largest table); the
# daemon holds at most its parser budget (host-agent/README.md), refuses the rest as
# malformed, and its peak RSS stays under the bound stated there. No time is asserted.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1 --max-malformed 100000
wait_for test -S "$T/sock" || fail "daemon socket"
grep -q "disk quota 1024 MiB" "$T/daemon.log" || fail "no default disk quota of 1024 MiB"
ok "default disk quota: $(grep -o 'disk quota [0-9]* MiB' "$T/daemon.log")"

"$SYNTH_GUEST" --connect "$T/sock" --hostile format-flood --seed 31 -q >/dev/null 2>"$T/h.err" ||
	{ cat "$T/h.err"; fail "format-flood"; }
db=$(db_of vm1)
hwm=$(awk '/VmHWM/ {print $2}' /proc/"$DAEMON_PID"/status)
kill -0 "$DAEMON_PID" || fail "daemon died"
# The counts below are read from the store the daemon left: a session's malformed
# count may still be on its way to the disk while the guest is already gone.
stop_daemon || fail "daemon exit status $?"
stored=$("$SQLITE3" "$db" "SELECT COALESCE(SUM(length(text)), 0) FROM texts WHERE kind = 'format'")
nstored=$("$SQLITE3" "$db" "SELECT COUNT(*) FROM texts WHERE kind = 'format'")
malformed=$("$SQLITE3" "$db" "SELECT SUM(malformed) FROM streams")
nmal=$("$SQLITE3" "$db" "SELECT COUNT(*) FROM streams WHERE malformed > 0")
ndup=$("$SQLITE3" "$db" "SELECT SUM(dup_frames) FROM streams")
# each session resumes where the host's WELCOME says: no frame is sent twice
[ "$ndup" -eq 0 ] || fail "format-flood: $ndup frames came as duplicates"
[ "$nmal" -ge 2 ] || fail "format-flood: refused formats not counted as malformed in both streams"
[ "$stored" -le $((8 * 1024 * 1024)) ] || fail "formats stored for the boot: $stored bytes > 8 MiB"
# every cut text refused, and whole ones beyond the budget (the log shows the first)
[ "$malformed" -ge $((480 + 960 / 2 - nstored)) ] || fail "only $malformed formats refused"
grep -q "format of flood/e0_1 refused" "$T/daemon.log" || fail "cut formats not refused"
nfull=$("$SQLITE3" "$db" "SELECT COUNT(*) FROM fullstacks")
[ "$nfull" -ge 299000 ] || fail "only $nfull of the 300000 full stacks stored"
ok "960 formats of ~60 KiB sent in 3 sessions, 300000 distinct stacks: $nstored stored ($stored bytes), $malformed refused as malformed"
# The bound of host-agent/README.md: 160 MiB of peak RSS whatever the guest sends.
[ "$hwm" -lt $((160 * 1024)) ] || fail "daemon peak RSS $hwm kB above 160 MiB"
ok "daemon peak RSS ${hwm} kB (bound 160 MiB)"
size=$(du -k "$db" | cut -f1)
ok "database ${size} kB"
integrity_ok "$db"
