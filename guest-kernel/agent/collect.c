// SPDX-License-Identifier: MIT
/*
 * collect.c - moving what the kernel produces into the window: each CPU's ring-buffer
 * pages, then the stack map's delta records (after the pages: every stack_id in them
 * was inserted before its event), and the periodic rescan. The --test-hold-drops hook
 * lives here too, as it stops exactly this reading.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "sysinfo.h"

/* Most pages read from one CPU per collect round: bounds the time of one round. */
#define COLLECT_MAX_PAGES 1024

void agent_delta_open(struct agent *a)
{
	int r;

	if (a->delta.fd >= 0)
		return;
	r = delta_open(&a->delta);
	if (r == -ENOENT)
		log_once(LOG_NOTICE, "%s does not exist (kernel without the delta export): "
			 "streaming pages without stack deltas", a->delta.path);
	else if (r == -EBUSY)
		log_once(LOG_WARNING, "%s is held by another reader: no stack deltas until "
			 "it is released", a->delta.path);
	else if (r < 0)
		log_once(LOG_WARNING, "cannot open %s: %s", a->delta.path, strerror(-r));
	else
		log_info("reading stack deltas from %s", a->delta.path);
}

/* @dc says an EPOCH frame was queued: the stream's first one? */
static void note_first_epoch(struct agent *a, const struct delta_counts *dc)
{
	if (a->first_epoch_seq || !dc->epochs)
		return;
	a->first_epoch_seq = dc->first_epoch_seq;
	log_info("the stream's first EPOCH (epoch %" PRIu64 ") is seq %" PRIu64,
		 dc->first_epoch, dc->first_epoch_seq);
	if (a->o.test_stall && !a->held_once)
		sess_stall(&a->sess, dc->first_epoch_seq +
				     (a->o.test_stall == TEST_STALL_AFTER_EPOCH));
}

void agent_collect_delta(struct agent *a)
{
	for (int round = 0; round < 64 && a->delta.fd >= 0; round++) {
		struct delta_counts dc = { 0 };
		size_t bad = 0;
		long n = delta_read(&a->delta), used;

		if (n < 0) {
			log_warning("reading %s: %s; reopening later", a->delta.path,
				    strerror((int)-n));
			delta_close(&a->delta);
			return;
		}
		if (a->delta.len == 0)
			return;
		/* each record once, when whole (a no-op on little-endian guests) */
		a->delta.le += delta_to_le(a->delta.buf + a->delta.le,
					   a->delta.len - a->delta.le);
		used = stream_delta(a->win, a->delta.buf, a->delta.len, 0, &dc, &bad);
		a->c.stacks += dc.stacks;
		a->c.epochs += dc.epochs;
		if (dc.epochs) {
			a->map_epoch = dc.last_epoch;
			note_first_epoch(a, &dc);
		}
		if (used == -EBADMSG) {
			a->c.bad_deltas++;
			log_error("%s returned an invalid record at offset %zu: %zu bytes "
				  "discarded", a->delta.path, bad, a->delta.len - bad);
			delta_consume(&a->delta, a->delta.len);
			return;
		}
		if (used < 0) {
			log_warning("cannot queue delta records: %s", strerror((int)-used));
			return;
		}
		delta_consume(&a->delta, (size_t)used);
		/* no read only to get EAGAIN after one that took all there was */
		if (n == 0 || !a->delta.more)
			return;
	}
}

/*
 * The backpressure half of agent_holding(). The hold starts when the window has less
 * than a reserve free: a quarter of it, or, in bytes, room for the next KSYMS and
 * MODULES when that is more (a module load queues both, held or not: without the room
 * the window would drop frames to take them), at most half the window. It ends once
 * the window is down to two thirds of the mark (half the window with the quarter).
 */
static bool window_full(struct agent *a)
{
	size_t cap = (size_t)a->o.window_kb * 1024;
	uint64_t fmax = a->o.window_frames;
	size_t reserve = cap / 4, mark;
	struct win_stats ws;

	if (!a->o.hold_when_full || a->stopping) {
		a->window_full = false;
		return false;
	}
	if (a->ksyms_len + a->modules_len > reserve)
		reserve = a->ksyms_len + a->modules_len < cap / 2 ?
			  a->ksyms_len + a->modules_len : cap / 2;
	mark = cap - reserve;
	win_get_stats(a->win, &ws);
	if (!a->window_full && (ws.bytes > mark || ws.frames > fmax / 4 * 3)) {
		a->window_full = true;
		a->c.window_full_holds++;
		log_once(LOG_INFO, "the window holds %zu bytes in %" PRIu32 " frames the host "
			 "has not acknowledged (%zu bytes kept free for metadata): not reading "
			 "the ring buffers until it is down to two thirds of that (the exit "
			 "line counts every time)", ws.bytes, ws.frames, reserve);
	} else if (a->window_full && ws.bytes <= mark / 3 * 2 && ws.frames <= fmax / 2) {
		a->window_full = false;
	}
	return a->window_full;
}

bool agent_holding(struct agent *a)
{
	struct win_stats ws;

	if (window_full(a))
		return true;
	if (!a->o.test_hold_drops || (!a->holding && a->held_once))
		return false;
	win_get_stats(a->win, &ws);
	if (!a->holding) {
		if (ws.dropped_frames < a->o.test_hold_drops)
			return false;
		a->holding = a->held_once = true;
		sess_stall(&a->sess, 0);
		log_notice("test hook: %" PRIu64 " frames dropped, the window holds seqs %"
			   PRIu64 "..%" PRIu64 ": holding (the ring buffers are not read) "
			   "until the host has every frame held", ws.dropped_frames,
			   ws.oldest_seq, ws.next_seq - 1);
		return true;
	}
	if (a->sess.state == SESS_UP && !win_gap_from(a->win) && ws.acked + 1 >= ws.next_seq) {
		a->holding = false;
		log_notice("test hook: the host has every frame held (up to seq %" PRIu64
			   "): reading the ring buffers again", ws.acked);
		return false;
	}
	return true;
}

unsigned agent_collect(struct agent *a)
{
	bool missed_any = false;
	unsigned pages = 0;

	for (uint32_t i = 0; a->rings && i < a->rings->count; i++) {
		struct ring_cpu *c = &a->rings->cpus[i];

		for (int k = 0; k < COLLECT_MAX_PAGES; k++) {
			uint32_t room = (uint32_t)(SMP_PAGE_FIXED + a->rings->page_size);
			const uint8_t *page;
			uint8_t *f = NULL;
			int missed = 0;
			uint64_t ts;
			int r;

			if (agent_holding(a))
				return pages;
			/*
			 * Read the page straight into a frame of the window when one fits
			 * without dropping anything (no copy of our own); a full window
			 * drops its oldest frames only for a page that was read.
			 */
			if (win_fits(a->win, room) && win_reserve(a->win, room, &f) < 0)
				f = NULL;
			r = ring_read_page(a->rings, c,
					   f ? f + SMP_HDR_SIZE + SMP_PAGE_FIXED : NULL, &page);
			if (f && (r != 1 || page != f + SMP_HDR_SIZE + SMP_PAGE_FIXED)) {
				win_cancel(a->win);
				f = NULL;
			}
			if (r == 0)
				break;
			if (r < 0) {
				log_once(LOG_ERR, "reading cpu%" PRIu32 " trace_pipe_raw: %s",
					 c->cpu, strerror(-r));
				break;
			}
			pages++;
			/* only for the latency figure: no walk of the page without it */
			ts = a->lat.enabled ?
			     page_first_ts(&a->pl, page, a->rings->page_size) : 0;
			if (f)
				r = stream_page_reserved(a->win, &a->pl, c->cpu, f,
							 a->rings->page_size, &missed);
			else
				r = stream_page(a->win, &a->pl, c->cpu, page,
						a->rings->page_size, &missed);
			if (r == 1) {
				struct win_stats ws;

				a->c.pages++;
				win_get_stats(a->win, &ws);
				latency_page(&a->lat, ws.next_seq - 1, ts);
			}
			else if (r == 0)
				a->c.empty_pages++;
			else {
				a->c.bad_pages++;
				log_once(LOG_ERR, "cpu%" PRIu32 ": a page with an impossible "
					 "commit field (not sent, counted)", c->cpu);
			}
			if (missed) {
				a->c.missed_pages++;
				missed_any = true;
			}
			/*
			 * The read took everything committed on this CPU (ring.h): the
			 * next one would only fail with EAGAIN. What is committed from
			 * now on is read in the next round, as after an EAGAIN.
			 */
			if (c->caught_up)
				break;
		}
	}
	/* After the pages: every stack_id in them was inserted before its event. */
	agent_collect_delta(a);
	if (missed_any)
		agent_queue_lost(a, false);
	return pages;
}

void agent_rescan(struct agent *a)
{
	agent_collect(a);		/* the safety net for a missed wake-up */
	agent_rescan_metadata(a, a->win);
	agent_delta_open(a);
	agent_queue_lost(a, false);
	/*
	 * A page of the window moved? The page map costs the kernel a walk of every
	 * page (4,096 by default): read it only when /proc/vmstat says a page may have
	 * moved since it was read last (sysinfo.h), or when it has no list yet.
	 */
	if (!a->arena.known || sysinfo_pages_may_have_moved(&a->moves, a->o.procfs))
		agent_announce_arena(a, true);
}
