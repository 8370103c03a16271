#!/bin/bash
# tests/package/t-deb.sh SRCDIR SYNTH_GUEST: the Debian packages, built from a copy of
# the tree with dpkg-source and dpkg-buildpackage, checked by lintian, then installed with their
# maintainer scripts by dpkg into a private root: an overlay over this system's own
# root, in a mount namespace of the test's own, so nothing of this system changes and
# the dependencies are the installed ones (no network, no debootstrap). In that root
# the packaged host-agent stores a synthetic guest's stream and reports it exactly as
# the guest had it. Needs root (the overlay mount); a missing tool fails the test.
set -euo pipefail
top=$1 synth=$2

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

[ "$(id -u)" = 0 ] || fail "needs root (an overlay mount for the private root)"
for tool in dpkg-buildpackage dh lintian scdoc meson unshare chroot git; do
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
	umount -R "$W/root" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $W"; else rm -rf "$W"; fi
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

# The private root.
R=$W/root
mkdir -p "$R" "$W/upper" "$W/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$W/upper,workdir=$W/work" "$R"
mount -t proc proc "$R/proc"
mount --bind /dev "$R/dev"
mount -t tmpfs tmpfs "$R/tmp"
mount -t tmpfs tmpfs "$R/run"
# A host whose /usr/bin already has a host-agent would hide a package that lacks one.
[ ! -e "$R/usr/bin/host-agent" ] || rm -f "$W/upper/usr/bin/host-agent" ||
	fail "a host-agent is installed on this system"
dpkg --root="$R" -i "$host_deb" "$guest_deb" >"$W/dpkg.log" 2>&1 ||
	{ cat "$W/dpkg.log"; fail "dpkg --root -i"; }
for p in virtio-stackmap-host virtio-stackmap-guest; do
	st=$(dpkg --root="$R" -s "$p" | sed -n 's/^Status: //p')
	[ "$st" = "install ok installed" ] || fail "$p: $st"
done
ok "dpkg --root -i: both packages installed and configured"

v=$(chroot "$R" host-agent --version) || fail "host-agent --version"
[[ $v == "host-agent $ver "* ]] || fail "host-agent --version: $v"
ok "$v"
chroot "$R" /usr/sbin/stackmap-guestd --help >/dev/null || fail "stackmap-guestd --help"
! readelf -d "$R/usr/sbin/stackmap-guestd" 2>/dev/null | grep -q NEEDED ||
	fail "stackmap-guestd is not static"
grep -qx 'ExecStart=/usr/sbin/stackmap-guestd $STACKMAP_GUESTD_OPTS' \
	"$R/lib/systemd/system/stackmap-guestd.service" || fail "stackmap-guestd.service path"
[ -L "$R/etc/systemd/system/sysinit.target.wants/stackmap-guestd.service" ] ||
	fail "postinst did not enable stackmap-guestd.service"
[ ! -e "$R/etc/systemd/system/multi-user.target.wants/host-agent-fleet.service" ] ||
	fail "postinst enabled the fleet unit"
ok "stackmap-guestd: static, unit at the installed path, enabled for the next boot"

# The units as systemd reads them, with the installed binaries.
mkdir "$R/tmp/units"
cp "$R/lib/systemd/system/host-agent@.service" "$R/tmp/units/host-agent@vm1.service"
cp "$R/lib/systemd/system/host-agent-fleet.service" \
	"$R/lib/systemd/system/stackmap-guestd.service" "$R/tmp/units/"
chroot "$R" sh -c 'systemd-analyze verify /tmp/units/*.service' >"$W/verify.log" 2>&1 || { cat "$W/verify.log"; fail "systemd-analyze verify"; }
! grep -v '^$' "$W/verify.log" | grep -q . || { cat "$W/verify.log"; fail "systemd-analyze verify said something"; }
ok "systemd-analyze verify: the three units"

# Bash completion, as bash runs it.
words=$(bash -c '. "$1"; COMP_WORDS=(host-agent rep); COMP_CWORD=1; _host_agent
	printf "%s " "${COMPREPLY[@]}"; COMP_WORDS=(host-agent report f); COMP_CWORD=2
	_host_agent; printf "%s " "${COMPREPLY[@]}"; COMP_WORDS=(host-agent --dat); COMP_CWORD=1
	_host_agent; printf "%s" "${COMPREPLY[@]}"' _ \
	"$R/usr/share/bash-completion/completions/host-agent")
[ "$words" = "report folded flamegraph --dat-version" ] || fail "completion: '$words'"
ok "bash completion: commands, report verbs, options"

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
dpkg --root="$R" --purge virtio-stackmap-host virtio-stackmap-guest >"$W/dpkg.log" 2>&1 ||
	{ cat "$W/dpkg.log"; fail "dpkg --purge"; }
[ ! -e "$R/usr/bin/host-agent" ] && [ ! -e "$R/usr/sbin/stackmap-guestd" ] ||
	fail "files left after purge"
[ ! -e "$R/etc/systemd/system/sysinit.target.wants/stackmap-guestd.service" ] ||
	fail "purge left the unit enabled"
ok "dpkg --purge: removed, unit disabled"
