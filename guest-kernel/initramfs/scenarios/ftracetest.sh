# Run the kernel's ftracetest on the tests named by stackmap.tests=
# (comma-separated, relative to selftests/ftrace; default test.d/ftrace).
# The host parses the "[N] description<TAB>[RESULT]" lines.
. /scenarios/lib.sh
tests=$(param tests test.d/ftrace | tr , ' ')
cd /selftests/ftrace || fail "no /selftests/ftrace"
# The inter-event hist tests of test.d/trigger ping 127.0.0.1.
ip link set lo up 2> /dev/null || true
say "FTRACETEST $tests"
# The options the run starts with (trace_options= on the command line).
for o in stackmap stacktrace; do
	if [ -f $T/options/$o ]; then
		say "FTRACETEST-OPTION $o=$(cat $T/options/$o)"
	fi
done
# -v prints the log of every case that did not pass. Through a pipe, not
# the console: ftracetest colours its output on a tty.
./ftracetest -v -l /tmp/ftracetest-logs $tests 2>&1 | cat
say "FTRACETEST-DONE"
# ftracetest's own log has one clean "[N] description<TAB>[RESULT]" line per
# case (the console copy can be interleaved with the tests' EXIT-trap
# tracing output).
emit ftracetest.log /tmp/ftracetest-logs/ftracetest.log
