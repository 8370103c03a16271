// SPDX-License-Identifier: MIT
/* Unit tests: store creation, schema version, migration refusal, domain names. */
#include <glib/gstdio.h>
#include <string.h>

#include "store.h"
#include "tap.h"

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-store-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "d.db", NULL);
	GError *e = NULL;
	HaStore *s;
	sqlite3_stmt *st;
	int v = -1;

	s = ha_store_open(path, false, &e);
	CHECK(s != NULL, "create");
	st = ha_store_stmt(s, "PRAGMA user_version", &e);
	if (st && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	CHECK(v == HA_STORE_SCHEMA, "schema version %d", v);
	st = ha_store_stmt(s, "PRAGMA journal_mode", &e);
	CHECK(st && sqlite3_step(st) == SQLITE_ROW &&
	      !strcmp((const char *)sqlite3_column_text(st, 0), "wal"), "WAL mode");
	CHECK(ha_store_begin(s, &e) && ha_store_exec(s, "INSERT INTO boots(boot_uuid)"
		" VALUES(x'00')", &e) && ha_store_commit(s, &e), "transaction");
	ha_store_free(s);

	s = ha_store_open(path, false, &e);
	CHECK(s != NULL, "reopen migrates nothing");
	ha_store_exec(s, "PRAGMA user_version = 99", NULL);
	ha_store_free(s);
	s = ha_store_open(path, false, &e);
	CHECK(!s && e && strstr(e->message, "newer"), "a newer schema is refused: %s",
	      e ? e->message : "");
	g_clear_error(&e);
	s = ha_store_open(path, true, &e);
	CHECK(!s, "read-only open refuses it too");
	g_clear_error(&e);

	CHECK(ha_store_name_ok("vm-1_a.b"), "good name");
	CHECK(!ha_store_name_ok("../x") && !ha_store_name_ok(".hidden") &&
	      !ha_store_name_ok("") && !ha_store_name_ok("a/b"), "bad names refused");

	g_unlink(path);
	{
		g_autofree char *wal = g_strconcat(path, "-wal", NULL);
		g_autofree char *shm = g_strconcat(path, "-shm", NULL);

		g_unlink(wal);
		g_unlink(shm);
	}
	g_rmdir(dir);
	return tap_done();
}
