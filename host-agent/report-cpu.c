// SPDX-License-Identifier: MIT
/* report-cpu.c - ha_report_cpu_events(): one CPU's events, for replication (report.h). */
#include "report-int.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk.h"
#include "pagewalk.h"

typedef struct {
	uint64_t page;
	uint32_t idx;
} EvWhere;

typedef struct {
	HaTep *tep;
	HaPair *pair;
	HaSyms *syms;
	HaRpEvCtx x;
	uint64_t page;		/* the page being walked (ordinal) */
	uint32_t idx;		/* the next event's ordinal in it */
	uint64_t from, to;	/* the pages whose events are given */
	uint64_t tail;		/* the first page of the CPU's last chunk */
	guint waiting;		/* events of pages from..to-1 not finished yet */
	GHashTable *where;	/* text (the pairer's per-event pointer) -> EvWhere */
	HaReportEventFn fn;
	void *user;
	GArray *gaps;		/* this CPU's of ha_report_gaps(), or NULL */
	guint gap_next;		/* the first of them not yet passed */
} CpuWalk;

static void cpu_paired(const HaPaired *p, void *user)
{
	CpuWalk *c = user;
	EvWhere *w = p->text ? g_hash_table_lookup(c->where, p->text) : NULL;
	g_autoptr(JsonBuilder) js = NULL;
	g_autofree char *stack_json = NULL;
	g_autofree char *fold = NULL;
	HaReportEvent r;
	HaRpEv *e;

	if (!w)
		return;		/* a stack event's own (no text) */
	if (w->page < c->from || w->page >= c->to) {
		g_hash_table_remove(c->where, p->text);
		return;
	}
	c->waiting--;
	ha_rp_on_paired(p, &c->x);	/* as ha_rp_events() makes its HaRpEv */
	e = &g_array_index(c->x.evs, HaRpEv, c->x.evs->len - 1);
	js = json_builder_new();
	ha_rp_json_stack(js, &e->st, c->syms);
	stack_json = ha_json_to_string(js);
	fold = ha_rp_folded(&e->st, c->syms);
	r = (HaReportEvent){ .page = w->page, .idx = w->idx, .ts = e->ts, .cpu = e->cpu,
			     .pid = e->pid, .text = e->text ? e->text : "",
			     .stack_json = stack_json, .folded = fold,
			     .stack_kind = ha_rp_stack_kinds[e->st.kind],
			     .stack_id = e->st.kind == ST_NONE || e->st.kind == ST_LOST ? -1 :
					 e->st.sid,
			     .epoch = e->st.kind == ST_MAP || e->st.kind == ST_UNRESOLVED ?
				      e->st.epoch : -1,
			     .tail = w->page >= c->tail,
			     .waiting = e->st.why == HA_RP_WHY_PENDING,
			     .recovered = e->recovered };
	c->fn(&r, c->user);
	g_array_set_size(c->x.evs, 0);
	g_hash_table_remove(c->where, p->text);
}

/* A clock probe's marker is the agent's, not a traced event: neither given nor
 * paired, as events skips it (it keeps its ordinal: the others' keys stay). */
static void cpu_marker(const HaEvent *ev, uint32_t cpu, uint64_t probe, void *user)
{
	CpuWalk *c = user;

	(void)ev;
	(void)cpu;
	(void)probe;
	c->idx++;
}

static char *cpu_event(const HaEvent *ev, uint32_t cpu, void *user)
{
	CpuWalk *c = user;
	char *text = NULL;

	if (ev->kind == HA_EV_OTHER) {
		EvWhere *w = g_new(EvWhere, 1);

		ha_rp_pass_gaps(c->pair, cpu, c->gaps, &c->gap_next, ev->ts);
		text = ha_tep_format_event(c->tep, ev);
		if (!text)
			text = g_strdup("");	/* events prints "" for it too */
		w->page = c->page;
		w->idx = c->idx;
		g_hash_table_insert(c->where, text, w);
		if (c->page >= c->from && c->page < c->to)
			c->waiting++;
	}
	c->idx++;
	return text;
}

bool ha_report_cpu_events(HaStore *s, int64_t boot, uint32_t cpu, uint64_t from,
			  uint64_t to, HaReportEventFn fn, void *user, uint64_t *ret_pages,
			  GError **error)
{
	g_autoptr(GArray) chunks = g_array_new(FALSE, FALSE, sizeof(HaStoreChunkPos));
	g_autoptr(GArray) first = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(HaRpEv));
	g_autoptr(GHashTable) where = g_hash_table_new_full(g_direct_hash, g_direct_equal,
							    NULL, g_free);
	g_auto(HaRpBoot) b = { 0 };
	g_autoptr(HaPair) pair = NULL;
	CpuWalk c = { .from = from, .to = to, .where = where, .fn = fn, .user = user };
	HaPageWalk w = { .on_marker = cpu_marker, .on_event = cpu_event, .user = &c };
	bool own_txn = !ha_store_in_txn(s), ok = false;
	uint64_t pages = 0;
	guint i, start = 0;

	if (own_txn && !ha_store_read_begin(s, error))	/* one snapshot */
		return false;
	g_array_set_clear_func(evs, ha_rp_ev_clear);
	if (!ha_store_cpu_chunks(s, boot, cpu, chunks, error))
		goto out;
	for (i = 0; i < chunks->len; i++) {
		g_array_append_val(first, pages);
		pages += g_array_index(chunks, HaStoreChunkPos, i).nr_pages;
	}
	*ret_pages = pages;
	if (to > pages)
		to = c.to = pages;
	if (from >= to) {
		ok = true;
		goto out;
	}
	c.tail = chunks->len ? g_array_index(first, uint64_t, chunks->len - 1) : 0;
	/* from the chunk that holds the page before @from: its events pair with ours */
	while (start + 1 < chunks->len &&
	       g_array_index(first, uint64_t, start + 1) < MAX(from, 1))
		start++;
	if (!ha_rp_boot_load(s, boot, NULL, &b, error))
		goto out;
	c.gaps = cpu < b.gaps->len ? b.gaps->pdata[cpu] : NULL;
	pair = ha_pair_new(cpu_paired, &c);
	c.tep = b.tep;
	c.pair = pair;
	c.syms = b.syms;
	c.x = (HaRpEvCtx){ .evs = evs, .store = s, .boot = boot, .pending = b.pending,
			   .recovered_from = b.recovered_from };
	w.tep = b.tep;
	w.pair = pair;
	w.marker = &b.marker;
	/* up to the chunk that holds page @to, and on while an event of ours waits */
	for (i = start; i < chunks->len; i++) {
		g_autoptr(GBytes) data = NULL;
		g_autoptr(GBytes) raw = NULL;
		const uint8_t *page;
		uint32_t len;
		size_t off = 0;
		int64_t chunk_cpu;

		if (g_array_index(first, uint64_t, i) > to && !c.waiting)
			break;
		if (!ha_store_chunk_data(s, g_array_index(chunks, HaStoreChunkPos, i).id,
					 &chunk_cpu, &data, error))
			goto out;
		if (data)
			raw = ha_chunk_decompress(g_bytes_get_data(data, NULL),
						  g_bytes_get_size(data), NULL);
		c.page = g_array_index(first, uint64_t, i);
		if (!raw) {
			/* what events skips (it says why on stderr) */
			continue;
		}
		while (ha_chunk_next_page(raw, &off, &page, &len)) {
			c.idx = 0;
			ha_pagewalk_page(&w, cpu, page, len, NULL);
			c.page++;
		}
		if (c.x.error) {
			g_propagate_error(error, g_steal_pointer(&c.x.error));
			goto out;
		}
	}
	if (i == chunks->len)
		ha_pair_flush(pair);	/* the CPU's end: as events finishes them */
	if (c.x.error) {
		g_propagate_error(error, g_steal_pointer(&c.x.error));
		goto out;
	}
	ok = true;
out:
	if (own_txn)
		ha_store_read_end(s);
	return ok;
}
