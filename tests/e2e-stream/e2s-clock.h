/* SPDX-License-Identifier: MIT */
/* e2s-clock.h - the monotonic clock of the guest-side probes (e2s-ticker, e2s-resets). */
#ifndef E2S_CLOCK_H
#define E2S_CLOCK_H

#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
