#!/bin/bash
# The libvirt post-mortem: a domain with <on_crash>preserve</on_crash>, a pvpanic device
# and <vmcoreinfo state='on'/> streams, then panics (sysrq-c). On CRASHED the agent marks
# the boot crashed, has libvirt dump the guest's memory (virDomainCoreDumpWithFormat,
# memory-only ELF) into the state directory from a worker thread, reads the kernel log
# out of it into the boot, and deletes the core. The domain stays crashed (preserve).
. "$(dirname "$0")/lib.sh"
D=smlv-pm
lv_start_daemons
lv_guest
lv_define $D crash channel
lv_agent $D
v start $D > /dev/null || fail "start"
note "domain started; waiting for the guest's crash"
wait_for 300 console_has $D "sysrq: Trigger a crash" || fail "the guest did not crash"
wait_for 60 is_ended $D crashed || fail "boot not marked crashed: $(boot_ended $D)"
wait_for 300 grep -q "post-mortem finished" "$W/agent-$D.log" ||
	fail "no post-mortem in the agent's log"
grep "post-mortem" "$W/agent-$D.log"
grep -Eq "post-mortem of boot [0-9]+ ready" "$W/agent-$D.log" || fail "the post-mortem failed"

# The row: recovered, from libvirt's dump, of this boot's kernel.
report postmortem --domain $D --json > "$W/pm.json" || fail "report postmortem --json"
python3 - "$W/pm.json" <<'PY' || fail "report postmortem --json: $(cat "$W/pm.json")"
import json, sys
r = json.load(open(sys.argv[1]))
pm = r["postmortem"]
assert r["ended"] == "crashed", r["ended"]
assert pm and pm["status"] == "recovered", pm
assert pm["dump_ms"] >= 0 and pm["dump_bytes"] >= 500 << 20, pm  # the 512 MiB domain
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
out=$(report postmortem --domain $D) || fail "report postmortem"
echo "$out" | head -n 12
echo "$out" | grep -q "^Post-mortem: recovered" || fail "text report: not recovered"
echo "$out" | grep -q "sysrq: Trigger a crash" || fail "text report: no crash report"
echo "$out" | grep -q "^Panic: Kernel panic - not syncing: sysrq triggered crash" ||
	fail "text report: no panic line"
before=$(echo "$out" | sed -n '/^The [0-9]* lines before it:/,$p' | grep -c '^\[') || true
[ "${before:-0}" -gt 0 ] || fail "text report: no kernel log lines before the crash"
# Each recovered line is the console's (the serial console printed the same records).
line=$(echo "$out" | grep -m1 "sysrq: Trigger a crash")
console_has $D "$line" || fail "the recovered line is not the console's: $line"

# The core is gone (no --dump-keep), the domain stays as on_crash says.
[ ! -e "$STATE/$D.core" ] || fail "the core $STATE/$D.core was not deleted"
state=$(v domstate $D --reason)
note "domain state: $state"
case "$state" in *crashed*) ;; *) fail "domain state $state, expected crashed (preserve)" ;; esac

# The streamed events are intact: stored, resolved, no frame lost.
events_stored $D || fail "no events stored"
report boots --domain $D
lost=$(report boots --domain $D --json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["lost_frames"])')
[ "$lost" = 0 ] || fail "$lost frames lost"
out=$(report events -n 3 --domain $D)
echo "$out" | grep -q "stack_id" || fail "no stacks in the last events"
echo "$out" | grep -q "unresolved" && fail "last events unresolved"
v destroy $D > /dev/null
echo "PASS"
