// SPDX-License-Identifier: MIT
/*
 * Unit tests of the latency histogram (latency.h): quantiles are upper bounds within
 * one bucket (1/16 of a power of two) of the exact ones, never above the largest value,
 * exact below 32 us; counts add up; values beyond its range land in the last bucket.
 */
#include <glib.h>
#include <stdint.h>

#include "latency.h"
#include "tap.h"

int main(void)
{
	HaLatency h = { 0 };
	int64_t p50, p99;

	CHECK(ha_latency_quantile(&h, 0.5) == 0 && h.n == 0, "empty: 0");
	for (int64_t us = 1; us <= 100000; us++)
		ha_latency_add(&h, us, 1);
	p50 = ha_latency_quantile(&h, 0.50);
	p99 = ha_latency_quantile(&h, 0.99);
	CHECK(h.n == 100000 && h.max_us == 100000, "100000 values, max %" G_GINT64_FORMAT,
	      h.max_us);
	CHECK(p50 >= 50000 && p50 <= 50000 + 50000 / 16, "p50 %" G_GINT64_FORMAT " of 50000",
	      p50);
	CHECK(p99 >= 99000 && p99 <= 100000, "p99 %" G_GINT64_FORMAT " of 99000, at most the"
	      " max", p99);
	CHECK(ha_latency_quantile(&h, 1.0) == 100000, "p100 is the max");

	h = (HaLatency){ 0 };
	ha_latency_add(&h, 7, 3);
	ha_latency_add(&h, 29, 1);
	ha_latency_add(&h, -5, 0);
	CHECK(h.n == 4 && ha_latency_quantile(&h, 0.75) == 7 &&
	      ha_latency_quantile(&h, 0.99) == 29, "exact below 32 us, counts weighed");
	ha_latency_add(&h, -5, 1);
	CHECK(h.n == 5 && ha_latency_quantile(&h, 0.2) == 0, "a negative value counts as 0");
	ha_latency_add(&h, INT64_MAX, 1);
	CHECK(h.n == 6 && h.max_us == INT64_MAX && h.bucket[HA_LAT_BUCKETS - 1] == 1,
	      "beyond the range: the last bucket, the max kept");
	return tap_done();
}
