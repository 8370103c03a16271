# fuzz-page.sh FUZZER SEEDS SECONDS: a bounded libFuzzer run of a host-agent target
# from fresh seeds; fails on any crash, sanitizer report, leak, timeout or OOM.
set -eu
fuzzer=$(realpath "$1") seeds=$(realpath "$2") secs=$3
work=$(mktemp -d -t ha-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
"$seeds" "$work/corpus"
cd "$work"
exec "$fuzzer" -max_total_time="$secs" -rss_limit_mb=1024 -malloc_limit_mb=512 \
	-timeout=10 -print_final_stats=1 -artifact_prefix="$work/" corpus
