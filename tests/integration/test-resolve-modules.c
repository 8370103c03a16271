// SPDX-License-Identifier: MIT
/*
 * Unit tests: module symbols name only their module's core, vmlinux symbols only the
 * kernel's text and init text; a module unloaded while traced keeps naming its core,
 * and never an address of a module loaded after it at the same base.
 *
 * The snapshots go through a store as the guest agent sends them (KSYMS and MODULES
 * of one generation each, the KSYMS text in two chunks), and ha_syms_load() reads
 * them, as every report does. The layout is the one the real guest showed: a test
 * module's frames in its freed .init.text (0xffffffffc01c8021), above its core, which
 * the nearest-symbol rule named "testmod_file+0x2c99 [stackmap_testmod]", its last
 * .bss symbol; the kernel prints it raw (its init is no module's core any more).
 */
#include <glib/gstdio.h>
#include <string.h>

#include "resolve.h"
#include "store-ingest.h"
#include "store.h"
#include "tap.h"
#include "store-int.h"

#define X "ffffffffc01c"	/* stackmap_testmod's first base */

static const char vmlinux[] =
	"ffffffff9a000000 T _stext\n"
	"ffffffff9a000000 T _text\n"
	"ffffffff9a000000 T startup_64\n"
	"ffffffff9a001000 T do_one\n"
	"ffffffff9ae00000 T _etext\n"
	"ffffffff9ae00000 R __start_rodata\n"
	"ffffffff9b000000 T _sinittext\n"
	"ffffffff9b000000 T init_fn_a\n"
	"ffffffff9b000400 t init_fn_b\n"
	"ffffffff9b010000 T _einittext\n"
	"ffffffff9b100000 D some_data\n";

/* Core 0xffffffffc01c0000 + 24576: text, rodata, data, bss; init was at 0x...c8000. */
static const char testmod_syms[] =
	X "0000 t stackmap_testmod_inner\t[stackmap_testmod]\n"
	X "0080 t stackmap_testmod_outer\t[stackmap_testmod]\n"
	X "0200 t stackmap_testmod_mid\t[stackmap_testmod]\n"
	X "1800 t stackmap_testmod_late\t[stackmap_testmod]\n"
	X "2000 r _note_7\t[stackmap_testmod]\n"
	X "3000 d testmod_data\t[stackmap_testmod]\n"
	X "5388 b testmod_file\t[stackmap_testmod]\n";
static const char testmod_line[] =
	"stackmap_testmod 24576 0 - Live 0xffffffffc01c0000 (O)\n";

/* Core 0xffffffffc01d0000 + 8192. */
static const char othermod_syms[] =
	"ffffffffc01d0000 t other_fn\t[othermod]\n"
	"ffffffffc01d0100 T other_fn2\t[othermod]\n"
	"ffffffffc01d1000 b other_bss\t[othermod]\n";
static const char othermod_line[] = "othermod 8192 1 - Live 0xffffffffc01d0000\n";

/* Loaded at stackmap_testmod's base once it is gone: core + 4096. */
static const char newmod_syms[] =
	X "0000 t new_fn\t[newmod]\n"
	X "0100 t new_fn2\t[newmod]\n";
static const char newmod_line[] = "newmod 4096 0 - Live 0xffffffffc01c0000\n";

/* stackmap_testmod loaded again, elsewhere (core + 24576). */
static const char testmod2_syms[] =
	"ffffffffc0200000 t stackmap_testmod_inner\t[stackmap_testmod]\n"
	"ffffffffc0200080 t stackmap_testmod_outer\t[stackmap_testmod]\n";
static const char testmod2_line[] =
	"stackmap_testmod 24576 0 - Live 0xffffffffc0200000 (O)\n";

/* JIT code: kallsyms tags it, /proc/modules does not list it. */
static const char bpf_syms[] =
	"ffffffffc0300000 t bpf_prog_1_f\t[bpf]\n"
	"ffffffffc0300080 t bpf_prog_2_g\t[bpf]\n";

typedef struct {
	HaStore *store;
	int64_t boot;
	uint64_t seq;
} Fix;

static void put(Fix *f, const char *kind, int64_t stream, uint32_t gen, const char *text,
		bool split)
{
	g_autoptr(GError) e = NULL;
	size_t len = strlen(text), half = split ? len / 2 : len;
	bool ok;

	/* KSYMS chunks end on a line, as the guest agent cuts them */
	while (split && half < len && text[half - 1] != '\n')
		half++;
	ok = ha_store_put_text(f->store, f->boot, kind, "", stream, gen, 0, half == len,
			       f->seq++, text, half, &e);
	if (ok && half < len)
		ok = ha_store_put_text(f->store, f->boot, kind, "", stream, gen, 1, true,
				       f->seq++, text + half, len - half, &e);
	CHECK(ok, "put %s generation %u (%s)", kind, gen, e ? e->message : "ok");
}

/* One generation: KSYMS (vmlinux + @syms) and MODULES (@mods; NULL: not sent). */
static void snapshot(Fix *f, int64_t stream, uint32_t gen, const char *syms,
		     const char *mods)
{
	g_autofree char *ks = g_strconcat(vmlinux, syms, NULL);

	if (mods)
		put(f, "modules", stream, gen, mods, false);
	put(f, "ksyms", stream, gen, ks, true);
}

static void expect(const HaSyms *s, uint64_t ip, const char *want, const char *what)
{
	g_autofree char *got = ha_syms_format(s, ip);

	CHECK(!strcmp(got, want), "%s: %#llx is %s, want %s", what, (unsigned long long)ip,
	      got, want);
}

static void expect_name(const HaSyms *s, uint64_t ip, const char *want, const char *what)
{
	g_autofree char *got = ha_syms_format_name(s, ip);

	CHECK(!strcmp(got, want), "%s (%%ps): %s, want %s", what, got, want);
}

static HaSyms *load(Fix *f)
{
	g_autoptr(GError) e = NULL;
	HaSyms *s = ha_syms_load(f->store, f->boot, &e);

	CHECK(s != NULL, "ha_syms_load(): %s", e ? e->message : "ok");
	return s ? s : ha_syms_parse("", 0);
}

/* One module loaded: what the kernel's %pS names and what it prints raw. */
static void test_loaded(Fix *f)
{
	g_autofree char *syms = g_strconcat(testmod_syms, othermod_syms, NULL);
	g_autofree char *mods = g_strconcat(testmod_line, othermod_line, NULL);
	g_autoptr(HaSyms) s = NULL;

	snapshot(f, 1, 0, syms, mods);
	s = load(f);
	expect(s, 0xffffffffc01c0008ull, "stackmap_testmod_inner+0x8/0x80 [stackmap_testmod]",
	       "module function");
	expect_name(s, 0xffffffffc01c0008ull, "stackmap_testmod_inner [stackmap_testmod]",
		    "module function");
	expect(s, 0xffffffffc01c8021ull, "0xffffffffc01c8021",
	       "freed .init.text above the core (the real guest's frame)");
	expect_name(s, 0xffffffffc01c8021ull, "0xffffffffc01c8021", "freed .init.text");
	expect(s, 0xffffffffc01ca000ull, "0xffffffffc01ca000", "between two modules");
	expect(s, 0xffffffffc01c1810ull, "stackmap_testmod_late+0x10 [stackmap_testmod]",
	       "the module's last function: no size (its text's end is unknown)");
	expect(s, 0xffffffffc01c0210ull, "stackmap_testmod_mid+0x10/0x1600 [stackmap_testmod]",
	       "sized up to the next function");
	expect(s, 0xffffffffc01c5390ull, "0xffffffffc01c5390", "the module's .bss: not code");
	expect(s, 0xffffffffc01d0104ull, "other_fn2+0x4 [othermod]", "second module");
	expect(s, 0xffffffffc01d2000ull, "0xffffffffc01d2000", "past the last module's core");
	expect(s, 0xffffffff9a001010ull, "do_one+0x10/0xdff000", "vmlinux text");
	expect(s, 0xffffffff9ae00100ull, "0xffffffff9ae00100", "vmlinux past _etext");
	expect(s, 0xffffffff9b000410ull, "init_fn_b+0x10/0xfc00",
	       "vmlinux .init.text after free_initmem(): the kernel still names it");
	expect(s, 0xffffffff9b010010ull, "0xffffffff9b010010", "vmlinux past _einittext");
	expect(s, 0xffffffff9b100008ull, "0xffffffff9b100008", "vmlinux data");
	expect(s, 0xffffffff99000000ull, "0xffffffff99000000", "below _stext");
}

/* stackmap_testmod unloaded; newmod at its base; stackmap_testmod again elsewhere. */
static void test_unload(Fix *f)
{
	g_autoptr(HaSyms) s1 = NULL, s2 = NULL, s3 = NULL;
	g_autofree char *mods2 = g_strconcat(newmod_line, othermod_line, NULL);
	g_autofree char *syms2 = g_strconcat(newmod_syms, othermod_syms, NULL);
	g_autofree char *mods3 = g_strconcat(testmod2_line, newmod_line, othermod_line, NULL);
	g_autofree char *syms3 = g_strconcat(testmod2_syms, newmod_syms, othermod_syms,
					     NULL);

	snapshot(f, 1, 1, othermod_syms, othermod_line);
	s1 = load(f);
	expect(s1, 0xffffffffc01c0088ull,
	       "stackmap_testmod_outer+0x8/0x180 [stackmap_testmod]",
	       "unloaded: its events still name it");
	expect(s1, 0xffffffffc01c8021ull, "0xffffffffc01c8021", "unloaded: init still raw");
	expect(s1, 0xffffffffc01d0004ull, "other_fn+0x4/0x100 [othermod]", "unloaded: other");

	snapshot(f, 1, 2, syms2, mods2);
	s2 = load(f);
	expect(s2, 0xffffffffc01c0090ull, "new_fn+0x90/0x100 [newmod]",
	       "same base: the newer module's address is its own");
	expect(s2, 0xffffffffc01c0210ull, "new_fn2+0x110 [newmod]",
	       "same base: not the older module's symbol after it");
	expect(s2, 0xffffffffc01c0300ull, "new_fn2+0x200 [newmod]",
	       "same base: in the newer core, past the older module's symbol there");
	expect(s2, 0xffffffffc01c1100ull, "0xffffffffc01c1100",
	       "older core past the newer one: its symbol before lies in the newer core");
	expect(s2, 0xffffffffc01c1810ull, "stackmap_testmod_late+0x10 [stackmap_testmod]",
	       "older core past the newer one: its own function");

	snapshot(f, 1, 3, syms3, mods3);
	s3 = load(f);
	expect(s3, 0xffffffffc0200008ull,
	       "stackmap_testmod_inner+0x8/0x80 [stackmap_testmod]", "reloaded elsewhere");
	expect(s3, 0xffffffffc01c1810ull, "stackmap_testmod_late+0x10 [stackmap_testmod]",
	       "reloaded elsewhere: the first load still names its core");
	expect(s3, 0xffffffffc01c0090ull, "new_fn+0x90/0x100 [newmod]", "newmod still");
}

/*
 * A new stream (the guest agent restarted: seq from 1 again) is newer than every
 * snapshot of the stream before it; a generation without MODULES bounds nothing.
 */
static void test_streams(Fix *f)
{
	g_autoptr(HaSyms) s = NULL;
	g_autofree char *syms = g_strconcat(othermod_syms, bpf_syms, NULL);

	f->seq = 1;
	snapshot(f, 2, 0, syms, NULL);
	s = load(f);
	expect(s, 0xffffffffc0300010ull, "bpf_prog_1_f+0x10/0x80 [bpf]",
	       "no core known: sized up to the next symbol");
	expect(s, 0xffffffffc0300090ull, "bpf_prog_2_g+0x10 [bpf]", "no core known: last");
	expect(s, 0xffffffffc01d0104ull, "other_fn2+0x4 [othermod]",
	       "no MODULES: the core an older generation gave");
	expect(s, 0xffffffffc01c0300ull, "new_fn2+0x200 [newmod]",
	       "older stream's load still names its core");
	expect(s, 0xffffffffc0200008ull,
	       "stackmap_testmod_inner+0x8/0x80 [stackmap_testmod]",
	       "older stream's reload still names its core");
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-resolve-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "d.db", NULL);
	g_autoptr(GError) e = NULL;
	Fix f = { .boot = 1, .seq = 10 };

	f.store = ha_store_open(path, false, &e);
	CHECK(f.store && ha_store_exec(f.store, "INSERT INTO boots(id, boot_uuid)"
				       " VALUES(1, x'00')", &e), "store (%s)",
	      e ? e->message : "ok");
	if (!f.store)
		return tap_done();
	test_loaded(&f);
	test_unload(&f);
	test_streams(&f);
	ha_store_free(f.store);
	for (const char *const *x = (const char *const[]){ "", "-wal", "-shm", NULL }; *x; x++) {
		g_autofree char *p = g_strconcat(path, *x, NULL);

		g_unlink(p);
	}
	g_rmdir(dir);
	return tap_done();
}
