// SPDX-License-Identifier: MIT
/* store-compact.c - chunk rows for compaction (see store-compact.h). */
#include "store-compact.h"
#include "store-int.h"

#include <gio/gio.h>
#include <inttypes.h>

bool ha_store_compact_chunks(HaStore *s, int64_t boot, int64_t from_id,
			     HaStoreChunkSizeFn fn, void *user, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT id, cpu, raw_bytes,"
					 " ts_min IS NULL OR recovered FROM chunks"
					 " WHERE boot = ? AND id >= ? ORDER BY id", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, from_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!fn(sqlite3_column_int64(st, 0), (uint32_t)sqlite3_column_int64(st, 1),
			(uint64_t)sqlite3_column_int64(st, 2), sqlite3_column_int(st, 3), user)) {
			rc = SQLITE_DONE;
			break;
		}
	}
	return ha_store_done(s, st, rc, error, "find small chunks");
}

void ha_store_compact_chunk_clear(HaStoreCompactChunk *c)
{
	g_clear_pointer(&c->data, g_bytes_unref);
}

bool ha_store_compact_take(HaStore *s, int64_t id, HaStoreCompactChunk *ret,
			   GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT cpu, first_seq, last_seq, ts_min, ts_max,"
					 " nr_pages, nr_events, nr_traced, raw_bytes, data"
					 " FROM chunks WHERE id = ?", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
				    "%s: chunk %" PRId64 " to merge is gone", ha_store_path(s), id);
		else
			ha_store_set_error(s, error, "read a small chunk");
		return false;
	}
	*ret = (HaStoreCompactChunk){
		.cpu = (uint32_t)sqlite3_column_int64(st, 0),
		.have_seq = sqlite3_column_type(st, 1) != SQLITE_NULL,
		.first_seq = sqlite3_column_int64(st, 1),
		.last_seq = sqlite3_column_int64(st, 2),
		.ts_min = sqlite3_column_int64(st, 3),
		.ts_max = sqlite3_column_int64(st, 4),
		.pages = sqlite3_column_int64(st, 5),
		.events = sqlite3_column_int64(st, 6),
		.traced = sqlite3_column_int64(st, 7),
		.raw_bytes = sqlite3_column_int64(st, 8),
		.data = g_bytes_new(sqlite3_column_blob(st, 9),
				    (gsize)sqlite3_column_bytes(st, 9)),
	};
	sqlite3_reset(st);
	st = ha_store_stmt(s, "DELETE FROM chunks WHERE id = ?", error);
	if (!st)
		goto fail;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		ha_store_set_error(s, error, "delete a small chunk");
		goto fail;
	}
	return true;
fail:
	ha_store_compact_chunk_clear(ret);
	return false;
}

bool ha_store_compact_put(HaStore *s, int64_t boot, int64_t id,
			  const HaStoreCompactChunk *c, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "INSERT INTO chunks(id, boot, cpu, first_seq,"
					 " last_seq, ts_min, ts_max, nr_pages, nr_events,"
					 " nr_traced, raw_bytes, data)"
					 " VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", error);
	const void *data;
	gsize len;
	int rc;

	if (!st)
		return false;
	data = g_bytes_get_data(c->data, &len);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, boot);
	sqlite3_bind_int64(st, 3, c->cpu);
	if (c->have_seq) {
		sqlite3_bind_int64(st, 4, c->first_seq);
		sqlite3_bind_int64(st, 5, c->last_seq);
	}
	sqlite3_bind_int64(st, 6, c->ts_min);
	sqlite3_bind_int64(st, 7, c->ts_max);
	sqlite3_bind_int64(st, 8, c->pages);
	sqlite3_bind_int64(st, 9, c->events);
	sqlite3_bind_int64(st, 10, c->traced);
	sqlite3_bind_int64(st, 11, c->raw_bytes);
	sqlite3_bind_blob(st, 12, len ? data : "", (int)len, SQLITE_STATIC);
	rc = sqlite3_step(st);
	return ha_store_done(s, st, rc, error, "insert the merged chunk");
}
