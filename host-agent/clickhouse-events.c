// SPDX-License-Identifier: MIT
/*
 * clickhouse-events.c - a boot's events as ClickHouse rows, incrementally.
 *
 * Each CPU's stored pages are numbered in chunk id order (report.h,
 * ha_report_cpu_events()), so an event is (host, domain, boot, cpu, page, idx) for
 * good, whatever compaction does: the key of `events`, a ReplacingMergeTree(version).
 * Per CPU the watermark (key "ev<id>.cpu<N>" of the store's group in <store>.ship) is
 *
 *   F P O U...   F: the pages below F were sent final; P: the pages the CPU had when
 *                last sent; O: 1 when U overflowed; U: pages below F that had an
 *                event whose stack was unresolved (its delta may come later) or
 *                waiting at the stream's end (the boot's pairing state may let it go:
 *                off the newest chunk only when its context traced nothing since, e.g.
 *                a task's trace_marker write then a chunk of interrupts' events alone
 *                (pair.h), or in a pairing state an older host stored)
 *
 * and per boot "ev<id>" is a signature of what can change a sent event: how the boot
 * ended, its stack, epoch, text and full-stack counts and its pairing state. A round
 * sends pages F.. in windows of WINDOW_PAGES (bounded memory: one window's rows, at
 * most HA_CH_FLUSH_BYTES per table at a time); pages of a CPU's newest chunk are
 * sent but stay above F (the next chunk, or the end of the stream, may pair their
 * events), and are sent again when P or the signature moved, with a newer version.
 * When the signature moved the U pages are sent again too, and those still waiting
 * stay in U wherever they are: a merge of small chunks (compact.h) may make the
 * CPU's newest chunk start below F again, and a page below F is sent again only
 * from U. Once the boot ended, a CPU whose U overflowed (more than MAX_UNRESOLVED
 * pages, found sending F.. or sending U again) is sent again from page 0, and U is
 * what still waits then. A boot keeps its U pages however it ended, the last
 * chunk's included: a disconnected boot may resume and bring their stacks, a crashed
 * one's post-mortem (postmortem.h) replays what was not streamed after the end,
 * which may pair or resolve them (both move the signature: its end, its counts, its
 * pairing state). An event whose stack never comes is sent as such (its stack
 * object says unresolved or waiting, and why), never left out. The watermark moves
 * only after ClickHouse confirmed a window's rows: a kill at any instant sends a
 * window again, the same keys, which the newer version replaces: no loss, no
 * duplicate.
 */
#include "clickhouse-rows.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <stdio.h>

#include "clocksync.h"
#include "report.h"
#include "store-fleet.h"

#define WINDOW_PAGES	256u
#define MAX_UNRESOLVED	256u	/* U pages per CPU remembered */
#define MAX_SENT_STACKS	65536u	/* stacks remembered as sent during one ship */
#define RUN_GAP		64u	/* U pages closer than this are sent as one range */

typedef struct {
	HaChBatch ev;
	HaChBatch stk;
	const char *host;
	const char *domain;
	const char *boot_id;
	HaClockMap *clock;	/* the boot's clock samples (clocksync.h), maybe none */
	int64_t host0_us;	/* without: host real time of the boot's first contact */
	uint64_t ts0;		/* and the guest time of its first stored event */
	uint64_t version;	/* 0 until this ship sends something */
	bool ended;
	GHashTable *sent;	/* stack hashes sent in this ship (uint64_t *) */
	uint64_t tail_first;	/* the first page of a CPU's newest chunk seen, or MAX */
	GArray *unres;		/* uint64_t pages with an unresolved event */
	GError *error;		/* a failed flush in the callback */
	HaShipStats *st;
} EvShip;

/* FNV-1a, 64 bits: the stack's key in event_stacks, from its JSON. */
static uint64_t stack_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static void on_event(const HaReportEvent *e, void *user)
{
	EvShip *x = user;
	uint64_t key = stack_hash(e->stack_json);
	const char *colon = strstr(e->text, ": ");
	size_t nlen = colon ? (size_t)(colon - e->text) : 0;
	int64_t host_us, host_ns, unc_us = -1;
	uint64_t unc_ns;

	if (x->error)
		return;
	/* event and fields: "system/name: fields", else all of it in fields */
	if (!nlen || memchr(e->text, ' ', nlen))
		nlen = 0, colon = NULL;
	if (!x->ended && e->tail && e->page < x->tail_first)
		x->tail_first = e->page;
	/*
	 * Every page with an event that may still change, on the newest chunk or not,
	 * however the boot ended: the caller keeps those below F in U (the others stay
	 * above F). A page below F can be on the newest chunk again: a merge of small
	 * chunks (compact.h) may take the CPU's newest one into a run of older ones. A
	 * boot that ended may still change: a disconnected one may resume, a crashed
	 * one's post-mortem may pair or resolve its last events (postmortem.h).
	 */
	if ((!strcmp(e->stack_kind, "unresolved") || e->waiting) &&
	    (!x->unres->len || g_array_index(x->unres, uint64_t, x->unres->len - 1) != e->page))
		g_array_append_val(x->unres, e->page);
	if (!g_hash_table_contains(x->sent, &key)) {
		if (g_hash_table_size(x->sent) >= MAX_SENT_STACKS)
			g_hash_table_remove_all(x->sent);	/* sent again: the same row */
		g_hash_table_add(x->sent, g_memdup2(&key, sizeof(key)));
		ha_rb_str(x->stk.rows, x->host);
		ha_rb_str(x->stk.rows, x->domain);
		ha_rb_str(x->stk.rows, x->boot_id);
		ha_rb_u64(x->stk.rows, key);
		ha_rb_str(x->stk.rows, e->stack_kind);
		ha_rb_u64(x->stk.rows, (uint64_t)e->stack_id);
		ha_rb_u64(x->stk.rows, (uint64_t)e->epoch);
		ha_rb_str(x->stk.rows, e->folded);
		ha_rb_str(x->stk.rows, e->stack_json);
		ha_rb_u64(x->stk.rows, x->version);
		if (!ha_ch_batch_row_done(&x->stk, &x->error))
			return;
	}
	if (ha_clockmap_to_host(x->clock, e->ts, HA_HOSTCLOCK_REALTIME, &host_ns, &unc_ns)) {
		host_us = host_ns / 1000;
		unc_us = (int64_t)((unc_ns + 999) / 1000);
	} else if (e->ts >= x->ts0) {
		host_us = x->host0_us + (int64_t)((e->ts - x->ts0) / 1000);
	} else {
		host_us = x->host0_us - (int64_t)((x->ts0 - e->ts) / 1000);
	}
	ha_rb_str(x->ev.rows, x->host);
	ha_rb_str(x->ev.rows, x->domain);
	ha_rb_str(x->ev.rows, x->boot_id);
	ha_rb_u32(x->ev.rows, e->cpu);
	ha_rb_u64(x->ev.rows, e->page);
	ha_rb_u32(x->ev.rows, e->idx);
	ha_rb_u64(x->ev.rows, e->ts);
	ha_rb_u64(x->ev.rows, (uint64_t)host_us);
	ha_rb_u64(x->ev.rows, (uint64_t)unc_us);
	ha_rb_strn(x->ev.rows, e->text, nlen);
	ha_rb_u32(x->ev.rows, (uint32_t)e->pid);
	ha_rb_str(x->ev.rows, colon ? colon + 2 : e->text);
	ha_rb_u64(x->ev.rows, (uint64_t)e->stack_id);
	ha_rb_u64(x->ev.rows, key);
	ha_rb_u64(x->ev.rows, x->version);
	ha_rb_u8(x->ev.rows, e->recovered);
	x->st->events++;
	ha_ch_batch_row_done(&x->ev, &x->error);
}

/* Pages @from..@to-1 of @cpu into the batches, then sent (stacks first). */
static bool send_pages(EvShip *x, HaStore *store, int64_t boot, uint32_t cpu, uint64_t from,
		       uint64_t to, GError **error)
{
	uint64_t pages;

	if (!ha_report_cpu_events(store, boot, cpu, from, to, on_event, x, &pages, error))
		return false;
	if (x->error) {
		g_propagate_error(error, g_steal_pointer(&x->error));
		return false;
	}
	return ha_ch_batch_flush(&x->stk, error) && ha_ch_batch_flush(&x->ev, error);
}

static gint cmp_u64(gconstpointer a, gconstpointer b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

typedef struct {
	uint64_t f, p;
	bool overflow;
	GArray *u;		/* uint64_t */
} Mark;

static void mark_load(GKeyFile *kf, const char *group, const char *key, Mark *m)
{
	g_autofree char *v = g_key_file_get_string(kf, group, key, NULL);
	g_auto(GStrv) f = v ? g_strsplit(v, " ", -1) : NULL;
	guint n = f ? g_strv_length(f) : 0;

	m->u = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	m->f = n >= 3 ? g_ascii_strtoull(f[0], NULL, 10) : 0;
	m->p = n >= 3 ? g_ascii_strtoull(f[1], NULL, 10) : 0;
	m->overflow = n >= 3 && f[2][0] == '1';
	for (guint i = 3; i < n && m->u->len < MAX_UNRESOLVED; i++) {
		uint64_t pg = g_ascii_strtoull(f[i], NULL, 10);

		g_array_append_val(m->u, pg);
	}
}

static bool mark_save(GKeyFile *kf, const char *group, const char *key, const Mark *m,
		      const char *path, GError **error)
{
	g_autoptr(GString) v = g_string_new(NULL);

	g_string_printf(v, "%" PRIu64 " %" PRIu64 " %d", m->f, m->p, m->overflow);
	for (guint i = 0; i < m->u->len; i++)
		g_string_append_printf(v, " %" PRIu64, g_array_index(m->u, uint64_t, i));
	g_key_file_set_string(kf, group, key, v->str);
	return g_key_file_save_to_file(kf, path, error);
}

/* @b as hex digits, upper or lower case, appended to @s. */
static void append_hex(GString *s, GBytes *b, bool upper)
{
	gsize n;
	const uint8_t *p = g_bytes_get_data(b, &n);

	for (gsize i = 0; i < n; i++)
		g_string_append_printf(s, upper ? "%02X" : "%02x", p[i]);
}

/* What can change an event already sent, hashed (the row as text, each value and a
 * '|', kept as it was so that a store's watermarks stay valid). */
static char *boot_signature(const HaStoreFleetBoot *b, bool found, bool *ended,
			    char **boot_id)
{
	g_autoptr(GString) s = g_string_new(NULL);
	g_autoptr(GString) h = g_string_new(NULL);

	if (found) {
		append_hex(h, b->uuid, false);
		g_string_append_printf(s, "%s|%" PRId64 "|%" PRId64 "|%" PRId64 "|%" PRId64 "|",
				       b->ended, b->stacks, b->epochs, b->texts, b->fullstacks);
		append_hex(s, b->pair_state, true);
		g_string_append_printf(s, "|%s|", h->str);
		*ended = *b->ended != '\0';
		/* as report boots prints boot_id */
		*boot_id = h->len == 32 ?
			   g_strdup_printf("%.8s-%.4s-%.4s-%.4s-%.12s", h->str, h->str + 8,
					   h->str + 12, h->str + 16, h->str + 20) :
			   g_strdup("?");
	} else {
		*boot_id = g_strdup("?");
	}
	return g_compute_checksum_for_string(G_CHECKSUM_SHA256, s->str, (gssize)s->len);
}

/* Pages @from..@to-1 sent again; those with an event still waiting for its stack
 * into @k's U (overflow set when it is full). False with @error: @k is then not
 * complete, and the caller saves nothing of it. */
static bool resend(EvShip *x, HaStore *store, int64_t boot, uint32_t cpu, uint64_t from,
		   uint64_t to, Mark *k, GError **error)
{
	g_array_set_size(x->unres, 0);
	if (!send_pages(x, store, boot, cpu, from, to, error))
		return false;
	for (guint i = 0; i < x->unres->len; i++) {
		if (k->u->len < MAX_UNRESOLVED)
			g_array_append_val(k->u, g_array_index(x->unres, uint64_t, i));
		else
			k->overflow = true;
	}
	return true;
}

static bool ship_cpu(EvShip *x, HaStore *store, int64_t boot, uint32_t cpu, bool moved,
		     GKeyFile *kf, const char *group, const char *mark, GError **error)
{
	g_autofree char *key = g_strdup_printf("ev%" PRId64 ".cpu%u", boot, cpu);
	uint64_t pages;
	Mark m;
	bool ok = false;

	if (!ha_store_fleet_cpu_pages(store, boot, cpu, &pages, error))
		return false;
	mark_load(kf, group, key, &m);
	if (pages == m.p && !moved) {
		g_array_unref(m.u);
		return true;
	}
	if (!x->version) {
		x->version = ha_ch_next_version(kf, group);
		if (!g_key_file_save_to_file(kf, mark, error))
			goto out;
	}
	/* pages F..: final up to the CPU's newest chunk (or all once the boot ended) */
	for (uint64_t from = m.f; from < pages;) {
		uint64_t to = MIN(pages, from + WINDOW_PAGES);

		x->tail_first = G_MAXUINT64;
		g_array_set_size(x->unres, 0);
		if (!send_pages(x, store, boot, cpu, from, to, error))
			goto out;
		if (m.f == from)
			m.f = MIN(to, x->tail_first);
		for (guint i = 0; i < x->unres->len; i++) {
			uint64_t pg = g_array_index(x->unres, uint64_t, i);

			if (pg >= m.f)
				continue;
			if (m.u->len < MAX_UNRESOLVED)
				g_array_append_val(m.u, pg);
			else
				m.overflow = true;
		}
		from = to;
		if (from >= pages)
			m.p = pages;
		if (!mark_save(kf, group, key, &m, mark, error))
			goto out;
	}
	if (pages <= m.f)
		m.p = pages;
	/*
	 * What may have changed below F: a late stack for an unresolved event. Once the
	 * boot ended, a CPU whose U overflowed is sent again whole; otherwise the U pages
	 * in runs (pages between them are sent again too: the same rows). U becomes what
	 * still waits after that: a boot that ended may still resume (disconnected) or
	 * be completed by its post-mortem (crashed).
	 */
	if (x->ended && m.overflow) {
		Mark k = { .u = g_array_new(FALSE, FALSE, sizeof(uint64_t)) };
		bool sent = true;

		for (uint64_t from = 0; sent && from < m.f; from += WINDOW_PAGES)
			sent = resend(x, store, boot, cpu, from, MIN(m.f, from + WINDOW_PAGES), &k,
				      error);
		g_array_unref(m.u);
		m.u = k.u;
		m.overflow = k.overflow;
		if (!sent)
			goto out;
	} else if (moved && m.u->len) {
		Mark k = { .u = g_array_new(FALSE, FALSE, sizeof(uint64_t)) };
		bool sent = true;

		g_array_sort(m.u, cmp_u64);
		for (guint i = 0, j; sent && i < m.u->len; i = j) {
			uint64_t a = g_array_index(m.u, uint64_t, i), b = a;

			for (j = i + 1; j < m.u->len &&
			     g_array_index(m.u, uint64_t, j) < b + RUN_GAP; j++)
				b = g_array_index(m.u, uint64_t, j);
			sent = resend(x, store, boot, cpu, a, b + 1, &k, error);
		}
		g_array_unref(m.u);
		m.u = k.u;
		m.overflow = m.overflow || k.overflow;
		if (!sent)
			goto out;
	}
	ok = mark_save(kf, group, key, &m, mark, error);
out:
	g_array_unref(m.u);
	return ok;
}

bool ha_ch_ship_events(HaCh *c, HaStore *store, const char *host, const char *domain,
		       int64_t boot, GKeyFile *kf, const char *group, const char *mark,
		       HaShipStats *st, GError **error)
{
	g_autofree char *boot_id = NULL;
	g_autofree char *sigkey = g_strdup_printf("ev%" PRId64, boot);
	g_autofree char *was = g_key_file_get_string(kf, group, sigkey, NULL);
	g_autofree char *sig = NULL;
	g_autoptr(GByteArray) evrows = g_byte_array_new();
	g_autoptr(GByteArray) stkrows = g_byte_array_new();
	g_autoptr(GHashTable) sent = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
							   NULL);
	g_autoptr(GArray) unres = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	g_autoptr(GArray) cpus = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	EvShip x = {
		.ev = { .ch = c, .table = "events", .rows = evrows, .st = st },
		.stk = { .ch = c, .table = "event_stacks", .rows = stkrows, .st = st },
		.host = host, .domain = domain, .sent = sent,
		.unres = unres, .st = st,
	};
	g_autoptr(HaClockMap) clock = NULL;
	g_auto(HaStoreFleetBoot) b = { 0 };
	bool found, moved;

	if (!ha_store_fleet_boot(store, boot, &found, &b, error))
		return false;
	sig = boot_signature(&b, found, &x.ended, &boot_id);
	x.host0_us = b.start_us;
	x.ts0 = b.first_ts;
	clock = ha_clockmap_load(store, boot, error);
	if (!clock)
		return false;
	x.clock = clock;
	x.boot_id = boot_id;
	moved = g_strcmp0(was, sig) != 0;
	if (!ha_store_fleet_cpus(store, boot, cpus, error))
		return false;
	for (guint i = 0; i < cpus->len; i++)
		if (!ship_cpu(&x, store, boot, g_array_index(cpus, uint32_t, i), moved, kf, group,
			      mark, error))
			return false;
	/* every CPU confirmed against this signature */
	if (!moved)
		return true;
	g_key_file_set_string(kf, group, sigkey, sig);
	return g_key_file_save_to_file(kf, mark, error);
}
