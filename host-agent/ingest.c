// SPDX-License-Identifier: MIT
/* ingest.c - one guest connection (see ingest.h). */
#include "ingest.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

#include "chunk.h"
#include "compact.h"
#include "hist.h"
#include "pair.h"
#include "proto.h"
#include "tep.h"

#define FULLSTACK_CACHE_MAX (16u << 20)	/* bytes of ips cached per connection */
#define LOG_FIRST_N	10u		/* malformed frames logged per connection ... */
#define LOG_EVERY	1000u		/* ... then one in this many */

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

/* The texts a guest keys as it likes, and what a boot may store of each (ingest.h). */
enum { TEXT_KSYMS, TEXT_MODULES, TEXT_CMDLINES, TEXT_KINDS };

static const struct {
	uint8_t type;		/* SMP_* */
	const char *kind;	/* texts.kind */
	uint64_t budget;	/* bytes + HA_TEXT_ROW_COST per row, per boot */
} text_kinds[TEXT_KINDS] = {
	[TEXT_KSYMS] = { SMP_KSYMS, "ksyms", HA_TEXT_KSYMS_MAX },
	[TEXT_MODULES] = { SMP_MODULES, "modules", HA_TEXT_MODULES_MAX },
	[TEXT_CMDLINES] = { SMP_CMDLINES, "cmdlines", HA_TEXT_CMDLINES_MAX },
};

/* One stack's count in a batch; count 0: a free slot. */
typedef struct {
	uint64_t key;		/* hist.h */
	uint64_t count;
	uint64_t ts_min;
	uint64_t ts_max;
} HistSlot;

#define HIST_SLOTS_MIN	256u

typedef struct {
	GArray *spans;		/* HaChunkSpan: this CPU's pages in HaConn.pages */
	uint64_t first_seq;
	uint64_t last_seq;
	uint64_t ts_min;
	uint64_t ts_max;
	uint32_t pages;
	uint32_t events;
	uint64_t traced;
	/* The batch's stack counts (hist.h keys): open addressing, hist_cap slots (a
	 * power of two, at most half used), the used ones listed in hist_used. */
	HistSlot *hist;
	uint32_t hist_cap;
	GArray *hist_used;	/* uint32_t slot indexes */
} CpuBatch;

struct _HaConn {
	HaStore *store;
	HaLimits lim;
	char *domain;
	char *peer;
	struct smp_decoder *dec;

	bool hello;
	uint8_t boot_uuid[16];
	char boot_str[37];
	uint64_t stream_id;
	int64_t boot;		/* boots.id */
	int64_t stream;		/* streams.id */
	uint32_t nr_cpus;
	uint32_t page_size;
	uint32_t map_bits;
	bool big_endian;
	uint64_t expected;	/* next sequence number to apply */
	uint64_t acked;		/* last ACKed */
	bool ack_wanted;
	int64_t cur_epoch;	/* -1 before the stream's first EPOCH */
	unsigned int hellos;
	bool bye;
	bool failed;		/* a batch was rolled back: no more commits or ACKs */
	bool warned_unparsed;
	/* clock probes: offered in HELLO, the marker events' format, the time of the
	 * read that completed the frame being decoded */
	bool time_ok;
	HaClockProbe *clk;
	HaMarkerFormat marker;
	HaHostTime rx_time;

	HaTep *tep;
	HaPair *pair;
	GHashTable *batches;	/* cpu -> CpuBatch, kept (emptied) across batches */
	CpuBatch **by_cpu;	/* the same, indexed by cpu < nr_cpus */
	uint8_t *pages;		/* the batch's pages of every CPU, in arrival order */
	size_t pages_len, pages_cap;	/* cap <= batch_bytes + max_payload */
	HaChunkZ *z;
	/* Compaction (compact.h) of the chunks this connection stored, id >= compact_from,
	 * from a low-priority idle source while the connection waits for input. */
	int64_t compact_from;	/* 0: none stored yet */
	bool compact_small;	/* the last commit stored a small chunk */
	bool compact_off;	/* it failed once: left alone for this connection */
	GSource *compact_src;
	GHashTable *fullstacks;	/* FullStackKey (of a FullStackEnt) -> its FullStackEnt */
	size_t fullstacks_bytes;
	uint32_t batch_bytes;
	uint32_t batch_frames;
	uint64_t d_gap, d_dup, d_malformed, d_bad_pages, orphans_saved;
	uint64_t d_missed, d_missed_uncounted;
	bool gap_note;		/* a gap seen, its rows due in the frame's transaction */
	uint64_t gap_lo, gap_hi;
	uint32_t gaps_noted;	/* rows written for so many gaps (HA_GAPS_NOTED_MAX) */
	/* what the boot stores of each text kind (text_kinds), read at HELLO and counted
	 * up as texts are stored; a replaced row is counted again (an upper bound), and
	 * the count of a batch that fails is not taken back (the connection ends) */
	uint64_t text_used[TEXT_KINDS];
	gint64 pending_since;
	/* The first store failure inside a pairing callback, which cannot return one:
	 * taken by take_store_error() before the frame counts as applied, and by
	 * ha_conn_flush() before any commit, so the batch fails with it. */
	GError *cb_error;

	GByteArray *out;
	GArray *out_lens;	/* guint: each queued frame's length, oldest first */
	size_t head_sent;	/* bytes of the oldest queued frame already sent */
	HaConnStats st;
};

void ha_limits_default(HaLimits *l)
{
	*l = (HaLimits){
		.quota_bytes = HA_QUOTA_DEFAULT_BYTES,
		.max_payload = SMP_MAX_PAYLOAD,
		.max_malformed = 1000,
		.max_hellos = 16,
		.batch_bytes = 4u << 20,	/* a quarter of the guest agent's window */
		.batch_frames = 16384,
		/* zstd 2 rather than 3: on host-bench's synthetic pages and on a real
		 * guest's (e2e-stream-steady), level 2 compresses as well or better and
		 * takes 1.4-2x less CPU (zstd 1.5.4); level 1 is faster still but 2 %
		 * larger on the synthetic pages. */
		.zstd_level = 2,
		.time_probe_ms = HA_CLOCK_PROBE_MS,
	};
}

static void batch_free(gpointer p)
{
	CpuBatch *b = p;

	g_array_unref(b->spans);
	g_free(b->hist);
	g_array_unref(b->hist_used);
	g_free(b);
}

HaConn *ha_conn_new(HaStore *store, const HaLimits *limits, const char *domain,
		    const char *peer)
{
	HaConn *c = g_new0(HaConn, 1);

	c->store = store;
	c->lim = *limits;
	c->domain = g_strdup(domain);
	c->peer = g_strdup(peer);
	c->dec = smp_decoder_new(limits->max_payload);
	c->cur_epoch = -1;
	c->batches = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, batch_free);
	c->fullstacks = g_hash_table_new_full(fullstack_hash, fullstack_equal, g_free, NULL);
	c->out = g_byte_array_new();
	c->out_lens = g_array_new(FALSE, FALSE, sizeof(guint));
	c->z = ha_chunkz_new(limits->zstd_level);
	c->clk = ha_clock_probe_new(limits->time_probe_ms);
	c->marker.type = -1;
	return c;
}

void ha_conn_free(HaConn *c)
{
	if (!c)
		return;
	if (c->compact_src) {
		g_source_destroy(c->compact_src);
		g_source_unref(c->compact_src);
	}
	ha_store_rollback(c->store);
	smp_decoder_free(c->dec);
	ha_tep_free(c->tep);
	ha_pair_free(c->pair);
	g_hash_table_destroy(c->batches);
	g_free(c->by_cpu);
	g_free(c->pages);
	ha_chunkz_free(c->z);
	ha_clock_probe_free(c->clk);
	g_hash_table_destroy(c->fullstacks);
	g_byte_array_unref(c->out);
	g_array_unref(c->out_lens);
	g_clear_error(&c->cb_error);
	g_free(c->domain);
	g_free(c->peer);
	g_free(c);
}

guint ha_conn_commit_due_ms(const HaConn *c)
{
	gint64 age;

	if (!c->pending_since)
		return 0;
	age = g_get_monotonic_time() - c->pending_since;
	if (age >= HA_COMMIT_DELAY_US)
		return 0;
	return (guint)MAX((HA_COMMIT_DELAY_US - age) / 1000, 1);
}

const HaConnStats *ha_conn_stats(const HaConn *c)
{
	return &c->st;
}

const HaClockProbeStats *ha_conn_clock_stats(const HaConn *c)
{
	return ha_clock_probe_stats(c->clk);
}

size_t ha_conn_space(HaConn *c, uint8_t **ret_space)
{
	return smp_decoder_space(c->dec, ret_space);
}

void ha_conn_commit(HaConn *c, size_t n)
{
	/* the upper bound of a probe that this read completes (clocksync.h) */
	if (c->time_ok)
		ha_host_time_now(&c->rx_time);
	smp_decoder_commit(c->dec, n);
}

const uint8_t *ha_conn_output(HaConn *c, size_t *ret_len)
{
	*ret_len = c->out->len;
	return c->out->data;
}

void ha_conn_output_done(HaConn *c, size_t n)
{
	n = MIN(n, c->out->len);
	g_byte_array_remove_range(c->out, 0, (guint)n);
	c->head_sent += n;
	while (c->out_lens->len && c->head_sent >= g_array_index(c->out_lens, guint, 0)) {
		c->head_sent -= g_array_index(c->out_lens, guint, 0);
		g_array_remove_index(c->out_lens, 0);
	}
}

/*
 * Queue one host-to-guest frame. @payload_len is what its encoder returned: a negative
 * errno (the encoder refused its input) queues nothing. Nothing but the sealed frame
 * leaves: the buffer is zeroed first, so no host memory can reach the guest.
 */
static bool queue_frame(HaConn *c, uint8_t type, const uint8_t *payload, long payload_len)
{
	uint8_t buf[SMP_HDR_SIZE + 64] = { 0 };
	guint len;
	long n;

	if (payload_len < 0)
		return false;
	n = smp_frame_encode(buf, sizeof(buf), type, 0, 0, payload, (size_t)payload_len);
	if (n < 0)
		return false;
	/* Bounded: only WELCOME and cumulative ACKs go out; a guest that does not read
	 * them only loses older ACKs, which the next one supersedes. A frame partly
	 * sent is sent to its end, or the guest would read the next one from its
	 * middle. */
	if (c->out->len > 4096) {
		guint keep = c->head_sent ?
			g_array_index(c->out_lens, guint, 0) - (guint)c->head_sent : 0;

		g_byte_array_set_size(c->out, keep);
		g_array_set_size(c->out_lens, keep ? 1 : 0);
	}
	len = (guint)n;
	g_byte_array_append(c->out, buf, len);
	g_array_append_val(c->out_lens, len);
	return true;
}

static void queue_ack(HaConn *c)
{
	uint8_t p[8] = { 0 };
	uint64_t upto = c->expected - 1;

	if (!c->hello || c->failed || upto == 0 || (upto == c->acked && !c->ack_wanted))
		return;
	/* c->expected is kept within smp_seq_next_ok(), so this cannot fail; if it ever
	 * did, the guest gets no ACK (it resends), never a made-up one. */
	if (!queue_frame(c, SMP_ACK, p, smp_ack_encode(upto, p, sizeof(p)))) {
		g_warning("%s: boot %s: ACK %" PRIu64 " not encodable: not sent", c->domain,
			  c->boot_str, upto);
		return;
	}
	c->acked = upto;
	c->ack_wanted = false;
	c->st.acked = upto;
}

static bool step_done(HaConn *c, sqlite3_stmt *st, GError **error, const char *what)
{
	int rc = sqlite3_step(st);

	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		ha_store_set_error(c->store, error, what);
		return false;
	}
	return true;
}

#define STMT(c, sql, error) ({						\
	sqlite3_stmt *__s = ha_store_stmt((c)->store, (sql), (error));	\
	if (!__s)							\
		return false;						\
	__s; })

static void malformed(HaConn *c, const struct smp_frame *f, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);

static void malformed(HaConn *c, const struct smp_frame *f, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *why = NULL;

	c->st.malformed++;
	c->d_malformed++;
	if (c->st.malformed > LOG_FIRST_N && c->st.malformed % LOG_EVERY)
		return;
	va_start(ap, fmt);
	why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_warning("%s: %s: boot %s stream %016" PRIx64 ": malformed %s frame seq %" PRIu64
		  " (%u bytes) dropped: %s [%" PRIu64 " malformed so far]",
		  c->domain, c->peer, c->boot_str, c->stream_id,
		  smp_type_name(f->type) ? smp_type_name(f->type) : "unknown", f->seq,
		  f->len, why, c->st.malformed);
}

/* ---- batches ---------------------------------------------------------------- */

static void batch_reset(CpuBatch *b)
{
	g_array_set_size(b->spans, 0);
	if (b->hist_cap > HIST_SLOTS_MIN) {
		/* a batch's peak of distinct stacks is not kept for the connection's life,
		 * per CPU (memory bound): the next batch grows its table again */
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

static CpuBatch *batch_get(HaConn *c, uint32_t cpu)
{
	CpuBatch *b = cpu < c->nr_cpus && c->by_cpu ? c->by_cpu[cpu] : NULL;

	if (b)
		return b;
	b = g_hash_table_lookup(c->batches, GUINT_TO_POINTER(cpu));
	if (!b) {
		b = g_new0(CpuBatch, 1);
		b->spans = g_array_new(FALSE, FALSE, sizeof(HaChunkSpan));
		b->hist_used = g_array_new(FALSE, FALSE, sizeof(uint32_t));
		batch_reset(b);
		g_hash_table_insert(c->batches, GUINT_TO_POINTER(cpu), b);
	}
	if (cpu < c->nr_cpus && c->by_cpu)
		c->by_cpu[cpu] = b;
	return b;
}

/* Empty every CPU's batch after a commit, keeping their memory for the next one. */
static void batches_reset(HaConn *c)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, c->batches);
	while (g_hash_table_iter_next(&it, NULL, &v))
		batch_reset(v);
	c->pages_len = 0;
}

/* Forget the batches (a session ends). */
static void batches_drop(HaConn *c)
{
	g_hash_table_remove_all(c->batches);
	g_clear_pointer(&c->by_cpu, g_free);
	c->pages_len = 0;
}

static uint32_t hist_hash(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32);
}

/* Twice the slots (HIST_SLOTS_MIN at first), the used ones moved over. */
static void hist_grow(CpuBatch *b)
{
	uint32_t cap = b->hist_cap ? 2 * b->hist_cap : HIST_SLOTS_MIN;
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
static void hist_add(CpuBatch *b, uint64_t key, uint64_t ts)
{
	HistSlot *e;
	uint32_t i;

	if (2 * ((uint64_t)b->hist_used->len + 1) > b->hist_cap)
		hist_grow(b);
	for (i = hist_hash(key) & (b->hist_cap - 1);; i = (i + 1) & (b->hist_cap - 1)) {
		e = &b->hist[i];
		if (!e->count) {
			*e = (HistSlot){ .key = key, .ts_min = ts, .ts_max = ts };
			g_array_append_val(b->hist_used, i);
			break;
		}
		if (e->key == key)
			break;
	}
	e->count++;
	e->ts_min = MIN(e->ts_min, ts);
	e->ts_max = MAX(e->ts_max, ts);
	b->traced++;
	b->ts_min = MIN(b->ts_min, ts);
	b->ts_max = MAX(b->ts_max, ts);
}

/* A store failure seen in a callback fails the frame being applied (and its batch). */
static bool take_store_error(HaConn *c, GError **error)
{
	if (!c->cb_error)
		return true;
	c->failed = true;
	g_propagate_error(error, g_steal_pointer(&c->cb_error));
	return false;
}

/* The id of an inline stack, inserted on first sight. -1 with @error on store failure.
 * A stack seen before costs a hash of its ips and one lookup: nothing is allocated. */
static int64_t fullstack_id(HaConn *c, const uint64_t *ips, uint32_t nr, GError **error)
{
	FullStackKey k = { .hash = fullstack_hash_ips(ips, nr), .nr = nr, .ips = ips };
	const FullStackEnt *cached = g_hash_table_lookup(c->fullstacks, &k);
	g_autofree uint64_t *le = NULL;
	FullStackEnt *ent;
	sqlite3_stmt *st;
	int64_t id = -1;

	if (cached)
		return cached->id;
	le = g_new(uint64_t, nr ? nr : 1);
	for (uint32_t i = 0; i < nr; i++)
		le[i] = GUINT64_TO_LE(ips[i]);
	st = ha_store_stmt(c->store, "INSERT OR IGNORE INTO fullstacks(boot, ips) VALUES(?,?)",
			   error);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, c->boot);
	sqlite3_bind_blob(st, 2, le, (int)nr * 8, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		ha_store_set_error(c->store, error, "insert full stack");
		return -1;
	}
	st = ha_store_stmt(c->store, "SELECT id FROM fullstacks WHERE boot = ? AND ips = ?",
			   error);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, c->boot);
	sqlite3_bind_blob(st, 2, le, (int)nr * 8, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	else
		ha_store_set_error(c->store, error, "find full stack");
	sqlite3_reset(st);
	if (id < 0)
		return -1;
	if (c->fullstacks_bytes + (size_t)nr * 8 > FULLSTACK_CACHE_MAX) {
		g_hash_table_remove_all(c->fullstacks);
		c->fullstacks_bytes = 0;
	}
	c->fullstacks_bytes += sizeof(*ent) + (size_t)nr * 8 + 32;
	ent = g_malloc(sizeof(*ent) + (size_t)nr * 8);
	if (nr)
		memcpy(ent->ips, ips, (size_t)nr * 8);
	ent->key = (FullStackKey){ .hash = k.hash, .nr = nr, .ips = ent->ips };
	ent->id = id;
	g_hash_table_add(c->fullstacks, &ent->key);
	return id;
}

static void on_paired(const HaPaired *p, void *user)
{
	HaConn *c = user;
	CpuBatch *b = batch_get(c, p->cpu);
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
		int64_t id;

		if (c->cb_error)
			return;	/* the batch fails: nothing of it is counted */
		id = fullstack_id(c, p->ips, p->nr_ips, &c->cb_error);
		if (id < 0)
			return;
		key = 2 * (uint64_t)id + 1;
	}
	hist_add(b, key, p->ts);
	c->st.events++;
}

typedef struct {
	HaConn *c;
	uint32_t cpu;
	CpuBatch *b;
	bool fed;		/* an event of this page was fed to the pairer */
} WalkCtx;

static void on_event(const HaEvent *ev, void *user)
{
	WalkCtx *w = user;

	/* events lost before this page: no stack after it belongs to one before it */
	if (!w->fed && ha_tep_missed(w->c->tep) != 0)
		ha_pair_lost(w->c->pair, w->cpu);
	w->fed = true;

	w->b->events++;
	w->b->ts_min = MIN(w->b->ts_min, ev->ts);
	w->b->ts_max = MAX(w->b->ts_max, ev->ts);
	/* a clock probe's marker is ours, not a traced event: never paired nor counted */
	if (ev->kind == HA_EV_OTHER) {
		uint64_t id;

		if (ha_marker_event_id(&w->c->marker, ev->type, ev->data, ev->size, &id)) {
			if (ha_clock_probe_marker(w->c->clk, id, ev->ts, w->cpu) &&
			    !w->c->pending_since)
				w->c->pending_since = g_get_monotonic_time();
			return;
		}
	}
	ha_pair_feed(w->c->pair, w->cpu, ev, NULL);
}

static bool write_batch(HaConn *c, uint32_t cpu, CpuBatch *b, GError **error)
{
	const HaChunkSpan *spans = (const HaChunkSpan *)(void *)b->spans->data;
	sqlite3_stmt *st;
	size_t zlen;
	const void *zdata;

	if (!b->pages && !b->hist_used->len)
		return true;
	zdata = ha_chunkz_compress(c->z, c->pages, spans, b->spans->len, &zlen, error);
	if (!zdata)
		return false;
	st = STMT(c, "INSERT INTO stack_counts(boot, key, count, ts_min, ts_max)"
		  " VALUES(?,?,?,?,?) ON CONFLICT(boot, key) DO UPDATE SET"
		  " count = count + excluded.count,"
		  " ts_min = MIN(ts_min, excluded.ts_min),"
		  " ts_max = MAX(ts_max, excluded.ts_max)", error);
	sqlite3_bind_int64(st, 1, c->boot);
	for (guint i = 0; i < b->hist_used->len; i++) {
		const HistSlot *e = &b->hist[g_array_index(b->hist_used, uint32_t, i)];

		sqlite3_reset(st);
		sqlite3_bind_int64(st, 2, (int64_t)e->key);
		sqlite3_bind_int64(st, 3, (int64_t)e->count);
		sqlite3_bind_int64(st, 4, (int64_t)e->ts_min);
		sqlite3_bind_int64(st, 5, (int64_t)e->ts_max);
		if (!step_done(c, st, error, "count stacks"))
			return false;
	}
	st = STMT(c, "INSERT INTO chunks(boot, cpu, first_seq, last_seq, ts_min, ts_max,"
		  " nr_pages, nr_events, nr_traced, raw_bytes, data)"
		  " VALUES(?,?,?,?,?,?,?,?,?,?,?)", error);
	sqlite3_bind_int64(st, 1, c->boot);
	sqlite3_bind_int64(st, 2, cpu);
	if (b->pages) {
		sqlite3_bind_int64(st, 3, (int64_t)b->first_seq);
		sqlite3_bind_int64(st, 4, (int64_t)b->last_seq);
	}
	if (b->ts_min != UINT64_MAX) {
		sqlite3_bind_int64(st, 5, (int64_t)b->ts_min);
		sqlite3_bind_int64(st, 6, (int64_t)b->ts_max);
	}
	sqlite3_bind_int64(st, 7, b->pages);
	sqlite3_bind_int64(st, 8, b->events);
	sqlite3_bind_int64(st, 9, (int64_t)b->traced);
	sqlite3_bind_int64(st, 10, (int64_t)ha_chunk_packed_size(spans, b->spans->len));
	sqlite3_bind_blob(st, 11, zdata, (int)zlen, SQLITE_STATIC);
	if (!step_done(c, st, error, "insert chunk"))
		return false;
	if (!c->compact_from)
		c->compact_from = sqlite3_last_insert_rowid(ha_store_db(c->store));
	if (ha_chunk_packed_size(spans, b->spans->len) < HA_COMPACT_SMALL)
		c->compact_small = true;
	return true;
}

/* One merge per call while the main loop has nothing else to do. */
static gboolean on_compact_idle(gpointer user)
{
	HaConn *c = user;
	g_autoptr(GError) e = NULL;
	int r;

	if (ha_store_in_txn(c->store))
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

static void compact_schedule(HaConn *c)
{
	if (c->compact_src || c->compact_off || !c->compact_small)
		return;
	c->compact_small = false;
	c->compact_src = g_idle_source_new();
	g_source_set_priority(c->compact_src, G_PRIORITY_LOW);
	g_source_set_callback(c->compact_src, on_compact_idle, c, NULL);
	g_source_set_static_name(c->compact_src, "host-agent chunk compaction");
	g_source_attach(c->compact_src, g_main_context_get_thread_default());
}

/* The stream ends: merge what is still small (the last runs too), then stop. */
static void compact_finish(HaConn *c)
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

/* The database's size in bytes (pages in use by the open transaction included). */
static bool db_bytes(HaConn *c, uint64_t *ret_used, GError **error)
{
	sqlite3_stmt *st;
	uint64_t pages, psize;

	st = STMT(c, "PRAGMA page_count", error);
	if (sqlite3_step(st) != SQLITE_ROW) {
		ha_store_set_error(c->store, error, "page_count");
		return false;
	}
	pages = (uint64_t)sqlite3_column_int64(st, 0);
	st = STMT(c, "PRAGMA page_size", error);
	if (sqlite3_step(st) != SQLITE_ROW) {
		ha_store_set_error(c->store, error, "page_size");
		return false;
	}
	psize = (uint64_t)sqlite3_column_int64(st, 0);
	*ret_used = pages * psize;
	return true;
}

/* The probes answered since the last commit, into clock_samples. */
static bool write_clock_samples(HaConn *c, GError **error)
{
	guint n;
	const HaClockSample *cs = ha_clock_probe_samples(c->clk, &n);

	for (guint i = 0; i < n; i++) {
		sqlite3_stmt *st = STMT(c, "INSERT OR REPLACE INTO clock_samples(boot, guest_ts,"
					" cpu, mono_lo, mono_hi, real_lo, real_hi, boot_off,"
					" tai_off) VALUES(?,?,?,?,?,?,?,?,?)", error);

		sqlite3_bind_int64(st, 1, c->boot);
		sqlite3_bind_int64(st, 2, (int64_t)cs[i].guest_ts);
		sqlite3_bind_int64(st, 3, cs[i].cpu);
		sqlite3_bind_int64(st, 4, cs[i].mono_lo);
		sqlite3_bind_int64(st, 5, cs[i].mono_hi);
		sqlite3_bind_int64(st, 6, cs[i].real_lo);
		sqlite3_bind_int64(st, 7, cs[i].real_hi);
		sqlite3_bind_int64(st, 8, cs[i].boot_off);
		sqlite3_bind_int64(st, 9, cs[i].tai_off);
		if (!step_done(c, st, error, "insert clock sample"))
			return false;
	}
	return true;
}

bool ha_conn_flush(HaConn *c, GError **error)
{
	GHashTableIter it;
	gpointer k, v;
	sqlite3_stmt *st;
	g_autoptr(GBytes) pairs = NULL;
	uint64_t used = 0, orphans;

	if (!c->hello)
		return true;
	if (c->failed) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "an earlier batch failed");
		return false;
	}
	if (!ha_store_in_txn(c->store)) {
		guint n;

		ha_clock_probe_samples(c->clk, &n);
		if (!n) {
			queue_ack(c);
			return true;
		}
		/* clock samples completed by a TIME_REPLY alone */
		if (!ha_store_begin(c->store, error))
			return false;
	}
	/* Any failure below rolls the batch back; its frames were not acknowledged and
	 * the guest resends them on its next connection. */
	if (!take_store_error(c, error))
		return false;
	c->failed = true;
	g_hash_table_iter_init(&it, c->batches);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (!write_batch(c, GPOINTER_TO_UINT(k), v, error))
			return false;
	orphans = ha_pair_orphans(c->pair) - c->orphans_saved;
	st = STMT(c, "UPDATE streams SET next_seq = ?, gap_frames = gap_frames + ?,"
		  " dup_frames = dup_frames + ?, malformed = malformed + ?,"
		  " bad_pages = bad_pages + ?, orphan_stacks = orphan_stacks + ?,"
		  " cur_epoch = ?, missed_events = missed_events + ?,"
		  " missed_uncounted = missed_uncounted + ? WHERE id = ?", error);
	sqlite3_bind_int64(st, 1, (int64_t)c->expected);
	sqlite3_bind_int64(st, 2, (int64_t)c->d_gap);
	sqlite3_bind_int64(st, 3, (int64_t)c->d_dup);
	sqlite3_bind_int64(st, 4, (int64_t)c->d_malformed);
	sqlite3_bind_int64(st, 5, (int64_t)c->d_bad_pages);
	sqlite3_bind_int64(st, 6, (int64_t)orphans);
	if (c->cur_epoch >= 0)
		sqlite3_bind_int64(st, 7, c->cur_epoch);
	sqlite3_bind_int64(st, 8, (int64_t)c->d_missed);
	sqlite3_bind_int64(st, 9, (int64_t)c->d_missed_uncounted);
	sqlite3_bind_int64(st, 10, c->stream);
	if (!step_done(c, st, error, "update stream"))
		return false;
	pairs = ha_pair_save(c->pair);
	st = STMT(c, "UPDATE boots SET last_time = ?, pair_state = ? WHERE id = ?", error);
	sqlite3_bind_int64(st, 1, g_get_real_time());
	sqlite3_bind_blob(st, 2, g_bytes_get_data(pairs, NULL),
			  (int)g_bytes_get_size(pairs), SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, c->boot);
	if (!step_done(c, st, error, "update boot"))
		return false;
	if (!write_clock_samples(c, error))
		return false;
	if (c->lim.quota_bytes && !db_bytes(c, &used, error))
		return false;
	if (c->lim.quota_bytes && used > c->lim.quota_bytes) {
		ha_store_rollback(c->store);
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
			    "disk quota of domain %s reached: the store would grow to %" PRIu64
			    " bytes, above the quota of %" PRIu64 " bytes; frames from seq %"
			    PRIu64 " are not stored or acknowledged",
			    c->domain, used, c->lim.quota_bytes, c->acked + 1);
		return false;
	}
	if (!ha_store_commit(c->store, error))
		return false;
	c->failed = false;
	c->st.commits++;
	c->pending_since = 0;
	c->orphans_saved += orphans;
	c->d_gap = c->d_dup = c->d_malformed = c->d_bad_pages = 0;
	c->d_missed = c->d_missed_uncounted = 0;
	batches_reset(c);
	ha_clock_probe_samples_done(c->clk);
	c->batch_bytes = 0;
	c->batch_frames = 0;
	queue_ack(c);
	compact_schedule(c);
	return true;
}

/* ---- frames -------------------------------------------------------------------- */

static bool load_boot_state(HaConn *c, const void *pairs, size_t pairs_len, GError **error)
{
	sqlite3_stmt *st;
	int rc;

	c->tep = ha_tep_new(c->page_size, c->big_endian);
	c->pair = ha_pair_new(on_paired, c);
	if (pairs_len && !ha_pair_load(c->pair, pairs, pairs_len))
		g_warning("%s: boot %s: stored pairing state unreadable, ignored", c->domain,
			  c->boot_str);
	st = STMT(c, "SELECT name, text, kind FROM texts WHERE boot = ? AND kind IN"
		  " ('format', 'format-refused') ORDER BY seq", error);
	sqlite3_bind_int64(st, 1, c->boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		g_autoptr(GError) e = NULL;
		const char *name = (const char *)sqlite3_column_text(st, 0);

		if (!g_strcmp0((const char *)sqlite3_column_text(st, 2), "format-refused")) {
			ha_tep_add_refused(c->tep, name, (size_t)sqlite3_column_bytes(st, 1));
			continue;
		}
		if (!ha_tep_add_format(c->tep, name, sqlite3_column_blob(st, 1),
				       (size_t)sqlite3_column_bytes(st, 1), &e))
			g_warning("%s: boot %s: stored format: %s", c->domain, c->boot_str,
				  e->message);
		else if (!g_strcmp0(name, "ftrace/print"))
			ha_marker_format_parse(sqlite3_column_blob(st, 1),
					       (size_t)sqlite3_column_bytes(st, 1), &c->marker);
	}
	if (rc != SQLITE_DONE) {
		ha_store_set_error(c->store, error, "read stored formats");
		return false;
	}
	sqlite3_reset(st);
	return true;
}

/*
 * What a later HELLO of a boot changes in what its first HELLO said (the row of
 * @st: nr_cpus, page_size, map_bits, max_depth, flags, text_addr from column 2), as
 * "page size 4096 -> 8192, ..."; NULL when nothing. g_free().
 */
static char *geometry_change(sqlite3_stmt *st, const struct smp_hello *h)
{
	static const char *const what[] = { "CPUs", "page size", "map bits", "max depth" };
	uint64_t now[] = { h->nr_cpus, h->page_size, h->map_bits, h->max_depth };
	uint32_t flags = (uint32_t)sqlite3_column_int64(st, 6);
	uint64_t text = (uint64_t)sqlite3_column_int64(st, 7);
	GString *o = g_string_new(NULL);

	for (int i = 0; i < 4; i++) {
		uint64_t was = (uint64_t)sqlite3_column_int64(st, 2 + i);

		if (was != now[i])
			g_string_append_printf(o, "%s%s %" PRIu64 " -> %" PRIu64, o->len ? ", " : "",
					       what[i], was, now[i]);
	}
	if ((flags ^ h->flags) & SMP_HELLO_PAGES_BE)
		g_string_append_printf(o, "%spages %s -> %s", o->len ? ", " : "",
				       flags & SMP_HELLO_PAGES_BE ? "big-endian" : "little-endian",
				       h->flags & SMP_HELLO_PAGES_BE ? "big-endian" : "little-endian");
	if ((flags ^ h->flags) & SMP_HELLO_STACKMAP)
		g_string_append_printf(o, "%sstackmap %s -> %s", o->len ? ", " : "",
				       flags & SMP_HELLO_STACKMAP ? "on" : "off",
				       h->flags & SMP_HELLO_STACKMAP ? "on" : "off");
	if (text != h->text_addr)
		g_string_append_printf(o, "%s_text 0x%" PRIx64 " -> 0x%" PRIx64, o->len ? ", " : "",
				       text, h->text_addr);
	if (!o->len) {
		g_string_free(o, TRUE);
		return NULL;
	}
	return g_string_free(o, FALSE);
}

/* What the boot already stores of each text kind (its every stream and session). */
static bool load_text_use(HaConn *c, GError **error)
{
	sqlite3_stmt *st = STMT(c, "SELECT kind, COUNT(*), COALESCE(SUM(length(text)), 0)"
				" FROM texts WHERE boot = ? GROUP BY kind", error);
	int rc;

	memset(c->text_used, 0, sizeof(c->text_used));
	sqlite3_bind_int64(st, 1, c->boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);

		for (int k = 0; k < TEXT_KINDS; k++)
			if (!g_strcmp0(kind, text_kinds[k].kind))
				c->text_used[k] = (uint64_t)sqlite3_column_int64(st, 1) *
						  HA_TEXT_ROW_COST +
						  (uint64_t)sqlite3_column_int64(st, 2);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		ha_store_set_error(c->store, error, "text use");
		return false;
	}
	return true;
}

static bool open_stream(HaConn *c, const struct smp_hello *h, GError **error)
{
	sqlite3_stmt *st;
	int64_t now = g_get_real_time();
	g_autofree void *pairs = NULL;
	size_t pairs_len = 0;
	g_autofree char *release = g_strndup(h->release, h->release_len);
	g_autofree char *clock = g_strndup(h->trace_clock, h->clock_len);

	if (!ha_store_begin(c->store, error))
		return false;
	st = STMT(c, "SELECT id, pair_state, nr_cpus, page_size, map_bits, max_depth, flags,"
		  " text_addr FROM boots WHERE boot_uuid = ?", error);
	sqlite3_bind_blob(st, 1, h->boot_id, 16, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		g_autofree char *changed = NULL;

		c->boot = sqlite3_column_int64(st, 0);
		pairs_len = (size_t)sqlite3_column_bytes(st, 1);
		pairs = g_memdup2(sqlite3_column_blob(st, 1), pairs_len);
		changed = geometry_change(st, h);
		sqlite3_reset(st);
		if (changed) {
			/* The boot's pages, ids and stacks are stored and parsed with its
			 * first geometry: a guest cannot change it halfway. */
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "HELLO of boot %s stream %016" PRIx64 " changes the boot's"
				    " geometry (%s): refused", c->boot_str, h->stream_id, changed);
			return false;
		}
		st = STMT(c, "UPDATE boots SET ended = NULL, end_time = NULL, last_time = ?"
			  " WHERE id = ?", error);
		sqlite3_bind_int64(st, 1, now);
		sqlite3_bind_int64(st, 2, c->boot);
		if (!step_done(c, st, error, "resume boot"))
			return false;
	} else {
		sqlite3_reset(st);
		st = STMT(c, "INSERT INTO boots(boot_uuid, release, build_id, trace_clock,"
			  " text_addr, nr_cpus, page_size, map_bits, max_depth, flags,"
			  " start_time, last_time) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", error);
		sqlite3_bind_blob(st, 1, h->boot_id, 16, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, release, -1, SQLITE_STATIC);
		sqlite3_bind_blob(st, 3, h->build_id, h->build_id_len, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, clock, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, (int64_t)h->text_addr);
		sqlite3_bind_int64(st, 6, h->nr_cpus);
		sqlite3_bind_int64(st, 7, h->page_size);
		sqlite3_bind_int64(st, 8, h->map_bits);
		sqlite3_bind_int64(st, 9, h->max_depth);
		sqlite3_bind_int64(st, 10, h->flags);
		sqlite3_bind_int64(st, 11, now);
		sqlite3_bind_int64(st, 12, now);
		if (!step_done(c, st, error, "insert boot"))
			return false;
		c->boot = sqlite3_last_insert_rowid(ha_store_db(c->store));
	}
	/* Any other boot still open, or left disconnected, ended without a BYE and the
	 * domain has booted again since: it crashed (or was reset). */
	st = STMT(c, "UPDATE boots SET ended = 'crashed', end_time = last_time"
		  " WHERE id != ? AND (ended IS NULL OR ended = 'disconnected')", error);
	sqlite3_bind_int64(st, 1, c->boot);
	if (!step_done(c, st, error, "close older boots"))
		return false;

	st = STMT(c, "SELECT id, next_seq, cur_epoch FROM streams WHERE boot = ? AND"
		  " stream_id = ?", error);
	sqlite3_bind_int64(st, 1, c->boot);
	sqlite3_bind_int64(st, 2, (int64_t)h->stream_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		c->stream = sqlite3_column_int64(st, 0);
		c->expected = (uint64_t)sqlite3_column_int64(st, 1);
		c->cur_epoch = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 :
			       sqlite3_column_int64(st, 2);
		sqlite3_reset(st);
		if (!smp_seq_next_ok(c->expected)) {
			/* e.g. a store written before sequence numbers were bounded */
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "stream %016" PRIx64 " of boot %s: stored next seq %" PRIu64
				    " is outside 1..%" PRIu64 ": refused (start a new stream)",
				    h->stream_id, c->boot_str, c->expected, SMP_SEQ_MAX + 1);
			c->expected = 1;
			return false;
		}
	} else {
		sqlite3_reset(st);
		st = STMT(c, "INSERT INTO streams(boot, stream_id) VALUES(?, ?)", error);
		sqlite3_bind_int64(st, 1, c->boot);
		sqlite3_bind_int64(st, 2, (int64_t)h->stream_id);
		if (!step_done(c, st, error, "insert stream"))
			return false;
		c->stream = sqlite3_last_insert_rowid(ha_store_db(c->store));
		c->expected = 1;
	}
	if (!ha_store_commit(c->store, error))
		return false;
	c->acked = c->expected - 1;
	if (!load_text_use(c, error))
		return false;
	return load_boot_state(c, pairs, pairs_len, error);
}

/* What the session's clock probes gave, once at its end. */
static void log_clock(HaConn *c)
{
	const HaClockProbeStats *k = ha_clock_probe_stats(c->clk);

	if (!k->sent)
		return;
	g_message("%s: boot %s stream %016" PRIx64 ": %" PRIu64 " clock probes, %" PRIu64
		  " samples (best round trip %.1f us), %" PRIu64 " failed in the guest, %"
		  PRIu64 " unanswered, %" PRIu64 " unmatched", c->domain, c->boot_str,
		  c->stream_id, k->sent, k->samples,
		  k->best_rtt_ns < 0 ? 0.0 : (double)k->best_rtt_ns / 1000.0, k->failed,
		  k->expired, k->unmatched);
}

static void mark_disconnected(HaConn *c)
{
	sqlite3_stmt *st = ha_store_stmt(c->store, "UPDATE boots SET ended = 'disconnected',"
					 " end_time = ? WHERE id = ? AND ended IS NULL", NULL);

	if (st) {
		sqlite3_bind_int64(st, 1, g_get_real_time());
		sqlite3_bind_int64(st, 2, c->boot);
		if (sqlite3_step(st) != SQLITE_DONE)
			g_warning("%s: %s", c->domain, sqlite3_errmsg(ha_store_db(c->store)));
		sqlite3_reset(st);
	}
	g_message("%s: boot %s stream %016" PRIx64 ": disconnected without BYE after seq %"
		  PRIu64, c->domain, c->boot_str, c->stream_id, c->expected - 1);
}

/* The guest starts over on the same connection: finish the current session (its
 * frames committed and acknowledged) and forget it. */
static bool end_session(HaConn *c, GError **error)
{
	if (!ha_conn_flush(c, error))
		return false;
	compact_finish(c);
	if (!c->bye)
		mark_disconnected(c);
	log_clock(c);
	g_clear_pointer(&c->tep, ha_tep_free);
	g_clear_pointer(&c->pair, ha_pair_free);
	batches_drop(c);
	g_hash_table_remove_all(c->fullstacks);
	c->fullstacks_bytes = 0;
	c->hello = false;
	c->bye = false;
	c->cur_epoch = -1;
	c->warned_unparsed = false;
	c->orphans_saved = 0;
	c->time_ok = false;
	c->marker.type = -1;
	ha_clock_probe_reset(c->clk);
	return true;
}

static bool queue_welcome(HaConn *c, GError **error)
{
	uint8_t p[16] = { 0 };
	struct smp_welcome w = { .resume_seq = c->expected, .max_payload = c->lim.max_payload };

	if (!queue_frame(c, SMP_WELCOME, p, smp_welcome_encode(&w, p, sizeof(p)))) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "no valid WELCOME for resume seq %" PRIu64 " / max payload %u",
			    w.resume_seq, w.max_payload);
		return false;
	}
	return true;
}

static bool on_hello(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_hello h;
	int r = smp_hello_decode(&h, f->payload, f->len);

	if (r < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "malformed HELLO (%s)", smp_strerror(r));
		return false;
	}
	/* HELLOs with nothing applied in between: bounded (PROTOCOL.md 3, item 1). */
	if (++c->hellos > c->lim.max_hellos) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "%u HELLOs on one connection without data between them (limit %u)",
			    c->hellos, c->lim.max_hellos);
		return false;
	}
	/* A later HELLO starts a new session as if the connection had been reopened:
	 * a virtio-serial guest cannot close the host's side of the port. */
	if (c->hello && !end_session(c, error))
		return false;
	if (h.page_size > SMP_PAGE_SIZE_MAX || h.map_bits > 19) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "HELLO with page size %u / map bits %u out of range", h.page_size,
			    h.map_bits);
		return false;
	}
	memcpy(c->boot_uuid, h.boot_id, 16);
	for (int i = 0, o = 0; i < 16; i++) {
		o += g_snprintf(c->boot_str + o, sizeof(c->boot_str) - o, "%02x", h.boot_id[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			c->boot_str[o++] = '-';
	}
	c->stream_id = h.stream_id;
	c->gap_note = false;
	c->nr_cpus = h.nr_cpus;
	c->page_size = h.page_size;
	c->map_bits = h.map_bits;
	c->big_endian = h.flags & SMP_HELLO_PAGES_BE;
	c->time_ok = h.flags & SMP_HELLO_TIME;
	g_free(c->by_cpu);
	c->by_cpu = g_new0(CpuBatch *, c->nr_cpus);	/* nr_cpus <= SMP_MAX_CPUS */
	if (!open_stream(c, &h, error))
		return false;
	c->hello = true;
	g_message("%s: %s: boot %s (%.*s) stream %016" PRIx64 ", resuming at seq %" PRIu64,
		  c->domain, c->peer, c->boot_str, (int)h.release_len, h.release,
		  c->stream_id, c->expected);
	return queue_welcome(c, error);
}

/* @stream 0 for FORMAT texts (one per name per boot), the stream's row otherwise. */
static bool store_text(HaConn *c, const char *kind, const char *name, int64_t stream,
		       uint32_t gen, uint32_t chunk, bool last, uint64_t seq,
		       const void *text, size_t len, GError **error)
{
	sqlite3_stmt *st = STMT(c, "INSERT OR REPLACE INTO texts(boot, kind, name, stream,"
				" generation, chunk, last, seq, text) VALUES(?,?,?,?,?,?,?,?,?)",
				error);

	sqlite3_bind_int64(st, 1, c->boot);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, stream);
	sqlite3_bind_int64(st, 5, gen);
	sqlite3_bind_int64(st, 6, chunk);
	sqlite3_bind_int(st, 7, last);
	sqlite3_bind_int64(st, 8, (int64_t)seq);
	sqlite3_bind_blob(st, 9, text, (int)len, SQLITE_STATIC);
	return step_done(c, st, error, "insert text");
}

static bool on_format(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_format m;
	g_autoptr(GError) e = NULL;
	g_autofree char *name = NULL;
	int r = smp_format_decode(&m, f->payload, f->len);

	if (r < 0) {
		malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	name = g_strndup(m.name, m.name_len);
	/* A name already known keeps its first text, in the parser and in the store
	 * (libtraceevent cannot replace an event): what is stored per boot is what
	 * its parser holds, within the parser's budget (tep.h), across sessions. */
	if (ha_tep_knows(c->tep, name))
		return true;
	if (!ha_tep_add_format(c->tep, name, m.text, m.text_len, &e)) {
		malformed(c, f, "%s", e->message);
		/* Refused by libtraceevent itself, which may keep part of it: stored as
		 * refused, so that every later session of the boot charges its bytes to
		 * the parser's budget and never parses that name again. */
		if (ha_tep_knows(c->tep, name))
			return store_text(c, "format-refused", name, 0, 0, 0, false, f->seq,
					  m.text, m.text_len, error);
		return true;
	}
	if (!strcmp(name, "ftrace/print"))
		ha_marker_format_parse(m.text, m.text_len, &c->marker);
	return store_text(c, "format", name, 0, 0, 0, false, f->seq, m.text, m.text_len,
			  error);
}

static bool on_text(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_text m;
	int r = smp_text_decode(&m, f->payload, f->len), k = 0;
	uint64_t cost;

	if (r < 0) {
		malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	while (k < TEXT_KINDS - 1 && text_kinds[k].type != f->type)
		k++;
	cost = HA_TEXT_ROW_COST + m.text_len;
	if (c->text_used[k] + cost > text_kinds[k].budget) {
		c->st.texts_refused++;
		malformed(c, f, "%s text (generation %u chunk %u, %zu bytes) beyond the boot's"
			  " budget of %" PRIu64 " bytes for them: refused", text_kinds[k].kind,
			  m.generation, m.chunk, m.text_len, text_kinds[k].budget);
		return true;
	}
	c->text_used[k] += cost;
	return store_text(c, text_kinds[k].kind, "", c->stream, m.generation, m.chunk,
			  m.flags & SMP_TEXT_LAST, f->seq, m.text, m.text_len, error);
}

static bool on_page(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_page m;
	g_autoptr(GError) e = NULL;
	WalkCtx w = { .c = c };
	int r = smp_page_decode(&m, f->payload, f->len);

	if (r < 0) {
		malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	if (m.cpu >= c->nr_cpus || m.data_len > c->page_size) {
		malformed(c, f, "cpu %u (of %u) or page of %zu bytes (page size %u)", m.cpu,
			  c->nr_cpus, m.data_len, c->page_size);
		return true;
	}
	w.cpu = m.cpu;
	w.b = batch_get(c, m.cpu);
	if (ha_tep_ready(c->tep)) {
		long missed;

		if (ha_tep_walk_page(c->tep, m.data, m.data_len, on_event, &w, &e) < 0) {
			c->d_bad_pages++;
			malformed(c, f, "cpu %u: %s", m.cpu, e->message);
			return true;
		}
		missed = ha_tep_missed(c->tep);
		if (missed != 0 && !w.fed)
			ha_pair_lost(c->pair, m.cpu);
		if (missed > 0)
			c->d_missed += (uint64_t)missed;
		else if (missed < 0)
			c->d_missed_uncounted++;
	} else if (!c->warned_unparsed) {
		c->warned_unparsed = true;
		g_warning("%s: boot %s: PAGE seq %" PRIu64 " before the header_page and stack"
			  " event formats: stored unparsed", c->domain, c->boot_str, f->seq);
	}
	if (!w.b->pages)
		w.b->first_seq = f->seq;
	w.b->last_seq = f->seq;
	w.b->pages++;
	/* a batch is flushed at batch_bytes of payload: this grows to that and stays */
	if (c->pages_len + m.data_len > c->pages_cap) {
		c->pages_cap = MAX(c->pages_len + m.data_len, MIN(2 * c->pages_cap,
				   (size_t)c->lim.batch_bytes + c->lim.max_payload));
		c->pages = g_realloc(c->pages, c->pages_cap);
	}
	memcpy(c->pages + c->pages_len, m.data, m.data_len);
	g_array_append_val(w.b->spans, ((HaChunkSpan){ .off = (uint32_t)c->pages_len,
						       .len = (uint32_t)m.data_len }));
	c->pages_len += m.data_len;
	return true;
}

static bool on_stacks(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_delta_rec rec;
	size_t off = 0;
	int r;
	uint32_t slots = c->map_bits ? 2u << c->map_bits : 0;

	if (c->cur_epoch < 0) {
		malformed(c, f, "STACKS before the stream's first EPOCH");
		return true;
	}
	/* Check every record first: a frame is applied whole or not at all. */
	while ((r = smp_delta_next(f->payload, f->len, &off, &rec)) == 1) {
		if (rec.kind != SMP_DELTA_STACK ||
		    smp_id_tag(rec.stack_id) != smp_epoch_tag((uint64_t)c->cur_epoch) ||
		    smp_id_slot(rec.stack_id) >= slots) {
			malformed(c, f, "record at %zu: kind %u id 0x%x not a stack of epoch %"
				  PRId64 " (slots %u)", off, rec.kind, rec.stack_id,
				  c->cur_epoch, slots);
			return true;
		}
	}
	if (r < 0 || off != f->len) {
		malformed(c, f, "truncated or invalid delta record at offset %zu", off);
		return true;
	}
	/*
	 * An id already stored for this epoch is normal when the stack is the same (the
	 * guest re-reads the whole map after a gap); with other frames it is a conflict:
	 * the frame is malformed and none of it stays (savepoint), the first definition
	 * wins.
	 */
	if (!ha_store_exec(c->store, "SAVEPOINT stacks", error))
		return false;
	off = 0;
	while (smp_delta_next(f->payload, f->len, &off, &rec) == 1) {
		sqlite3_stmt *st = STMT(c, "INSERT OR IGNORE INTO stacks(boot, epoch, stack_id,"
					" nr, ref_count, ips) VALUES(?,?,?,?,?,?)", error);
		bool same;

		sqlite3_bind_int64(st, 1, c->boot);
		sqlite3_bind_int64(st, 2, c->cur_epoch);
		sqlite3_bind_int64(st, 3, rec.stack_id);
		sqlite3_bind_int64(st, 4, rec.nr);
		sqlite3_bind_int64(st, 5, rec.ref_count);
		sqlite3_bind_blob(st, 6, rec.ips, (int)rec.nr * 8, SQLITE_STATIC);
		if (!step_done(c, st, error, "insert stack"))
			return false;
		if (sqlite3_changes(ha_store_db(c->store)) > 0)
			continue;
		st = STMT(c, "SELECT ips FROM stacks WHERE boot = ? AND epoch = ? AND"
			  " stack_id = ?", error);
		sqlite3_bind_int64(st, 1, c->boot);
		sqlite3_bind_int64(st, 2, c->cur_epoch);
		sqlite3_bind_int64(st, 3, rec.stack_id);
		if (sqlite3_step(st) != SQLITE_ROW) {
			/* INSERT OR IGNORE ignored it, so the row is there: a store failure */
			ha_store_set_error(c->store, error, "read stored stack");
			return false;
		}
		same = sqlite3_column_bytes(st, 0) == (int)rec.nr * 8 &&
		       !memcmp(sqlite3_column_blob(st, 0), rec.ips, (size_t)rec.nr * 8);
		sqlite3_reset(st);
		if (!same) {
			if (!ha_store_exec(c->store, "ROLLBACK TO stacks; RELEASE stacks", error))
				return false;
			malformed(c, f, "record before offset %zu redefines stack_id 0x%x of"
				  " epoch %" PRId64 " with other frames (the stored ones are kept)",
				  off, rec.stack_id, c->cur_epoch);
			return true;
		}
	}
	return ha_store_exec(c->store, "RELEASE stacks", error);
}

static bool on_epoch(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_delta_rec rec;
	size_t off = 0;
	sqlite3_stmt *st;
	int r = smp_delta_next(f->payload, f->len, &off, &rec);

	if (r != 1 || off != f->len || rec.kind != SMP_DELTA_EPOCH) {
		malformed(c, f, "not exactly one epoch record");
		return true;
	}
	if (rec.epoch > INT64_MAX || (c->cur_epoch >= 0 && rec.epoch < (uint64_t)c->cur_epoch)) {
		malformed(c, f, "epoch %" PRIu64 " goes back from %" PRId64, rec.epoch,
			  c->cur_epoch);
		return true;
	}
	st = STMT(c, "INSERT OR IGNORE INTO epochs(boot, epoch, tag, start_ts) VALUES(?,?,?,?)",
		  error);
	sqlite3_bind_int64(st, 1, c->boot);
	sqlite3_bind_int64(st, 2, (int64_t)rec.epoch);
	sqlite3_bind_int64(st, 3, smp_epoch_tag(rec.epoch));
	sqlite3_bind_int64(st, 4, (int64_t)rec.timestamp);
	if (!step_done(c, st, error, "insert epoch"))
		return false;
	c->cur_epoch = (int64_t)rec.epoch;
	return true;
}

static bool on_lost(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_lost m;
	sqlite3_stmt *st;
	int r = smp_lost_decode(&m, f->payload, f->len);

	if (r < 0 || m.nr > c->nr_cpus) {
		malformed(c, f, "%s", r < 0 ? smp_strerror(r) : "more CPUs than HELLO said");
		return true;
	}
	for (uint32_t i = 0; i < m.nr; i++) {
		struct smp_lost_cpu lc;

		smp_lost_cpu(&m, i, &lc);
		if (lc.cpu >= c->nr_cpus) {
			malformed(c, f, "cpu %u of %u", lc.cpu, c->nr_cpus);
			return true;
		}
	}
	for (uint32_t i = 0; i < m.nr; i++) {
		struct smp_lost_cpu lc;

		smp_lost_cpu(&m, i, &lc);
		st = STMT(c, "INSERT OR REPLACE INTO lost(boot, stream, cpu, overrun,"
			  " commit_overrun, dropped_events, read_events) VALUES(?,?,?,?,?,?,?)",
			  error);
		sqlite3_bind_int64(st, 1, c->boot);
		sqlite3_bind_int64(st, 2, c->stream);
		sqlite3_bind_int64(st, 3, lc.cpu);
		sqlite3_bind_int64(st, 4, (int64_t)lc.overrun);
		sqlite3_bind_int64(st, 5, (int64_t)lc.commit_overrun);
		sqlite3_bind_int64(st, 6, (int64_t)lc.dropped_events);
		sqlite3_bind_int64(st, 7, (int64_t)lc.read_events);
		if (!step_done(c, st, error, "insert lost"))
			return false;
	}
	st = STMT(c, "UPDATE streams SET dropped_frames = ?, dropped_bytes = ? WHERE id = ?",
		  error);
	sqlite3_bind_int64(st, 1, (int64_t)m.agent_dropped_frames);
	sqlite3_bind_int64(st, 2, (int64_t)m.agent_dropped_bytes);
	sqlite3_bind_int64(st, 3, c->stream);
	return step_done(c, st, error, "update dropped");
}

static bool on_stats(HaConn *c, const struct smp_frame *f, GError **error)
{
	uint32_t nr;
	int r = smp_stats_decode(&nr, f->payload, f->len);

	if (r < 0) {
		malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	for (uint32_t i = 0; i < nr; i++) {
		struct smp_stat s;
		sqlite3_stmt *st = STMT(c, "INSERT OR REPLACE INTO stats(boot, stream, key, value)"
					" VALUES(?,?,?,?)", error);

		smp_stats_get(f->payload, i, &s);
		sqlite3_bind_int64(st, 1, c->boot);
		sqlite3_bind_int64(st, 2, c->stream);
		sqlite3_bind_int64(st, 3, s.key);
		sqlite3_bind_int64(st, 4, (int64_t)s.value);
		if (!step_done(c, st, error, "insert stat"))
			return false;
	}
	return true;
}

static bool on_bye(HaConn *c, const struct smp_frame *f, GError **error)
{
	uint32_t reason;
	sqlite3_stmt *st;
	int r = smp_bye_decode(&reason, f->payload, f->len);

	if (r < 0) {
		malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	/* Nothing more comes from this boot's ring buffers through this stream. */
	ha_pair_flush(c->pair);
	st = STMT(c, "UPDATE boots SET ended = 'clean', end_time = ? WHERE id = ?", error);
	sqlite3_bind_int64(st, 1, g_get_real_time());
	sqlite3_bind_int64(st, 2, c->boot);
	if (!step_done(c, st, error, "bye"))
		return false;
	c->bye = true;
	g_message("%s: boot %s stream %016" PRIx64 ": BYE (%s) at seq %" PRIu64, c->domain,
		  c->boot_str, c->stream_id, reason == SMP_BYE_RESTART ? "agent restarting" :
		  "shutdown", f->seq);
	return true;
}

static bool apply(HaConn *c, const struct smp_frame *f, GError **error)
{
	switch (f->type) {
	case SMP_FORMAT:
		return on_format(c, f, error);
	case SMP_KSYMS:
	case SMP_MODULES:
	case SMP_CMDLINES:
		return on_text(c, f, error);
	case SMP_PAGE:
		return on_page(c, f, error);
	case SMP_STACKS:
		return on_stacks(c, f, error);
	case SMP_EPOCH:
		return on_epoch(c, f, error);
	case SMP_LOST:
		return on_lost(c, f, error);
	case SMP_STATS:
		return on_stats(c, f, error);
	case SMP_BYE:
		return on_bye(c, f, error);
	default:
		return true;	/* a newer minor's type: skipped, its seq consumed */
	}
}

/* Unsequenced: it completes a probe at the time its read returned (c->rx_time). */
static bool on_time_reply(HaConn *c, const struct smp_frame *f)
{
	struct smp_time_reply m;
	int r = smp_time_reply_decode(&m, f->payload, f->len);

	if (r < 0) {
		malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	if (!c->time_ok) {
		malformed(c, f, "TIME_REPLY from a guest that did not offer TIME");
		return true;
	}
	/* an id we hold no probe for (expired, another connection's, made up): ignored */
	if (ha_clock_probe_reply(c->clk, m.probe_id, m.status, &c->rx_time) &&
	    !c->pending_since)
		c->pending_since = g_get_monotonic_time();
	return true;
}

/* Gaps of a connection whose positions are stored; beyond, streams.gap_frames alone
 * counts them (a guest cannot make the host write nr_cpus rows per frame). */
#define HA_GAPS_NOTED_MAX 256

/*
 * Where the gap c->gap_lo..gap_hi fell (store.h, table gaps): for every CPU the newest
 * event time the host holds, committed or in the open batch. Exports mark the loss
 * before each CPU's first event after it (export-tracedat.h).
 */
static bool note_gap(HaConn *c, GError **error)
{
	g_autofree int64_t *after = g_new0(int64_t, c->nr_cpus ? c->nr_cpus : 1);
	sqlite3_stmt *st;
	int r;

	c->gap_note = false;
	if (c->gaps_noted >= HA_GAPS_NOTED_MAX || !c->nr_cpus)
		return true;
	c->gaps_noted++;
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++)
		if (c->by_cpu[cpu] && c->by_cpu[cpu]->events)
			after[cpu] = (int64_t)c->by_cpu[cpu]->ts_max;
	st = STMT(c, "SELECT cpu, MAX(ts_max) FROM chunks WHERE boot = ? AND ts_max IS NOT"
		  " NULL GROUP BY cpu", error);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, c->boot);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t cpu = sqlite3_column_int64(st, 0);

		if (cpu >= 0 && cpu < c->nr_cpus)
			after[cpu] = MAX(after[cpu], sqlite3_column_int64(st, 1));
	}
	sqlite3_reset(st);
	if (r != SQLITE_DONE) {
		ha_store_set_error(c->store, error, "gap positions");
		return false;
	}
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++) {
		st = STMT(c, "INSERT OR IGNORE INTO gaps(boot, stream, seq_lo, seq_hi, cpu,"
			  " after_ts) VALUES(?,?,?,?,?,?)", error);
		if (!st)
			return false;
		sqlite3_bind_int64(st, 1, c->boot);
		sqlite3_bind_int64(st, 2, c->stream);
		sqlite3_bind_int64(st, 3, (int64_t)c->gap_lo);
		sqlite3_bind_int64(st, 4, (int64_t)c->gap_hi);
		sqlite3_bind_int64(st, 5, cpu);
		sqlite3_bind_int64(st, 6, after[cpu]);
		if (!step_done(c, st, error, "insert gap"))
			return false;
	}
	return true;
}

static bool on_frame(HaConn *c, const struct smp_frame *f, GError **error)
{
	c->st.frames++;
	if (f->type == SMP_HELLO)
		return on_hello(c, f, error);
	if (!c->hello) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "%s frame before HELLO", smp_type_name(f->type) ?
			    smp_type_name(f->type) : "unknown");
		return false;
	}
	if (f->type == SMP_TIME_REPLY && f->seq == 0)
		return on_time_reply(c, f);
	if (f->type == SMP_WELCOME || f->type == SMP_ACK || f->type == SMP_TIME ||
	    f->seq == 0) {
		if (f->type >= 128 && f->seq == 0 && !smp_type_name(f->type))
			return true;	/* unknown unsequenced host-bound type: ignored */
		malformed(c, f, "%s", f->seq == 0 ? "sequenced type with seq 0" :
			  "host-to-guest type from the guest");
		return true;
	}
	switch (smp_seq_classify(c->expected, f->seq)) {
	case SMP_SEQ_BAD:
		/* PROTOCOL.md 2.2: dropped, and its seq is not taken as the next one */
		malformed(c, f, "seq %" PRIu64 " out of range (expected %" PRIu64 ", at most %"
			  PRIu64 " ahead, at most %" PRIu64 ")", f->seq, c->expected,
			  SMP_SEQ_MAX_GAP, SMP_SEQ_MAX);
		return true;
	case SMP_SEQ_DUP:
		c->st.duplicates++;
		c->d_dup++;
		c->ack_wanted = true;
		return true;
	case SMP_SEQ_NEXT:
		break;
	case SMP_SEQ_GAP: {
		uint64_t gap = f->seq - c->expected;

		c->st.gap_frames += gap;
		c->d_gap += gap;
		g_warning("%s: boot %s stream %016" PRIx64 ": frames %" PRIu64 "..%" PRIu64
			  " never arrived (the guest dropped them): recorded as loss",
			  c->domain, c->boot_str, c->stream_id, c->expected, f->seq - 1);
		if (c->pair)
			ha_pair_lost_all(c->pair);
		c->gap_note = true;
		c->gap_lo = c->expected;
		c->gap_hi = f->seq - 1;
		c->expected = f->seq;
		break;
	}
	}
	if (f->type != SMP_HELLO && smp_type_name(f->type) &&
	    smp_msg_check_size(f->type, f->len) < 0) {
		malformed(c, f, "payload size %u out of the type's bounds", f->len);
	} else {
		if (!ha_store_begin(c->store, error))
			return false;
		if (!c->pending_since)
			c->pending_since = g_get_monotonic_time();
		if ((c->gap_note && !note_gap(c, error)) || !apply(c, f, error) ||
		    !take_store_error(c, error)) {
			c->failed = true;	/* never commit a frame applied in part */
			return false;
		}
		c->st.applied++;
		c->hellos = 0;
	}
	c->expected = f->seq + 1;
	c->batch_frames++;
	c->batch_bytes += f->len;
	if (c->bye || c->batch_frames >= c->lim.batch_frames ||
	    c->batch_bytes >= c->lim.batch_bytes)
		return ha_conn_flush(c, error);
	return true;
}

bool ha_conn_time_probe(HaConn *c)
{
	uint8_t p[SMP_TIME_SIZE] = { 0 };
	HaHostTime t1;
	uint64_t id;

	/* after BYE the agent frames nothing more: a marker would never come back */
	if (!c->hello || !c->time_ok || c->failed || c->bye)
		return false;
	ha_host_time_now(&t1);
	if (!ha_clock_probe_next(c->clk, g_get_monotonic_time(), &t1, &id))
		return false;
	return queue_frame(c, SMP_TIME, p, smp_time_encode(id, p, sizeof(p)));
}

HaReadResult ha_conn_read(HaConn *c, unsigned int max_reads, HaReadFn fn, void *ctx,
			  GError **error)
{
	for (unsigned int i = 0; i < max_reads; i++) {
		uint8_t *space;
		size_t room = ha_conn_space(c, &space);
		ssize_t n;

		if (room == 0) {
			if (!ha_conn_process(c, error))
				return HA_READ_FAILED;
			room = ha_conn_space(c, &space);
			if (room == 0) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "decoder stuck");
				return HA_READ_FAILED;
			}
		}
		n = fn(ctx, space, room);
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			return HA_READ_DRY;
		if (n == 0)
			return HA_READ_END;
		if (n < 0) {
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno((int)-n), "read: %s",
				    g_strerror((int)-n));
			return HA_READ_FAILED;
		}
		ha_conn_commit(c, (size_t)n);
		if (!ha_conn_process(c, error))
			return HA_READ_FAILED;
	}
	return HA_READ_MORE;
}

bool ha_conn_process(HaConn *c, GError **error)
{
	for (;;) {
		struct smp_frame f;
		size_t skipped = 0;
		int r = smp_decoder_next(c->dec, &f, &skipped);

		if (r == 0)
			return true;
		if (r == 1) {
			if (!on_frame(c, &f, error))
				return false;
			if (c->st.malformed > c->lim.max_malformed) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
					    "%" PRIu64 " malformed frames (limit %u)",
					    c->st.malformed, c->lim.max_malformed);
				return false;
			}
			continue;
		}
		if (r == -EPROTONOSUPPORT) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
				    "guest speaks protocol version %u.%u, this host-agent %u.%u",
				    f.major, f.minor, SMP_VERSION_MAJOR, SMP_VERSION_MINOR);
			return false;
		}
		{
			const struct smp_decoder_stats *ds = smp_decoder_stats(c->dec);
			uint64_t bad = ds->garbage_runs + ds->header_errors +
				       ds->payload_errors + ds->oversize;

			if (bad <= LOG_FIRST_N || bad % LOG_EVERY == 0)
				g_warning("%s: %s: %s (%zu bytes skipped; %" PRIu64 " garbage"
					  " bytes so far)", c->domain, c->peer, smp_strerror(r),
					  skipped, ds->garbage_bytes);
			if (bad > c->lim.max_malformed) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
					    "%" PRIu64 " framing errors (limit %u)", bad,
					    c->lim.max_malformed);
				return false;
			}
		}
	}
}

void ha_conn_close(HaConn *c)
{
	g_autoptr(GError) e = NULL;

	if (!c->hello)
		return;
	if (!c->failed && !ha_conn_flush(c, &e)) {
		g_warning("%s: boot %s: last batch not stored: %s", c->domain, c->boot_str,
			  e->message);
		g_clear_error(&e);
	}
	ha_store_rollback(c->store);
	if (!c->failed)
		compact_finish(c);
	log_clock(c);
	if (c->bye && !c->failed)
		return;
	mark_disconnected(c);
}
