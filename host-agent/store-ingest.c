// SPDX-License-Identifier: MIT
/* store-ingest.c - the ingest's typed calls on the store (see store-ingest.h). */
#include "store-ingest.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <string.h>

#include "hist.h"
#include "store-int.h"

/* A cached statement, or return false with @error from the calling function. */
#define STMT(s, sql, error) ({						\
	sqlite3_stmt *__s = ha_store_stmt((s), (sql), (error));		\
	if (!__s)							\
		return false;						\
	__s; })

/* Run @st to its end (or its first row, which is ignored). */
static bool step_done(HaStore *s, sqlite3_stmt *st, GError **error, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		ha_store_set_error(s, error, what);
		return false;
	}
	return true;
}

static int64_t last_id(HaStore *s)
{
	return sqlite3_last_insert_rowid(ha_store_db(s));
}

/* ---- sessions ------------------------------------------------------------------ */

void ha_stored_boot_clear(HaStoredBoot *b)
{
	g_clear_pointer(&b->pair_state, g_bytes_unref);
	memset(b, 0, sizeof(*b));
}

bool ha_store_boot_find(HaStore *s, const uint8_t *uuid, bool *ret_found,
			HaStoredBoot *ret, GError **error)
{
	sqlite3_stmt *st = STMT(s, "SELECT id, pair_state, nr_cpus, page_size, map_bits,"
				" max_depth, flags, text_addr FROM boots WHERE boot_uuid = ?",
				error);
	int rc;

	sqlite3_bind_blob(st, 1, uuid, 16, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*ret_found = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW) {
		const void *p = sqlite3_column_blob(st, 1);
		int n = sqlite3_column_bytes(st, 1);

		*ret = (HaStoredBoot){
			.id = sqlite3_column_int64(st, 0),
			.pair_state = p && n > 0 ? g_bytes_new(p, (gsize)n) : NULL,
			.nr_cpus = (uint32_t)sqlite3_column_int64(st, 2),
			.page_size = (uint32_t)sqlite3_column_int64(st, 3),
			.map_bits = (uint32_t)sqlite3_column_int64(st, 4),
			.max_depth = (uint32_t)sqlite3_column_int64(st, 5),
			.flags = (uint32_t)sqlite3_column_int64(st, 6),
			.text_addr = (uint64_t)sqlite3_column_int64(st, 7),
		};
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ha_store_set_error(s, error, "find boot");
		return false;
	}
	return true;
}

bool ha_store_boot_insert(HaStore *s, const struct smp_hello *h, int64_t now,
			  int64_t *ret_boot, GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT INTO boots(boot_uuid, release, build_id,"
				" trace_clock, text_addr, nr_cpus, page_size, map_bits,"
				" max_depth, flags, start_time, last_time)"
				" VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", error);
	g_autofree char *release = g_strndup(h->release, h->release_len);
	g_autofree char *clock = g_strndup(h->trace_clock, h->clock_len);

	sqlite3_bind_blob(st, 1, h->boot_id, 16, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, release, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, h->build_id, h->build_id_len, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, clock, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)h->text_addr);
	sqlite3_bind_int64(st, 6, h->nr_cpus);
	sqlite3_bind_int64(st, 7, h->page_size);
	sqlite3_bind_int64(st, 8, h->map_bits);
	sqlite3_bind_int64(st, 9, h->max_depth);
	sqlite3_bind_int64(st, 10, h->flags);
	sqlite3_bind_int64(st, 11, now);
	sqlite3_bind_int64(st, 12, now);
	if (!step_done(s, st, error, "insert boot"))
		return false;
	*ret_boot = last_id(s);
	return true;
}

bool ha_store_boot_resume(HaStore *s, int64_t boot, int64_t now, GError **error)
{
	sqlite3_stmt *st = STMT(s, "UPDATE boots SET ended = NULL, end_time = NULL,"
				" last_time = ? WHERE id = ?", error);

	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, boot);
	return step_done(s, st, error, "resume boot");
}

bool ha_store_boots_crash_others(HaStore *s, int64_t boot, GError **error)
{
	sqlite3_stmt *st = STMT(s, "UPDATE boots SET ended = 'crashed', end_time = last_time"
				" WHERE id != ? AND (ended IS NULL OR ended = 'disconnected')",
				error);

	sqlite3_bind_int64(st, 1, boot);
	return step_done(s, st, error, "close older boots");
}

bool ha_store_stream_find(HaStore *s, int64_t boot, uint64_t stream_id, bool *ret_found,
			  int64_t *ret_stream, uint64_t *ret_next_seq, int64_t *ret_epoch,
			  GError **error)
{
	sqlite3_stmt *st = STMT(s, "SELECT id, next_seq, cur_epoch FROM streams WHERE"
				" boot = ? AND stream_id = ?", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, (int64_t)stream_id);
	rc = sqlite3_step(st);
	*ret_found = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW) {
		*ret_stream = sqlite3_column_int64(st, 0);
		*ret_next_seq = (uint64_t)sqlite3_column_int64(st, 1);
		*ret_epoch = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 :
			     sqlite3_column_int64(st, 2);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ha_store_set_error(s, error, "find stream");
		return false;
	}
	return true;
}

bool ha_store_stream_insert(HaStore *s, int64_t boot, uint64_t stream_id,
			    int64_t *ret_stream, GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT INTO streams(boot, stream_id) VALUES(?, ?)", error);

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, (int64_t)stream_id);
	if (!step_done(s, st, error, "insert stream"))
		return false;
	*ret_stream = last_id(s);
	return true;
}

bool ha_store_boot_count(HaStore *s, uint64_t *ret, GError **error)
{
	sqlite3_stmt *st = STMT(s, "SELECT COUNT(*) FROM boots", error);
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		*ret = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW) {
		ha_store_set_error(s, error, "count boots");
		return false;
	}
	return true;
}

bool ha_store_boot_rows(HaStore *s, int64_t boot, HaStoreBootRows *ret, GError **error)
{
	sqlite3_stmt *st = STMT(s, "SELECT streams, epochs, stacks, gaps, fullstacks, counts"
				" FROM boot_rows WHERE boot = ?", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		ret->streams = (uint64_t)sqlite3_column_int64(st, 0);
		ret->epochs = (uint64_t)sqlite3_column_int64(st, 1);
		ret->stacks = (uint64_t)sqlite3_column_int64(st, 2);
		ret->gaps = (uint64_t)sqlite3_column_int64(st, 3);
		ret->fullstacks = (uint64_t)sqlite3_column_int64(st, 4);
		ret->counts = (uint64_t)sqlite3_column_int64(st, 5);
	}
	sqlite3_reset(st);
	if (rc == SQLITE_DONE) {
		/* every boot has its row (a trigger adds it with the boot) */
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: boot %" PRId64
			    " has no boot_rows row", ha_store_path(s), boot);
		return false;
	}
	if (rc != SQLITE_ROW) {
		ha_store_set_error(s, error, "read a boot's rows");
		return false;
	}
	return true;
}

bool ha_store_text_use(HaStore *s, int64_t boot, const char *kind, uint64_t *ret_rows,
		       uint64_t *ret_bytes, GError **error)
{
	sqlite3_stmt *st = STMT(s, "SELECT COUNT(*), COALESCE(SUM(length(text)), 0)"
				" FROM texts WHERE boot = ? AND kind = ?", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret_rows = (uint64_t)sqlite3_column_int64(st, 0);
		*ret_bytes = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW) {
		ha_store_set_error(s, error, "text use");
		return false;
	}
	return true;
}

bool ha_store_formats_foreach(HaStore *s, int64_t boot, HaStoreFormatFn fn, void *user,
			      GError **error)
{
	sqlite3_stmt *st = STMT(s, "SELECT name, text, kind FROM texts WHERE boot = ? AND"
				" kind IN ('format', 'format-refused') ORDER BY seq", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn((const char *)sqlite3_column_text(st, 0), sqlite3_column_blob(st, 1),
		   (size_t)sqlite3_column_bytes(st, 1),
		   !g_strcmp0((const char *)sqlite3_column_text(st, 2), "format-refused"),
		   user);
	return ha_store_done(s, st, rc, error, "read stored formats");
}

bool ha_store_boot_clean(HaStore *s, int64_t boot, int64_t now, GError **error)
{
	sqlite3_stmt *st = STMT(s, "UPDATE boots SET ended = 'clean', end_time = ?"
				" WHERE id = ?", error);

	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, boot);
	return step_done(s, st, error, "bye");
}

bool ha_store_boot_disconnected(HaStore *s, int64_t boot, int64_t now, GError **error)
{
	sqlite3_stmt *st = STMT(s, "UPDATE boots SET ended = 'disconnected', end_time = ?"
				" WHERE id = ? AND ended IS NULL", error);

	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, boot);
	return step_done(s, st, error, "mark disconnected");
}

/* ---- frames -------------------------------------------------------------------- */

bool ha_store_put_text(HaStore *s, int64_t boot, const char *kind, const char *name,
		       int64_t stream, uint32_t gen, uint32_t chunk, bool last, uint64_t seq,
		       const void *text, size_t len, GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT OR REPLACE INTO texts(boot, kind, name, stream,"
				" generation, chunk, last, seq, text) VALUES(?,?,?,?,?,?,?,?,?)",
				error);

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, stream);
	sqlite3_bind_int64(st, 5, gen);
	sqlite3_bind_int64(st, 6, chunk);
	sqlite3_bind_int(st, 7, last);
	sqlite3_bind_int64(st, 8, (int64_t)seq);
	sqlite3_bind_blob(st, 9, text, (int)len, SQLITE_STATIC);
	return step_done(s, st, error, "insert text");
}

bool ha_store_stacks_begin(HaStore *s, GError **error)
{
	return ha_store_exec(s, "SAVEPOINT stacks", error);
}

bool ha_store_put_stack(HaStore *s, int64_t boot, int64_t epoch,
			const struct smp_delta_rec *rec, bool *ret_conflict, bool *ret_added,
			GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT OR IGNORE INTO stacks(boot, epoch, stack_id,"
				" nr, ref_count, ips) VALUES(?,?,?,?,?,?)", error);
	size_t len = (size_t)rec->nr * 8;
	int rc;

	*ret_conflict = false;
	*ret_added = false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, epoch);
	sqlite3_bind_int64(st, 3, rec->stack_id);
	sqlite3_bind_int64(st, 4, rec->nr);
	sqlite3_bind_int64(st, 5, rec->ref_count);
	sqlite3_bind_blob(st, 6, rec->ips, (int)len, SQLITE_STATIC);
	if (!step_done(s, st, error, "insert stack"))
		return false;
	if (sqlite3_changes(ha_store_db(s)) > 0) {
		*ret_added = true;
		return true;
	}
	/* An id already stored for this epoch: normal when the stack is the same (the
	 * guest re-reads the whole map after a gap), a conflict otherwise. */
	st = STMT(s, "SELECT ips FROM stacks WHERE boot = ? AND epoch = ? AND stack_id = ?",
		  error);
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, epoch);
	sqlite3_bind_int64(st, 3, rec->stack_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret_conflict = (size_t)sqlite3_column_bytes(st, 0) != len ||
				(len && memcmp(sqlite3_column_blob(st, 0), rec->ips, len));
	sqlite3_reset(st);
	if (rc != SQLITE_ROW) {
		/* INSERT OR IGNORE ignored it, so the row is there: a store failure */
		ha_store_set_error(s, error, "read stored stack");
		return false;
	}
	return true;
}

bool ha_store_stacks_end(HaStore *s, bool keep, GError **error)
{
	return ha_store_exec(s, keep ? "RELEASE stacks" : "ROLLBACK TO stacks; RELEASE stacks",
			     error);
}

bool ha_store_put_epoch(HaStore *s, int64_t boot, uint64_t epoch, uint64_t start_ts,
			bool *ret_added, GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT OR IGNORE INTO epochs(boot, epoch, tag, start_ts)"
				" VALUES(?,?,?,?)", error);

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, (int64_t)epoch);
	sqlite3_bind_int64(st, 3, smp_epoch_tag(epoch));
	sqlite3_bind_int64(st, 4, (int64_t)start_ts);
	if (!step_done(s, st, error, "insert epoch"))
		return false;
	*ret_added = sqlite3_changes(ha_store_db(s)) > 0;
	return true;
}

bool ha_store_put_lost(HaStore *s, int64_t boot, int64_t stream,
		       const struct smp_lost_cpu *lc, GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT OR REPLACE INTO lost(boot, stream, cpu, overrun,"
				" commit_overrun, dropped_events, read_events)"
				" VALUES(?,?,?,?,?,?,?)", error);

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, stream);
	sqlite3_bind_int64(st, 3, lc->cpu);
	sqlite3_bind_int64(st, 4, (int64_t)lc->overrun);
	sqlite3_bind_int64(st, 5, (int64_t)lc->commit_overrun);
	sqlite3_bind_int64(st, 6, (int64_t)lc->dropped_events);
	sqlite3_bind_int64(st, 7, (int64_t)lc->read_events);
	return step_done(s, st, error, "insert lost");
}

bool ha_store_stream_dropped(HaStore *s, int64_t stream, uint64_t frames, uint64_t bytes,
			     GError **error)
{
	sqlite3_stmt *st = STMT(s, "UPDATE streams SET dropped_frames = ?, dropped_bytes = ?"
				" WHERE id = ?", error);

	sqlite3_bind_int64(st, 1, (int64_t)frames);
	sqlite3_bind_int64(st, 2, (int64_t)bytes);
	sqlite3_bind_int64(st, 3, stream);
	return step_done(s, st, error, "update dropped");
}

bool ha_store_put_stat(HaStore *s, int64_t boot, int64_t stream, uint32_t key,
		       uint64_t value, GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT OR REPLACE INTO stats(boot, stream, key, value)"
				" VALUES(?,?,?,?)", error);

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, stream);
	sqlite3_bind_int64(st, 3, key);
	sqlite3_bind_int64(st, 4, (int64_t)value);
	return step_done(s, st, error, "insert stat");
}

bool ha_store_cpu_newest(HaStore *s, int64_t boot, uint32_t nr_cpus, int64_t *after,
			 GError **error)
{
	sqlite3_stmt *st = STMT(s, "SELECT cpu, MAX(ts_max) FROM chunks WHERE boot = ? AND"
				" ts_max IS NOT NULL GROUP BY cpu", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t cpu = sqlite3_column_int64(st, 0);

		if (cpu >= 0 && cpu < nr_cpus)
			after[cpu] = MAX(after[cpu], sqlite3_column_int64(st, 1));
	}
	return ha_store_done(s, st, rc, error, "gap positions");
}

bool ha_store_put_gap(HaStore *s, int64_t boot, int64_t stream, uint64_t seq_lo,
		      uint64_t seq_hi, uint32_t cpu, int64_t after_ts, GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT OR IGNORE INTO gaps(boot, stream, seq_lo, seq_hi,"
				" cpu, after_ts) VALUES(?,?,?,?,?,?)", error);

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, stream);
	sqlite3_bind_int64(st, 3, (int64_t)seq_lo);
	sqlite3_bind_int64(st, 4, (int64_t)seq_hi);
	sqlite3_bind_int64(st, 5, cpu);
	sqlite3_bind_int64(st, 6, after_ts);
	return step_done(s, st, error, "insert gap");
}

/* ---- batches ------------------------------------------------------------------- */

bool ha_store_fullstack_id(HaStore *s, int64_t boot, const uint64_t *ips, uint32_t nr,
			   uint64_t max_rows, int64_t *ret_id, GError **error)
{
	g_autofree uint64_t *le = g_new(uint64_t, nr ? nr : 1);
	sqlite3_stmt *st;
	int rc;

	for (uint32_t i = 0; i < nr; i++)
		le[i] = GUINT64_TO_LE(ips[i]);
	/* a new row only below the boot's limit (boot_rows, kept by a trigger) */
	st = STMT(s, "INSERT OR IGNORE INTO fullstacks(boot, ips) SELECT ?1, ?2"
		  " WHERE (SELECT fullstacks FROM boot_rows WHERE boot = ?1) < ?3", error);
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_blob(st, 2, le, (int)nr * 8, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)MIN(max_rows, (uint64_t)INT64_MAX));
	if (!step_done(s, st, error, "insert full stack"))
		return false;
	st = STMT(s, "SELECT id FROM fullstacks WHERE boot = ? AND ips = ?", error);
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_blob(st, 2, le, (int)nr * 8, SQLITE_STATIC);
	rc = sqlite3_step(st);
	*ret_id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ha_store_set_error(s, error, "find full stack");
		return false;
	}
	return true;
}

#define COUNTS_UPSERT	" ON CONFLICT(boot, key) DO UPDATE SET"			\
			" count = count + excluded.count,"			\
			" ts_min = MIN(ts_min, excluded.ts_min),"		\
			" ts_max = MAX(ts_max, excluded.ts_max)"

bool ha_store_add_count(HaStore *s, int64_t boot, uint64_t key, uint64_t count,
			uint64_t ts_min, uint64_t ts_max, uint64_t max_rows, bool *ret_refused,
			GError **error)
{
	sqlite3_stmt *st;

	if (max_rows == UINT64_MAX) {
		/* the caller knows every new key fits (store-ingest.h): no guard */
		st = STMT(s, "INSERT INTO stack_counts(boot, key, count, ts_min, ts_max)"
			  " VALUES(?1, ?2, ?3, ?4, ?5)" COUNTS_UPSERT, error);
	} else {
		/* a new key only below the boot's limit (boot_rows, kept by a trigger),
		 * but keys 0 (no stack) and HA_HIST_KEY_REFUSED always; the existing
		 * key's lookup comes last, so that below the limit (every commit but at
		 * the limit) it is never made: OR stops at its first true term */
		st = STMT(s, "INSERT INTO stack_counts(boot, key, count, ts_min, ts_max)"
			  " SELECT ?1, ?2, ?3, ?4, ?5 WHERE ?2 <= ?6"
			  " OR (SELECT counts FROM boot_rows WHERE boot = ?1) < ?7"
			  " OR EXISTS(SELECT 1 FROM stack_counts WHERE boot = ?1 AND key = ?2)"
			  " ON CONFLICT(boot, key) DO UPDATE SET"
			  " count = count + excluded.count,"
			  " ts_min = MIN(ts_min, excluded.ts_min),"
			  " ts_max = MAX(ts_max, excluded.ts_max)", error);
	}
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, (int64_t)key);
	sqlite3_bind_int64(st, 3, (int64_t)count);
	sqlite3_bind_int64(st, 4, (int64_t)ts_min);
	sqlite3_bind_int64(st, 5, (int64_t)ts_max);
	if (max_rows != UINT64_MAX) {
		sqlite3_bind_int64(st, 6, (int64_t)HA_HIST_KEY_REFUSED);
		sqlite3_bind_int64(st, 7, (int64_t)MIN(max_rows, (uint64_t)INT64_MAX));
	}
	if (!step_done(s, st, error, "count stacks"))
		return false;
	*ret_refused = sqlite3_changes(ha_store_db(s)) == 0;
	return true;
}

/* The text of the statement of HA_STORE_COUNTS_PER_STMT rows, made once: the store's
 * statement cache keeps it by its text. */
static const char *counts_sql(void)
{
	static gsize once;
	static char *sql;

	if (g_once_init_enter(&once)) {
		GString *q = g_string_new("INSERT INTO stack_counts(boot, key, count, ts_min,"
					  " ts_max) VALUES");

		for (int i = 0; i < HA_STORE_COUNTS_PER_STMT; i++)
			g_string_append_printf(q, "%s(?1, ?%d, ?%d, ?%d, ?%d)", i ? "," : "",
					       2 + 4 * i, 3 + 4 * i, 4 + 4 * i, 5 + 4 * i);
		g_string_append(q, COUNTS_UPSERT);
		sql = g_string_free(q, FALSE);
		g_once_init_leave(&once, 1);
	}
	return sql;
}

bool ha_store_add_counts(HaStore *s, int64_t boot, const HaStoreCount *rows, size_t n,
			 GError **error)
{
	size_t i = 0;

	for (; n - i >= HA_STORE_COUNTS_PER_STMT; i += HA_STORE_COUNTS_PER_STMT) {
		sqlite3_stmt *st = STMT(s, counts_sql(), error);

		sqlite3_bind_int64(st, 1, boot);
		for (int j = 0; j < HA_STORE_COUNTS_PER_STMT; j++) {
			const HaStoreCount *r = &rows[i + (size_t)j];

			sqlite3_bind_int64(st, 2 + 4 * j, (int64_t)r->key);
			sqlite3_bind_int64(st, 3 + 4 * j, (int64_t)r->count);
			sqlite3_bind_int64(st, 4 + 4 * j, (int64_t)r->ts_min);
			sqlite3_bind_int64(st, 5 + 4 * j, (int64_t)r->ts_max);
		}
		if (!step_done(s, st, error, "count stacks"))
			return false;
	}
	for (; i < n; i++) {
		bool refused;

		if (!ha_store_add_count(s, boot, rows[i].key, rows[i].count, rows[i].ts_min,
					rows[i].ts_max, UINT64_MAX, &refused, error))
			return false;
	}
	return true;
}

bool ha_store_put_chunk(HaStore *s, int64_t boot, const HaStoreChunk *ch,
			int64_t *ret_id, GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT INTO chunks(boot, cpu, first_seq, last_seq, ts_min,"
				" ts_max, nr_pages, nr_events, nr_traced, raw_bytes, data,"
				" recovered) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", error);

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, ch->cpu);
	if (ch->pages) {
		sqlite3_bind_int64(st, 3, (int64_t)ch->first_seq);
		sqlite3_bind_int64(st, 4, (int64_t)ch->last_seq);
	}
	if (ch->ts_min != UINT64_MAX) {
		sqlite3_bind_int64(st, 5, (int64_t)ch->ts_min);
		sqlite3_bind_int64(st, 6, (int64_t)ch->ts_max);
	}
	sqlite3_bind_int64(st, 7, ch->pages);
	sqlite3_bind_int64(st, 8, ch->events);
	sqlite3_bind_int64(st, 9, (int64_t)ch->traced);
	sqlite3_bind_int64(st, 10, (int64_t)ch->raw_bytes);
	sqlite3_bind_blob(st, 11, ch->data, (int)ch->len, SQLITE_STATIC);
	sqlite3_bind_int(st, 12, ch->recovered);
	if (!step_done(s, st, error, "insert chunk"))
		return false;
	*ret_id = last_id(s);
	return true;
}

bool ha_store_stream_update(HaStore *s, int64_t stream, const HaStreamDelta *d,
			    GError **error)
{
	sqlite3_stmt *st = STMT(s, "UPDATE streams SET next_seq = ?,"
				" gap_frames = gap_frames + ?, dup_frames = dup_frames + ?,"
				" malformed = malformed + ?, bad_pages = bad_pages + ?,"
				" orphan_stacks = orphan_stacks + ?, cur_epoch = ?,"
				" missed_events = missed_events + ?,"
				" missed_uncounted = missed_uncounted + ? WHERE id = ?", error);

	sqlite3_bind_int64(st, 1, (int64_t)d->next_seq);
	sqlite3_bind_int64(st, 2, (int64_t)d->gap_frames);
	sqlite3_bind_int64(st, 3, (int64_t)d->dup_frames);
	sqlite3_bind_int64(st, 4, (int64_t)d->malformed);
	sqlite3_bind_int64(st, 5, (int64_t)d->bad_pages);
	sqlite3_bind_int64(st, 6, (int64_t)d->orphan_stacks);
	if (d->cur_epoch >= 0)
		sqlite3_bind_int64(st, 7, d->cur_epoch);
	sqlite3_bind_int64(st, 8, (int64_t)d->missed_events);
	sqlite3_bind_int64(st, 9, (int64_t)d->missed_uncounted);
	sqlite3_bind_int64(st, 10, stream);
	return step_done(s, st, error, "update stream");
}

bool ha_store_boot_update(HaStore *s, int64_t boot, int64_t now, GBytes *pair_state,
			  GError **error)
{
	sqlite3_stmt *st = STMT(s, "UPDATE boots SET last_time = ?, pair_state = ?"
				" WHERE id = ?", error);
	gsize n = 0;
	const void *p = pair_state ? g_bytes_get_data(pair_state, &n) : NULL;

	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_blob(st, 2, p, (int)n, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, boot);
	return step_done(s, st, error, "update boot");
}

bool ha_store_put_clock_sample(HaStore *s, int64_t boot, const HaClockSample *cs,
			       GError **error)
{
	sqlite3_stmt *st = STMT(s, "INSERT OR REPLACE INTO clock_samples(boot, guest_ts, cpu,"
				" mono_lo, mono_hi, real_lo, real_hi, boot_off, tai_off)"
				" VALUES(?,?,?,?,?,?,?,?,?)", error);

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, (int64_t)cs->guest_ts);
	sqlite3_bind_int64(st, 3, cs->cpu);
	sqlite3_bind_int64(st, 4, cs->mono_lo);
	sqlite3_bind_int64(st, 5, cs->mono_hi);
	sqlite3_bind_int64(st, 6, cs->real_lo);
	sqlite3_bind_int64(st, 7, cs->real_hi);
	sqlite3_bind_int64(st, 8, cs->boot_off);
	sqlite3_bind_int64(st, 9, cs->tai_off);
	return step_done(s, st, error, "insert clock sample");
}

static bool pragma_int(HaStore *s, sqlite3_stmt *st, const char *what, uint64_t *ret,
		       GError **error)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		*ret = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW) {
		ha_store_set_error(s, error, what);
		return false;
	}
	return true;
}

bool ha_store_used_bytes(HaStore *s, uint64_t *ret_bytes, GError **error)
{
	uint64_t pages, psize;

	if (!pragma_int(s, STMT(s, "PRAGMA page_count", error), "page_count", &pages, error) ||
	    !pragma_int(s, STMT(s, "PRAGMA page_size", error), "page_size", &psize, error))
		return false;
	*ret_bytes = pages * psize;
	return true;
}
