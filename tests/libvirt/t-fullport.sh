#!/bin/bash
# A virtio-serial controller with every port taken (ports='3': ports 1 and 2, port 0 is
# the console's), with host-agent built with ASan + UBSan:
# - running: attach fails (exit 1) with a readable message that says how to make room,
#   and leaves the live XML and the configuration exactly as they were (no phantom
#   controller in libvirt's record of the running domain);
# - shut off: attach succeeds and says that libvirt added a controller to the
#   configuration; the next start has it, and the agent streams through it.
# The agent, waiting for the channel meanwhile, reports libvirt's own error.
. "$(dirname "$0")/lib.sh"
HA=$HOST_AGENT_ASAN
lv_start_daemons
lv_guest
D=smlv-full
LV_CONTROLLER="<controller type='virtio-serial' index='0' ports='3'/>"
LV_DEVICES="<channel type='unix'><source mode='bind'/><target type='virtio' name='org.qemu.guest_agent.0'/><address type='virtio-serial' controller='0' bus='0' port='1'/></channel>
    <channel type='unix'><source mode='bind'/><target type='virtio' name='org.example.other.0'/><address type='virtio-serial' controller='0' bus='0' port='2'/></channel>"
lv_define $D idle
v start $D > /dev/null || fail "start"
wait_for 120 console_has $D "STACKMAP-LV: ports: org.example.other.0 org.qemu.guest_agent.0 [[:space:]]*$" ||
	fail "guest did not boot with its two channels"

HOST_AGENT=$HA lv_agent $D
wait_for 20 grep -q "cannot open channel" "$W/agent-$D.log" ||
	fail "agent did not report the missing channel"
grep "cannot open channel" "$W/agent-$D.log"
# libvirt's own words, intact (qemuDomainOpenChannel: "cannot find channel NAME").
grep -q "cannot open channel org.stackmap.0 (.*cannot find channel org.stackmap.0)" \
	"$W/agent-$D.log" || fail "the agent's libvirt error is not libvirt's message"

# Running: refused, nothing changed.
v dumpxml $D > "$W/live-before.xml"
v dumpxml --inactive $D > "$W/conf-before.xml"
rc=0
"$HA" attach --domain $D --connect "$URI" > "$W/out" 2> "$W/err" || rc=$?
cat "$W/out" "$W/err"
asan_clean "$W/err" || fail "sanitizer report in attach"
[ "$rc" = 1 ] || fail "attach to a running domain without a free port: exit $rc, expected 1"
grep -q "^host-agent attach: domain $D has no free port on its virtio-serial controllers (index 0 (ports='3'): 2 of 2 channel ports taken)" "$W/err" ||
	fail "no clear error"
grep -q "nothing was changed" "$W/err" || fail "error does not say nothing changed"
grep -q "virsh edit $D: raise ports='3' of <controller type='virtio-serial' index='0'>" "$W/err" ||
	fail "error does not give the virsh edit step"
grep -q "add <controller type='virtio-serial' index='1'/>" "$W/err" ||
	fail "error does not offer a second controller"
LC_ALL=C grep -q '[^ -~]' "$W/err" && fail "non-printable bytes in the message"
v dumpxml $D > "$W/live-after.xml"
v dumpxml --inactive $D > "$W/conf-after.xml"
diff -u "$W/live-before.xml" "$W/live-after.xml" || fail "the live XML changed"
diff -u "$W/conf-before.xml" "$W/conf-after.xml" || fail "the configuration changed"
[ "$(grep -c "<controller type='virtio-serial'" "$W/live-after.xml")" = 1 ] ||
	fail "a phantom controller in the live XML"

# Shut off: libvirt adds a controller to the configuration, and attach says so.
v destroy $D > /dev/null || fail "destroy"
rc=0
"$HA" attach --domain $D --connect "$URI" > "$W/out" 2> "$W/err" || rc=$?
cat "$W/out" "$W/err"
asan_clean "$W/err" || fail "sanitizer report in attach"
[ "$rc" = 0 ] || fail "attach to the shut-off domain: exit $rc"
grep -q "^channel org.stackmap.0 attached to the configuration of domain $D; its virtio-serial controllers had no free port, so libvirt added <controller type='virtio-serial' index='1'/> to the configuration for it$" "$W/out" ||
	fail "attach does not say that a controller was added"
v dumpxml --inactive $D > "$W/conf-after.xml"
grep -q "<controller type='virtio-serial' index='1'" "$W/conf-after.xml" ||
	fail "no controller index 1 in the configuration, as the message says"
python3 - "$W/conf-after.xml" <<'PY' || fail "the channel is not on controller 1"
import sys, xml.etree.ElementTree as ET
d = ET.parse(sys.argv[1]).getroot()
ch = [c for c in d.iter('channel') if c.find('target').get('name') == 'org.stackmap.0']
assert len(ch) == 1, ch
a = ch[0].find('address')
assert a.get('type') == 'virtio-serial' and a.get('controller') == '1', a.attrib
PY
# The other channels stay where they were.
for f in before after; do
	python3 - "$W/conf-$f.xml" > "$W/other-$f" <<'PY'
import sys, xml.etree.ElementTree as ET
for c in ET.parse(sys.argv[1]).getroot().iter('channel'):
    n = c.find('target').get('name')
    if n != 'org.stackmap.0':
        print(n, sorted(c.find('address').attrib.items()))
PY
done
diff -u "$W/other-before" "$W/other-after" || fail "the other channels moved"

# The next start has the controller and the channel: the waiting agent streams.
v start $D > /dev/null || fail "start again"
v dumpxml $D | grep -q "name='org.stackmap.0'" || fail "channel not in the live XML"
wait_for 120 console_has $D "STACKMAP-LV: ports: org.example.other.0 org.qemu.guest_agent.0 org.stackmap.0 [[:space:]]*$" ||
	fail "the guest does not see the three ports"
wait_for 60 grep -q "connected (libvirt domain" "$W/agent-$D.log" || fail "agent did not connect"
wait_for 120 events_stored $D || fail "no events stored"
[ "$(boot_ended $D)" = running ] || fail "boot not running: $(boot_ended $D)"
report boots --domain $D
kill "$AGENT_smlv_full"
rc=0
wait "$AGENT_smlv_full" || rc=$?
asan_clean "$W/agent-$D.log" || fail "sanitizer report in the agent"
[ "$rc" = 0 ] || fail "agent exit $rc on SIGTERM"
echo "PASS"
