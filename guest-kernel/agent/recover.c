// SPDX-License-Identifier: MIT
/*
 * recover.c - after a gap (frames the host will never get, see gap.h): a new metadata
 * snapshot and the epoch in effect go ahead of the held frames the host lacks, and the
 * delta file is reopened so the whole current map follows them.
 */
#include <inttypes.h>
#include <string.h>

#include "agent.h"
#include "gap.h"
#include "log.h"

/* gap_fill()'s callback: a new generation of the snapshot, into @front. */
static int metadata_into(void *ctx, struct win *front)
{
	return agent_send_metadata(ctx, front, true);
}

int agent_after_gap(struct agent *a, uint64_t resume_seq)
{
	struct gap_ops ops = {
		.metadata = metadata_into,
		.ctx = a,
		.win_bytes = (size_t)a->o.window_kb * 1024,
		.win_frames = (uint32_t)a->o.window_frames,
		/*
		 * Keep at most half the window behind a new snapshot: it goes out first,
		 * but until it is written new pages keep coming, and in a full window each
		 * would push out the oldest frame, the snapshot itself.
		 */
		.headroom_bytes = (size_t)a->o.window_kb * 1024 / 2,
		.headroom_frames = (uint32_t)(a->o.window_frames / 2),
	};
	struct gap_result g;
	struct win_stats ws;
	int r;

	/*
	 * What the kernel handed over already belongs with the held frames (the reopen
	 * below would discard it, and at a reset the ending epoch's entries are only
	 * handed to this opener).
	 */
	agent_collect_delta(a);
	r = gap_fill(a->win, resume_seq, &ops, &g);
	if (r < 0) {
		log_error("cannot put what the host lacks ahead of the held frames: %s",
			  strerror(-r));
		return r;
	}
	if (!g.spliced) {
		win_get_stats(a->win, &ws);
		latency_rebase(&a->lat, ws.oldest_seq, 0);
		log_info("frames from %" PRIu64 " were dropped before the host got them: "
			 "pages and counters only, nothing to send again", resume_seq);
		return 0;
	}
	latency_rebase(&a->lat, g.first, g.shift);
	if (a->bye_seq)
		a->bye_seq = a->bye_seq >= g.first ? a->bye_seq + (uint64_t)g.shift : 0;
	if (a->first_epoch_seq)
		a->first_epoch_seq = a->first_epoch_seq >= g.first ?
				     a->first_epoch_seq + (uint64_t)g.shift : 0;
	win_get_stats(a->win, &ws);
	log_notice("frames %" PRIu64 "..%" PRIu64 " were dropped before the host got them "
		   "(%" PRIu64 " of them to make room): sending %s%s%s ahead of the %" PRIu64
		   " frames held%s", resume_seq, g.at - (uint64_t)g.shift - 1, g.made_room,
		   g.meta ? "a new snapshot" : "", g.meta && g.epoch ? " and " : "",
		   g.epoch ? "the epoch in effect" : "", ws.next_seq - g.at,
		   g.map ? ", the whole stack map after them" : "");
	if (g.front_dropped)
		log_warning("the new snapshot is larger than the window: its first %" PRIu64
			    " frames were cut (raise --window-kb)", g.front_dropped);
	if (g.map && !g.epoch && a->c.epochs)
		log_warning("the epoch in effect at seq %" PRIu64 " is not known: stack "
			    "records held from before the next epoch will be refused", g.at);
	if (g.map) {
		/* a new opener gets the current epoch and the whole map: after them */
		delta_close(&a->delta);
		agent_delta_open(a);
	}
	return 0;
}
