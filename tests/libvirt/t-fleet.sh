#!/bin/bash
# One agent, --all-domains: two domains with the channel stream at once into separate
# stores (one defined after the agent started), one crashes and only its boot is
# marked crashed; a domain without the channel gets no store; an undefined domain is
# no longer served.
. "$(dirname "$0")/lib.sh"
lv_start_daemons
lv_guest
lv_define smlv-fa crash channel
"$HOST_AGENT" --all-domains --connect "$URI" --state-dir "$STATE" > "$W/agent-fleet.log" 2>&1 &
AGENTS+=("$!")
fleet=$!
wait_for 20 grep -q "all domains: serving 1 " "$W/agent-fleet.log" || fail "fleet did not start"
lv_define smlv-fb idle channel
lv_define smlv-fc idle
wait_for 20 grep -q "domain smlv-fb: storing into" "$W/agent-fleet.log" ||
	fail "a domain defined later is not served"
v start smlv-fa > /dev/null || fail "start fa"
v start smlv-fb > /dev/null || fail "start fb"
v start smlv-fc > /dev/null || fail "start fc"
wait_for 300 console_has smlv-fa "sysrq: Trigger a crash" || fail "fa did not crash"
wait_for 60 is_ended smlv-fa crashed || fail "fa: boot $(boot_ended smlv-fa)"
wait_for 120 events_stored smlv-fb || fail "fb: no events"
[ "$(boot_ended smlv-fb)" = running ] || fail "fb: boot $(boot_ended smlv-fb)"
events_stored smlv-fa || fail "fa: no events"
[ -e "$STATE/smlv-fc.db" ] && fail "a store for a domain without the channel"
report boots --domain smlv-fa
report boots --domain smlv-fb
v destroy smlv-fb > /dev/null
wait_for 30 is_ended smlv-fb disconnected || fail "fb after destroy: $(boot_ended smlv-fb)"
v undefine smlv-fb > /dev/null
wait_for 20 grep -q "domain smlv-fb: undefined" "$W/agent-fleet.log" || fail "undefine not seen"
kill -0 "$fleet" || fail "the agent died"
echo "PASS"
