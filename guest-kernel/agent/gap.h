/* SPDX-License-Identifier: MIT */
/*
 * gap.h - after a gap, what the host lacks goes ahead of the held frames it lacks
 * (PROTOCOL.md section 3.2).
 *
 * Overview
 * --------
 * A gap is a run of frames the host will never get: dropped from the full window
 * while it was away (seen at WELCOME) or while it was connected but slower than the
 * guest (seen when everything before the gap is written). The held frames after it
 * may need what the gap carried:
 *
 *   FORMAT, KSYMS, MODULES   the pages are parsed with them: a new metadata snapshot;
 *   CMDLINES                 (the task names) the same snapshot carries the whole table;
 *   STACKS, EPOCH            a STACKS frame is for the epoch in effect where it was
 *                            queued, and the host refuses one before the stream's
 *                            first EPOCH: the EPOCH frame in effect at the first held
 *                            frame kept goes first, and the caller re-opens the delta
 *                            file so the current epoch and its whole map follow.
 *
 * Whatever goes ahead takes room in the window, so making room can drop more of the
 * oldest held frames: those are part of the gap too. gap_fill() therefore decides on
 * every frame the host will not get, the ones the splice drops included, and repeats
 * until that set stops growing (at most three rounds: each adds metadata or the map).
 *
 * Pure apart from the window and the metadata callback; no I/O.
 */
#ifndef SMG_GAP_H
#define SMG_GAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "window.h"

#define GAP_BIT(t) (1ull << (t))
/* Types whose loss needs a new metadata snapshot ahead of the held frames. */
#define GAP_META_TYPES (GAP_BIT(SMP_FORMAT) | GAP_BIT(SMP_KSYMS) | GAP_BIT(SMP_MODULES) | \
			GAP_BIT(SMP_CMDLINES))
/* Types whose loss needs the epoch in effect ahead and the whole map after. */
#define GAP_MAP_TYPES (GAP_BIT(SMP_STACKS) | GAP_BIT(SMP_EPOCH))

struct gap_ops {
	/* Queue a whole new metadata snapshot into @front: 0 or -errno. */
	int (*metadata)(void *ctx, struct win *front);
	void *ctx;
	/* Bounds of the front window (those of the held one). */
	size_t win_bytes;
	uint32_t win_frames;
	/* Kept free behind a new snapshot: the pages that keep coming until it is written
	 * must not push it out (see agent_after_gap()). */
	size_t headroom_bytes;
	uint32_t headroom_frames;
};

struct gap_result {
	uint64_t types;		/* 1 << type of every frame the host will not get */
	bool meta;		/* a new metadata snapshot went ahead */
	bool map;		/* map records were lost: the caller re-opens the delta file */
	bool epoch;		/* the epoch in effect went ahead (map, and one was known) */
	bool spliced;		/* the window was rebuilt (else only the gap was seen) */
	uint64_t first;		/* the first held frame kept, its seq before the splice */
	uint64_t at;		/* its seq now (the next seq when none is kept) */
	int64_t shift;		/* added to the seq of every kept frame */
	uint64_t made_room;	/* held frames dropped to make room for what went ahead */
	uint64_t front_dropped;	/* snapshot frames that did not fit the window (its start) */
};

/*
 * The host resumes at @resume_seq and frames from there on are gone (win_gap_from()).
 * The window tracks EPOCH frames (win_track()): the epoch in effect anywhere is
 * known. Puts what the host lacks ahead of the held frames it lacks (win_splice()), or,
 * when the gap held nothing they need, only marks it seen. Returns 0, or -errno with
 * @held unchanged (the caller starts a fresh stream).
 */
int gap_fill(struct win *held, uint64_t resume_seq, const struct gap_ops *ops,
	     struct gap_result *ret);

#endif
