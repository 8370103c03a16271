# Print stack_map_stat as booted (for the ftrace_stackmap.bits= test).
. /scenarios/lib.sh
say "STAT $(tr -s ' \n' ' ' < $T/stack_map_stat)"
