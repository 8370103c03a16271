# Every event stored once and resolved to the stack the guest had; a clean BYE.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
"$SYNTH_GUEST" --connect "$T/sock" --events 60000 --cpus 3 --stacks 300 --seed 7 \
	--expect "$T/expect" -q >"$T/guest.out" || fail "synth-guest"
wait_for grep -q "disconnected\|closed the connection" "$T/daemon.log" || fail "no disconnect seen"
stop_daemon || fail "daemon exit status"
integrity_ok "$(db_of vm1)"
compare_folded vm1 "$T/expect"
b=$(report boots --json --domain-name vm1) || fail "report boots"
[ "$(json_field "$b" ended)" = clean ] || fail "boot not ended clean: $b"
[ "$(json_field "$b" events)" = 60000 ] || fail "events: $b"
[ "$(json_field "$b" lost_frames)" = 0 ] || fail "lost frames: $b"
dups=$("$SQLITE3" "$(db_of vm1)" "SELECT dup_frames, gap_frames, malformed, orphan_stacks FROM streams")
[ "$dups" = "0|0|0|0" ] || fail "dup|gap|malformed|orphans = $dups"
grep -q "BYE (shutdown)" "$T/daemon.log" || fail "no BYE log line"
ok "clean boot recorded"
