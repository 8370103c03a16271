/* SPDX-License-Identifier: MIT */
/*
 * pm-map.h - the stack map's entries out of a crashed guest's memory.
 *
 * Every stack_id in a recovered page must resolve, and so must the ids of the last
 * streamed pages whose map entries the delta reader (stack_map_delta) had not read
 * yet. This takes, in the order the reader would have returned them:
 *   1. the records queued for the reader (ftrace_stackmap.delta_backlog, from each
 *      chunk's read offset): tails of ended epochs and their epoch records;
 *   2. when the reader was still reading the previous map (delta_gen is not cur),
 *      that map's elts from the reader's position (delta_next);
 *   3. the epoch in effect (EPOCH) and every published entry of the current map,
 *      whole: what the host already has of it is a duplicate, which ingest
 *      ignores (the same id with the same frames), so the seam is exact without
 *      trusting the reader's position for the live map.
 * The layout comes from the guest kernel (patch 0014: SYMBOL(ftrace_stackmap_dump_info)
 * and SYMBOL(global_trace)).
 *
 * Hostile input: the pool and table sizes are bounded by the map's bits limit, each
 * elt must point back from its table entry (published), depths are bounded, the
 * backlog walk by a count of chunks and of bytes, records are checked by
 * smp_delta_next(); a corrupted part stops that part, reported in the stats.
 */
#ifndef HA_PM_MAP_H
#define HA_PM_MAP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "kvmem.h"
#include "pm-frames.h"
#include "vmcoreinfo.h"

#define HA_PM_MAP_MAX_ELTS		(1u << 18)	/* FTRACE_STACKMAP_BITS_MAX */
#define HA_PM_MAP_MAX_CHUNKS		65536u
#define HA_PM_MAP_MAX_BACKLOG_BYTES	(512ull << 20)

typedef struct {
	bool present;		/* the guest has a stack map */
	uint64_t epoch;		/* the epoch in effect */
	uint64_t backlog_records; /* stack records from the reader's backlog */
	uint64_t unread_records; /* from the previous map, after the reader's position */
	uint64_t live_records;	/* published entries of the current map */
	uint64_t epochs;	/* EPOCH frames added */
	char *why;		/* what could not be walked, or NULL */
} HaPmMapStats;

void ha_pm_map_stats_clear(HaPmMapStats *st);

/*
 * Add the map's unread records to @frames (STACKS and EPOCH frames). False with
 * @error when the layout is missing or implausible (nothing added); a part that
 * could not be walked is in @st->why, and what came before it is kept.
 */
bool ha_pm_map_recover(HaKvmem *m, const HaVmci *vi, HaPmFrames *frames,
		       HaPmMapStats *st, GError **error);

#endif /* HA_PM_MAP_H */
