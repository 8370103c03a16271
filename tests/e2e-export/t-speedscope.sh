# report events --format perf-script read by speedscope's own importer (the npm
# package, .ci/install-deps), in headless Chromium: speedscope-load.js feeds it the
# file and takes what speedscope's exporter writes; speedcheck.py compares that with
# every sample of the file. A synthetic boot: 2 epochs, deep stacks as full stacks,
# events with and without stacks, 50 tasks.
. "$1"
SPEEDCHECK=$2
LOADER=$3
: "${CHROMIUM:?}" "${SPEEDSCOPE:?}" "${ARTIFACTS:?}"
command -v "$CHROMIUM" >/dev/null || fail "no chromium ($CHROMIUM): run .ci/install-deps"
[ -f "$SPEEDSCOPE/index.html" ] || fail "no speedscope in $SPEEDSCOPE: run .ci/install-deps"
start_daemon --listen "$T/sock" --domain-name vm
"$SYNTH_GUEST" --connect "$T/sock" --events 10000 --epochs 2 --stacks 60 --seed 9 -q \
	>/dev/null || fail "guest"
wait_for daemon_says "closed the connection" || fail "no disconnect"
stop_daemon
"$HOST_AGENT" report events --format perf-script --state-dir "$T/state" --domain-name vm \
	>"$T/boot.perf-script.txt" || fail "perf-script"

# speedscope's #localProfilePath loads a script that hands it the file in base64
{
	printf 'var SS_NAME = "boot.perf-script.txt", SS_B64 = "%s";\n' \
		"$(base64 -w0 "$T/boot.perf-script.txt")"
	cat "$LOADER"
} >"$T/load.js"
"$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$T/chromium" \
	--allow-file-access-from-files --virtual-time-budget=60000 --dump-dom \
	"file://$SPEEDSCOPE/index.html#localProfilePath=$T/load.js" >"$T/dom" \
	2>>"$T/chromium.log" || { tail "$T/chromium.log"; fail "chromium --dump-dom"; }
python3 "$SPEEDCHECK" "$T/boot.perf-script.txt" "$T/dom" || fail "speedscope's reading"

# the check catches a sample speedscope would not have read
python3 -c 'import sys; b = open(sys.argv[1]).read().split("\n\n"); del b[len(b) // 2]
open(sys.argv[2], "w").write("\n\n".join(b))' "$T/boot.perf-script.txt" "$T/less.txt"
python3 "$SPEEDCHECK" "$T/less.txt" "$T/dom" >/dev/null && fail "speedcheck missed a sample"
ok "speedscope read every perf-script sample"
