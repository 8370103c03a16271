# Helpers for the host-agent integration tests (sourced). Each test runs the real
# host-agent and synth-guest over a real unix socket in a private temporary directory.
set -u
: "${HOST_AGENT:?}" "${SYNTH_GUEST:?}" "${SQLITE3:?}"

T=$(mktemp -d -t ha-test.XXXXXX)
DAEMON_PID=
cleanup() {
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -9 "$DAEMON_PID" 2>/dev/null
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	if [ -f "$T/daemon.log" ]; then echo "--- daemon log (tail)"; tail -n 30 "$T/daemon.log"; fi
	exit 1
}
ok() { echo "ok: $*"; }

# start_daemon ARGS...: host-agent in the background, log in $T/daemon.log (appended
# to: DAEMON_LOG_AT is where this daemon's lines start)
start_daemon() {
	DAEMON_LOG_AT=$(stat -c %s "$T/daemon.log" 2>/dev/null || echo 0)
	"$HOST_AGENT" --state-dir "$T/state" "$@" >>"$T/daemon.log" 2>&1 &
	DAEMON_PID=$!
}

# daemon_says GREP-ARGS...: the daemon started last has logged a matching line (an
# earlier daemon's lines in the same log do not count)
daemon_says() {
	tail -c +$((${DAEMON_LOG_AT:-0} + 1)) "$T/daemon.log" | grep -q "$@"
}

stop_daemon() {
	kill -TERM "$DAEMON_PID" 2>/dev/null || true
	wait "$DAEMON_PID" 2>/dev/null
	local rc=$?
	DAEMON_PID=
	return $rc
}

# wait_for COND-COMMAND...: poll up to 30 s
wait_for() {
	for _ in $(seq 300); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	return 1
}

report() { "$HOST_AGENT" report --state-dir "$T/state" "$@"; }

db_of() { echo "$T/state/$1.db"; }

integrity_ok() {
	local r
	r=$("$SQLITE3" "$1" "PRAGMA integrity_check;") || fail "sqlite3 on $1"
	[ "$r" = ok ] || fail "integrity_check of $1: $r"
}

# compare_folded DOMAIN EXPECTFILE [BOOT]: the stored, resolved stacks and their event
# counts equal the guest's ground truth exactly.
compare_folded() {
	local boot=${3:-}
	report folded --domain-name "$1" ${boot:+--boot "$boot"} | sort >"$T/got.folded" ||
		fail "report folded"
	sort "$2" >"$T/exp.folded"
	if ! cmp -s "$T/got.folded" "$T/exp.folded"; then
		diff "$T/exp.folded" "$T/got.folded" | head -20
		fail "folded stacks differ from the guest's ground truth"
	fi
	local n
	n=$(awk '{s += $NF} END {print s}' "$T/exp.folded")
	ok "$n events, $(wc -l <"$T/exp.folded") distinct stacks, all resolved as the guest had them"
}

# json_field JSON KEY: a number or string value from our flat JSON (first occurrence)
json_field() {
	printf '%s' "$1" | grep -o "\"$2\":\(\"[^\"]*\"\|[0-9-]*\)" | head -1 | cut -d: -f2- | tr -d '"'
}
