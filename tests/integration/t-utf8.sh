# Reports' JSON is valid UTF-8 JSON whatever bytes the guest sent (report-json.h): a
# guest's non-ASCII text (a comm in an event's fields, a symbol, the kernel release)
# round-trips as the same characters, invalid UTF-8 becomes U+FFFD, and warnings (an
# unreadable chunk) go to stderr, never into the JSON on stdout.
. "$1"
start_daemon --listen "$T/sock" --domain-name vm1
wait_for test -S "$T/sock" || fail "daemon socket"
# a comm in UTF-8 (c3 b6 is U+00F6, e2 98 83 U+2603) and a byte that is no UTF-8 (ff),
# written to trace_marker: ftrace/print events
"$SYNTH_GUEST" --connect "$T/sock" --events 3000 --stacks 40 --seed 7 -q \
	--print 'comm=d\303\266m\342\230\203\377 pid=1000' >/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon || fail "daemon exit status $?"
db=$(db_of vm1)
# two functions of the hottest stack, to be renamed
set -- $(report top -n 1 --json --domain-name vm1 | python3 -c '
import json, sys
fr = json.load(sys.stdin)["stacks"][0]["stack"]["frames"]
print(" ".join(sorted({f["sym"].split("+")[0] for f in fr})[:2]))')
[ $# = 2 ] && [ "${1#synth_fn_}" != "$1" ] && [ "${2#synth_fn_}" != "$2" ] ||
	fail "top stack's functions: $*"
f1=${1#synth_fn_} f2=${2#synth_fn_}
# What a guest could have sent, put in the store the daemon wrote: a kernel release and
# kallsyms symbols in UTF-8 and not (c3 cut short).
"$SQLITE3" "$db" "
UPDATE boots SET release = CAST(X'362e312e302dc3bc6e69c3afe29883ff' AS TEXT);
UPDATE texts SET text = CAST(replace(CAST(text AS TEXT), ' synth_fn_$f1' || char(10),
	' synth_f' || CAST(X'c3b1' AS TEXT) || '_$f1' || char(10)) AS BLOB) WHERE kind = 'ksyms';
UPDATE texts SET text = CAST(replace(CAST(text AS TEXT), ' synth_fn_$f2' || char(10),
	' synth_fn_' || CAST(X'c3' AS TEXT) || '_$f2' || char(10)) AS BLOB) WHERE kind = 'ksyms';" ||
	fail "sqlite3 update"

check() {	# check NAME: stdout is strict UTF-8 JSON, what python3 asserts of it holds
	python3 -c '
import json, sys
f1, f2 = sys.argv[2:4]
raw = open(sys.argv[1], "rb").read()
doc = json.loads(raw.decode("utf-8"))     # strict: an invalid byte raises
'"$2" "$T/$1.json" "$f1" "$f2" || fail "$1: JSON wrong or invalid"
}
report boots --json --domain-name vm1 >"$T/boots.json" 2>"$T/boots.err" || fail "boots"
check boots '
k = doc[0]["kernel"]
assert k == "6.1.0-\u00fcni\u00ef\u2603\ufffd", ascii(k)
assert "\u2603".encode() in raw, "UTF-8 written escaped, not as itself"'
ok "boots --json: kernel release round-trips its UTF-8, the invalid byte as U+FFFD"

report top -n 1000 --json --domain-name vm1 >"$T/top.json" 2>"$T/top.err" || fail "top"
check top '
syms = {f["sym"].split("+")[0] for s in doc["stacks"] for f in s["stack"]["frames"]}
assert "synth_f\u00f1_" + f1 in syms, sorted(syms)
assert "synth_fn_\ufffd_" + f2 in syms, sorted(syms)
assert not any("\\u00" in s for s in syms)'
ok "top --json: a non-ASCII symbol as itself, a cut UTF-8 sequence as U+FFFD"

report events -n 100000 --event print --json --domain-name vm1 >"$T/events.json" \
	2>"$T/events.err" || fail "events"
nprint=$(report events -n 100000 --domain-name vm1 | grep -c " ftrace/print: ")
[ "$nprint" -ge 25 ] || fail "only $nprint ftrace/print events in the text report"
check events '
ev = doc["events"]
assert len(ev) == '"$nprint"', len(ev)
assert all(e["event"].startswith("ftrace/print: ") and
           ": comm=d\u00f6m\u2603\ufffd pid=1000" in e["event"] for e in ev), ascii(ev[0])'
ok "events --json: a comm in UTF-8 and an invalid byte in an event's fields"

# an unreadable chunk: said on stderr, the JSON on stdout stays pure
"$SQLITE3" "$db" "UPDATE chunks SET data = X'00' WHERE id = (SELECT MIN(id) FROM chunks WHERE
	nr_pages > 0)" || fail "sqlite3 chunk"
report events -n 100000 --json --domain-name vm1 >"$T/bad.json" 2>"$T/bad.err" ||
	fail "events with a bad chunk"
grep -q "unreadable" "$T/bad.err" || { cat "$T/bad.err"; fail "no warning on stderr"; }
check bad 'assert 0 < len(doc["events"]) < 3000, len(doc["events"])'
ok "an unreadable chunk: '$(head -1 "$T/bad.err")' on stderr, stdout valid JSON"
