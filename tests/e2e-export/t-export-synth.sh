# host-agent export trace.dat, read by Debian's trace-cmd: a synthetic guest's boot
# (4 CPUs, 30 map epochs, a map small enough to fill (full stacks), 7 events lost in
# the guest's ring buffer, 7 events traced before stacks were on, which trace-cmd's
# side must pair as host-agent does (host-agent/pair.h's context rule), saved
# cmdlines at the start and the end) compared event by
# event with report events --json (tracecmp.py), as v7 with zstd (the default) and as
# v6; the tasks' names; then --cpus, --since/--until, and refused arguments.
. "$1"
TRACECMP=$2
: "${TRACE_CMD:?}"
command -v "$TRACE_CMD" >/dev/null || fail "no trace-cmd ($TRACE_CMD): run .ci/install-deps"
start_daemon --listen "$T/sock" --domain-name vm
"$SYNTH_GUEST" --connect "$T/sock" --events 40000 --cpus 4 --epochs 30 --stacks 300 \
	--map-bits 8 --missed 7 --late-stacks 7 --seed 5 --cmdlines -q >/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon
ha() { "$HOST_AGENT" "$@" --state-dir "$T/state" --domain-name vm; }

ha export trace.dat -o "$T/all.dat" 2>"$T/export.log" || { cat "$T/export.log"; fail "export"; }
grep -q "40000 events\|[0-9]* events on 4 CPUs" "$T/export.log" || { cat "$T/export.log"; fail "summary"; }
python3 "$TRACECMP" --trace-cmd "$TRACE_CMD" --host-agent "$HOST_AGENT" --state-dir "$T/state" \
	--domain-name vm --dat "$T/all.dat" --expect-dropped >"$T/cmp" || { cat "$T/cmp"; fail "tracecmp"; }
cat "$T/cmp"
grep -q "^tracecmp: 40000 events equal on 4 CPUs" "$T/cmp" || fail "not every event compared"
grep -q "(7 events counted)" "$T/cmp" || fail "the 7 lost events are not where trace-cmd shows them"
"$TRACE_CMD" dump -i "$T/all.dat" --summary >"$T/summary" 2>&1
grep -q '"local" clock' "$T/summary" || fail "trace clock"
grep -q '^[[:space:]]*7[[:space:]]*\[Version\]' "$T/summary" &&
	grep -q 'zstd[[:space:]]*\[Compression algorithm\]' "$T/summary" || fail "not v7 with zstd"
ok "trace.dat (v7, zstd) equals report events, event by event"

# saved cmdlines: trace-cmd names every event's task as the guest's saved_cmdlines did
# (both CMDLINES generations merged, pid 1001's later name winning), the guest's
# three malformed lines refused
grep -q " 50 tasks named" "$T/export.log" || { cat "$T/export.log"; fail "tasks named"; }
grep -q "3 saved cmdlines lines of boot 1 refused" "$T/export.log" ||
	{ cat "$T/export.log"; fail "malformed cmdlines not refused"; }
"$TRACE_CMD" report -i "$T/all.dat" 2>/dev/null | python3 -c '
import re, sys
n = 0
for line in sys.stdin:
    m = re.match(r"^\s*(.*)-(\d+)\s+\[\d+\]", line)
    if not m:
        continue
    pid, want = int(m.group(2)), "renamed" if m.group(2) == "1001" else "synth-" + m.group(2)
    if m.group(1) != want:
        sys.exit("pid %d named %r, want %r: %s" % (pid, m.group(1), want, line))
    n += 1
print(n)' >"$T/named" || { cat "$T/named"; fail "trace-cmd names tasks wrongly"; }
[ "$(cat "$T/named")" -ge 40000 ] || fail "only $(cat "$T/named") records named"
ok "trace-cmd names the tasks of all $(cat "$T/named") records from the saved cmdlines"

# --dat-version 6: the same events, uncompressed, in the older layout
ha export trace.dat --dat-version 6 -o "$T/v6.dat" 2>/dev/null || fail "export v6"
python3 "$TRACECMP" --trace-cmd "$TRACE_CMD" --host-agent "$HOST_AGENT" --state-dir "$T/state" \
	--domain-name vm --dat "$T/v6.dat" --expect-dropped >"$T/cmp6" || { cat "$T/cmp6"; fail "tracecmp v6"; }
grep -q "^tracecmp: 40000 events equal on 4 CPUs" "$T/cmp6" || fail "v6: not every event compared"
"$TRACE_CMD" dump -i "$T/v6.dat" --summary 2>&1 | grep -q '\[local\]' || fail "v6 trace clock"
v6=$(stat -c %s "$T/v6.dat") v7=$(stat -c %s "$T/all.dat")
[ "$v7" -lt "$v6" ] || fail "v7 with zstd ($v7 bytes) not smaller than v6 ($v6 bytes)"
ok "v6 equals report events too; v7 $v7 bytes, v6 $v6 bytes"

# --cpus: only those CPUs' events, the others' slots empty
ha export trace.dat --cpus 1,3 -o "$T/c13.dat" 2>/dev/null || fail "export --cpus"
"$TRACE_CMD" report -i "$T/c13.dat" 2>/dev/null | awk '/^ .*\[[0-9]+\]/ { match($0, /\[[0-9]+\]/); print substr($0, RSTART, RLENGTH) }' |
	sort -u | tr '\n' ' ' >"$T/cpus"
[ "$(cat "$T/cpus")" = "[001] [003] " ] || fail "--cpus 1,3 gave CPUs $(cat "$T/cpus")"
want=$(ha report events -n 1000000 --json | python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin)["events"] if e["cpu"] in (1, 3)))')
got=$("$TRACE_CMD" report -i "$T/c13.dat" 2>/dev/null | grep -c ' kmalloc: ')
[ "$want" = "$got" ] || fail "--cpus 1,3: $got events, want $want"
ok "--cpus 1,3: $got events"

# --since/--until: the events of that trace-clock range, both ends included
range=$(ha report events -n 1000000 --json | python3 -c '
import json,sys; e=json.load(sys.stdin)["events"]; print("%.9f %.9f" % (e[5000]["ts"]/1e9, e[9000]["ts"]/1e9))')
ha export trace.dat --since "${range% *}" --until "${range#* }" -o "$T/r.dat" 2>/dev/null || fail "export range"
want=$(ha report events -n 1000000 --json --since "${range% *}" --until "${range#* }" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["events"]))')
got=$("$TRACE_CMD" report -i "$T/r.dat" 2>/dev/null | grep -c ' kmalloc: ')
[ "$want" = "$got" ] && [ "$got" -gt 3000 ] || fail "range: $got events, want $want"
ok "time range: $got events"

# refused: a CPU the boot does not have, no -o, another file kept on failure
echo keep >"$T/keep.dat"
ha export trace.dat --cpus 4 -o "$T/keep.dat" 2>"$T/err" && fail "--cpus 4 accepted"
grep -q "not within the boot's CPUs 0-3" "$T/err" || { cat "$T/err"; fail "--cpus message"; }
[ "$(cat "$T/keep.dat")" = keep ] && [ ! -e "$T/keep.dat.part" ] || fail "failed export touched the file"
ha export trace.dat 2>/dev/null && fail "export without -o accepted"
ha export trace.dat --boot 9 -o "$T/x.dat" 2>/dev/null && fail "missing boot accepted"
ok "refused arguments"

# KernelShark (Debian's) loads the file under Xvfb; the screenshot stays for a person
: "${ARTIFACTS:?}"
mkdir -p "$ARTIFACTS"
bash "$(dirname "$TRACECMP")/kshark-load.sh" "$T/all.dat" "$ARTIFACTS/kernelshark-synth.png" ||
	fail "KernelShark"
ok "KernelShark loaded the file, screenshot $ARTIFACTS/kernelshark-synth.png"

# plugin_stackmap: the file as trace-cmd record in the guest has it (stack_id events
# kept) and the map of one epoch as the guest's stack_map_bin: the ids of that epoch
# print their frames, those of the 29 others say they are from another epoch
: "${TRACEEVENT_PLUGIN_DIR:?}"
export TRACEEVENT_PLUGIN_DIR
ha export trace.dat --stack-ids -o "$T/raw.dat" 2>/dev/null || fail "export --stack-ids"
python3 "$(dirname "$TRACECMP")/mkmapbin.py" "$(db_of vm)" 1 12 "$T/map.bin" || fail "mkmapbin"
python3 "$TRACECMP" --trace-cmd "$TRACE_CMD" --host-agent "$HOST_AGENT" --state-dir "$T/state" \
	--domain-name vm --dat "$T/raw.dat" --plugin-map "$T/map.bin" --map-epoch 12 >"$T/cmp2" ||
	{ cat "$T/cmp2"; fail "tracecmp with plugin_stackmap"; }
cat "$T/cmp2"
grep -q "^tracecmp: 40000 events equal" "$T/cmp2" || fail "plugin: not every event compared"
grep -q '"other-epoch": [1-9]' "$T/cmp2" && grep -q '"frames": [1-9]' "$T/cmp2" ||
	fail "plugin: no event of the map's epoch, or none of another"
"$TRACE_CMD" report -i "$T/raw.dat" 2>/dev/null | grep -m1 -q \
	'<stack_id 0x[0-9a-f]*> (name the guest.s stack_map_bin: -O stackmap:map=FILE)' ||
	fail "plugin without -O"
"$TRACE_CMD" report -O stackmap:map="$T/nosuch" -i "$T/raw.dat" 2>/dev/null |
	grep -m1 -q "nosuch: cannot open: No such file" || fail "plugin with a missing map"
ok "plugin_stackmap resolves the ids of its map's epoch and names the others"
