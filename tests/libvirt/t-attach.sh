#!/bin/bash
# A running domain without the channel: the agent, started after the domain, waits;
# `host-agent attach` hot-plugs the channel (live and config), the agent connects at
# once (DEVICE_ADDED) and the guest streams; `host-agent detach` takes it out of both.
. "$(dirname "$0")/lib.sh"
lv_start_daemons
lv_guest
# the controller qemu-patches/README.md recommends: a vector per queue
LV_CONTROLLER="<controller type='virtio-serial' index='0' ports='2' vectors='7'/>"
lv_define smlv-attach idle
v start smlv-attach > /dev/null || fail "start"
v dumpxml smlv-attach | grep -q "<controller type='virtio-serial' index='0' ports='2' vectors='7'" ||
	fail "libvirt did not keep the controller's ports and vectors"
wait_for 120 console_has smlv-attach "STACKMAP-LV: guestd started" || fail "guest did not boot"
lv_agent smlv-attach
wait_for 20 grep -q "cannot open channel" "$W/agent-smlv-attach.log" ||
	fail "agent did not report the missing channel"

"$HOST_AGENT" attach --domain smlv-attach --connect "$URI" || fail "attach"
v dumpxml smlv-attach | grep -q "name='org.stackmap.0'" || fail "not in the live XML"
v dumpxml --inactive smlv-attach | grep -q "name='org.stackmap.0'" || fail "not in the config"
out=$("$HOST_AGENT" attach --domain smlv-attach --connect "$URI") || fail "attach again"
echo "$out" | grep -q "already" || fail "second attach: $out"
wait_for 30 grep -q "connected (libvirt domain" "$W/agent-smlv-attach.log" ||
	fail "agent did not connect after attach"
wait_for 120 events_stored smlv-attach || fail "no events stored"
report boots --domain smlv-attach
[ "$(boot_ended smlv-attach)" = running ] || fail "boot not running: $(boot_ended smlv-attach)"

"$HOST_AGENT" detach --domain smlv-attach --connect "$URI" || fail "detach"
v dumpxml smlv-attach | grep -q "org.stackmap.0" && fail "still in the live XML"
v dumpxml --inactive smlv-attach | grep -q "org.stackmap.0" && fail "still in the config"
out=$("$HOST_AGENT" detach --domain smlv-attach --connect "$URI") || fail "detach again"
echo "$out" | grep -q "no stackmap channel" || fail "second detach: $out"
# The stream went away without BYE while the domain runs on: disconnected.
wait_for 30 is_ended smlv-attach disconnected || fail "boot $(boot_ended smlv-attach) after detach"
kill -0 "$AGENT_smlv_attach" || fail "agent died"
echo "PASS"
