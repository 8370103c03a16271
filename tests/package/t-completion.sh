#!/bin/bash
# tests/package/t-completion.sh HOST_AGENT COMPLETION: the bash completion, sourced
# into a bash of its own and called as bash's programmable completion calls it
# (COMP_WORDS, COMP_CWORD, then COMPREPLY). Each command completes exactly the long
# options its --help lists, and no other command's; `host-agent report <TAB>` the
# report verbs (the fleet's four with --clickhouse); option values whether given as
# `--opt VALUE`, `--opt=VALUE` or split at '=' as bash splits them; store names from
# the state directory the line names.
set -euo pipefail
ha=$1 comp=$2
export LC_ALL=C

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

[ -x "$ha" ] || fail "no host-agent at $ha"
[ -f "$comp" ] || fail "no completion file at $comp"
comp=$(realpath "$comp")
W=$(mktemp -d -t completion-test.XXXXXX)
trap 'rm -rf "$W"' EXIT

# complete WORD... : what the completion offers for the last WORD (the one being
# typed; '' for a new word), sorted, one line.
complete_words() {
	(cd "$W" && bash --norc --noprofile -c '
		set -u
		. "$1" || exit 1
		shift
		COMP_WORDS=(host-agent "$@")
		COMP_CWORD=$#
		COMP_LINE="host-agent $*"
		COMP_POINT=${#COMP_LINE}
		_host_agent
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@") | sort | tr '\n' ' ' | sed 's/ $//'
}
expect() {
	local want=$1 got
	shift
	got=$(complete_words "$@") || fail "completion of '$*' failed"
	[ "$got" = "$want" ] || fail "host-agent $* <TAB>: '$got', expected '$want'"
}

[ "$(bash --norc -c '. "$1"; complete -p host-agent' _ "$comp")" = \
	"complete -F _host_agent host-agent" ] || fail "complete -p host-agent"

# Each command's long options, as its --help lists them, against the completion's.
n=0
for c in "" report export attach detach ship recover; do
	want=$("$ha" $c --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+' |
		grep -oE -- '--[a-z-]+' | sort -u | tr '\n' ' ' | sed 's/ $//')
	[ -n "$want" ] || fail "host-agent $c --help lists no option"
	if [ -z "$c" ]; then got=$(complete_words --); else got=$(complete_words "$c" --); fi
	[ "$got" = "$want" ] ||
		fail "host-agent ${c:+$c }--<TAB>: '$got', --help lists '$want'"
	n=$((n + $(wc -w <<<"$want")))
done
ok "each command's --<TAB> is exactly its --help's long options ($n in seven lists)"

expect "attach detach export recover report ship" ""
expect "report" rep
expect "boots events flamegraph folded postmortem stack top" report ""
expect "flamegraph folded" report f
expect "boots events folded top" report --clickhouse http://ch:8123/ ""
expect "boots events folded top" report --clickhouse=http://ch:8123/ ""
expect "top" report --domain-name vm1 --boot all -n 5 t
expect "" report top ""
expect "trace.dat" export ""
ok "host-agent report <TAB>: the verbs, the fleet's with --clickhouse, none after one"

# An option belongs to its command: no daemon option after report, no export option
# for the daemon.
expect "--dat-version" export --dat
expect "" --dat
expect "" report --sock
expect "--socket --socket-dir" --sock
expect "--stack-ids --state-dir" export --st
expect "--host-time --host-trace-id" export --ho
expect "--host --host-time" report --ho
expect "--help --host" ship --h
ok "options: each command's own"

expect "perf-script text" report events --format ""
expect "perf-script" report events --format p
expect "perf-script" report events --format = p
expect "text" report events --format=t
expect "boot mono realtime tai" export --host-time ""
expect "6 7" export --dat-version ""
expect "crashed" report --clickhouse u --ended cr
expect "all" report --boot ""
expect "" export --boot ""
expect "" report top -n ""
ok "option values: --opt V, --opt=V, --opt = V"

# Store names: from --state-dir, in any of its spellings.
mkdir -p "$W/state" "$W/other"
touch "$W/state/vm1.db" "$W/state/vm2.db" "$W/state/vm1.db-wal" "$W/other/x.db"
expect "vm1 vm2" report --state-dir "$W/state" --domain-name ""
expect "vm2" report --state-dir="$W/state" --domain-name vm2
expect "vm1 vm2" report --state-dir = "$W/state" --domain-name = ""
expect "vm1" ship --state-dir "$W/state" vm1
expect "other state" report --state-dir ""
expect "other/x.db" ship --state-dir "$W/state" other/
ok "store names from the named state directory; directories and .db files"
