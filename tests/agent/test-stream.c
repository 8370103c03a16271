// SPDX-License-Identifier: MIT
/*
 * test-stream.c - the frame builders: a ring-buffer page cut after its committed
 * bytes (flags masked, the stored missed-events count kept), delta records split into
 * STACKS frames of whole records and one EPOCH frame per epoch record, in order, text
 * chunked on line boundaries, and the small messages decoding back with proto/; and
 * a page read straight into a frame of the window (ring.h), whole or after short reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto.h"
#include "ring.h"
#include "stream.h"
#include "tap.h"
#include "window.h"

/* Take every frame out of the window in order. */
struct got {
	uint8_t type[1024];
	uint8_t *payload[1024];
	uint32_t len[1024];
	unsigned n;
};

static void drain(struct win *w, struct got *g)
{
	const uint8_t *f;
	uint32_t len;
	uint64_t seq;

	while ((f = win_next(w, &len, &seq, NULL)) != NULL && g->n < 1024) {
		struct smp_decoder *d = smp_decoder_new(0);
		struct smp_frame fr;

		smp_decoder_feed(d, f, len);
		if (smp_decoder_next(d, &fr, NULL) == 1) {
			g->type[g->n] = fr.type;
			g->len[g->n] = fr.len;
			g->payload[g->n] = malloc(fr.len + 1);
			memcpy(g->payload[g->n], fr.payload, fr.len);
			g->n++;
		}
		smp_decoder_free(d);
		win_sent(w);
	}
}

static void got_free(struct got *g)
{
	for (unsigned i = 0; i < g->n; i++)
		free(g->payload[i]);
	g->n = 0;
}

static void make_page(uint8_t *page, uint64_t commit_field, uint8_t fill)
{
	memset(page, 0xee, 4096);	/* the unused rest of the page must not be sent */
	memset(page, 0, 16);
	page[0] = 0x11;			/* timestamp */
	memcpy(page + 8, &commit_field, 8);
	memset(page + 16, fill, (size_t)(commit_field & 0xfffffff) > 4080 ? 4080
				: (size_t)(commit_field & 0xfffffff));
}

static void test_pages(void)
{
	struct page_layout pl;
	uint8_t page[4096];
	struct win *w;
	struct got g = { 0 };
	struct smp_page sp;
	size_t n;
	int missed;

	page_layout_default(&pl, 4096);
	is_int(pl.data_off, 16, "64-bit layout: data at 16");

	make_page(page, 100, 0xab);
	is_int(page_wire_len(&pl, page, 4096, &n, &missed), 0, "plain page");
	is_int(n, 116, "header + 100 committed bytes");
	is_int(missed, 0, "no loss flag");

	/* RB_MISSED_EVENTS as the kernel adds it: (int)(1 << 31) sign-extended to long */
	make_page(page, 200, 0xab);
	{
		uint64_t v = (uint64_t)200 + (uint64_t)(int64_t)(int32_t)0x80000000u;

		memcpy(page + 8, &v, 8);
	}
	is_int(page_wire_len(&pl, page, 4096, &n, &missed), 0, "missed-events page");
	is_int(n, 216, "flag bits masked off the commit");
	is_int(missed, 1, "loss flagged");

	make_page(page, 300, 0xab);
	{
		uint64_t v = 300 + (uint64_t)(int64_t)(int32_t)0x80000000u + (1u << 30);

		memcpy(page + 8, &v, 8);
	}
	is_int(page_wire_len(&pl, page, 4096, &n, &missed), 0, "missed-and-stored page");
	is_int(n, 16 + 300 + 8, "the stored missed count after the data is kept");

	make_page(page, 4081, 0);
	is_int(page_wire_len(&pl, page, 4096, &n, &missed), -EBADMSG,
	       "commit beyond the page refused");
	make_page(page, 4080, 0x5a);
	is_int(page_wire_len(&pl, page, 4096, &n, &missed), 0, "full page");
	is_int(n, 4096, "a full page is sent whole");
	make_page(page, 0, 0);
	is_int(page_wire_len(&pl, page, 4096, &n, &missed), 0, "empty page");
	is_int(n, 0, "an empty page sends nothing");
	is_int(page_wire_len(&pl, page, 10, &n, &missed), -EBADMSG, "short read refused");

	win_new(1u << 20, 64, &w);
	make_page(page, 40, 0x77);
	is_int(stream_page(w, &pl, 3, page, 4096, &missed), 1, "PAGE frame built");
	make_page(page, 0, 0);
	is_int(stream_page(w, &pl, 3, page, 4096, &missed), 0, "empty page: no frame");
	drain(w, &g);
	is_int(g.n, 1, "one frame");
	ok(g.type[0] == SMP_PAGE && smp_page_decode(&sp, g.payload[0], g.len[0]) == 0,
	   "a valid PAGE");
	is_int(sp.cpu, 3, "cpu 3");
	is_int(sp.data_len, 56, "header + 40 bytes on the wire, not 4096");
	ok(sp.data[16] == 0x77 && sp.data[55] == 0x77 && sp.data[0] == 0x11,
	   "header and data copied verbatim");
	got_free(&g);
	win_free(w);

	/* a 32-bit kernel's layout from header_page: commit at 8, 4 bytes, data at 12 */
	pl = (struct page_layout){ .page_size = 4096, .commit_off = 8, .commit_size = 4,
				   .data_off = 12 };
	memset(page, 0, sizeof(page));
	page[8] = 20;
	is_int(page_wire_len(&pl, page, 4096, &n, &missed), 0, "32-bit layout");
	is_int(n, 32, "12 + 20");
}

/* Records: stacks of depth d, epoch records. */
static size_t put_stack(uint8_t *buf, uint32_t id, uint32_t depth)
{
	uint64_t ips[64];

	for (uint32_t i = 0; i < depth; i++)
		ips[i] = 0xffffffff81000000ull + id * 0x100 + i;
	return (size_t)smp_delta_put_stack(buf, 1000, id, 1, ips, depth);
}

static void test_delta(void)
{
	static uint8_t buf[200000];
	struct delta_counts dc = { 0 };
	struct got g = { 0 };
	struct win *w;
	size_t len = 0, bad = 0, total_stacks_in_frames = 0;
	unsigned stacks = 0, epochs_seen = 0, order_ok = 1;
	uint32_t expect_id = 0;
	long used;

	/* epoch 0, 300 stacks, epoch 1 (reset), 200 stacks, a half record */
	len += (size_t)smp_delta_put_epoch(buf + len, 64, 0, 0);
	for (uint32_t i = 0; i < 300; i++)
		len += put_stack(buf + len, smp_id_make(0, i), 1 + i % 64);
	len += (size_t)smp_delta_put_epoch(buf + len, 64, 1, 123456789);
	for (uint32_t i = 0; i < 200; i++)
		len += put_stack(buf + len, smp_id_make(1, i), 1 + i % 64);
	put_stack(buf + len, smp_id_make(1, 200), 10);
	len += 40;	/* only part of the last record has arrived */

	win_new(4u << 20, 1024, &w);
	used = stream_delta(w, buf, len, 0, &dc, &bad);
	is_int(used, (long)len - 40, "everything but the partial record consumed");
	is_int(dc.stacks, 500, "500 stack records");
	is_int(dc.epochs, 2, "2 epoch records");
	is_int(dc.last_epoch, 1, "last epoch 1");
	is_int(dc.first_epoch, 0, "first epoch 0");
	is_int(dc.first_epoch_seq, 1, "its EPOCH frame is the first frame (seq 1)");
	drain(w, &g);
	is_int(g.n, dc.frames, "frames counted");
	for (unsigned i = 0; i < g.n; i++) {
		size_t off = 0;
		struct smp_delta_rec r;
		int k;

		if (g.type[i] == SMP_EPOCH) {
			k = smp_delta_next(g.payload[i], g.len[i], &off, &r);
			if (k != 1 || r.kind != SMP_DELTA_EPOCH || off != g.len[i] ||
			    r.epoch != epochs_seen)
				order_ok = 0;
			/* the stacks before an epoch record belong to the epoch before it */
			if (epochs_seen == 1 && stacks != 300)
				order_ok = 0;
			epochs_seen++;
			expect_id = smp_id_make(r.epoch, 0);
			continue;
		}
		if (g.type[i] != SMP_STACKS || g.len[i] > STREAM_STACKS_MAX)
			order_ok = 0;
		total_stacks_in_frames += g.len[i];
		while ((k = smp_delta_next(g.payload[i], g.len[i], &off, &r)) == 1) {
			if (r.kind != SMP_DELTA_STACK || r.stack_id != expect_id)
				order_ok = 0;
			expect_id++;
			stacks++;
		}
		if (k != 0 || off != g.len[i])
			order_ok = 0;	/* a frame ending in a partial record */
	}
	is_int(stacks, 500, "all 500 stacks arrive in STACKS frames");
	is_int(epochs_seen, 2, "both epoch records arrive as EPOCH frames");
	ok(order_ok, "whole records only, in insertion order, epochs in between");
	ok(g.n >= 5, "records split over several frames under the 32 KiB cap (%u)", g.n);
	got_free(&g);

	/* the byte-order pass converts whole records only, each once */
	{
		static uint8_t copy[200000];

		memcpy(copy, buf, len);
		is_int(delta_to_le(buf, len), len - 40, "delta_to_le covers the whole records");
		is_int(delta_to_le(buf, 20), 0, "and not a partial one");
#if __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
		ok(memcmp(copy, buf, len) == 0, "little-endian records are left as they are");
#endif
	}

	/* a small max_payload: one record per frame at most */
	memset(&dc, 0, sizeof(dc));
	len = put_stack(buf, 5, 64);
	len += put_stack(buf + len, 6, 64);
	used = stream_delta(w, buf, len, 600, &dc, &bad);
	is_int(used, (long)len, "two 528-byte records");
	is_int(dc.frames, 2, "a 600-byte cap gives one record per frame");
	got_free(&g);
	drain(w, &g);
	got_free(&g);

	/* an invalid record: the ones before it go out, the error says where */
	memset(&dc, 0, sizeof(dc));
	len = put_stack(buf, 7, 3);
	memset(buf + len, 0, 16);
	buf[len + 12] = 9;	/* kind 9 */
	buf[len + 4] = 1;
	len += 24;
	used = stream_delta(w, buf, len, 0, &dc, &bad);
	is_int(used, -EBADMSG, "invalid kind refused");
	is_int(bad, 40, "at offset 40");
	is_int(dc.stacks, 1, "the valid record before it was framed");
	drain(w, &g);
	ok(g.n == 1 && g.type[0] == SMP_STACKS && g.len[0] == 40, "one STACKS frame of it");
	got_free(&g);

	/* depth 0 and depth 65 are invalid at once (no waiting for more bytes) */
	memset(buf, 0, 16);
	used = stream_delta(w, buf, 16, 0, &dc, &bad);
	is_int(used, -EBADMSG, "depth 0 refused");
	buf[4] = 65;
	used = stream_delta(w, buf, 16, 0, &dc, &bad);
	is_int(used, -EBADMSG, "depth 65 refused");
	/* a lone epoch record whose id is not its epoch's base */
	smp_delta_put_epoch(buf, 64, 3, 0);
	buf[0] ^= 1;
	used = stream_delta(w, buf, 32, 0, &dc, &bad);
	is_int(used, -EBADMSG, "epoch record with a wrong id base refused");
	is_int(stream_delta(w, buf, 0, 0, &dc, &bad), 0, "nothing in, nothing out");
	(void)total_stacks_in_frames;
	win_free(w);
}

static void test_text(void)
{
	static char text[300000];
	struct got g = { 0 };
	struct win *w;
	struct smp_text t;
	size_t len = 0, joined = 0;
	unsigned lines_ok = 1;
	char *copy;
	int chunks;

	for (int i = 0; len < sizeof(text) - 100; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"ffffffff81%06x T symbol_number_%d\n", i, i);
	win_new(4u << 20, 1024, &w);
	chunks = stream_text(w, SMP_KSYMS, 2, text, len, 32000);
	ok(chunks >= (int)(len / 32000) + 1, "%d chunks for %zu bytes", chunks, len);
	drain(w, &g);
	is_int(g.n, chunks, "one frame per chunk");
	copy = malloc(len + 1);
	for (unsigned i = 0; i < g.n; i++) {
		if (smp_text_decode(&t, g.payload[i], g.len[i]) < 0 || t.generation != 2)
			continue;
		if (t.text_len > 32000 || (t.text_len && t.text[t.text_len - 1] != '\n'))
			lines_ok = 0;
		if (t.chunk != i)
			lines_ok = 0;
		memcpy(copy + joined, t.text, t.text_len);
		joined += t.text_len;
		if ((t.flags & SMP_TEXT_LAST) != (joined == len ? SMP_TEXT_LAST : 0))
			lines_ok = 0;
	}
	is_int(joined, len, "the chunks of generation 2 join to the whole text");
	ok(memcmp(copy, text, len) == 0, "byte for byte");
	ok(lines_ok, "every chunk <= 32000 bytes, ends on a line, only the last is LAST");
	free(copy);
	got_free(&g);

	is_int(stream_text(w, SMP_MODULES, 0, "", 0, 32000), 1, "empty text: one chunk");
	drain(w, &g);
	ok(g.n == 1 && smp_text_decode(&t, g.payload[0], g.len[0]) == 0 &&
	   t.text_len == 0 && (t.flags & SMP_TEXT_LAST), "an empty LAST chunk");
	got_free(&g);

	/* a line longer than a chunk is cut rather than lost */
	memset(text, 'x', 5000);
	text[4999] = '\n';
	is_int(stream_text(w, SMP_KSYMS, 0, text, 5000, 2000), 3, "a long line in 3 chunks");
	drain(w, &g);
	got_free(&g);
	win_free(w);
}

static void test_small_messages(void)
{
	struct smp_lost_cpu cpus[2] = {
		{ .cpu = 0, .overrun = 5, .commit_overrun = 1, .dropped_events = 2,
		  .read_events = 1000 },
		{ .cpu = 1, .overrun = 0, .read_events = 7 },
	}, c;
	struct smp_stat st[2] = { { SMP_STAT_MAP_ENTRIES, 42 }, { SMP_STAT_AGENT_CPU_NS, 9 } };
	struct got g = { 0 };
	struct smp_format fm;
	struct smp_lost lost;
	struct smp_hello h = {
		.stream_id = 99, .text_addr = 0xffffffff81000000ull, .nr_cpus = 2,
		.page_size = 4096, .map_bits = 14, .max_depth = 64, .map_epoch = 3,
		.flags = SMP_HELLO_STACKMAP, .release = "6.1.0-stackmap", .release_len = 14,
		.build_id = (const uint8_t *)"\x01\x02\x03", .build_id_len = 3,
		.trace_clock = "local", .clock_len = 5,
	}, h2;
	uint8_t frame[1024];
	struct smp_decoder *d;
	struct smp_frame fr;
	struct win *w;
	uint32_t nr, reason;
	long n;

	win_new(1u << 20, 64, &w);
	is_int(stream_format(w, "kmem/kmalloc", "name: kmalloc\n", 14), 0, "FORMAT");
	is_int(stream_format(w, "/bad", "x", 1), -EINVAL, "FORMAT with a bad name refused");
	is_int(stream_lost(w, cpus, 2, 10, 4000), 0, "LOST");
	is_int(stream_stats(w, st, 2), 0, "STATS");
	is_int(stream_bye(w, SMP_BYE_SHUTDOWN), 0, "BYE");
	drain(w, &g);
	is_int(g.n, 4, "four frames");
	ok(g.type[0] == SMP_FORMAT && smp_format_decode(&fm, g.payload[0], g.len[0]) == 0 &&
	   fm.name_len == 12 && fm.text_len == 14, "FORMAT decodes");
	ok(g.type[1] == SMP_LOST && smp_lost_decode(&lost, g.payload[1], g.len[1]) == 0 &&
	   lost.nr == 2 && lost.agent_dropped_frames == 10 && lost.agent_dropped_bytes == 4000,
	   "LOST decodes");
	smp_lost_cpu(&lost, 0, &c);
	ok(c.overrun == 5 && c.commit_overrun == 1 && c.dropped_events == 2 &&
	   c.read_events == 1000, "LOST per-CPU record");
	ok(g.type[2] == SMP_STATS && smp_stats_decode(&nr, g.payload[2], g.len[2]) == 0 &&
	   nr == 2, "STATS decodes");
	ok(g.type[3] == SMP_BYE && smp_bye_decode(&reason, g.payload[3], g.len[3]) == 0 &&
	   reason == SMP_BYE_SHUTDOWN, "BYE decodes");
	got_free(&g);

	n = stream_hello(&h, frame, sizeof(frame));
	ok(n > 0, "HELLO frame");
	d = smp_decoder_new(0);
	smp_decoder_feed(d, frame, (size_t)n);
	ok(smp_decoder_next(d, &fr, NULL) == 1 && fr.type == SMP_HELLO && fr.seq == 0,
	   "HELLO is unsequenced");
	ok(smp_hello_decode(&h2, fr.payload, fr.len) == 0 && h2.stream_id == 99 &&
	   h2.build_id_len == 3 && h2.map_bits == 14, "HELLO decodes");
	smp_decoder_free(d);
	win_free(w);
}

/*
 * A whole page read in one read() lands in the frame reserved for it (no copy), and
 * stream_page_reserved() cuts that frame to the page's committed bytes; a short read
 * goes through the CPU's own buffer until the page is whole; an empty ring cancels
 * the reservation.
 */
static void test_page_in_place(void)
{
	struct page_layout pl;
	struct ring_cpu c = { .cpu = 1 };
	struct rings rs = { .cpus = &c, .count = 1, .page_size = 4096, .wake_fd = -1 };
	uint32_t room = SMP_PAGE_FIXED + 4096;
	const uint8_t *page = NULL;
	struct smp_page sp;
	struct got g = { 0 };
	struct win *w;
	uint8_t src[4096], *f;
	int fds[2], missed = 0;

	page_layout_default(&pl, 4096);
	c.page = malloc(4096);
	if (pipe(fds) < 0 || fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0)
		return;
	c.fd = fds[0];
	win_new(1u << 20, 64, &w);

	make_page(src, 100, 0x42);
	is_int(write(fds[1], src, 4096), 4096, "a whole page in the ring");
	ok(win_fits(w, room), "a page's frame fits without a drop");
	is_int(win_reserve(w, room, &f), 0, "frame reserved");
	is_int(ring_read_page(&rs, &c, f + SMP_HDR_SIZE + SMP_PAGE_FIXED, &page), 1,
	       "page read");
	ok(page == f + SMP_HDR_SIZE + SMP_PAGE_FIXED, "... straight into the frame");
	is_int(stream_page_reserved(w, &pl, 1, f, 4096, &missed), 1, "frame committed");

	/* an empty ring: the reservation is given up, nothing committed */
	is_int(win_reserve(w, room, &f), 0, "frame reserved");
	is_int(ring_read_page(&rs, &c, f + SMP_HDR_SIZE + SMP_PAGE_FIXED, &page), 0,
	       "empty ring: no page");
	win_cancel(w);

	/* a page in two pieces: the first read is short, the page comes from c.page */
	make_page(src, 200, 0x43);
	is_int(write(fds[1], src, 1000), 1000, "a part of a page");
	is_int(win_reserve(w, room, &f), 0, "frame reserved");
	is_int(ring_read_page(&rs, &c, f + SMP_HDR_SIZE + SMP_PAGE_FIXED, &page), 0,
	       "short read: no page yet");
	win_cancel(w);
	is_int(write(fds[1], src + 1000, 3096), 3096, "the rest of it");
	is_int(win_reserve(w, room, &f), 0, "frame reserved");
	is_int(ring_read_page(&rs, &c, f + SMP_HDR_SIZE + SMP_PAGE_FIXED, &page), 1,
	       "page completed");
	ok(page == c.page && memcmp(page, src, 4096) == 0, "... whole, in the CPU's buffer");
	win_cancel(w);
	is_int(stream_page(w, &pl, 1, page, 4096, &missed), 1, "framed by copy");

	/* an empty page read in place: no frame */
	make_page(src, 0, 0);
	is_int(write(fds[1], src, 4096), 4096, "an empty page");
	is_int(win_reserve(w, room, &f), 0, "frame reserved");
	is_int(ring_read_page(&rs, &c, f + SMP_HDR_SIZE + SMP_PAGE_FIXED, &page), 1,
	       "page read");
	is_int(stream_page_reserved(w, &pl, 1, f, 4096, &missed), 0, "empty: no frame");

	drain(w, &g);
	is_int(g.n, 2, "two frames");
	ok(g.n == 2 && smp_page_decode(&sp, g.payload[0], g.len[0]) == 0 && sp.cpu == 1 &&
	   sp.data_len == 116 && sp.data[16] == 0x42 && sp.data[115] == 0x42,
	   "the in-place frame: cpu 1, header + 100 bytes");
	ok(g.n == 2 && smp_page_decode(&sp, g.payload[1], g.len[1]) == 0 &&
	   sp.data_len == 216 && sp.data[215] == 0x43, "the copied frame: header + 200 bytes");
	is_int(c.pages, 3, "three pages counted");
	got_free(&g);
	win_free(w);
	close(fds[0]);
	close(fds[1]);
	free(c.page);
}

/* The commit word of a page (x86_64: 8 bytes at offset 8). */
static uint64_t commit_word(const uint8_t *page)
{
	uint64_t v;

	memcpy(&v, page + 8, 8);
	return v;
}

/*
 * RB_CAUGHT_UP (guest-kernel patch 0017) in a page read: ring_read_page() reports it in
 * c->caught_up and clears it in the page, whole or pieced together from short reads,
 * so the frame is the page without it; a page without it, or rings that were given no
 * commit layout (as before), leave the page as read.
 */
static void test_caught_up(void)
{
	struct page_layout pl;
	struct ring_cpu c = { .cpu = 0 };
	struct rings rs = { .cpus = &c, .count = 1, .page_size = 4096, .wake_fd = -1 };
	uint64_t missed_flags = 0xffffffffc0000000ull;	/* as the kernel adds them */
	uint32_t room = SMP_PAGE_FIXED + 4096;
	const uint8_t *page = NULL;
	struct smp_page sp;
	struct got g = { 0 };
	struct win *w;
	uint8_t src[4096], want[4096], *f;
	int fds[2], missed = 0;

	page_layout_default(&pl, 4096);
	rs.pl = &pl;
	c.page = malloc(4096);
	if (pipe(fds) < 0 || fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0)
		return;
	c.fd = fds[0];
	win_new(1u << 20, 64, &w);

	/* whole, into the frame */
	make_page(src, 100 | RB_CAUGHT_UP, 0x51);
	make_page(want, 100, 0x51);
	is_int(write(fds[1], src, 4096), 4096, "a caught-up page in the ring");
	is_int(win_reserve(w, room, &f), 0, "frame reserved");
	is_int(ring_read_page(&rs, &c, f + SMP_HDR_SIZE + SMP_PAGE_FIXED, &page), 1,
	       "page read");
	ok(c.caught_up, "... caught up");
	ok(page == f + SMP_HDR_SIZE + SMP_PAGE_FIXED && memcmp(page, want, 4096) == 0,
	   "... with the flag cleared in the frame");
	is_int(stream_page_reserved(w, &pl, 0, f, 4096, &missed), 1, "frame committed");

	/* with the missed-events flags too, in two short reads */
	make_page(src, 200 | RB_CAUGHT_UP | missed_flags, 0x52);
	make_page(want, 200 | missed_flags, 0x52);
	is_int(write(fds[1], src, 10), 10, "the start of a page");
	is_int(ring_read_page(&rs, &c, NULL, &page), 0, "short read: no page yet");
	ok(!c.caught_up, "... not caught up");
	is_int(write(fds[1], src + 10, 4086), 4086, "the rest of it");
	is_int(ring_read_page(&rs, &c, NULL, &page), 1, "page completed");
	ok(c.caught_up && page == c.page && memcmp(page, want, 4096) == 0,
	   "caught up, only RB_CAUGHT_UP cleared");
	is_int(stream_page(w, &pl, 0, page, 4096, &missed), 1, "framed by copy");
	ok(missed, "... missed events still seen");

	/* without the flag */
	make_page(src, 300, 0x53);
	is_int(write(fds[1], src, 4096), 4096, "a page not caught up");
	is_int(ring_read_page(&rs, &c, NULL, &page), 1, "page read");
	ok(!c.caught_up && memcmp(page, src, 4096) == 0, "not caught up, page as read");

	/* no commit layout given: nothing looked at, nothing changed */
	rs.pl = NULL;
	make_page(src, 100 | RB_CAUGHT_UP, 0x54);
	is_int(write(fds[1], src, 4096), 4096, "a caught-up page");
	is_int(ring_read_page(&rs, &c, NULL, &page), 1, "page read");
	ok(!c.caught_up && memcmp(page, src, 4096) == 0, "no layout: the page as read");
	is_int(ring_read_page(&rs, &c, NULL, &page), 0, "then empty");
	is_int(c.caught_up_pages, 2, "two caught-up pages counted");

	drain(w, &g);
	is_int(g.n, 2, "two frames");
	ok(g.n == 2 && smp_page_decode(&sp, g.payload[0], g.len[0]) == 0 &&
	   sp.data_len == 116 && commit_word(sp.data) == 100,
	   "the first frame: commit 100, no flag on the wire");
	ok(g.n == 2 && smp_page_decode(&sp, g.payload[1], g.len[1]) == 0 &&
	   commit_word(sp.data) == (200 | missed_flags),
	   "the second: commit 200 with the missed-events flags, no RB_CAUGHT_UP");
	got_free(&g);
	win_free(w);
	close(fds[0]);
	close(fds[1]);
	free(c.page);
}

/*
 * rings_open() asks each CPU's file for RB_CAUGHT_UP with TRACE_PIPE_RAW_IOC_CAUGHT_UP,
 * and takes a refusal (a kernel without it; here a regular file: ENOTTY) as "read until
 * EAGAIN": the ring is opened and read all the same. The ioctl's number is the one the
 * patched kernel's include/uapi/linux/trace_pipe_raw.h defines.
 */
static void test_caught_up_ask(void)
{
	char dir[200], path[256];
	uint32_t cpu = 0;
	struct rings *rs = NULL;
	struct page_layout pl;
	const uint8_t *page;
	uint8_t src[4096];
	int fd;

	is_int(TRACE_PIPE_RAW_IOC_CAUGHT_UP, 0x5230, "the ioctl is _IO('R', 0x30)");
	is_int(RB_CAUGHT_UP, 1 << 29, "the flag is bit 29");
	/* $TMPDIR, else the working directory (meson runs tests in the build tree) */
	snprintf(dir, sizeof(dir), "%s/smg-stream-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : ".");
	if (!mkdtemp(dir))
		return;
	snprintf(path, sizeof(path), "%s/per_cpu", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/per_cpu/cpu0", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/per_cpu/cpu0/trace_pipe_raw", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	make_page(src, 100, 0x55);
	is_int(fd >= 0 ? write(fd, src, 4096) : -1, 4096, "a fake trace_pipe_raw");
	if (fd >= 0)
		close(fd);
	page_layout_default(&pl, 4096);
	is_int(rings_open(dir, &cpu, 1, &pl, &rs), 0, "rings opened");
	ok(rs && rs->cpus[0].fd >= 0 && !rs->cpus[0].caught_up_asked,
	   "the ioctl refused: not asked, the file still read");
	if (rs)
		is_int(ring_read_page(rs, &rs->cpus[0], NULL, &page), 1, "... its page read");
	rings_close(rs);
	unlink(path);
	snprintf(path, sizeof(path), "%s/per_cpu/cpu0", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/per_cpu", dir);
	rmdir(path);
	rmdir(dir);
}

/* An event header word (little-endian x86_64 layout: type_len:5, time_delta:27). */
static void put_ev(uint8_t *p, uint32_t type_len, uint32_t delta, uint32_t arg)
{
	uint32_t w = type_len | delta << 5;

	memcpy(p, &w, 4);
	memcpy(p + 4, &arg, 4);
}

static void first_page(uint8_t *page, uint64_t ts, uint64_t commit)
{
	memset(page, 0, 4096);
	memcpy(page, &ts, 8);
	memcpy(page + 8, &commit, 8);
}

/* The time of a page's first data event, as the agent's latency takes it. */
static void test_first_ts(void)
{
	struct page_layout pl;
	uint8_t page[4096];

	page_layout_default(&pl, 4096);
	/* a whole page: its first event has delta 0 */
	first_page(page, 1000, 16);
	put_ev(page + 16, 3, 0, 0);
	is_int((long long)page_first_ts(&pl, page, sizeof(page)), 1000, "first event at the header's time");
	/* a delta on the first event counts */
	put_ev(page + 16, 3, 7, 0);
	is_int((long long)page_first_ts(&pl, page, sizeof(page)), 1007, "its delta added");
	/* a part of a page read after the writer was quiet for 3 s: TIME_EXTEND first */
	first_page(page, 1000, 8 + 16);
	put_ev(page + 16, 30, 3000000000u & 0x7ffffff, 3000000000u >> 27);
	put_ev(page + 24, 3, 5, 0);
	is_int((long long)page_first_ts(&pl, page, sizeof(page)), 1000 + 3000000000ll + 5,
	       "the time extend ahead of the first event added");
	/* an absolute time stamp ahead of it */
	first_page(page, 1000, 8 + 16);
	put_ev(page + 16, 31, 5000000000ull & 0x7ffffff, (uint32_t)(5000000000ull >> 27));
	put_ev(page + 24, 3, 2, 0);
	is_int((long long)page_first_ts(&pl, page, sizeof(page)), 5000000002ll,
	       "an absolute time stamp replaces the running time");
	/* a discarded event (padding with a delta) is skipped, its delta not counted */
	first_page(page, 1000, 12 + 16);
	put_ev(page + 16, 29, 1, 8);
	put_ev(page + 28, 2, 4, 0);
	is_int((long long)page_first_ts(&pl, page, sizeof(page)), 1004, "padding skipped");
	/* no data event: the time after what the page holds; lengths never read past it */
	first_page(page, 1000, 8);
	put_ev(page + 16, 30, 10, 0);
	put_ev(page + 24, 3, 99, 0);	/* beyond the commit: not read */
	is_int((long long)page_first_ts(&pl, page, sizeof(page)), 1010, "no data event");
	first_page(page, 1000, 8);
	put_ev(page + 16, 29, 1, 0xffffff00u);
	is_int((long long)page_first_ts(&pl, page, sizeof(page)), 1000, "a padding length past the commit");
	first_page(page, 1000, 5000);
	is_int((long long)page_first_ts(&pl, page, sizeof(page)), 1000, "a commit out of range: the header's");
	is_int((long long)page_first_ts(&pl, page, 8), 0, "a page shorter than its header");
}

int main(void)
{
	test_first_ts();
	test_page_in_place();
	test_caught_up();
	test_caught_up_ask();
	test_pages();
	test_delta();
	test_text();
	test_small_messages();
	return tap_done();
}
