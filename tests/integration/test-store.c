// SPDX-License-Identifier: MIT
/* Unit tests: store creation, schema version, migration refusal, domain names; the
 * chunk packer's spans give back the bytes ha_chunk_add_page() packs. */
#include <glib/gstdio.h>
#include <string.h>

#include "chunk.h"
#include "store.h"
#include "tap.h"

/* Pages of three sizes (an empty one too) spread over one buffer, as two CPUs'
 * pages interleave in a batch: each CPU's chunk inflates to its pages, packed. */
static void test_chunkz(void)
{
	g_autoptr(HaChunkZ) z = ha_chunkz_new(3);
	g_autofree uint8_t *base = g_malloc(3 * 4096);
	HaChunkSpan cpu0[] = { { 0, 4096 }, { 8192, 16 }, { 8208, 0 } };
	HaChunkSpan cpu1[] = { { 4096, 4096 } };

	for (int i = 0; i < 3 * 4096; i++)
		base[i] = (uint8_t)(i * 7 / 13);
	for (int round = 0; round < 2; round++) {
		const HaChunkSpan *sp = round ? cpu1 : cpu0;
		size_t n = round ? G_N_ELEMENTS(cpu1) : G_N_ELEMENTS(cpu0), zlen = 0;
		g_autoptr(GByteArray) packed = g_byte_array_new();
		g_autoptr(GBytes) raw = NULL;
		g_autoptr(GError) e = NULL;
		const void *zd;

		for (size_t i = 0; i < n; i++)
			ha_chunk_add_page(packed, base + sp[i].off, sp[i].len);
		zd = ha_chunkz_compress(z, base, sp, n, &zlen, &e);
		CHECK(zd && ha_chunk_packed_size(sp, n) == packed->len,
		      "cpu %d: compressed %zu of %u packed bytes", round, zlen, packed->len);
		raw = zd ? ha_chunk_decompress(zd, zlen, &e) : NULL;
		CHECK(raw && g_bytes_get_size(raw) == packed->len &&
		      !memcmp(g_bytes_get_data(raw, NULL), packed->data, packed->len),
		      "cpu %d: inflates to the packed pages (%s)", round, e ? e->message : "ok");
	}
}

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

	test_chunkz();

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
