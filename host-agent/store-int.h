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

#endif /* HA_STORE_INT_H */
