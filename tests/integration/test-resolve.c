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
	"ffffffffc0000000 t mod_fn\t[mymod]\n";

static void test_syms(void)
{
	HaSyms *s = ha_syms_parse(ksyms, sizeof(ksyms) - 1);
	char *f;

	CHECK(ha_syms_count(s) == 4, "4 text symbols (%u)", ha_syms_count(s));
	f = ha_syms_format(s, 0xffffffff81000123ull);
	CHECK(!strcmp(f, "first_fn+0x23"), "%s", f);
	g_free(f);
	f = ha_syms_format(s, 0xffffffff81000310ull);
	CHECK(!strcmp(f, "second_fn+0x110"), "data symbols skipped: %s", f);
	g_free(f);
	f = ha_syms_format(s, 0xffffffffc0000010ull);
	CHECK(!strcmp(f, "mod_fn+0x10 [mymod]"), "%s", f);
	g_free(f);
	f = ha_syms_format(s, 0xffffffff80000000ull);
	CHECK(!strcmp(f, "0xffffffff80000000"), "below all symbols: %s", f);
	g_free(f);
	f = ha_syms_format(s, 0xffffffffc0000000ull + HA_SYM_MAX_SIZE);
	CHECK(!strcmp(f, "0xffffffffc0100000"), "far past the last symbol: %s", f);
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
	test_chunk();
	if (argc > 1)
		test_dwarf(argv[1]);
	else
		CHECK(0, "usage: test-host-resolve DWARF-FIXTURE");
	return tap_done();
}
