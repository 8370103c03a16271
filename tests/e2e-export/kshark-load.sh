#!/bin/bash
# kshark-load.sh DAT PNG: open DAT in Debian's KernelShark under a private Xvfb,
# wait for its main window to carry the file's name (KernelShark titles the window
# after loading it), save a screenshot of the window to PNG, and fail when
# KernelShark's output reports a load error or the window never shows the file.
# KernelShark runs as nobody: as root it opens a modal "running with Root
# privileges" dialog first. Plugins that decline a stream without their events
# ("plugin sched_events failed to initialize": no sched_switch in the trace) are
# not load errors.
set -u
dat=$(readlink -f "$1")
png=$2
for p in Xvfb kernelshark xwininfo xwd xwdtopnm pnmtopng setpriv; do
	command -v "$p" >/dev/null || { echo "kshark-load: no $p: run .ci/install-deps"; exit 1; }
done
T=$(mktemp -d -t kshark.XXXXXX)
XPID= KPID=
cleanup() {
	[ -n "$KPID" ] && kill "$KPID" 2>/dev/null
	[ -n "$XPID" ] && kill "$XPID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
chmod 0711 "$T"
mkdir -m 0700 "$T/home" && chown 65534:65534 "$T/home"
cp "$dat" "$T/trace.dat" && chmod 0644 "$T/trace.dat"
# A display number of its own. Tests run side by side, and an Xvfb left to pick
# a number (-displayfd alone) takes no lock file and tries the busy numbers by
# binding their sockets (unlinking the socket file first, as X servers do): two
# kshark-loads side by side that way lost their display, or KernelShark its
# connection, in 3 of 56 runs. So each kshark-load holds a lock on its number for
# its whole life and takes only a number no X server has (no lock file, no
# socket); Xvfb, given the number, takes /tmp/.X<n>-lock, which X servers respect.
mkdir -p /tmp/.kshark-load && chmod 1777 /tmp/.kshark-load 2>/dev/null
disp=
for n in $(seq 90 189); do
	exec 4>"/tmp/.kshark-load/$n.lock" || continue
	if flock -n 4 && [ ! -e "/tmp/.X$n-lock" ] && [ ! -e "/tmp/.X11-unix/X$n" ]; then
		disp=$n
		break
	fi
	exec 4>&-
done
[ -n "$disp" ] || { echo "kshark-load: no free X display number in 90-189"; exit 1; }
# -displayfd: Xvfb writes the number once it accepts clients. -noreset: the
# probe below is its first client, and a server resets when its last client
# leaves, which KernelShark's connection must not meet.
exec 3<> <(:)
Xvfb ":$disp" -displayfd 3 -noreset -screen 0 1400x900x24 -nolisten tcp \
	>"$T/xvfb.log" 2>&1 &
XPID=$!
read -r -t 60 _ <&3 || { echo "kshark-load: Xvfb did not start on :$disp"; cat "$T/xvfb.log"; exit 1; }
export DISPLAY=:$disp
for _ in $(seq 100); do xwininfo -root >/dev/null 2>&1 && break; sleep 0.1; done
xwininfo -root >/dev/null 2>&1 || { echo "kshark-load: cannot reach Xvfb at $DISPLAY"; exit 1; }
(cd "$T/home" && HOME=$T/home XDG_RUNTIME_DIR=$T/home \
	exec setpriv --reuid=65534 --regid=65534 --clear-groups kernelshark "$T/trace.dat") \
	>"$T/ks.out" 2>&1 &
KPID=$!
win=
for _ in $(seq 600); do
	win=$(xwininfo -root -tree 2>/dev/null | grep -F "\"Kernel Shark ($T/trace.dat)\"" |
		awk '{print $1}' | head -1)
	[ -n "$win" ] && break
	kill -0 "$KPID" 2>/dev/null || break
	sleep 0.1
done
cat "$T/ks.out"
if [ -z "$win" ]; then
	echo "kshark-load: KernelShark never showed the file (display $DISPLAY); Xvfb:"
	kill -0 "$XPID" 2>/dev/null || echo "(Xvfb exited)"
	cat "$T/xvfb.log"
	exit 1
fi
if grep -v -e '^QStandardPaths:' -e '^Loading ' -e '^plugin ".*" failed to initialize on stream' \
	"$T/ks.out" | grep -q .; then
	echo "kshark-load: unexpected KernelShark output (above)"
	exit 1
fi
grep -q "^Loading  *\"$T/trace.dat\"" "$T/ks.out" || { echo "kshark-load: no Loading line"; exit 1; }
# the window's content once the event table is drawn: wait for the pixels to settle
prev=
for _ in $(seq 100); do
	xwd -id "$win" -silent >"$T/w.xwd" 2>/dev/null || true
	cur=$(md5sum <"$T/w.xwd")
	[ -s "$T/w.xwd" ] && [ "$cur" = "$prev" ] && break
	prev=$cur
	sleep 0.2
done
xwdtopnm "$T/w.xwd" 2>/dev/null | pnmtopng >"$png" || { echo "kshark-load: screenshot"; exit 1; }
[ -s "$png" ] || exit 1
echo "kshark-load: KernelShark loaded $1 (window $win), screenshot $png"
