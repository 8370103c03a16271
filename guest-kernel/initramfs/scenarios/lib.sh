# Helpers shared by the scenarios (sourced, not a scenario itself).
T=/sys/kernel/tracing

say() { echo "STACKMAP-E2E: $*"; }

# fail MESSAGE: report and stop the scenario with status 1.
fail() { say "FAIL $*"; exit 1; }

# emit NAME FILE: copy FILE to the console as base64 between markers,
# with console printk muted so kernel messages cannot split the lines.
emit() {
	old=$(cut -f1 /proc/sys/kernel/printk)
	echo 1 > /proc/sys/kernel/printk
	say "FILE-BEGIN $1"
	base64 < "$2"
	say "FILE-END $1"
	echo "$old" > /proc/sys/kernel/printk
}

# param NAME DEFAULT: value of stackmap.NAME= on the kernel command line.
param() {
	for arg in $(cat /proc/cmdline); do
		case "$arg" in
		stackmap.$1=*) echo "${arg#stackmap.$1=}"; return ;;
		esac
	done
	echo "$2"
}

# stat FIELD: a number from stack_map_stat ("entries" gives the used count).
stat() { awk -v f="$1:" '$1 == f { print $2 }' $T/stack_map_stat; }

# slab_work: one unit of slab-heavy work (directory walks, sysfs reads, a small file).
slab_work() {
	ls -R /sys/class /proc/sys > /dev/null 2>&1
	find /sys/devices -name uevent | head -n 100 | xargs cat > /dev/null 2>&1
	dd if=/dev/zero of=/tmp/f bs=64k count=4 2> /dev/null
	rm -f /tmp/f
}
