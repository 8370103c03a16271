// SPDX-License-Identifier: MIT
/*
 * test-gap.c - after a gap, what the host lacks goes ahead of the held frames
 * (gap_fill(), PROTOCOL.md section 3.2), in every order the timing can produce:
 *
 *   late host   the window overflowed while the host was away (WELCOME at 1):
 *               the drop range holds the first EPOCH, or only the first metadata
 *               frame and the room made for the new snapshot takes the first EPOCH
 *               (the late-overflow failure of issue 12);
 *   live host   the host was connected and stopped reading: the drop range starts
 *               at the first EPOCH, or after it (that EPOCH was ACKed and is gone);
 *   and         more than 64 epochs held after the first kept frame; the EPOCH
 *               going ahead making room by dropping a FORMAT (metadata needed too);
 *               a gap of pages only.
 *
 * The host is modelled on host-agent's rules: it applies frames in seq order and
 * counts gaps; a STACKS frame is refused unless the epoch it is for is the current
 * one (so before the stream's first EPOCH), an EPOCH never goes back, and a PAGE is
 * unparsable without the FORMAT of its event. Every frame carries its meaning in its
 * first payload byte: FORMAT and PAGE the event id, EPOCH and STACKS the epoch.
 */
#include <stdint.h>
#include <string.h>

#include "gap.h"
#include "proto.h"
#include "tap.h"
#include "window.h"

#define MB (1024u * 1024u)
#define NR_FORMATS 4		/* the formats of a new stream's snapshot: ids 0..3 */

/* The formats the agent knows (a snapshot sends every one). */
static uint8_t known[256];
static unsigned nr_known;
static unsigned snapshots;

static int64_t put(struct win *w, uint8_t type, uint8_t what)
{
	static uint32_t serial;
	uint8_t buf[SMP_DELTA_EPOCH_SIZE] = { what };	/* an EPOCH payload's size */

	serial++;
	memcpy(buf + 1, &serial, sizeof(serial));
	return win_append(w, type, buf, sizeof(buf));
}

static void put_n(struct win *w, uint8_t type, uint8_t what, unsigned n)
{
	while (n--)
		put(w, type, what);
}

static void put_snapshot(struct win *w)
{
	for (unsigned i = 0; i < nr_known; i++)
		put(w, SMP_FORMAT, known[i]);
}

static int metadata_cb(void *ctx, struct win *front)
{
	(void)ctx;
	snapshots++;
	put_snapshot(front);
	return 0;
}

static struct gap_ops ops(uint32_t frames)
{
	return (struct gap_ops){
		.metadata = metadata_cb,
		.win_bytes = 4 * MB, .win_frames = frames,
		.headroom_bytes = 2 * MB, .headroom_frames = frames / 2,
	};
}

static struct win *new_stream(uint32_t frames)
{
	struct win *w;

	if (win_new(4 * MB, frames, &w) < 0)
		return NULL;
	win_track(w, SMP_EPOCH);
	nr_known = 0;
	for (unsigned i = 0; i < NR_FORMATS; i++)
		known[nr_known++] = (uint8_t)i;
	snapshots = 0;
	put_snapshot(w);
	return w;
}

struct host {
	uint64_t expected;
	uint64_t gap;
	int cur_epoch;		/* -1 before the stream's first EPOCH */
	uint8_t formats[256];
	unsigned frames, pages, stacks, epochs;
	unsigned refused_stacks, unparsed_pages, epoch_back;
};

static void host_init(struct host *h)
{
	memset(h, 0, sizeof(*h));
	h->expected = 1;
	h->cur_epoch = -1;
}

static void host_apply(struct host *h, const uint8_t *f, uint64_t seq)
{
	uint8_t what = f[SMP_HDR_SIZE];

	if (seq < h->expected)
		return;			/* a duplicate */
	h->gap += seq - h->expected;
	h->expected = seq + 1;
	h->frames++;
	switch (f[6]) {
	case SMP_FORMAT:
		h->formats[what] = 1;
		break;
	case SMP_PAGE:
		h->pages++;
		h->unparsed_pages += !h->formats[what];
		break;
	case SMP_EPOCH:
		h->epochs++;
		if ((int)what < h->cur_epoch)
			h->epoch_back++;
		else
			h->cur_epoch = what;
		break;
	case SMP_STACKS:
		h->stacks++;
		h->refused_stacks += h->cur_epoch != (int)what;
		break;
	}
}

/* The host takes every frame from the send cursor on; @ack: and ACKs them. */
static void host_read(struct host *h, struct win *w, int ack)
{
	const uint8_t *f;
	uint32_t len;
	uint64_t seq, last = 0;

	while ((f = win_next(w, &len, &seq, NULL))) {
		host_apply(h, f, seq);
		win_sent(w);
		last = seq;
	}
	if (ack && last)
		win_ack(w, last);
}

/* The checks every scenario ends with: everything after the gap was usable. */
static void host_checks(const char *what, struct host *h, struct win *w, int want_stacks)
{
	struct win_stats ws;

	win_get_stats(w, &ws);
	is_int(h->refused_stacks, 0, "%s: no STACKS frame refused", what);
	is_int(h->epoch_back, 0, "%s: no EPOCH going back", what);
	is_int(h->unparsed_pages, 0, "%s: every page parsable (its FORMAT came first)",
	       what);
	is_int(h->gap, ws.dropped_frames, "%s: the gap the host sees is the %llu frames "
	       "counted as dropped", what, (unsigned long long)ws.dropped_frames);
	if (want_stacks)
		ok(h->stacks > 0 && h->pages > 0, "%s: the host got held STACKS (%u) and "
		   "pages (%u) after the gap", what, h->stacks, h->pages);
}

/*
 * Late host, drop range with the first EPOCH: the host was away from the start
 * and the frames from the snapshot to past the first EPOCH were dropped.
 */
static void test_late_with_epoch(void)
{
	struct win *w = new_stream(64);
	struct gap_ops o = ops(64);
	struct gap_result g;
	struct host h;

	put(w, SMP_EPOCH, 0);
	for (unsigned i = 0; i < 80; i++)
		put(w, i % 4 ? SMP_PAGE : SMP_STACKS, i % 4 ? (uint8_t)(i % NR_FORMATS) : 0);
	ok(win_gap_types(w) & GAP_BIT(SMP_EPOCH), "late, with EPOCH: the first EPOCH was "
	   "dropped");
	is_int(win_resume(w, 1), 0, "WELCOME at 1");
	is_int(win_gap_from(w), 1, "the gap starts at 1");
	is_int(gap_fill(w, 1, &o, &g), 0, "gap_fill");
	ok(g.spliced && g.meta && g.map && g.epoch, "a new snapshot and the epoch in effect "
	   "go ahead, the map is re-read");
	is_int(snapshots, 1, "one snapshot");
	host_init(&h);
	host_read(&h, w, 1);
	host_checks("late, with EPOCH", &h, w, 1);
	win_free(w);
}

/*
 * Late host, drop range without the first EPOCH (issue 12): only the first FORMAT
 * frame was dropped, but the room kept behind the new snapshot drops the oldest
 * held frames, the first EPOCH among them. Deciding on the window's drops alone sent
 * no EPOCH, and the host refused every STACKS frame held.
 */
static void test_late_meta_only(void)
{
	struct win *w = new_stream(64);
	struct gap_ops o = ops(64);
	struct gap_result g;
	struct host h;
	struct win_stats ws;

	put_n(w, SMP_PAGE, 1, 6);
	put(w, SMP_EPOCH, 0);
	while (win_get_stats(w, &ws), ws.frames < 64)
		put(w, ws.next_seq % 3 ? SMP_PAGE : SMP_STACKS, ws.next_seq % 3 ? 2 : 0);
	put(w, SMP_PAGE, 3);		/* full: drops seq 1, a FORMAT, and nothing else */
	win_get_stats(w, &ws);
	is_int(ws.dropped_frames, 1, "late, metadata only: one frame dropped");
	is_int(win_gap_types(w), GAP_BIT(SMP_FORMAT), "and it was a FORMAT");
	is_int(win_resume(w, 1), 0, "WELCOME at 1");
	is_int(gap_fill(w, 1, &o, &g), 0, "gap_fill");
	ok(g.made_room > 0, "room was made ahead: %llu held frames dropped",
	   (unsigned long long)g.made_room);
	ok(g.map && g.epoch, "the first EPOCH went with them: the epoch in effect goes "
	   "ahead and the map is re-read");
	ok(g.types & GAP_BIT(SMP_EPOCH), "the result names the EPOCH among what was lost");
	host_init(&h);
	host_read(&h, w, 1);
	host_checks("late, metadata only", &h, w, 1);
	is_int(h.epochs, 1, "exactly one EPOCH reached the host");
	win_free(w);
}

/*
 * Live host that stops reading at @stall_at (the first EPOCH, or the frame after
 * it): the window overflows while it is connected and the gap starts there.
 */
static void test_live(int after_epoch)
{
	const char *what = after_epoch ? "live, after the first EPOCH" :
					 "live, from the first EPOCH";
	struct win *w = new_stream(64);
	struct gap_ops o = ops(64);
	struct gap_result g;
	struct host h;
	uint64_t epoch_seq, gap_from;

	host_init(&h);
	put_n(w, SMP_PAGE, 0, 4);
	host_read(&h, w, 1);		/* snapshot and pages: delivered, ACKed */
	epoch_seq = (uint64_t)put(w, SMP_EPOCH, 0);
	if (after_epoch) {
		put(w, SMP_STACKS, 0);
		host_read(&h, w, 1);
	}
	/* the host stops reading: the window fills and overflows */
	for (unsigned i = 0; i < 100; i++)
		put(w, i % 5 ? SMP_PAGE : SMP_STACKS, i % 5 ? (uint8_t)(i % NR_FORMATS) : 0);
	gap_from = win_gap_from(w);
	is_int(gap_from, epoch_seq + (after_epoch ? 2 : 0), "%s: the gap starts at the "
	       "first frame never sent", what);
	ok(!(win_gap_types(w) & GAP_META_TYPES), "%s: no metadata lost", what);
	is_int(gap_fill(w, gap_from, &o, &g), 0, "gap_fill");
	ok(g.spliced && !g.meta && g.map && g.epoch, "%s: the epoch in effect goes ahead "
	   "(no snapshot)", what);
	is_int(g.made_room, 1, "%s: one held frame dropped to make room for it", what);
	host_read(&h, w, 1);
	host_checks(what, &h, w, 1);
	win_free(w);
}

/*
 * More than 64 EPOCH frames held after the first kept frame: the epoch in effect
 * there is still known (the window is searched, not a bounded history).
 */
static void test_many_epochs(void)
{
	struct win *w = new_stream(512);
	struct gap_ops o = ops(512);
	struct gap_result g;
	struct host h;
	struct win_stats ws;
	unsigned e = 0;

	while (win_get_stats(w, &ws), ws.frames < 512) {
		put(w, SMP_EPOCH, (uint8_t)e);
		put(w, SMP_STACKS, (uint8_t)e);
		put(w, SMP_PAGE, 0);
		e++;
	}
	put(w, SMP_PAGE, 1);		/* drops the first FORMAT only */
	is_int(win_resume(w, 1), 0, "many epochs: WELCOME at 1");
	is_int(gap_fill(w, 1, &o, &g), 0, "gap_fill");
	ok(win_held_types(w, g.at, g.at + 1000) & GAP_BIT(SMP_EPOCH), "EPOCH frames are "
	   "among the kept ones");
	{
		unsigned held_epochs = 0;

		for (uint64_t s = g.at; s < g.at + 1000; s++) {
			uint32_t len;
			const uint8_t *f = win_frame(w, s, &len);

			held_epochs += f && f[6] == SMP_EPOCH;
		}
		ok(held_epochs > 64, "%u EPOCH frames held after the first kept", held_epochs);
	}
	ok(g.epoch, "the epoch in effect at the first kept frame was found");
	host_init(&h);
	host_read(&h, w, 1);
	host_checks("many epochs", &h, w, 1);
	win_free(w);
}

/*
 * The EPOCH going ahead needs one frame of room; the oldest held frame the host
 * lacks is the FORMAT of an event enabled later: it goes too, so a new snapshot
 * (with that format) must go ahead as well.
 */
static void test_epoch_makes_room_for_format(void)
{
	struct win *w = new_stream(16);
	struct gap_ops o = ops(16);
	struct gap_result g;
	struct host h;
	uint64_t gap_from;

	host_init(&h);
	put(w, SMP_EPOCH, 0);
	host_read(&h, w, 1);			/* snapshot, EPOCH: ACKed */
	put(w, SMP_STACKS, 0);			/* dropped below */
	known[nr_known++] = 9;			/* an event enabled now */
	put(w, SMP_FORMAT, 9);
	put(w, SMP_PAGE, 9);
	put(w, SMP_STACKS, 0);
	put_n(w, SMP_PAGE, 9, 12);		/* 16 frames held */
	put(w, SMP_PAGE, 9);			/* the window drops the STACKS frame */
	gap_from = win_gap_from(w);
	is_int(win_gap_types(w), GAP_BIT(SMP_STACKS), "room: a STACKS frame was dropped");
	is_int(gap_fill(w, gap_from, &o, &g), 0, "gap_fill");
	ok(g.map && g.epoch && g.meta, "the EPOCH's room took the FORMAT: a new snapshot "
	   "goes ahead too");
	is_int(snapshots, 1, "one snapshot");
	host_read(&h, w, 1);
	host_checks("room for the EPOCH", &h, w, 0);
	ok(h.formats[9], "the host got the later event's FORMAT");
	win_free(w);
}

/* A gap of pages only: nothing goes ahead, the window is left as it is. */
static void test_pages_only(void)
{
	struct win *w = new_stream(16);
	struct gap_ops o = ops(16);
	struct gap_result g;
	struct host h;
	struct win_stats before, after;

	host_init(&h);
	put(w, SMP_EPOCH, 0);
	put(w, SMP_STACKS, 0);
	host_read(&h, w, 1);
	put_n(w, SMP_PAGE, 1, 20);		/* the host stopped: 4 pages dropped */
	win_get_stats(w, &before);
	is_int(gap_fill(w, win_gap_from(w), &o, &g), 0, "pages only: gap_fill");
	win_get_stats(w, &after);
	ok(!g.spliced && !g.meta && !g.map, "nothing goes ahead");
	ok(after.oldest_seq == before.oldest_seq && after.frames == before.frames,
	   "the window is unchanged");
	is_int(win_gap_from(w), 0, "the gap is seen");
	host_read(&h, w, 1);
	is_int(h.gap, before.dropped_frames, "the host sees the %llu frames dropped",
	       (unsigned long long)before.dropped_frames);
	is_int(h.unparsed_pages + h.refused_stacks, 0, "and can use the rest");
	is_int(snapshots, 0, "no snapshot");
	win_free(w);
}

int main(void)
{
	test_late_with_epoch();
	test_late_meta_only();
	test_live(0);
	test_live(1);
	test_many_epochs();
	test_epoch_makes_room_for_format();
	test_pages_only();
	return tap_done();
}
