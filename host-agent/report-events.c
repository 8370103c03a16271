// SPDX-License-Identifier: MIT
/*
 * report-events.c - events: the last N events of a boot with their stacks (text, JSON,
 * perf-script, folded), and the decoding of a boot's pages the event reports share.
 */
#include "report-int.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk.h"
#include "clocksync.h"
#include "export-perf.h"
#include "pagewalk.h"
#include "proto.h"
#include "store-ingest.h"

/* What decoding a boot's pages does with each event (HaPageWalk.user). */
typedef struct {
	HaTep *tep;
	HaPair *pair;
	GPtrArray *gaps;	/* ha_report_gaps(), or NULL */
	guint *gap_next;	/* per CPU: the first gap not yet passed */
} WalkCtx;

void ha_rp_on_paired(const HaPaired *p, void *user)
{
	HaRpEvCtx *x = user;
	HaRpEv e = { .ts = p->ts, .cpu = p->cpu, .pid = p->pid, .text = g_strdup(p->text) };
	const GArray *rf = x->recovered_from;

	e.recovered = rf && p->cpu < rf->len && p->ts >= g_array_index(rf, guint64, p->cpu);

	if (p->stack == HA_STACK_ID) {
		g_autoptr(GError) err = NULL;

		if (!ha_rp_resolve_map(x->store, x->boot, p->stack_id, p->ts, p->ts, &e.st,
				       &err) && !x->error)
			x->error = g_steal_pointer(&err);
	} else if (p->stack == HA_STACK_LOST) {
		e.st.kind = ST_LOST;
	} else if (p->stack == HA_STACK_FULL) {
		e.st.kind = ST_FULL;
		e.st.sid = 0;
		e.st.ips = g_array_new(FALSE, FALSE, sizeof(uint64_t));
		g_array_append_vals(e.st.ips, p->ips, p->nr_ips);
	} else if (g_hash_table_size(x->pending)) {
		g_autofree char *k = ha_rp_pending_key(p->cpu, p->ts, p->pid);

		if (g_hash_table_contains(x->pending, k))
			e.st.why = HA_RP_WHY_PENDING;
	}
	g_array_append_val(x->evs, e);
}

static char *on_event(const HaEvent *ev, uint32_t cpu, void *user)
{
	WalkCtx *w = user;

	if (ev->kind != HA_EV_OTHER)
		return NULL;
	if (w->gaps && cpu < w->gaps->len)
		ha_rp_pass_gaps(w->pair, cpu, w->gaps->pdata[cpu], &w->gap_next[cpu], ev->ts);
	return ha_tep_format_event(w->tep, ev);
}

static int ev_cmp(gconstpointer a, gconstpointer b)
{
	const HaRpEv *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

void ha_rp_ev_clear(gpointer p)
{
	HaRpEv *e = p;

	g_free(e->text);
	ha_rp_stack_clear(&e->st);
}

/* %pS and friends as the kernel prints them, from the boot's kallsyms. */
static char *symbolize(uint64_t ip, char conv, void *syms)
{
	if (conv == 's' || conv == 'f')
		return ha_syms_format_name(syms, ip);
	/* %pB: the kernel looks up ip - 1 and prints the offset + 1; the same text
	 * unless the call was a function's last instruction (not told apart here). */
	return ha_syms_format(syms, ip);
}

static bool enum_value(const char *name, int64_t *ret, void *dw)
{
	return ha_dwarf_enum(dw, name, ret);
}

static void add_symbol(uint64_t addr, const char *name, const char *module, void *tep)
{
	ha_tep_add_symbol(tep, addr, name, module);
}

static void add_format(const char *name, const void *text, size_t len, bool refused,
		       void *tep)
{
	if (!name)
		return;
	if (refused)
		ha_tep_add_refused_text(tep, name, text, len);
	else
		ha_tep_add_format(tep, name, text, len, NULL);
}

/* The boot's formats and symbols in a new HaTep that prints with @syms (borrowed, must
 * outlive it) and the enum constants of @syms' DWARF when it has one. */
HaTep *ha_rp_load_tep(HaStore *s, int64_t boot, HaSyms *syms, GError **error)
{
	g_auto(HaStoreBootInfo) info = { 0 };
	g_autoptr(HaTep) t = NULL;

	if (!ha_store_boot_info(s, boot, &info, error))
		return NULL;
	if (!info.found)
		info.page_size = 4096;
	t = ha_tep_new(info.page_size, info.flags & SMP_HELLO_PAGES_BE);
	ha_tep_set_symbolizer(t, symbolize, syms);
	if (ha_syms_dwarf(syms))
		ha_tep_set_enum_resolver(t, enum_value, ha_syms_dwarf(syms));
	/* a refused text (never parsed again) names the events of its id in the report */
	if (!ha_store_formats_foreach(s, boot, add_format, t, error))
		return NULL;
	ha_syms_foreach(syms, add_symbol, t);	/* for libtraceevent's own %pS */
	return g_steal_pointer(&t);
}

bool ha_rp_load_marker(HaStore *s, int64_t boot, HaMarkerFormat *ret, GError **error)
{
	g_autoptr(GBytes) text = NULL;

	ret->type = -1;
	if (!ha_store_format_text(s, boot, "ftrace/print", &text, error))
		return false;
	if (text) {
		gsize len;
		const char *p = g_bytes_get_data(text, &len);

		if (!ha_marker_format_parse(p, len, ret))
			ret->type = -1;
	}
	return true;
}

static void first_ts(const HaEvent *ev, void *user)
{
	guint64 *ts = user;

	*ts = MIN(*ts, ev->ts);
}

typedef struct {
	HaTep *tep;
	GArray *from;		/* guint64 by CPU */
} RecoveredCtx;

static void recovered_chunk(uint32_t cpu, const void *data, size_t len, int64_t ts_min,
			    void *user)
{
	RecoveredCtx *r = user;
	g_autoptr(GBytes) raw = NULL;
	const uint8_t *page;
	uint32_t plen;
	size_t off = 0;
	guint64 ts = G_MAXUINT64, none = G_MAXUINT64;

	while (r->from->len <= cpu)
		g_array_append_val(r->from, none);
	if (g_array_index(r->from, guint64, cpu) != G_MAXUINT64)
		return;		/* the CPU's first recovered event is known */
	if (ha_tep_ready(r->tep))
		raw = ha_chunk_decompress(data, len, NULL);
	while (raw && ts == G_MAXUINT64 && ha_chunk_next_page(raw, &off, &page, &plen))
		ha_tep_walk_page(r->tep, page, plen, first_ts, &ts, NULL);
	/* pages that do not parse: the chunk's range, which may start earlier */
	if (ts == G_MAXUINT64 && ts_min >= 0)
		ts = (guint64)ts_min;
	g_array_index(r->from, guint64, cpu) = ts;
}

GArray *ha_rp_recovered_from(HaStore *s, int64_t boot, HaTep *tep, GError **error)
{
	g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(guint64));
	RecoveredCtx r = { .tep = tep, .from = a };

	if (!ha_store_recovered_chunks(s, boot, recovered_chunk, &r, error))
		return NULL;
	return g_steal_pointer(&a);
}

bool ha_rp_boot_load(HaStore *s, int64_t boot, HaDwarf *dw, HaRpBoot *ret, GError **error)
{
	*ret = (HaRpBoot){ .store = s, .boot = boot };
	ret->syms = ha_rp_load_syms(s, boot, dw, error);
	if (!ret->syms)
		return false;
	ret->tep = ha_rp_load_tep(s, boot, ret->syms, error);
	if (!ret->tep || !ha_rp_load_marker(s, boot, &ret->marker, error))
		return false;
	ret->pending = ha_rp_pending_events(s, boot, error);
	if (!ret->pending)
		return false;
	ret->gaps = ha_report_gaps(s, boot, error);
	if (!ret->gaps)
		return false;
	ret->recovered_from = ha_rp_recovered_from(s, boot, ret->tep, error);
	return ret->recovered_from != NULL;
}

void ha_rp_boot_clear(HaRpBoot *b)
{
	g_clear_pointer(&b->tep, ha_tep_free);
	g_clear_pointer(&b->syms, ha_syms_free);
	g_clear_pointer(&b->pending, g_hash_table_unref);
	g_clear_pointer(&b->gaps, g_ptr_array_unref);
	g_clear_pointer(&b->recovered_from, g_array_unref);
}

/* Host time as text: realtime and tai as a UTC date, the others in seconds. */
static void host_time_text(GString *out, HaHostClock clock, int64_t ns, uint64_t unc)
{
	if (clock == HA_HOSTCLOCK_REALTIME || clock == HA_HOSTCLOCK_TAI) {
		g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(ns / 1000000000);
		g_autofree char *d = dt ? g_date_time_format(dt, "%Y-%m-%d %H:%M:%S") : NULL;

		g_string_append_printf(out, "%s.%09" PRId64 "%s", d ? d : "?",
				       ns % 1000000000, clock == HA_HOSTCLOCK_TAI ? " TAI" :
				       " UTC");
	} else {
		g_string_append_printf(out, "%s %" PRId64 ".%09" PRId64, ha_host_clock_name(clock),
				       ns / 1000000000, ns % 1000000000);
	}
	g_string_append_printf(out, " +-%.1f us", (double)unc / 1000.0);
}

/* Is @text ("system/name: fields") an event @name ("system/name" or "name")? */
static bool event_is(const char *text, const char *name)
{
	const char *colon = text ? strstr(text, ": ") : NULL;
	const char *slash = text ? strchr(text, '/') : NULL;
	size_t n = strlen(name);

	if (!colon)
		return false;
	if ((size_t)(colon - text) == n && !strncmp(text, name, n))
		return true;
	return slash && slash < colon && (size_t)(colon - slash - 1) == n &&
	       !strncmp(slash + 1, name, n);
}

/* `folded` lines of the events @evs[@first..] (their own stacks). */
static void events_folded(GArray *evs, guint first, const HaSyms *syms, GString *out)
{
	g_autoptr(GHashTable) counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							     NULL);
	g_autoptr(GList) keys = NULL;

	for (guint i = first; i < evs->len; i++) {
		char *f = ha_rp_folded(&g_array_index(evs, HaRpEv, i).st, syms);
		gpointer v = g_hash_table_lookup(counts, f);

		g_hash_table_insert(counts, f, GSIZE_TO_POINTER(GPOINTER_TO_SIZE(v) + 1));
	}
	keys = g_list_sort(g_hash_table_get_keys(counts), (GCompareFunc)strcmp);
	for (GList *k = keys; k; k = k->next)
		g_string_append_printf(out, "%s %" G_GSIZE_FORMAT "\n", (char *)k->data,
				       GPOINTER_TO_SIZE(g_hash_table_lookup(counts, k->data)));
}

void ha_rp_pass_gaps(HaPair *pair, uint32_t cpu, const GArray *gaps, guint *next,
		     uint64_t ts)
{
	while (gaps && *next < gaps->len && ts > g_array_index(gaps, guint64, *next)) {
		ha_pair_lost(pair, cpu);
		(*next)++;
	}
}

static void add_gap(uint32_t cpu, uint64_t after_ts, void *user)
{
	GPtrArray *g = user;

	if (cpu >= g->len)
		g_ptr_array_set_size(g, (gint)cpu + 1);
	if (!g->pdata[cpu])
		g->pdata[cpu] = g_array_new(FALSE, FALSE, sizeof(guint64));
	g_array_append_val((GArray *)g->pdata[cpu], after_ts);
}

GPtrArray *ha_report_gaps(HaStore *s, int64_t boot, GError **error)
{
	g_autoptr(GPtrArray) g = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);

	if (!ha_store_gap_positions(s, boot, add_gap, g, error))
		return NULL;
	return g_steal_pointer(&g);
}

static bool ev_wanted(const HaReportOpts *o, const HaRpEv *e)
{
	return !((o->since_ns >= 0 && e->ts < (uint64_t)o->since_ns) ||
		 (o->until_ns >= 0 && e->ts > (uint64_t)o->until_ns) ||
		 (o->event && !event_is(e->text, o->event)));
}

static void perf_sample(const HaRpEv *e, const HaSyms *syms, GString *out)
{
	bool frames = e->st.ips && (e->st.kind == ST_MAP || e->st.kind == ST_FULL);

	ha_perf_script_sample(out, e->ts, e->cpu, e->pid, e->text,
			      frames ? (const uint64_t *)e->st.ips->data : NULL,
			      frames ? e->st.ips->len : 0, syms);
}

static void oldest_waiting(uint32_t cpu, uint64_t ts, int pid, void *user)
{
	uint64_t *min = user;

	*min = MIN(*min, ts);
}

/*
 * Streaming perf-script: write out (and forget) the decoded events older than @limit,
 * the oldest start of a chunk still to decode and of an event still waiting for its
 * stack; nothing decoded later can be older. Same order as sorting them all: the sort
 * is stable and events of one timestamp leave together. False on a write error.
 */
static bool perf_flush(GArray *evs, uint64_t limit, HaPair *pair, const HaReportOpts *o,
		       const HaSyms *syms, GString *buf)
{
	guint n = 0;

	ha_pair_foreach_waiting(pair, oldest_waiting, &limit);
	g_array_sort(evs, ev_cmp);
	while (n < evs->len && g_array_index(evs, HaRpEv, n).ts < limit) {
		const HaRpEv *e = &g_array_index(evs, HaRpEv, n++);

		if (ev_wanted(o, e))
			perf_sample(e, syms, buf);
	}
	g_array_remove_range(evs, 0, n);	/* ha_rp_ev_clear()s them */
	if (buf->len && fwrite(buf->str, 1, buf->len, o->stream) != buf->len)
		return false;
	g_string_truncate(buf, 0);
	return true;
}

/* A chunk to decode: where it goes in the merge (its start) and in its CPU's ring. */
typedef HaStoreChunkPos ChunkPos;

static int pos_ring_cmp(gconstpointer a, gconstpointer b)
{
	const ChunkPos *x = *(const ChunkPos *const *)a, *y = *(const ChunkPos *const *)b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->first_seq != y->first_seq)
		return x->first_seq > y->first_seq ? -1 : 1;	/* newest first, as @pos is */
	return x->id > y->id ? -1 : x->id < y->id;
}

/*
 * @pos is newest start first. A CPU's chunks must still be decoded in the order its
 * pages came (the pairing of an event with the stack event at the start of the next
 * page crosses chunks), and a chunk's start is not that order: a page of an idle CPU
 * can begin long before the pages sent ahead of it. Keep the slots each CPU has in
 * the merge and put its chunks into them by their first sequence number.
 */
static void in_ring_order(GArray *pos)
{
	g_autoptr(GPtrArray) by_ring = g_ptr_array_sized_new(pos->len);
	g_autofree ChunkPos *copy = g_memdup2(pos->data, (gsize)pos->len * sizeof(ChunkPos));
	g_autoptr(GHashTable) next = g_hash_table_new(g_int64_hash, g_int64_equal);
	g_autofree guint *start = g_new0(guint, pos->len + 1);

	for (guint i = 0; i < pos->len; i++)
		g_ptr_array_add(by_ring, &copy[i]);
	g_ptr_array_sort(by_ring, pos_ring_cmp);
	/* start of each CPU's run in by_ring, keyed by the CPU of the run's first entry */
	for (guint i = 0; i < by_ring->len; i++) {
		ChunkPos *c = g_ptr_array_index(by_ring, i);

		if (!g_hash_table_contains(next, &c->cpu)) {
			start[i] = i;
			g_hash_table_insert(next, &c->cpu, &start[i]);
		}
	}
	for (guint i = 0; i < pos->len; i++) {
		ChunkPos *slot = &g_array_index(pos, ChunkPos, i);
		guint *k = g_hash_table_lookup(next, &slot->cpu);
		const ChunkPos *c = g_ptr_array_index(by_ring, *k);

		*slot = *c;
		(*k)++;
	}
}

/* HaStoreChunkPosFn of the newest chunks: until they hold enough ring events. */
typedef struct {
	uint64_t have, enough;
	int64_t t;		/* their oldest start */
} Newest;

static bool newest_chunk(const HaStoreChunkPos *c, void *user)
{
	Newest *n = user;

	n->have += c->nr_events;
	n->t = MIN(n->t, (int64_t)c->ts_min);
	return n->have < n->enough;
}

/* The chunk @id of @b decoded into @w's pairer (*@ret_done false when there is no
 * such chunk or it does not inflate): false with @error on a store error. */
static bool decode_chunk(HaRpBoot *b, int64_t id, HaPageWalk *w, uint64_t *bad_pages,
			 bool *ret_done, GError **error)
{
	g_autoptr(GBytes) data = NULL;
	g_autoptr(GBytes) raw = NULL;
	g_autoptr(GError) e = NULL;
	const uint8_t *page;
	uint32_t len;
	size_t off = 0;
	int64_t cpu;

	*ret_done = false;
	if (!ha_store_chunk_data(b->store, id, &cpu, &data, error))
		return false;
	if (!data)
		return true;
	raw = ha_chunk_decompress(g_bytes_get_data(data, NULL), g_bytes_get_size(data), &e);
	if (!raw) {
		/* warnings go to stderr, never into the report (JSON included) */
		g_printerr("host-agent report: boot %" PRId64 ": chunk %" PRId64
			   " unreadable: %s\n", b->boot, id, e->message);
		return true;
	}
	*ret_done = true;
	while (ha_chunk_next_page(raw, &off, &page, &len)) {
		g_autoptr(GError) pe = NULL;

		if (ha_pagewalk_page(w, (uint32_t)cpu, page, len, &pe) < 0 &&
		    ++*bad_pages <= 10)
			g_printerr("host-agent report: boot %" PRId64 ": chunk %" PRId64
				   ": unparsable page: %s\n", b->boot, id,
				   pe ? pe->message : "?");
	}
	return true;
}

bool ha_rp_decode(HaRpBoot *b, const HaRpDecode *d, GArray *evs, GError **error)
{
	HaStore *s = b->store;
	g_autoptr(GArray) pos = g_array_new(FALSE, FALSE, sizeof(ChunkPos));
	g_autoptr(GArray) chunks = g_array_new(FALSE, FALSE, sizeof(int64_t));
	g_autoptr(GArray) older = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	g_autofree guint *gap_next = g_new0(guint, b->gaps->len + 1);
	HaRpEvCtx x = { .evs = evs, .store = s, .boot = b->boot, .pending = b->pending,
			.recovered_from = b->recovered_from };
	g_autoptr(HaPair) pair = ha_pair_new(ha_rp_on_paired, &x);
	WalkCtx wc = { .tep = b->tep, .pair = pair, .gaps = b->gaps, .gap_next = gap_next };
	HaPageWalk w = { .tep = b->tep, .pair = pair, .marker = &b->marker,
			 .on_event = on_event, .user = &wc };
	uint64_t run = UINT64_MAX, bad_pages = 0;
	int64_t since = d->since_ns >= 0 ? d->since_ns : 0;
	bool ok = false;
	HaRpProgress pr;

	/*
	 * Which chunks: with a time range, every chunk that overlaps it. Otherwise the
	 * newest chunks until they hold enough ring events (stack events count too),
	 * which gives a time T (their oldest start) after which there are enough; then
	 * every chunk of any CPU that reaches past T, so that no CPU's events after T are
	 * missing from the merge. Decoded oldest first for the pairing.
	 */
	if (d->since_ns < 0 && d->until_ns < 0) {
		Newest n = { .enough = 2ull * d->want + 64, .t = INT64_MAX };

		if (!ha_store_chunks_newest(s, b->boot, d->cpu, newest_chunk, &n, error))
			return false;
		since = n.t == INT64_MAX ? 0 : n.t;
	}
	/* Chunks without a time range hold pages the daemon could not parse when they
	 * came (before the formats): decoded too, they may parse now, or are counted
	 * as unparsable on stderr. */
	if (!ha_store_chunks_range(s, b->boot, d->cpu, since,
				   d->until_ns >= 0 ? d->until_ns : INT64_MAX, pos, error))
		return false;
	in_ring_order(pos);
	for (guint i = 0; i < pos->len; i++) {
		const ChunkPos *c = &g_array_index(pos, ChunkPos, i);

		/* older[i]: the oldest start of chunks 0..i-1, those decoded after chunk
		 * i (a chunk of unparsed pages, without a range, counts as 0). Decoded by
		 * their start, so that it keeps moving (by their end, a chunk of an idle
		 * CPU spanning the boot would hold it), but each CPU's in ring order. */
		g_array_append_val(chunks, c->id);
		g_array_append_val(older, run);
		run = MIN(run, c->ts_min);
	}
	ha_rp_progress_init(&pr, "decoding pages");
	for (guint i = chunks->len; i-- > 0;) {
		bool done;

		if (!decode_chunk(b, g_array_index(chunks, int64_t, i), &w, &bad_pages, &done,
				  error))
			goto out;
		if (x.error) {
			g_propagate_error(error, g_steal_pointer(&x.error));
			goto out;
		}
		if (!done)
			continue;
		ha_rp_progress_tick(&pr, chunks->len - i, chunks->len);
		if (d->chunk_done && !d->chunk_done(evs, g_array_index(older, uint64_t, i), pair,
						    d->user)) {
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
				    "writing the report: %s", g_strerror(errno));
			goto out;
		}
	}
	ha_rp_progress_end(&pr);
	if (bad_pages > 10)
		g_printerr("host-agent report: boot %" PRId64 ": %" PRIu64 " unparsable pages"
			   " in all\n", b->boot, bad_pages);
	ha_pair_flush(pair);
	if (x.error) {
		g_propagate_error(error, g_steal_pointer(&x.error));
		return false;
	}
	g_array_sort(evs, ev_cmp);
	return true;
out:
	ha_rp_progress_end(&pr);
	g_clear_error(&x.error);
	return ok;
}

void ha_rp_event_json(JsonBuilder *j, const HaRpEv *e, const HaSyms *syms,
		      const HaRpHostTime *host)
{
	json_builder_begin_object(j);
	ha_json_member_u64(j, "ts", e->ts);
	ha_json_member_int(j, "cpu", e->cpu);
	ha_json_member_int(j, "pid", e->pid);
	if (host) {
		json_builder_set_member_name(j, "host_time");
		json_builder_begin_object(j);
		ha_json_member_str(j, "clock", ha_host_clock_name(host->clock));
		ha_json_member_int(j, "ns", host->ns);
		ha_json_member_u64(j, "uncertainty_ns", host->unc);
		json_builder_end_object(j);
	}
	ha_json_member_str(j, "event", e->text);
	json_builder_set_member_name(j, "stack");
	ha_rp_json_stack(j, &e->st, syms);
	json_builder_set_member_name(j, "recovered");
	json_builder_add_boolean_value(j, e->recovered);
	json_builder_end_object(j);
}

void ha_rp_event_text(GString *out, const HaRpEv *e, const HaSyms *syms,
		      const HaRpHostTime *host, bool mark_streamed)
{
	g_autofree char *l = ha_rp_stack_label(&e->st);

	g_string_append_printf(out, "\n%" PRIu64 ".%09" PRIu64 " ", e->ts / 1000000000u,
			       e->ts % 1000000000u);
	if (host) {
		g_string_append(out, "[host ");
		host_time_text(out, host->clock, host->ns, host->unc);
		g_string_append(out, "] ");
	}
	g_string_append_printf(out, "cpu%u pid %d%s  %s\n    %s\n", e->cpu, e->pid,
			       e->recovered ? " [recovered]" : mark_streamed ? " [streamed]" : "",
			       e->text ? e->text : "?", l);
	ha_rp_print_frames(out, &e->st, syms, "      ");
}

/* HaRpDecode.chunk_done of the streaming perf-script. */
typedef struct {
	const HaReportOpts *o;
	const HaSyms *syms;
	GString *buf;
} PerfStream;

static bool perf_chunk_done(GArray *evs, uint64_t limit, HaPair *pair, void *user)
{
	PerfStream *p = user;

	return perf_flush(evs, limit, pair, p->o, p->syms, p->buf);
}

bool ha_rp_events(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		  GError **error)
{
	HaJsonArray arr;
	g_autoptr(GArray) ids = ha_rp_select_boots(s, o->boot, error);
	bool perf = !g_strcmp0(o->format, "perf-script");
	bool as_folded = !g_strcmp0(o->format, "folded");
	guint want = o->limit ? o->limit : perf || as_folded ? G_MAXUINT : HA_RP_EVENTS_DEFAULT;
	int64_t boot;
	g_auto(HaRpBoot) b = { 0 };
	g_autoptr(GString) buf = g_string_new(NULL);
	bool streaming = perf && !o->limit && o->stream;
	g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(HaRpEv));
	g_autofree char *uuid = NULL;
	g_autoptr(HaClockMap) clk = NULL;
	HaHostClock hclock = HA_HOSTCLOCK_REALTIME;
	PerfStream ps = { .o = o, .buf = buf };
	HaRpDecode d = { .cpu = -1, .want = want, .since_ns = o->since_ns,
			 .until_ns = o->until_ns };
	guint first;

	if (!ids)
		return false;
	if (o->host_time && !ha_host_clock_parse(o->host_time, &hclock)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "--host-time %s: not realtime, mono, boot or tai", o->host_time);
		return false;
	}
	if (ids->len != 1) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "events reports one boot at a time");
		return false;
	}
	boot = g_array_index(ids, int64_t, 0);
	g_array_set_clear_func(evs, ha_rp_ev_clear);
	if (!ha_rp_boot_load(s, boot, dw, &b, error))
		return false;
	if (o->host_time) {
		clk = ha_clockmap_load(s, boot, error);
		if (!clk)
			return false;
		if (!ha_clockmap_points(clk))
			g_printerr("host-agent report: boot %" PRId64 " has no host time (its"
				   " guest agent never answered a clock probe)\n", boot);
	}
	if (streaming) {
		ps.syms = b.syms;
		d.chunk_done = perf_chunk_done;
		d.user = &ps;
	}
	if (!ha_rp_decode(&b, &d, evs, error))
		return false;
	if (o->since_ns >= 0 || o->until_ns >= 0 || o->event) {
		guint keep = 0;

		for (guint i = 0; i < evs->len; i++) {
			HaRpEv *e = &g_array_index(evs, HaRpEv, i);

			if (!ev_wanted(o, e)) {
				ha_rp_ev_clear(e);
				continue;
			}
			g_array_index(evs, HaRpEv, keep++) = *e;
		}
		g_array_set_clear_func(evs, NULL);
		g_array_set_size(evs, keep);
		g_array_set_clear_func(evs, ha_rp_ev_clear);
	}
	first = evs->len > want ? evs->len - want : 0;
	uuid = ha_rp_boot_uuid(s, boot, error);
	if (!uuid)
		return false;
	if (as_folded) {
		events_folded(evs, first, b.syms, out);
		return true;
	}
	if (streaming) {
		/* what the last flush kept: the events still waiting, now finished */
		for (guint i = 0; i < evs->len; i++)
			perf_sample(&g_array_index(evs, HaRpEv, i), b.syms, buf);
		if (buf->len && fwrite(buf->str, 1, buf->len, o->stream) != buf->len) {
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
				    "writing the report: %s", g_strerror(errno));
			return false;
		}
		return true;
	}
	if (perf) {
		for (guint i = first; i < evs->len; i++)
			perf_sample(&g_array_index(evs, HaRpEv, i), b.syms, out);
		return true;
	}
	if (o->json) {
		g_autoptr(JsonBuilder) head = json_builder_new();

		json_builder_begin_object(head);
		ha_json_member_int(head, "boot", boot);
		ha_json_array_begin(&arr, out, head, "events");
	} else
		g_string_append_printf(out, "last %u events of boot %" PRId64 " (%s), oldest"
				       " first:\n", evs->len - first, boot, uuid);
	for (guint i = first; i < evs->len; i++) {
		const HaRpEv *e = &g_array_index(evs, HaRpEv, i);
		HaRpHostTime h = { .clock = hclock };
		bool host = clk && ha_clockmap_to_host(clk, e->ts, hclock, &h.ns, &h.unc);

		if (o->json) {
			g_autoptr(JsonBuilder) j = json_builder_new();

			ha_rp_event_json(j, e, b.syms, host ? &h : NULL);
			ha_json_array_add(&arr, j);
		} else {
			ha_rp_event_text(out, e, b.syms, host ? &h : NULL, false);
		}
	}
	if (o->json)
		ha_json_array_end(&arr);
	return true;
}
