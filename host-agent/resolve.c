// SPDX-License-Identifier: MIT
/* resolve.c - kallsyms lookup (see resolve.h). */
#include "resolve.h"

#include <inttypes.h>
#include <string.h>

typedef struct {
	uint64_t addr;
	const char *name;	/* into HaSyms.strings */
	const char *module;	/* NULL for vmlinux */
	uint32_t pos;		/* line in the snapshot */
	uint8_t rank;		/* vmlinux: scripts/kallsyms.c order among aliases */
} Sym;

/* One address as the kernel names it: the first of its aliases, and the size %pS
 * prints (up to the next address of the same region, 0 when unknown). */
typedef struct {
	uint64_t addr;
	uint64_t size;
	const char *name;
	const char *module;
} Addr;

struct _HaSyms {
	GArray *addrs;		/* Addr, sorted by addr, one per address */
	guint nr_syms;		/* symbols parsed, aliases included */
	GStringChunk *strings;
	HaDwarf *dwarf;		/* borrowed, may be NULL */
	int64_t slide;
	GHashTable *lines;	/* ip -> GStrv (NULL: none): one DWARF lookup per ip */
};

/* linux-6.1 scripts/kallsyms.c may_be_linker_script_provide_symbol(): __start_X,
 * __stop_X, __end_X, __X_start, __X_end. */
static bool linker_provided(const char *n)
{
	size_t len = strlen(n);

	if (len < 8 || n[0] != '_' || n[1] != '_')
		return false;
	return !strncmp(n + 2, "start_", 6) || !strncmp(n + 2, "stop_", 5) ||
	       !strncmp(n + 2, "end_", 4) || !strcmp(n + len - 6, "_start") ||
	       !strcmp(n + len - 4, "_end");
}

/*
 * The order scripts/kallsyms.c compare_symbols() gives symbols at one address (weak
 * last, then linker-script symbols such as __sched_text_start, then more leading
 * underscores; nm's order otherwise), packed so that a lower rank sorts first.
 */
static uint8_t kallsyms_rank(char type, const char *name)
{
	size_t us = strspn(name, "_");

	return (uint8_t)((type == 'w' || type == 'W') << 7 | linker_provided(name) << 6 |
			 MIN(us, 63));
}

static gint sym_cmp(gconstpointer a, gconstpointer b)
{
	const Sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Keep the first symbol of each address; size up to the next address, if it is in
 * the same region (vmlinux, or the same module). */
static void build_addrs(HaSyms *s, GArray *syms)
{
	const Sym *v = (const Sym *)syms->data;

	for (guint i = 0; i < syms->len; i++) {
		Addr a = { .addr = v[i].addr, .name = v[i].name, .module = v[i].module };
		guint j = i + 1;

		if (i && v[i - 1].addr == v[i].addr)
			continue;
		while (j < syms->len && v[j].addr == v[i].addr)
			j++;
		if (j < syms->len && v[j].module == v[i].module)
			a.size = v[j].addr - v[i].addr;
		g_array_append_val(s->addrs, a);
	}
}

HaSyms *ha_syms_parse(const char *text, size_t len)
{
	HaSyms *s = g_new0(HaSyms, 1);
	g_autoptr(GArray) syms = g_array_new(FALSE, FALSE, sizeof(Sym));
	size_t off = 0;
	uint32_t pos = 0;

	s->addrs = g_array_new(FALSE, FALSE, sizeof(Addr));
	s->strings = g_string_chunk_new(64 * 1024);
	while (off < len) {
		const char *line = text + off;
		const char *nl = memchr(line, '\n', len - off);
		size_t n = nl ? (size_t)(nl - line) : len - off;
		g_autofree char *copy = g_strndup(line, n);
		char **f = NULL;
		Sym sym = { .pos = pos++ };
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
			/* Every type: the kernel's lookup does not look at it either (with
			 * KALLSYMS_ALL a data symbol ends the text symbol before it). */
			if (k >= 3 && tok[1][1] == '\0' && g_ascii_isalpha(tok[1][0])) {
				sym.addr = g_ascii_strtoull(tok[0], &end, 16);
				if (*end == '\0' && sym.addr) {
					sym.name = g_string_chunk_insert_const(s->strings, tok[2]);
					if (k == 4 && tok[3][0] == '[') {
						g_autofree char *m = g_strndup(tok[3] + 1,
							strcspn(tok[3] + 1, "]"));

						sym.module = g_string_chunk_insert_const(s->strings, m);
					} else {
						sym.rank = kallsyms_rank(tok[1][0], sym.name);
					}
					g_array_append_val(syms, sym);
				}
			}
		}
		g_strfreev(f);
	}
	/* g_array_sort(), not qsort(): with no symbol (a boot without a complete
	 * kallsyms snapshot) the array's data is NULL, and qsort(NULL, 0, ...) is
	 * undefined behaviour. Interned module names: equal pointers for equal
	 * names. Module symbols keep their snapshot order among aliases
	 * (kernel/module/kallsyms.c takes the first in the module's symtab, which is
	 * the order /proc/kallsyms lists them in). */
	g_array_sort(syms, sym_cmp);
	s->nr_syms = syms->len;
	build_addrs(s, syms);
	return s;
}

void ha_syms_free(HaSyms *s)
{
	if (!s)
		return;
	g_array_unref(s->addrs);
	g_string_chunk_free(s->strings);
	if (s->lines)
		g_hash_table_destroy(s->lines);
	g_free(s);
}

void ha_syms_foreach(const HaSyms *s, void (*fn)(uint64_t addr, const char *name,
						const char *module, void *user), void *user)
{
	for (guint i = 0; i < s->addrs->len; i++) {
		const Addr *a = &g_array_index(s->addrs, Addr, i);

		fn(a->addr, a->name, a->module, user);
	}
}

guint ha_syms_count(const HaSyms *s)
{
	return s->nr_syms;
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

/* The address's entry, or NULL when no symbol of its region covers it. */
static const Addr *lookup(const HaSyms *s, uint64_t ip)
{
	const Addr *v = (const Addr *)s->addrs->data;
	guint lo = 0, hi = s->addrs->len;

	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || ip - v[lo - 1].addr >= HA_SYM_MAX_SIZE)
		return NULL;
	return &v[lo - 1];
}

const char *ha_syms_name(const HaSyms *s, uint64_t ip, uint64_t *ret_off)
{
	const Addr *a = lookup(s, ip);

	if (!a)
		return NULL;
	if (ret_off)
		*ret_off = ip - a->addr;
	return a->name;
}

char *ha_syms_format(const HaSyms *s, uint64_t ip)
{
	const Addr *a;
	GString *o;

	if (ip == 0x7fffffff)
		return g_strdup("[ftrace trampoline]");
	a = lookup(s, ip);
	if (!a)
		return g_strdup_printf("0x%" PRIx64, ip);
	/* lib/vsprintf.c %pS: name+0xoff/0xsize [module] */
	o = g_string_new(a->name);
	g_string_append_printf(o, "+0x%" PRIx64, ip - a->addr);
	if (a->size)
		g_string_append_printf(o, "/0x%" PRIx64, a->size);
	if (a->module)
		g_string_append_printf(o, " [%s]", a->module);
	return g_string_free(o, FALSE);
}
char *ha_syms_format_name(const HaSyms *s, uint64_t ip)
{
	const Addr *a = lookup(s, ip);

	if (!a)
		return g_strdup_printf("0x%" PRIx64, ip);
	if (a->module)
		return g_strdup_printf("%s [%s]", a->name, a->module);
	return g_strdup(a->name);
}

HaDwarf *ha_syms_dwarf(const HaSyms *s)
{
	return s->dwarf;
}

void ha_syms_set_dwarf(HaSyms *s, HaDwarf *d, int64_t slide)
{
	s->dwarf = d;
	s->slide = slide;
}

char **ha_syms_lines(const HaSyms *s, uint64_t ip)
{
	HaSyms *m = (HaSyms *)s;	/* the cache only */
	gpointer v;

	if (!s->dwarf || ip == 0x7fffffff || ip < 1)
		return NULL;
	if (!m->lines)
		m->lines = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
						 (GDestroyNotify)g_strfreev);
	if (!g_hash_table_lookup_extended(m->lines, &ip, NULL, &v)) {
		/* A return address: the call is the instruction before it. */
		v = ha_dwarf_lookup(s->dwarf, ip - 1 - (uint64_t)s->slide);
		g_hash_table_insert(m->lines, g_memdup2(&ip, sizeof(ip)), v);
	}
	return g_strdupv(v);
}
