#!/bin/bash
# The guest-kernel series in kernel style, checked as a maintainer would, with the
# scripts of the kernel it applies to (Debian's linux-source-6.1 tarball):
#   - scripts/checkpatch.pl --strict --no-tree on each patch reports exactly the
#     findings listed (and explained) in checkpatch.expected: a new one fails, and so
#     does a listed one that went away (the list is kept true);
#   - scripts/kernel-doc -none on every C file and header the series touches reports
#     no warning that the unpatched tree does not (line numbers left out: the
#     series moves code).
# Usage: t-kernel-series.sh PATCHES-DIR checkpatch.expected
# Environment: LINUX_SOURCE_TARBALL, as for guest-kernel/build-kernel.
set -euo pipefail
patches=$(realpath "$1") expected=$(realpath "$2")
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
[ -r "$tarball" ] || { echo "not readable: $tarball (Debian package linux-source-6.1)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# The series as build-kernel applies it: the patches `series` names, in its order.
series=()
while read -r p; do
	case "$p" in ''|'#'*) continue ;; esac
	[ -f "$patches/$p" ] || { echo "series names $p, which does not exist"; exit 1; }
	series+=("$patches/$p")
done <"$patches/series"
[ "${#series[@]}" -gt 0 ] || { echo "no patches in $patches/series"; exit 1; }

# What the series touches; only these and scripts/ are unpacked.
touched=$(grep -h '^diff --git a/' "${series[@]}" | awk '{ print substr($3, 3) }' | sort -u)
top=$(tar -tJf "$tarball" 2>/dev/null | head -1 | cut -d/ -f1) || true
[ -n "$top" ] || { echo "cannot list $tarball"; exit 1; }
members=("$top/scripts")
for f in $touched; do members+=("$top/$f"); done
# Files the series creates are not in the tarball: tar names them and exits 2.
tar -C "$T" -xJf "$tarball" "${members[@]}" 2>"$T/tar.err" || true
src=$T/$top
for f in scripts/checkpatch.pl scripts/kernel-doc; do
	[ -f "$src/$f" ] || { echo "$tarball has no $f"; cat "$T/tar.err"; exit 1; }
done

kdoc() {	# kdoc OUT: kernel-doc warnings of the touched C files and headers
	(cd "$src" && for f in $touched; do
		case $f in *.c|*.h) [ ! -f "$f" ] || perl scripts/kernel-doc -none "$f" 2>&1 ;; esac
	done) | sed -E 's/^([^:]+):[0-9]+:/\1:/' | sort >"$1"
}

status=0
kdoc "$T/kdoc.before"
for p in "${series[@]}"; do
	patch -d "$src" -p1 -N -s --no-backup-if-mismatch <"$p" >"$T/patch.out" 2>&1 || {
		echo "not ok: $(basename "$p") does not apply"; cat "$T/patch.out"; exit 1; }
done
kdoc "$T/kdoc.after"
new=$(comm -13 "$T/kdoc.before" "$T/kdoc.after")
if [ -n "$new" ]; then
	echo "not ok: kernel-doc warnings the series adds:"
	echo "$new" | sed 's/^/  /'
	status=1
else
	echo "ok: kernel-doc: no new warning in $(echo "$touched" | grep -c '\.[ch]$') C files and headers ($(wc -l <"$T/kdoc.before") of 6.1's own, before and after)"
fi

# Each patch checked from a copy in $T: given a path that git tracks in the
# current directory's work tree, checkpatch reads it as a source file, not a patch.
for p in "${series[@]}"; do
	n=$(basename "$p" | cut -c1-4)
	cp "$p" "$T/$n.patch"
	(cd "$T" && perl "$src/scripts/checkpatch.pl" --strict --no-tree --no-color \
		"$n.patch" 2>&1 || true) | grep -E '^(ERROR|WARNING|CHECK):' |
		sed "s/^/$n /" >>"$T/checkpatch.found" || true
done
touch "$T/checkpatch.found"
grep -Ev '^[[:space:]]*(#|$)' "$expected" | sort >"$T/checkpatch.want"
sort -o "$T/checkpatch.found" "$T/checkpatch.found"
if ! diff -u "$T/checkpatch.want" "$T/checkpatch.found" >"$T/checkpatch.diff"; then
	echo "not ok: checkpatch's findings differ from $(basename "$expected") (+ new, - gone):"
	sed -n '3,$p' "$T/checkpatch.diff" | grep -E '^[+-]' | sed 's/^/  /'
	status=1
else
	echo "ok: checkpatch --strict: ${#series[@]} patches, only the $(wc -l <"$T/checkpatch.want") listed findings"
fi
exit "$status"
