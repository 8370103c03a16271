// SPDX-License-Identifier: MIT
/*
 * gap.c - what the host lacks after a gap, ahead of the held frames (see gap.h).
 */
#include <errno.h>
#include <string.h>

#include "gap.h"

/* Room what goes ahead takes, and the seq of the first held frame that still fits. */
static uint64_t first_kept(const struct win *held, const struct win *front, bool meta,
			   bool map, const struct gap_ops *ops, uint64_t resume_seq)
{
	struct win_stats fs = { 0 };
	size_t bytes;
	uint32_t frames;

	if (front)
		win_get_stats(front, &fs);
	bytes = fs.bytes;
	frames = fs.frames;
	if (meta) {
		bytes += ops->headroom_bytes;
		frames += ops->headroom_frames;
	}
	if (map) {
		bytes += SMP_HDR_SIZE + SMP_DELTA_EPOCH_SIZE;
		frames++;
	}
	return win_splice_first_kept(held, bytes, frames, resume_seq);
}

int gap_fill(struct win *held, uint64_t resume_seq, const struct gap_ops *ops,
	     struct gap_result *ret)
{
	uint64_t types = win_gap_types(held), lo, first;
	struct win *front = NULL;
	struct win_stats hs, fs;
	bool meta, map;
	int64_t at;
	int r;

	memset(ret, 0, sizeof(*ret));
	win_get_stats(held, &hs);
	lo = resume_seq > hs.oldest_seq ? resume_seq : hs.oldest_seq;
	meta = types & GAP_META_TYPES;
	map = types & GAP_MAP_TYPES;
	if (!meta && !map) {
		/* pages, LOST, STATS: the gap is the loss, the host can parse the rest */
		win_gap_seen(held);
		ret->types = types;
		ret->first = ret->at = lo;
		return 0;
	}
	r = win_new(ops->win_bytes, ops->win_frames, &front);
	if (r < 0)
		return r;
	/*
	 * Making room ahead drops the oldest held frames the host lacks: what they
	 * carried is lacking too. Decide on all of it; the set only grows.
	 */
	for (;;) {
		uint64_t more;

		if (meta && !ret->meta) {
			r = ops->metadata(ops->ctx, front);
			if (r < 0)
				goto out;
			ret->meta = true;
		}
		first = first_kept(held, front, meta, map, ops, resume_seq);
		more = win_held_types(held, lo, first);
		if (!(more & (GAP_META_TYPES | GAP_MAP_TYPES) & ~types)) {
			types |= more;
			break;
		}
		types |= more;
		meta = types & GAP_META_TYPES;
		map = types & GAP_MAP_TYPES;
	}
	if (map) {
		/* held STACKS frames from @first on are for the epoch in effect there */
		uint32_t len = 0;
		const uint8_t *rec = win_last_before(held, first, &len);

		if (rec) {
			int64_t s = win_append(front, SMP_EPOCH, rec, len);

			if (s < 0) {
				r = (int)s;
				goto out;
			}
			ret->epoch = true;
		}
	}
	win_get_stats(front, &fs);
	ret->front_dropped = fs.dropped_frames;
	at = win_splice(held, front, resume_seq, first, &ret->shift);
	if (at < 0) {
		r = (int)at;
		goto out;
	}
	ret->types = types;
	ret->meta = meta;
	ret->map = map;
	ret->spliced = true;
	ret->first = first;
	ret->at = (uint64_t)at;
	ret->made_room = first - lo;
	r = 0;
out:
	win_free(front);
	return r;
}
