# --zstd-level: the level new chunks are compressed at, from the command line or the
# config file (the command line wins); any level stores the same events, read back the
# same; a level zstd does not have is refused before anything starts.
. "$1"
store() {	# store DOMAIN ARGS...: one synthetic boot into DOMAIN's store
	local d=$1
	shift
	start_daemon --listen "$T/$d.sock" --domain-name "$d" "$@"
	"$SYNTH_GUEST" --connect "$T/$d.sock" --events 60000 --cpus 3 --stacks 300 --seed 7 \
		--expect "$T/expect" -q >/dev/null || fail "synth-guest into $d"
	wait_for daemon_says "closed the connection" || fail "$d: no disconnect"
	stop_daemon || fail "$d: daemon exit status"
	integrity_ok "$(db_of "$d")"
}
chunk_bytes() { "$SQLITE3" "$(db_of "$1")" "SELECT SUM(LENGTH(data)) FROM chunks"; }

store dflt
daemon_says "zstd level 1)" || fail "the default level is not logged as 1"
cat >"$T/conf" <<CONF
[host-agent]
zstd-level=-10
CONF
store fast --config "$T/conf"
daemon_says "zstd level -10)" || fail "the config file's level not used"
store small --config "$T/conf" --zstd-level 19
daemon_says "zstd level 19)" || fail "the command line does not override the file"
for d in dflt fast small; do
	compare_folded "$d" "$T/expect"
	report events --domain-name "$d" -n 100000 >"$T/$d.events" || fail "report events $d"
done
[ "$(wc -l <"$T/dflt.events")" -gt 60000 ] || fail "report events printed too little"
cmp -s "$T/dflt.events" "$T/fast.events" && cmp -s "$T/dflt.events" "$T/small.events" ||
	fail "the events read back differ between levels"
b1=$(chunk_bytes dflt) bf=$(chunk_bytes fast) bs=$(chunk_bytes small)
[ "$bf" -gt "$b1" ] && [ "$b1" -gt "$bs" ] ||
	fail "chunk bytes not ordered by level: -10 $bf, 1 $b1, 19 $bs"
ok "levels 1, -10 (config file), 19 (command line over the file): the same events, chunks of $b1, $bf and $bs bytes"

for bad in 23 -131073; do
	rc=0
	"$HOST_AGENT" --state-dir "$T/state" --listen "$T/bad.sock" --zstd-level "$bad" \
		>"$T/out" 2>&1 || rc=$?
	[ "$rc" = 2 ] && grep -q "zstd level $bad: zstd's levels are -131072 to 22" "$T/out" ||
		fail "--zstd-level $bad: exit $rc, $(cat "$T/out")"
	[ ! -e "$T/bad.sock" ] || fail "--zstd-level $bad: the daemon listened anyway"
done
ok "levels zstd does not have are refused (exit 2) before the daemon listens"
