# ring_buffer_read_page() on a ring buffer of known content: load
# rb_read_page_testmod.ko, read its report twice (the same boot must give the
# same text, or comparing kernels would mean nothing) and send it to the host,
# which compares the reports of a kernel with and without guest-kernel patch
# 0015 (tests/e2e, rb-read-page). Boot with init_on_alloc=1: the body of a
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
rmmod rb_read_page_testmod || fail "rmmod rb_read_page_testmod"
say "RBPAGE lines=$(wc -l < /tmp/rbpage.1) $(tail -1 /tmp/rbpage.1)"
gzip -9 < /tmp/rbpage.1 > /tmp/rbpage.gz
emit rbpage.gz /tmp/rbpage.gz
