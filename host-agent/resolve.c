// SPDX-License-Identifier: MIT
/* resolve.c - kallsyms lookup (see resolve.h). */
#include "resolve.h"

#include <inttypes.h>
#include <string.h>

#include "proto.h"
#include "store-report.h"

typedef struct {
	uint64_t addr;
	const char *name;	/* into HaSyms.strings */
	const char *module;	/* NULL for vmlinux */
	uint32_t pos;		/* line in the snapshot */
	uint8_t rank;		/* vmlinux: scripts/kallsyms.c order among aliases */
	bool text;		/* type t, T, w or W */
} Sym;

/* One address as the kernel names it: the first of its aliases, and the size %pS
 * prints (up to the next address of the same region, 0 when unknown). */
typedef struct {
	uint64_t addr;
	uint64_t size;
	const char *name;
	const char *module;
	bool text;		/* one of its aliases is a text symbol */
} Addr;

/* One load of a module: its core [base, base + size) from /proc/modules. */
typedef struct {
	const char *name;	/* into HaSyms.strings */
	uint64_t base, size;
	GArray *syms;		/* Sym while parsing */
	GArray *addrs;		/* Addr, sorted by addr, one per address */
} Mod;

struct _HaSyms {
	GArray *addrs;		/* Addr: vmlinux, and modules whose core is unknown */
	GPtrArray *mods;	/* Mod, newest snapshot first: the first that holds an ip */
	uint64_t text_lo, text_hi;	/* vmlinux [_stext, _etext), 0 when unknown */
	uint64_t init_lo, init_hi;	/* vmlinux [_sinittext, _einittext) */
	guint nr_syms;		/* symbols kept, aliases included */
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

static gint addr_cmp(gconstpointer a, gconstpointer b)
{
	const Addr *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Keep the first symbol of each address (sorted @syms) in @out; its size up to the
 * next address if that is in the same region (vmlinux, or the same module). With
 * @text_next only a text symbol ends it: a module's last function ends at its core
 * text's end, which /proc/modules does not give, not at its first data symbol.
 */
static void build_addrs(GArray *out, GArray *syms, bool text_next)
{
	const Sym *v = (const Sym *)syms->data;

	for (guint i = 0; i < syms->len; i++) {
		Addr a = { .addr = v[i].addr, .name = v[i].name, .module = v[i].module };
		guint j = i;

		if (i && v[i - 1].addr == v[i].addr)
			continue;
		for (; j < syms->len && v[j].addr == v[i].addr; j++)
			a.text |= v[j].text;
		if (j < syms->len && v[j].module == v[i].module && (!text_next || v[j].text))
			a.size = v[j].addr - v[i].addr;
		g_array_append_val(out, a);
	}
}

/* One kallsyms line ("ADDR TYPE NAME [MODULE]", tabs or spaces): false for a bad
 * one. @ret_module NULL for vmlinux; strings point into @f. */
static bool parse_line(char **f, uint64_t *ret_addr, char *ret_type, const char **ret_name,
		       char **ret_module)
{
	const char *tok[4] = { 0 };
	uint64_t addr;
	char *end;
	int k = 0;

	for (int i = 0; f[i] && k < 4; i++)
		if (*f[i])
			tok[k++] = f[i];
	/* Every type is kept: with KALLSYMS_ALL a data symbol ends the function
	 * before it, in the kernel's lookup as here. */
	if (k < 3 || tok[1][1] != '\0' || !g_ascii_isalpha(tok[1][0]))
		return false;
	addr = g_ascii_strtoull(tok[0], &end, 16);
	if (*end != '\0' || !addr)
		return false;
	*ret_addr = addr;
	*ret_type = tok[1][0];
	*ret_name = tok[2];
	*ret_module = NULL;
	if (k == 4 && tok[3][0] == '[')
		*ret_module = g_strndup(tok[3] + 1, strcspn(tok[3] + 1, "]"));
	return true;
}

/*
 * The cores of /proc/modules @text: name -> uint64_t[2] { base, size }. A line is
 * "NAME SIZE REFS DEPS STATE 0xBASE [TAINTS]" (kernel/module/procfs.c m_show(): SIZE
 * is the core's once the module is Live, its init freed); a base of 0 (kptr_restrict)
 * gives no entry. g_hash_table_unref().
 */
static GHashTable *parse_modules(const char *text, size_t len)
{
	GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autofree char *copy = g_strndup(text, len);
	g_auto(GStrv) lines = g_strsplit(copy, "\n", 0);

	for (guint i = 0; lines[i]; i++) {
		g_auto(GStrv) f = g_strsplit_set(lines[i], " \t", 0);
		const char *tok[6] = { 0 };
		uint64_t *r;
		char *end1, *end2;
		uint64_t size, base;
		int k = 0;

		for (int j = 0; f[j] && k < 6; j++)
			if (*f[j])
				tok[k++] = f[j];
		if (k < 6 || strncmp(tok[5], "0x", 2))
			continue;
		size = g_ascii_strtoull(tok[1], &end1, 10);
		base = g_ascii_strtoull(tok[5] + 2, &end2, 16);
		if (*end1 || *end2 || !size || !base || base + size < base)
			continue;
		r = g_new(uint64_t, 2);
		r[0] = base;
		r[1] = size;
		g_hash_table_replace(h, g_strdup(tok[0]), r);
	}
	return h;
}

static void mod_free(gpointer p)
{
	Mod *m = p;

	if (m->syms)
		g_array_unref(m->syms);
	g_array_unref(m->addrs);
	g_free(m);
}

static Mod *mod_find(GPtrArray *mods, const char *name, uint64_t base)
{
	for (guint i = 0; i < mods->len; i++) {
		Mod *m = mods->pdata[i];

		if (m->base == base && !strcmp(m->name, name))
			return m;
	}
	return NULL;
}

/* The newest load of a module (the first in @s->mods) whose core holds @ip. */
static const Mod *mod_at(const HaSyms *s, uint64_t ip, guint *ret_i)
{
	for (guint i = 0; i < s->mods->len; i++) {
		const Mod *m = s->mods->pdata[i];

		if (ip - m->base < m->size) {
			*ret_i = i;
			return m;
		}
	}
	return NULL;
}

/* True when a newer load than mods[@i] holds @ip: it is that one's address. */
static bool shadowed(const HaSyms *s, guint i, uint64_t ip)
{
	guint j;

	return mod_at(s, ip, &j) && j < i;
}

/* vmlinux symbols only from the newest snapshot; a module's from the newest snapshot
 * that lists it. @seen: module names with no known core already taken. */
static void parse_snapshot(HaSyms *s, GArray *syms, const HaSymsSnapshot *sn, guint idx,
			   GHashTable *seen)
{
	g_autoptr(GHashTable) cores = sn->modules ? parse_modules(sn->modules,
							      sn->modules_len) : NULL;
	g_autoptr(GHashTable) mine = g_hash_table_new(g_direct_hash, g_direct_equal);
	Mod *last = NULL;
	size_t off = 0;
	uint32_t pos = 0;

	while (off < sn->ksyms_len) {
		const char *line = sn->ksyms + off;
		const char *nl = memchr(line, '\n', sn->ksyms_len - off);
		size_t n = nl ? (size_t)(nl - line) : sn->ksyms_len - off;
		g_autofree char *copy = NULL;
		g_autofree char *module = NULL;
		g_auto(GStrv) f = NULL;
		Sym sym = { .pos = pos++ };
		const char *name;
		const uint64_t *core;
		char type;

		off += n + 1;
		if (idx && !memchr(line, '[', n))
			continue;	/* an older snapshot: its modules only */
		copy = g_strndup(line, n);
		f = g_strsplit_set(copy, " \t", 0);
		if (!parse_line(f, &sym.addr, &type, &name, &module))
			continue;
		sym.name = g_string_chunk_insert_const(s->strings, name);
		sym.text = type == 't' || type == 'T' || type == 'w' || type == 'W';
		if (!module) {
			sym.rank = kallsyms_rank(type, sym.name);
			g_array_append_val(syms, sym);
			s->nr_syms++;
			continue;
		}
		/* Interned module names: equal pointers for equal names. */
		sym.module = g_string_chunk_insert_const(s->strings, module);
		core = cores ? g_hash_table_lookup(cores, module) : NULL;
		if (core) {
			/* a module's lines follow each other: look it up once */
			Mod *m = last && last->name == sym.module && last->base == core[0] ?
				 last : mod_find(s->mods, sym.module, core[0]);

			if (!m) {
				m = g_new0(Mod, 1);
				m->name = sym.module;
				m->base = core[0];
				m->size = core[1];
				m->syms = g_array_new(FALSE, FALSE, sizeof(Sym));
				m->addrs = g_array_new(FALSE, FALSE, sizeof(Addr));
				g_ptr_array_add(s->mods, m);
				g_hash_table_add(mine, m);
			}
			last = m;
			if (!g_hash_table_contains(mine, m))
				continue;	/* a newer snapshot gave this load */
			/* Outside the core: an init symbol listed while the module
			 * was loading, gone (and its memory freed) once it is Live. */
			if (sym.addr - m->base >= m->size)
				continue;
			g_array_append_val(m->syms, sym);
			s->nr_syms++;
			continue;
		}
		/* No core known ([bpf], [__builtin__ftrace], no MODULES snapshot, a
		 * module loaded between the two reads): the newest snapshot's. */
		{
			gpointer had;

			if (g_hash_table_lookup_extended(seen, sym.module, NULL, &had) &&
			    GPOINTER_TO_UINT(had) != idx)
				continue;
			g_hash_table_insert(seen, (gpointer)sym.module, GUINT_TO_POINTER(idx));
		}
		g_array_append_val(syms, sym);
		s->nr_syms++;
	}
}

static uint64_t vmlinux_addr(GArray *syms, const char *name)
{
	for (guint i = 0; i < syms->len; i++) {
		const Sym *y = &g_array_index(syms, Sym, i);

		if (!y->module && !strcmp(y->name, name))
			return y->addr;
	}
	return 0;
}

HaSyms *ha_syms_parse_snapshots(const HaSymsSnapshot *snaps, guint n)
{
	HaSyms *s = g_new0(HaSyms, 1);
	g_autoptr(GArray) syms = g_array_new(FALSE, FALSE, sizeof(Sym));
	g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);

	s->addrs = g_array_new(FALSE, FALSE, sizeof(Addr));
	s->mods = g_ptr_array_new_with_free_func(mod_free);
	s->strings = g_string_chunk_new(64 * 1024);
	for (guint i = 0; i < n; i++)
		parse_snapshot(s, syms, &snaps[i], i, seen);
	/* g_array_sort(), not qsort(): with no symbol (a boot without a complete
	 * kallsyms snapshot) the array's data is NULL, and qsort(NULL, 0, ...) is
	 * undefined behaviour. Module symbols keep their snapshot order among aliases
	 * (kernel/module/kallsyms.c takes the first in the module's symtab, which is
	 * the order /proc/kallsyms lists them in). */
	g_array_sort(syms, sym_cmp);
	build_addrs(s->addrs, syms, false);
	/* kernel/kallsyms.c is_ksym_addr(): vmlinux text and init text (whose symbols
	 * the kernel keeps naming after free_initmem()). */
	s->text_lo = vmlinux_addr(syms, "_stext");
	s->text_hi = vmlinux_addr(syms, "_etext");
	if (s->text_hi <= s->text_lo)
		s->text_lo = s->text_hi = 0;
	s->init_lo = vmlinux_addr(syms, "_sinittext");
	s->init_hi = vmlinux_addr(syms, "_einittext");
	if (s->init_hi <= s->init_lo)
		s->init_lo = s->init_hi = 0;
	for (guint i = 0; i < s->mods->len; i++) {
		Mod *m = s->mods->pdata[i];

		g_array_sort(m->syms, sym_cmp);
		build_addrs(m->addrs, m->syms, true);
		g_clear_pointer(&m->syms, g_array_unref);
	}
	return s;
}

HaSyms *ha_syms_parse(const char *text, size_t len)
{
	HaSymsSnapshot sn = { .ksyms = text, .ksyms_len = len };

	return ha_syms_parse_snapshots(&sn, 1);
}

void ha_syms_free(HaSyms *s)
{
	if (!s)
		return;
	g_array_unref(s->addrs);
	g_ptr_array_unref(s->mods);
	g_string_chunk_free(s->strings);
	if (s->lines)
		g_hash_table_destroy(s->lines);
	g_free(s);
}

void ha_syms_foreach(const HaSyms *s, void (*fn)(uint64_t addr, const char *name,
						const char *module, void *user), void *user)
{
	g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(Addr));

	for (guint i = 0; i < s->addrs->len; i++) {
		const Addr *a = &g_array_index(s->addrs, Addr, i);
		guint j;

		/* a module's symbol whose core a known load now holds */
		if (!a->module || !mod_at(s, a->addr, &j))
			g_array_append_val(all, *a);
	}
	for (guint i = 0; i < s->mods->len; i++) {
		const Mod *m = s->mods->pdata[i];

		for (guint k = 0; k < m->addrs->len; k++) {
			const Addr *a = &g_array_index(m->addrs, Addr, k);

			if (!shadowed(s, i, a->addr))
				g_array_append_val(all, *a);
		}
	}
	g_array_sort(all, addr_cmp);
	for (guint i = 0; i < all->len; i++) {
		const Addr *a = &g_array_index(all, Addr, i);

		fn(a->addr, a->name, a->module, user);
	}
}

guint ha_syms_count(const HaSyms *s)
{
	return s->nr_syms;
}

/* Keep only @text's module lines ("... [MODULE]"): what an older snapshot adds. */
static void keep_module_lines(GString *text)
{
	size_t in = 0, out = 0;

	while (in < text->len) {
		const char *line = text->str + in;
		const char *nl = memchr(line, '\n', text->len - in);
		size_t n = nl ? (size_t)(nl - line) + 1 : text->len - in;

		if (memchr(line, '[', n)) {
			memmove(text->str + out, line, n);
			out += n;
		}
		in += n;
	}
	g_string_truncate(text, out);
}

static void snapshot_clear(gpointer p)
{
	HaSymsSnapshot *sn = p;

	g_free((char *)sn->ksyms);
	g_free((char *)sn->modules);
}

HaSyms *ha_syms_load(HaStore *store, int64_t boot, GError **error)
{
	g_autoptr(GArray) snaps = g_array_new(FALSE, TRUE, sizeof(HaSymsSnapshot));
	g_autoptr(GArray) gens = g_array_new(FALSE, FALSE, 2 * sizeof(int64_t));

	g_array_set_clear_func(snaps, snapshot_clear);
	/* The newest snapshot whose LAST chunk arrived, then the older ones for the
	 * modules it lacks; each with the MODULES text of its generation (the guest
	 * agent sends both for every module change). A snapshot with a hole would blame
	 * the missing lines' addresses on the symbol before them: only complete ones. */
	if (!ha_store_ksyms_snapshots(store, boot, gens, error))
		return NULL;
	for (guint i = 0; i < gens->len; i++) {
		const int64_t *sg = &g_array_index(gens, int64_t, 2 * i);
		g_autoptr(GString) ks = g_string_new(NULL);
		g_autoptr(GString) mods = g_string_new(NULL);
		HaSymsSnapshot sn = { 0 };
		bool complete, mods_complete;

		if (!ha_store_text_snapshot(store, boot, "ksyms", sg[0], sg[1], ks, &complete,
					    error))
			return NULL;
		if (!snaps->len && !complete) {
			g_printerr("host-agent: boot %" PRId64 ": the kallsyms snapshot misses"
				   " chunks (lost frames): addresses stay unresolved\n", boot);
			break;
		}
		if (!complete)
			continue;
		if (snaps->len)
			keep_module_lines(ks);
		sn.ksyms_len = ks->len;
		sn.ksyms = g_string_free(g_steal_pointer(&ks), FALSE);
		if (!ha_store_text_snapshot(store, boot, "modules", sg[0], sg[1], mods,
					    &mods_complete, error)) {
			snapshot_clear(&sn);
			return NULL;
		}
		if (mods_complete) {
			sn.modules_len = mods->len;
			sn.modules = g_string_free(g_steal_pointer(&mods), FALSE);
		}
		g_array_append_val(snaps, sn);
	}
	return ha_syms_parse_snapshots((const HaSymsSnapshot *)snaps->data, snaps->len);
}

/* The last entry of @a at or below @ip, or NULL. */
static const Addr *find(GArray *a, uint64_t ip)
{
	const Addr *v = (const Addr *)a->data;
	guint lo = 0, hi = a->len;

	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &v[lo - 1] : NULL;
}

/*
 * The address's entry, or NULL when no symbol of its region covers it. A return
 * address is code: the symbol before it must be a function (in the kernel's own
 * lookup a data symbol could name it; that would only blame it wrongly).
 */
static const Addr *lookup(const HaSyms *s, uint64_t ip)
{
	const Addr *a;
	const Mod *m;
	guint i;

	/* kernel/module/kallsyms.c: a module's symbol names only its own core */
	m = mod_at(s, ip, &i);
	if (m) {
		a = find(m->addrs, ip);
		return a && a->text && !shadowed(s, i, a->addr) ? a : NULL;
	}
	a = find(s->addrs, ip);
	if (!a || ip - a->addr >= HA_SYM_MAX_SIZE || !a->text)
		return NULL;
	if (a->module) {
		/* a module of unknown core: not across a known one's */
		return mod_at(s, a->addr, &i) ? NULL : a;
	}
	if (s->text_hi && !(ip >= s->text_lo && ip < s->text_hi) &&
	    !(s->init_hi && ip >= s->init_lo && ip < s->init_hi))
		return NULL;
	return a;
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

/* ---- stack ids --------------------------------------------------------------- */

bool ha_resolve_stack_id(HaStore *s, int64_t boot, uint32_t id, uint64_t ts_min,
			 uint64_t ts_max, HaStackIdStack *ret, GError **error)
{
	uint32_t tag = smp_id_tag(id);
	uint64_t start;
	int64_t epoch;
	bool older;

	*ret = (HaStackIdStack){ .result = HA_STACK_ID_NO_EPOCH, .epoch = -1 };
	if (!ha_store_epoch_at(s, boot, tag, ts_max, &epoch, &start, error))
		return false;
	if (epoch < 0)
		return true;
	if (start > ts_min) {
		if (!ha_store_epoch_older(s, boot, tag, epoch, &older, error))
			return false;
		if (older) {
			ret->result = HA_STACK_ID_SPAN;
			return true;
		}
	}
	ret->epoch = epoch;
	if (!ha_store_stack_ips(s, boot, epoch, id, &ret->ips, error))
		return false;
	ret->result = ret->ips ? HA_STACK_ID_RESOLVED : HA_STACK_ID_NO_STACK;
	return true;
}
