# ring_buffer_read_page() on a ring buffer of known content: load
# rb_read_page_testmod.ko, read its report twice (the same boot must give the
# same text, or comparing kernels would mean nothing) and send it to the host,
# which compares the reports of a kernel with and without guest-kernel patch
# 0015 (tests/e2e, rb-read-page); with patch 0017 also the report of the
# same script with RB_CAUGHT_UP asked for, and /rawreader's counts of the
# flagged pages of trace_pipe_raw read with and without the ioctl. Boot with init_on_alloc=1: the body of a
# padding event is whatever its page held before, zeroed that way.
. /scenarios/lib.sh
mod=/lib/modules/rb_read_page_testmod.ko
[ -f $mod ] || fail "$mod missing (guest-kernel/testmod)"
grep -qw init_on_alloc=1 /proc/cmdline || fail "boot with init_on_alloc=1"
insmod $mod || fail "insmod $mod"
f=/sys/kernel/debug/rb_read_page_testmod
cat $f > /tmp/rbpage.1 || fail "reading $f"
cat $f > /tmp/rbpage.2 || fail "reading $f again"
cmp -s /tmp/rbpage.1 /tmp/rbpage.2 || fail "two reads of $f in one boot differ"
# Patch 0017: the same script with RB_CAUGHT_UP asked for (a kernel without
# ring_buffer_read_page_caught_up() has no such file).
fc=/sys/kernel/debug/rb_read_page_testmod_caught_up
if [ -e $fc ]; then
	cat $fc > /tmp/rbpage-caught-up || fail "reading $fc"
	say "RBPAGE-CAUGHT-UP lines=$(wc -l < /tmp/rbpage-caught-up)"
	gzip -9 < /tmp/rbpage-caught-up > /tmp/rbpage-caught-up.gz
	emit rbpage-caught-up.gz /tmp/rbpage-caught-up.gz
else
	say "RBPAGE-CAUGHT-UP none"
fi
rmmod rb_read_page_testmod || fail "rmmod rb_read_page_testmod"
say "RBPAGE lines=$(wc -l < /tmp/rbpage.1) $(tail -1 /tmp/rbpage.1)"
gzip -9 < /tmp/rbpage.1 > /tmp/rbpage.gz
emit rbpage.gz /tmp/rbpage.gz
# And through the real per_cpu/cpuN/trace_pipe_raw (tests/e2e/rawreader.c):
# read by one that does not ask for RB_CAUGHT_UP, then by one that does, on
# each CPU while it writes trace_marker events there.
if [ -x /rawreader ]; then
	echo 1 > $T/tracing_on
	for cpu in 0 1; do
		for mode in plain ask; do
			out=$(/rawreader $T $cpu $mode 300) ||
				fail "rawreader cpu$cpu $mode"
			say "$out cpu=$cpu"
		done
	done
else
	say "RAWREAD none"
fi
