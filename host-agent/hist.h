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
 * The time ranges matter only once the 11-bit epoch tag can have wrapped (more than
 * 2048 epochs in the boot); before that the chunk's own range stands in for them.
 *
 * Encoding: one byte, 1 when entries carry time ranges, 0 when not; then per entry the
 * LEB128 varints key, count, and with ranges ts_min - base, ts_max - ts_min (base:
 * the chunk's ts_min). key 0: no stack; key 2*(gen << 31 | id) + 2: the map stack_id
 * `id` in tag generation `gen` (epoch >> 11 as the ingest estimated it, so that ids of
 * epochs 2048 apart stay apart); key 2*n + 1: fullstacks row n.
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
	int64_t id;		/* gen << 31 | stack_id, or fullstacks.id */
	uint64_t count;
	uint64_t ts_min;
	uint64_t ts_max;
} HaHistEnt;

/* Start an empty histogram in @out; @ranges: its entries carry time ranges. */
void ha_hist_init(GByteArray *out, bool ranges);

/* Append one entry to @out (after ha_hist_init()); @base <= e->ts_min <= e->ts_max. */
void ha_hist_put(GByteArray *out, const HaHistEnt *e, uint64_t base);

/* Decode the entry at *off (0 for the first): 1 and advance, 0 at the end, -1 when
 * malformed. [@base, @top] is the chunk's time range, the entries' when they have
 * none of their own. */
int ha_hist_next(const uint8_t *buf, size_t len, size_t *off, uint64_t base,
		 uint64_t top, HaHistEnt *ret);

#endif /* HA_HIST_H */
