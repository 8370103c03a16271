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
