// SPDX-License-Identifier: MIT
/*
 * clickhouse-ship.c - a store's boots as ClickHouse rows, and the daemon's
 * replication thread (clickhouse.h has the model).
 */
#include "clickhouse.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "store-fleet.h"

#include "clickhouse-rows.h"

/* ---- batches ----------------------------------------------------------------------- */

bool ha_ch_batch_flush(HaChBatch *b, GError **error)
{
	g_autofree char *sql = NULL;

	if (!b->n)
		return true;
	sql = g_strdup_printf("INSERT INTO %s FORMAT RowBinary", b->table);
	if (!ha_ch_query(b->ch, sql, b->rows->data, b->rows->len, NULL, error))
		return false;
	b->st->rows += b->n;
	b->st->bytes += b->rows->len;
	g_byte_array_set_size(b->rows, 0);
	b->n = 0;
	return true;
}

bool ha_ch_batch_row_done(HaChBatch *b, GError **error)
{
	b->n++;
	return b->rows->len < HA_CH_FLUSH_BYTES || ha_ch_batch_flush(b, error);
}

uint64_t ha_ch_next_version(GKeyFile *kf, const char *group)
{
	/* rows of an attempt that died must not outrank the next one, whatever the
	 * clock does */
	uint64_t v = MAX((uint64_t)g_get_real_time(),
			 g_key_file_get_uint64(kf, group, "version", NULL) + 1);

	g_key_file_set_uint64(kf, group, "version", v);
	return v;
}

/* ---- one boot ---------------------------------------------------------------------- */

typedef struct {
	HaCh *ch;
	const char *host;
	const char *domain;
	HaShipStats *st;
} Ship;

static void key_cols(Ship *s, HaChBatch *b, const char *boot)
{
	ha_rb_str(b->rows, s->host);
	ha_rb_str(b->rows, s->domain);
	ha_rb_str(b->rows, boot);
}

/* The stacks ClickHouse has for the boot with events (a set of frames, owned). */
static GHashTable *stacks_there(Ship *s, const char *boot, GError **error)
{
	g_autoptr(GString) q = g_string_new("SELECT frames, events FROM stacks FINAL WHERE ");
	g_autoptr(GPtrArray) rows = NULL;
	GHashTable *set;

	/* the count tested here, not in the WHERE: FINAL keeps each key's newest row */
	ha_ch_sql_boot(q, s->host, s->domain, boot);
	rows = ha_ch_query_rows(s->ch, q->str, 2, error);
	if (!rows)
		return NULL;
	set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (guint i = 0; i < rows->len; i++) {
		gchar **f = rows->pdata[i];

		if (g_ascii_strtoull(f[1], NULL, 10) > 0)
			g_hash_table_add(set, g_strdup(f[0]));
	}
	return set;
}

/* A LOST row: stream_id, cpu, overrun, commit_overrun, dropped and read events. */
typedef struct {
	uint64_t stream;
	uint64_t v[4];
	uint32_t cpu;
	uint32_t pad;		/* zero: the row is hashed as bytes */
} LostRow;

/* A STATS row. */
typedef struct {
	uint64_t stream;
	int64_t value;
	uint32_t key;
	uint32_t pad;
} StatsRow;

/* A stack of the boot and its event count, as `report folded` has them. */
typedef struct {
	char *folded;
	uint64_t events;
} StackRow;

static void stack_row_clear(gpointer p)
{
	g_free(((StackRow *)p)->folded);
}

/* What the boot is now: its rows' contents, hashed into its snapshot. */
typedef struct {
	HaReportBoot boot;
	GArray *stacks;		/* StackRow */
	GArray *lost;		/* LostRow */
	GArray *stats;		/* StatsRow */
	uint64_t snap;
} BootNow;

static void boot_now_clear(BootNow *b)
{
	ha_report_boot_clear(&b->boot);
	g_clear_pointer(&b->stacks, g_array_unref);
	g_clear_pointer(&b->lost, g_array_unref);
	g_clear_pointer(&b->stats, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(BootNow, boot_now_clear)

static void on_stack(const char *folded, uint64_t count, void *user)
{
	StackRow r = { .folded = g_strdup(folded), .events = count };

	g_array_append_val((GArray *)user, r);
}

static void hash_str(GChecksum *sum, const char *s)
{
	/* with its NUL: "a" "bc" and "ab" "c" hash apart */
	g_checksum_update(sum, (const guchar *)(s ? s : ""), (gssize)strlen(s ? s : "") + 1);
}

static void hash_u64(GChecksum *sum, uint64_t v)
{
	char t[24];

	g_snprintf(t, sizeof(t), "%" PRIu64, v);
	hash_str(sum, t);
}

static void on_lost(uint64_t stream_id, uint32_t cpu, const uint64_t v[4], void *user)
{
	LostRow r = { .stream = stream_id, .cpu = cpu };

	memcpy(r.v, v, sizeof(r.v));
	g_array_append_val((GArray *)user, r);
}

static void on_stat(uint64_t stream_id, uint32_t key, int64_t value, void *user)
{
	StatsRow r = { .stream = stream_id, .key = key, .value = value };

	g_array_append_val((GArray *)user, r);
}

/* The boot's numbers, stacks, LOST and STATS rows from the store (one read
 * transaction) and their snapshot hash. */
static bool read_boot_rows(HaStore *store, int64_t id, BootNow *ret, GError **error)
{
	ret->stacks = g_array_new(FALSE, FALSE, sizeof(StackRow));
	g_array_set_clear_func(ret->stacks, stack_row_clear);
	ret->lost = g_array_new(FALSE, FALSE, sizeof(LostRow));
	ret->stats = g_array_new(FALSE, FALSE, sizeof(StatsRow));
	return ha_report_boot(store, id, &ret->boot, error) &&
	       ha_report_folded(store, id, on_stack, ret->stacks, error) &&
	       ha_store_fleet_lost(store, id, on_lost, ret->lost, error) &&
	       ha_store_fleet_stats(store, id, on_stat, ret->stats, error);
}

static bool read_boot(HaStore *store, int64_t id, BootNow *ret, GError **error)
{
	g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
	const HaReportBoot *b = &ret->boot;
	uint8_t digest[32];
	gsize dlen = sizeof(digest);
	bool ok;

	if (!ha_store_read_begin(store, error))	/* one consistent snapshot */
		return false;
	ok = read_boot_rows(store, id, ret, error);
	ha_store_read_end(store);
	if (!ok)
		return false;
	/* every value a row of the boot carries */
	hash_str(sum, b->boot_id);
	hash_str(sum, b->kernel);
	hash_str(sum, b->ended);
	hash_u64(sum, (uint64_t)b->start_us);
	hash_u64(sum, (uint64_t)b->end_us);
	hash_u64(sum, b->events);
	hash_u64(sum, b->lost_frames);
	hash_u64(sum, b->lost_events);
	hash_u64(sum, (uint64_t)b->stacks);
	hash_u64(sum, (uint64_t)b->epochs);
	hash_u64(sum, b->malformed);
	hash_u64(sum, b->stack_not_received);
	for (guint i = 0; i < ret->stacks->len; i++) {
		const StackRow *r = &g_array_index(ret->stacks, StackRow, i);

		hash_str(sum, r->folded);
		hash_u64(sum, r->events);
	}
	/* the rows' bytes: zero-initialized structs, no padding left undefined */
	g_checksum_update(sum, (const guchar *)ret->lost->data,
			  (gssize)(ret->lost->len * sizeof(LostRow)));
	g_checksum_update(sum, (const guchar *)ret->stats->data,
			  (gssize)(ret->stats->len * sizeof(StatsRow)));
	g_checksum_get_digest(sum, digest, &dlen);
	ret->snap = 0;
	for (int i = 0; i < 8; i++)
		ret->snap = ret->snap << 8 | digest[i];
	return true;
}

/* The boot's rows at @version, then its boots row. */
static bool send_boot(Ship *s, const BootNow *b, uint64_t version, GError **error)
{
	g_autoptr(GByteArray) rows = g_byte_array_new();
	HaChBatch bt = { .ch = s->ch, .rows = rows, .st = s->st };
	const HaReportBoot *br = &b->boot;
	const char *boot = br->boot_id;
	g_autoptr(GHashTable) gone = NULL;
	GHashTableIter it;
	gpointer k;

	gone = stacks_there(s, boot, error);
	if (!gone)
		return false;

	bt.table = "stacks";
	for (guint i = 0; i < b->stacks->len; i++) {
		const StackRow *sr = &g_array_index(b->stacks, StackRow, i);

		g_hash_table_remove(gone, sr->folded);
		key_cols(s, &bt, boot);
		ha_rb_str(rows, sr->folded);
		ha_rb_u64(rows, sr->events);
		ha_rb_u64(rows, version);
		if (!ha_ch_batch_row_done(&bt, error))
			return false;
	}
	/* Stacks the boot no longer has: 0 events at this version. */
	g_hash_table_iter_init(&it, gone);
	while (g_hash_table_iter_next(&it, &k, NULL)) {
		key_cols(s, &bt, boot);
		ha_rb_str(rows, k);
		ha_rb_u64(rows, 0);
		ha_rb_u64(rows, version);
		if (!ha_ch_batch_row_done(&bt, error))
			return false;
	}
	if (!ha_ch_batch_flush(&bt, error))
		return false;

	bt.table = "lost";
	for (guint i = 0; i < b->lost->len; i++) {
		const LostRow *r = &g_array_index(b->lost, LostRow, i);

		key_cols(s, &bt, boot);
		ha_rb_u64(rows, r->stream);
		ha_rb_u32(rows, r->cpu);
		for (int j = 0; j < 4; j++)
			ha_rb_u64(rows, r->v[j]);
		ha_rb_u64(rows, version);
		if (!ha_ch_batch_row_done(&bt, error))
			return false;
	}
	if (!ha_ch_batch_flush(&bt, error))
		return false;

	bt.table = "stats";
	for (guint i = 0; i < b->stats->len; i++) {
		const StatsRow *r = &g_array_index(b->stats, StatsRow, i);

		key_cols(s, &bt, boot);
		ha_rb_u64(rows, r->stream);
		ha_rb_u32(rows, r->key);
		ha_rb_u64(rows, (uint64_t)r->value);
		ha_rb_u64(rows, version);
		if (!ha_ch_batch_row_done(&bt, error))
			return false;
	}
	if (!ha_ch_batch_flush(&bt, error))
		return false;

	/* Last: the boot's row; once it is confirmed, the watermark moves. */
	bt.table = "boots";
	ha_rb_str(rows, s->host);
	ha_rb_str(rows, s->domain);
	ha_rb_str(rows, boot);
	ha_rb_u32(rows, (uint32_t)br->boot);
	ha_rb_str(rows, br->kernel ? br->kernel : "");
	ha_rb_u64(rows, (uint64_t)br->start_us);
	ha_rb_u64(rows, (uint64_t)br->end_us);
	ha_rb_str(rows, br->ended);
	ha_rb_u64(rows, br->events);
	ha_rb_u64(rows, br->lost_frames);
	ha_rb_u64(rows, br->lost_events);
	ha_rb_u64(rows, (uint64_t)br->stacks);
	ha_rb_u64(rows, (uint64_t)br->epochs);
	ha_rb_u64(rows, br->malformed);
	ha_rb_u64(rows, br->stack_not_received);
	ha_rb_u64(rows, b->snap);
	ha_rb_u64(rows, version);
	bt.n = 1;
	return ha_ch_batch_flush(&bt, error);
}

bool ha_ch_ship(HaCh *c, HaStore *store, const char *host, const char *domain,
		const char *mark, HaShipStats *st, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
	g_autofree char *group = g_strdup_printf("%s %s", host, domain);
	Ship s = { .ch = c, .host = host, .domain = domain, .st = st };

	if (!ha_ch_schema(c, error))
		return false;
	g_key_file_load_from_file(kf, mark, G_KEY_FILE_NONE, NULL);	/* none yet: all */
	if (!ha_store_fleet_boot_ids(store, ids, error))
		return false;
	for (guint i = 0; i < ids->len; i++) {
		int64_t id = g_array_index(ids, int64_t, i);
		g_autofree char *key = g_strdup_printf("boot%" PRId64, id);
		g_autofree char *was = g_key_file_get_string(kf, group, key, NULL);
		g_autofree char *snap = NULL;
		uint64_t version;
		g_auto(BootNow) b = { 0 };

		/* The boot's numbers and stacks of one moment (one read transaction), read
		 * before its events are sent: a boots row that says the boot ended comes
		 * after every event of it was sent final, so that sealing may count them. */
		if (!read_boot(store, id, &b, error) ||
		    !ha_ch_ship_events(c, store, host, domain, id, kf, group, mark, st, error))
			return false;
		snap = g_strdup_printf("%016" PRIx64, b.snap);
		if (was && !strcmp(was, snap)) {
			st->unchanged++;
			continue;
		}
		/*
		 * A version above every one sent for this store, taken before sending:
		 * rows of an attempt that died must not outrank the next one, whatever
		 * the clock does.
		 */
		version = ha_ch_next_version(kf, group);
		g_key_file_set_boolean(kf, group, "seal", true);
		if (!g_key_file_save_to_file(kf, mark, error) ||
		    !send_boot(&s, &b, version, error))
			return false;
		/* ClickHouse confirmed every row of it: the watermark moves. */
		g_key_file_set_string(kf, group, key, snap);
		if (!g_key_file_save_to_file(kf, mark, error))
			return false;
		st->boots++;
	}
	/* a boots row sent (or a seal that did not finish): seal what ended */
	if (!g_key_file_get_boolean(kf, group, "seal", NULL))
		return true;
	if (!ha_ch_seal_pending(c, error))
		return false;
	g_key_file_set_boolean(kf, group, "seal", false);
	return g_key_file_save_to_file(kf, mark, error);
}

/* ---- sealing: a boot that ended, aggregated ----------------------------------------- */

#define SEAL_MAX_PER_CALL	1000u

/*
 * After the boot's seal at @version: its aggregates of older versions (an earlier seal
 * of the boot before it resumed, or a seal that died) count nothing any more; deleted
 * (a mutation, which ClickHouse applies in the background) so that they do not pile
 * up with every re-seal. Only older ones: a concurrent seal of a newer version (another
 * agent's) keeps its rows, and its sealed row outranks this one. A failure leaves rows
 * that count nothing (a database of Distributed tables has no mutations): a warning.
 */
static void drop_stale(HaCh *c, const char *key, uint64_t version)
{
	static const char *const tables[] = { "event_totals", "event_counts" };

	for (gsize i = 0; i < G_N_ELEMENTS(tables); i++) {
		g_autofree char *q = g_strdup_printf("SELECT count() FROM %s WHERE %s AND"
						     " version < %" PRIu64, tables[i], key,
						     version);
		g_autoptr(GError) e = NULL;
		uint64_t n = 0;

		if (ha_ch_query_u64(c, q, &n, &e) && n) {
			g_free(q);
			q = g_strdup_printf("ALTER TABLE %s DELETE WHERE %s AND version < %" PRIu64,
					    tables[i], key, version);
			if (ha_ch_query(c, q, NULL, 0, NULL, &e))
				g_debug("%s: %" PRIu64 " stale rows of %s deleted", tables[i], n,
					key);
		}
		if (e)
			g_warning("ClickHouse: the older aggregates of a sealed boot (%s) stay in"
				  " %s, counting nothing: %s", key, tables[i], e->message);
	}
}

/* @b: host, domain, boot id and snap of a boots row that ended. */
static bool seal_boot(HaCh *c, gchar **b, GError **error)
{
	g_autoptr(GString) key = g_string_new(NULL);
	g_autoptr(GString) ins = g_string_new("INSERT INTO sealed VALUES (");
	g_autofree char *q = NULL, *ev = NULL;
	uint64_t last, maxv, version, n;

	ha_ch_sql_boot(key, b[0], b[1], b[2]);
	q = g_strdup_printf("SELECT max(version) FROM sealed WHERE %s", key->str);
	if (!ha_ch_query_u64(c, q, &maxv, error))
		return false;
	g_free(q);
	q = g_strdup_printf("SELECT max(ts) FROM events WHERE %s", key->str);
	if (!ha_ch_query_u64(c, q, &last, error))
		return false;
	/* above every seal of the boot before, whatever the clock does */
	version = MAX((uint64_t)g_get_real_time(), maxv + 1);
	/* the boot's events, as the reports' join gives them, with their stacks' texts */
	ev = g_strdup_printf("(SELECT host, domain, boot, ts, host_us, event, stack FROM events"
			     " FINAL WHERE %s) ANY INNER JOIN (SELECT stack, folded FROM"
			     " event_stacks FINAL WHERE %s) USING stack", key->str, key->str);
	g_free(q);
	q = g_strdup_printf("INSERT INTO event_counts SELECT"
			    " intDiv(%" PRIu64 " - ts + 999999999, 1000000000) AS tail_s, host,"
			    " domain, boot, intDiv(host_us, 1000000) - (host_us %% 1000000 < 0)"
			    " AS hs, host_us %% 1000000 != 0 AS hs_frac, event,"
			    " cityHash64(folded) AS fstack, count(), %" PRIu64 " FROM %s"
			    " GROUP BY tail_s, host, domain, boot, hs, hs_frac, event, fstack",
			    last, version, ev);
	if (!ha_ch_query(c, q, NULL, 0, NULL, error))
		return false;
	g_free(q);
	q = g_strdup_printf("INSERT INTO event_totals SELECT host, domain, boot, event,"
			    " cityHash64(folded) AS fstack, count(), %" PRIu64 " FROM %s"
			    " GROUP BY host, domain, boot, event, fstack", version, ev);
	if (!ha_ch_query(c, q, NULL, 0, NULL, error))
		return false;
	g_free(q);
	q = g_strdup_printf("INSERT INTO stack_names SELECT DISTINCT cityHash64(folded), folded"
			    " FROM event_stacks FINAL WHERE %s", key->str);
	if (!ha_ch_query(c, q, NULL, 0, NULL, error))
		return false;
	g_free(q);
	q = g_strdup_printf("SELECT sum(n) FROM event_totals WHERE %s AND version = %" PRIu64,
			    key->str, version);
	if (!ha_ch_query_u64(c, q, &n, error))
		return false;
	/* last: once it is there, reports read the aggregates of this version */
	for (int i = 0; i < 3; i++) {
		ha_ch_sql_str(ins, b[i]);
		g_string_append(ins, ", ");
	}
	g_string_append_printf(ins, "%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ")",
			       g_ascii_strtoull(b[3], NULL, 10), last, n, version);
	if (!ha_ch_query(c, ins->str, NULL, 0, NULL, error))
		return false;
	drop_stale(c, key->str, version);
	return true;
}

bool ha_ch_seal_pending(HaCh *c, GError **error)
{
	g_autofree char *sql = g_strdup_printf(
		"SELECT host, domain, boot, snap FROM boots FINAL WHERE ended NOT IN"
		" ('running', '') AND (host, domain, boot, snap) NOT IN (SELECT host, domain,"
		" boot, snap FROM sealed FINAL) ORDER BY host, domain, boot LIMIT %u",
		SEAL_MAX_PER_CALL);
	g_autoptr(GPtrArray) rows = ha_ch_query_rows(c, sql, 4, error);

	if (!rows)
		return false;
	for (guint i = 0; i < rows->len; i++) {
		gchar **f = rows->pdata[i];

		if (!seal_boot(c, f, error))
			return false;
		g_debug("sealed %s %s %s", f[0], f[1], f[2]);
	}
	return true;
}

/* ---- the daemon's replication thread ------------------------------------------------ */

struct _HaChRepl {
	char *url;
	char *state_dir;
	char *host;
	guint interval_ms;
	GThread *thread;
	GMutex lock;
	GCond cond;
	bool stop;
};

/*
 * One round over every store of the state dir; false with the first error. A store
 * that fails (being created, say) does not keep the others from being shipped; when
 * ClickHouse cannot be reached the round ends there.
 */
static bool repl_round(HaChRepl *r, HaCh *ch, GError **error)
{
	g_autoptr(GDir) dir = g_dir_open(r->state_dir, 0, error);
	GError *first = NULL;
	const char *f;

	if (!dir || !ha_ch_schema(ch, error))
		return false;
	while ((f = g_dir_read_name(dir))) {
		g_autofree char *path = NULL;
		g_autofree char *domain = NULL;
		g_autofree char *mark = NULL;
		g_autoptr(HaStore) store = NULL;
		g_autoptr(GError) e = NULL;
		HaShipStats st = { 0 };

		if (!g_str_has_suffix(f, ".db"))
			continue;
		domain = g_strndup(f, strlen(f) - 3);
		if (!ha_store_name_ok(domain))
			continue;
		path = g_build_filename(r->state_dir, f, NULL);
		mark = g_strconcat(path, ".ship", NULL);
		store = ha_store_open(path, true, &e);
		if (!store)
			continue;	/* being created: the next round */
		if (!ha_ch_ship(ch, store, r->host, domain, mark, &st, &e)) {
			bool away = g_error_matches(e, G_IO_ERROR, G_IO_ERROR_HOST_UNREACHABLE);

			if (!first)
				first = g_steal_pointer(&e);
			if (away)
				break;
			continue;
		}
		if (st.boots)
			g_debug("replication: %s: %u boots, %" PRIu64 " rows", domain, st.boots,
				st.rows);
	}
	if (first) {
		g_propagate_error(error, first);
		return false;
	}
	return true;
}

static gpointer repl_main(gpointer user)
{
	HaChRepl *r = user;
	g_autoptr(GError) e = NULL;
	g_autoptr(HaCh) ch = ha_ch_new(r->url, &e);
	bool failing = false, last = false;

	if (!ch) {
		g_warning("replication: %s", e->message);
		return NULL;
	}
	while (!last) {
		gint64 until;

		g_mutex_lock(&r->lock);
		last = r->stop;
		g_mutex_unlock(&r->lock);
		g_clear_error(&e);
		if (!repl_round(r, ch, &e)) {
			if (!failing)
				g_warning("replication to %s: %s; the stores keep everything,"
					  " retrying every %u ms", r->url, e->message,
					  r->interval_ms);
			failing = true;
		} else if (failing) {
			g_message("replication to %s: caught up", r->url);
			failing = false;
		}
		if (last)
			break;
		until = g_get_monotonic_time() + (gint64)r->interval_ms * 1000;
		g_mutex_lock(&r->lock);
		while (!r->stop && g_cond_wait_until(&r->cond, &r->lock, until))
			;
		g_mutex_unlock(&r->lock);
	}
	return NULL;
}

HaChRepl *ha_ch_repl_start(const char *url, const char *state_dir, const char *host,
			   guint interval_ms, GError **error)
{
	g_autoptr(HaCh) probe = ha_ch_new(url, error);	/* the URL's form, early */
	HaChRepl *r;

	if (!probe)
		return NULL;
	r = g_new0(HaChRepl, 1);
	r->url = g_strdup(url);
	r->state_dir = g_strdup(state_dir);
	r->host = g_strdup(host);
	r->interval_ms = interval_ms;
	g_mutex_init(&r->lock);
	g_cond_init(&r->cond);
	r->thread = g_thread_new("replication", repl_main, r);
	g_message("replicating every store of %s to %s (host %s) every %u ms", state_dir, url,
		  host, interval_ms);
	return r;
}

void ha_ch_repl_stop(HaChRepl *r)
{
	if (!r)
		return;
	g_mutex_lock(&r->lock);
	r->stop = true;
	g_cond_signal(&r->cond);
	g_mutex_unlock(&r->lock);
	g_thread_join(r->thread);
	g_mutex_clear(&r->lock);
	g_cond_clear(&r->cond);
	g_free(r->url);
	g_free(r->state_dir);
	g_free(r->host);
	g_free(r);
}
