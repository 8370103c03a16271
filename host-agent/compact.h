/* SPDX-License-Identifier: MIT */
/*
 * compact.h - merge a boot's small chunks into larger ones, off the ACK path.
 *
 * The ingest commits a batch when the guest's input runs dry and its oldest frame
 * is HA_COMMIT_DELAY_US old (ingest.h), so a slow stream stores small chunks, and
 * small chunks compress worse (zstd sees less of the stream at once). Once the
 * connection is idle, ha_compact_step() merges the oldest run of a CPU's small
 * chunks (below HA_COMPACT_SMALL raw bytes each, consecutive among that CPU's chunks
 * by id, together at least HA_COMPACT_SMALL) into one chunk: inflated, concatenated
 * (the packed layout of chunk.h concatenates) and compressed again, in one
 * transaction, so that a crash at any instant leaves either the small chunks or the
 * merged one, never both or neither.
 *
 * The merged chunk takes the first chunk's id, the smallest first_seq and ts_min,
 * the largest last_seq and ts_max, and the sums of the page, event and traced
 * counts: every reader orders and counts it as it did its parts (reports by ts_max
 * and id, export by first_seq and id, per CPU). Chunks without a time range (pages
 * stored before their formats) are never merged, nor are chunks recovered from a
 * crashed guest's memory (postmortem.h), which stay apart from the streamed ones.
 */
#ifndef HA_COMPACT_H
#define HA_COMPACT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "chunk.h"
#include "store.h"

#define HA_COMPACT_SMALL	(1u << 20)	/* raw bytes: smaller chunks are merged */

/*
 * One merge among @boot's chunks of id >= @from_id, outside any transaction of @s.
 * @all also merges a last run below HA_COMPACT_SMALL (the stream ended). Returns 1
 * when it merged a run, 0 when there is nothing (more) to merge, -1 with @error on a
 * store or zstd failure (the transaction is then rolled back: nothing changed).
 */
int ha_compact_step(HaStore *s, int64_t boot, int64_t from_id, bool all, int level,
		    GError **error);

#endif /* HA_COMPACT_H */
