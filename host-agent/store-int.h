/* SPDX-License-Identifier: MIT */
/*
 * store-int.h - SQLite under the store, for the store's own files (store*.c) only.
 *
 * Everything else reaches the database through the typed calls of store.h and the
 * store-*.h headers (ingest, report, export, fleet, compact, clock, crash,
 * post-mortem): no SQL and no sqlite3 outside store*.c. The tests include this header
 * to look at or damage a store behind its calls.
 */
#ifndef HA_STORE_INT_H
#define HA_STORE_INT_H

#include <sqlite3.h>

#include "store.h"

/* The connection, owned by @s. */
sqlite3 *ha_store_db(HaStore *s);

/* Run SQL without results. */
bool ha_store_exec(HaStore *s, const char *sql, GError **error);

/* A statement prepared once and cached by @s (reset before it is returned). NULL with
 * @error set when SQL is wrong. Owned by @s. @sql must be a string literal (or live
 * as long as @s): it is cached by its address. */
sqlite3_stmt *ha_store_stmt(HaStore *s, const char *sql, GError **error);

/* Reset @st; true when its last step @rc was SQLITE_DONE, else false with @error
 * saying @what failed (a read of one row sets @rc so once it has its row). */
bool ha_store_done(HaStore *s, sqlite3_stmt *st, int rc, GError **error, const char *what);
/* Step @st (bound) for its one row and reset it: column 0 in @ret; false with @error
 * saying @what failed when there is no row. */
bool ha_store_one_u64(HaStore *s, sqlite3_stmt *st, uint64_t *ret, GError **error,
		      const char *what);
/* Column @i as a new string, NULL when NULL. */
char *ha_store_col_text(sqlite3_stmt *st, int i);
/* Column @i as new GBytes, NULL when NULL or empty. */
GBytes *ha_store_col_bytes(sqlite3_stmt *st, int i);

#endif /* HA_STORE_INT_H */
