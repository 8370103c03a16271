#!/bin/bash
# Plain QEMU (guest-kernel/launch): host-agent --socket --qmp marks the boot crashed
# on GUEST_PANICKED; a power-off without panic and without BYE stays disconnected.
NO_LIBVIRT=1
. "$(dirname "$0")/lib.sh"
lv_guest

# run_guest NAME MODE ON_PANIC: boot under launch with the agent on --socket/--qmp.
run_guest() {
	local name=$1 mode=$2 on_panic=$3 rc=0
	"$HOST_AGENT" --socket "$W/$name.sock" --qmp "$W/$name.qmp" --state-dir "$STATE" \
		--domain-name "$name" > "$W/agent-$name.log" 2>&1 &
	AGENTS+=("$!")
	"$TOP/guest-kernel/launch" --kernel "$W/bzImage" --initrd "$W/initrd.cpio.gz" \
		--socket "$W/$name.sock" --qmp "$W/$name.qmp" --on-panic "$on_panic" \
		--console "$W/console-$name.log" --smp 1 --mem 512 --timeout 300 \
		--scenario lv --append "stackmap.lv=$mode stackmap.lv_seconds=6" \
		--append "trace_event=kmem:kmalloc,kmem:kmem_cache_alloc" \
		--append "trace_options=stackmap,stacktrace" --append "trace_buf_size=2M" \
		> "$W/launch-$name.log" 2>&1 || rc=$?
	note "$name: launch exit $rc"
}

# exit-failure: QEMU sends GUEST_PANICKED and exits at once.
run_guest qmp-crash crash exit
console_has qmp-crash "sysrq: Trigger a crash" || fail "qmp-crash: the guest did not crash"
wait_for 20 is_ended qmp-crash crashed || fail "qmp-crash: boot $(boot_ended qmp-crash)"
grep -q "QMP GUEST_PANICKED (action poweroff): boot 1 marked crashed" \
	"$W/agent-qmp-crash.log" || fail "qmp-crash: no crash line in the agent log"
events_stored qmp-crash || fail "qmp-crash: no events"
report boots --domain-name qmp-crash
report events -n 2 --domain-name qmp-crash | grep -q stack_id || fail "no last events"

# No panic, no BYE (the guest agent is killed), power-off: disconnected.
run_guest qmp-off poweroff exit
console_has qmp-off "agent killed; powering off" || fail "qmp-off: no power-off"
wait_for 20 is_ended qmp-off disconnected || fail "qmp-off: boot $(boot_ended qmp-off)"
grep -q "QMP SHUTDOWN" "$W/agent-qmp-off.log" || fail "qmp-off: no SHUTDOWN seen"
report boots --domain-name qmp-off
echo "PASS"
