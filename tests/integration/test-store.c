// SPDX-License-Identifier: MIT
/* Unit tests: store creation, schema version, migration refusal, domain names; a
 * boot's row counters (boot_rows) against COUNT(*) of its rows, through the typed
 * calls, a rolled-back frame and the migration of an older store; the chunk packer's
 * spans give back the bytes ha_chunk_add_page() packs. */
#include <glib/gstdio.h>
#include <string.h>

#include "chunk.h"
#include "store-ingest.h"
#include "store.h"
#include "tap.h"

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
