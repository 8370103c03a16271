// SPDX-License-Identifier: MIT
/*
 * latency.c - commit-to-durable latency of pages (see latency.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"

static const struct {
	const char *name;
	clockid_t id;
} clocks[] = {
	{ "mono", CLOCK_MONOTONIC },
	{ "mono_raw", CLOCK_MONOTONIC_RAW },
	{ "boot", CLOCK_BOOTTIME },
	{ "tai", CLOCK_TAI },
};

int latency_init(struct latency *l, const char *trace_clock, uint32_t max_pending)
{
	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (strcmp(trace_clock, clocks[i].name) == 0) {
			l->enabled = true;
			l->clock = clocks[i].id;
		}
	}
	if (!l->enabled)
		return 0;
	l->q = calloc(max_pending, sizeof(*l->q));
	if (!l->q)
		return -ENOMEM;
	l->cap = max_pending;
	return 0;
}

void latency_done(struct latency *l)
{
	free(l->q);
	l->q = NULL;
}

static struct lat_page *at(struct latency *l, uint32_t i)
{
	return &l->q[(l->head + i) % l->cap];
}

void latency_page(struct latency *l, uint64_t seq, uint64_t ts)
{
	if (!l->enabled || !l->cap)
		return;
	if (l->count == l->cap) {
		/* more pending pages than frames in the window: the oldest left it */
		l->head = (l->head + 1) % l->cap;
		l->count--;
	}
	*at(l, l->count++) = (struct lat_page){ seq, ts };
}

static unsigned bucket(uint64_t us)
{
	unsigned b = 0, sub;

	if (us < LAT_SUB)
		return (unsigned)us;
	while ((us >> b) >= 2 * LAT_SUB)
		b++;
	/* us in [LAT_SUB << b, LAT_SUB << (b + 1)): 16 steps of 1 << b */
	sub = (unsigned)(us >> b) - LAT_SUB;
	return LAT_SUB * (b + 1) + sub;
}

static uint64_t bucket_top(unsigned i)
{
	unsigned b;

	if (i < LAT_SUB)
		return i;
	b = i / LAT_SUB - 1;
	return (((uint64_t)LAT_SUB + i % LAT_SUB + 1) << b) - 1;
}

void latency_acked(struct latency *l, uint64_t acked, uint64_t mono_ns)
{
	uint64_t t = mono_ns;

	if (!l->enabled || !l->count || at(l, 0)->seq > acked)
		return;
	if (!t || l->clock != CLOCK_MONOTONIC) {
		struct timespec now;

		clock_gettime(l->clock, &now);
		t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	}
	while (l->count && at(l, 0)->seq <= acked) {
		uint64_t ts = at(l, 0)->ts, us = t > ts ? (t - ts) / 1000 : 0;
		unsigned b = bucket(us);

		l->hist[b < LAT_BUCKETS ? b : LAT_BUCKETS - 1]++;
		l->samples++;
		if (us > l->max_us)
			l->max_us = us;
		l->head = (l->head + 1) % l->cap;
		l->count--;
	}
}

void latency_rebase(struct latency *l, uint64_t first, int64_t shift)
{
	while (l->count && at(l, 0)->seq < first) {
		l->head = (l->head + 1) % l->cap;
		l->count--;
	}
	for (uint32_t i = 0; i < l->count; i++)
		at(l, i)->seq += (uint64_t)shift;
}

void latency_reset(struct latency *l)
{
	l->head = 0;
	l->count = 0;
}

uint64_t latency_quantile_us(const struct latency *l, unsigned permille)
{
	uint64_t want, seen = 0;

	if (!l->samples)
		return 0;
	want = (l->samples * permille + 999) / 1000;
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < LAT_BUCKETS; i++) {
		seen += l->hist[i];
		if (seen >= want)
			return bucket_top(i) < l->max_us ? bucket_top(i) : l->max_us;
	}
	return l->max_us;
}
