# Loss the ring buffer's own counters do not show, from the guest's STATS: the map
# handed out more stack ids in its last epoch than there are stack_id events (a buffer
# reset), and events left unread after the agent's final drain. Both are LOST.
. "$1"
# the map's successes equal the stack_id events: nothing lost
start_daemon --listen "$T/sock" --domain-name exact
"$SYNTH_GUEST" --connect "$T/sock" --events 20000 --epochs 3 --seed 3 --unseen 0 \
	--expect "$T/expect" -q > /dev/null || fail "synth-guest"
wait_for daemon_says "BYE" || fail "no BYE"
stop_daemon
b=$(report boots --json --domain-name exact)
[ "$(json_field "$b" lost_events)" = 0 ] || fail "LOST without loss: $b"
[ "$(json_field "$b" unseen_stack_ids)" = 0 ] || fail "unseen without loss: $b"
[ "$(json_field "$b" map_epoch)" = 2 ] || fail "map epoch: $b"
[ "$(json_field "$b" map_successes)" = "$(json_field "$b" stack_id_events)" ] ||
	fail "successes against stored stack_id events: $b"
[ "$(json_field "$b" stack_id_events)" -gt 0 ] || fail "no stack_id event stored: $b"
compare_folded exact "$T/expect"
ok "map successes = stored stack_id events of the last epoch, LOST 0"

# 777 ids more than stored, 55 events unread: the unread ones may be some of those
# ids' events, so LOST is 777 (55 unread + 722 more ids), apart in --json and in text
start_daemon --listen "$T/sock2" --domain-name reset
"$SYNTH_GUEST" --connect "$T/sock2" --events 20000 --epochs 3 --seed 3 --unseen 777 \
	--unread 55 -q > /dev/null || fail "synth-guest"
wait_for daemon_says "BYE" || fail "no BYE"
stop_daemon
b=$(report boots --json --domain-name reset)
[ "$(json_field "$b" unseen_stack_ids)" = 722 ] || fail "unseen: $b"
[ "$(json_field "$b" unread_events)" = 55 ] || fail "unread: $b"
[ "$(json_field "$b" lost_events)" = 777 ] || fail "LOST: $b"
t=$(report boots --domain-name reset)
echo "$t" | grep -q ' 0f/777e ' || fail "text LOST: $t"
echo "$t" | grep -q '55 left unread.* 722 more stack ids of epoch 2' || fail "text detail: $t"
ok "777 stack ids handed out beyond the stored events (55 of them unread) are LOST 777"
