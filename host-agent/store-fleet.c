// SPDX-License-Identifier: MIT
/* store-fleet.c - a store as the ClickHouse shipper reads it (see store-fleet.h). */
#include "store-fleet.h"
#include "store-int.h"

#include <string.h>

bool ha_store_fleet_boot_ids(HaStore *s, GArray *ret, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT id FROM boots ORDER BY id", error);
	int rc;

	if (!st)
		return false;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		g_array_append_val(ret, id);
	}
	return ha_store_done(s, st, rc, error, "list the boots");
}

void ha_store_fleet_boot_clear(HaStoreFleetBoot *b)
{
	g_clear_pointer(&b->ended, g_free);
	g_clear_pointer(&b->pair_state, g_bytes_unref);
	g_clear_pointer(&b->uuid, g_bytes_unref);
}

static GBytes *column_bytes(sqlite3_stmt *st, int i)
{
	const void *p = sqlite3_column_blob(st, i);
	int n = sqlite3_column_bytes(st, i);

	return g_bytes_new(p && n > 0 ? p : NULL, p && n > 0 ? (gsize)n : 0);
}

bool ha_store_fleet_boot(HaStore *s, int64_t boot, bool *ret_found, HaStoreFleetBoot *ret,
			 GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s,
		"SELECT COALESCE(ended, ''), (SELECT COUNT(*) FROM stacks WHERE boot = b.id),"
		" (SELECT COUNT(*) FROM epochs WHERE boot = b.id),"
		" (SELECT COUNT(*) FROM texts WHERE boot = b.id),"
		" (SELECT COUNT(*) FROM fullstacks WHERE boot = b.id),"
		" pair_state, boot_uuid, start_time,"
		" (SELECT MIN(ts_min) FROM chunks WHERE boot = b.id AND nr_pages > 0)"
		" FROM boots b WHERE id = ?", error);
	int rc;

	*ret_found = false;
	memset(ret, 0, sizeof(*ret));
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret = (HaStoreFleetBoot){
			.ended = g_strdup((const char *)sqlite3_column_text(st, 0)),
			.stacks = sqlite3_column_int64(st, 1),
			.epochs = sqlite3_column_int64(st, 2),
			.texts = sqlite3_column_int64(st, 3),
			.fullstacks = sqlite3_column_int64(st, 4),
			.pair_state = column_bytes(st, 5),
			.uuid = column_bytes(st, 6),
			.start_us = sqlite3_column_int64(st, 7),
			.first_ts = (uint64_t)sqlite3_column_int64(st, 8),
		};
		*ret_found = true;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ha_store_fleet_boot_clear(ret);
		*ret_found = false;
		ha_store_set_error(s, error, "read the boot");
		return false;
	}
	return true;
}

bool ha_store_fleet_cpus(HaStore *s, int64_t boot, GArray *ret, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT DISTINCT cpu FROM chunks WHERE boot = ? AND"
					 " nr_pages > 0 ORDER BY cpu", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint32_t cpu = (uint32_t)sqlite3_column_int64(st, 0);

		g_array_append_val(ret, cpu);
	}
	return ha_store_done(s, st, rc, error, "list the CPUs");
}

bool ha_store_fleet_cpu_pages(HaStore *s, int64_t boot, uint32_t cpu, uint64_t *ret,
			      GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT COALESCE(SUM(nr_pages), 0) FROM chunks"
					 " WHERE boot = ? AND cpu = ? AND nr_pages > 0", error);

	*ret = 0;
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, cpu);
	return ha_store_one_u64(s, st, ret, error, "count a CPU's pages");
}

bool ha_store_fleet_lost(HaStore *s, int64_t boot, HaStoreLostFn fn, void *user,
			 GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT s.stream_id, l.cpu, l.overrun,"
					 " l.commit_overrun, l.dropped_events, l.read_events"
					 " FROM lost l JOIN streams s ON s.id = l.stream"
					 " WHERE l.boot = ? ORDER BY 1, 2", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t v[4];

		for (int i = 0; i < 4; i++)
			v[i] = (uint64_t)sqlite3_column_int64(st, 2 + i);
		fn((uint64_t)sqlite3_column_int64(st, 0), (uint32_t)sqlite3_column_int64(st, 1),
		   v, user);
	}
	return ha_store_done(s, st, rc, error, "read the LOST counters");
}

bool ha_store_fleet_stats(HaStore *s, int64_t boot, HaStoreStatFn fn, void *user,
			  GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT s.stream_id, t.key, t.value FROM stats t"
					 " JOIN streams s ON s.id = t.stream WHERE t.boot = ?"
					 " ORDER BY 1, 2", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn((uint64_t)sqlite3_column_int64(st, 0), (uint32_t)sqlite3_column_int64(st, 1),
		   sqlite3_column_int64(st, 2), user);
	return ha_store_done(s, st, rc, error, "read the STATS values");
}
