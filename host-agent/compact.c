// SPDX-License-Identifier: MIT
/* compact.c - merge small chunks (see compact.h). */
#include "compact.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

typedef struct {
	GArray *ids;		/* int64_t, consecutive small chunks of one CPU */
	uint64_t raw;
} Run;

static void run_free(gpointer p)
{
	Run *r = p;

	g_array_unref(r->ids);
	g_free(r);
}

/* The ids of the run to merge into @ret_ids (empty: none). */
static bool pick_run(HaStore *s, int64_t boot, int64_t from_id, bool all, GArray *ret_ids,
		     GError **error)
{
	g_autoptr(GHashTable) runs = g_hash_table_new_full(g_direct_hash, g_direct_equal,
							   NULL, run_free);
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT id, cpu, raw_bytes,"
					 " ts_min IS NULL OR recovered FROM chunks"
					 " WHERE boot = ? AND id >= ? ORDER BY id",
					 error);
	Run *first = NULL;
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, from_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		gpointer cpu = GSIZE_TO_POINTER((gsize)sqlite3_column_int64(st, 1));
		uint64_t raw = (uint64_t)sqlite3_column_int64(st, 2);
		Run *r = g_hash_table_lookup(runs, cpu);

		if (!r) {
			r = g_new0(Run, 1);
			r->ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
			g_hash_table_insert(runs, cpu, r);
		}
		if (raw >= HA_COMPACT_SMALL || sqlite3_column_int(st, 3)) {
			g_array_set_size(r->ids, 0);	/* the run ends before this one */
			r->raw = 0;
			continue;
		}
		g_array_append_val(r->ids, id);
		r->raw += raw;
		if (r->ids->len >= 2 && r->raw >= HA_COMPACT_SMALL) {
			first = r;
			break;
		}
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ha_store_set_error(s, error, "find small chunks");
		return false;
	}
	sqlite3_reset(st);
	if (!first && all) {
		GHashTableIter it;
		gpointer v;

		g_hash_table_iter_init(&it, runs);
		while (g_hash_table_iter_next(&it, NULL, &v)) {
			Run *r = v;

			if (r->ids->len >= 2 &&
			    (!first || g_array_index(r->ids, int64_t, 0) <
				       g_array_index(first->ids, int64_t, 0)))
				first = r;
		}
	}
	if (first)
		g_array_append_vals(ret_ids, first->ids->data, first->ids->len);
	return true;
}

typedef struct {
	int64_t cpu;
	bool have_seq;
	int64_t first_seq, last_seq, ts_min, ts_max;
	int64_t pages, events, traced;
} Sum;

/* Merge the chunks @ids (one CPU, ascending) in the open transaction. */
static bool merge(HaStore *s, int64_t boot, const GArray *ids, int level, GError **error)
{
	g_autoptr(GByteArray) packed = g_byte_array_new();
	g_autoptr(GBytes) z = NULL;
	Sum m = { .ts_min = INT64_MAX, .ts_max = INT64_MIN };
	sqlite3_stmt *st;
	const void *zd;
	gsize zlen;

	for (guint i = 0; i < ids->len; i++) {
		int64_t id = g_array_index(ids, int64_t, i);
		g_autoptr(GBytes) raw = NULL;
		size_t rlen;

		st = ha_store_stmt(s, "SELECT cpu, first_seq, last_seq, ts_min, ts_max,"
				   " nr_pages, nr_events, nr_traced, raw_bytes, data FROM chunks"
				   " WHERE id = ?", error);
		if (!st)
			return false;
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) != SQLITE_ROW) {
			ha_store_set_error(s, error, "read a small chunk");
			return false;
		}
		m.cpu = sqlite3_column_int64(st, 0);
		if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
			int64_t f = sqlite3_column_int64(st, 1), l = sqlite3_column_int64(st, 2);

			m.first_seq = m.have_seq ? MIN(m.first_seq, f) : f;
			m.last_seq = m.have_seq ? MAX(m.last_seq, l) : l;
			m.have_seq = true;
		}
		m.ts_min = MIN(m.ts_min, sqlite3_column_int64(st, 3));
		m.ts_max = MAX(m.ts_max, sqlite3_column_int64(st, 4));
		m.pages += sqlite3_column_int64(st, 5);
		m.events += sqlite3_column_int64(st, 6);
		m.traced += sqlite3_column_int64(st, 7);
		raw = ha_chunk_decompress(sqlite3_column_blob(st, 9),
					  (size_t)sqlite3_column_bytes(st, 9), error);
		if (!raw)
			return false;
		g_bytes_get_data(raw, &rlen);
		if (rlen != (size_t)sqlite3_column_int64(st, 8)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "%s: chunk %" PRId64 " inflates to %zu bytes, not %" PRId64,
				    ha_store_path(s), id, rlen,
				    (int64_t)sqlite3_column_int64(st, 8));
			return false;
		}
		g_byte_array_append(packed, g_bytes_get_data(raw, NULL), (guint)rlen);
		sqlite3_reset(st);
		st = ha_store_stmt(s, "DELETE FROM chunks WHERE id = ?", error);
		if (!st)
			return false;
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) != SQLITE_DONE) {
			ha_store_set_error(s, error, "delete a small chunk");
			return false;
		}
	}
	z = ha_chunk_compress(packed, level, error);
	if (!z)
		return false;
	zd = g_bytes_get_data(z, &zlen);
	st = ha_store_stmt(s, "INSERT INTO chunks(id, boot, cpu, first_seq, last_seq, ts_min,"
			   " ts_max, nr_pages, nr_events, nr_traced, raw_bytes, data)"
			   " VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", error);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, g_array_index(ids, int64_t, 0));
	sqlite3_bind_int64(st, 2, boot);
	sqlite3_bind_int64(st, 3, m.cpu);
	if (m.have_seq) {
		sqlite3_bind_int64(st, 4, m.first_seq);
		sqlite3_bind_int64(st, 5, m.last_seq);
	}
	sqlite3_bind_int64(st, 6, m.ts_min);
	sqlite3_bind_int64(st, 7, m.ts_max);
	sqlite3_bind_int64(st, 8, m.pages);
	sqlite3_bind_int64(st, 9, m.events);
	sqlite3_bind_int64(st, 10, m.traced);
	sqlite3_bind_int64(st, 11, packed->len);
	sqlite3_bind_blob(st, 12, zd, (int)zlen, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		ha_store_set_error(s, error, "insert the merged chunk");
		return false;
	}
	sqlite3_reset(st);
	return true;
}

int ha_compact_step(HaStore *s, int64_t boot, int64_t from_id, bool all, int level,
		    GError **error)
{
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));

	g_return_val_if_fail(!ha_store_in_txn(s), -1);
	if (!ha_store_begin(s, error))
		return -1;
	if (!pick_run(s, boot, from_id, all, ids, error) ||
	    (ids->len && !merge(s, boot, ids, level, error))) {
		ha_store_rollback(s);
		return -1;
	}
	if (!ids->len) {
		ha_store_rollback(s);
		return 0;
	}
	return ha_store_commit(s, error) ? 1 : -1;
}
