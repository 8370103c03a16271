# fuzz-page.sh FUZZER SEEDS SECONDS [LIBFUZZER-FLAG...]: a bounded libFuzzer run of a
# host-agent target from fresh seeds; fails on any crash, sanitizer report, leak (unless
# a flag says otherwise), timeout or OOM. -error_exitcode=1: libFuzzer's default, 77,
# is what meson takes for a skipped test.
set -eu
fuzzer=$(realpath "$1") seeds=$(realpath "$2") secs=$3
shift 3
work=$(mktemp -d -t ha-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
"$seeds" "$work/corpus"
cd "$work"
exec "$fuzzer" -max_total_time="$secs" -rss_limit_mb=1024 -malloc_limit_mb=512 \
	-timeout=10 -error_exitcode=1 -print_final_stats=1 -artifact_prefix="$work/" "$@" corpus
