# Crash the guest on purpose (sysrq 'c'): the host checks that the panic
# reaches QEMU through pvpanic (launch exits with QEMU's failure status, 1).
. /scenarios/lib.sh
say "PANIC now"
echo c > /proc/sysrq-trigger
fail "still alive after sysrq-trigger c"
