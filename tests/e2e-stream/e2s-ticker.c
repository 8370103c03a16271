// SPDX-License-Identifier: MIT
/*
 * e2s-ticker - the crash-window probe of tests/e2e-stream (runs in the guest).
 *
 * Usage: e2s-ticker K
 *
 * Writes "e2s-tick I K MONO_NS" to <tracefs>/trace_marker for I = 1 .. K, with
 * a relative clock_nanosleep(CLOCK_MONOTONIC) of 1 ms between two ticks, and
 * right after the K-th tick writes 'c' to /proc/sysrq-trigger (panic). Every
 * sleep lasts at least its 1 ms, so tick I is committed at least K - I ms before
 * the panic, whatever the scheduling: the host must hold every tick with
 * K - I >= the agent's flush window. MONO_NS is CLOCK_MONOTONIC just before the
 * write; the trace timestamp of the tick is the kernel's own.
 *
 * Exits 1 (without a panic) on any error, which the host sees as "no crash".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2s-clock.h"

#define TRACE_MARKER "/sys/kernel/tracing/trace_marker"
#define SYSRQ "/proc/sysrq-trigger"
#define MAX_TICKS 1000000L

int main(int argc, char **argv)
{
	const struct timespec one_ms = { .tv_sec = 0, .tv_nsec = 1000000 };
	char *end = NULL;
	long k;
	int marker, sysrq;

	if (argc != 2) {
		fprintf(stderr, "usage: e2s-ticker K\n");
		return 2;
	}
	errno = 0;
	k = strtol(argv[1], &end, 10);
	if (errno || *end || k < 1 || k > MAX_TICKS) {
		fprintf(stderr, "e2s-ticker: bad K '%s'\n", argv[1]);
		return 2;
	}
	marker = open(TRACE_MARKER, O_WRONLY | O_CLOEXEC);
	sysrq = open(SYSRQ, O_WRONLY | O_CLOEXEC);
	if (marker < 0 || sysrq < 0) {
		fprintf(stderr, "e2s-ticker: open: %s\n", strerror(errno));
		return 1;
	}
	for (long i = 1; i <= k; i++) {
		char buf[96];
		int n, r;

		if (i > 1) {
			/* relative: the gap between two ticks is never under 1 ms */
			while ((r = clock_nanosleep(CLOCK_MONOTONIC, 0, &one_ms, NULL)) == EINTR)
				;
			if (r) {
				fprintf(stderr, "e2s-ticker: clock_nanosleep: %s\n", strerror(r));
				return 1;
			}
		}
		n = snprintf(buf, sizeof(buf), "e2s-tick %ld %ld %lld\n", i, k, mono_ns());
		if (write(marker, buf, (size_t)n) != n) {
			fprintf(stderr, "e2s-ticker: trace_marker: %s\n", strerror(errno));
			return 1;
		}
	}
	if (write(sysrq, "c", 1) != 1)
		fprintf(stderr, "e2s-ticker: sysrq-trigger: %s\n", strerror(errno));
	return 1;
}
