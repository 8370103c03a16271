#!/bin/bash
# libvirt's errors reach the user intact (host-agent built with ASan + UBSan): each
# failure exits 1 with libvirt's own message, printable, and no sanitizer report.
# The read-only socket of the private libvirtd makes attach and detach fail inside
# libvirt (virDomainAttachDeviceFlags, virDomainDetachDeviceFlags), after the lookups
# and XML reads succeeded: the path where a pointer into libvirt's last error was once
# read after virDomainGetName() had freed it. No domain is started.
. "$(dirname "$0")/lib.sh"
HA=$HOST_AGENT_ASAN
lv_start_daemons
RO="qemu:///system?socket=$W/sock/libvirt-sock-ro"
NOSOCK="qemu:///system?socket=$W/sock/none"
[ -S "$W/sock/libvirt-sock-ro" ] || fail "libvirtd has no read-only socket"
lv_define smlv-err idle
lv_define smlv-errch idle channel

# expect_fail NAME PATTERN CMD...: CMD exits 1, its stderr matches PATTERN (grep -E),
# is printable ASCII, and has no sanitizer report.
expect_fail() {
	local name=$1 pat=$2 rc=0; shift 2
	"$@" > "$W/$name.out" 2> "$W/$name.err" || rc=$?
	echo "# $name: exit $rc: $(cat "$W/$name.err")"
	asan_clean "$W/$name.err" || { cat "$W/$name.err"; fail "$name: sanitizer report"; }
	[ "$rc" = 1 ] || fail "$name: exit $rc, expected 1"
	grep -Eq "$pat" "$W/$name.err" || fail "$name: the message does not match '$pat'"
	LC_ALL=C grep -q '[^ -~]' "$W/$name.err" && fail "$name: non-printable bytes"
	return 0
}

expect_fail attach-ro \
	"^host-agent attach: attach to smlv-err: operation forbidden: read only access prevents virDomainAttachDeviceFlags$" \
	"$HA" attach --domain smlv-err --connect "$RO"
v dumpxml --inactive smlv-err | grep -q "org.stackmap.0" && fail "attached anyway"
expect_fail detach-ro \
	"^host-agent detach: detach from smlv-errch: operation forbidden: read only access prevents virDomainDetachDeviceFlags$" \
	"$HA" detach --domain smlv-errch --connect "$RO"
v dumpxml --inactive smlv-errch | grep -q "org.stackmap.0" || fail "detached anyway"
expect_fail attach-nosuch \
	"^host-agent attach: domain smlv-nosuch: Domain not found: no domain with matching name 'smlv-nosuch'$" \
	"$HA" attach --domain smlv-nosuch --connect "$URI"
expect_fail attach-nosock \
	"^host-agent attach: libvirt qemu:///system\?socket=.*/none: Failed to connect socket to '.*/none': No such file or directory$" \
	"$HA" attach --domain smlv-err --connect "$NOSOCK"
# The libvirt source and the fleet: their first connection fails.
expect_fail agent-nosock \
	"^host-agent: libvirt qemu:///system\?socket=.*/none: Failed to connect socket to '.*/none': No such file or directory$" \
	"$HA" --domain smlv-err --connect "$NOSOCK" --state-dir "$STATE"
expect_fail fleet-nosock \
	"^host-agent: libvirt qemu:///system\?socket=.*/none: Failed to connect socket to '.*/none': No such file or directory$" \
	"$HA" --all-domains --connect "$NOSOCK" --state-dir "$STATE"
echo "PASS"
