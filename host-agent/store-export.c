// SPDX-License-Identifier: MIT
/* store-export.c - a stored boot as `export` reads it (see store-export.h). */
#include "store-export.h"
#include "store-int.h"

#include <string.h>

void ha_store_export_boot_clear(HaStoreExportBoot *b)
{
	g_clear_pointer(&b->trace_clock, g_free);
	g_clear_pointer(&b->release, g_free);
}

bool ha_store_export_boot(HaStore *s, int64_t boot, bool *ret_found,
			  HaStoreExportBoot *ret, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT page_size, flags, nr_cpus, trace_clock,"
					 " release, boot_uuid FROM boots WHERE id = ?", error);
	int rc;

	*ret_found = false;
	memset(ret, 0, sizeof(*ret));
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		int n = sqlite3_column_bytes(st, 5);
		const void *uuid = sqlite3_column_blob(st, 5);

		ret->page_size = (uint32_t)sqlite3_column_int64(st, 0);
		ret->flags = (uint32_t)sqlite3_column_int64(st, 1);
		ret->nr_cpus = (uint32_t)sqlite3_column_int64(st, 2);
		ret->trace_clock = g_strdup((const char *)sqlite3_column_text(st, 3));
		ret->release = g_strdup((const char *)sqlite3_column_text(st, 4));
		ret->uuid_len = uuid ? (uint32_t)MIN(n, (int)sizeof(ret->uuid)) : 0;
		if (ret->uuid_len)
			memcpy(ret->uuid, uuid, ret->uuid_len);
		*ret_found = true;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ha_store_export_boot_clear(ret);
		*ret_found = false;
		ha_store_set_error(s, error, "read the boot");
		return false;
	}
	return true;
}

bool ha_store_export_epochs(HaStore *s, int64_t boot, HaStoreEpochFn fn, void *user,
			    GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT epoch, tag, start_ts FROM epochs"
					 " WHERE boot = ? ORDER BY epoch", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn(sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
		   (uint64_t)sqlite3_column_int64(st, 2), user);
	return ha_store_done(s, st, rc, error, "read the epochs");
}

bool ha_store_export_stack(HaStore *s, int64_t boot, int64_t epoch, uint32_t stack_id,
			   GBytes **ret, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT ips FROM stacks WHERE boot = ? AND"
					 " epoch = ? AND stack_id = ?", error);
	int rc;

	*ret = NULL;
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, epoch);
	sqlite3_bind_int64(st, 3, stack_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = g_bytes_new(sqlite3_column_blob(st, 0),
				   (gsize)sqlite3_column_bytes(st, 0));
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read a stack");
}

bool ha_store_export_texts(HaStore *s, int64_t boot, const char *kind, HaStoreTextFn fn,
			   void *user, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT name, text FROM texts WHERE boot = ?"
					 " AND kind = ? ORDER BY seq", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const void *text = sqlite3_column_blob(st, 1);
		size_t len = (size_t)sqlite3_column_bytes(st, 1);

		fn((const char *)sqlite3_column_text(st, 0), text ? text : "", text ? len : 0,
		   user);
	}
	return ha_store_done(s, st, rc, error, "read the texts");
}

bool ha_store_export_kallsyms(HaStore *s, int64_t boot, GString *out, bool *ret_complete,
			      GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT stream, generation FROM texts WHERE"
					 " boot = ? AND kind = 'ksyms' AND last = 1 ORDER BY"
					 " seq DESC LIMIT 1", error);
	int64_t stream = -1, gen = -1, next = 0;
	int rc;

	*ret_complete = true;
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		stream = sqlite3_column_int64(st, 0);
		gen = sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		goto fail;
	if (gen < 0)
		return true;
	st = ha_store_stmt(s, "SELECT chunk, text, last FROM texts WHERE boot = ?"
			   " AND kind = 'ksyms' AND stream = ? AND generation = ?"
			   " ORDER BY chunk", error);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, stream);
	sqlite3_bind_int64(st, 3, gen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_int64(st, 0) != next++)
			*ret_complete = false;
		g_string_append_len(out, sqlite3_column_blob(st, 1), sqlite3_column_bytes(st, 1));
		if (sqlite3_column_int(st, 2)) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		goto fail;
	return true;
fail:
	ha_store_set_error(s, error, "read the kallsyms snapshot");
	return false;
}

bool ha_store_export_chunk_count(HaStore *s, int64_t boot, int64_t since, int64_t until,
				 uint64_t *ret, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT COUNT(*) FROM chunks WHERE boot = ? AND"
					 " nr_pages > 0 AND ts_max >= ? AND ts_min <= ?", error);

	*ret = 0;
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, since);
	sqlite3_bind_int64(st, 3, until);
	return ha_store_one_u64(s, st, ret, error, "count the chunks");
}

bool ha_store_export_chunk_ids(HaStore *s, int64_t boot, uint32_t cpu, int64_t since,
			       int64_t until, GArray *ret, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT id FROM chunks WHERE boot = ? AND"
					 " cpu = ? AND nr_pages > 0 AND ts_max >= ? AND"
					 " ts_min <= ? ORDER BY first_seq, id", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, cpu);
	sqlite3_bind_int64(st, 3, since);
	sqlite3_bind_int64(st, 4, until);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		g_array_append_val(ret, id);
	}
	return ha_store_done(s, st, rc, error, "list the chunks");
}
