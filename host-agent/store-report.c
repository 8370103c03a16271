// SPDX-License-Identifier: MIT
/* store-report.c - the reports' typed calls: boots, stacks, texts (store-report.h). */
#include "store-report.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <string.h>

#include "proto.h"
#include "store-report-int.h"
#include "store-int.h"

/* ---- boots ---------------------------------------------------------------------- */

bool ha_store_boots_select(HaStore *s, HaStoreBootsBy by, const char *arg, GArray *ids,
			   GError **error)
{
	static const char *const sql[] = {
		[HA_STORE_BOOTS_LATEST] = "SELECT MAX(id) FROM boots HAVING MAX(id) IS NOT NULL",
		[HA_STORE_BOOTS_ALL] = "SELECT id FROM boots ORDER BY id",
		[HA_STORE_BOOTS_ID] = "SELECT id FROM boots WHERE id = CAST(?1 AS INTEGER)",
		[HA_STORE_BOOTS_UUID_PREFIX] = "SELECT id FROM boots WHERE hex(boot_uuid) LIKE"
					       " ?1 || '%' ORDER BY id",
	};
	sqlite3_stmt *st = RP_STMT(s, sql[by], error);
	int rc;

	if (by == HA_STORE_BOOTS_ID || by == HA_STORE_BOOTS_UUID_PREFIX)
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		g_array_append_vals(ids, &(int64_t){ sqlite3_column_int64(st, 0) }, 1);
	return ha_store_done(s, st, rc, error, "select boots");
}

void ha_store_boot_info_clear(HaStoreBootInfo *b)
{
	g_free(b->release);
	g_free(b->ended);
	if (b->build_id)
		g_bytes_unref(b->build_id);
	memset(b, 0, sizeof(*b));
}

bool ha_store_boot_info(HaStore *s, int64_t boot, HaStoreBootInfo *ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT boot_uuid, release, ended, start_time,"
				   " end_time, last_time, text_addr, build_id, page_size, flags"
				   " FROM boots WHERE id = ?", error);
	int rc;

	memset(ret, 0, sizeof(*ret));
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const void *u = sqlite3_column_blob(st, 0);

		ret->found = true;
		if (u && sqlite3_column_bytes(st, 0) == 16) {
			ret->has_uuid = true;
			memcpy(ret->uuid, u, 16);
		}
		ret->release = ha_store_col_text(st, 1);
		ret->ended = ha_store_col_text(st, 2);
		ret->start_us = sqlite3_column_int64(st, 3);
		ret->end_us = sqlite3_column_int64(st, 4);
		ret->last_us = sqlite3_column_int64(st, 5);
		ret->text_addr = (uint64_t)sqlite3_column_int64(st, 6);
		ret->build_id = ha_store_col_bytes(st, 7);
		ret->page_size = (uint32_t)sqlite3_column_int64(st, 8);
		ret->flags = (uint32_t)sqlite3_column_int64(st, 9);
		ret->has_end = sqlite3_column_type(st, 4) != SQLITE_NULL;
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read the boot");
}

bool ha_store_boot_pair_state(HaStore *s, int64_t boot, GBytes **ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT pair_state FROM boots WHERE id = ?", error);
	int rc;

	*ret = NULL;
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = ha_store_col_bytes(st, 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read the pairing state");
}

/* The sum of every column of @sql's rows (@boot its parameter 1), each read as the
 * u64 the guest sent, saturating at UINT64_MAX. */
static bool sum_u64(HaStore *s, const char *sql, int64_t boot, uint64_t *ret,
		    GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, sql, error);
	uint64_t v = 0;
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			uint64_t x = (uint64_t)sqlite3_column_int64(st, i);

			v = x > UINT64_MAX - v ? UINT64_MAX : v + x;
		}
	}
	*ret = v;
	return ha_store_done(s, st, rc, error, "sum the boot's counters");
}

static bool count_rows(HaStore *s, const char *sql, int64_t boot, int64_t *ret,
		       GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, sql, error);
	int rc;

	*ret = 0;
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "count the boot's rows");
}

static uint64_t col_u64(sqlite3_stmt *st, int i)
{
	int64_t v = sqlite3_column_int64(st, i);

	return v > 0 ? (uint64_t)v : 0;
}

/* The map figures of the newest STATS of @boot (HaStoreBootCounts). */
static bool map_counts(HaStore *s, int64_t boot, HaStoreBootCounts *r, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT e.value, n.value FROM stats e JOIN stats n"
				   " ON n.stream = e.stream AND n.key = ?2 WHERE e.boot = ?1"
				   " AND e.key = ?3 ORDER BY e.value DESC, n.value DESC"
				   " LIMIT 1", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, SMP_STAT_MAP_SUCCESSES);
	sqlite3_bind_int64(st, 3, SMP_STAT_MAP_EPOCH);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		r->have_map = true;
		r->map_epoch = col_u64(st, 0);
		r->map_successes = col_u64(st, 1);
		rc = SQLITE_DONE;
	}
	if (!ha_store_done(s, st, rc, error, "read the map's stats"))
		return false;
	if (r->have_map) {
		/* hist.h keys of stack ids: 2 * (gen << 31 | stack_id) + 2;
		 * epoch = gen * 2048 + tag */
		st = RP_STMT(s, "SELECT COALESCE(SUM(count), 0) FROM stack_counts WHERE"
			     " boot = ?1 AND key > 0 AND key % 2 = 0 AND ((key / 2 - 1) >> 31) *"
			     " 2048 + (((key / 2 - 1) >> 20) & 2047) = ?2", error);
		sqlite3_bind_int64(st, 1, boot);
		sqlite3_bind_int64(st, 2, (int64_t)r->map_epoch);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			r->map_stored = col_u64(st, 0);
			rc = SQLITE_DONE;
		}
		if (!ha_store_done(s, st, rc, error, "count the epoch's events"))
			return false;
	}
	st = RP_STMT(s, "SELECT COALESCE(MAX(value), 0) FROM stats WHERE boot = ?1 AND"
		     " key = ?2", error);
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, SMP_STAT_RB_UNREAD);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		r->unread = col_u64(st, 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read the unread events");
}

bool ha_store_boot_counts(HaStore *s, int64_t boot, HaStoreBootCounts *ret,
			  GError **error)
{
	*ret = (HaStoreBootCounts){ 0 };
	return sum_u64(s, "SELECT nr_traced FROM chunks WHERE boot = ?", boot, &ret->traced,
		       error) &&
	       sum_u64(s, "SELECT gap_frames FROM streams WHERE boot = ?", boot,
		       &ret->gap_frames, error) &&
	       sum_u64(s, "SELECT overrun, dropped_events FROM lost WHERE boot = ?", boot,
		       &ret->ring_lost, error) &&
	       sum_u64(s, "SELECT missed_events FROM streams WHERE boot = ?", boot,
		       &ret->missed_events, error) &&
	       sum_u64(s, "SELECT malformed FROM streams WHERE boot = ?", boot,
		       &ret->malformed, error) &&
	       count_rows(s, "SELECT COUNT(*) FROM stacks WHERE boot = ?", boot, &ret->stacks,
			  error) &&
	       count_rows(s, "SELECT COUNT(*) FROM fullstacks WHERE boot = ?", boot,
			  &ret->fullstacks, error) &&
	       count_rows(s, "SELECT COUNT(*) FROM epochs WHERE boot = ?", boot, &ret->epochs,
			  error) &&
	       map_counts(s, boot, ret, error);
}

/* ---- stacks --------------------------------------------------------------------- */

bool ha_store_epoch_at(HaStore *s, int64_t boot, uint32_t tag, uint64_t ts,
		       int64_t *ret_epoch, uint64_t *ret_start, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT epoch, start_ts FROM epochs WHERE boot = ? AND"
				   " tag = ? AND start_ts <= ? ORDER BY epoch DESC LIMIT 1",
				   error);
	int rc;

	*ret_epoch = -1;
	*ret_start = 0;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, tag);
	sqlite3_bind_int64(st, 3, (int64_t)ts);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret_epoch = sqlite3_column_int64(st, 0);
		*ret_start = (uint64_t)sqlite3_column_int64(st, 1);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "find the epoch");
}

bool ha_store_epoch_older(HaStore *s, int64_t boot, uint32_t tag, int64_t epoch,
			  bool *ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT 1 FROM epochs WHERE boot = ? AND tag = ? AND"
				   " epoch < ? LIMIT 1", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, tag);
	sqlite3_bind_int64(st, 3, epoch);
	rc = sqlite3_step(st);
	*ret = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW)
		rc = SQLITE_DONE;
	return ha_store_done(s, st, rc, error, "find an older epoch");
}

bool ha_store_stack_ips(HaStore *s, int64_t boot, int64_t epoch, uint32_t id,
			GArray **ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT ips FROM stacks WHERE boot = ? AND epoch = ? AND"
				   " stack_id = ?", error);
	int rc;

	*ret = NULL;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, epoch);
	sqlite3_bind_int64(st, 3, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = ha_srp_col_ips(st, 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read the stack");
}

bool ha_store_fullstack_ips(HaStore *s, int64_t id, GArray **ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT ips FROM fullstacks WHERE id = ?", error);
	int rc;

	*ret = NULL;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = ha_srp_col_ips(st, 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read the full stack");
}

bool ha_store_epoch_stacks(HaStore *s, int64_t boot, uint32_t tag, uint32_t id,
			   HaStoreEpochStackFn fn, void *user, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT e.epoch, e.start_ts, s.ips, s.ref_count FROM"
				   " epochs e LEFT JOIN stacks s ON s.boot = e.boot AND"
				   " s.epoch = e.epoch AND s.stack_id = ?2 WHERE e.boot = ?1 AND"
				   " e.tag = ?3 ORDER BY e.epoch", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, id);
	sqlite3_bind_int64(st, 3, tag);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		g_autoptr(GArray) ips = sqlite3_column_type(st, 2) == SQLITE_NULL ? NULL :
					ha_srp_col_ips(st, 2);

		fn(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), ips,
		   sqlite3_column_int64(st, 3), user);
	}
	return ha_store_done(s, st, rc, error, "read the id's epochs");
}

bool ha_store_keys_may_merge(HaStore *s, int64_t boot, bool *ret, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT (SELECT COUNT(*) FROM epochs WHERE boot = ?1)"
				   " > 1 OR EXISTS (SELECT 1 FROM fullstacks WHERE boot = ?1)",
				   error);
	int rc;

	*ret = true;
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = sqlite3_column_int(st, 0) != 0;
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "count the boot's epochs");
}

bool ha_store_counts_foreach(HaStore *s, int64_t boot, HaStoreCountFn fn, void *user,
			     GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT key, count, ts_min, ts_max FROM stack_counts"
				   " WHERE boot = ?", error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn((uint64_t)sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
		   (uint64_t)sqlite3_column_int64(st, 2), (uint64_t)sqlite3_column_int64(st, 3),
		   user);
	return ha_store_done(s, st, rc, error, "read the stack counts");
}

/* ---- texts ---------------------------------------------------------------------- */

bool ha_store_format_text(HaStore *s, int64_t boot, const char *name, GBytes **ret,
			  GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT text FROM texts WHERE boot = ? AND"
				   " kind = 'format' AND name = ?", error);
	int rc;

	*ret = NULL;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const void *p = sqlite3_column_blob(st, 0);

		*ret = g_bytes_new(p, p ? (gsize)sqlite3_column_bytes(st, 0) : 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "read the format");
}

bool ha_store_ksyms_snapshots(HaStore *s, int64_t boot, GArray *ret, GError **error)
{
	/* A new stream (the agent restarted) numbers its frames from 1 again: streams
	 * first. */
	sqlite3_stmt *st = RP_STMT(s, "SELECT stream, generation FROM texts WHERE boot = ? AND"
				   " kind = 'ksyms' AND last = 1 ORDER BY stream DESC, seq DESC",
				   error);
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t sg[2] = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1) };

		g_array_append_vals(ret, sg, 1);
	}
	return ha_store_done(s, st, rc, error, "read the kallsyms snapshots");
}

bool ha_store_text_snapshot(HaStore *s, int64_t boot, const char *kind, int64_t stream,
			    int64_t gen, GString *out, bool *ret_complete, GError **error)
{
	sqlite3_stmt *st = RP_STMT(s, "SELECT chunk, text FROM texts WHERE boot = ?1 AND"
				   " kind = ?4 AND stream = ?2 AND generation = ?3 AND chunk <="
				   " (SELECT chunk FROM texts WHERE boot = ?1 AND kind = ?4 AND"
				   " stream = ?2 AND generation = ?3 AND last = 1) ORDER BY chunk",
				   error);
	bool complete = true;
	int64_t next = 0;
	int rc;

	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, stream);
	sqlite3_bind_int64(st, 3, gen);
	sqlite3_bind_text(st, 4, kind, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_int64(st, 0) != next++)
			complete = false;
		g_string_append_len(out, sqlite3_column_blob(st, 1), sqlite3_column_bytes(st, 1));
	}
	*ret_complete = complete && next > 0;
	return ha_store_done(s, st, rc, error, "read a text snapshot");
}

/* ---- what store-report*.c share (store-report-int.h) ----------------------------- */

GArray *ha_srp_col_ips(sqlite3_stmt *st, int i)
{
	const uint8_t *p = sqlite3_column_blob(st, i);
	int bytes = sqlite3_column_bytes(st, i);
	GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(uint64_t), (guint)MAX(bytes, 0) / 8);

	for (int k = 0; p && k + 8 <= bytes; k += 8) {
		uint64_t v;

		memcpy(&v, p + k, 8);
		v = GUINT64_FROM_LE(v);
		g_array_append_val(a, v);
	}
	return a;
}
