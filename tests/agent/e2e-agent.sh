#!/bin/bash
# e2e-agent.sh: stackmap-guestd in a real guest under QEMU (suite e2e).
#
# Usage: e2e-agent.sh STACKMAP-GUESTD SMG-RECV WORKDIR
#
# Builds (or finds in the cache) the guest kernel with guest-kernel/build-kernel
# (the patched one; STACKMAP_E2E_UNPATCHED=1 for the baseline kernel), packs a small
# initramfs (busybox-static, the static agent, e2e-init.sh as /init), boots it with
# guest-kernel/launch and receives the stream with smg-recv, which drops the
# connection once in the middle and comes back. Checks:
#   - the stream is clean: no decode error, no malformed payload, no sequence gap,
#     every page cut exactly after its committed bytes, BYE at the end;
#   - the host disconnect really happened (two connections) and cost nothing;
#   - every ring-buffer event the guest's per-CPU stats count as read arrived in a
#     PAGE (tracing is stopped before SIGTERM, so the count is exact), none unread;
#   - with a kernel that has stack_map_delta: stack records arrived, and an epoch
#     record for the boot epoch and one for the reset the guest made;
#   - the guest saw the agent streaming before its workload, and drained after it;
#   - the agent exited 0.
# Needs (Debian): qemu-system-x86 busybox-static cpio gzip, and what build-kernel
# needs.
set -euo pipefail

[ $# -eq 3 ] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
agent=$1 recv=$2 work=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
gk=$here/../../guest-kernel
busybox=${BUSYBOX:-/bin/busybox}
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$work"
work=$(cd "$work" && pwd)
variant=()
[ "${STACKMAP_E2E_UNPATCHED:-0}" = 1 ] && variant=(--unpatched)
kout=$("$gk/build-kernel" "${variant[@]}" | tail -n 1)
[ -f "$kout/bzImage" ] || fail "build-kernel gave no bzImage"

root=$(mktemp -d "$work/root.XXXXXX")
trap 'rm -rf "$root"; [ -z "${rpid:-}" ] || kill "$rpid" 2>/dev/null || true' EXIT
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
install -m 0755 "$here/e2e-init.sh" "$root/init"
install -m 0644 "$gk/initramfs/scenarios/agent-state.sh" "$root/agent-state.sh"
install -m 0755 "$agent" "$root/stackmap-guestd"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --quiet) |
	gzip -1 > "$work/agent-initrd.cpio.gz"

sock=$work/agent.sock
console=$work/agent-console.log
rm -f "$sock"
"$recv" --connect "$sock" --until-bye --timeout-s 900 \
	--disconnect-after 300000 --away-ms 1500 > "$work/agent-recv.log" 2>&1 &
rpid=$!
rc=0
"$gk/launch" --kernel "$kout/bzImage" --initrd "$work/agent-initrd.cpio.gz" \
	--socket "$sock" --console "$console" --timeout 900 || rc=$?
wait "$rpid" || true
rpid=
echo "--- receiver"; cat "$work/agent-recv.log"
echo "--- guest"; grep -E 'AGENT-E2E|stackmap-guestd' "$console" || true

[ "$rc" -eq 0 ] || fail "launch exited $rc"
val() { tr -d '\r' < "$console" | sed -n "s/^AGENT-E2E: $1 //p" | tail -n 1; }
rx() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' \
	"$work/agent-recv.log"; }
tr -d '\r' < "$console" | grep -q '^AGENT-E2E: done' || fail "the guest did not finish"
bad=$(tr -d '\r' < "$console" | sed -n 's/^AGENT-E2E: FAIL //p' | head -n 1)
[ -z "$bad" ] || fail "guest: $bad"
[ "$(val agent_exit)" = 0 ] || fail "the agent exited $(val agent_exit)"
grep -q '^result clean' "$work/agent-recv.log" || fail "the stream was not clean"
[ "$(rx connections)" -ge 2 ] || fail "the receiver's disconnect did not happen"
[ "$(rx events)" -gt 0 ] || fail "no event arrived"
[ "$(rx events)" = "$(val read_events)" ] ||
	fail "$(rx events) events arrived, the guest read $(val read_events)"
[ "$(val unread)" = 0 ] || fail "$(val unread) events were left unread"
if [ "$(val delta)" = yes ]; then
	[ "$(rx stacks)" -gt 0 ] || fail "stack_map_delta exists but no stack arrived"
	want=1
	tr -d '\r' < "$console" | grep -q '^AGENT-E2E: map reset' && want=2
	[ "$(rx epochs)" -ge "$want" ] || fail "$(rx epochs) epoch records, want $want"
fi
echo "PASS: $(rx events) events in $(rx PAGE) pages, $(rx stacks) stacks," \
	"$(rx epochs) epochs, delta $(val delta), kernel $(val kernel)"
