// SPDX-License-Identifier: MIT
/* resolve.c - kallsyms lookup (see resolve.h). */
#include "resolve.h"

#include <inttypes.h>
#include <string.h>

typedef struct {
	uint64_t addr;
	const char *name;	/* into HaSyms.strings */
	const char *module;	/* NULL for vmlinux */
} Sym;

struct _HaSyms {
	GArray *syms;		/* Sym, sorted by addr */
	GStringChunk *strings;
	HaDwarf *dwarf;		/* borrowed, may be NULL */
	int64_t slide;
};

static gint sym_cmp(gconstpointer a, gconstpointer b)
{
	const Sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

HaSyms *ha_syms_parse(const char *text, size_t len)
{
	HaSyms *s = g_new0(HaSyms, 1);
	size_t off = 0;

	s->syms = g_array_new(FALSE, FALSE, sizeof(Sym));
	s->strings = g_string_chunk_new(64 * 1024);
	while (off < len) {
		const char *line = text + off;
		const char *nl = memchr(line, '\n', len - off);
		size_t n = nl ? (size_t)(nl - line) : len - off;
		g_autofree char *copy = g_strndup(line, n);
		char **f = NULL;
		Sym sym = { 0 };
		char *end;

		off += n + 1;
		f = g_strsplit_set(copy, " \t", 0);
		/* fields: addr, type, name, optional [module] (empty tokens skipped) */
		{
			const char *tok[4] = { 0 };
			int k = 0;

			for (int i = 0; f[i] && k < 4; i++)
				if (*f[i])
					tok[k++] = f[i];
			if (k >= 3 && strchr("tTwW", tok[1][0])) {
				sym.addr = g_ascii_strtoull(tok[0], &end, 16);
				if (*end == '\0' && sym.addr) {
					sym.name = g_string_chunk_insert_const(s->strings, tok[2]);
					if (k == 4 && tok[3][0] == '[') {
						g_autofree char *m = g_strndup(tok[3] + 1,
							strcspn(tok[3] + 1, "]"));

						sym.module = g_string_chunk_insert_const(s->strings, m);
					}
					g_array_append_val(s->syms, sym);
				}
			}
		}
		g_strfreev(f);
	}
	/* g_array_sort(), not qsort(): with no symbol (a boot without a complete
	 * kallsyms snapshot) the array's data is NULL, and qsort(NULL, 0, ...) is
	 * undefined behaviour. */
	g_array_sort(s->syms, sym_cmp);
	return s;
}

void ha_syms_free(HaSyms *s)
{
	if (!s)
		return;
	g_array_unref(s->syms);
	g_string_chunk_free(s->strings);
	g_free(s);
}

void ha_syms_foreach(const HaSyms *s, void (*fn)(uint64_t addr, const char *name,
						const char *module, void *user), void *user)
{
	for (guint i = 0; i < s->syms->len; i++) {
		const Sym *y = &g_array_index(s->syms, Sym, i);

		fn(y->addr, y->name, y->module, user);
	}
}

guint ha_syms_count(const HaSyms *s)
{
	return s->syms->len;
}

/* Chunks 0..last of one snapshot, all of them, appended to @out: false if one is
 * missing (a snapshot with a hole would blame the missing lines' addresses on the
 * symbol before them). */
static bool load_snapshot(sqlite3 *db, int64_t boot, int64_t stream, int64_t gen,
			  GString *out)
{
	sqlite3_stmt *st = NULL;
	bool complete = false;
	int64_t next = 0;

	if (sqlite3_prepare_v2(db, "SELECT chunk, text FROM texts WHERE boot = ? AND"
			       " kind = 'ksyms' AND stream = ? AND generation = ? AND chunk <="
			       " (SELECT chunk FROM texts WHERE boot = ?1 AND kind = 'ksyms' AND"
			       " stream = ?2 AND generation = ?3 AND last = 1) ORDER BY chunk", -1,
			       &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, stream);
	sqlite3_bind_int64(st, 3, gen);
	complete = true;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (sqlite3_column_int64(st, 0) != next++)
			complete = false;
		g_string_append_len(out, sqlite3_column_blob(st, 1), sqlite3_column_bytes(st, 1));
	}
	sqlite3_finalize(st);
	return complete;
}

/* The module of a kallsyms line ("ADDR TYPE NAME [MODULE]"), or NULL. */
static char *line_module(const char *line, size_t n)
{
	const char *open = memchr(line, '[', n);
	const char *close = open ? memchr(open, ']', n - (size_t)(open - line)) : NULL;

	return close ? g_strndup(open + 1, (size_t)(close - open - 1)) : NULL;
}

/*
 * Append to @text the lines of modules that @text lacks but an older complete
 * snapshot of the boot has (@older: its text): a module unloaded while it was
 * traced keeps its symbols for the events recorded while it was loaded. An address
 * a later module reuses resolves to the newest snapshot's symbol.
 */
static void add_modules(GString *text, GHashTable *known, const GString *older)
{
	g_autoptr(GHashTable) added = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							    NULL);
	GHashTableIter it;
	size_t off = 0;
	gpointer k;

	while (off < older->len) {
		const char *line = older->str + off;
		const char *nl = memchr(line, '\n', older->len - off);
		size_t n = nl ? (size_t)(nl - line) : older->len - off;
		g_autofree char *m = line_module(line, n);

		off += n + 1;
		if (!m || g_hash_table_contains(known, m))
			continue;
		if (text->len && text->str[text->len - 1] != '\n')
			g_string_append_c(text, '\n');
		g_string_append_len(text, line, (gssize)n);
		g_string_append_c(text, '\n');
		g_hash_table_add(added, g_steal_pointer(&m));
	}
	/* an even older snapshot does not add these modules a second time */
	g_hash_table_iter_init(&it, added);
	while (g_hash_table_iter_next(&it, &k, NULL)) {
		g_hash_table_iter_steal(&it);
		g_hash_table_add(known, k);
	}
}

HaSyms *ha_syms_load(HaStore *store, int64_t boot)
{
	sqlite3 *db = ha_store_db(store);
	sqlite3_stmt *st = NULL;
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GHashTable) known = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							    NULL);
	bool first = true;

	/* The newest snapshot whose LAST chunk arrived, then the older ones for the
	 * modules it lacks. */
	if (sqlite3_prepare_v2(db, "SELECT stream, generation FROM texts WHERE boot = ? AND"
			       " kind = 'ksyms' AND last = 1 ORDER BY seq DESC", -1, &st,
			       NULL) != SQLITE_OK)
		return ha_syms_parse("", 0);
	sqlite3_bind_int64(st, 1, boot);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t stream = sqlite3_column_int64(st, 0), gen = sqlite3_column_int64(st, 1);
		g_autoptr(GString) snap = g_string_new(NULL);
		bool complete = load_snapshot(db, boot, stream, gen, snap);

		if (first) {
			first = false;
			if (!complete) {
				g_printerr("host-agent: boot %" PRId64 ": the kallsyms snapshot misses"
					   " chunks (lost frames): addresses stay unresolved\n", boot);
				break;
			}
			g_string_append_len(text, snap->str, (gssize)snap->len);
			for (size_t off = 0; off < snap->len;) {
				const char *line = snap->str + off;
				const char *nl = memchr(line, '\n', snap->len - off);
				size_t n = nl ? (size_t)(nl - line) : snap->len - off;
				char *m = line_module(line, n);

				off += n + 1;
				if (m)
					g_hash_table_add(known, m);
			}
		} else if (complete) {
			add_modules(text, known, snap);
		}
	}
	sqlite3_finalize(st);
	return ha_syms_parse(text->str, text->len);
}

char *ha_syms_format(const HaSyms *s, uint64_t ip)
{
	const Sym *v = (const Sym *)s->syms->data;
	guint lo = 0, hi = s->syms->len;

	if (ip == 0x7fffffff)
		return g_strdup("[ftrace trampoline]");
	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || ip - v[lo - 1].addr >= HA_SYM_MAX_SIZE)
		return g_strdup_printf("0x%016" PRIx64, ip);
	if (v[lo - 1].module)
		return g_strdup_printf("%s+0x%" PRIx64 " [%s]", v[lo - 1].name,
				       ip - v[lo - 1].addr, v[lo - 1].module);
	return g_strdup_printf("%s+0x%" PRIx64, v[lo - 1].name, ip - v[lo - 1].addr);
}

void ha_syms_set_dwarf(HaSyms *s, HaDwarf *d, int64_t slide)
{
	s->dwarf = d;
	s->slide = slide;
}

char **ha_syms_lines(const HaSyms *s, uint64_t ip)
{
	if (!s->dwarf || ip == 0x7fffffff || ip < 1)
		return NULL;
	/* A return address: the call is the instruction before it. */
	return ha_dwarf_lookup(s->dwarf, ip - 1 - (uint64_t)s->slide);
}
