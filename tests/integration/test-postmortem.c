// SPDX-License-Identifier: MIT
/*
 * test-postmortem: the post-mortem readers on synthetic cores (coregen.h) whose
 * records are known: the ELF core parser, VMCOREINFO, KASLR translation and the page
 * walk, the printk ring walk (wrapped ring, a wrapping block), hostile cores (each
 * must fail or skip, never read outside), and the store rows of a recovery.
 */
#include <elf.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coredump.h"
#include "coregen.h"
#include "kmsg.h"
#include "kvmem.h"
#include "postmortem.h"
#include "store-postmortem.h"
#include "tap.h"
#include "vmcoreinfo.h"
#include "store-int.h"

static HaKmsg *recover(const uint8_t *core, size_t len, GError **e)
{
	g_autoptr(HaCore) c = ha_core_open_mem(core, len, e);

	return c ? ha_postmortem_kmsg(c, NULL, NULL, e) : NULL;
}

/* Every kept record is there, in order, with its text and time. */
static void check_records(unsigned n)
{
	CoregenOpts o = { .n = n };
	size_t len;
	g_autofree uint8_t *core = coregen_build(&o, &len);
	g_autoptr(GError) e = NULL;
	g_autoptr(HaKmsg) k = recover(core, len, &e);
	unsigned kept = coregen_kept(n), bad = 0;

	CHECK(k, "%u records: recovered (%s)", n, e ? e->message : "ok");
	if (!k)
		return;
	CHECK(k->records->len == kept && k->skipped == 0,
	      "%u records: %u recovered, %" G_GUINT64_FORMAT " skipped (want %u, 0)", n,
	      k->records->len, k->skipped, kept);
	for (guint i = 0; i < k->records->len; i++) {
		const HaKmsgRecord *r = &g_array_index(k->records, HaKmsgRecord, i);
		uint64_t seq = n - kept + i;
		gsize tl;
		const char *t = g_bytes_get_data(r->text, &tl);
		const char *want = coregen_text(seq);

		if (r->seq != seq || r->ts_nsec != coregen_ts(seq) || tl != strlen(want) ||
		    memcmp(t, want, tl) || r->caller_id != (0x80000000u | (seq & 1)))
			bad++;
	}
	CHECK(bad == 0, "%u records: every one has its seq, time, caller and text (%u bad)",
	      n, bad);
}

static void check_hostile(void)
{
	CoregenOpts o = { .n = 40 };
	size_t len;
	g_autofree uint8_t *core = coregen_build(&o, &len);
	g_autofree uint8_t *copy = g_memdup2(core, len);
	g_autoptr(GError) e = NULL;
	HaKmsg *k;
	HaCore *c;
	uint64_t v;

	/* the file cut inside its memory: refused at open, not read past the end */
	c = ha_core_open_mem(core, len - 100, &e);
	CHECK(!c && e && strstr(e->message, "truncated"), "truncated core refused: %s",
	      e ? e->message : "opened");
	g_clear_error(&e);
	c = ha_core_open_mem(core, 40, &e);
	CHECK(!c && e, "a core shorter than its header refused: %s", e ? e->message : "");
	g_clear_error(&e);
	/* a program header count far beyond the file */
	copy[56] = 0xfe;
	copy[57] = 0xff;
	c = ha_core_open_mem(copy, len, &e);
	CHECK(!c && e, "65534 program headers in a small file refused: %s",
	      e ? e->message : "");
	g_clear_error(&e);
	memcpy(copy, core, len);
	/* a note whose descriptor size runs past its segment */
	copy[64 + 2 * 56 + 4] = 0xff;
	copy[64 + 2 * 56 + 5] = 0xff;
	c = ha_core_open_mem(copy, len, &e);
	CHECK(!c && e && strstr(e->message, "note"), "an overlong note refused: %s",
	      e ? e->message : "");
	g_clear_error(&e);
	memcpy(copy, core, len);
	/* not an ELF core */
	copy[16] = ET_EXEC;
	c = ha_core_open_mem(copy, len, &e);
	CHECK(!c && e, "an ET_EXEC file refused: %s", e ? e->message : "");
	g_clear_error(&e);
	/* physical reads outside the one PT_LOAD */
	c = ha_core_open_mem(core, len, &e);
	CHECK(c && !ha_core_read_phys(c, COREGEN_RAM - 4, &v, 8) &&
	      ha_core_read_phys(c, COREGEN_RAM - 8, &v, 8) && !ha_core_read_phys(c, ~0ull - 3, &v, 8),
	      "reads past the memory's end fail, the last 8 bytes read");
	ha_core_free(c);

	o = (CoregenOpts){ .n = 40, .no_vmcoreinfo = 1 };
	g_free(copy);
	copy = coregen_build(&o, &len);
	k = recover(copy, len, &e);
	CHECK(!k && e && strstr(e->message, "VMCOREINFO"), "no VMCOREINFO: %s",
	      e ? e->message : "");
	ha_kmsg_free(k);
	g_clear_error(&e);
	g_free(copy);
	o = (CoregenOpts){ .n = 40, .l5 = 1 };
	copy = coregen_build(&o, &len);
	k = recover(copy, len, &e);
	CHECK(!k && e && strstr(e->message, "5-level"), "5-level paging refused: %s",
	      e ? e->message : "");
	ha_kmsg_free(k);
	g_clear_error(&e);
	g_free(copy);
	/* the text ring's page not mapped: every record skipped, none read elsewhere */
	o = (CoregenOpts){ .n = 40, .unmap_data = 1 };
	copy = coregen_build(&o, &len);
	k = recover(copy, len, &e);
	CHECK(k && k->records->len == 0 && k->skipped == coregen_kept(40),
	      "text ring unmapped: 0 records, %u skipped (%u, %" G_GUINT64_FORMAT ")",
	      coregen_kept(40), k ? k->records->len : 0, k ? k->skipped : 0);
	ha_kmsg_free(k);
	g_clear_error(&e);
	g_free(copy);
	o = (CoregenOpts){ .n = 40, .reserved_last = 1 };
	copy = coregen_build(&o, &len);
	k = recover(copy, len, &e);
	CHECK(k && k->records->len == coregen_kept(40) - 1 && k->skipped == 1,
	      "the newest record still reserved: skipped and counted");
	ha_kmsg_free(k);
	g_clear_error(&e);
	g_free(copy);
	o = (CoregenOpts){ .n = 40, .bad_block_id = 1 };
	copy = coregen_build(&o, &len);
	k = recover(copy, len, &e);
	CHECK(k && k->records->len == coregen_kept(40) - 1 && k->skipped == 1,
	      "a block that is another record's: skipped and counted");
	ha_kmsg_free(k);
}

static void check_vmci(void)
{
	static const char t[] = "OSRELEASE=6.1.0\nSYMBOL(prb)=ffffffff8a000000\n"
				"OFFSET(a.b)=12\nNUMBER(phys_base)=-16\nSYMBOL(x)=zz\n"
				"SIZE(s)=08\nKERNELOFFSET=9000000\nSYMBOL(prb)=1\n\0\0garbage";
	g_autoptr(GError) e = NULL;
	g_autoptr(HaVmci) v = ha_vmci_parse(t, sizeof(t) - 1, &e);
	uint64_t u = 0;
	int64_t i = 0;
	g_autofree char *big = g_malloc0(HA_VMCI_MAX_BYTES + 1);

	CHECK(v && ha_vmci_symbol(v, "prb", &u) && u == 0xffffffff8a000000ull,
	      "SYMBOL(prb): the first of two values");
	CHECK(v && ha_vmci_offset(v, "a.b", &u) && u == 12 && ha_vmci_number(v, "phys_base", &i) &&
	      i == -16 && ha_vmci_hex(v, "KERNELOFFSET", &u) && u == 0x9000000,
	      "OFFSET, NUMBER (negative), KERNELOFFSET parse");
	CHECK(v && !ha_vmci_symbol(v, "x", &u) && !ha_vmci_offset(v, "none", &u) &&
	      !ha_vmci_get(v, "garbage"), "a bad value, an absent key, text after a NUL: none");
	CHECK(!ha_vmci_parse(big, HA_VMCI_MAX_BYTES + 1, NULL), "VMCOREINFO over the bound refused");
}

static void check_format(void)
{
	g_autoptr(GString) s = g_string_new(NULL);

	ha_kmsg_format(s, 12345678901ull, "one\ntwo", 7);
	CHECK(!strcmp(s->str, "[   12.345678] one\n[   12.345678] two\n"),
	      "console format, one line per line of the record: %s", s->str);
}

static void check_store(void)
{
	g_autofree char *dir = g_dir_make_tmp("test-pm-XXXXXX", NULL);
	g_autofree char *db = g_build_filename(dir, "t.db", NULL);
	g_autofree char *corep = g_build_filename(dir, "t.core", NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(HaStore) s = ha_store_open(db, false, &e);
	CoregenOpts o = { .n = 30 };
	size_t len;
	g_autofree uint8_t *core = coregen_build(&o, &len);
	sqlite3_stmt *st;
	int64_t n = -1, boot;
	g_autofree char *status = NULL, *message = NULL;

	CHECK(s && ha_store_exec(s, "INSERT INTO boots(id, boot_uuid, release, ended, end_time)"
				 " VALUES(1, x'00', '6.1.0-coregen', 'crashed', 100),"
				 " (2, x'01', '5.0', 'crashed', 50)", &e), "a store with two boots");
	boot = ha_store_pm_crashed_boot(s, 60, &e);
	CHECK(boot == 1, "the crashed boot since the panic event: %" G_GINT64_FORMAT, boot);
	CHECK(g_file_set_contents(corep, (const char *)core, (gssize)len, NULL), "core written");
	CHECK(ha_postmortem_recover(s, 1, corep, HA_PM_SOURCE_QMP, 42, &e),
	      "recovered into boot 1 (%s)",
	      e ? e->message : "ok");
	st = ha_store_stmt(s, "SELECT COUNT(*), (SELECT status FROM postmortems WHERE boot = 1),"
			   " (SELECT message FROM postmortems WHERE boot = 1)"
			   " FROM kmsg WHERE boot = 1 AND recovered = 1", NULL);
	if (sqlite3_step(st) == SQLITE_ROW) {
		n = sqlite3_column_int64(st, 0);
		status = g_strdup((const char *)sqlite3_column_text(st, 1));
		message = g_strdup((const char *)sqlite3_column_text(st, 2));
	}
	sqlite3_reset(st);
	/* the kernel log is all there is: the boot has no stream to replay the ring
	 * buffers and the map into (nothing was streamed), and the report says so */
	CHECK(n == coregen_kept(30) && !g_strcmp0(status, "partial") && message &&
	      strstr(message, "no stream to replay into"),
	      "kmsg rows %" G_GINT64_FORMAT " (want %u), status %s: %s", n, coregen_kept(30),
	      status, message);
	g_clear_error(&e);
	CHECK(!ha_postmortem_recover(s, 2, corep, HA_PM_SOURCE_QMP, 42, &e) && e &&
	      strstr(e->message, "5.0"), "a dump of another kernel refused for boot 2: %s",
	      e ? e->message : "");
	g_clear_pointer(&status, g_free);
	st = ha_store_stmt(s, "SELECT status || ': ' || message FROM postmortems WHERE boot = 2",
			   NULL);
	if (sqlite3_step(st) == SQLITE_ROW)
		status = g_strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_reset(st);
	CHECK(status && g_str_has_prefix(status, "failed: "), "boot 2's row says so: %s", status);
	CHECK(ha_store_exec(s, "DELETE FROM boots WHERE id = 1", &e), "boot 1 deleted");
	st = ha_store_stmt(s, "SELECT (SELECT COUNT(*) FROM kmsg WHERE boot = 1) +"
			   " (SELECT COUNT(*) FROM postmortems WHERE boot = 1)", NULL);
	n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_reset(st);
	CHECK(n == 0, "its recovered rows went with it (%" G_GINT64_FORMAT " left)", n);
	g_clear_pointer(&s, ha_store_free);
	g_unlink(corep);
	g_unlink(db);
	{
		g_autofree char *w = g_strconcat(db, "-wal", NULL), *sh = g_strconcat(db, "-shm", NULL);

		g_unlink(w);
		g_unlink(sh);
	}
	g_rmdir(dir);
}

int main(void)
{
	check_records(0);
	check_records(5);	/* neither ring full */
	check_records(16);	/* the descriptors full */
	check_records(200);	/* both wrapped many times */
	for (unsigned n = 17; n < 60; n++) {	/* every block placement */
		CoregenOpts o = { .n = n };
		size_t len;
		g_autofree uint8_t *core = coregen_build(&o, &len);
		g_autoptr(GError) e = NULL;
		g_autoptr(HaKmsg) k = recover(core, len, &e);

		if (!k || k->records->len != coregen_kept(n) || k->skipped) {
			CHECK(0, "%u records: %s", n, e ? e->message : "wrong count");
			break;
		}
	}
	CHECK(1, "17..59 records: each recovered whole");
	check_hostile();
	check_vmci();
	check_format();
	check_store();
	return tap_done();
}
