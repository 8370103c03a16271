// SPDX-License-Identifier: MIT
/*
 * Unit tests: one HaConn fed frames directly (no socket): WELCOME resume point,
 * ACK only after commit and cumulative, duplicates acknowledged but not applied, a
 * gap counted, a frame before HELLO refused, a batch over the quota rolled back and
 * never acknowledged, a store failure inside the pairing callback failing its batch
 * (and one in a frame's rows, and one in the rows written at the commit),
 * small chunks merged at the end of the stream.
 */
#include <glib/gstdio.h>
#include <inttypes.h>
#include <string.h>

#include "chunk.h"
#include "guest-formats.h"
#include "ingest.h"
#include "proto.h"
#include "ringpage.h"
#include "tap.h"
#include "conn-feed.h"
#include "store-int.h"

static uint8_t boot_id[16] = { 1, 2, 3 };

static bool send_hello_stream(HaConn *c, uint64_t stream_id, GError **error)
{
	uint8_t p[128];
	struct smp_hello h = {
		.stream_id = stream_id, .text_addr = 0xffffffff81000000ull, .nr_cpus = 2,
		.page_size = 4096, .map_bits = 10, .max_depth = 64,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	long n;

	memcpy(h.boot_id, boot_id, 16);
	n = smp_hello_encode(&h, p, sizeof(p));
	return conn_send_frame(c, SMP_HELLO, 0, p, (size_t)n, error);
}

/* A HELLO of the test's boot with other geometry. */
static bool send_hello_geo(HaConn *c, uint64_t stream_id, uint32_t nr_cpus,
			   uint32_t page_size, uint32_t map_bits, uint32_t flags, GError **error)
{
	uint8_t p[128];
	struct smp_hello h = {
		.stream_id = stream_id, .text_addr = 0xffffffff81000000ull, .nr_cpus = nr_cpus,
		.page_size = page_size, .map_bits = map_bits, .max_depth = 64, .flags = flags,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	long n;

	memcpy(h.boot_id, boot_id, 16);
	n = smp_hello_encode(&h, p, sizeof(p));
	return conn_send_frame(c, SMP_HELLO, 0, p, (size_t)n, error);
}

static bool send_stack(HaConn *c, uint64_t seq, const uint32_t *ids, const uint64_t *ip0,
		       unsigned int nr, GError **error)
{
	uint8_t p[1024];
	size_t len = 0;

	for (unsigned int i = 0; i < nr; i++) {
		uint64_t ips[2] = { ip0[i], 0xffffffff81000500ull };

		len += (size_t)smp_delta_put_stack(p + len, sizeof(p) - len, ids[i], 1, ips, 2);
	}
	return conn_send_frame(c, SMP_STACKS, seq, p, len, error);
}

static bool send_hello(HaConn *c, GError **error)
{
	return send_hello_stream(c, 42, error);
}

static bool send_epoch(HaConn *c, uint64_t seq, uint64_t epoch, GError **error)
{
	uint8_t p[SMP_DELTA_EPOCH_SIZE];
	long n = smp_delta_put_epoch(p, sizeof(p), epoch, epoch * 100);

	return conn_send_frame(c, SMP_EPOCH, seq, p, (size_t)n, error);
}

static void put_common(uint8_t *d, uint16_t type, int32_t pid)
{
	memcpy(d, &type, 2);
	d[2] = 0;
	d[3] = 0;
	memcpy(d + 4, &pid, 4);
}

/* A PAGE of cpu 0: a kmalloc event and its full kernel_stack of 3 frames at @ip0. */
static bool send_page_fullstack(HaConn *c, uint64_t seq, uint64_t ip0, GError **error)
{
	uint8_t page[4096], km[52] = { 0 }, ks[16 + 3 * 8] = { 0 }, p[8 + sizeof(page)];
	struct ringpage rp;
	struct smp_page m = { .cpu = 0, .data = page };
	int32_t depth = 3;
	long n;

	put_common(km, GF_ID_KMALLOC, 77);
	put_common(ks, GF_ID_KERNEL_STACK, 77);
	memcpy(ks + 8, &depth, 4);
	for (int i = 0; i < depth; i++) {
		uint64_t ip = ip0 + 16 * (uint64_t)i;

		memcpy(ks + 16 + 8 * i, &ip, 8);
	}
	ringpage_init(&rp, page, sizeof(page));
	ringpage_reset(&rp, 1000 * seq);
	ringpage_add(&rp, 1000 * seq, km, sizeof(km));
	ringpage_add(&rp, 1000 * seq + 5, ks, sizeof(ks));
	m.data_len = ringpage_finish(&rp);
	n = smp_page_encode(&m, p, sizeof(p));
	return n > 0 && conn_send_frame(c, SMP_PAGE, seq, p, (size_t)n, error);
}

/* Prepared here, not through the store's cache: that one keys statements by the SQL's
 * address, and these texts are built and freed, so a later text could take a freed
 * one's address and find its statement. */
static int64_t q1(HaStore *s, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	if (sqlite3_prepare_v2(ha_store_db(s), sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-ingest-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "t.db", NULL);
	GError *e = NULL;
	HaStore *s = ha_store_open(path, false, &e);
	HaLimits lim;
	HaConn *c;

	ha_limits_default(&lim);
	lim.batch_frames = 1000;

	/* A frame before HELLO ends the connection. */
	c = ha_conn_new(s, &lim, "t", "test");
	CHECK(!send_epoch(c, 1, 0, &e) && e && strstr(e->message, "before HELLO"),
	      "frame before HELLO: %s", e ? e->message : "accepted");
	g_clear_error(&e);
	ha_conn_free(c);

	c = ha_conn_new(s, &lim, "t", "test");
	CHECK(send_hello(c, &e) && conn_last_out(c, SMP_WELCOME) == 1, "new stream resumes at 1");
	CHECK(send_epoch(c, 1, 0, &e) && send_epoch(c, 2, 1, &e), "two epochs applied");
	CHECK(conn_last_out(c, SMP_ACK) == 0, "nothing acknowledged before the commit");
	CHECK(q1(s, "SELECT COUNT(*) FROM epochs") == 2, "inside the open transaction");
	CHECK(ha_conn_flush(c, &e) && conn_last_out(c, SMP_ACK) == 2, "ACK 2 after the commit");
	/* duplicates: acknowledged again, not applied */
	CHECK(send_epoch(c, 2, 7, &e) && ha_conn_flush(c, &e) && conn_last_out(c, SMP_ACK) == 2,
	      "a duplicate is acknowledged");
	CHECK(q1(s, "SELECT COUNT(*) FROM epochs WHERE epoch = 7") == 0, "and not applied");
	/* a gap */
	CHECK(send_epoch(c, 6, 3, &e) && ha_conn_flush(c, &e) && conn_last_out(c, SMP_ACK) == 6,
	      "after a gap, ACK 6");
	CHECK(q1(s, "SELECT gap_frames FROM streams") == 3, "gap of 3 frames recorded");
	ha_conn_close(c);
	ha_conn_free(c);

	/* Reconnect: the resume point comes from the store. */
	c = ha_conn_new(s, &lim, "t", "test");
	CHECK(send_hello(c, &e) && conn_last_out(c, SMP_WELCOME) == 7, "resume at 7 after reconnect");
	CHECK(q1(s, "SELECT ended IS NULL FROM boots") == 1, "boot running again");

	/* A later HELLO on the same connection starts a new session (here a new stream):
	 * the open batch is committed and acknowledged first. */
	CHECK(send_epoch(c, 7, 5, &e), "epoch 5 in an open batch");
	CHECK(send_hello_stream(c, 43, &e), "a new stream's HELLO on the same connection");
	CHECK(conn_last_out(c, SMP_ACK) == 7, "the old session's batch acknowledged");
	CHECK(q1(s, "SELECT COUNT(*) FROM epochs WHERE epoch = 5") == 1, "and committed");
	CHECK(q1(s, "SELECT COUNT(*) FROM streams") == 2, "second stream recorded");
	CHECK(send_epoch(c, 1, 6, &e) && ha_conn_flush(c, &e) && conn_last_out(c, SMP_ACK) == 1,
	      "the new stream starts at seq 1");
	ha_conn_close(c);
	ha_conn_free(c);
	c = ha_conn_new(s, &lim, "t", "test");
	CHECK(send_hello(c, &e) && conn_last_out(c, SMP_WELCOME) == 8, "stream 42 resumes at 8");

	/* PROTOCOL.md 2.2: seq 2^64-1, or a jump beyond SMP_SEQ_MAX_GAP, is malformed and
	 * never becomes the next expected seq (it used to wrap it to 0, and the next
	 * WELCOME was built from uninitialised memory). */
	{
		uint64_t m0 = ha_conn_stats(c)->malformed;
		size_t olen;

		CHECK(send_epoch(c, UINT64_MAX, 10, &e), "seq 2^64-1: connection kept");
		CHECK(send_epoch(c, 8 + SMP_SEQ_MAX_GAP + 1, 11, &e), "a jump too far: kept");
		CHECK(send_epoch(c, SMP_SEQ_MAX + 1, 11, &e), "seq SMP_SEQ_MAX + 1: kept");
		CHECK(ha_conn_stats(c)->malformed == m0 + 3, "all three counted malformed");
		CHECK(send_epoch(c, 8, 12, &e) && ha_conn_flush(c, &e) &&
		      conn_last_out(c, SMP_ACK) == 8, "seq 8 is still the next one: ACK 8");
		CHECK(q1(s, "SELECT next_seq FROM streams WHERE stream_id = 42") == 9 &&
		      q1(s, "SELECT gap_frames FROM streams WHERE stream_id = 42") == 3 &&
		      q1(s, "SELECT COUNT(*) FROM epochs WHERE epoch IN (10, 11)") == 0,
		      "no gap recorded, nothing applied, next seq 9 stored");
		CHECK(send_hello(c, &e), "a later HELLO of the stream");
		ha_conn_output(c, &olen);
		CHECK(olen == SMP_HDR_SIZE + 16 && conn_last_out(c, SMP_WELCOME) == 9,
		      "its WELCOME is one valid frame resuming at 9");
		{
			uint64_t seq = 9, next = 9, gaps = 3;
			bool all = true;

			while (seq < SMP_SEQ_MAX) {
				seq = MIN(next + SMP_SEQ_MAX_GAP, SMP_SEQ_MAX);
				gaps += seq - next;
				all &= send_epoch(c, seq, 13, &e);
				next = seq + 1;
			}
			CHECK(all && ha_conn_flush(c, &e) && conn_last_out(c, SMP_ACK) == SMP_SEQ_MAX,
			      "gaps of SMP_SEQ_MAX_GAP up to SMP_SEQ_MAX are loss, ACKed");
			CHECK(q1(s, "SELECT gap_frames FROM streams WHERE stream_id = 42") ==
			      (int64_t)gaps, "the gaps are recorded exactly (%" PRIu64 ")", gaps);
		}
		CHECK(send_epoch(c, SMP_SEQ_MAX + 1, 14, &e) && ha_conn_flush(c, &e) &&
		      ha_conn_stats(c)->malformed == m0 + 4, "nothing goes beyond SMP_SEQ_MAX");
		CHECK(send_hello(c, &e) && conn_last_out(c, SMP_WELCOME) == SMP_SEQ_MAX + 1,
		      "a full stream resumes at SMP_SEQ_MAX + 1 (the guest starts a new one)");
		/* back to where the quota test below starts */
		CHECK(ha_store_exec(s, "UPDATE streams SET next_seq = 9, cur_epoch = 12 WHERE"
				    " stream_id = 42", &e), "reset stream 42 to seq 9");
	}

	/* Over the quota: rolled back, never acknowledged. */
	ha_conn_close(c);
	ha_conn_free(c);
	lim.quota_bytes = 1;
	c = ha_conn_new(s, &lim, "t", "test");
	CHECK(send_hello(c, &e) && conn_last_out(c, SMP_WELCOME) == 9, "resume at 9");
	CHECK(send_epoch(c, 9, 20, &e), "epoch 20 applied in the batch");
	CHECK(!ha_conn_flush(c, &e) && e && strstr(e->message, "quota"), "quota: %s",
	      e ? e->message : "committed");
	g_clear_error(&e);
	CHECK(conn_last_out(c, SMP_ACK) == 0, "no ACK for the rolled-back batch");
	ha_conn_close(c);
	CHECK(conn_last_out(c, SMP_ACK) == 0, "nor when the connection closes");
	ha_conn_free(c);
	CHECK(q1(s, "SELECT COUNT(*) FROM epochs WHERE epoch = 20") == 0 &&
	      q1(s, "SELECT next_seq FROM streams WHERE stream_id = 42") == 9,
	      "the store is as before the batch");

	/* A stored next seq out of range (a store written before seq was bounded): the
	 * HELLO is refused with a reason, and no WELCOME at all goes out. */
	lim.quota_bytes = 0;
	CHECK(ha_store_exec(s, "UPDATE streams SET next_seq = 0 WHERE stream_id = 42", &e),
	      "next_seq 0 stored");
	c = ha_conn_new(s, &lim, "t", "test");
	{
		size_t olen;

		CHECK(!send_hello(c, &e) && e && strstr(e->message, "stored next seq 0"),
		      "HELLO refused: %s", e ? e->message : "accepted");
		g_clear_error(&e);
		ha_conn_output(c, &olen);
		/* conn_last_out() decodes whatever is there: under valgrind, uninitialised
		 * bytes in it are an error even when the checks below pass */
		CHECK(conn_last_out(c, SMP_WELCOME) == 0 && olen == 0,
		      "nothing sent to the guest (%zu bytes)", olen);
	}
	ha_conn_close(c);
	ha_conn_free(c);

	/* A later HELLO of the same boot that changes its geometry is refused with a
	 * reason; the boot keeps its first values. (The first HELLO said 2 CPUs, pages of
	 * 4096 bytes, little-endian, map bits 10.) */
	{
		static const struct {
			uint32_t cpus, psize, bits, flags;
			const char *says;
		} geo[] = {
			{ 2, 4096, 10, SMP_HELLO_PAGES_BE, "pages little-endian -> big-endian" },
			{ 2, 8192, 10, 0, "page size 4096 -> 8192" },
			{ 4, 4096, 10, 0, "CPUs 2 -> 4" },
			{ 2, 4096, 12, 0, "map bits 10 -> 12" },
		};

		for (unsigned int i = 0; i < G_N_ELEMENTS(geo); i++) {
			c = ha_conn_new(s, &lim, "t", "test");
			CHECK(!send_hello_geo(c, 44 + i, geo[i].cpus, geo[i].psize, geo[i].bits,
					      geo[i].flags, &e) && e &&
			      strstr(e->message, "changes the boot's geometry") &&
			      strstr(e->message, geo[i].says),
			      "geometry change refused: %s", e ? e->message : "accepted");
			g_clear_error(&e);
			ha_conn_close(c);
			ha_conn_free(c);
		}
		CHECK(q1(s, "SELECT COUNT(*) FROM boots WHERE page_size = 4096 AND nr_cpus = 2"
			 " AND map_bits = 10 AND (flags & 2) = 0") == 1 &&
		      q1(s, "SELECT COUNT(*) FROM streams WHERE stream_id >= 44") == 0,
		      "the boot keeps its first geometry, no stream for the refused HELLOs");
		c = ha_conn_new(s, &lim, "t", "test");
		CHECK(send_hello_geo(c, 50, 2, 4096, 10, 0, &e), "the same geometry: accepted");
		CHECK(!send_hello_geo(c, 50, 2, 4096, 10, SMP_HELLO_PAGES_BE, &e) && e &&
		      strstr(e->message, "big-endian"),
		      "... and a change on the same connection refused too: %s",
		      e ? e->message : "accepted");
		g_clear_error(&e);
		ha_conn_close(c);
		ha_conn_free(c);
	}

	/* A STACKS record redefining an id already stored in its epoch with other frames
	 * is a conflict: counted malformed, logged, nothing of its frame applied. The
	 * same definition again (a resend of the map) is fine. */
	{
		const uint32_t id7[] = { smp_id_make(0, 7) }, id78[] = { smp_id_make(0, 8),
									 smp_id_make(0, 7) };
		const uint64_t a[] = { 0xffffffff81000100ull }, b[] = { 0xffffffff81000200ull },
			       ba[] = { 0xffffffff81000300ull, 0xffffffff81000200ull };
		uint64_t m0;

		c = ha_conn_new(s, &lim, "t", "test");
		CHECK(send_hello_geo(c, 60, 2, 4096, 10, 0, &e) && send_epoch(c, 1, 0, &e),
		      "stream 60, epoch 0");
		m0 = ha_conn_stats(c)->malformed;
		CHECK(send_stack(c, 2, id7, a, 1, &e) && send_stack(c, 3, id7, a, 1, &e) &&
		      ha_conn_stats(c)->malformed == m0, "the same stack twice: fine");
		CHECK(send_stack(c, 4, id7, b, 1, &e) && ha_conn_stats(c)->malformed == m0 + 1,
		      "id 7 with other frames: malformed");
		CHECK(send_stack(c, 5, id78, ba, 2, &e) && ha_conn_stats(c)->malformed == m0 + 2,
		      "a frame with a new id 8 and a conflicting id 7: malformed");
		CHECK(ha_conn_flush(c, &e) && conn_last_out(c, SMP_ACK) == 5, "all acknowledged");
		CHECK(q1(s, "SELECT COUNT(*) FROM stacks s JOIN streams t ON t.boot = s.boot"
			 " WHERE t.stream_id = 60 AND s.epoch = 0 AND s.stack_id = 8") == 0,
		      "nothing of the conflicting frame stored (id 8 not either)");
		{
			sqlite3_stmt *st = ha_store_stmt(s, "SELECT ips FROM stacks WHERE"
							 " epoch = 0 AND stack_id = 7", NULL);
			uint64_t ip = 0;

			if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) >= 8)
				memcpy(&ip, sqlite3_column_blob(st, 0), 8);
			if (st)
				sqlite3_reset(st);
			CHECK(GUINT64_FROM_LE(ip) == a[0], "the first definition of id 7 kept");
		}
		CHECK(q1(s, "SELECT malformed FROM streams WHERE stream_id = 60") == 2,
		      "the stream's stored malformed count says 2");
		ha_conn_close(c);
		ha_conn_free(c);
	}

	/*
	 * A store failure inside the pairing callback (a kernel_stack event's stack
	 * inserted into fullstacks, here refused by a trigger of the real database) fails
	 * the frame and its batch: nothing of the batch is committed or acknowledged
	 * (it used to count the event as "no stack" and commit the rest). With the fault
	 * gone, the guest's resend stores all of it.
	 */
	{
		uint64_t seq = 1, page_seq;
		int64_t boot;

		boot_id[0] = 9;	/* a boot of its own */
		c = ha_conn_new(s, &lim, "t", "test");
		CHECK(send_hello_geo(c, 70, 2, 4096, 10, 0, &e) && conn_send_formats(c, &seq, &e) &&
		      send_epoch(c, seq, 0, &e) && ha_conn_flush(c, &e) &&
		      conn_last_out(c, SMP_ACK) == seq, "boot 9: formats and epoch acknowledged (%s)",
		      e ? e->message : "ok");
		g_clear_error(&e);
		seq++;
		page_seq = seq;
		CHECK(ha_store_exec(s, "CREATE TRIGGER fault BEFORE INSERT ON fullstacks BEGIN"
				    " SELECT RAISE(ABORT, 'injected fault'); END", &e),
		      "fault injected on fullstacks inserts");
		CHECK(!(send_page_fullstack(c, seq, 0xffffffff81000100ull, &e) &&
			ha_conn_flush(c, &e)), "the page's frame or its batch fails");
		CHECK(e && strstr(e->message, "injected fault"), "with the store's error: %s",
		      e ? e->message : "none");
		g_clear_error(&e);
		CHECK(conn_last_out(c, SMP_ACK) == 0, "nothing acknowledged");
		ha_conn_close(c);
		CHECK(conn_last_out(c, SMP_ACK) == 0, "nor when the connection closes");
		ha_conn_free(c);
		boot = q1(s, "SELECT id FROM boots WHERE hex(boot_uuid) LIKE '0902%'");
		{
			g_autofree char *chunks = g_strdup_printf("SELECT COUNT(*) FROM chunks"
								  " WHERE boot = %" PRId64, boot);
			g_autofree char *counts = g_strdup_printf("SELECT COALESCE(SUM(count), 0)"
								  " FROM stack_counts WHERE boot = %"
								  PRId64, boot);
			g_autofree char *full = g_strdup_printf("SELECT COALESCE(SUM(count), 0)"
								" FROM stack_counts WHERE boot = %"
								PRId64 " AND key %% 2 = 1", boot);

			CHECK(boot > 0 && q1(s, chunks) == 0 && q1(s, counts) == 0 &&
			      q1(s, "SELECT next_seq FROM streams WHERE stream_id = 70") ==
			      (int64_t)page_seq, "nothing of the batch stored, next seq %" PRIu64,
			      page_seq);

			CHECK(ha_store_exec(s, "DROP TRIGGER fault", &e), "fault removed");
			c = ha_conn_new(s, &lim, "t", "test");
			CHECK(send_hello_geo(c, 70, 2, 4096, 10, 0, &e) &&
			      conn_last_out(c, SMP_WELCOME) == page_seq, "the guest resumes at the page");
			CHECK(send_page_fullstack(c, page_seq, 0xffffffff81000100ull, &e) &&
			      ha_conn_flush(c, &e) && conn_last_out(c, SMP_ACK) == page_seq,
			      "resent: stored and acknowledged (%s)", e ? e->message : "ok");
			g_clear_error(&e);
			CHECK(q1(s, chunks) == 1 && q1(s, full) == 1 && q1(s, counts) == 1,
			      "one chunk, the event counted once with its full stack");

			/* Commits bounded by time make small chunks: each page here is its
			 * own commit. At the end of the stream they are merged into one
			 * chunk (compact.h) that keeps the first id, the seq and time range
			 * and the counts, and inflates to the pages in order. */
			{
				g_autofree char *sum = g_strdup_printf(
					"SELECT SUM(nr_pages) * 1000000 + SUM(nr_events) * 1000 +"
					" SUM(nr_traced) FROM chunks WHERE boot = %" PRId64, boot);
				g_autofree char *raw = g_strdup_printf("SELECT SUM(raw_bytes)"
					" FROM chunks WHERE boot = %" PRId64, boot);
				g_autofree char *first = g_strdup_printf("SELECT MIN(id) FROM"
					" chunks WHERE boot = %" PRId64, boot);
				g_autofree char *range = g_strdup_printf("SELECT COUNT(*) FROM"
					" chunks WHERE boot = %" PRId64 " AND first_seq = %" PRIu64
					" AND last_seq = %" PRIu64 " AND ts_min = %" PRIu64
					" AND ts_max = %" PRIu64, boot, page_seq, page_seq + 5,
					1000 * page_seq, 1000 * (page_seq + 5) + 5);
				int64_t raw0, id0;
				bool all = true;

				for (uint64_t i = 1; i <= 5; i++)
					all &= send_page_fullstack(c, page_seq + i,
								   0xffffffff81000100ull, &e) &&
					       ha_conn_flush(c, &e);
				raw0 = q1(s, raw);
				id0 = q1(s, first);
				CHECK(all && q1(s, chunks) == 6 && q1(s, sum) == 6012006,
				      "six pages in six chunks (%s)", e ? e->message : "ok");
				ha_conn_close(c);
				CHECK(q1(s, chunks) == 1 && q1(s, sum) == 6012006 &&
				      q1(s, raw) == raw0 && q1(s, first) == id0 &&
				      q1(s, range) == 1,
				      "merged into one chunk: id, seqs, times, counts kept");
				{
					g_autofree char *data = g_strdup_printf("SELECT data FROM"
						" chunks WHERE boot = %" PRId64, boot);
					sqlite3_stmt *st = NULL;
					g_autoptr(GBytes) in = NULL;
					size_t off = 0;
					const uint8_t *pg;
					uint32_t len;
					int pages = 0;
					uint64_t ts = 0, ts_ok = 1;

					if (sqlite3_prepare_v2(ha_store_db(s), data, -1, &st,
							       NULL) == SQLITE_OK &&
					    sqlite3_step(st) == SQLITE_ROW)
						in = ha_chunk_decompress(sqlite3_column_blob(st, 0),
							(size_t)sqlite3_column_bytes(st, 0), NULL);
					sqlite3_finalize(st);
					while (in && ha_chunk_next_page(in, &off, &pg, &len)) {
						memcpy(&ts, pg, 8);	/* the page's time stamp */
						ts_ok &= ts == 1000 * (page_seq + (uint64_t)pages);
						pages++;
					}
					CHECK(pages == 6 && ts_ok, "it inflates to the six pages in"
					      " order (%d)", pages);
				}
			}
			ha_conn_free(c);
		}
	}

	/*
	 * A store failure at any stage fails the batch the same way: in a frame's own
	 * row (epochs, written when the frame is applied) and in the rows written only at
	 * the commit (stack_counts and chunks, ingest-batch.c). The error reaches the
	 * caller, nothing of the batch is acknowledged (not at close either) and the
	 * stream's stored resume point stays before it.
	 */
	{
		static const struct {
			const char *table;
			const char *fault;
			const char *next_seq;
			const char *chunks;
		} at[] = {
			{ "epochs",
			  "CREATE TRIGGER fault BEFORE INSERT ON epochs BEGIN"
			  " SELECT RAISE(ABORT, 'injected fault'); END",
			  "SELECT next_seq FROM streams WHERE stream_id = 100",
			  "SELECT COUNT(*) FROM chunks c JOIN boots b ON c.boot = b.id"
			  " WHERE hex(b.boot_uuid) LIKE '1402%'" },
			{ "stack_counts",
			  "CREATE TRIGGER fault BEFORE INSERT ON stack_counts BEGIN"
			  " SELECT RAISE(ABORT, 'injected fault'); END",
			  "SELECT next_seq FROM streams WHERE stream_id = 101",
			  "SELECT COUNT(*) FROM chunks c JOIN boots b ON c.boot = b.id"
			  " WHERE hex(b.boot_uuid) LIKE '1502%'" },
			{ "chunks",
			  "CREATE TRIGGER fault BEFORE INSERT ON chunks BEGIN"
			  " SELECT RAISE(ABORT, 'injected fault'); END",
			  "SELECT next_seq FROM streams WHERE stream_id = 102",
			  "SELECT COUNT(*) FROM chunks c JOIN boots b ON c.boot = b.id"
			  " WHERE hex(b.boot_uuid) LIKE '1602%'" },
		};

		for (guint i = 0; i < G_N_ELEMENTS(at); i++) {
			uint64_t seq = 1, first;
			bool ok;

			boot_id[0] = (uint8_t)(20 + i);	/* 0x14.., 0x15.., 0x16.. */
			c = ha_conn_new(s, &lim, "t", "test");
			CHECK(send_hello_geo(c, 100 + i, 2, 4096, 10, 0, &e) &&
			      conn_send_formats(c, &seq, &e) && ha_conn_flush(c, &e) &&
			      conn_last_out(c, SMP_ACK) == seq - 1, "%s: formats acknowledged (%s)",
			      at[i].table, e ? e->message : "ok");
			g_clear_error(&e);
			first = seq;
			CHECK(ha_store_exec(s, at[i].fault, &e), "fault injected on %s inserts",
			      at[i].table);
			ok = send_epoch(c, seq, 0, &e) &&
			     send_page_fullstack(c, seq + 1, 0xffffffff81000200ull, &e) &&
			     ha_conn_flush(c, &e);
			CHECK(!ok && e && strstr(e->message, "injected fault"),
			      "%s: the batch fails with the store's error: %s", at[i].table,
			      e ? e->message : "none");
			g_clear_error(&e);
			CHECK(conn_last_out(c, SMP_ACK) == 0, "%s: nothing of it acknowledged",
			      at[i].table);
			ha_conn_close(c);
			CHECK(conn_last_out(c, SMP_ACK) == 0, "%s: nor when the connection closes",
			      at[i].table);
			ha_conn_free(c);
			CHECK(ha_store_exec(s, "DROP TRIGGER fault", &e), "fault removed");
			CHECK(q1(s, at[i].next_seq) == (int64_t)first && q1(s, at[i].chunks) == 0,
			      "%s: no chunk stored, the stream resumes at seq %" PRIu64,
			      at[i].table, first);
		}
	}

	/* ACKs the guest does not read: older ones give way to newer, but a frame the
	 * socket took part of is sent to its end, so the guest's stream stays whole. */
	{
		GByteArray *seen = g_byte_array_new();
		struct smp_decoder *d = smp_decoder_new(64);
		struct smp_frame f;
		uint64_t ack = 0, frames = 0;
		const uint8_t *out;
		size_t len, skipped = 0;
		bool all = true;
		int r;

		c = ha_conn_new(s, &lim, "t", "test");
		CHECK(send_hello_stream(c, 90, &e) && conn_last_out(c, SMP_WELCOME) == 1,
		      "stream 90 resumes at 1");
		for (uint64_t seq = 1; seq <= 300; seq++) {
			all &= send_epoch(c, seq, 1000 + seq, &e) && ha_conn_flush(c, &e);
			if (seq == 10) {	/* the socket takes 5 bytes of ACK 1 */
				out = ha_conn_output(c, &len);
				g_byte_array_append(seen, out, 5);
				ha_conn_output_done(c, 5);
			}
		}
		out = ha_conn_output(c, &len);
		CHECK(all && len <= 4096 + 64, "300 ACKs unread: %zu bytes held", len);
		g_byte_array_append(seen, out, (guint)len);
		ha_conn_output_done(c, len);
		for (size_t off = 0, n; ; off += n) {
			n = smp_decoder_feed(d, seen->data + off, seen->len - off);
			while ((r = smp_decoder_next(d, &f, &skipped)) == 1) {
				frames++;
				all &= f.type == SMP_ACK &&
				       smp_ack_decode(&ack, f.payload, f.len) >= 0;
			}
			if (r < 0 || skipped || off + n == seen->len)
				break;
		}
		CHECK(all && r == 0 && skipped == 0 && !smp_decoder_pending(d) && ack == 300,
		      "what the guest reads is whole ACK frames, the last ACK 300 (%" PRIu64
		      " frames, %zu bytes skipped, r %d)", frames, skipped, r);
		smp_decoder_free(d);
		g_byte_array_unref(seen);
		ha_conn_close(c);
		ha_conn_free(c);
	}

	ha_store_free(s);
	{
		g_autofree char *wal = g_strconcat(path, "-wal", NULL);
		g_autofree char *shm = g_strconcat(path, "-shm", NULL);

		g_unlink(path);
		g_unlink(wal);
		g_unlink(shm);
		g_rmdir(dir);
	}
	return tap_done();
}
