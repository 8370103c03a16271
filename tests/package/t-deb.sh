#!/bin/bash
# tests/package/t-deb.sh SRCDIR SYNTH_GUEST: the Debian packages, built from a copy of
# the tree with dpkg-source and dpkg-buildpackage, checked by lintian, then installed
# with their maintainer scripts into a fresh Debian root: debootstrap's minbase of this
# system's release, from the Debian mirror apt uses here, plus only what the host
# package's Depends names (so a library it lacks is missing there), systemd (for
# `systemd-analyze verify`), man-db and bash-completion. The root's own dpkg installs
# both packages; there the packaged host-agent prints --version and --help, its man
# page and completion load as a user's would, its units verify, it stores a synthetic
# guest's stream and reports it exactly as the guest had it; then both are purged.
# Nothing of this system changes (the root's mounts live in a mount namespace of the
# test's own). Needs root and the Debian mirror; debootstrap keeps the packages it
# downloads in ~/.cache/virtio-stackmap/debootstrap-CODENAME. A missing tool fails the
# test.
set -euo pipefail
top=$1 synth=$2

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, mounts)"
for tool in dpkg-buildpackage dh lintian scdoc meson unshare chroot git debootstrap; do
	command -v "$tool" >/dev/null || fail "$tool missing (.ci/install-deps installs it)"
done
[ -x "$synth" ] || fail "no synth-guest at $synth"
# Everything else runs in a mount namespace of its own: the mounts go with it.
if [ -z "${T_DEB_NS:-}" ]; then
	exec unshare --mount --propagation private env T_DEB_NS=1 bash "$0" "$@"
fi

W=$(mktemp -d -t pkg-test.XXXXXX)
DAEMON_PID=
cleanup() {
	[ -z "$DAEMON_PID" ] || kill -9 "$DAEMON_PID" 2>/dev/null || true
	umount -R "$W/root/proc" "$W/root/dev" "$W/root/tmp" "$W/root/run" 2>/dev/null || true
	# --one-file-system: never into a mount that is still there (the bound /dev)
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $W"; else rm -rf --one-file-system "$W"; fi
}
trap cleanup EXIT

# The source package: the tree's files as git knows them (tracked and new), without
# build directories.
mkdir "$W/src"
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 || fail "$top is not a git checkout"
(cd "$top" && git ls-files -co --exclude-standard -z |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null --no-recursion -T - -cf -) | tar -C "$W/src" -xf -
[ -f "$W/src/debian/control" ] || fail "no debian/control in the copy"

(cd "$W/src" && dpkg-source -b .) >"$W/source.log" 2>&1 || { cat "$W/source.log"; fail "dpkg-source -b"; }
t0=$(date +%s)
if ! (cd "$W/src" && DEB_BUILD_OPTIONS="parallel=2" dpkg-buildpackage -us -uc -b) \
	>"$W/build.log" 2>&1; then
	tail -n 40 "$W/build.log"
	fail "dpkg-buildpackage"
fi
ver=$(cd "$W/src" && dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
host_deb=$W/virtio-stackmap-host_${ver}_$arch.deb
guest_deb=$W/virtio-stackmap-guest_${ver}_$arch.deb
[ -f "$host_deb" ] && [ -f "$guest_deb" ] || { ls "$W"; fail "the two .debs were not built"; }
ok "dpkg-buildpackage -us -uc -b: both .debs in $(($(date +%s) - t0)) s"

# lintian: no error and no warning; info and pedantic tags are printed for the record
# (debian/source/lintian-overrides holds the justified ones).
if ! lintian --allow-root --fail-on error,warning -I "$W"/virtio-stackmap_"${ver}".dsc \
	"$W"/virtio-stackmap_"${ver}"_"$arch".changes >"$W/lintian.log" 2>&1; then
	cat "$W/lintian.log"
	fail "lintian"
fi
if [ -s "$W/lintian.log" ]; then echo "--- lintian (info)"; cat "$W/lintian.log"; fi
ok "lintian, source and binary packages: no error, no warning"

# What each package holds: the guest agent never in the host package nor in a bindir.
dpkg-deb -c "$host_deb" | awk '{print $6}' >"$W/host.files"
dpkg-deb -c "$guest_deb" | awk '{print $6}' >"$W/guest.files"
for f in ./usr/bin/host-agent ./usr/share/man/man8/host-agent.8.gz \
	./lib/systemd/system/host-agent@.service ./lib/systemd/system/host-agent-fleet.service \
	./lib/systemd/system/host-agent-libvirt.service \
	./usr/share/bash-completion/completions/host-agent \
	./usr/share/virtio-stackmap/stackmap-channel.xml; do
	grep -qxF "$f" "$W/host.files" || fail "host package lacks $f"
done
grep -q '/traceevent/plugins/plugin_stackmap.so$' "$W/host.files" ||
	fail "host package lacks the libtraceevent plugin"
! grep -q stackmap-guestd "$W/host.files" || fail "the host package has stackmap-guestd"
for f in ./usr/sbin/stackmap-guestd ./usr/share/man/man8/stackmap-guestd.8.gz \
	./lib/systemd/system/stackmap-guestd.service; do
	grep -qxF "$f" "$W/guest.files" || fail "guest package lacks $f"
done
ok "package contents"

# The fresh root: this system's release from the Debian mirror apt has for it, minbase
# plus the host package's dependencies (the first of each alternative), systemd, man-db
# and bash-completion.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || fail "no VERSION_CODENAME in /etc/os-release"
mirror=$(apt-get indextargets --format '$(CODENAME) $(ORIGIN) $(REPO_URI)' \
	'Identifier: Packages' | awk -v c="$codename" '$1 == c && $2 == "Debian" {print $3; exit}')
[ -n "$mirror" ] || fail "apt has no Debian mirror for $codename (apt-get update?)"
deps=$(dpkg-deb -f "$host_deb" Depends | sed 's/([^)]*)//g; s/|[^,]*//g; s/[[:space:]]//g')
[ -n "$deps" ] || fail "the host package has no Depends"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/virtio-stackmap/debootstrap-$codename
mkdir -p "$cache"
R=$W/root
t0=$(date +%s)
debootstrap --variant=minbase --cache-dir="$cache" \
	--include="$deps,systemd,man-db,bash-completion" "$codename" "$R" "$mirror" \
	>"$W/debootstrap.log" 2>&1 || { tail -n 30 "$W/debootstrap.log"; fail "debootstrap"; }
for l in $(tr , ' ' <<<"$deps"); do
	chroot "$R" dpkg-query -W "$l" >/dev/null 2>&1 || fail "the fresh root lacks $l"
done
[ ! -e "$R/usr/bin/host-agent" ] || fail "the fresh root has a host-agent already"
ok "a fresh $codename root (debootstrap minbase + the $(wc -w <<<"$(tr , ' ' <<<"$deps")") Depends, systemd, man-db) in $(($(date +%s) - t0)) s"

mount -t proc proc "$R/proc"
mount --bind /dev "$R/dev"
mount -t tmpfs tmpfs "$R/tmp"
mount -t tmpfs tmpfs "$R/run"
mkdir "$R/tmp/debs"
cp "$host_deb" "$guest_deb" "$R/tmp/debs/"
chroot "$R" dpkg -i "/tmp/debs/${host_deb##*/}" "/tmp/debs/${guest_deb##*/}" \
	>"$W/dpkg.log" 2>&1 || { cat "$W/dpkg.log"; fail "dpkg -i in the fresh root"; }
for p in virtio-stackmap-host virtio-stackmap-guest; do
	st=$(chroot "$R" dpkg -s "$p" | sed -n 's/^Status: //p')
	[ "$st" = "install ok installed" ] || fail "$p: $st"
done
# Every library the packaged programs load is in the root, from its packages.
! chroot "$R" ldd /usr/bin/host-agent | grep 'not found' ||
	fail "host-agent needs a library the fresh root lacks"
ok "dpkg -i in the fresh root: both packages installed and configured"

v=$(chroot "$R" host-agent --version) || fail "host-agent --version"
[[ $v == "host-agent $ver "* ]] || fail "host-agent --version: $v"
ok "$v"
h=$(chroot "$R" host-agent report --help) || fail "host-agent report --help"
grep -q '^  host-agent report \[OPTION.*\] boots|top|events|' <<<"$h" &&
	grep -q '^Exit status: ' <<<"$h" || fail "host-agent report --help: $h"
ok "host-agent report --help: its usage line and exit status"

# The man pages, as man finds and renders them in that root.
for page in host-agent stackmap-guestd; do
	chroot "$R" env MANWIDTH=80 man 8 "$page" >"$W/$page.man" 2>"$W/man.err" ||
		{ cat "$W/man.err"; fail "man 8 $page in the fresh root"; }
	[ ! -s "$W/man.err" ] || { cat "$W/man.err"; fail "man 8 $page warns"; }
	grep -q "^ *$page - " "$W/$page.man" && grep -q '^EXIT STATUS' "$W/$page.man" ||
		fail "man 8 $page: no NAME line or EXIT STATUS"
done
ok "man 8 host-agent, man 8 stackmap-guestd: found and rendered by the root's man"

chroot "$R" /usr/sbin/stackmap-guestd --help >/dev/null || fail "stackmap-guestd --help"
! readelf -d "$R/usr/sbin/stackmap-guestd" 2>/dev/null | grep -q NEEDED ||
	fail "stackmap-guestd is not static"
grep -qx 'ExecStart=/usr/sbin/stackmap-guestd $STACKMAP_GUESTD_OPTS' \
	"$R/lib/systemd/system/stackmap-guestd.service" || fail "stackmap-guestd.service path"
[ -L "$R/etc/systemd/system/sysinit.target.wants/stackmap-guestd.service" ] ||
	fail "postinst did not enable stackmap-guestd.service"
[ ! -e "$R/etc/systemd/system/multi-user.target.wants/host-agent-fleet.service" ] ||
	fail "postinst enabled the fleet unit"
[ ! -e "$R/etc/systemd/system/multi-user.target.wants/host-agent-libvirt.service" ] ||
	fail "postinst enabled the libvirt unit"
ok "stackmap-guestd: static, unit at the installed path, enabled for the next boot"

# The units as systemd reads them, with the installed binaries.
mkdir "$R/tmp/units"
cp "$R/lib/systemd/system/host-agent@.service" "$R/tmp/units/host-agent@vm1.service"
cp "$R/lib/systemd/system/host-agent-fleet.service" \
	"$R/lib/systemd/system/host-agent-libvirt.service" \
	"$R/lib/systemd/system/stackmap-guestd.service" "$R/tmp/units/"
chroot "$R" sh -c 'systemd-analyze verify /tmp/units/*.service' >"$W/verify.log" 2>&1 || { cat "$W/verify.log"; fail "systemd-analyze verify"; }
! grep -v '^$' "$W/verify.log" | grep -q . || { cat "$W/verify.log"; fail "systemd-analyze verify said something"; }
ok "systemd-analyze verify: the four units"

# Bash completion, found as bash-completion finds it on the first TAB (its loader, by
# the command's name) and run as bash runs it, in the root's bash.
words=$(chroot "$R" bash --norc -c '. /usr/share/bash-completion/bash_completion
	__load_completion host-agent || exit 1
	complete -p host-agent | grep -q -- "-F _host_agent host-agent$" || exit 1
	COMP_WORDS=(host-agent rep); COMP_CWORD=1; _host_agent; printf "%s " "${COMPREPLY[@]}"
	COMP_WORDS=(host-agent report ""); COMP_CWORD=2; _host_agent; printf "%s " "${COMPREPLY[@]}"
	COMP_WORDS=(host-agent export --dat); COMP_CWORD=2; _host_agent; printf "%s" "${COMPREPLY[@]}"') ||
	fail "bash-completion does not load the installed completion"
[ "$words" = "report boots top events stack folded flamegraph postmortem --dat-version" ] ||
	fail "completion: '$words'"
ok "bash completion: loaded by bash-completion; commands, report verbs, an option"

# The packaged daemon stores a synthetic guest's stream; the packaged report prints it
# as the guest had it.
mkdir "$R/tmp/t"
chroot "$R" host-agent --listen /tmp/t/sock --state-dir /tmp/t/state --domain-name vm1 \
	>"$W/daemon.log" 2>&1 &
DAEMON_PID=$!
"$synth" --connect "$R/tmp/t/sock" --events 20000 --cpus 2 --stacks 200 --seed 15 \
	--expect "$W/expect" -q >"$W/guest.out" 2>&1 || { cat "$W/guest.out" "$W/daemon.log"; fail "synth-guest"; }
for _ in $(seq 300); do
	grep -q "disconnected\|closed the connection" "$W/daemon.log" && break
	sleep 0.1
done
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" || { cat "$W/daemon.log"; fail "daemon exit status"; }
DAEMON_PID=
chroot "$R" host-agent report folded --state-dir /tmp/t/state --domain-name vm1 |
	sort >"$W/got" || fail "report folded"
sort "$W/expect" >"$W/exp"
cmp -s "$W/got" "$W/exp" || { diff "$W/exp" "$W/got" | head; fail "report folded != the guest's stacks"; }
b=$(chroot "$R" host-agent report boots --json --state-dir /tmp/t/state --domain-name vm1) ||
	fail "report boots"
grep -q '"ended":"clean"' <<<"$b" && grep -q '"events":20000' <<<"$b" ||
	fail "report boots: $b"
ok "the packaged host-agent stored 20000 events; report folded and boots agree with the guest"

# Removal and purge run their scripts too.
chroot "$R" dpkg --purge virtio-stackmap-host virtio-stackmap-guest >"$W/dpkg.log" 2>&1 ||
	{ cat "$W/dpkg.log"; fail "dpkg --purge"; }
[ ! -e "$R/usr/bin/host-agent" ] && [ ! -e "$R/usr/sbin/stackmap-guestd" ] ||
	fail "files left after purge"
[ ! -e "$R/etc/systemd/system/sysinit.target.wants/stackmap-guestd.service" ] ||
	fail "purge left the unit enabled"
ok "dpkg --purge: removed, unit disabled"
