/* SPDX-License-Identifier: MIT */
/*
 * hist.h - a chunk's stack histogram: how many of the traced events finished in that
 * chunk had which stack. Stored as one BLOB per chunk (chunks.stacks) so that `report
 * top` never decodes pages and the histogram costs a few bytes per distinct stack per
 * chunk, not a row.
 *
 * Each entry also carries the time range of its events, which resolution needs: a
 * stack_id resolves through the epoch in effect at its events' time (report.h).
 *
 * Encoding: a sequence of (key, count, ts_min - base, ts_max - ts_min) LEB128 varints,
 * base being the chunk's ts_min. key 0: no stack; key 2*id + 2: the map stack_id `id`;
 * key 2*n + 1: fullstacks row n.
 */
#ifndef HA_HIST_H
#define HA_HIST_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
	HA_HIST_NONE,
	HA_HIST_ID,
	HA_HIST_FULL,
} HaHistKind;

typedef struct {
	HaHistKind kind;
	int64_t id;		/* stack_id or fullstacks.id */
	uint64_t count;
	uint64_t ts_min;
	uint64_t ts_max;
} HaHistEnt;

/* Append one entry to @out; @base <= e->ts_min <= e->ts_max. */
void ha_hist_put(GByteArray *out, const HaHistEnt *e, uint64_t base);

/* Decode the entry at *off: 1 and advance, 0 at the end, -1 when malformed. */
int ha_hist_next(const uint8_t *buf, size_t len, size_t *off, uint64_t base,
		 HaHistEnt *ret);

#endif /* HA_HIST_H */
