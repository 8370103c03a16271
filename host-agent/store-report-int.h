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

/* Column @i's 8-byte little-endian ips as a new array of uint64_t (g_array_unref). */
GArray *ha_srp_col_ips(sqlite3_stmt *st, int i);

#endif /* HA_STORE_REPORT_INT_H */
