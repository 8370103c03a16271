# tests/libvirt/lib.sh: a private libvirtd for the libvirt tests (sourced).
#
# Starts virtlogd (unless one runs) and a libvirtd of its own with its sockets in a
# private directory, builds the guest kernel (cached) and an initramfs with
# stackmap-guestd and the lv scenario, and defines 1-vCPU TCG domains booting them
# (libvirt passes plain -accel tcg, multi-threaded TCG, which is not safe for ftrace
# on an SMP guest). Everything is undone at exit. Skips (77) when not root, when the
# libvirt tools or the libvirt-qemu user are missing, or when another libvirtd runs
# (it would share /run/libvirt/qemu with ours).
#
# Environment from meson: HOST_AGENT, GUESTD, TOP (the source tree).
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; lv_dump; exit 1; }
note() { echo "# $*"; }

# NO_LIBVIRT=1: plain QEMU only (t-qmp.sh).
for t in qemu-system-x86_64 cpio gzip python3; do
	command -v "$t" > /dev/null || skip "$t not installed"
done
if [ -z "${NO_LIBVIRT:-}" ]; then
	[ "$(id -u)" = 0 ] || skip "needs root (libvirtd qemu:///system)"
	for t in libvirtd virtlogd virsh; do
		command -v "$t" > /dev/null || skip "$t not installed"
	done
	id libvirt-qemu > /dev/null 2>&1 ||
		skip "no libvirt-qemu user (libvirt-daemon-system makes it, or useradd -r)"
	pgrep -x libvirtd > /dev/null && skip "another libvirtd is running"
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/stackmap-lv.XXXXXX")
chmod 0755 "$W"		# the qemu process (libvirt-qemu) reads the kernel and initrd
URI="qemu:///system?socket=$W/sock/libvirt-sock"
STATE=$W/state
DOMAINS=()
AGENTS=()
started_virtlogd=0
mkdir -p "$W/sock" "$STATE"
[ -n "${NO_LIBVIRT:-}" ] || mkdir -p /var/log/libvirt /run/libvirt /var/lib/libvirt

v() { virsh -q -c "$URI" "$@"; }

lv_dump() {
	local d
	for d in "${DOMAINS[@]+"${DOMAINS[@]}"}"; do
		echo "--- console of $d" >&2
		tail -n 30 "$W/console-$d.log" >&2 2> /dev/null || true
	done
	for d in "$W"/agent-*.log; do
		[ -f "$d" ] || continue
		echo "--- $d" >&2
		tail -n 30 "$d" >&2
	done
}

lv_cleanup() {
	local d p
	for p in "${AGENTS[@]+"${AGENTS[@]}"}"; do kill "$p" 2> /dev/null || true; done
	for d in "${DOMAINS[@]+"${DOMAINS[@]}"}"; do
		v destroy "$d" > /dev/null 2>&1 || true
		v undefine "$d" > /dev/null 2>&1 || true
	done
	# Wait for the daemons to be gone: the next test checks that none runs.
	if [ -f "$W/libvirtd.pid" ]; then
		p=$(cat "$W/libvirtd.pid")
		kill "$p" 2> /dev/null || true
		wait_for 30 sh -c "! kill -0 $p" || true
	fi
	if [ "$started_virtlogd" = 1 ] && [ -f "$W/virtlogd.pid" ]; then
		p=$(cat "$W/virtlogd.pid")
		kill "$p" 2> /dev/null || true
		wait_for 30 sh -c "! kill -0 $p" || true
	fi
	rm -rf "$W"
}
trap lv_cleanup EXIT

# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds.
wait_for() {
	local n=$(($1 * 5)); shift
	while [ "$n" -gt 0 ]; do
		"$@" > /dev/null 2>&1 && return 0
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}

lv_start_daemons() {
	if ! pgrep -x virtlogd > /dev/null; then
		virtlogd -d -p "$W/virtlogd.pid"
		started_virtlogd=1
	fi
	cat > "$W/libvirtd.conf" <<CONF
unix_sock_dir = "$W/sock"
unix_sock_group = "root"
unix_sock_rw_perms = "0770"
auth_unix_rw = "none"
auth_unix_ro = "none"
CONF
	libvirtd -d -f "$W/libvirtd.conf" -p "$W/libvirtd.pid"
	wait_for 30 virsh -q -c "$URI" version || fail "libvirtd did not come up"
	note "libvirtd up: $URI"
}

# lv_guest: kernel and initrd in $W (world-readable).
lv_guest() {
	local kout
	kout=$("$TOP/guest-kernel/build-kernel" | tail -n 1)
	install -m 0644 "$kout/bzImage" "$W/bzImage"
	VMLINUX=$kout/vmlinux
	"$TOP/guest-kernel/initramfs/build-initramfs" "$kout" "$W/base.cpio.gz" > /dev/null
	mkdir -p "$W/extra/scenarios"
	install -m 0755 "$GUESTD" "$W/extra/stackmap-guestd"
	install -m 0755 "$TOP/tests/libvirt/lv-scenario.sh" "$W/extra/scenarios/lv.sh"
	(cd "$W/extra" && find . | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --quiet) |
		gzip -1 > "$W/extra.cpio.gz"
	cat "$W/base.cpio.gz" "$W/extra.cpio.gz" > "$W/initrd.cpio.gz"
	chmod 0644 "$W/initrd.cpio.gz"
}

# lv_define NAME MODE [channel] [nocontroller]: define (not start) a domain.
# LV_CONTROLLER replaces its virtio-serial controller, LV_DEVICES is added to <devices>,
# LV_ON_CRASH replaces <on_crash> (default preserve). VMCOREINFO is on: the guest's
# fw_cfg driver hands it to QEMU, and a memory dump carries it (the post-mortem).
lv_define() {
	local name=$1 mode=$2 channel=
	local controller=${LV_CONTROLLER:-"<controller type='virtio-serial' index='0'/>"}
	shift 2
	for a in "$@"; do
		case "$a" in
		channel) channel="<channel type='unix'><source mode='bind'/><target type='virtio' name='org.stackmap.0'/></channel>" ;;
		nocontroller) controller= ;;
		esac
	done
	cat > "$W/$name.xml" <<XML
<domain type='qemu'>
  <name>$name</name>
  <memory unit='MiB'>512</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$W/bzImage</kernel>
    <initrd>$W/initrd.cpio.gz</initrd>
    <cmdline>console=ttyS0 pci=noacpi trace_clock=global stackmap.scenario=lv stackmap.lv=$mode stackmap.lv_seconds=6 trace_event=kmem:kmalloc,kmem:kmem_cache_alloc trace_options=stackmap,stacktrace trace_buf_size=2M</cmdline>
  </os>
  <features><acpi/><vmcoreinfo state='on'/></features>   <!-- acpi: the guest finds the ISA pvpanic through it -->
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>${LV_ON_CRASH:-preserve}</on_crash>
  <devices>
    <emulator>$(command -v qemu-system-x86_64)</emulator>
    $controller
    $channel
    ${LV_DEVICES:-}
    <serial type='file'><source path='$W/console-$name.log'/><target port='0'/></serial>
    <panic model='isa'/>
    <video><model type='none'/></video>
    <memballoon model='none'/>
  </devices>
</domain>
XML
	v define "$W/$name.xml" > /dev/null || fail "define $name"
	DOMAINS+=("$name")
}

# lv_agent NAME [args...]: start host-agent --domain NAME in the background.
lv_agent() {
	local name=$1; shift
	"$HOST_AGENT" --domain "$name" --connect "$URI" --state-dir "$STATE" "$@" \
		> "$W/agent-$name.log" 2>&1 &
	AGENTS+=("$!")
	eval "AGENT_$(echo "$name" | tr -c 'A-Za-z0-9\n' _)=$!"
}

report() {
	"$HOST_AGENT" report "$@" --state-dir "$STATE"
}

# boot_ended NAME: the newest boot's "ended" (running, clean, crashed, disconnected).
boot_ended() {
	report boots --domain "$1" --json 2> /dev/null |
		python3 -c 'import json,sys; b=json.load(sys.stdin); print(b[-1]["ended"] if b else "none")' 2> /dev/null
}
is_ended() { [ "$(boot_ended "$1")" = "$2" ]; }
events_stored() {
	local n
	n=$(report boots --domain "$1" --json 2> /dev/null |
		python3 -c 'import json,sys; b=json.load(sys.stdin); print(b[-1]["events"] if b else 0)' 2> /dev/null)
	[ "${n:-0}" -gt 0 ]
}
console_has() { grep -aq "$2" "$W/console-$1.log" 2> /dev/null; }

# lv_elements NAME TAG [virsh dumpxml options]: the domain's <TAG> elements as libvirt
# writes them, one per line, except the stackmap channel (to compare before and after).
lv_elements() {
	local name=$1 tag=$2; shift 2
	v dumpxml "$@" "$name" | python3 -c '
import re, sys
tag = sys.argv[1]
xml = sys.stdin.read()
for m in re.finditer(r"<%s\b[^>]*?(/>|>.*?</%s>)" % (tag, tag), xml, re.S):
    if "org.stackmap.0" not in m.group(0):
        print(" ".join(m.group(0).split()))
' "$tag"
}

# asan_clean FILE: no sanitizer report in FILE.
asan_clean() {
	! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error:" "$1"
}
