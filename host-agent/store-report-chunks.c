// SPDX-License-Identifier: MIT
/*
 * store-report-chunks.c - the reports' typed calls on chunks, gap positions and a
 * post-mortem's rows (store-report.h).
 */
#include "store-report.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <string.h>

#include "store-report-int.h"
#include "store-int.h"

/* ---- chunks --------------------------------------------------------------------- */

bool ha_store_chunks_newest(HaStore *s, int64_t boot, int64_t cpu, HaStoreChunkPosFn fn,
			    void *user, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT nr_events, ts_min FROM chunks WHERE boot = ?1"
				   " AND nr_pages > 0 AND (?2 < 0 OR cpu = ?2)"
				   " ORDER BY ts_max DESC, id DESC", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, cpu);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		HaStoreChunkPos c = {
			.nr_events = (uint64_t)sqlite3_column_int64(st, 0),
			.ts_min = (uint64_t)sqlite3_column_int64(st, 1),
			.has_range = sqlite3_column_type(st, 1) != SQLITE_NULL,
		};

		if (!fn(&c, user)) {
			rc = SQLITE_DONE;
			break;
		}
	}
	return ha_store_done(s, st, rc, error, "read the newest chunks");
}

bool ha_store_chunks_range(HaStore *s, int64_t boot, int64_t cpu, int64_t since,
			   int64_t until, GArray *ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT id, ts_min, cpu, first_seq FROM chunks WHERE"
				   " boot = ?1 AND nr_pages > 0 AND (?4 < 0 OR cpu = ?4) AND"
				   " ((ts_max >= ?2 AND ts_min <= ?3) OR ts_max IS NULL)"
				   " ORDER BY ts_min DESC, id DESC", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, since);
	sqlite3_bind_int64(st, 3, until);
	sqlite3_bind_int64(st, 4, cpu);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		HaStoreChunkPos c = {
			.id = sqlite3_column_int64(st, 0),
			.ts_min = (uint64_t)MAX(sqlite3_column_int64(st, 1), 0),
			.has_range = sqlite3_column_type(st, 1) != SQLITE_NULL,
			.cpu = sqlite3_column_int64(st, 2),
			.first_seq = sqlite3_column_int64(st, 3),
		};

		g_array_append_val(ret, c);
	}
	return ha_store_done(s, st, rc, error, "read the chunks of the range");
}

bool ha_store_cpu_chunks(HaStore *s, int64_t boot, uint32_t cpu, GArray *ret,
			 GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT id, nr_pages FROM chunks WHERE boot = ? AND"
				   " cpu = ? AND nr_pages > 0 ORDER BY id", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, cpu);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		HaStoreChunkPos c = {
			.id = sqlite3_column_int64(st, 0),
			.cpu = cpu,
			.nr_pages = (uint64_t)sqlite3_column_int64(st, 1),
		};

		g_array_append_val(ret, c);
	}
	return ha_store_done(s, st, rc, error, "read the CPU's chunks");
}

bool ha_store_chunk_cpus(HaStore *s, int64_t boot, GArray *ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT DISTINCT cpu FROM chunks WHERE boot = ? AND"
				   " nr_pages > 0 AND cpu >= 0 AND cpu < 4096 ORDER BY cpu",
				   error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		guint cpu = (guint)sqlite3_column_int64(st, 0);

		g_array_append_val(ret, cpu);
	}
	return ha_store_done(s, st, rc, error, "read the boot's CPUs");
}

bool ha_store_chunk_data(HaStore *s, int64_t id, int64_t *ret_cpu, GBytes **ret_data,
			 GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT cpu, data FROM chunks WHERE id = ?", error);
	int rc;

	*ret_data = NULL;
	*ret_cpu = -1;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const void *p = sqlite3_column_blob(st, 1);

		*ret_cpu = sqlite3_column_int64(st, 0);
		*ret_data = g_bytes_new(p, p ? (gsize)sqlite3_column_bytes(st, 1) : 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read the chunk");
}

bool ha_store_recovered_chunks(HaStore *s, int64_t boot, HaStoreRecoveredFn fn,
			       void *user, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT cpu, data, ts_min FROM chunks WHERE boot = ?"
				   " AND recovered = 1 AND cpu >= 0 AND cpu < 4096"
				   " ORDER BY cpu, first_seq, id", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn((uint32_t)sqlite3_column_int64(st, 0), sqlite3_column_blob(st, 1),
		   (size_t)sqlite3_column_bytes(st, 1),
		   sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 :
		   MAX(sqlite3_column_int64(st, 2), 0), user);
	return ha_store_done(s, st, rc, error, "read the recovered chunks");
}

bool ha_store_gap_positions(HaStore *s, int64_t boot, HaStoreGapFn fn, void *user,
			    GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT cpu, after_ts FROM gaps WHERE boot = ? AND"
				   " cpu < 4096 ORDER BY cpu, after_ts", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn((uint32_t)sqlite3_column_int64(st, 0),
		   (uint64_t)MAX(sqlite3_column_int64(st, 1), 0), user);
	return ha_store_done(s, st, rc, error, "read gap positions");
}

/* ---- post-mortems --------------------------------------------------------------- */

bool ha_store_pm_newest_boot(HaStore *s, int64_t *ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT MAX(boot) FROM postmortems", error);
	int rc;

	*ret = 0;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "find the newest post-mortem");
}

void ha_store_pm_info_clear(HaStorePmInfo *p)
{
	g_free(p->status);
	g_free(p->source);
	g_free(p->message);
	g_free(p->osrelease);
	memset(p, 0, sizeof(*p));
}

static int64_t col_opt(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

bool ha_store_pm_info(HaStore *s, int64_t boot, HaStorePmInfo *p, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT status, source, message, osrelease, time,"
				   " dump_bytes, dump_ms, recover_ms, kernel_offset,"
				   " kmsg_records, kmsg_skipped, stream, seam_seq,"
				   " arena_frames, ring_pages, ring_events, map_records,"
				   " frames_stored, frames_dup, events_stored FROM postmortems"
				   " WHERE boot = ?", error);
	int rc;

	memset(p, 0, sizeof(*p));
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		p->found = true;
		p->status = ha_store_col_text(st, 0);
		p->source = ha_store_col_text(st, 1);
		p->message = ha_store_col_text(st, 2);
		p->osrelease = ha_store_col_text(st, 3);
		p->time = sqlite3_column_int64(st, 4);
		p->dump_bytes = col_opt(st, 5);
		p->dump_ms = col_opt(st, 6);
		p->recover_ms = col_opt(st, 7);
		p->kernel_offset = col_opt(st, 8);
		p->records = sqlite3_column_int64(st, 9);
		p->skipped = sqlite3_column_int64(st, 10);
		p->stream = col_opt(st, 11);
		p->seam_seq = col_opt(st, 12);
		p->arena_frames = sqlite3_column_int64(st, 13);
		p->ring_pages = sqlite3_column_int64(st, 14);
		p->ring_events = sqlite3_column_int64(st, 15);
		p->map_records = sqlite3_column_int64(st, 16);
		p->frames_stored = sqlite3_column_int64(st, 17);
		p->frames_dup = sqlite3_column_int64(st, 18);
		p->events_stored = sqlite3_column_int64(st, 19);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read the post-mortem");
}

bool ha_store_kmsg_foreach(HaStore *s, int64_t boot, HaStoreKmsgFn fn, void *user,
			   GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT seq, ts_nsec, text FROM kmsg WHERE boot = ?"
				   " ORDER BY seq", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn(sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
		   sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2), user);
	return ha_store_done(s, st, rc, error, "read the kernel log");
}
