// SPDX-License-Identifier: MIT
/*
 * Unit tests: the row limits of the tables whose keys a guest chooses (ingest.h,
 * HaLimits.max_*), each lowered so that a few frames reach it, on a real HaConn and
 * store. At each bound: boots and streams, the HELLO refused with an error that says
 * so (the boots and streams stored are still served); epochs and stacks, the frame
 * refused (malformed, rows_refused), nothing of it stored, the frames after it still
 * applied; gap positions, no more rows (streams.gap_frames still counts); STATS keys
 * beyond HA_STAT_KEYS, ignored. The counts hold across sessions (read at HELLO).
 */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <string.h>

#include "ingest.h"
#include "proto.h"
#include "tap.h"
#include "conn-feed.h"

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
	      lim.max_epochs && lim.max_stacks && lim.max_gaps, "every row limit on by default");
	lim.max_boots = 2;
	lim.max_streams = 2;
	lim.max_epochs = 3;
	lim.max_stacks = 5;
	lim.max_gaps = 1;

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

	ha_store_free(s);
	g_unlink(path);
	return tap_done();
}
