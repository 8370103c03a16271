# report events --format perf-script and report flamegraph on a synthetic boot
# (2 epochs, deep stacks stored as full stacks), checked by perfcheck.py against
# report events --json and report folded; the SVG opened in headless Chromium (its
# script must run over every frame), with a screenshot left in $ARTIFACTS.
. "$1"
PERFCHECK=$2
: "${CHROMIUM:?}" "${ARTIFACTS:?}"
command -v "$CHROMIUM" >/dev/null || fail "no chromium ($CHROMIUM): run .ci/install-deps"
start_daemon --listen "$T/sock" --domain-name vm
"$SYNTH_GUEST" --connect "$T/sock" --events 10000 --epochs 2 --stacks 60 --seed 9 -q \
	>/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon
ha() { "$HOST_AGENT" "$@" --state-dir "$T/state" --domain-name vm; }

ha report events --format perf-script >"$T/ps" || fail "perf-script"
ha report events -n 1000000 --json >"$T/ev.json" || fail "events --json"
ha report folded >"$T/folded" || fail "folded"
python3 "$PERFCHECK" perf-script "$T/ps" "$T/ev.json" "$T/folded" || fail "perf-script check"
ha report events --format bogus 2>/dev/null && fail "--format bogus accepted"
# the whole boot's perf-script is written as it is decoded (bounded memory): the same
# bytes as the last N events' (sorted in memory), also for one event and a range
ha report events --format perf-script -n 1000000 >"$T/ps-mem" || fail "perf-script -n"
cmp -s "$T/ps" "$T/ps-mem" || fail "streamed perf-script differs from the in-memory one"
ha report events --format perf-script --event kmalloc --since 0.001 --until 0.004 >"$T/ps3" &&
	ha report events --format perf-script --event kmalloc --since 0.001 --until 0.004 \
		-n 1000000 >"$T/ps3-mem" || fail "perf-script --event --since --until"
[ -s "$T/ps3" ] && cmp -s "$T/ps3" "$T/ps3-mem" || fail "streamed perf-script of a range differs"
ok "perf-script streamed equals perf-script sorted in memory"

ha report flamegraph >"$T/fg.svg" || fail "flamegraph"
mkdir -p "$ARTIFACTS"
# a private profile directory, no sandbox (root), no GPU: what CI has
run_chromium() {
	"$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$T/chromium" \
		--window-size=1200,700 "$@" "file://$T/fg.svg" 2>>"$T/chromium.log"
}
run_chromium --dump-dom >"$T/dom" || { tail "$T/chromium.log"; fail "chromium --dump-dom"; }
python3 "$PERFCHECK" flamegraph "$T/fg.svg" "$T/folded" "$T/dom" || fail "flame graph check"
run_chromium --screenshot="$ARTIFACTS/flamegraph.png" >/dev/null ||
	{ tail "$T/chromium.log"; fail "chromium --screenshot"; }
[ -s "$ARTIFACTS/flamegraph.png" ] || fail "no screenshot"
cp "$T/fg.svg" "$ARTIFACTS/flamegraph.svg"
ok "flame graph opened in Chromium, screenshot $ARTIFACTS/flamegraph.png"

# one event type and a time range: the events' own stacks
ha report flamegraph --event kmem/kmalloc --since 0 >"$T/fg2.svg" || fail "flamegraph --event"
ha report events --event kmalloc --since 0 --format perf-script >"$T/ps2" || fail "perf-script --event"
n=$(grep -c ' kmem:kmalloc: ' "$T/ps2")
[ "$n" = 10000 ] || fail "--event kmalloc: $n samples, want 10000"
grep -q 'data-total="10000"' "$T/fg2.svg" || fail "flamegraph --event: total"
ha report flamegraph --event nosuch/event --since 0 >"$T/fg3.svg" || fail "flamegraph, no event"
grep -q 'data-total="0"' "$T/fg3.svg" || fail "flamegraph of no event"
ok "perf-script and flame graphs"

# a boot of many distinct stacks (16000, 37000 frames at 0.1 px): the SVG keeps the
# widest 8000 frames or fewer (data-min-count) and Chromium still runs its script
# over every frame drawn
start_daemon --listen "$T/sock2" --domain-name big
"$SYNTH_GUEST" --connect "$T/sock2" --events 200000 --cpus 4 --epochs 4 --stacks 4000 \
	--seed 4 -q >/dev/null || fail "big guest"
wait_for daemon_says "closed the connection" || fail "no disconnect (big)"
stop_daemon
hb() { "$HOST_AGENT" "$@" --state-dir "$T/state" --domain-name big; }
hb report folded >"$T/bfolded" || fail "folded (big)"
hb report flamegraph >"$T/fg.svg" || fail "flamegraph (big)"
run_chromium --dump-dom >"$T/bdom" || { tail "$T/chromium.log"; fail "chromium (big)"; }
python3 "$PERFCHECK" flamegraph "$T/fg.svg" "$T/bfolded" "$T/bdom" >"$T/bcheck" ||
	{ cat "$T/bcheck"; fail "flame graph check (big)"; }
cat "$T/bcheck"
grep -q 'data-min-count="1"' "$T/fg.svg" && fail "big boot: nothing left out"
ok "a flame graph of 16000 stacks: at most 8000 frames, read by Chromium"
