// SPDX-License-Identifier: MIT
/* Unit tests: store creation, schema version, migration refusal, domain names; a
 * boot's row counters (boot_rows) against COUNT(*) of its rows, through the typed
 * calls, a rolled-back frame and the migration of an older store; the chunk packer's
 * spans give back the bytes ha_chunk_add_page() packs; the typed reads of export,
 * compaction, the shipper and the clock map (a missing row said so, a store error an
 * error). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>

#include "chunk.h"
#include "store-clock.h"
#include "store-compact.h"
#include "store-export.h"
#include "store-fleet.h"
#include "store-ingest.h"
#include "store-report.h"
#include "store.h"
#include "tap.h"
#include "store-int.h"

/* Pages of three sizes (an empty one too) spread over one buffer, as two CPUs'
 * pages interleave in a batch: each CPU's chunk inflates to its pages, packed. */
static void test_chunkz(void)
{
	g_autoptr(HaChunkZ) z = ha_chunkz_new(3);
	g_autofree uint8_t *base = g_malloc(3 * 4096);
	HaChunkSpan cpu0[] = { { 0, 4096 }, { 8192, 16 }, { 8208, 0 } };
	HaChunkSpan cpu1[] = { { 4096, 4096 } };

	for (int i = 0; i < 3 * 4096; i++)
		base[i] = (uint8_t)(i * 7 / 13);
	for (int round = 0; round < 2; round++) {
		const HaChunkSpan *sp = round ? cpu1 : cpu0;
		size_t n = round ? G_N_ELEMENTS(cpu1) : G_N_ELEMENTS(cpu0), zlen = 0;
		g_autoptr(GByteArray) packed = g_byte_array_new();
		g_autoptr(GBytes) raw = NULL;
		g_autoptr(GError) e = NULL;
		const void *zd;

		for (size_t i = 0; i < n; i++)
			ha_chunk_add_page(packed, base + sp[i].off, sp[i].len);
		zd = ha_chunkz_compress(z, base, sp, n, &zlen, &e);
		CHECK(zd && ha_chunk_packed_size(sp, n) == packed->len,
		      "cpu %d: compressed %zu of %u packed bytes", round, zlen, packed->len);
		raw = zd ? ha_chunk_decompress(zd, zlen, &e) : NULL;
		CHECK(raw && g_bytes_get_size(raw) == packed->len &&
		      !memcmp(g_bytes_get_data(raw, NULL), packed->data, packed->len),
		      "cpu %d: inflates to the packed pages (%s)", round, e ? e->message : "ok");
	}
}

static int64_t count_of(HaStore *s, const char *sql, int64_t boot)
{
	g_autoptr(GError) e = NULL;
	sqlite3_stmt *st = ha_store_stmt(s, sql, &e);
	int64_t n = -1;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return n;
}

/* ha_store_boot_rows() equals what the tables hold for @boot. */
static bool rows_match(HaStore *s, int64_t boot, const char *what)
{
	g_autoptr(GError) e = NULL;
	HaStoreBootRows r = { 0 };
	int64_t streams = count_of(s, "SELECT COUNT(*) FROM streams WHERE boot = ?", boot);
	int64_t epochs = count_of(s, "SELECT COUNT(*) FROM epochs WHERE boot = ?", boot);
	int64_t stacks = count_of(s, "SELECT COUNT(*) FROM stacks WHERE boot = ?", boot);
	int64_t gaps = count_of(s, "SELECT COUNT(*) FROM (SELECT DISTINCT stream, seq_lo"
				" FROM gaps WHERE boot = ?)", boot);
	int64_t full = count_of(s, "SELECT COUNT(*) FROM fullstacks WHERE boot = ?", boot);
	int64_t counts = count_of(s, "SELECT COUNT(*) FROM stack_counts WHERE boot = ?", boot);
	bool ok = ha_store_boot_rows(s, boot, &r, &e);

	CHECK(ok && (int64_t)r.streams == streams && (int64_t)r.epochs == epochs &&
	      (int64_t)r.stacks == stacks && (int64_t)r.gaps == gaps &&
	      (int64_t)r.fullstacks == full && (int64_t)r.counts == counts,
	      "%s: boot %" G_GINT64_FORMAT " counters %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
	      "/%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT "/%"
	      G_GUINT64_FORMAT " = rows %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%"
	      G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
	      " (%s)", what, boot, r.streams, r.epochs, r.stacks, r.gaps, r.fullstacks,
	      r.counts, streams, epochs, stacks, gaps, full, counts, e ? e->message : "ok");
	return ok;
}

/* Two boots written through the typed calls, with the duplicates the guest may send
 * (an epoch, a stack, a gap on a second CPU, a full stack, a count key), a STACKS
 * frame taken back and rows refused at their limits; then the same store as schema 5
 * had it (no full-stack or count counters) and as schema 3 had it (no counters)
 * migrated: the counts come back. */
/* What migration 6 -> 7 added, taken away again (to make an older store). */
#define UNDO_SCHEMA_7 "DROP TRIGGER arena_gone; DROP TABLE arenas;" \
	" ALTER TABLE chunks DROP COLUMN recovered;" \
	" ALTER TABLE postmortems DROP COLUMN stream;" \
	" ALTER TABLE postmortems DROP COLUMN seam_seq;" \
	" ALTER TABLE postmortems DROP COLUMN arena_frames;" \
	" ALTER TABLE postmortems DROP COLUMN ring_pages;" \
	" ALTER TABLE postmortems DROP COLUMN ring_events;" \
	" ALTER TABLE postmortems DROP COLUMN map_records;" \
	" ALTER TABLE postmortems DROP COLUMN frames_stored;" \
	" ALTER TABLE postmortems DROP COLUMN frames_dup;" \
	" ALTER TABLE postmortems DROP COLUMN events_stored;"

/* ha_store_add_counts(): two statements of HA_STORE_COUNTS_PER_STMT rows and the rest
 * one by one, twice (keys 0..n-1 once, then n/2..n/2+n-1): each count summed, each
 * time range widened, as ha_store_add_count() does. */
static void test_add_counts(const char *dir)
{
	g_autofree char *path = g_build_filename(dir, "counts.db", NULL);
	g_autoptr(GError) e = NULL;
	HaStore *s = ha_store_open(path, false, &e);
	HaStoreCount rows[2 * HA_STORE_COUNTS_PER_STMT + 7];
	const size_t n = G_N_ELEMENTS(rows);
	int64_t boot = 0;
	bool ok = s != NULL;

	ok = ok && ha_store_begin(s, &e) &&
	     ha_store_exec(s, "INSERT INTO boots(boot_uuid) VALUES(x'0c')", &e);
	if (ok)
		boot = sqlite3_last_insert_rowid(ha_store_db(s));
	for (uint64_t round = 0; ok && round < 2; round++) {
		for (size_t i = 0; i < n; i++)
			rows[i] = (HaStoreCount){ i + round * (n / 2), 1 + round, 100 - round,
						  200 + round };
		ok = ha_store_add_counts(s, boot, rows, n, &e);
	}
	ok = ok && ha_store_commit(s, &e);
	CHECK(ok && count_of(s, "SELECT COUNT(*) FROM stack_counts WHERE boot = ?", boot) ==
		    (int64_t)(n + n / 2) &&
	      count_of(s, "SELECT SUM(count) FROM stack_counts WHERE boot = ?", boot) ==
		    (int64_t)(3 * n) &&
	      count_of(s, "SELECT COUNT(*) FROM stack_counts WHERE boot = ? AND count = 3"
		       " AND ts_min = 99 AND ts_max = 201", boot) == (int64_t)(n - n / 2) &&
	      count_of(s, "SELECT COUNT(*) FROM stack_counts WHERE boot = ? AND count = 1"
		       " AND ts_min = 100 AND ts_max = 200", boot) == (int64_t)(n / 2),
	      "counts of %zu rows added twice, half of them the same keys (%s)", n,
	      e ? e->message : "ok");
	ha_store_free(s);
}

static void test_boot_rows(const char *dir)
{
	g_autofree char *path = g_build_filename(dir, "rows.db", NULL);
	g_autoptr(GError) e = NULL;
	uint64_t ips[3] = { 0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030 };
	int64_t boot[2] = { 0, 0 }, stream = 0;
	HaStore *s = ha_store_open(path, false, &e);
	bool ok = s != NULL, added, conflict;

	CHECK(ok, "open %s (%s)", path, e ? e->message : "ok");
	if (!ok)
		return;
	ok = ha_store_begin(s, &e);
	for (int b = 0; ok && b < 2; b++) {
		g_autofree char *ins = g_strdup_printf("INSERT INTO boots(boot_uuid)"
						       " VALUES(x'0%d')", b + 1);

		ok = ha_store_exec(s, ins, &e);
		boot[b] = sqlite3_last_insert_rowid(ha_store_db(s));
		ok = ok && rows_match(s, boot[b], "a new boot");
		for (uint64_t sid = 1; ok && sid <= 2u + (unsigned)b; sid++)
			ok = ha_store_stream_insert(s, boot[b], sid, &stream, &e);
		for (uint64_t ep = 0; ok && ep < 3; ep++)
			ok = ha_store_put_epoch(s, boot[b], ep % 2, ep * 10, &added, &e);
		for (uint32_t id = 0; ok && id < 5u + (unsigned)b; id++) {
			struct smp_delta_rec rec = { .stack_id = id % 4, .nr = 1 + id % 3,
						     .ips = (const uint8_t *)ips };

			ok = ha_store_stacks_begin(s, &e) &&
			     ha_store_put_stack(s, boot[b], 0, &rec, &conflict, &added, &e) &&
			     ha_store_stacks_end(s, !conflict, &e);
		}
		/* a frame's new stacks taken back whole */
		if (ok) {
			struct smp_delta_rec rec = { .stack_id = 9, .nr = 2,
						     .ips = (const uint8_t *)ips };

			ok = ha_store_stacks_begin(s, &e) &&
			     ha_store_put_stack(s, boot[b], 1, &rec, &conflict, &added, &e) &&
			     added && ha_store_stacks_end(s, false, &e);
		}
		/* full stacks (one twice, one beyond a limit of 2) and count rows (one
		 * key twice, one refused at a limit of 4, key 0 and the refused key
		 * always) */
		for (uint32_t n = 1; ok && n <= 4; n++) {
			int64_t id;

			ok = ha_store_fullstack_id(s, boot[b], ips, n % 3 + 1, 2, &id, &e) &&
			     (id != 0) == (n != 3);
		}
		for (uint64_t key = 0; ok && key < 6; key++) {
			bool refused;

			ok = ha_store_add_count(s, boot[b], key % 5, 1, 10, 20, 4, &refused, &e) &&
			     refused == (key == 4);
		}
		for (uint32_t cpu = 0; ok && cpu < 2; cpu++)
			ok = ha_store_put_gap(s, boot[b], stream, 7, 9, cpu, 0, &e) &&
			     ha_store_put_gap(s, boot[b], stream, 20 + (uint64_t)b, 21, cpu, 0,
					      &e) &&
			     ha_store_put_gap(s, boot[b], stream, 7, 9, cpu, 0, &e);
	}
	ok = ok && ha_store_commit(s, &e);
	CHECK(ok, "two boots stored (%s)", e ? e->message : "ok");
	for (int b = 0; ok && b < 2; b++)
		rows_match(s, boot[b], "typed calls");
	CHECK(count_of(s, "SELECT COUNT(*) FROM fullstacks WHERE boot = ?", boot[0]) == 2 &&
	      count_of(s, "SELECT COUNT(*) FROM stack_counts WHERE boot = ?", boot[0]) == 4,
	      "full stacks and count rows held to their limits");
	/* as schema 5 had it: boot_rows without the full-stack and count columns (and
	 * without schema 7's recovered chunks, replay counts and window lists) */
	ok = ok && ha_store_exec(s, UNDO_SCHEMA_7, &e) &&
	     ha_store_exec(s, "DROP TRIGGER boot_rows_fullstack_add;"
				 " DROP TRIGGER boot_rows_fullstack_del;"
				 " DROP TRIGGER boot_rows_count_add; DROP TRIGGER boot_rows_count_del;"
				 " ALTER TABLE boot_rows DROP COLUMN fullstacks;"
				 " ALTER TABLE boot_rows DROP COLUMN counts;"
				 " PRAGMA user_version = 5", &e);
	ha_store_free(s);
	CHECK(ok, "made a schema 5 store (%s)", e ? e->message : "ok");
	s = ha_store_open(path, false, &e);
	CHECK(s != NULL, "schema 5 migrated (%s)", e ? e->message : "ok");
	for (int b = 0; s && b < 2; b++)
		rows_match(s, boot[b], "migrated from 5");
	if (!s)
		return;
	ok = ok && ha_store_exec(s, UNDO_SCHEMA_7, &e) &&
	     ha_store_exec(s, "DROP TRIGGER boot_rows_new; DROP TRIGGER boot_rows_gone;"
				 " DROP TRIGGER boot_rows_stream_add;"
				 " DROP TRIGGER boot_rows_stream_del;"
				 " DROP TRIGGER boot_rows_epoch_add;"
				 " DROP TRIGGER boot_rows_epoch_del;"
				 " DROP TRIGGER boot_rows_stack_add;"
				 " DROP TRIGGER boot_rows_stack_del; DROP TRIGGER boot_rows_gap_add;"
				 " DROP TRIGGER boot_rows_gap_del;"
				 " DROP TRIGGER boot_rows_fullstack_add;"
				 " DROP TRIGGER boot_rows_fullstack_del;"
				 " DROP TRIGGER boot_rows_count_add; DROP TRIGGER boot_rows_count_del;"
				 " DROP TABLE boot_rows;"
				 " DROP TRIGGER postmortem_gone; DROP TABLE postmortems;"
				 " DROP TABLE kmsg; PRAGMA user_version = 3", &e);
	ha_store_free(s);
	CHECK(ok, "made a schema 3 store (%s)", e ? e->message : "ok");
	s = ha_store_open(path, false, &e);
	CHECK(s != NULL, "schema 3 migrated (%s)", e ? e->message : "ok");
	for (int b = 0; s && b < 2; b++)
		rows_match(s, boot[b], "migrated");
	if (s) {
		struct smp_delta_rec rec = { .stack_id = 11, .nr = 3, .ips = (const uint8_t *)ips };

		ok = ha_store_begin(s, &e) && ha_store_stacks_begin(s, &e) &&
		     ha_store_put_stack(s, boot[1], 2, &rec, &conflict, &added, &e) &&
		     ha_store_stacks_end(s, true, &e) && ha_store_commit(s, &e);
		CHECK(ok, "a stack after the migration (%s)", e ? e->message : "ok");
		rows_match(s, boot[1], "counted after the migration");
	}
	ha_store_free(s);
	for (const char *const *x = (const char *const[]){ "", "-wal", "-shm", NULL }; *x; x++) {
		g_autofree char *f = g_strconcat(path, *x, NULL);

		g_unlink(f);
	}
}

static bool count_chunk(int64_t id, uint32_t cpu, uint64_t raw_bytes, bool fixed,
			void *user)
{
	(*(int *)user)++;
	return true;
}

/*
 * The typed calls of store-export, store-compact, store-fleet and store-clock: a chunk
 * put back by compaction reads back column for column, a row that is not there is
 * said so (found false, NULL, or an error for a chunk compaction must have), and a
 * store error is an error: with a table gone under statements already prepared and
 * cached, a read fails instead of returning no rows.
 */
static void test_typed_reads(const char *dir)
{
	g_autofree char *path = g_build_filename(dir, "typed.db", NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(GBytes) data = NULL;
	int64_t cpu;
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
	g_autoptr(GArray) samples = g_array_new(FALSE, FALSE, sizeof(HaClockSample));
	g_auto(HaStoreExportBoot) hello = { 0 };
	g_auto(HaStoreFleetBoot) fb = { 0 };
	g_auto(HaStoreCompactChunk) c = { 0 };
	HaStoreCompactChunk in = { .cpu = 1, .have_seq = true, .first_seq = 5, .last_seq = 9,
				   .ts_min = 100, .ts_max = 200, .pages = 5, .events = 50,
				   .traced = 25, .raw_bytes = 4096,
				   .data = g_bytes_new_static("zstd", 4) };
	HaStore *s = ha_store_open(path, false, &e);
	bool ok = s != NULL, found = true;
	int n = 0;

	CHECK(ok, "open %s (%s)", path, e ? e->message : "ok");
	if (!ok) {
		g_bytes_unref(in.data);
		return;
	}
	ok = ha_store_begin(s, &e) &&
	     ha_store_exec(s, "INSERT INTO boots(id, boot_uuid, page_size, nr_cpus, flags,"
			   " trace_clock, start_time) VALUES(3, x'00112233445566778899aabbccddeeff',"
			   " 4096, 2, 0, 'mono', 77)", &e) &&
	     ha_store_compact_put(s, 3, 10, &in, &e) &&
	     ha_store_compact_take(s, 10, &c, &e) && ha_store_compact_put(s, 3, 10, &c, &e) &&
	     ha_store_commit(s, &e);
	g_bytes_unref(in.data);
	CHECK(ok && c.cpu == 1 && c.have_seq && c.first_seq == 5 && c.last_seq == 9 &&
	      c.ts_min == 100 && c.ts_max == 200 && c.pages == 5 && c.events == 50 &&
	      c.traced == 25 && c.raw_bytes == 4096 && g_bytes_get_size(c.data) == 4,
	      "a chunk taken and put back keeps its columns (%s)", e ? e->message : "ok");
	g_clear_error(&e);

	ok = ha_store_export_boot(s, 3, &found, &hello, &e);
	CHECK(ok && found && hello.page_size == 4096 && hello.nr_cpus == 2 &&
	      !g_strcmp0(hello.trace_clock, "mono") && !hello.release &&
	      hello.uuid_len == 16 && hello.uuid[15] == 0xff, "export reads the boot row");
	ha_store_export_boot_clear(&hello);
	ok = ha_store_export_boot(s, 4, &found, &hello, &e);
	CHECK(ok && !found && !hello.page_size, "a boot not stored: found false, no error");
	ok = ha_store_fleet_boot(s, 3, &found, &fb, &e);
	CHECK(ok && found && !strcmp(fb.ended, "") && fb.start_us == 77 && fb.first_ts == 100 &&
	      g_bytes_get_size(fb.uuid) == 16 && !g_bytes_get_size(fb.pair_state),
	      "the shipper reads the boot row and its first event time");
	ok = ha_store_export_chunk_ids(s, 3, 1, 150, 150, ids, &e);
	CHECK(ok && ids->len == 1 && g_array_index(ids, int64_t, 0) == 10,
	      "export lists the chunk of the range");
	ok = ha_store_chunk_data(s, 11, &cpu, &data, &e);
	CHECK(ok && !data, "a chunk gone since listed: NULL, no error");
	ok = ha_store_compact_take(s, 11, &c, &e);
	CHECK(!ok && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_NOT_FOUND),
	      "a chunk to merge that is gone is an error: %s", e ? e->message : "none");
	g_clear_error(&e);
	ok = ha_store_compact_chunks(s, 3, 0, count_chunk, &n, &e) &&
	     ha_store_clock_samples(s, 3, samples, &e);
	CHECK(ok && n == 1 && !samples->len, "one chunk listed, no clock samples");

	/* the statements above stay prepared in the store's cache */
	ok = ha_store_exec(s, "DROP TABLE clock_samples; DROP INDEX chunks_boot_ts;"
			   " DROP TABLE chunks", &e);
	CHECK(ok, "tables dropped (%s)", e ? e->message : "ok");
	n = 0;
	ok = ha_store_compact_chunks(s, 3, 0, count_chunk, &n, &e);
	CHECK(!ok && e && !n, "listing a table that is gone fails: %s", e ? e->message : "none");
	g_clear_error(&e);
	ok = ha_store_clock_samples(s, 3, samples, &e);
	CHECK(!ok && e, "reading clock samples of a table gone fails: %s",
	      e ? e->message : "none");
	g_clear_error(&e);
	ok = ha_store_chunk_data(s, 10, &cpu, &data, &e);
	CHECK(!ok && e && !data, "reading a chunk of a table gone fails");
	ha_store_free(s);
	for (const char *const *x = (const char *const[]){ "", "-wal", "-shm", NULL }; *x; x++) {
		g_autofree char *f = g_strconcat(path, *x, NULL);

		g_unlink(f);
	}
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-store-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "d.db", NULL);
	GError *e = NULL;
	HaStore *s;
	sqlite3_stmt *st;
	int v = -1;

	s = ha_store_open(path, false, &e);
	CHECK(s != NULL, "create");
	st = ha_store_stmt(s, "PRAGMA user_version", &e);
	if (st && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	CHECK(v == HA_STORE_SCHEMA, "schema version %d", v);
	st = ha_store_stmt(s, "PRAGMA journal_mode", &e);
	CHECK(st && sqlite3_step(st) == SQLITE_ROW &&
	      !strcmp((const char *)sqlite3_column_text(st, 0), "wal"), "WAL mode");
	CHECK(ha_store_begin(s, &e) && ha_store_exec(s, "INSERT INTO boots(boot_uuid)"
		" VALUES(x'00')", &e) && ha_store_commit(s, &e), "transaction");
	ha_store_free(s);

	s = ha_store_open(path, false, &e);
	CHECK(s != NULL, "reopen migrates nothing");
	ha_store_exec(s, "PRAGMA user_version = 99", NULL);
	ha_store_free(s);
	s = ha_store_open(path, false, &e);
	CHECK(!s && e && strstr(e->message, "newer"), "a newer schema is refused: %s",
	      e ? e->message : "");
	g_clear_error(&e);
	s = ha_store_open(path, true, &e);
	CHECK(!s, "read-only open refuses it too");
	g_clear_error(&e);

	CHECK(ha_store_name_ok("vm-1_a.b"), "good name");
	CHECK(!ha_store_name_ok("../x") && !ha_store_name_ok(".hidden") &&
	      !ha_store_name_ok("") && !ha_store_name_ok("a/b"), "bad names refused");

	test_chunkz();
	test_boot_rows(dir);
	test_add_counts(dir);
	test_typed_reads(dir);

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
