// SPDX-License-Identifier: MIT
/* store-postmortem.c - a crashed boot's recovered rows (see store-postmortem.h). */
#include "store-postmortem.h"

#include "proto.h"
#include "store-int.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

int64_t ha_store_pm_crashed_boot(HaStore *s, int64_t since_us, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT id FROM boots WHERE ended = 'crashed'"
					 " AND end_time >= ? ORDER BY end_time DESC, id DESC"
					 " LIMIT 1", error);
	int64_t boot = 0;
	int rc;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, since_us);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		boot = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ha_store_set_error(s, error, "find the crashed boot");
		return -1;
	}
	return boot;
}

bool ha_store_pm_same_kernel(HaStore *s, int64_t boot, const char *osrelease,
			     const char *build_id_hex, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT release, lower(hex(build_id)) FROM boots"
					 " WHERE id = ?", error);
	g_autofree char *rel = NULL, *bid = NULL;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW) {
		rel = g_strdup((const char *)sqlite3_column_text(st, 0));
		bid = g_strdup((const char *)sqlite3_column_text(st, 1));
	}
	sqlite3_reset(st);
	if (osrelease && rel && *rel && strcmp(rel, osrelease)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the dump's kernel is %s, boot %" PRId64 "'s is %s", osrelease,
			    boot, rel);
		return false;
	}
	/* VMCOREINFO's BUILD-ID is the full note (20 bytes of sha1, as hex) */
	if (build_id_hex && bid && *bid && g_ascii_strncasecmp(bid, build_id_hex,
								 strlen(bid))) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the dump's kernel build id %s is not boot %" PRId64 "'s (%s)",
			    build_id_hex, boot, bid);
		return false;
	}
	return true;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

static void bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
	if (v >= 0)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

static bool save(HaStore *s, int64_t boot, const HaPmRow *row, const HaKmsg *kmsg,
		 GError **error)
{
	sqlite3_stmt *st;
	int rc;

	st = ha_store_stmt(s, "DELETE FROM kmsg WHERE boot = ? AND recovered = 1", error);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		goto fail;
	st = ha_store_stmt(s, "INSERT OR REPLACE INTO postmortems(boot, time, source, status,"
			   " message, dump_bytes, dump_ms, recover_ms, osrelease, kernel_offset,"
			   " kmsg_records, kmsg_skipped, stream, seam_seq, arena_frames,"
			   " ring_pages, ring_events, map_records, frames_stored, frames_dup,"
			   " events_stored)"
			   " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", error);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, row->time_us);
	bind_text(st, 3, row->source);
	bind_text(st, 4, row->status);
	bind_text(st, 5, row->message);
	sqlite3_bind_int64(st, 6, (int64_t)MIN(row->dump_bytes, (uint64_t)INT64_MAX));
	bind_opt(st, 7, row->dump_ms);
	bind_opt(st, 8, row->recover_ms);
	bind_text(st, 9, row->osrelease);
	bind_opt(st, 10, row->kernel_offset);
	sqlite3_bind_int64(st, 11, kmsg ? (int64_t)kmsg->records->len : 0);
	sqlite3_bind_int64(st, 12, kmsg ? (int64_t)MIN(kmsg->skipped, (uint64_t)INT64_MAX) : 0);
	bind_opt(st, 13, row->stream);
	bind_opt(st, 14, row->seam_seq);
	sqlite3_bind_int64(st, 15, (int64_t)MIN(row->arena_frames, (uint64_t)INT64_MAX));
	sqlite3_bind_int64(st, 16, (int64_t)MIN(row->ring_pages, (uint64_t)INT64_MAX));
	sqlite3_bind_int64(st, 17, (int64_t)MIN(row->ring_events, (uint64_t)INT64_MAX));
	sqlite3_bind_int64(st, 18, (int64_t)MIN(row->map_records, (uint64_t)INT64_MAX));
	sqlite3_bind_int64(st, 19, (int64_t)MIN(row->frames_stored, (uint64_t)INT64_MAX));
	sqlite3_bind_int64(st, 20, (int64_t)MIN(row->frames_dup, (uint64_t)INT64_MAX));
	sqlite3_bind_int64(st, 21, (int64_t)MIN(row->events_stored, (uint64_t)INT64_MAX));
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		goto fail;
	if (!kmsg)
		return true;
	st = ha_store_stmt(s, "INSERT OR IGNORE INTO kmsg(boot, seq, ts_nsec, caller_id, text,"
			   " recovered) VALUES(?,?,?,?,?,1)", error);
	if (!st)
		return false;
	for (guint i = 0; i < kmsg->records->len; i++) {
		const HaKmsgRecord *r = &g_array_index(kmsg->records, HaKmsgRecord, i);
		gsize len;
		const void *t = g_bytes_get_data(r->text, &len);

		sqlite3_bind_int64(st, 1, boot);
		sqlite3_bind_int64(st, 2, (int64_t)MIN(r->seq, (uint64_t)INT64_MAX));
		sqlite3_bind_int64(st, 3, (int64_t)MIN(r->ts_nsec, (uint64_t)INT64_MAX));
		sqlite3_bind_int64(st, 4, r->caller_id);
		sqlite3_bind_blob(st, 5, len ? t : "", (int)len, SQLITE_STATIC);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			goto fail;
	}
	return true;
fail:
	ha_store_set_error(s, error, "store the recovery");
	return false;
}

bool ha_store_pm_save(HaStore *s, int64_t boot, const HaPmRow *row, const HaKmsg *kmsg,
		      GError **error)
{
	/* a savepoint nests in a connection's open batch and is a transaction alone */
	if (!ha_store_exec(s, "SAVEPOINT postmortem", error))
		return false;
	if (!save(s, boot, row, kmsg, error)) {
		ha_store_exec(s, "ROLLBACK TO postmortem", NULL);
		ha_store_exec(s, "RELEASE postmortem", NULL);
		return false;
	}
	return ha_store_exec(s, "RELEASE postmortem", error);
}

bool ha_store_pm_hello(HaStore *s, int64_t boot, GByteArray *out, uint64_t *ret_stream_id,
		       GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT b.boot_uuid, t.stream_id, b.text_addr,"
					 " b.nr_cpus, b.page_size, b.map_bits, b.max_depth,"
					 " t.cur_epoch, b.flags, b.release, b.build_id,"
					 " b.trace_clock FROM boots b JOIN streams t ON t.boot ="
					 " b.id WHERE b.id = ? ORDER BY t.id DESC LIMIT 1", error);
	struct smp_hello h = { 0 };
	uint8_t payload[64 + 3 * 255];
	long n;
	bool ok = false;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) != SQLITE_ROW ||
	    sqlite3_column_bytes(st, 0) != 16) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "boot %" PRId64 " has no stream to replay into", boot);
		goto out;
	}
	memcpy(h.boot_id, sqlite3_column_blob(st, 0), 16);
	h.stream_id = (uint64_t)sqlite3_column_int64(st, 1);
	h.text_addr = (uint64_t)sqlite3_column_int64(st, 2);
	h.nr_cpus = (uint32_t)sqlite3_column_int64(st, 3);
	h.page_size = (uint32_t)sqlite3_column_int64(st, 4);
	h.map_bits = (uint32_t)sqlite3_column_int64(st, 5);
	h.max_depth = (uint32_t)sqlite3_column_int64(st, 6);
	h.map_epoch = sqlite3_column_int64(st, 7) > 0 ? (uint64_t)sqlite3_column_int64(st, 7)
						      : 0;
	h.flags = (uint32_t)sqlite3_column_int64(st, 8);
	h.release = (const char *)sqlite3_column_text(st, 9);
	h.release_len = (uint8_t)MIN(sqlite3_column_bytes(st, 9), 255);
	h.build_id = sqlite3_column_blob(st, 10);
	h.build_id_len = (uint8_t)MIN(sqlite3_column_bytes(st, 10), 255);
	h.trace_clock = (const char *)sqlite3_column_text(st, 11);
	h.clock_len = (uint8_t)MIN(sqlite3_column_bytes(st, 11), 255);
	n = smp_hello_encode(&h, payload, sizeof(payload));
	if (n < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "boot %" PRId64 "'s stored HELLO does not encode: %s", boot,
			    smp_strerror((int)n));
		goto out;
	}
	{
		guint at = out->len;

		g_byte_array_set_size(out, at + SMP_HDR_SIZE + (guint)n);
		smp_frame_encode(out->data + at, SMP_HDR_SIZE + (size_t)n, SMP_HELLO, 0, 0,
				 payload, (size_t)n);
	}
	*ret_stream_id = h.stream_id;
	ok = true;
out:
	sqlite3_reset(st);
	return ok;
}

bool ha_store_pm_put_arena(HaStore *s, int64_t boot, uint64_t stream_id,
			   uint32_t page_size, const uint64_t *addrs, uint32_t nr,
			   GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "INSERT OR REPLACE INTO arenas(boot, stream_id,"
					 " page_size, addrs) VALUES(?,?,?,?)", error);
	g_autofree uint64_t *le = g_new(uint64_t, MAX(nr, 1));
	int rc;

	if (!st)
		return false;
	for (uint32_t i = 0; i < nr; i++)
		le[i] = GUINT64_TO_LE(addrs[i]);
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, (int64_t)stream_id);
	sqlite3_bind_int64(st, 3, page_size);
	sqlite3_bind_blob(st, 4, le, (int)(8 * (size_t)nr), SQLITE_STATIC);
	rc = sqlite3_step(st);
	return ha_store_done(s, st, rc, error, "store the window's pages");
}

bool ha_store_pm_get_arena(HaStore *s, int64_t boot, uint64_t *ret_stream_id,
			   uint32_t *ret_page_size, GArray **ret_addrs, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT stream_id, page_size, addrs FROM arenas"
					 " WHERE boot = ?", error);
	bool found = false;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const uint8_t *b = sqlite3_column_blob(st, 2);
		size_t n = (size_t)sqlite3_column_bytes(st, 2) / 8;

		*ret_stream_id = (uint64_t)sqlite3_column_int64(st, 0);
		*ret_page_size = (uint32_t)sqlite3_column_int64(st, 1);
		*ret_addrs = g_array_sized_new(FALSE, FALSE, sizeof(uint64_t), (guint)n);
		for (size_t i = 0; i < n; i++) {
			uint64_t v;

			memcpy(&v, b + 8 * i, 8);
			v = GUINT64_FROM_LE(v);
			g_array_append_val(*ret_addrs, v);
		}
		found = true;
	}
	sqlite3_reset(st);
	return found;
}

bool ha_store_pm_recovered_chunks(HaStore *s, int64_t boot, HaStorePmChunkFn fn,
				  void *user, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT cpu, data FROM chunks WHERE boot = ? AND"
					 " recovered ORDER BY id", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn((uint32_t)sqlite3_column_int64(st, 0), sqlite3_column_blob(st, 1),
		   (size_t)sqlite3_column_bytes(st, 1), user);
	return ha_store_done(s, st, rc, error, "read the recovered chunks");
}
