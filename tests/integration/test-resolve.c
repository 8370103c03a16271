// SPDX-License-Identifier: MIT
/* Unit tests: kallsyms resolution and chunk packing. */
#include <string.h>

#include "chunk.h"
#include "resolve-dwarf.h"
#include "resolve.h"
#include "tap.h"

static const char ksyms[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000100 T first_fn\n"
	"ffffffff81000200 t second_fn\n"
	"ffffffff81000300 D some_data\n"
	"garbage line\n"
	"0000000000000000 T hidden_by_kptr_restrict\n"
	"ffffffffc0000000 t mod_fn\t[mymod]\n"
	"ffffffffc0000040 t mod_fn2\t[mymod]\n";

static void test_syms(void)
{
	HaSyms *s = ha_syms_parse(ksyms, sizeof(ksyms) - 1);
	char *f;

	CHECK(ha_syms_count(s) == 6, "6 symbols (%u)", ha_syms_count(s));
	f = ha_syms_format(s, 0xffffffff81000123ull);
	CHECK(!strcmp(f, "first_fn+0x23/0x100"), "%s", f);
	g_free(f);
	/* a return address is code: a data symbol (KALLSYMS_ALL) does not name it */
	f = ha_syms_format(s, 0xffffffff81000310ull);
	CHECK(!strcmp(f, "0xffffffff81000310"), "no data symbol for code: %s", f);
	g_free(f);
	f = ha_syms_format(s, 0xffffffff810002f0ull);
	CHECK(!strcmp(f, "second_fn+0xf0/0x100"), "sized up to a data symbol: %s", f);
	g_free(f);
	f = ha_syms_format(s, 0xffffffffc0000010ull);
	CHECK(!strcmp(f, "mod_fn+0x10/0x40 [mymod]"), "%s", f);
	g_free(f);
	f = ha_syms_format(s, 0xffffffff80000000ull);
	CHECK(!strcmp(f, "0xffffffff80000000"), "below all symbols: %s", f);
	g_free(f);
	f = ha_syms_format(s, 0xffffffffc0000040ull + HA_SYM_MAX_SIZE);
	CHECK(!strcmp(f, "0xffffffffc0100040"), "far past the last symbol: %s", f);
	g_free(f);
	ha_syms_free(s);

	/* No symbol at all (a boot whose kallsyms snapshot is incomplete or missing):
	 * no undefined behaviour (qsort(NULL, 0, ...) under UBSan), addresses in hex. */
	s = ha_syms_parse("", 0);
	CHECK(ha_syms_count(s) == 0, "empty snapshot: no symbols");
	f = ha_syms_format(s, 0xffffffff81000123ull);
	CHECK(!strcmp(f, "0xffffffff81000123"), "empty snapshot: %s", f);
	g_free(f);
	ha_syms_free(s);
	s = ha_syms_parse("garbage\n", 8);
	CHECK(ha_syms_count(s) == 0, "no text symbol: no symbols");
	ha_syms_free(s);
}

/*
 * Aliases at one address, listed the way a linux-6.1 x86_64 /proc/kallsyms lists them
 * (System.map of the guest kernel: nm -n order, which sorts aliases by name). The
 * kernel's %pS names each address by the first of its kallsyms table after
 * scripts/kallsyms.c's ranking: section markers and other linker-script symbols after
 * functions, weak symbols last, fewer leading underscores first, else nm's order.
 */
static void count_cb(uint64_t addr, const char *name, const char *module, void *user)
{
	(void)addr;
	(void)name;
	(void)module;
	(*(guint *)user)++;
}

static const char aliases[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81100000 T __sched_text_start\n"
	"ffffffff81100000 t __schedule\n"
	"ffffffff81100900 T __cpuidle_text_start\n"
	"ffffffff81100900 T default_idle\n"
	"ffffffff81100900 T native_safe_halt\n"
	"ffffffff81101000 T __lock_text_start\n"
	"ffffffff81101000 T _raw_spin_lock\n"
	"ffffffff81102000 T __do_sys_rt_sigreturn\n"
	"ffffffff81102000 T __x64_sys_rt_sigreturn\n"
	"ffffffff81103000 W arch_weak_fn\n"
	"ffffffff81103000 T __strong_fn\n"
	"ffffffff81104000 T __irqentry_text_end\n"
	"ffffffff81104000 T __softirqentry_text_start\n"
	"ffffffff81104000 T __do_softirq\n"
	"ffffffff81105000 T _etext\n"
	"ffffffffc0000000 t zeta_fn\t[m1]\n"
	"ffffffffc0000000 t alpha_fn\t[m1]\n"
	"ffffffffc0000100 t m1_next\t[m1]\n";

static void check_name(HaSyms *s, uint64_t ip, const char *want, const char *what)
{
	char *f = ha_syms_format(s, ip);

	CHECK(!strcmp(f, want), "%s: %s, want %s", what, f, want);
	g_free(f);
}

static void test_aliases(void)
{
	HaSyms *s = ha_syms_parse(aliases, sizeof(aliases) - 1);
	/* the same table in another order names every address the same way */
	GString *rev = g_string_new(NULL);
	char **lines = g_strsplit(aliases, "\n", 0);
	guint n = g_strv_length(lines);
	HaSyms *r;

	check_name(s, 0xffffffff81000010ull, "startup_64+0x10/0x100000", "_stext, _text");
	check_name(s, 0xffffffff811002e1ull, "__schedule+0x2e1/0x900", "__sched_text_start");
	check_name(s, 0xffffffff81100904ull, "default_idle+0x4/0x700",
		   "__cpuidle_text_start; nm order among equals");
	check_name(s, 0xffffffff81101010ull, "_raw_spin_lock+0x10/0x1000", "__lock_text_start");
	check_name(s, 0xffffffff81102020ull, "__do_sys_rt_sigreturn+0x20/0x1000",
		   "__x64_sys_ alias");
	check_name(s, 0xffffffff81103000ull, "__strong_fn+0x0/0x1000", "weak last");
	check_name(s, 0xffffffff81104008ull, "__do_softirq+0x8/0x1000", "two markers");
	check_name(s, 0xffffffffc0000008ull, "zeta_fn+0x8/0x100 [m1]",
		   "module: the first in its symtab");
	for (guint i = n; i-- > 0;)
		if (*lines[i] && !strstr(lines[i], "[m1]"))
			g_string_append_printf(rev, "%s\n", lines[i]);
	for (guint i = 0; i < n; i++)
		if (strstr(lines[i], "[m1]"))
			g_string_append_printf(rev, "%s\n", lines[i]);
	r = ha_syms_parse(rev->str, rev->len);
	check_name(r, 0xffffffff811002e1ull, "__schedule+0x2e1/0x900", "reversed: __schedule");
	check_name(r, 0xffffffff81101010ull, "_raw_spin_lock+0x10/0x1000",
		   "reversed: _raw_spin_lock");
	check_name(r, 0xffffffff81103000ull, "__strong_fn+0x0/0x1000", "reversed: weak last");
	{
		guint cnt = 0;

		ha_syms_foreach(s, count_cb, &cnt);
		CHECK(cnt == 10, "foreach: one name per address (%u)", cnt);
	}
	g_strfreev(lines);
	g_string_free(rev, TRUE);
	ha_syms_free(r);
	ha_syms_free(s);
}

static void test_chunk(void)
{
	GByteArray *packed = g_byte_array_new();
	uint8_t page[100];
	GError *e = NULL;
	GBytes *z, *raw;
	const uint8_t *p;
	uint32_t len;
	size_t off = 0;
	int n = 0;

	memset(page, 0xab, sizeof(page));
	ha_chunk_add_page(packed, page, sizeof(page));
	ha_chunk_add_page(packed, page, 16);
	z = ha_chunk_compress(packed, 3, &e);
	raw = ha_chunk_decompress(g_bytes_get_data(z, NULL), g_bytes_get_size(z), &e);
	CHECK(raw && g_bytes_get_size(raw) == packed->len, "round trip");
	while (raw && ha_chunk_next_page(raw, &off, &p, &len))
		n++;
	CHECK(n == 2, "two pages back");
	CHECK(!ha_chunk_decompress("nonsense", 8, &e), "garbage refused: %s",
	      e ? e->message : "");
	g_clear_error(&e);
	g_bytes_unref(raw);
	g_bytes_unref(z);
	g_byte_array_unref(packed);
}

/* @fixture: dwarf-fixture.c built with -g -O2; its line numbers are asserted. */
static void test_dwarf(const char *fixture)
{
	GError *e = NULL;
	HaDwarf *d = ha_dwarf_open(fixture, &e);
	uint64_t outer;
	char **l;
	HaSyms *s;
	char ks[128];

	CHECK(d != NULL, "open fixture%s%s", e ? ": " : "", e ? e->message : "");
	if (!d)
		return;
	outer = ha_dwarf_symbol(d, "fixture_outer");
	CHECK(outer != 0, "symbol fixture_outer at 0x%llx", (unsigned long long)outer);
	l = ha_dwarf_lookup(d, outer);
	CHECK(l && l[0] && l[1] && !l[2], "two frames at fixture_outer's first instruction");
	CHECK(l && l[0] && !strcmp(l[0], "fixture_leaf [inlined] (dwarf-fixture.c:5)"),
	      "inlined: %s", l && l[0] ? l[0] : "(none)");
	CHECK(l && l[0] && l[1] && !strcmp(l[1], "fixture_outer (dwarf-fixture.c:11)"),
	      "caller at the call line: %s", l && l[0] && l[1] ? l[1] : "(none)");
	g_strfreev(l);
	/* Through a boot's symbols with a KASLR slide: a return address one past it. */
	g_snprintf(ks, sizeof(ks), "%llx T fixture_outer\n",
		   (unsigned long long)(outer + 0x1000000));
	s = ha_syms_parse(ks, strlen(ks));
	ha_syms_set_dwarf(s, d, 0x1000000);
	l = ha_syms_lines(s, outer + 0x1000000 + 1);
	CHECK(l && l[0] && strstr(l[0], "fixture_leaf"), "slide applied");
	g_strfreev(l);
	ha_syms_free(s);
	CHECK(!ha_dwarf_open("/nonexistent/vmlinux", &e), "missing file refused");
	g_clear_error(&e);
	ha_dwarf_free(d);
}

int main(int argc, char **argv)
{
	test_syms();
	test_aliases();
	test_chunk();
	if (argc > 1)
		test_dwarf(argv[1]);
	else
		CHECK(0, "usage: test-host-resolve DWARF-FIXTURE");
	return tap_done();
}
