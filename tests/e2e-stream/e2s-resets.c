// SPDX-License-Identifier: MIT
/*
 * e2s-resets - the map-reset latency probe of tests/e2e-stream (runs in the guest).
 *
 * Usage: e2s-resets N INTERVAL_MS LABEL
 *
 * Writes "e2s-resets LABEL begin" to <tracefs>/trace_marker, then resets the
 * stack map N times ("0" to <tracefs>/stack_map), INTERVAL_MS apart (a relative
 * CLOCK_MONOTONIC sleep), then writes "e2s-resets LABEL end". Each reset's
 * latency is the CLOCK_MONOTONIC time its write(2) took. Prints one line:
 *
 *   RESETS LABEL n=N median_us=M p90_us=P max_us=X
 *
 * Exits 1 on any error (a refused reset included), with the reason on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2s-clock.h"

#define TRACEFS "/sys/kernel/tracing"
#define MAX_RESETS 100000L

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static int marker(const char *label, const char *what)
{
	char buf[128];
	int fd, n, ok;

	n = snprintf(buf, sizeof(buf), "e2s-resets %s %s\n", label, what);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -1;
	fd = open(TRACEFS "/trace_marker", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct timespec gap;
	long long *lat;
	char *end = NULL;
	long n, ms;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: e2s-resets N INTERVAL_MS LABEL\n");
		return 2;
	}
	errno = 0;
	n = strtol(argv[1], &end, 10);
	if (errno || *end || n < 1 || n > MAX_RESETS) {
		fprintf(stderr, "e2s-resets: N must be 1..%ld\n", MAX_RESETS);
		return 2;
	}
	ms = strtol(argv[2], &end, 10);
	if (errno || *end || ms < 0 || ms > 60000) {
		fprintf(stderr, "e2s-resets: INTERVAL_MS must be 0..60000\n");
		return 2;
	}
	gap.tv_sec = ms / 1000;
	gap.tv_nsec = (ms % 1000) * 1000000L;
	lat = calloc((size_t)n, sizeof(*lat));
	if (!lat)
		return 1;
	fd = open(TRACEFS "/stack_map", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "e2s-resets: %s/stack_map: %s\n", TRACEFS, strerror(errno));
		return 1;
	}
	if (marker(argv[3], "begin") < 0) {
		fprintf(stderr, "e2s-resets: trace_marker: %s\n", strerror(errno));
		return 1;
	}
	for (long i = 0; i < n; i++) {
		long long t0 = mono_ns();

		if (write(fd, "0", 1) != 1) {
			fprintf(stderr, "e2s-resets: reset %ld: %s\n", i, strerror(errno));
			return 1;
		}
		lat[i] = mono_ns() - t0;
		if (ms)
			clock_nanosleep(CLOCK_MONOTONIC, 0, &gap, NULL);
	}
	if (marker(argv[3], "end") < 0) {
		fprintf(stderr, "e2s-resets: trace_marker: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	qsort(lat, (size_t)n, sizeof(*lat), cmp_ll);
	printf("RESETS %s n=%ld median_us=%lld p90_us=%lld max_us=%lld\n", argv[3], n,
	       lat[n / 2] / 1000, lat[n * 9 / 10] / 1000, lat[n - 1] / 1000);
	free(lat);
	return 0;
}
