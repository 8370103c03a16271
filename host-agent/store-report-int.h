/* SPDX-License-Identifier: MIT */
/* store-report-int.h - what store-report*.c share (not for outside them). */
#ifndef HA_STORE_REPORT_INT_H
#define HA_STORE_REPORT_INT_H

#include "store-int.h"

#include "store-report.h"

/* A cached statement, or return false with @error from the calling function. */
#define RP_STMT(s, sql, error) ({					\
	sqlite3_stmt *__s = ha_store_stmt((s), (sql), (error));		\
	if (!__s)							\
		return false;						\
	__s; })

/* Reset @st; false with @error (@what failed) unless its last step @rc was
 * SQLITE_DONE (a single-row read sets it so once it has its row). */
bool ha_srp_done(HaStore *s, sqlite3_stmt *st, int rc, GError **error, const char *what);
/* Column @i as a new string, NULL when NULL. */
char *ha_srp_col_text(sqlite3_stmt *st, int i);
/* Column @i as new GBytes, NULL when NULL or empty. */
GBytes *ha_srp_col_bytes(sqlite3_stmt *st, int i);
/* Column @i's 8-byte little-endian ips as a new array of uint64_t (g_array_unref). */
GArray *ha_srp_col_ips(sqlite3_stmt *st, int i);

#endif /* HA_STORE_REPORT_INT_H */
