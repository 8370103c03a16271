// SPDX-License-Identifier: MIT
/* clocksync.c - probes, samples and the per-boot clock map (see clocksync.h). */
#include "clocksync.h"

#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto.h"
#include "store-clock.h"

#define SAMPLES_MAX	4096u	/* completed, not yet stored (a store that fails) */

/* Round half away from zero (no libm for one call). */
static int64_t round_i64(double v)
{
	return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ha_host_time_now(HaHostTime *ret)
{
	int64_t mono = clock_ns(CLOCK_MONOTONIC);
	int64_t real = clock_ns(CLOCK_REALTIME);
	int64_t boot = clock_ns(CLOCK_BOOTTIME);
	int64_t tai = clock_ns(CLOCK_TAI);

	ret->mono = mono;
	ret->real = real;
	ret->boot_off = boot - mono;
	ret->tai_off = tai - real;
}

/* ---- per connection ---------------------------------------------------------- */

typedef struct {
	uint64_t id;		/* 0: free slot */
	gint64 sent_us;
	HaHostTime t1, t2;
	bool replied;
	bool marked;
	uint64_t guest_ts;
	uint32_t cpu;
} Probe;

struct _HaClockProbe {
	guint interval_ms;
	gint64 last_us;		/* when the last probe went out, 0: none yet */
	uint64_t next_id;
	Probe slot[HA_CLOCK_PENDING];
	GArray *done;		/* HaClockSample */
	HaClockProbeStats st;
};

HaClockProbe *ha_clock_probe_new(guint interval_ms)
{
	HaClockProbe *p = g_new0(HaClockProbe, 1);

	p->interval_ms = interval_ms;
	p->done = g_array_new(FALSE, FALSE, sizeof(HaClockSample));
	p->st.best_rtt_ns = -1;
	ha_clock_probe_reset(p);
	return p;
}

void ha_clock_probe_free(HaClockProbe *p)
{
	if (!p)
		return;
	g_array_unref(p->done);
	g_free(p);
}

void ha_clock_probe_reset(HaClockProbe *p)
{
	memset(p->slot, 0, sizeof(p->slot));
	g_array_set_size(p->done, 0);
	p->last_us = 0;
	/* ids differ across connections, so a marker of an earlier one (in a page the
	 * guest resends) never matches a probe of this one */
	p->next_id = ((uint64_t)g_random_int() << 32 | g_random_int()) | 1;
}

static Probe *find(HaClockProbe *p, uint64_t id)
{
	if (id == 0)
		return NULL;
	for (guint i = 0; i < HA_CLOCK_PENDING; i++)
		if (p->slot[i].id == id)
			return &p->slot[i];
	return NULL;
}

/* Both halves are in: a sample, and the slot is free again. */
static void complete(HaClockProbe *p, Probe *pr)
{
	HaClockSample s = {
		.guest_ts = pr->guest_ts, .cpu = pr->cpu,
		.mono_lo = pr->t1.mono, .mono_hi = pr->t2.mono,
		.real_lo = pr->t1.real, .real_hi = pr->t2.real,
		.boot_off = pr->t1.boot_off, .tai_off = pr->t1.tai_off,
	};
	int64_t rtt = s.mono_hi - s.mono_lo;

	memset(pr, 0, sizeof(*pr));
	if (rtt < 0 || s.guest_ts > INT64_MAX)
		return;		/* cannot be: CLOCK_MONOTONIC went back */
	if (p->done->len >= SAMPLES_MAX)
		g_array_remove_index(p->done, 0);
	g_array_append_val(p->done, s);
	p->st.samples++;
	if (p->st.best_rtt_ns < 0 || rtt < p->st.best_rtt_ns)
		p->st.best_rtt_ns = rtt;
}

bool ha_clock_probe_next(HaClockProbe *p, gint64 now, const HaHostTime *t1,
			 uint64_t *ret_id)
{
	Probe *free_slot = NULL;

	if (!p->interval_ms)
		return false;
	for (guint i = 0; i < HA_CLOCK_PENDING; i++) {
		Probe *pr = &p->slot[i];

		if (pr->id && now - pr->sent_us > HA_CLOCK_EXPIRE_US) {
			memset(pr, 0, sizeof(*pr));
			p->st.expired++;
		}
		if (!pr->id && !free_slot)
			free_slot = pr;
	}
	/* 10% early is still on time: the caller's timer is not exact */
	if (p->last_us && now - p->last_us < (gint64)p->interval_ms * 900)
		return false;
	if (!free_slot)
		return false;
	if (p->next_id == 0)
		p->next_id = 1;
	free_slot->id = p->next_id++;
	free_slot->sent_us = now;
	free_slot->t1 = *t1;
	p->last_us = now;
	p->st.sent++;
	*ret_id = free_slot->id;
	return true;
}

bool ha_clock_probe_reply(HaClockProbe *p, uint64_t id, int32_t status,
			  const HaHostTime *t2)
{
	Probe *pr = find(p, id);

	if (!pr || pr->replied) {
		p->st.unmatched++;
		return false;
	}
	p->st.replies++;
	if (status != 0) {
		/* no marker was written: nothing will complete this probe */
		p->st.failed++;
		memset(pr, 0, sizeof(*pr));
		return true;
	}
	pr->replied = true;
	pr->t2 = *t2;
	if (pr->marked)
		complete(p, pr);
	return true;
}

bool ha_clock_probe_marker(HaClockProbe *p, uint64_t id, uint64_t guest_ts, uint32_t cpu)
{
	Probe *pr = find(p, id);

	if (!pr || pr->marked) {
		p->st.unmatched++;
		return false;
	}
	p->st.markers++;
	pr->marked = true;
	pr->guest_ts = guest_ts;
	pr->cpu = cpu;
	if (pr->replied)
		complete(p, pr);
	return true;
}

const HaClockSample *ha_clock_probe_samples(const HaClockProbe *p, guint *ret_n)
{
	*ret_n = p->done->len;
	return (const HaClockSample *)(void *)p->done->data;
}

void ha_clock_probe_samples_done(HaClockProbe *p)
{
	g_array_set_size(p->done, 0);
}

const HaClockProbeStats *ha_clock_probe_stats(const HaClockProbe *p)
{
	return &p->st;
}

/* ---- marker events ------------------------------------------------------------- */

bool ha_marker_format_parse(const char *text, size_t len, HaMarkerFormat *ret)
{
	g_autofree char *t = g_strndup(text, len);
	const char *id = strstr(t, "\nID:");
	const char *f = strstr(t, "field:char buf[];");
	const char *o, *nl;
	char *end;
	long v, off;

	if (!strncmp(t, "ID:", 3))
		id = t - 1;
	if (!id || !f)
		return false;
	v = strtol(id + 4, &end, 10);
	if (end == id + 4 || v < 0 || v > 65535)
		return false;
	nl = strchr(f, '\n');
	o = strstr(f, "offset:");
	if (!o || (nl && o > nl))
		return false;
	off = strtol(o + 7, &end, 10);
	if (end == o + 7 || off < 0 || off > 4096)
		return false;
	ret->type = (int)v;
	ret->buf_off = (uint32_t)off;
	return true;
}

bool ha_marker_event_id(const HaMarkerFormat *mf, int type, const void *data,
			uint32_t size, uint64_t *ret_id)
{
	if (!mf || mf->type < 0 || type != mf->type || size <= mf->buf_off)
		return false;
	return smp_time_marker_parse((const char *)data + mf->buf_off, size - mf->buf_off,
				     ret_id) == 0;
}

/* ---- per boot ------------------------------------------------------------------ */

static const char *const clock_names[] = {
	[HA_HOSTCLOCK_REALTIME] = "realtime",
	[HA_HOSTCLOCK_MONO] = "mono",
	[HA_HOSTCLOCK_BOOT] = "boot",
	[HA_HOSTCLOCK_TAI] = "tai",
};

bool ha_host_clock_parse(const char *name, HaHostClock *ret)
{
	for (guint i = 0; i < G_N_ELEMENTS(clock_names); i++)
		if (!g_strcmp0(name, clock_names[i])) {
			*ret = (HaHostClock)i;
			return true;
		}
	return false;
}

const char *ha_host_clock_name(HaHostClock clock)
{
	return (guint)clock < G_N_ELEMENTS(clock_names) ? clock_names[clock] : "?";
}

typedef struct {
	uint64_t guest;
	int64_t offset;		/* host mono - guest */
	uint64_t uncert;	/* half the round trip */
	int64_t real_off;	/* host realtime - host mono at the sample */
	int64_t boot_off;
	int64_t tai_off;
} Point;

struct _HaClockMap {
	GArray *points;		/* Point, by guest time */
};

static int sample_cmp(gconstpointer a, gconstpointer b)
{
	const HaClockSample *x = a, *y = b;

	return x->guest_ts < y->guest_ts ? -1 : x->guest_ts > y->guest_ts;
}

static Point point_of(const HaClockSample *s)
{
	/* the midpoints, without overflowing: lo + (hi - lo) / 2 */
	int64_t mono_mid = s->mono_lo + (s->mono_hi - s->mono_lo) / 2;
	int64_t real_mid = s->real_lo + (s->real_hi - s->real_lo) / 2;

	return (Point){
		.guest = s->guest_ts,
		.offset = mono_mid - (int64_t)s->guest_ts,
		.uncert = (uint64_t)(s->mono_hi - s->mono_lo + 1) / 2,
		.real_off = real_mid - mono_mid,
		.boot_off = s->boot_off,
		.tai_off = s->tai_off,
	};
}

HaClockMap *ha_clockmap_new(const HaClockSample *samples, guint n)
{
	HaClockMap *m = g_new0(HaClockMap, 1);
	g_autoptr(GArray) sorted = g_array_sized_new(FALSE, FALSE, sizeof(HaClockSample), n);
	guint i = 0;

	m->points = g_array_new(FALSE, FALSE, sizeof(Point));
	for (guint k = 0; k < n; k++)
		if (samples[k].mono_hi >= samples[k].mono_lo &&
		    samples[k].guest_ts <= INT64_MAX)
			g_array_append_val(sorted, samples[k]);
	g_array_sort(sorted, sample_cmp);
	/* the lowest round trip of each window: the others only say their reply was late */
	while (i < sorted->len) {
		const HaClockSample *first = &g_array_index(sorted, HaClockSample, i);
		const HaClockSample *best = first;
		uint64_t end = first->guest_ts + (uint64_t)HA_CLOCK_WINDOW_NS;
		Point pt;

		for (; i < sorted->len; i++) {
			const HaClockSample *s = &g_array_index(sorted, HaClockSample, i);

			if (s->guest_ts >= end)
				break;
			if (s->mono_hi - s->mono_lo < best->mono_hi - best->mono_lo)
				best = s;
		}
		pt = point_of(best);
		g_array_append_val(m->points, pt);
	}
	return m;
}

HaClockMap *ha_clockmap_load(HaStore *s, int64_t boot, GError **error)
{
	g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(HaClockSample));

	if (!ha_store_clock_samples(s, boot, a, error))
		return NULL;
	return ha_clockmap_new((const HaClockSample *)(void *)a->data, a->len);
}

void ha_clockmap_free(HaClockMap *m)
{
	if (!m)
		return;
	g_array_unref(m->points);
	g_free(m);
}

guint ha_clockmap_points(const HaClockMap *m)
{
	return m->points->len;
}

void ha_clockmap_point(const HaClockMap *m, guint i, uint64_t *ret_guest_ns,
		       int64_t *ret_mono_offset_ns, uint64_t *ret_uncert_ns)
{
	const Point *p = &g_array_index(m->points, Point, i);

	*ret_guest_ns = p->guest;
	*ret_mono_offset_ns = p->offset;
	*ret_uncert_ns = p->uncert;
}

/* The last point at or before @g (0 when @g is before the first). */
static guint point_before(const HaClockMap *m, uint64_t g)
{
	guint lo = 0, hi = m->points->len;

	while (hi - lo > 1) {
		guint mid = lo + (hi - lo) / 2;

		if (g_array_index(m->points, Point, mid).guest <= g)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

bool ha_clockmap_to_host(const HaClockMap *m, uint64_t guest_ns, HaHostClock clock,
			 int64_t *ret_host_ns, uint64_t *ret_uncert_ns)
{
	guint n = m->points->len, i;
	const Point *a, *b, *near;
	int64_t offset;
	uint64_t uncert;

	if (!n)
		return false;
	i = point_before(m, guest_ns);
	if (n > 1 && guest_ns >= g_array_index(m->points, Point, n - 1).guest)
		i = n - 2;	/* after the last sample: the last segment's line */
	a = &g_array_index(m->points, Point, i);
	if (n == 1) {
		uint64_t dist = guest_ns < a->guest ? a->guest - guest_ns : guest_ns - a->guest;

		offset = a->offset;
		uncert = a->uncert + (uint64_t)((double)dist * HA_CLOCK_DRIFT_PPM / 1e6);
		near = a;
	} else {
		/* between two samples, or beyond the ends on the end segment's line (the
		 * drift it measured holds on, as trace-cmd extrapolates TIME_SHIFT) */
		double f;

		b = &g_array_index(m->points, Point, i + 1);
		f = ((double)guest_ns - (double)a->guest) / (double)(b->guest - a->guest);
		offset = a->offset + (int64_t)round_i64((double)(b->offset - a->offset) * f);
		if (f < 0 || f > 1) {
			const Point *end = f < 0 ? a : b;
			uint64_t dist = f < 0 ? a->guest - guest_ns : guest_ns - b->guest;

			uncert = end->uncert + (uint64_t)((double)dist * HA_CLOCK_DRIFT_PPM / 1e6);
		} else {
			uncert = (uint64_t)round_i64((double)a->uncert +
						   ((double)b->uncert - (double)a->uncert) * f);
		}
		near = f < 0.5 ? a : b;
	}
	offset += (int64_t)guest_ns;	/* host CLOCK_MONOTONIC */
	switch (clock) {
	case HA_HOSTCLOCK_MONO:
		break;
	case HA_HOSTCLOCK_BOOT:
		offset += near->boot_off;
		break;
	case HA_HOSTCLOCK_REALTIME:
		offset += near->real_off;
		break;
	case HA_HOSTCLOCK_TAI:
		offset += near->real_off + near->tai_off;
		break;
	}
	*ret_host_ns = offset;
	*ret_uncert_ns = uncert;
	return true;
}
