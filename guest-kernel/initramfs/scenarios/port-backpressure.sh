# Writers that wait for room in the virtio-serial port's out vq (guest-kernel
# patch 0016 keeps the vq's interrupts off while nobody waits, and a writer that
# is about to wait turns them on). The host (tests/e2e, port-backpressure)
# holds the port org.stackmap.0 open throughout and reads in three phases:
#   stream  it reads as the guest writes: dd of STREAM_KB, one write() per 4 KiB,
#           with /proc/interrupts' virtio lines before and after (IRQS)
#   block   it stops reading; a blocking dd writes BLOCK_KB and fills the vq
#           and the host's socket; once the vq is full and dd sleeps, WAITING
#           block, and the host reads again: dd must finish
#   poll    the same with /port-pollwriter, O_NONBLOCK writes and poll(POLLOUT)
# The host counts and checksums every byte against SUMS. A wake-up the kernel
# loses leaves a writer asleep for good: the host's bounded wait fails the test.
. /scenarios/lib.sh
STREAM_KB=4096
BLOCK_KB=2048
POLL_KB=2048

dev=
for d in /sys/class/virtio-ports/*; do
	[ "$(cat "$d/name" 2> /dev/null)" = org.stackmap.0 ] && dev=/dev/${d##*/}
done
[ -n "$dev" ] || fail "no port named org.stackmap.0"
dbg=/sys/kernel/debug/virtio-ports/${dev#/dev/}
[ -r "$dbg" ] || fail "no $dbg"
field() { awk -v f="$1:" '$1 == f { print $2 }' "$dbg"; }

# irqs: every virtio line of /proc/interrupts as IRQ:NAME=COUNT (all CPUs summed;
# with a vector per queue the ports' queues share their names, so the IRQ tells them
# apart: the port's out vq is the last virtio0-output)
irqs() {
	awk '/virtio/ { s = 0
		for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i
		printf "%s%s=%d ", $1, $NF, s }' /proc/interrupts
}

# parked PID: the writer sleeps (state S) with the out vq full, twice, a
# second apart; gives up after 120 s or when the writer has exited
parked() {
	n=0
	while [ $n -lt 240 ]; do
		[ -d /proc/$1 ] || return 1
		if [ "$(field outvq_full)" = 1 ] &&
		   [ "$(awk '{ print $3 }' /proc/$1/stat)" = S ]; then
			sleep 1
			[ "$(field outvq_full)" = 1 ] &&
			   [ "$(awk '{ print $3 }' /proc/$1/stat 2> /dev/null)" = S ] &&
			   return 0
		fi
		usleep 500000
		n=$((n + 1))
	done
	return 1
}

n=0
until [ "$(field host_connected)" = 1 ]; do
	[ $n -lt 120 ] || fail "the host never connected to $dev"
	usleep 500000
	n=$((n + 1))
done

dd if=/dev/urandom of=/tmp/stream bs=1024 count=$STREAM_KB 2> /dev/null
dd if=/dev/urandom of=/tmp/block bs=1024 count=$BLOCK_KB 2> /dev/null
dd if=/dev/urandom of=/tmp/poll bs=1024 count=$POLL_KB 2> /dev/null
say "SUMS stream=$(sha256sum < /tmp/stream | cut -d' ' -f1)" \
    "block=$(sha256sum < /tmp/block | cut -d' ' -f1)" \
    "poll=$(sha256sum < /tmp/poll | cut -d' ' -f1)"
say "SIZES stream=$((STREAM_KB * 1024)) block=$((BLOCK_KB * 1024))" \
    "poll=$((POLL_KB * 1024)) dev=$dev"

say "IRQS stream-before $(irqs)"
dd if=/tmp/stream of=$dev bs=4096 2> /dev/null || fail "dd to $dev (stream)"
say "IRQS stream-after $(irqs)"

dd if=/tmp/block of=$dev bs=4096 2> /dev/null &
pid=$!
parked $pid || fail "dd never waited for room in the out vq: $(cat "$dbg" | tr '\n' ' ')"
say "WAITING block wchan=$(cat /proc/$pid/wchan 2> /dev/null) $(irqs)"
wait $pid
rc=$?
say "DONE block rc=$rc $(irqs)"
[ $rc = 0 ] || fail "dd to $dev (block) exited with $rc"

/port-pollwriter $dev /tmp/poll 4096 > /tmp/pollwriter.out &
pid=$!
parked $pid || fail "port-pollwriter never waited for room in the out vq"
say "WAITING poll wchan=$(cat /proc/$pid/wchan 2> /dev/null) $(irqs)"
wait $pid
rc=$?
say "DONE poll rc=$rc $(cat /tmp/pollwriter.out) $(irqs)"
[ $rc = 0 ] || fail "port-pollwriter exited with $rc"
say "PORT-STATE $(cat "$dbg" | tr '\n' ' ')"
