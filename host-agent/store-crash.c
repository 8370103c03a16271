// SPDX-License-Identifier: MIT
/* store-crash.c - mark a boot crashed (see store-crash.h). */
#include "store-crash.h"
#include "store-int.h"

bool ha_store_crash_current_boot(HaStore *s, int64_t alive_since_us, int64_t *ret_boot,
				 GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT id FROM boots WHERE ended IS NULL OR"
					 " (ended = 'disconnected' AND end_time >= ?)"
					 " ORDER BY last_time DESC, id DESC LIMIT 1", error);
	int rc;

	*ret_boot = 0;
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, alive_since_us);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ret_boot = sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
	}
	return ha_store_done(s, st, rc, error, "find the current boot");
}

bool ha_store_crash_mark_boot(HaStore *s, int64_t boot, int64_t when_us, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "UPDATE boots SET ended = 'crashed', end_time = ?"
					 " WHERE id = ?", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, when_us);
	sqlite3_bind_int64(st, 2, boot);
	rc = sqlite3_step(st);
	return ha_store_done(s, st, rc, error, "mark crashed");
}
