#!/bin/bash
# tests/package/t-install.sh SRCDIR: the meson options and `meson install`.
# -Dtests=false -Dguest_agent=false configures with no clang on PATH and links nothing
# static; -Dtests=false then builds and installs (DESTDIR) the programs, the man pages,
# the units and the completion where the README says, the guest agent never into a
# bindir.
set -euo pipefail
top=$1

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

W=$(mktemp -d -t install-test.XXXXXX)
trap 'rm -rf "$W"' EXIT

# A PATH like this one without clang or any LLVM tool.
mkdir "$W/bin"
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
	for f in "$d"/*; do
		b=${f##*/}
		case $b in *clang* | llvm*) continue ;; esac
		[ -x "$f" ] && [ ! -e "$W/bin/$b" ] && ln -s "$f" "$W/bin/$b"
	done
done
! PATH=$W/bin command -v clang >/dev/null || fail "clang still on the test's PATH"
PATH=$W/bin meson setup "$W/min" "$top" -Dtests=false -Dguest_agent=false \
	>"$W/min.log" 2>&1 || { cat "$W/min.log"; fail "meson setup -Dtests=false without clang"; }
! grep -q -- '-static' "$W/min/build.ninja" || fail "-Dguest_agent=false still links static"
! grep -q 'clang' "$W/min/build.ninja" || fail "-Dtests=false still uses clang"
! grep -q 'tests/' "$W/min/build.ninja" || fail "-Dtests=false still builds something of tests/"
ok "-Dtests=false -Dguest_agent=false: configured without clang, nothing static, nothing of tests/"

meson setup "$W/b" "$top" -Dtests=false --prefix=/usr --buildtype=release \
	>"$W/setup.log" 2>&1 || { cat "$W/setup.log"; fail "meson setup -Dtests=false"; }
meson compile -C "$W/b" -j 2 >"$W/compile.log" 2>&1 ||
	{ tail -n 30 "$W/compile.log"; fail "meson compile"; }
D=$W/dest
DESTDIR=$D meson install -C "$W/b" --quiet >"$W/install.log" 2>&1 ||
	{ cat "$W/install.log"; fail "meson install"; }
(cd "$D" && find . -type f | sort) >"$W/files"
multiarch=$(cd "$W/b" && meson introspect --buildoptions | python3 -c '
import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"][0])')
for f in ./usr/bin/host-agent ./usr/libexec/virtio-stackmap/stackmap-guestd \
	./usr/share/man/man8/host-agent.8 ./usr/share/man/man8/stackmap-guestd.8 \
	./usr/lib/systemd/system/host-agent@.service \
	./usr/lib/systemd/system/host-agent-fleet.service \
	./usr/lib/systemd/system/host-agent-libvirt.service \
	./usr/lib/systemd/system/stackmap-guestd.service \
	./usr/share/bash-completion/completions/host-agent \
	./usr/share/virtio-stackmap/stackmap-channel.xml \
	"./usr/$multiarch/traceevent/plugins/plugin_stackmap.so"; do
	grep -qxF "$f" "$W/files" || { cat "$W/files"; fail "meson install lacks $f"; }
done
! grep -E '/s?bin/stackmap-guestd$' "$W/files" || fail "stackmap-guestd installed into a bindir"
ok "meson install: $(wc -l <"$W/files") files where the README says"

"$D/usr/bin/host-agent" --version | grep -q '^host-agent ' || fail "installed host-agent --version"
! readelf -d "$D/usr/libexec/virtio-stackmap/stackmap-guestd" | grep -q NEEDED ||
	fail "the installed stackmap-guestd is not static"
for unit in host-agent@ host-agent-fleet host-agent-libvirt; do
	grep -q '^ExecStart=/usr/bin/host-agent ' "$D/usr/lib/systemd/system/$unit.service" ||
		fail "$unit.service: ExecStart"
done
grep -q '^ExecStart=/usr/libexec/virtio-stackmap/stackmap-guestd ' \
	"$D/usr/lib/systemd/system/stackmap-guestd.service" || fail "stackmap-guestd.service: ExecStart"
grep -q '^ExecStart=.* --domain %i ' "$D/usr/lib/systemd/system/host-agent@.service" ||
	fail "host-agent@.service: --domain %i"
grep -q '^ExecStart=/usr/bin/host-agent --all-domains ' \
	"$D/usr/lib/systemd/system/host-agent-libvirt.service" ||
	fail "host-agent-libvirt.service: --all-domains"
grep -q '^EnvironmentFile=-/etc/default/host-agent$' \
	"$D/usr/lib/systemd/system/host-agent@.service" || fail "host-agent@.service: /etc/default"
ok "the units name the installed programs"

for page in host-agent stackmap-guestd; do
	MANWIDTH=80 man -l "$D/usr/share/man/man8/$page.8" 2>"$W/man.err" >"$W/$page.txt" ||
		fail "man -l $page.8"
	[ ! -s "$W/man.err" ] || { cat "$W/man.err"; fail "man $page.8 warns"; }
	grep -q "^NAME" "$W/$page.txt" && grep -q "^EXIT STATUS" "$W/$page.txt" ||
		fail "$page.8 lacks NAME or EXIT STATUS"
	grep -q "$page - " "$W/$page.txt" || fail "$page.8: no NAME line"
done
grep -q '/usr/share/virtio-stackmap/stackmap-channel.xml' "$W/host-agent.txt" ||
	fail "host-agent.8 does not name the installed channel XML"
grep -q '/usr/share/bash-completion/completions/host-agent' "$W/host-agent.txt" ||
	fail "host-agent.8 does not name the installed completion"
ok "man pages render (man -l), with the installed paths"

# Every long option host-agent --help and each command's --help list is in its man
# page and its completion.
opts=$(for c in "" report export attach detach ship; do
	"$D/usr/bin/host-agent" $c --help || exit 1
done | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+' | grep -oE -- '--[a-z-]+' | grep -v '^--help' |
	sort -u) || fail "host-agent --help"
[ "$(wc -w <<<"$opts")" -ge 20 ] || fail "host-agent --help lists too few options: $opts"
for o in $opts; do
	grep -qE -- "(^|[^a-z-])$o([^a-z-]|\$)" "$W/host-agent.txt" || fail "host-agent.8 lacks $o"
	grep -qE -- "(^|[[:space:]'])$o([[:space:]']|\$)" "$D/usr/share/bash-completion/completions/host-agent" ||
		fail "the bash completion lacks $o"
done
ok "all $(wc -w <<<"$opts") options of host-agent [COMMAND] --help in host-agent(8) and the completion"
