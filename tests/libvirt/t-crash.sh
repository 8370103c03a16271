#!/bin/bash
# The agent runs before the domain starts; the domain streams, then panics (pvpanic,
# <on_crash>preserve</on_crash>): the boot is marked crashed, its last events resolve.
. "$(dirname "$0")/lib.sh"
lv_start_daemons
lv_guest
lv_define smlv-crash crash channel
lv_agent smlv-crash
wait_for 10 grep -q "waiting for it to start" "$W/agent-smlv-crash.log" ||
	fail "agent did not wait for the domain"
v start smlv-crash > /dev/null || fail "start"
note "domain started; waiting for the guest's crash"
wait_for 300 console_has smlv-crash "sysrq: Trigger a crash" || fail "the guest did not crash"
wait_for 60 is_ended smlv-crash crashed || fail "boot not marked crashed: $(boot_ended smlv-crash)"
state=$(v domstate smlv-crash --reason)
note "domain state: $state"
case "$state" in *crashed*) ;; *) fail "domain state $state, expected crashed" ;; esac
report boots --domain smlv-crash
events_stored smlv-crash || fail "no events stored"
out=$(report events -n 3 --domain smlv-crash)
echo "$out"
echo "$out" | grep -q "stack_id" || fail "no stacks in the last events"
echo "$out" | grep -q "unresolved" && fail "last events unresolved"
grep -q "marked crashed" "$W/agent-smlv-crash.log" || fail "agent log has no crash line"
# The preserved domain is destroyed: the boot stays crashed. host-agent handles the
# domain's events in order, so once it logged the next start it had handled the
# destroy's STOPPED (the channel may have ended before it, leaving no line of its own).
v destroy smlv-crash > /dev/null
restarted() { [ "$(grep -c "domain smlv-crash started" "$W/agent-smlv-crash.log")" -ge 2 ]; }
v start smlv-crash > /dev/null || fail "start again"
wait_for 60 restarted || fail "host-agent did not see the domain start again"
first=$(report boots --domain smlv-crash --json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["ended"])')
[ "$first" = crashed ] || fail "destroy changed the boot to $first"
v destroy smlv-crash > /dev/null
echo "PASS"
