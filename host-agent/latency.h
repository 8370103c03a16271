/* SPDX-License-Identifier: MIT */
/*
 * latency.h - a latency histogram of fixed size, for the daemon's own figures.
 *
 * Log-scale buckets of microseconds, HA_LAT_SUB of them per power of two: values
 * below HA_LAT_SUB us are exact, larger ones fall in a bucket less than 1/HA_LAT_SUB
 * (6 %) wide; beyond 2^HA_LAT_MAX_LOG2 us (about 19 hours) in the last one. A
 * quantile is its bucket's upper bound, never above the largest value added (kept
 * exactly), so it is an upper bound within 6 % of the true one. Adding is O(1) and
 * allocates nothing: one per connection costs its 4 KiB, whatever it counts.
 */
#ifndef HA_LATENCY_H
#define HA_LATENCY_H

#include <stdint.h>

#define HA_LAT_SUB		16u
#define HA_LAT_MAX_LOG2		36u
#define HA_LAT_BUCKETS		((HA_LAT_MAX_LOG2 - 3u) * HA_LAT_SUB)

typedef struct {
	uint64_t n;		/* values added */
	int64_t max_us;
	uint64_t bucket[HA_LAT_BUCKETS];
} HaLatency;

/* @count values of @us microseconds each (a negative one counts as 0). */
void ha_latency_add(HaLatency *h, int64_t us, uint64_t count);

/* The @q quantile (0 < q <= 1) in microseconds, as above; 0 when empty. */
int64_t ha_latency_quantile(const HaLatency *h, double q);

#endif /* HA_LATENCY_H */
