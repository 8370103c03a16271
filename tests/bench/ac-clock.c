// SPDX-License-Identifier: MIT
/*
 * ac-clock.c - print CLOCK_MONOTONIC in seconds, to the nanosecond: the clock of
 * tests/bench/agent-cost.sh in the guest, where /proc/uptime ticks in 10 ms (a step
 * of 0.004 in the ratio of a 2.3 s workload) and busybox's date has no %N.
 */
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t))
		return 1;
	printf("%lld.%09ld\n", (long long)t.tv_sec, t.tv_nsec);
	return 0;
}
