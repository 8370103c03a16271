// SPDX-License-Identifier: MIT
/*
 * Unit tests: the row limits of the tables whose keys a guest chooses (ingest.h,
 * HaLimits.max_*), each lowered so that a few frames reach it, on a real HaConn and
 * store. At each bound: boots and streams, the HELLO refused with an error that says
 * so (the boots and streams stored are still served); epochs and stacks, the frame
 * refused (malformed, rows_refused), nothing of it stored, the frames after it still
 * applied; gap positions, no more rows (streams.gap_frames still counts); STATS keys
 * beyond HA_STAT_KEYS, ignored; full stacks and stack count rows (an event's
 * stack_id alone adds one, declared or not), not stored, their events counted under
 * HA_HIST_KEY_REFUSED (rows_refused). The counts hold across sessions (read at HELLO).
 */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <string.h>

#include "guest-formats.h"
#include "hist.h"
#include "ingest.h"
#include "proto.h"
#include "ringpage.h"
#include "store-ingest.h"
#include "tap.h"
#include "conn-feed.h"
#include "store-int.h"

static bool hello(HaConn *c, uint8_t boot, uint64_t stream_id, GError **error)
{
	uint8_t p[128];
	struct smp_hello h = {
		.stream_id = stream_id, .text_addr = 0xffffffff81000000ull, .nr_cpus = 2,
		.page_size = 4096, .map_bits = 10, .max_depth = 64,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	long n;

	memset(h.boot_id, boot, 16);
	n = smp_hello_encode(&h, p, sizeof(p));
	return conn_send_frame(c, SMP_HELLO, 0, p, (size_t)n, error);
}

static bool epoch(HaConn *c, uint64_t seq, uint64_t e, GError **error)
{
	uint8_t p[SMP_DELTA_EPOCH_SIZE];
	long n = smp_delta_put_epoch(p, sizeof(p), e, e * 100);

	return conn_send_frame(c, SMP_EPOCH, seq, p, (size_t)n, error);
}

/* A STACKS frame of @nr stacks of epoch @e, slots @slot0.. */
static bool stacks(HaConn *c, uint64_t seq, uint64_t e, uint32_t slot0, unsigned int nr,
		   GError **error)
{
	uint8_t p[2048];
	size_t len = 0;

	for (unsigned int i = 0; i < nr; i++) {
		uint64_t ips[2] = { 0xffffffff81000100ull + 16 * (slot0 + i),
				    0xffffffff81000500ull };
		uint32_t id = smp_id_make(e, slot0 + i);

		len += (size_t)smp_delta_put_stack(p + len, sizeof(p) - len, id, 1, ips, 2);
	}
	return conn_send_frame(c, SMP_STACKS, seq, p, len, error);
}

static void put_common(uint8_t *d, uint16_t type)
{
	int32_t pid = 77;

	memset(d, 0, 8);
	memcpy(d, &type, 2);
	memcpy(d + 4, &pid, 4);
}

/* A PAGE of cpu 0: a kmalloc event and its stack, inline (3 frames at @ip0) when
 * @ip0, else the stack_id event of @id. */
static bool page(HaConn *c, uint64_t seq, uint64_t ip0, uint32_t id, GError **error)
{
	uint8_t pg[4096], km[52], ks[16 + 3 * 8] = { 0 }, sid[12], p[8 + sizeof(pg)];
	struct ringpage rp;
	struct smp_page m = { .cpu = 0, .data = pg };
	int32_t depth = 3;
	long n;

	memset(km, 0, sizeof(km));
	put_common(km, GF_ID_KMALLOC);
	put_common(ks, GF_ID_KERNEL_STACK);
	memcpy(ks + 8, &depth, 4);
	for (int i = 0; i < depth; i++) {
		uint64_t ip = ip0 + 16 * (uint64_t)i;

		memcpy(ks + 16 + 8 * i, &ip, 8);
	}
	put_common(sid, GF_ID_STACK_ID);
	memcpy(sid + 8, &id, 4);
	ringpage_init(&rp, pg, sizeof(pg));
	ringpage_reset(&rp, 1000 * seq);
	ringpage_add(&rp, 1000 * seq, km, sizeof(km));
	if (ip0)
		ringpage_add(&rp, 1000 * seq + 5, ks, sizeof(ks));
	else
		ringpage_add(&rp, 1000 * seq + 5, sid, sizeof(sid));
	m.data_len = ringpage_finish(&rp);
	n = smp_page_encode(&m, p, sizeof(p));
	return n > 0 && conn_send_frame(c, SMP_PAGE, seq, p, (size_t)n, error);
}

static int64_t q1(HaStore *s, const char *sql)
{
	sqlite3_stmt *st = ha_store_stmt(s, sql, NULL);
	int64_t v = -1;

	if (st && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	if (st)
		sqlite3_reset(st);
	return v;
}

static HaConn *session(HaStore *s, const HaLimits *lim, uint8_t boot, uint64_t stream,
		       GError **error)
{
	HaConn *c = ha_conn_new(s, lim, "t", "test");

	if (!hello(c, boot, stream, error)) {
		ha_conn_free(c);
		return NULL;
	}
	return c;
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-limits-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "t.db", NULL);
	GError *e = NULL;
	HaStore *s = ha_store_open(path, false, &e);
	HaLimits lim;
	HaConn *c;

	ha_limits_default(&lim);
	CHECK(lim.max_boots == HA_BOOTS_MAX_DEFAULT && lim.max_streams &&
	      lim.max_epochs && lim.max_stacks && lim.max_gaps &&
	      lim.max_fullstacks == HA_FULLSTACKS_MAX_DEFAULT &&
	      lim.max_counts > lim.max_stacks + lim.max_fullstacks,
	      "every row limit on by default");
	lim.max_boots = 2;
	lim.max_streams = 2;
	lim.max_epochs = 3;
	lim.max_stacks = 5;
	lim.max_gaps = 1;
	lim.max_fullstacks = 2;
	lim.max_counts = 4;

	/* boots: two fit, the third is refused, the first two still stream */
	c = session(s, &lim, 1, 1, &e);
	ha_conn_free(c);
	c = session(s, &lim, 2, 1, &e);
	CHECK(c != NULL, "two boots stored");
	ha_conn_free(c);
	c = session(s, &lim, 3, 1, &e);
	CHECK(!c && e && strstr(e->message, "holds 2 boots, the limit"),
	      "a third boot refused: %s", e ? e->message : "accepted");
	g_clear_error(&e);
	CHECK(q1(s, "SELECT COUNT(*) FROM boots") == 2, "still two boots");

	/* streams: boot 1 has stream 1; stream 2 fits, stream 3 is refused */
	c = session(s, &lim, 1, 2, &e);
	CHECK(c != NULL, "a second stream of boot 1");
	ha_conn_free(c);
	c = session(s, &lim, 1, 3, &e);
	CHECK(!c && e && strstr(e->message, "holds 2 streams, the limit"),
	      "a third stream refused: %s", e ? e->message : "accepted");
	g_clear_error(&e);
	c = session(s, &lim, 1, 1, &e);
	CHECK(c != NULL, "a stored stream is still served");

	/* epochs: three fit; the fourth and its stacks are refused, counted */
	CHECK(epoch(c, 1, 0, &e) && epoch(c, 2, 1, &e) && epoch(c, 3, 2, &e) &&
	      epoch(c, 4, 3, &e), "four EPOCH frames applied or refused, no error");
	CHECK(ha_conn_stats(c)->rows_refused == 1 && ha_conn_stats(c)->malformed == 1,
	      "the fourth refused (rows_refused %" PRIu64 ", malformed %" PRIu64 ")",
	      ha_conn_stats(c)->rows_refused, ha_conn_stats(c)->malformed);
	CHECK(stacks(c, 5, 3, 0, 1, &e) && ha_conn_stats(c)->malformed == 2,
	      "a stack of the refused epoch is refused too");
	/* stacks: of epoch 2 (current): 4 fit, a frame of 2 more does not */
	CHECK(stacks(c, 6, 2, 0, 4, &e) && ha_conn_stats(c)->malformed == 2,
	      "4 stacks stored");
	CHECK(stacks(c, 7, 2, 4, 2, &e) && ha_conn_stats(c)->rows_refused == 2,
	      "2 more refused: 6 > 5 (rows_refused %" PRIu64 ")",
	      ha_conn_stats(c)->rows_refused);
	CHECK(stacks(c, 8, 2, 4, 1, &e) && ha_conn_stats(c)->rows_refused == 2,
	      "1 more fits: 5");
	/* STATS: key 1 stored, key 300 ignored */
	{
		struct smp_stat st[2] = { { .key = 1, .value = 11 }, { .key = 300, .value = 3 } };
		uint8_t p[64];
		long n = smp_stats_encode(st, 2, p, sizeof(p));

		CHECK(n > 0 && conn_send_frame(c, SMP_STATS, 9, p, (size_t)n, &e), "STATS applied");
	}
	CHECK(ha_conn_flush(c, &e), "committed");
	CHECK(q1(s, "SELECT COUNT(*) FROM epochs") == 3 &&
	      q1(s, "SELECT COUNT(*) FROM stacks") == 5, "3 epochs and 5 stacks stored");
	CHECK(q1(s, "SELECT COUNT(*) FROM stats") == 1 &&
	      q1(s, "SELECT value FROM stats WHERE key = 1") == 11,
	      "STATS key 1 stored, key 300 not");
	/* gaps: the first gap's positions are stored (a row per CPU), the second not */
	CHECK(epoch(c, 12, 2, &e) && epoch(c, 15, 2, &e), "two gaps (10..11, 13..14)");
	CHECK(ha_conn_flush(c, &e), "committed");
	CHECK(q1(s, "SELECT COUNT(*) FROM gaps") == 2 &&
	      q1(s, "SELECT SUM(gap_frames) FROM streams") == 4,
	      "positions of one gap stored (%" PRId64 " rows), both counted (%" PRId64
	      " frames)", q1(s, "SELECT COUNT(*) FROM gaps"),
	      q1(s, "SELECT SUM(gap_frames) FROM streams"));
	ha_conn_close(c);
	ha_conn_free(c);

	/* the counts are read again at HELLO: the next session is at the bounds too */
	c = session(s, &lim, 1, 1, &e);
	CHECK(c && stacks(c, 16, 2, 5, 1, &e) && ha_conn_stats(c)->rows_refused == 1,
	      "next session: a sixth stack refused");
	CHECK(epoch(c, 17, 4, &e) && ha_conn_stats(c)->rows_refused == 2,
	      "and a fourth epoch");
	ha_conn_close(c);
	ha_conn_free(c);

	/* full stacks: boot 2 (no rows yet) stores two, the third is refused, its event
	 * counted under HA_HIST_KEY_REFUSED; stack_counts rows: 3 so far (the two
	 * stacks, the refused key), one more fits, a fifth key is refused and its
	 * events are counted under the refused key too */
	{
		uint64_t seq = 1;
		HaStoreBootRows r;

		c = session(s, &lim, 2, 1, &e);
		CHECK(c && conn_send_formats(c, &seq, &e) && epoch(c, seq++, 0, &e), "boot 2: formats");
		CHECK(page(c, seq++, 0xffffffff81000100ull, 0, &e) &&
		      page(c, seq++, 0xffffffff81000200ull, 0, &e) &&
		      page(c, seq++, 0xffffffff81000100ull, 0, &e) &&
		      ha_conn_stats(c)->rows_refused == 0, "two full stacks stored");
		CHECK(page(c, seq++, 0xffffffff81000300ull, 0, &e) &&
		      ha_conn_stats(c)->rows_refused == 1 &&
		      page(c, seq++, 0xffffffff81000300ull, 0, &e) &&
		      ha_conn_stats(c)->rows_refused == 1,
		      "a third refused, counted once (rows_refused %" PRIu64 ")",
		      ha_conn_stats(c)->rows_refused);
		CHECK(ha_conn_flush(c, &e), "committed (%s)", e ? e->message : "ok");
		CHECK(q1(s, "SELECT COUNT(*) FROM fullstacks") == 2 &&
		      q1(s, "SELECT COUNT(*) FROM stack_counts") == 3 &&
		      q1(s, "SELECT count FROM stack_counts WHERE key = 1") == 2 &&
		      q1(s, "SELECT SUM(count) FROM stack_counts") == 5,
		      "2 full stacks, 3 count rows, the refused stack's 2 events under key 1");
		/* two ids no STACKS declared: one row fits (4), the other is refused */
		CHECK(page(c, seq++, 0, 0x00100007, &e) && page(c, seq++, 0, 0x00100009, &e) &&
		      ha_conn_flush(c, &e) && ha_conn_stats(c)->rows_refused == 2,
		      "one of two new keys refused (rows_refused %" PRIu64 ")",
		      ha_conn_stats(c)->rows_refused);
		CHECK(q1(s, "SELECT COUNT(*) FROM stack_counts") == 4 &&
		      q1(s, "SELECT count FROM stack_counts WHERE key = 1") == 3 &&
		      q1(s, "SELECT SUM(count) FROM stack_counts") == 7,
		      "4 count rows, every event counted (%" PRId64 " rows, %" PRId64 " events)",
		      q1(s, "SELECT COUNT(*) FROM stack_counts"),
		      q1(s, "SELECT SUM(count) FROM stack_counts"));
		ha_conn_close(c);
		ha_conn_free(c);
		CHECK(ha_store_boot_rows(s, q1(s, "SELECT MAX(id) FROM boots"), &r, &e) &&
		      r.fullstacks == 2 && r.counts == 4,
		      "boot_rows: %" PRIu64 " full stacks, %" PRIu64 " count rows", r.fullstacks,
		      r.counts);

		/* the next session: a stored stack still counts, a new one is refused */
		c = session(s, &lim, 2, 1, &e);
		CHECK(c && page(c, seq++, 0xffffffff81000200ull, 0, &e) &&
		      page(c, seq++, 0xffffffff81000400ull, 0, &e) &&
		      page(c, seq++, 0, 0x0010000b, &e) && ha_conn_flush(c, &e) &&
		      ha_conn_stats(c)->rows_refused == 2,
		      "next session: a new full stack and a new key refused (%" PRIu64 ")",
		      c ? ha_conn_stats(c)->rows_refused : 0);
		CHECK(q1(s, "SELECT COUNT(*) FROM fullstacks") == 2 &&
		      q1(s, "SELECT COUNT(*) FROM stack_counts") == 4 &&
		      q1(s, "SELECT count FROM stack_counts WHERE key = 1") == 5 &&
		      q1(s, "SELECT SUM(count) FROM stack_counts") == 10,
		      "still 2 full stacks and 4 count rows, 10 events counted");
		ha_conn_close(c);
		ha_conn_free(c);
	}

	ha_store_free(s);
	g_unlink(path);
	return tap_done();
}
