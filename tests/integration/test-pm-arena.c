// SPDX-License-Identifier: MIT
/*
 * test-pm-arena: the guest agent's window recovered from a synthetic core. The window
 * is the agent's own (guest-kernel/agent/window.c, compiled in), filled with STATS
 * frames whose value is their seq (the ground truth), its pages placed in the core's
 * guest RAM at scattered physical addresses in reverse order, as an ARENA announces
 * them. Checked: the scan finds exactly the window's frames, the replay stores what the
 * store lacked and counts the rest as duplicates, the boot's end is left as it was,
 * stale frames of an ended stream are not taken, hostile headers and frames are
 * refused or skipped, and a live connection is retired before the replay.
 */
#include <elf.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <string.h>

#include "conn-feed.h"
#include "ingest-arena.h"
#include "ingest.h"
#include "pm-arena.h"
#include "proto.h"
#include "store-ingest.h"
#include "tap.h"
#include "window.h"

#define RAM_BASE	0x100000ull
#define STREAM		0x5151ull

static uint8_t boot_id[16] = { 9, 8, 7, 6 };

static long hello_frame(uint8_t *buf, size_t cap, uint64_t stream_id)
{
	uint8_t p[256];
	struct smp_hello h = {
		.stream_id = stream_id, .text_addr = 0xffffffff81000000ull, .nr_cpus = 2,
		.page_size = 4096, .map_bits = 10, .max_depth = 64,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	long n;

	memcpy(h.boot_id, boot_id, 16);
	n = smp_hello_encode(&h, p, sizeof(p));
	return smp_frame_encode(buf, cap, SMP_HELLO, 0, 0, p, (size_t)n);
}

/* STATS with one key whose value is @v (the frame's seq: ground truth). */
static size_t stats_payload(uint8_t *p, uint64_t v)
{
	struct smp_stat st = { .key = SMP_STAT_AGENT_FRAMES, .value = v };

	return (size_t)smp_stats_encode(&st, 1, p, 64);
}

static void win_fill(struct win *w, uint64_t from, uint64_t to)
{
	uint8_t p[64];

	for (uint64_t s = from; s <= to; s++)
		win_append(w, SMP_STATS, p, (uint32_t)stats_payload(p, s));
}

/* Everything up to @seq handed to the sender (as if written to the port). */
static void win_send_all(struct win *w)
{
	uint32_t len;
	uint64_t seq;

	while (win_next(w, &len, &seq, NULL))
		win_sent(w);
}

typedef struct {
	uint8_t *core;
	size_t len;
	HaArenaList list;
} Core;

/* A core whose RAM holds @w's mapping, page i at the (reversed, spaced) address
 * RAM_BASE + 2 * (nr - 1 - i) pages; the other pages are filled with 0xa5. */
static void core_of(Core *c, struct win *w)
{
	void *map;
	size_t mlen, ps, nr, ram, ram_off = 4096;
	uint8_t *f;

	win_map(w, &map, &mlen, &ps);
	nr = mlen / ps;
	ram = 2 * nr * ps;
	c->len = ram_off + ram;
	c->core = f = g_malloc0(c->len);
	memcpy(f, ELFMAG, SELFMAG);
	f[EI_CLASS] = ELFCLASS64;
	f[EI_DATA] = ELFDATA2LSB;
	f[EI_VERSION] = EV_CURRENT;
	f[16] = ET_CORE;
	f[18] = EM_X86_64;
	f[20] = EV_CURRENT;
	f[32] = 64;		/* e_phoff */
	f[52] = 64;
	f[54] = 56;
	f[56] = 1;
	f[64] = PT_LOAD;
	memcpy(f + 64 + 8, &ram_off, 8);
	memcpy(f + 64 + 24, &(uint64_t){ RAM_BASE }, 8);
	memcpy(f + 64 + 32, &ram, 8);
	memcpy(f + 64 + 40, &ram, 8);
	memset(f + ram_off, 0xa5, ram);
	c->list.page_size = (uint32_t)ps;
	c->list.nr_pages = (uint32_t)nr;
	c->list.addrs = g_new(uint64_t, nr);
	for (size_t i = 0; i < nr; i++) {
		size_t at = 2 * (nr - 1 - i) * ps;

		memcpy(f + ram_off + at, (uint8_t *)map + i * ps, ps);
		c->list.addrs[i] = RAM_BASE + at;
	}
}

static void core_clear(Core *c)
{
	g_free(c->core);
	g_free(c->list.addrs);
}

/* The stream recovered from @c (NULL on error, in @e). */
static GBytes *recover_stream(Core *c, HaPmArenaScan *st, GError **e)
{
	g_autoptr(HaCore) core = ha_core_open_mem(c->core, c->len, e);
	g_autoptr(GBytes) map = NULL;

	if (!core)
		return NULL;
	map = ha_pm_arena_read(core, &c->list, e);
	if (!map)
		return NULL;
	return ha_pm_arena_scan(g_bytes_get_data(map, NULL), g_bytes_get_size(map), st, e);
}

/* The frames of @stream after its HELLO: seqs in order, RESENT, value == seq. */
static bool stream_ok(GBytes *stream, uint64_t lo, uint64_t hi)
{
	gsize len;
	const uint8_t *p = g_bytes_get_data(stream, &len);
	struct smp_decoder *d = smp_decoder_new(0);
	struct smp_frame f;
	uint64_t want = lo;
	bool ok = true, first = true;

	smp_decoder_feed(d, p, len);
	while (smp_decoder_next(d, &f, NULL) == 1) {
		struct smp_stat st;
		uint32_t nr;

		if (first) {
			ok &= f.type == SMP_HELLO && f.seq == 0;
			first = false;
			continue;
		}
		ok &= f.type == SMP_STATS && f.seq == want && (f.flags & SMP_FLAG_RESENT);
		ok &= smp_stats_decode(&nr, f.payload, f.len) == 0 && nr == 1;
		if (ok) {
			smp_stats_get(f.payload, 0, &st);
			ok &= st.value == f.seq;
		}
		want++;
	}
	ok &= want == hi + 1 && smp_decoder_pending(d) == 0;
	smp_decoder_free(d);
	return ok;
}

static uint64_t stored_next(HaStore *s, int64_t boot, uint64_t stream_id)
{
	int64_t stream, epoch;
	uint64_t next = 0;
	bool found;

	if (!ha_store_stream_find(s, boot, stream_id, &found, &stream, &next, &epoch, NULL) ||
	    !found)
		return 0;
	return next;
}

static void test_scan_and_replay(HaStore *s)
{
	HaLimits lim;
	g_autoptr(HaConn) live = NULL;
	g_autoptr(GError) e = NULL;
	g_auto(HaStoredBoot) b = { 0 };
	struct win *w = NULL;
	uint8_t hello[1024], p[64];
	long hl = hello_frame(hello, sizeof(hello), STREAM);
	Core c = { 0 };
	HaPmArenaScan st;
	HaConnStats cs;
	bool found;

	ha_limits_default(&lim);
	/* the live connection: HELLO, frames 1..30 stored, then the guest "panics" */
	live = ha_conn_new(s, &lim, "pm", "live");
	conn_feed(live, hello, (size_t)hl);
	CHECK(ha_conn_process(live, &e), "live HELLO (%s)", e ? e->message : "ok");
	for (uint64_t q = 1; q <= 30; q++)
		conn_send_frame(live, SMP_STATS, q, p, stats_payload(p, q), &e);
	CHECK(ha_conn_flush(live, &e), "live frames 1..30 stored");
	ha_conn_close(live);
	CHECK(ha_store_boot_find(s, boot_id, &found, &b, &e) && found, "the boot is stored");

	/* the agent's window: 1..50 built, 1..20 ACKed, 21..50 held */
	CHECK(win_new(512 * 1024, 64, &w) == 0, "window");
	CHECK(win_set_hello(w, hello, (size_t)hl) == 0, "HELLO kept in the header");
	win_fill(w, 1, 50);
	win_send_all(w);
	CHECK(win_ack(w, 20) == 0, "1..20 ACKed");
	core_of(&c, w);

	g_autoptr(GBytes) stream = recover_stream(&c, &st, &e);
	CHECK(stream, "scan (%s)", e ? e->message : "ok");
	/* the ACKed frames' bytes are still in the arena: found too, duplicates later */
	CHECK(stream && st.frames == 50 && st.seq_lo == 1 && st.seq_hi == 50 &&
	      st.same_seq == 0 && st.bad == 0 && st.stream_id == STREAM,
	      "50 frames found, seq 1..50 (%" PRIu64 ", %" PRIu64 "..%" PRIu64 ", bad %"
	      PRIu64 ")", st.frames, st.seq_lo, st.seq_hi, st.bad);
	CHECK(stream && stream_ok(stream, 1, 50),
	      "the stream: HELLO, then 1..50 in order, RESENT, each its own value");
	CHECK(stream && ha_pm_arena_replay(s, &lim, "pm", b.id, stream, &cs, &e),
	      "replay (%s)", e ? e->message : "ok");
	CHECK(cs.applied == 20 && cs.duplicates == 30 && cs.gap_frames == 0,
	      "31..50 stored, 1..30 duplicates (%" PRIu64 " applied, %" PRIu64 " dups)",
	      cs.applied, cs.duplicates);
	CHECK(stored_next(s, b.id, STREAM) == 51, "the stream's next seq is 51");
	CHECK(stream && ha_pm_arena_replay(s, &lim, "pm", b.id, stream, &cs, &e) &&
	      cs.applied == 0 && cs.duplicates == 50, "a second replay stores nothing");
	CHECK(!ha_pm_arena_replay(s, &lim, "pm", b.id + 1, stream, &cs, &e) && e,
	      "a replay into another boot is refused");
	g_clear_error(&e);
	core_clear(&c);

	/* a fresh stream: the old stream's frames are zeroed, not replayed as its own */
	win_reset(w);
	win_fill(w, 1, 3);
	core_of(&c, w);
	{
		g_autoptr(GBytes) s2 = recover_stream(&c, &st, &e);

		CHECK(!s2 && e && strstr(e->message, "no valid HELLO"),
		      "after win_reset() without a new HELLO: nothing to replay");
		g_clear_error(&e);
	}
	core_clear(&c);
	hl = hello_frame(hello, sizeof(hello), STREAM + 1);
	win_set_hello(w, hello, (size_t)hl);
	core_of(&c, w);
	{
		g_autoptr(GBytes) s2 = recover_stream(&c, &st, &e);

		CHECK(s2 && st.frames == 3 && st.seq_hi == 3 && st.stream_id == STREAM + 1 &&
		      stream_ok(s2, 1, 3), "a fresh stream: exactly its 3 frames (%" PRIu64
		      ")", st.frames);
	}
	core_clear(&c);
	win_free(w);
}

static void test_hostile(void)
{
	g_autoptr(GError) e = NULL;
	struct win *w = NULL;
	uint8_t hello[1024];
	long hl = hello_frame(hello, sizeof(hello), STREAM);
	Core c = { 0 };
	HaPmArenaScan st;
	void *map;
	size_t mlen, ps;

	win_new(512 * 1024, 64, &w);
	win_set_hello(w, hello, (size_t)hl);
	win_fill(w, 1, 10);
	win_map(w, &map, &mlen, &ps);
	core_of(&c, w);
	/* frame 5's payload flipped in the core: it alone is missing */
	{
		uint8_t *arena_page = c.core + 4096 + (c.list.addrs[1] - RAM_BASE);
		size_t off = 0;

		for (int i = 0; i < 4; i++)
			off += SMP_HDR_SIZE + 24;
		arena_page[off + SMP_HDR_SIZE + 9] ^= 1;
		g_autoptr(GBytes) s2 = recover_stream(&c, &st, &e);

		CHECK(s2 && st.frames == 9 && st.bad >= 1, "a damaged frame is skipped, the "
		      "other 9 found (%" PRIu64 ", bad %" PRIu64 ")", st.frames, st.bad);
	}
	core_clear(&c);
	core_of(&c, w);
	c.list.addrs[3] = RAM_BASE + 64 * c.len;	/* not in the core */
	{
		g_autoptr(GBytes) s2 = recover_stream(&c, &st, &e);

		CHECK(!s2 && e && strstr(e->message, "not in the dump"),
		      "a page outside the core: refused (%s)", e ? e->message : "");
		g_clear_error(&e);
	}
	core_clear(&c);
	core_of(&c, w);
	c.core[4096 + (c.list.addrs[0] - RAM_BASE)] ^= 0xff;	/* header magic */
	{
		g_autoptr(GBytes) s2 = recover_stream(&c, &st, &e);

		CHECK(!s2 && e && strstr(e->message, "recovery header"), "a bad header magic");
		g_clear_error(&e);
	}
	core_clear(&c);
	core_of(&c, w);
	/* arena_len beyond the pages read: bounded by them */
	memcpy(c.core + 4096 + (c.list.addrs[0] - RAM_BASE) + 24,
	       &(uint64_t){ UINT64_MAX }, 8);
	{
		g_autoptr(GBytes) s2 = recover_stream(&c, &st, &e);

		CHECK(s2 && st.frames == 10 && st.arena_bytes == mlen - ps,
		      "an arena_len beyond the mapping: the mapping's bytes only");
	}
	core_clear(&c);
	/* a HELLO slot length beyond the slot */
	core_of(&c, w);
	memcpy(c.core + 4096 + (c.list.addrs[0] - RAM_BASE) + 32, &(uint32_t){ 5000 }, 4);
	memcpy(c.core + 4096 + (c.list.addrs[0] - RAM_BASE) + 36, &(uint32_t){ 5000 }, 4);
	{
		g_autoptr(GBytes) s2 = recover_stream(&c, &st, &e);

		CHECK(!s2 && e, "a HELLO length beyond its slot: refused");
		g_clear_error(&e);
	}
	core_clear(&c);
	/* frames whose length runs past the arena's end, and every byte a magic */
	{
		size_t len = 4096 * 3;
		g_autofree uint8_t *m = g_malloc(len);

		memcpy(m, map, 4096);
		for (size_t i = 4096; i + 4 <= len; i += 4)
			memcpy(m + i, &(uint32_t){ SMP_MAGIC }, 4);
		g_autoptr(GBytes) s2 = ha_pm_arena_scan(m, len, &st, &e);
		CHECK(s2 && st.frames == 0 && g_bytes_get_size(s2) == (gsize)hl,
		      "an arena of magics: no frame, the HELLO alone");
	}
	win_free(w);
}

/* A live connection that announced its window is retired before the replay. */
static void test_recover_retires(HaStore *s)
{
	HaLimits lim;
	g_autoptr(HaConn) live = NULL;
	g_autoptr(GError) e = NULL;
	g_auto(HaStoredBoot) b = { 0 };
	struct win *w = NULL;
	uint8_t hello[1024], p[64];
	long hl = hello_frame(hello, sizeof(hello), STREAM + 7);
	Core c = { 0 };
	HaPmArenaResult res;
	bool found;

	ha_limits_default(&lim);
	win_new(512 * 1024, 64, &w);
	win_set_hello(w, hello, (size_t)hl);
	win_fill(w, 1, 12);
	core_of(&c, w);
	live = ha_conn_new(s, &lim, "pm", "live");
	conn_feed(live, hello, (size_t)hl);
	ha_conn_process(live, &e);
	ha_store_boot_find(s, boot_id, &found, &b, &e);
	/* the ARENA as the agent sends it, in two slices */
	for (uint32_t first = 0; first < c.list.nr_pages;) {
		uint32_t nr = MIN(100u, c.list.nr_pages - first);
		struct smp_arena m = { .page_size = c.list.page_size,
				       .nr_pages = c.list.nr_pages, .first = first, .nr = nr,
				       .list_id = 7 };
		g_autofree uint8_t *buf = g_malloc(SMP_ARENA_FIXED + 8 * nr);
		long n = smp_arena_encode(&m, c.list.addrs + first, buf,
					  SMP_ARENA_FIXED + 8 * nr);

		conn_send_frame(live, SMP_ARENA, 0, buf, (size_t)n, &e);
		first += nr;
	}
	CHECK(ha_conn_stats(live)->arena_lists == 1 && ha_conn_stats(live)->malformed == 0,
	      "the ARENA list is assembled from its slices");
	/* frames 1..5 applied live, not committed yet */
	for (uint64_t q = 1; q <= 5; q++)
		conn_send_frame(live, SMP_STATS, q, p, stats_payload(p, q), &e);
	{
		g_autoptr(HaCore) core = ha_core_open_mem(c.core, c.len, &e);

		CHECK(ha_pm_arena_recover(core, s, &lim, "pm", b.id, &res, &e),
		      "recover (%s)", e ? e->message : "ok");
	}
	CHECK(res.retired == 1, "the live connection was retired");
	CHECK(res.conn.applied == 7 && res.conn.duplicates == 5,
	      "its 5 frames were committed first, the replay stored 6..12 (%" PRIu64
	      " applied, %" PRIu64 " dups)", res.conn.applied, res.conn.duplicates);
	CHECK(res.conn.recovered_chunks == 0, "STATS frames store no chunk");
	/* what the live connection still reads is not applied */
	conn_send_frame(live, SMP_STATS, 13, p, stats_payload(p, 13), &e);
	ha_conn_flush(live, &e);
	CHECK(stored_next(s, b.id, STREAM + 7) == 13, "nothing after retirement is stored");
	ha_conn_close(live);
	core_clear(&c);
	win_free(w);
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-pm-arena-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "pm.db", NULL);
	g_autoptr(GError) e = NULL;
	HaStore *s = ha_store_open(path, false, &e);

	CHECK(s, "store (%s)", e ? e->message : "ok");
	if (!s)
		return tap_done();
	test_scan_and_replay(s);
	test_hostile();
	test_recover_retires(s);
	ha_arena_forget_store(s);
	ha_store_free(s);
	g_unlink(path);
	{
		g_autofree char *wal = g_strconcat(path, "-wal", NULL);
		g_autofree char *shm = g_strconcat(path, "-shm", NULL);

		g_unlink(wal);
		g_unlink(shm);
	}
	g_rmdir(dir);
	return tap_done();
}
