// SPDX-License-Identifier: MIT
/* crash.c - mark a domain's current boot crashed (see crash.h). */
#include "crash.h"

#include <inttypes.h>

bool ha_crash_mark(HaStore *store, const char *domain, int64_t when_us,
		   int64_t alive_since_us, const char *why)
{
	g_autoptr(GError) e = NULL;
	sqlite3_stmt *st;
	int64_t boot;
	bool own_txn = !ha_store_in_txn(store);
	int rc;

	/* Inside a connection's open batch the update commits with that batch (before
	 * its ACK), else in a transaction of its own. */
	if (own_txn && !ha_store_begin(store, &e))
		goto fail;
	st = ha_store_stmt(store, "SELECT id FROM boots WHERE ended IS NULL OR"
			   " (ended = 'disconnected' AND end_time >= ?)"
			   " ORDER BY last_time DESC, id DESC LIMIT 1", &e);
	if (!st)
		goto fail;
	sqlite3_bind_int64(st, 1, alive_since_us);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (own_txn)
			ha_store_rollback(store);
		if (rc != SQLITE_DONE)
			goto store_fail;
		g_message("%s: %s, but no boot is streaming (the guest crashed before its"
			  " agent said HELLO, or its boot already ended)", domain, why);
		return false;
	}
	boot = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	st = ha_store_stmt(store, "UPDATE boots SET ended = 'crashed', end_time = ?"
			   " WHERE id = ?", &e);
	if (!st)
		goto fail;
	sqlite3_bind_int64(st, 1, when_us);
	sqlite3_bind_int64(st, 2, boot);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		goto store_fail;
	if (own_txn && !ha_store_commit(store, &e))
		goto fail;
	g_message("%s: %s: boot %" PRId64 " marked crashed", domain, why, boot);
	return true;

store_fail:
	ha_store_set_error(store, &e, "mark crashed");
fail:
	if (own_txn)
		ha_store_rollback(store);
	g_warning("%s: %s, but the boot could not be marked crashed: %s", domain, why,
		  e ? e->message : "?");
	return false;
}
