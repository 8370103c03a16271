// SPDX-License-Identifier: MIT
/* report-top.c - top and folded: stacks by event count (report-int.h). */
#include "report-int.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hist.h"
#include "store-ingest.h"

typedef struct {
	int64_t boot;
	uint64_t count;
	guint ids;		/* stack ids and full stacks merged into this entry */
	HaRpStack st;
	char *key;
} Entry;

static void entry_free(gpointer p)
{
	Entry *e = p;

	ha_rp_stack_clear(&e->st);
	g_free(e->key);
	g_free(e);
}

static int entry_cmp(gconstpointer a, gconstpointer b)
{
	const Entry *x = *(Entry *const *)a, *y = *(Entry *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return g_strcmp0(x->key, y->key);
}

/* "BOOT:ip,ip,...": one key for one stack of a boot, whatever epoch's stack id or
 * full stack event carried it. */
static char *frames_key(int64_t boot, const HaRpStack *st)
{
	GString *k = g_string_new(NULL);

	g_string_printf(k, "%" PRId64 ":", boot);
	for (guint i = 0; st->ips && i < st->ips->len; i++)
		g_string_append_printf(k, "%" PRIx64 ",", g_array_index(st->ips, uint64_t, i));
	return g_string_free(k, FALSE);
}

static void add_entry(GHashTable *by_key, int64_t boot, HaRpStack *st, uint64_t count,
		      const HaSyms *syms, bool merge_symbolic)
{
	g_autofree char *key = NULL;
	Entry *e;

	if (merge_symbolic)
		key = ha_rp_folded(st, syms);
	else if (st->kind == ST_MAP || st->kind == ST_FULL)
		key = frames_key(boot, st);
	else if (st->kind == ST_NONE)
		key = g_strdup_printf("%" PRId64 ":%s", boot, st->why ? "pending" : "none");
	else if (st->kind == ST_LOST)
		key = g_strdup_printf("%" PRId64 ":lost", boot);
	else
		key = g_strdup_printf("%" PRId64 ":u%" PRId64 ":%s", boot, st->sid, st->why);
	e = g_hash_table_lookup(by_key, key);
	if (e) {
		e->count += count;
		e->ids++;
		ha_rp_stack_clear(st);
		return;
	}
	e = g_new0(Entry, 1);
	e->boot = boot;
	e->count = count;
	e->ids = 1;
	e->st = *st;
	memset(st, 0, sizeof(*st));
	e->key = g_steal_pointer(&key);
	g_hash_table_insert(by_key, e->key, e);
}

static bool resolve_ent(HaStore *s, int64_t boot, const HaHistEnt *e, HaRpStack *ret,
			GError **error)
{
	memset(ret, 0, sizeof(*ret));
	if (e->kind == HA_HIST_NONE) {
		ret->kind = ST_NONE;
		ret->why = e->pending ? HA_RP_WHY_PENDING : NULL;
		return true;
	}
	if (e->kind == HA_HIST_ID)
		return ha_rp_resolve_map(s, boot, (uint32_t)(e->id & 0x7fffffff), e->ts_min,
					 e->ts_max, ret, error);
	return ha_rp_resolve_full(s, e->id, ret, error);
}

static int ent_cmp(gconstpointer a, gconstpointer b)
{
	const HaHistEnt *x = a, *y = b;

	return x->count > y->count ? -1 : x->count < y->count;
}

static void add_count(uint64_t key, uint64_t count, uint64_t ts_min, uint64_t ts_max,
		      void *user)
{
	GArray *ents = user;
	HaHistEnt e = { .count = count, .ts_min = ts_min, .ts_max = ts_max };

	ha_hist_from_key(key, &e);
	g_array_append_val(ents, e);
}

/*
 * Add the stack counts of @boot to @by_key, one entry per stack (by its frames, so
 * the ids of one stack in many epochs are one entry), resolved in decreasing order
 * of their event count, only the first @resolve_limit when no two keys of the boot
 * can be the same stack (then that order is final); *ret_total and *ret_distinct
 * count all, *ret_merged is set when every key was resolved to merge them.
 */
static bool collect(HaStore *s, int64_t boot, GHashTable *by_key, const HaSyms *syms,
		    bool merge_symbolic, guint resolve_limit, uint64_t *ret_total,
		    guint *ret_distinct, bool *ret_merged, GError **error)
{
	g_autoptr(GArray) ents = g_array_new(FALSE, FALSE, sizeof(HaHistEnt));
	bool may_merge;

	if (!ha_store_counts_foreach(s, boot, add_count, ents, error))
		return false;
	for (guint i = 0; i < ents->len; i++)
		*ret_total += g_array_index(ents, HaHistEnt, i).count;
	{
		g_autoptr(GHashTable) p = ha_rp_pending_events(s, boot, error);

		if (!p)
			return false;
		if (g_hash_table_size(p)) {
			HaHistEnt e = { .kind = HA_HIST_NONE, .count = g_hash_table_size(p),
					.pending = true };

			*ret_total += e.count;
			g_array_append_val(ents, e);
		}
	}
	*ret_distinct += ents->len;
	/* Two of the boot's keys can carry the same stack when it has many epochs (the
	 * map hands out one id per stack within an epoch, but each reset starts a new
	 * epoch whose ids carry the old stacks again) or full stacks (a stack the map
	 * had no room for is stored whole). */
	if (!merge_symbolic && !ha_store_keys_may_merge(s, boot, &may_merge, error))
		return false;
	if (merge_symbolic || may_merge) {
		resolve_limit = G_MAXUINT;
		*ret_merged = true;
	}
	g_array_sort(ents, ent_cmp);
	for (guint i = 0; i < ents->len && i < resolve_limit; i++) {
		HaHistEnt *e = &g_array_index(ents, HaHistEnt, i);
		HaRpStack stk;

		if (!resolve_ent(s, boot, e, &stk, error))
			return false;
		add_entry(by_key, boot, &stk, e->count, syms, merge_symbolic);
	}
	return true;
}

typedef struct {
	GString *names;
	guint n;
} Refused;

static void add_refused(const char *name, const void *text, size_t len, bool refused,
			void *user)
{
	Refused *r = user;
	g_autofree char *esc = NULL;

	(void)text;
	(void)len;
	if (!refused)
		return;
	esc = g_strescape(name ? name : "", NULL);
	if (r->n++ < 8)
		g_string_append_printf(r->names, "%s%s", r->n > 1 ? ", " : "", esc);
}

/* On stderr (never in the report): the event formats of @boot the host refused, whose
 * events are counted by their stacks like any other but have no decoded fields. */
static bool note_refused_formats(HaStore *s, int64_t boot, GError **error)
{
	g_autoptr(GString) names = g_string_new(NULL);
	Refused r = { .names = names };

	if (!ha_store_formats_foreach(s, boot, add_refused, &r, error))
		return false;
	if (r.n)
		g_printerr("host-agent report: boot %" PRId64 ": the host refused %u event"
			   " format(s) (%s%s): their events are counted by their stacks, `report"
			   " events` shows them with their fields not decoded\n", boot, r.n,
			   names->str, r.n > 8 ? ", ..." : "");
	return true;
}

/* The stacks of the boots @ids counted, one entry per stack of a boot (merged by
 * symbolic stack across boots when @merge), sorted: what top and folded print. Free
 * with stacks_clear(). */
typedef struct {
	GHashTable *by_key;	/* Entry, owns them */
	GPtrArray *v;		/* Entry, sorted by count */
	GHashTable *syms_by_boot;
	uint64_t total;
	guint distinct;
} Stacks;

static void stacks_clear(Stacks *t)
{
	g_clear_pointer(&t->v, g_ptr_array_unref);
	g_clear_pointer(&t->by_key, g_hash_table_unref);
	g_clear_pointer(&t->syms_by_boot, g_hash_table_unref);
}

static bool stacks_collect(HaStore *s, GArray *ids, HaDwarf *dw, bool merge, guint limit,
			   Stacks *t, GError **error)
{
	GHashTableIter it;
	gpointer k, val;
	bool merged = false;

	t->by_key = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, entry_free);
	t->syms_by_boot = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
						(GDestroyNotify)ha_syms_free);
	for (guint i = 0; i < ids->len; i++) {
		int64_t b = g_array_index(ids, int64_t, i);
		HaSyms *syms = ha_rp_load_syms(s, b, dw, error);

		if (!syms)
			return false;
		g_hash_table_insert(t->syms_by_boot, g_memdup2(&b, sizeof(b)), syms);
		if (!note_refused_formats(s, b, error) ||
		    !collect(s, b, t->by_key, syms, merge, limit, &t->total, &t->distinct,
			     &merged, error))
			return false;
	}
	t->v = g_ptr_array_new();
	g_hash_table_iter_init(&it, t->by_key);
	while (g_hash_table_iter_next(&it, &k, &val))
		g_ptr_array_add(t->v, val);
	g_ptr_array_sort(t->v, entry_cmp);
	if (merged)
		t->distinct = t->v->len;	/* after merging (by frames, or by symbolic stack) */
	return true;
}

bool ha_report_folded(HaStore *store, int64_t boot, HaReportFoldedFn fn, void *user,
		      GError **error)
{
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
	Stacks t = { 0 };
	bool ok;

	g_array_append_val(ids, boot);
	ok = stacks_collect(store, ids, NULL, true, G_MAXUINT, &t, error);
	for (guint i = 0; ok && i < t.v->len; i++) {
		Entry *e = t.v->pdata[i];
		g_autofree char *f = ha_rp_folded(&e->st, g_hash_table_lookup(t.syms_by_boot,
									   &e->boot));

		fn(f, e->count, user);
	}
	stacks_clear(&t);
	return ok;
}

static bool top(HaStore *s, const HaReportOpts *o, HaDwarf *dw, bool as_folded,
		GString *out, GError **error)
{
	HaJsonArray arr;
	g_autoptr(GArray) ids = ha_rp_select_boots(s, o->boot, error);
	guint limit = as_folded ? G_MAXUINT : (o->limit ? o->limit : HA_RP_TOP_DEFAULT);
	bool merge = as_folded || (ids && ids->len > 1);
	Stacks t = { 0 };
	GPtrArray *v;
	uint64_t total;
	guint distinct;

	if (!ids)
		return false;
	if (!stacks_collect(s, ids, dw, merge, limit, &t, error)) {
		stacks_clear(&t);
		return false;
	}
	v = t.v;
	total = t.total;
	distinct = t.distinct;
	if (o->json) {
		g_autoptr(JsonBuilder) head = json_builder_new();

		json_builder_begin_object(head);
		ha_json_member_u64(head, "events", total);
		ha_json_array_begin(&arr, out, head, "stacks");
	}
	else if (!as_folded)
		g_string_append_printf(out, "%" PRIu64 " events in %u distinct stacks (%s)\n",
				       total, distinct, ids->len > 1 ? "all boots, merged by"
				       " symbolic stack" : "one boot");
	for (guint i = 0; i < v->len && i < limit; i++) {
		Entry *e = v->pdata[i];
		HaSyms *syms = g_hash_table_lookup(t.syms_by_boot, &e->boot);

		if (o->json) {
			g_autofree char *f = ha_rp_folded(&e->st, syms);
			g_autoptr(JsonBuilder) j = json_builder_new();

			json_builder_begin_object(j);
			ha_json_member_u64(j, "count", e->count);
			ha_json_member_int(j, "boot", e->boot);
			ha_json_member_int(j, "ids", e->ids);
			ha_json_member_str(j, "folded", f);
			json_builder_set_member_name(j, "stack");
			ha_rp_json_stack(j, &e->st, syms);
			json_builder_end_object(j);
			ha_json_array_add(&arr, j);
		} else if (as_folded) {
			g_autofree char *f = ha_rp_folded(&e->st, syms);

			g_string_append_printf(out, "%s %" PRIu64 "\n", f, e->count);
		} else {
			g_autofree char *l = ha_rp_stack_label(&e->st);
			g_autofree char *more = e->ids > 1 && !merge ?
				g_strdup_printf(" and %u more ids of this stack (other epochs,"
						" full stacks)", e->ids - 1) : NULL;

			g_string_append_printf(out, "\n#%-3u %10" PRIu64 " events %5.1f%%  %s%s\n",
					       i + 1, e->count,
					       total ? 100.0 * (double)e->count / (double)total : 0,
					       l, more ? more : "");
			ha_rp_print_frames(out, &e->st, syms, "             ");
		}
	}
	if (o->json)
		ha_json_array_end(&arr);
	stacks_clear(&t);
	return true;
}

bool ha_rp_top(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
	       GError **error)
{
	return top(s, o, dw, false, out, error);
}

bool ha_rp_folded_report(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
			 GError **error)
{
	return top(s, o, dw, true, out, error);
}

