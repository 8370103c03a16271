// SPDX-License-Identifier: MIT
/*
 * ingest-batch.c - what a batch holds until its commit (see ingest-int.h): each CPU's
 * pages packed into one buffer, the stack counts of its events, the full-stack cache,
 * and the chunks and counts written at the commit.
 */
#include "ingest-int.h"

#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

#include "compact.h"

/*
 * The full-stack cache: a table of FullStackEnt, each keyed by the FullStackKey at its
 * start, so that a lookup takes a key on the stack pointing at the event's own ips.
 */
typedef struct {
	guint hash;
	uint32_t nr;
	const uint64_t *ips;	/* host byte order */
} FullStackKey;

typedef struct {
	FullStackKey key;	/* first: the table's key is the entry (g_free) */
	int64_t id;		/* fullstacks.id */
	uint64_t ips[];
} FullStackEnt;

static guint fullstack_hash_ips(const uint64_t *ips, uint32_t nr)
{
	uint64_t h = 0xcbf29ce484222325ull ^ nr;

	for (uint32_t i = 0; i < nr; i++) {
		h ^= ips[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return (guint)(h ^ (h >> 32));
}

static guint fullstack_hash(gconstpointer k)
{
	return ((const FullStackKey *)k)->hash;
}

static gboolean fullstack_equal(gconstpointer a, gconstpointer b)
{
	const FullStackKey *x = a, *y = b;

	return x->hash == y->hash && x->nr == y->nr &&
	       (!x->nr || !memcmp(x->ips, y->ips, (size_t)x->nr * 8));
}

static void cpu_batch_free(gpointer p)
{
	CpuBatch *b = p;

	g_array_unref(b->spans);
	g_free(b->hist);
	g_array_unref(b->hist_used);
	g_free(b);
}

static void cpu_batch_reset(CpuBatch *b)
{
	g_array_set_size(b->spans, 0);
	/*
	 * The table is kept for the next batch while this one filled an eighth of it or
	 * more (it grows at a half): a stream's usual number of distinct stacks a batch
	 * is allocated once, not grown from hist_slots_min, rehashed and freed at every
	 * commit. After a batch far smaller than the table (a burst of stacks is over)
	 * it is freed and grows again: what a CPU holds follows its recent batches, not
	 * the connection's peak (memory bound).
	 */
	if (b->hist_cap > ingest_session_limits.hist_slots_min &&
	    (uint64_t)b->hist_used->len * 8 < b->hist_cap) {
		g_clear_pointer(&b->hist, g_free);
		b->hist_cap = 0;
		g_array_unref(b->hist_used);
		b->hist_used = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	} else {
		for (guint i = 0; i < b->hist_used->len; i++)
			b->hist[g_array_index(b->hist_used, uint32_t, i)].count = 0;
		g_array_set_size(b->hist_used, 0);
	}
	b->first_seq = b->last_seq = 0;
	b->ts_min = UINT64_MAX;
	b->ts_max = 0;
	b->pages = b->events = 0;
	b->traced = 0;
}

static CpuBatch *cpu_batch_new(void)
{
	CpuBatch *b = g_new0(CpuBatch, 1);

	b->spans = g_array_new(FALSE, FALSE, sizeof(HaChunkSpan));
	b->hist_used = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	cpu_batch_reset(b);
	return b;
}

IngestBatch *ingest_batch_new(void)
{
	IngestBatch *b = g_new0(IngestBatch, 1);

	b->cpus = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, cpu_batch_free);
	b->pend = g_hash_table_new(fullstack_hash, fullstack_equal);
	b->pend_list = g_ptr_array_new_with_free_func(g_free);
	return b;
}

void ingest_batch_free(IngestBatch *b)
{
	if (!b)
		return;
	g_hash_table_destroy(b->cpus);
	if (b->merged)
		cpu_batch_free(b->merged);
	g_hash_table_destroy(b->pend);
	g_ptr_array_unref(b->pend_list);
	g_free(b->by_cpu);
	g_free(b->pages);
	g_free(b);
}

void ingest_batch_empty(IngestBatch *b)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, b->cpus);
	while (g_hash_table_iter_next(&it, NULL, &v))
		cpu_batch_reset(v);
	b->pages_len = 0;
	g_hash_table_remove_all(b->pend);
	g_ptr_array_set_size(b->pend_list, 0);
	b->pend_bytes = 0;
	b->rows_refused = 0;
	if (b->merged)
		cpu_batch_reset(b->merged);
}

/* Forget every CPU (a session ends); the next session may have other CPUs. */
static void batch_drop(IngestBatch *b)
{
	ingest_batch_empty(b);
	g_hash_table_remove_all(b->cpus);
	g_clear_pointer(&b->by_cpu, g_free);
	b->nr_cpus = 0;
	b->pages_len = 0;
}

void ingest_batches_init(HaConn *c)
{
	c->fill = ingest_batch_new();
	c->spare = ingest_batch_new();
	c->fullstacks = g_hash_table_new_full(fullstack_hash, fullstack_equal, g_free, NULL);
	c->z = ha_chunkz_new(c->lim.zstd_level);
}

void ingest_batches_free(HaConn *c)
{
	if (c->compact_src) {
		g_source_destroy(c->compact_src);
		g_source_unref(c->compact_src);
	}
	ingest_batch_free(c->fill);
	ingest_batch_free(c->spare);
	ha_chunkz_free(c->z);
	g_hash_table_destroy(c->fullstacks);
}

void ingest_batches_start(HaConn *c, uint32_t nr_cpus)
{
	/* no commit is in flight at a HELLO: the last session's ended synchronously */
	IngestBatch *both[] = { c->fill, c->spare };

	for (int i = 0; i < 2; i++) {
		if (!both[i])
			continue;
		g_free(both[i]->by_cpu);
		both[i]->by_cpu = g_new0(CpuBatch *, nr_cpus);	/* <= SMP_MAX_CPUS */
		both[i]->nr_cpus = nr_cpus;
	}
}

CpuBatch *ingest_batch_get(HaConn *c, uint32_t cpu)
{
	IngestBatch *f = c->fill;
	CpuBatch *b = cpu < f->nr_cpus && f->by_cpu ? f->by_cpu[cpu] : NULL;

	if (b)
		return b;
	b = g_hash_table_lookup(f->cpus, GUINT_TO_POINTER(cpu));
	if (!b) {
		b = cpu_batch_new();
		g_hash_table_insert(f->cpus, GUINT_TO_POINTER(cpu), b);
	}
	if (cpu < f->nr_cpus && f->by_cpu)
		f->by_cpu[cpu] = b;
	return b;
}

void ingest_batch_add_page(HaConn *c, CpuBatch *b, uint64_t seq, const uint8_t *data,
			   size_t len)
{
	IngestBatch *f = c->fill;

	if (!b->pages)
		b->first_seq = seq;
	b->last_seq = seq;
	b->pages++;
	/* a batch is flushed at batch_bytes of payload: this grows to that and stays */
	if (f->pages_len + len > f->pages_cap) {
		f->pages_cap = MAX(f->pages_len + len, MIN(2 * f->pages_cap,
				   (size_t)c->lim.batch_bytes + c->lim.max_payload));
		f->pages = g_realloc(f->pages, f->pages_cap);
	}
	memcpy(f->pages + f->pages_len, data, len);
	g_array_append_val(b->spans, ((HaChunkSpan){ .off = (uint32_t)f->pages_len,
						     .len = (uint32_t)len }));
	f->pages_len += len;
}

void ingest_batches_drop(HaConn *c)
{
	batch_drop(c->fill);
	if (c->spare)
		batch_drop(c->spare);
	g_hash_table_remove_all(c->fullstacks);
	c->fullstacks_bytes = 0;
}

static uint32_t hist_hash(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32);
}

/* Twice the slots (hist_slots_min at first), the used ones moved over. */
static void hist_grow(CpuBatch *b)
{
	uint32_t cap = b->hist_cap ? 2 * b->hist_cap : ingest_session_limits.hist_slots_min;
	HistSlot *t = g_new0(HistSlot, cap);

	for (guint j = 0; j < b->hist_used->len; j++) {
		uint32_t *u = &g_array_index(b->hist_used, uint32_t, j);
		uint32_t i = hist_hash(b->hist[*u].key) & (cap - 1);

		while (t[i].count)
			i = (i + 1) & (cap - 1);
		t[i] = b->hist[*u];
		*u = i;
	}
	g_free(b->hist);
	b->hist = t;
	b->hist_cap = cap;
}

/* Count one event of @key at @ts: a hash and a probe or two, nothing allocated once
 * the table has grown to the batch's number of distinct stacks. */
/* The slot of @key, new ones starting with count 0 and the time range given. */
static HistSlot *hist_slot(CpuBatch *b, uint64_t key, uint64_t ts_min, uint64_t ts_max)
{
	HistSlot *e;
	uint32_t i;

	if (2 * ((uint64_t)b->hist_used->len + 1) > b->hist_cap)
		hist_grow(b);
	for (i = hist_hash(key) & (b->hist_cap - 1);; i = (i + 1) & (b->hist_cap - 1)) {
		e = &b->hist[i];
		if (!e->count) {
			*e = (HistSlot){ .key = key, .ts_min = ts_min, .ts_max = ts_max };
			g_array_append_val(b->hist_used, i);
			return e;
		}
		if (e->key == key)
			return e;
	}
}

static void hist_add(CpuBatch *b, uint64_t key, uint64_t ts)
{
	HistSlot *e = hist_slot(b, key, ts, ts);

	e->count++;
	e->ts_min = MIN(e->ts_min, ts);
	e->ts_max = MAX(e->ts_max, ts);
	b->traced++;
	b->ts_min = MIN(b->ts_min, ts);
	b->ts_max = MAX(b->ts_max, ts);
}

/* A copy of @k's stack as a table entry, with @id (g_free()). */
static FullStackEnt *fullstack_ent(const FullStackKey *k, int64_t id)
{
	FullStackEnt *ent = g_malloc(sizeof(*ent) + (size_t)k->nr * 8);

	if (k->nr)
		memcpy(ent->ips, k->ips, (size_t)k->nr * 8);
	ent->key = (FullStackKey){ .hash = k->hash, .nr = k->nr, .ips = ent->ips };
	ent->id = id;
	return ent;
}

/* Cache @id for @k, unless it is there already. */
static void fullstack_cache(HaConn *c, const FullStackKey *k, int64_t id)
{
	if (g_hash_table_contains(c->fullstacks, k))
		return;
	if (c->fullstacks_bytes + (size_t)k->nr * 8 > ingest_session_limits.fullstack_cache_bytes) {
		g_hash_table_remove_all(c->fullstacks);
		c->fullstacks_bytes = 0;
	}
	c->fullstacks_bytes += sizeof(FullStackEnt) + (size_t)k->nr * 8 + 32;
	g_hash_table_add(c->fullstacks, &fullstack_ent(k, id)->key);
}

/*
 * The stack key (hist.h) of an inline stack, its fullstacks row inserted on first
 * sight; 0 with @error on store failure. A stack seen before costs a hash of its ips
 * and one lookup: nothing is allocated. A stack new to the connection while a commit
 * is in flight (the store lent to it) gets a provisional key in the batch, resolved by
 * the batch's own commit (ingest_batch_resolve()), so the main loop never waits for
 * the commit here, unless the batch holds fullstack_cache_bytes of such stacks.
 */
static uint64_t fullstack_key(HaConn *c, const uint64_t *ips, uint32_t nr, GError **error)
{
	FullStackKey k = { .hash = fullstack_hash_ips(ips, nr), .nr = nr, .ips = ips };
	const FullStackEnt *cached = g_hash_table_lookup(c->fullstacks, &k);
	IngestBatch *f = c->fill;
	int64_t id;

	if (cached)
		return 2 * (uint64_t)cached->id + 1;
	if (c->flight) {
		const FullStackEnt *pend = g_hash_table_lookup(f->pend, &k);
		size_t size = sizeof(FullStackEnt) + (size_t)nr * 8 + 32;

		if (pend)
			return INGEST_PROV_KEY | (uint64_t)pend->id;
		if (f->pend_bytes + size <= ingest_session_limits.fullstack_cache_bytes) {
			FullStackEnt *ent = fullstack_ent(&k, f->pend_list->len);

			g_ptr_array_add(f->pend_list, ent);
			g_hash_table_add(f->pend, &ent->key);
			f->pend_bytes += size;
			return INGEST_PROV_KEY | (uint64_t)ent->id;
		}
	}
	/* PAGE frames open no transaction (ingest-session.c): a new stack does */
	if (!ha_store_begin(c->store, error) ||
	    !ha_store_fullstack_id(c->store, c->boot, ips, nr, c->lim.max_fullstacks, &id,
				   error))
		return 0;
	if (!id) {
		/* beyond the boot's limit: cached as row 0, HA_HIST_KEY_REFUSED */
		c->st.rows_refused++;
		ingest_rows_refused_log(c);
	}
	fullstack_cache(c, &k, id);
	return 2 * (uint64_t)id + 1;
}

void ingest_rows_refused_log(HaConn *c)
{
	if (c->warned_rows)
		return;
	c->warned_rows = true;
	g_message("%s: boot %s: the boot holds its limit of full stacks (%" G_GUINT64_FORMAT
		  ") or of stack count rows (%" G_GUINT64_FORMAT "): the events of stacks"
		  " beyond are counted as refused stacks, their pages stored (logged once"
		  " per session)", c->domain, c->boot_str, c->lim.max_fullstacks,
		  c->lim.max_counts);
}

bool ingest_batch_resolve(HaConn *c, IngestBatch *b, GError **error)
{
	for (guint i = 0; i < b->pend_list->len; i++) {
		FullStackEnt *ent = g_ptr_array_index(b->pend_list, i);

		if (!ha_store_fullstack_id(c->store, c->boot, ent->ips, ent->key.nr,
					   c->lim.max_fullstacks, &ent->id, error))
			return false;
		b->rows_refused += !ent->id;
	}
	return true;
}

void ingest_batch_cache_resolved(HaConn *c, IngestBatch *b)
{
	for (guint i = 0; i < b->pend_list->len; i++) {
		const FullStackEnt *ent = g_ptr_array_index(b->pend_list, i);

		fullstack_cache(c, &ent->key, ent->id);
	}
}

void ingest_batch_on_paired(const HaPaired *p, void *user)
{
	HaConn *c = user;
	CpuBatch *b = ingest_batch_get(c, p->cpu);
	uint64_t key = 0;	/* no stack (hist.h) */

	if (p->stack == HA_STACK_ID) {
		/* Keep ids of epochs 2048 apart (same tag) in separate entries: the
		 * generation of the newest epoch with this tag the stream has reached
		 * (EPOCH records may trail their pages a little: margin). A wrong estimate
		 * only merges their time ranges, which then resolve as unresolved. */
		uint64_t tag = smp_id_tag(p->stack_id), gen = 0;
		int64_t reach = c->cur_epoch + 64;

		if (reach >= (int64_t)tag)
			gen = ((uint64_t)reach - tag) >> SMP_ID_TAG_BITS;
		key = 2 * ((gen << 31) | p->stack_id) + 2;
	} else if (p->stack == HA_STACK_FULL) {
		if (c->cb_error)
			return;	/* the batch fails: nothing of it is counted */
		key = fullstack_key(c, p->ips, p->nr_ips, &c->cb_error);
		if (!key)
			return;
	}
	hist_add(b, key, p->ts);
	c->st.events++;
}

/*
 * HOOK(recovered): chunk @chunk was just stored, marked recovered (HaStoreChunk,
 * schema 7), by a connection that replays frames read from a dump of the crashed guest
 * (ha_conn_set_recovered(), pm-arena.h), in the batch's open transaction. Counted;
 * anything more a recovered chunk needs goes here, failing the batch like any store
 * failure.
 */
static bool ingest_chunk_recovered(HaConn *c, int64_t chunk, GError **error)
{
	(void)chunk;
	(void)error;
	c->st.recovered_chunks++;
	return true;
}

static bool write_cpu(HaConn *c, IngestBatch *batch, uint32_t cpu, CpuBatch *b,
		      int64_t *ret_first_chunk, bool *ret_small, GError **error)
{
	const HaChunkSpan *spans = (const HaChunkSpan *)(void *)b->spans->data;
	HaStoreChunk ch = {
		.cpu = cpu,
		.pages = b->pages,
		.first_seq = b->first_seq,
		.last_seq = b->last_seq,
		.ts_min = b->ts_min,
		.ts_max = b->ts_max,
		.events = b->events,
		.traced = b->traced,
		.raw_bytes = ha_chunk_packed_size(spans, b->spans->len),
	};
	int64_t id;

	if (!b->pages && !b->hist_used->len)
		return true;
	ch.data = ha_chunkz_compress(c->z, batch->pages, spans, b->spans->len, &ch.len,
				     error);
	if (!ch.data)
		return false;
	/* each CPU's counts into one table: one row update per stack and batch */
	for (guint i = 0; i < b->hist_used->len; i++) {
		const HistSlot *e = &b->hist[g_array_index(b->hist_used, uint32_t, i)];
		uint64_t key = e->key;
		HistSlot *m;

		if (key & INGEST_PROV_KEY) {
			uint64_t idx = key & ~INGEST_PROV_KEY;
			const FullStackEnt *ent;

			if (idx >= batch->pend_list->len) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
					    "provisional stack %" G_GUINT64_FORMAT " of %u", idx,
					    batch->pend_list->len);
				return false;
			}
			ent = g_ptr_array_index(batch->pend_list, (guint)idx);
			key = 2 * (uint64_t)ent->id + 1;	/* resolved before */
		}
		m = hist_slot(batch->merged, key, e->ts_min, e->ts_max);
		m->count += e->count;
		m->ts_min = MIN(m->ts_min, e->ts_min);
		m->ts_max = MAX(m->ts_max, e->ts_max);
	}
	ch.recovered = c->recovered;
	if (!ha_store_put_chunk(c->store, c->boot, &ch, &id, error) ||
	    (c->recovered && !ingest_chunk_recovered(c, id, error)))
		return false;
	if (!*ret_first_chunk)
		*ret_first_chunk = id;
	if (ch.raw_bytes < HA_COMPACT_SMALL)
		*ret_small = true;
	return true;
}

static int count_cmp(const void *a, const void *b)
{
	uint64_t x = ((const HaStoreCount *)a)->key, y = ((const HaStoreCount *)b)->key;

	return (x > y) - (x < y);
}

bool ingest_batch_write(HaConn *c, IngestBatch *b, int64_t *ret_first_chunk,
			bool *ret_small, GError **error)
{
	GHashTableIter it;
	gpointer k, v;
	HistSlot over = { .key = HA_HIST_KEY_REFUSED, .ts_min = UINT64_MAX };
	uint64_t max_counts = c->lim.max_counts;
	CpuBatch *m;

	*ret_first_chunk = 0;
	*ret_small = false;
	if (!b->merged)
		b->merged = cpu_batch_new();
	m = b->merged;
	g_hash_table_iter_init(&it, b->cpus);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (!write_cpu(c, b, GPOINTER_TO_UINT(k), v, ret_first_chunk, ret_small,
			       error))
			return false;
	/* the boot's rows plus every key of the batch (and the refused key) within
	 * the limit: no key can be refused, so no statement needs the guard */
	if (m->hist_used->len) {
		HaStoreBootRows rows;

		if (!ha_store_boot_rows(c->store, c->boot, &rows, error))
			return false;
		if (rows.counts + m->hist_used->len + 1 <= c->lim.max_counts)
			max_counts = UINT64_MAX;
	}
	if (max_counts == UINT64_MAX) {
		/* no key can be refused: many rows per statement, in key order */
		g_autofree HaStoreCount *rows = g_new(HaStoreCount, m->hist_used->len);

		for (guint i = 0; i < m->hist_used->len; i++) {
			const HistSlot *e = &m->hist[g_array_index(m->hist_used, uint32_t, i)];

			rows[i] = (HaStoreCount){ e->key, e->count, e->ts_min, e->ts_max };
		}
		qsort(rows, m->hist_used->len, sizeof(*rows), count_cmp);
		return ha_store_add_counts(c->store, c->boot, rows, m->hist_used->len, error);
	}
	for (guint i = 0; i < m->hist_used->len; i++) {
		const HistSlot *e = &m->hist[g_array_index(m->hist_used, uint32_t, i)];
		bool refused;

		if (!ha_store_add_count(c->store, c->boot, e->key, e->count, e->ts_min,
					e->ts_max, max_counts, &refused, error))
			return false;
		if (refused) {
			/* a new key beyond the boot's limit: its events still counted */
			b->rows_refused++;
			over.count += e->count;
			over.ts_min = MIN(over.ts_min, e->ts_min);
			over.ts_max = MAX(over.ts_max, e->ts_max);
		}
	}
	if (over.count) {
		bool refused;

		if (!ha_store_add_count(c->store, c->boot, HA_HIST_KEY_REFUSED, over.count,
					over.ts_min, over.ts_max, c->lim.max_counts, &refused,
					error))
			return false;
	}
	return true;
}

/* ---- compaction (compact.h) ---------------------------------------------------- */

/* One merge per call while the main loop has nothing else to do. */
static gboolean on_compact_idle(gpointer user)
{
	HaConn *c = user;
	g_autoptr(GError) e = NULL;
	int r;

	if (c->committed) {
		/* a commit thread merges, as it commits (ingest-commit.c); when it
		 * cannot now, the next commit schedules us again */
		if (!ingest_compact_start(c))
			c->compact_small = true;
		r = 0;
	} else if (ha_store_in_txn(c->store))
		r = 0;	/* a batch is open: the next commit schedules us again */
	else
		r = ha_compact_step(c->store, c->boot, c->compact_from, false,
				    c->lim.zstd_level, &e);
	if (r < 0) {
		g_warning("%s: boot %s: merging small chunks: %s (left as they are)",
			  c->domain, c->boot_str, e->message);
		c->compact_off = true;
	}
	if (r == 1)
		return G_SOURCE_CONTINUE;
	g_source_unref(g_steal_pointer(&c->compact_src));
	return G_SOURCE_REMOVE;
}

void ingest_compact_schedule(HaConn *c)
{
	if (c->compact_src || c->compact_off || !c->compact_small)
		return;
	c->compact_small = false;
	c->compact_src = g_idle_source_new();
	g_source_set_priority(c->compact_src, G_PRIORITY_LOW);
	g_source_set_callback(c->compact_src, on_compact_idle, c, NULL);
	g_source_set_static_name(c->compact_src, "host-agent chunk compaction");
	/* the connection's context (its thread's), whichever thread commits */
	g_source_attach(c->compact_src, c->ctx ? c->ctx : g_main_context_get_thread_default());
}

void ingest_compact_finish(HaConn *c)
{
	g_autoptr(GError) e = NULL;
	int r = 0;

	if (c->compact_src) {
		g_source_destroy(c->compact_src);
		g_clear_pointer(&c->compact_src, g_source_unref);
	}
	if (!c->compact_from || c->compact_off || ha_store_in_txn(c->store))
		return;
	while ((r = ha_compact_step(c->store, c->boot, c->compact_from, true,
				    c->lim.zstd_level, &e)) == 1)
		;
	if (r < 0)
		g_warning("%s: boot %s: merging small chunks: %s (left as they are)",
			  c->domain, c->boot_str, e->message);
	c->compact_from = 0;
}
