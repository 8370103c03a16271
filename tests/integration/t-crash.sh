# A guest that vanishes without BYE is recorded as disconnected; when the domain boots
# again (a new boot_id), the old boot is recorded as crashed. Its data is all there.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
"$SYNTH_GUEST" --connect "$T/sock" --events 20000 --seed 11 --no-bye \
	--boot-id 11111111111111111111111111111111 --expect "$T/expect1" -q >/dev/null ||
	fail "guest 1"
wait_for grep -q "disconnected without BYE" "$T/daemon.log" || fail "no disconnect log line"
b=$(report boots --json --domain-name vm1)
[ "$(json_field "$b" ended)" = disconnected ] || fail "not disconnected: $b"
compare_folded vm1 "$T/expect1" 1
"$SYNTH_GUEST" --connect "$T/sock" --events 5000 --seed 12 \
	--boot-id 22222222222222222222222222222222 --expect "$T/expect2" -q >/dev/null ||
	fail "guest 2"
wait_for grep -q "BYE" "$T/daemon.log" || fail "no BYE"
stop_daemon
b=$(report boots --json --domain-name vm1)
echo "$b" | grep -q '"boot":1,"boot_id":"11111111-1111-1111-1111-111111111111"[^}]*"ended":"crashed"' ||
	fail "boot 1 not crashed: $b"
echo "$b" | grep -q '"boot":2,[^}]*"ended":"clean"' || fail "boot 2 not clean: $b"
compare_folded vm1 "$T/expect2" 2
# post-mortem of the crashed boot: its last events with resolved stacks
report events -n 5 --boot 11111111-1111 --domain-name vm1 >"$T/pm" || fail "events report"
[ "$(grep -c "kmem/kmalloc" "$T/pm")" = 5 ] || { cat "$T/pm"; fail "post-mortem events"; }
grep -q "synth_fn_" "$T/pm" || fail "post-mortem stacks not resolved"
ok "crashed boot and post-mortem"
