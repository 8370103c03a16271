#!/bin/bash
# The libvirt post-mortem, one domain per on_crash mode that keeps memory to read. Each
# has a pvpanic device and <vmcoreinfo state='on'/>, streams, then panics (sysrq-c).
#   preserve          on CRASHED the agent marks the boot crashed, has libvirt dump the
#                     guest's memory (virDomainCoreDumpWithFormat, memory-only ELF) into
#                     the state directory from a worker thread, reads the kernel log out
#                     of it into the boot and deletes the core; the domain stays crashed
#   coredump-destroy  libvirt dumps the guest itself (into its auto_dump_path) and
#                     destroys it; the agent reads libvirt's file, which stays
# The agents are the ASan + UBSan build: the worker threads and their callbacks must
# leave no sanitizer report, and SIGTERM afterwards a clean exit.
. "$(dirname "$0")/lib.sh"
AUTO_DUMPS=()
cleanup_dumps() { rm -f "${AUTO_DUMPS[@]+"${AUTO_DUMPS[@]}"}"; lv_cleanup; }
trap cleanup_dumps EXIT
lv_start_daemons
lv_guest

# crash_and_report NAME: start NAME (defined, agent running), wait for its panic and the
# agent's post-mortem, check the report (JSON and text) and the streamed events.
crash_and_report() {
	local d=$1 out line before lost
	v start "$d" > /dev/null || fail "start $d"
	note "$d started; waiting for the guest's crash"
	wait_for 300 console_has "$d" "sysrq: Trigger a crash" || fail "$d did not crash"
	wait_for 60 is_ended "$d" crashed || fail "$d: boot not marked crashed: $(boot_ended "$d")"
	wait_for 300 grep -q "post-mortem finished" "$W/agent-$d.log" ||
		fail "$d: no post-mortem in the agent's log"
	grep "post-mortem" "$W/agent-$d.log"
	grep -Eq "post-mortem of boot [0-9]+ ready" "$W/agent-$d.log" ||
		fail "$d: the post-mortem failed"

	# The row: recovered, of this boot's kernel, the panic and the crash report.
	report postmortem --domain "$d" --json > "$W/pm-$d.json" || fail "report postmortem --json"
	python3 - "$W/pm-$d.json" <<'PY' || fail "$d: report postmortem --json: $(cat "$W/pm-$d.json")"
import json, sys
r = json.load(open(sys.argv[1]))
pm = r["postmortem"]
assert r["ended"] == "crashed", r["ended"]
assert pm and pm["status"] == "recovered", pm
assert pm["dump_bytes"] >= 500 << 20, pm  # the 512 MiB domain
assert pm["osrelease"] == r["kernel"], (pm["osrelease"], r["kernel"])
assert pm["kmsg_records"] > 0 and pm["kmsg_skipped"] == 0, pm
assert "sysrq triggered crash" in (r["panic"] or ""), r["panic"]
oops = r["oops"]
assert oops and "sysrq: Trigger a crash" in oops[0]["text"], oops[:2]
assert any("Call Trace" in o["text"] for o in oops), "no Call Trace in the oops"
assert len(r["before"]) > 0, "no kernel log lines before the crash"
print("postmortem: %s, %d MiB dumped in %d ms, %d records, %d oops lines, %d before" % (
    pm["status"], pm["dump_bytes"] >> 20, pm["dump_ms"], pm["kmsg_records"],
    len(oops), len(r["before"])))
PY
	out=$(report postmortem --domain "$d") || fail "report postmortem"
	echo "$out" | head -n 12
	echo "$out" | grep -q "^Post-mortem: recovered" || fail "$d: text report: not recovered"
	echo "$out" | grep -q "^Panic: Kernel panic - not syncing: sysrq triggered crash" ||
		fail "$d: text report: no panic line"
	before=$(echo "$out" | sed -n '/^The [0-9]* lines before it:/,$p' | grep -c '^\[') || true
	[ "${before:-0}" -gt 0 ] || fail "$d: text report: no kernel log lines before the crash"
	# The recovered line is the console's (the serial console printed the same record).
	line=$(echo "$out" | grep -m1 "sysrq: Trigger a crash") ||
		fail "$d: text report: no crash report"
	grep -aqF -- "$line" "$W/console-$d.log" ||
		fail "$d: the recovered line is not the console's: $line"

	# The streamed events are intact: stored, resolved, no frame lost.
	events_stored "$d" || fail "$d: no events stored"
	report boots --domain "$d"
	lost=$(report boots --domain "$d" --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["lost_frames"])')
	[ "$lost" = 0 ] || fail "$d: $lost frames lost"
	out=$(report events -n 3 --domain "$d")
	echo "$out" | grep -q "stack_id" || fail "$d: no stacks in the last events"
	if echo "$out" | grep -q "unresolved"; then fail "$d: last events unresolved"; fi
}

# stop_agent NAME PID: SIGTERM, a clean exit, no sanitizer report.
stop_agent() {
	local rc=0
	kill "$2"
	wait "$2" || rc=$?
	if ! asan_clean "$W/agent-$1.log"; then
		sed -n '/==ERROR\|runtime error/,$p' "$W/agent-$1.log" >&2
		fail "$1: sanitizer report in the agent"
	fi
	[ "$rc" = 0 ] || fail "$1: agent exit $rc on SIGTERM"
}

# preserve: our dump, deleted; the domain stays crashed.
D=smlv-pm
lv_define $D crash channel
HOST_AGENT=$HOST_AGENT_ASAN lv_agent $D
crash_and_report $D
grep -q "dumping 512 MiB of guest memory into $STATE/$D.core" "$W/agent-$D.log" ||
	fail "$D: not dumped into the state directory"
[ ! -e "$STATE/$D.core" ] || fail "the core $STATE/$D.core was not deleted"
state=$(v domstate $D --reason)
note "domain state: $state"
case "$state" in
*"crashed (panicked)"*) ;;
*) fail "$D: state $state, expected crashed (preserve)" ;;
esac
stop_agent $D "$AGENT_smlv_pm"
v destroy $D > /dev/null

# coredump-destroy: libvirt's dump, read and kept; libvirt destroys the domain.
D=smlv-pmcd
LV_ON_CRASH=coredump-destroy lv_define $D crash channel
HOST_AGENT=$HOST_AGENT_ASAN lv_agent $D
crash_and_report $D
f=$(sed -n "s/.*post-mortem: libvirt's dump is //p" "$W/agent-$D.log")
[ -n "$f" ] || fail "$D: the agent did not say where libvirt's dump is"
AUTO_DUMPS+=("$f")
[ -f "$f" ] || fail "$D: libvirt's dump $f is gone"
[ ! -e "$STATE/$D.core" ] || fail "$D: the agent dumped the domain itself"
wait_for 60 sh -c "virsh -q -c '$URI' domstate $D --reason | grep -q 'shut off (crashed)'" ||
	fail "$D: state $(v domstate $D --reason), expected shut off (crashed)"
note "domain state: $(v domstate $D --reason)"
stop_agent $D "$AGENT_smlv_pmcd"
echo "PASS"
