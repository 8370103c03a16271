/* SPDX-License-Identifier: MIT */
/*
 * pm-frames.h - frames rebuilt from a crashed guest's memory, for the replay.
 *
 * What the post-mortem recovers from a dump (the ring buffers' unread pages,
 * pm-ring.h; the map entries the delta reader had not read, pm-map.h) is turned
 * into the frames the guest agent would have sent (PAGE, STACKS, EPOCH;
 * proto/PROTOCOL.md), so that it is checked, stored and resolved by the same
 * ingest code as what was streamed (postmortem.c replays them through a
 * connection of the crashed boot's stream). A HaPmFrames collects them in order,
 * each sealed with the next sequence number.
 */
#ifndef HA_PM_FRAMES_H
#define HA_PM_FRAMES_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
	GByteArray *out;	/* sealed frames, in order */
	uint64_t seq;		/* the next frame's seq */
	uint64_t frames;	/* frames added */
} HaPmFrames;

void ha_pm_frames_init(HaPmFrames *f, uint64_t first_seq);
void ha_pm_frames_clear(HaPmFrames *f);

/* Seal one frame of @type around @payload (at most SMP_MAX_PAYLOAD bytes). */
bool ha_pm_frames_add(HaPmFrames *f, uint8_t type, const void *payload, size_t len,
		      GError **error);

/*
 * Delta records (PROTOCOL.md 4.5) in @buf, @len bytes: each epoch record as an
 * EPOCH frame, runs of stack records as STACKS frames of at most SMP_MAX_PAYLOAD
 * bytes. Records are checked with smp_delta_next(); the first invalid one ends the
 * run (false with @error; what came before it is kept). @ret_stacks and
 * @ret_epochs (may be NULL) are incremented by the records added.
 */
bool ha_pm_frames_add_deltas(HaPmFrames *f, const uint8_t *buf, size_t len,
			     uint64_t *ret_stacks, uint64_t *ret_epochs, GError **error);

#endif /* HA_PM_FRAMES_H */
