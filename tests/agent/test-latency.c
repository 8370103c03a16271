// SPDX-License-Identifier: MIT
/*
 * test-latency.c - the commit-to-durable histogram: which clocks are measured,
 * samples per ACKed page, quantiles within the bucket error, splice rebasing.
 */
#include <stdint.h>
#include <time.h>

#include "latency.h"
#include "tap.h"

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* within the histogram's 1/16 step (and 2 ms of test scheduling) above @us */
static int near(uint64_t got, uint64_t us)
{
	return got >= us && got <= us + us / 16 + 2000;
}

int main(void)
{
	struct latency l;
	uint64_t now;

	is_int(latency_init(&l, "global", 16), 0, "global clock: init");
	ok(!l.enabled, "the scheduler clock is not measured");
	latency_page(&l, 1, 0);
	latency_acked(&l, 1, 0);
	is_int((long)l.samples, 0, "and gives no samples");
	latency_done(&l);

	is_int(latency_init(&l, "mono", 1000), 0, "mono clock: init");
	ok(l.enabled, "mono is measured");
	now = mono_ns();
	/* 98 pages 1 ms old, one 50 ms, one 900 ms */
	for (uint64_t s = 1; s <= 98; s++)
		latency_page(&l, s, now - 1000000);
	latency_page(&l, 99, now - 50000000);
	latency_page(&l, 100, now - 900000000);
	latency_acked(&l, 50, 0);
	is_int((long)l.samples, 50, "an ACK of 50 gives 50 samples");
	latency_acked(&l, 100, 0);
	is_int((long)l.samples, 100, "then 100");
	ok(near(latency_quantile_us(&l, 500), 1000), "p50 is 1 ms (%lu us)",
	   (unsigned long)latency_quantile_us(&l, 500));
	ok(near(latency_quantile_us(&l, 990), 50000), "p99 is 50 ms (%lu us)",
	   (unsigned long)latency_quantile_us(&l, 990));
	ok(near(l.max_us, 900000), "max is 900 ms (%lu us)", (unsigned long)l.max_us);
	ok(latency_quantile_us(&l, 1000) == l.max_us, "p100 is the max");

	/* a splice: 101, 102 dropped, 103.. moved by 5 */
	now = mono_ns();
	for (uint64_t s = 101; s <= 105; s++)
		latency_page(&l, s, now - 2000000);
	latency_rebase(&l, 103, 5);
	latency_acked(&l, 107, 0);
	is_int((long)l.samples, 100, "after the rebase, ACK 107 covers none (103..105 are now 108..110)");
	latency_acked(&l, 110, 0);
	is_int((long)l.samples, 103, "ACK 110 covers the three kept pages");
	latency_page(&l, 111, now);
	latency_reset(&l);
	latency_acked(&l, 111, 0);
	is_int((long)l.samples, 103, "a fresh stream forgets pending pages");

	/* the caller's time: taken as is on the monotonic clock, no read of our own */
	latency_done(&l);
	is_int(latency_init(&l, "mono", 16), 0, "mono clock again");
	latency_page(&l, 1, 1000000000);
	latency_page(&l, 2, 1000000000);
	latency_acked(&l, 1, 1000000000 + 300000000);
	is_int((long)l.max_us, 300000, "an ACK as of a given time: exactly 300 ms (%lu us)",
	       (unsigned long)l.max_us);
	latency_acked(&l, 2, 1);
	is_int((long)l.samples, 2, "a time before the page's gives a sample too");
	ok(latency_quantile_us(&l, 500) == 0, "of 0 us");
	latency_done(&l);

	/* another clock: the caller's monotonic time is not used for it */
	is_int(latency_init(&l, "boot", 16), 0, "boot clock");
	{
		struct timespec t;

		clock_gettime(CLOCK_BOOTTIME, &t);
		latency_page(&l, 1, (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec -
				    5000000);
	}
	latency_acked(&l, 1, 1);
	ok(near(l.max_us, 5000), "boot clock: the ACK is timed by its own read (%lu us)",
	   (unsigned long)l.max_us);

	/* more pending than capacity: the oldest go */
	latency_done(&l);
	is_int(latency_init(&l, "boot", 4), 0, "boot clock, 4 pending at most");
	for (uint64_t s = 1; s <= 6; s++)
		latency_page(&l, s, 0);
	is_int((long)l.count, 4, "4 pending");
	latency_done(&l);
	return tap_done();
}
