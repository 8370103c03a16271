// SPDX-License-Identifier: MIT
/* latency.c - a latency histogram of fixed size (see latency.h). */
#include "latency.h"

/* Values 0..HA_LAT_SUB-1 have a bucket each; from there, HA_LAT_SUB per power of two
 * (the top bits of the value below its leading one). */
static unsigned int bucket_of(uint64_t us)
{
	unsigned int e;

	if (us < HA_LAT_SUB)
		return (unsigned int)us;
	e = 63u - (unsigned int)__builtin_clzll(us);	/* >= log2(HA_LAT_SUB) = 4 */
	if (e >= HA_LAT_MAX_LOG2)
		return HA_LAT_BUCKETS - 1;
	return (e - 3u) * HA_LAT_SUB + (unsigned int)((us >> (e - 4u)) & (HA_LAT_SUB - 1));
}

static uint64_t bucket_top(unsigned int i)
{
	unsigned int e = i / HA_LAT_SUB + 3u;

	if (i < HA_LAT_SUB)
		return i;
	return (((uint64_t)HA_LAT_SUB + i % HA_LAT_SUB + 1u) << (e - 4u)) - 1u;
}

void ha_latency_add(HaLatency *h, int64_t us, uint64_t count)
{
	if (!count)
		return;
	if (us < 0)
		us = 0;
	h->bucket[bucket_of((uint64_t)us)] += count;
	h->n += count;
	if (us > h->max_us)
		h->max_us = us;
}

int64_t ha_latency_quantile(const HaLatency *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->n)
		return 0;
	rank = (uint64_t)(q * (double)h->n);	/* rounded up, at least 1 */
	if ((double)rank < q * (double)h->n || rank < 1)
		rank++;
	for (unsigned int i = 0; i < HA_LAT_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			return bucket_top(i) < (uint64_t)h->max_us ? (int64_t)bucket_top(i) :
			       h->max_us;
	}
	return h->max_us;
}
