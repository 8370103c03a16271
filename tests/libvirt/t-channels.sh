#!/bin/bash
# A running domain that already has the QEMU guest agent's channel and another unix
# channel: attach, stream, detach. The other channels keep their XML, live and in the
# configuration (type, source path, target, alias, address), the guest keeps seeing
# their ports, and their host sockets keep listening.
. "$(dirname "$0")/lib.sh"
HA=$HOST_AGENT_ASAN
lv_start_daemons
lv_guest
D=smlv-chans
LV_DEVICES="<channel type='unix'><source mode='bind'/><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
    <channel type='unix'><source mode='bind'/><target type='virtio' name='org.example.other.0'/></channel>"
lv_define $D idle
v start $D > /dev/null || fail "start"
wait_for 120 console_has $D "STACKMAP-LV: ports: org.example.other.0 org.qemu.guest_agent.0 [[:space:]]*$" ||
	fail "guest did not boot with its two channels"
lv_elements $D channel > "$W/live-before"
lv_elements $D channel --inactive > "$W/conf-before"
cat "$W/live-before"
[ "$(wc -l < "$W/live-before")" = 2 ] || fail "expected two channels in the live XML"
# The host side of the other channel: the socket libvirt picked, listening.
other_sock=$(v dumpxml $D | python3 -c '
import sys, xml.etree.ElementTree as ET
for c in ET.parse(sys.stdin).getroot().iter("channel"):
    if c.find("target").get("name") == "org.example.other.0":
        print(c.find("source").get("path"))')
[ -n "$other_sock" ] || fail "no socket path for the other channel"
listening() {
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$1"
}
listening "$other_sock" || fail "the other channel's socket does not listen"

lv_agent $D
"$HA" attach --domain $D --connect "$URI" > "$W/out" 2>&1 || { cat "$W/out"; fail "attach"; }
cat "$W/out"
asan_clean "$W/out" || fail "sanitizer report in attach"
grep -qx "channel org.stackmap.0 attached" "$W/out" || fail "attach said: $(cat "$W/out")"
wait_for 30 grep -q "connected (libvirt domain" "$W/agent-$D.log" ||
	fail "agent did not connect after attach"
wait_for 120 events_stored $D || fail "no events stored"
[ "$(boot_ended $D)" = running ] || fail "boot not running: $(boot_ended $D)"
report boots --domain $D
wait_for 60 console_has $D "STACKMAP-LV: ports: org.example.other.0 org.qemu.guest_agent.0 org.stackmap.0 [[:space:]]*$" ||
	fail "the guest does not see the three ports"
lv_elements $D channel > "$W/live-attached"
lv_elements $D channel --inactive > "$W/conf-attached"
diff -u "$W/live-before" "$W/live-attached" || fail "attach changed the other channels (live)"
diff -u "$W/conf-before" "$W/conf-attached" || fail "attach changed the other channels (config)"
listening "$other_sock" || fail "the other channel's socket stopped listening after attach"

"$HA" detach --domain $D --connect "$URI" > "$W/out" 2>&1 || { cat "$W/out"; fail "detach"; }
asan_clean "$W/out" || fail "sanitizer report in detach"
v dumpxml $D | grep -q "org.stackmap.0" && fail "still in the live XML"
v dumpxml --inactive $D | grep -q "org.stackmap.0" && fail "still in the config"
wait_for 30 is_ended $D disconnected || fail "boot $(boot_ended $D) after detach"
lv_elements $D channel > "$W/live-after"
lv_elements $D channel --inactive > "$W/conf-after"
diff -u "$W/live-before" "$W/live-after" || fail "detach changed the other channels (live)"
diff -u "$W/conf-before" "$W/conf-after" || fail "detach changed the other channels (config)"
# The guest's last word on its ports: the two it started with.
grep -a "STACKMAP-LV: ports:" "$W/console-$D.log"
wait_for 60 sh -c "grep -a 'STACKMAP-LV: ports:' '$W/console-$D.log' | tail -n 1 |
	grep -q 'ports: org.example.other.0 org.qemu.guest_agent.0 [[:space:]]*\$'" ||
	fail "the guest does not see its two ports after detach"
listening "$other_sock" || fail "the other channel's socket stopped listening after detach"
kill -0 "$AGENT_smlv_chans" || fail "agent died"
echo "PASS"
