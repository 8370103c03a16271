/* SPDX-License-Identifier: MIT */
/*
 * clocksync.h - the guest's trace clock placed on the host's clocks (PROTOCOL.md 4.11).
 *
 * Overview
 * --------
 * A probe is a PTP-like exchange on the port. The host takes its clocks (t1) and sends
 * TIME with a probe id; the guest agent writes the id into its trace_marker, so that the
 * guest's own ring buffer stamps it with the trace clock (g), and answers TIME_REPLY;
 * the host takes its clocks again when the read that completed the reply returned
 * (t2). The marker reaches the host later in a PAGE, as an ftrace/print event. Since
 * t1 <= g <= t2 in host time, a probe gives the offset g - (t1 + t2) / 2 to within
 * (t2 - t1) / 2. This works whatever the trace clock is (local, global, boot, ...): the
 * guest never reads its clock itself.
 *
 * Two halves:
 *
 *  - HaClockProbe, one per connection (ingest.h): when to send the next TIME (every
 *    interval, once the guest's HELLO offered TIME), each outstanding probe's t1, t2
 *    and g, matched by id whichever of reply and marker comes first. Bounded:
 *    HA_CLOCK_PENDING probes outstanding at most, each forgotten HA_CLOCK_EXPIRE_US
 *    after it was sent; replies and markers for ids it does not hold are ignored and
 *    counted. Completed probes are HaClockSamples, which the ingest stores per boot
 *    (table clock_samples, store.h) in the transaction of its next batch.
 *
 *  - HaClockMap, one per boot (reports, exports, the fleet): the boot's stored samples
 *    reduced to the lowest round trip of each HA_CLOCK_WINDOW_NS of guest time (the
 *    others are late replies, not information), interpolated linearly between them:
 *    guest ns -> host ns on a chosen host clock, with an uncertainty that is the
 *    interpolated half round trip of the two samples around it. Beyond the first and
 *    last sample the end segment's line goes on (the drift it measured; trace-cmd
 *    extrapolates TIME_SHIFT the same way), with one sample its offset holds, and the
 *    uncertainty grows by HA_CLOCK_DRIFT_PPM of the distance (a bound on the relative
 *    drift of two quartz clocks).
 *    An old guest never answers: its map is empty and every lookup says "no host time".
 */
#ifndef HA_CLOCKSYNC_H
#define HA_CLOCKSYNC_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

#define HA_CLOCK_PROBE_MS	1000u		/* default probe interval */
#define HA_CLOCK_PENDING	8u		/* outstanding probes per connection */
#define HA_CLOCK_EXPIRE_US	(10 * G_USEC_PER_SEC)
#define HA_CLOCK_WINDOW_NS	(4 * (int64_t)1000000000)
#define HA_CLOCK_DRIFT_PPM	100

/* The host's clocks at one instant, ns: CLOCK_MONOTONIC and CLOCK_REALTIME read back to
 * back, with CLOCK_BOOTTIME - CLOCK_MONOTONIC and CLOCK_TAI - CLOCK_REALTIME. */
typedef struct {
	int64_t mono;
	int64_t real;
	int64_t boot_off;
	int64_t tai_off;
} HaHostTime;

void ha_host_time_now(HaHostTime *ret);

/* One answered probe: the guest's trace clock @guest_ts lies in host [lo, hi]. */
typedef struct {
	uint64_t guest_ts;
	uint32_t cpu;		/* the guest ring the marker was in */
	int64_t mono_lo, mono_hi;
	int64_t real_lo, real_hi;
	int64_t boot_off, tai_off;	/* at lo */
} HaClockSample;

/* ---- per connection ---------------------------------------------------------- */

typedef struct _HaClockProbe HaClockProbe;

typedef struct {
	uint64_t sent;
	uint64_t replies;	/* matched replies */
	uint64_t markers;	/* matched markers */
	uint64_t samples;	/* completed */
	uint64_t failed;	/* replies whose marker write failed in the guest */
	uint64_t unmatched;	/* replies or markers of no outstanding probe (ignored) */
	uint64_t expired;	/* probes forgotten unanswered */
	int64_t best_rtt_ns;	/* lowest round trip so far, -1: none */
} HaClockProbeStats;

/* @interval_ms between probes (0: never probe). Free with ha_clock_probe_free(). */
HaClockProbe *ha_clock_probe_new(guint interval_ms);
void ha_clock_probe_free(HaClockProbe *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaClockProbe, ha_clock_probe_free)

/* A new session: forget every outstanding probe and completed sample. */
void ha_clock_probe_reset(HaClockProbe *p);

/*
 * Is a probe due at @now (monotonic µs, g_get_monotonic_time())? When it is, returns
 * true with its id in *ret_id and remembers @t1 for it: the caller sends TIME at once.
 * Expires probes older than HA_CLOCK_EXPIRE_US first. False while the interval has
 * not passed or HA_CLOCK_PENDING probes are outstanding.
 */
bool ha_clock_probe_next(HaClockProbe *p, gint64 now, const HaHostTime *t1,
			 uint64_t *ret_id);
/* The guest's TIME_REPLY for @id, read at @t2. False when @id is not outstanding. */
bool ha_clock_probe_reply(HaClockProbe *p, uint64_t id, int32_t status,
			  const HaHostTime *t2);
/* The guest's marker event for @id, stamped @guest_ts on @cpu. False when unknown. */
bool ha_clock_probe_marker(HaClockProbe *p, uint64_t id, uint64_t guest_ts, uint32_t cpu);

/* Completed samples not taken yet (owned by @p, valid until the next call). */
const HaClockSample *ha_clock_probe_samples(const HaClockProbe *p, guint *ret_n);
/* They were stored: forget them. */
void ha_clock_probe_samples_done(HaClockProbe *p);
const HaClockProbeStats *ha_clock_probe_stats(const HaClockProbe *p);

/*
 * The marker events: the ftrace/print format's event id and the offset of its `buf`
 * field, from the FORMAT text (-1 / false when the text is not such a format).
 */
typedef struct {
	int type;		/* event id, -1: unknown */
	uint32_t buf_off;
} HaMarkerFormat;
bool ha_marker_format_parse(const char *text, size_t len, HaMarkerFormat *ret);
/* The probe id of a raw print event (@data, @size as tep.h delivers it) when it is a
 * probe marker. */
bool ha_marker_event_id(const HaMarkerFormat *mf, int type, const void *data,
			uint32_t size, uint64_t *ret_id);

/* ---- per boot ------------------------------------------------------------------ */

typedef enum {
	HA_HOSTCLOCK_REALTIME,
	HA_HOSTCLOCK_MONO,
	HA_HOSTCLOCK_BOOT,
	HA_HOSTCLOCK_TAI,
} HaHostClock;

/* "realtime", "mono", "boot", "tai" (the names of trace-cmd's -C clocks). */
bool ha_host_clock_parse(const char *name, HaHostClock *ret);
const char *ha_host_clock_name(HaHostClock clock);

typedef struct _HaClockMap HaClockMap;

/* The samples of boot @boot (boots.id). NULL with @error only on a store failure; a
 * boot without samples gives an empty map. Free with ha_clockmap_free(). */
HaClockMap *ha_clockmap_load(HaStore *s, int64_t boot, GError **error);
/* A map from samples in memory (tests, tools): @samples in any order. */
HaClockMap *ha_clockmap_new(const HaClockSample *samples, guint n);
void ha_clockmap_free(HaClockMap *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaClockMap, ha_clockmap_free)

/* Samples kept after the per-window reduction (0: no host time for this boot). */
guint ha_clockmap_points(const HaClockMap *m);
/* Point @i (< ha_clockmap_points()): its guest time, offset to CLOCK_MONOTONIC (host
 * mono = guest + offset) and uncertainty. */
void ha_clockmap_point(const HaClockMap *m, guint i, uint64_t *ret_guest_ns,
		       int64_t *ret_mono_offset_ns, uint64_t *ret_uncert_ns);

/*
 * Guest trace-clock @guest_ns as host time on @clock (ns since that clock's epoch), and
 * how far off it may be. False when the boot has no samples (nothing is written).
 */
bool ha_clockmap_to_host(const HaClockMap *m, uint64_t guest_ns, HaHostClock clock,
			 int64_t *ret_host_ns, uint64_t *ret_uncert_ns);

#endif /* HA_CLOCKSYNC_H */
