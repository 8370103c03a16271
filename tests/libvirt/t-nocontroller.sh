#!/bin/bash
# A domain without a virtio-serial controller: attach fails with the way out.
. "$(dirname "$0")/lib.sh"
lv_start_daemons
lv_guest
lv_define smlv-noctl idle nocontroller
v dumpxml --inactive smlv-noctl | grep -q "virtio-serial" && fail "libvirt added a controller"
rc=0
out=$("$HOST_AGENT" attach --domain smlv-noctl --connect "$URI" 2>&1) || rc=$?
echo "$out"
[ "$rc" = 1 ] || fail "attach exit $rc, expected 1"
echo "$out" | grep -q "no virtio-serial controller" || fail "no clear error"
echo "$out" | grep -q "<controller type='virtio-serial'" || fail "error does not say what to add"
v dumpxml --inactive smlv-noctl | grep -q "org.stackmap.0" && fail "attached anyway"
rc=0
"$HOST_AGENT" attach --domain smlv-nosuch --connect "$URI" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "attach to a missing domain: exit $rc"
echo "PASS"
