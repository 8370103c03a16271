# Map resets: the same slots carry other stacks in each epoch; each event resolves
# through the epoch in effect at its timestamp.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
"$SYNTH_GUEST" --connect "$T/sock" --events 40000 --epochs 5 --stacks 150 --seed 3 \
	--expect "$T/expect" -q >/dev/null || fail "synth-guest"
wait_for grep -q "closed the connection" "$T/daemon.log" || fail "no disconnect"
stop_daemon
compare_folded vm1 "$T/expect"
b=$(report boots --json --domain-name vm1)
[ "$(json_field "$b" epochs)" = 5 ] || fail "epochs: $b"
# slot 13 exists in every epoch with a different stack: `report stack` shows each.
n=$(report stack 13 --domain-name vm1 | grep -c "^  epoch 0 ")
[ "$n" = 1 ] || fail "stack 13 in epoch 0"
id=$(( (3 << 20) | 13 ))
report stack "$id" --domain-name vm1 | grep -q "^  epoch 3 .*stack_id 0x0030000d" ||
	fail "stack $id not in epoch 3"
# an id of an epoch that never existed is unresolved, not guessed
report stack $(( (9 << 20) | 13 )) --domain-name vm1 | grep -q "unresolved" ||
	fail "id of an unknown epoch not reported unresolved"
ok "per-epoch resolution"
