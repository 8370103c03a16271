# The command line: one table of commands (host-agent/main.c), each with its own
# --help and options, and the exit status host-agent(8) documents: 0 success, 1 a
# runtime failure, 2 a usage error.
. "$1"
status() {	# status WANT ARGS...: host-agent ARGS exits WANT
	local want=$1 rc=0
	shift
	"$HOST_AGENT" "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$T/out" "$T/err"; fail "host-agent $*: exit $rc, not $want"; }
}
status 0 --help
for c in report export attach detach ship; do
	grep -qE "^  $c +[A-Z]" "$T/out" || fail "--help does not list command $c"
done
grep -q "^Exit status: 0 success; 1 a runtime failure" "$T/out" || fail "--help: no exit status"
for c in report export attach detach ship; do
	status 0 $c --help
	grep -q "^  host-agent $c \[OPTION" "$T/out" || { cat "$T/out"; fail "$c --help: usage line"; }
	grep -q -- "--state-dir" "$T/out" || fail "$c --help lacks the store options"
done
status 0 report --help
grep -q -- "--json" "$T/out" && ! grep -q -- "--quota-mb" "$T/out" ||
	fail "report --help: not report's options"
status 0 export --help
grep -q -- "--dat-version" "$T/out" && ! grep -q -- "--json" "$T/out" ||
	fail "export --help: not export's options"
ok "--help of the daemon and of each command, each with its own options"

status 2 bogus
grep -q "unknown command 'bogus'" "$T/err" || fail "unknown command: $(cat "$T/err")"
status 2 report --quota-mb 1 boots --state-dir "$T/state"
grep -q "Unknown option --quota-mb" "$T/err" || fail "an option of the daemon for report"
status 2 export trace.dat --json -o "$T/x.dat" --state-dir "$T/state"
status 2 --json --listen "$T/sock" --state-dir "$T/state"
status 2 report --state-dir "$T/state"
status 2 export --state-dir "$T/state"
status 2 report boots --limit x --state-dir "$T/state"
status 2 --state-dir "$T/state"
ok "usage errors exit 2: unknown command, another command's option, bad or missing values"

status 1 report boots --domain-name nosuch --state-dir "$T/state"
grep -q "no store for domain nosuch" "$T/err" || fail "missing store: $(cat "$T/err")"
status 1 export trace.dat -o "$T/x.dat" --domain-name nosuch --state-dir "$T/state"
ok "runtime failures exit 1: no store for the domain"

start_daemon --listen "$T/sock" --domain-name vm1
wait_for test -S "$T/sock" || fail "daemon socket"
"$SYNTH_GUEST" --connect "$T/sock" --events 500 --stacks 10 --seed 3 -q >/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon || fail "daemon exit status $?"
status 0 report boots --domain-name vm1 --state-dir "$T/state"
status 0 report top -n 3 --json --domain-name vm1 --state-dir "$T/state"
status 1 report events --boot 99 --domain-name vm1 --state-dir "$T/state"
status 0 export trace.dat -o "$T/x.dat" --domain-name vm1 --state-dir "$T/state"
[ -s "$T/x.dat" ] || fail "export wrote nothing"
ok "a stored boot: report and export exit 0, a boot that is not there 1"
