# Crash the guest on purpose (sysrq 'c'): the host checks that the panic
# reaches QEMU through pvpanic (launch exits with QEMU's failure status, 1).
#
# The marker goes through the kernel log, not the tty: the tty sends what it
# is given from the serial port's transmit interrupt, and bytes still queued
# when the kernel panics are never sent (pvpanic ends QEMU first). printk
# writes to the port before it returns, like the panic message itself.
. /scenarios/lib.sh
echo "STACKMAP-E2E: PANIC now" > /dev/kmsg
echo c > /proc/sysrq-trigger
fail "still alive after sysrq-trigger c"
