# Map resets: the same slots carry other stacks in each epoch; each event resolves
# through the epoch in effect at its timestamp.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
"$SYNTH_GUEST" --connect "$T/sock" --events 40000 --epochs 5 --stacks 150 --seed 3 \
	--expect "$T/expect" -q >/dev/null || fail "synth-guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon
compare_folded vm1 "$T/expect"
b=$(report boots --json --domain-name vm1)
[ "$(json_field "$b" epochs)" = 5 ] || fail "epochs: $b"
# slot 13 exists in every epoch with a different stack: `report stack` shows each.
n=$(report stack 13 --domain-name vm1 | grep -c "^  epoch 0 ")
[ "$n" = 1 ] || fail "stack 13 in epoch 0"
id=$(( (3 << 20) | 13 ))
report stack "$id" --domain-name vm1 | grep -q "^  epoch 3 .*stack_id 0x0030000d" ||
	fail "stack $id not in epoch 3"
# an id of an epoch that never existed is unresolved, not guessed
report stack $(( (9 << 20) | 13 )) --domain-name vm1 | grep -q "unresolved" ||
	fail "id of an unknown epoch not reported unresolved"
ok "per-epoch resolution"

# The same stacks in every epoch (a reset, then the same workload): `report top` shows
# each stack once, its count summed over the epochs' ids, exactly the guest's.
start_daemon --listen "$T/sock3" --domain-name same
"$SYNTH_GUEST" --connect "$T/sock3" --events 20000 --epochs 4 --stacks 60 --seed 5 \
	--same-stacks --expect "$T/expect3" -q >/dev/null || fail "synth-guest (same stacks)"
wait_for daemon_says "^.*same: boot .*: BYE" || fail "no BYE from same"
stop_daemon
compare_folded same "$T/expect3"
report top -n 100000 --json --domain-name same >"$T/top3.json" || fail "report top"
python3 - "$T/top3.json" "$T/expect3" <<'PY3' || fail "top does not merge the epochs' ids"
import collections, json, sys
top = json.load(open(sys.argv[1]))
frames = collections.Counter()
by_folded = collections.Counter()
merged = 0
for e in top['stacks']:
    if e['stack']['kind'] in ('stack_id', 'full'):
        frames[tuple(f['ip'] for f in e['stack']['frames'])] += 1
    by_folded[e['folded']] += e['count']
    merged += e['ids'] > 1
want = collections.Counter()
for l in open(sys.argv[2]):
    f, n = l.rstrip('\n').rsplit(' ', 1)
    want[f] += int(n)
dup = [k for k, n in frames.items() if n > 1]
assert not dup, '%d stacks shown more than once' % len(dup)
assert by_folded == want, 'counts differ from the guest: %s' % (
    sorted(set(by_folded.items()) ^ set(want.items()))[:5])
assert merged > 0, 'no entry merged ids of several epochs'
print('%d stacks, %d of them carried by ids of several epochs' % (len(frames), merged))
PY3
ok "report top: one entry per stack across 4 epochs, counts exact"

# 2100 epochs: the 11-bit tag wraps, so epochs 0 and 2048 (1 and 2049, ...) hand out
# the same ids for different stacks; each event still resolves by its timestamp.
start_daemon --listen "$T/sock2" --domain-name wrap
"$SYNTH_GUEST" --connect "$T/sock2" --events 8400 --epochs 2100 --stacks 3 --seed 4 \
	--expect "$T/expect2" -q >/dev/null || fail "synth-guest (2100 epochs)"
wait_for daemon_says "BYE" || fail "no BYE"
stop_daemon
b=$(report boots --json --domain-name wrap)
[ "$(json_field "$b" epochs)" = 2100 ] || fail "epochs: $b"
compare_folded wrap "$T/expect2"
n=$(report stack 13 --domain-name wrap | grep -c "^  epoch \(0\|2048\) .*stack_id 0x0000000d")
[ "$n" = 2 ] || fail "id 13 should exist in epochs 0 and 2048 with their own stacks"
ok "epoch tags wrap without misattribution"
