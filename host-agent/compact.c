// SPDX-License-Identifier: MIT
/* compact.c - merge small chunks (see compact.h). */
#include "compact.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

#include "store-compact.h"

typedef struct {
	GArray *ids;		/* int64_t, consecutive small chunks of one CPU */
	uint64_t raw;
} Run;

static void run_free(gpointer p)
{
	Run *r = p;

	g_array_unref(r->ids);
	g_free(r);
}

typedef struct {
	GHashTable *runs;	/* cpu -> Run */
	Run *first;		/* a run to merge, once found */
} Pick;

static bool on_chunk(int64_t id, uint32_t cpu, uint64_t raw, bool fixed, void *user)
{
	Pick *p = user;
	Run *r = g_hash_table_lookup(p->runs, GUINT_TO_POINTER(cpu));

	if (!r) {
		r = g_new0(Run, 1);
		r->ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
		g_hash_table_insert(p->runs, GUINT_TO_POINTER(cpu), r);
	}
	if (raw >= HA_COMPACT_SMALL || fixed) {
		g_array_set_size(r->ids, 0);	/* the run ends before this one */
		r->raw = 0;
		return true;
	}
	g_array_append_val(r->ids, id);
	r->raw += raw;
	if (r->ids->len >= 2 && r->raw >= HA_COMPACT_SMALL) {
		p->first = r;
		return false;
	}
	return true;
}

/* The ids of the run to merge into @ret_ids (empty: none). */
static bool pick_run(HaStore *s, int64_t boot, int64_t from_id, bool all, GArray *ret_ids,
		     GError **error)
{
	g_autoptr(GHashTable) runs = g_hash_table_new_full(g_direct_hash, g_direct_equal,
							   NULL, run_free);
	Pick p = { .runs = runs };

	if (!ha_store_compact_chunks(s, boot, from_id, on_chunk, &p, error))
		return false;
	if (!p.first && all) {
		GHashTableIter it;
		gpointer v;

		g_hash_table_iter_init(&it, runs);
		while (g_hash_table_iter_next(&it, NULL, &v)) {
			Run *r = v;

			if (r->ids->len >= 2 &&
			    (!p.first || g_array_index(r->ids, int64_t, 0) <
					 g_array_index(p.first->ids, int64_t, 0)))
				p.first = r;
		}
	}
	if (p.first)
		g_array_append_vals(ret_ids, p.first->ids->data, p.first->ids->len);
	return true;
}

/* Merge the chunks @ids (one CPU, ascending) in the open transaction. */
static bool merge(HaStore *s, int64_t boot, const GArray *ids, int level, GError **error)
{
	g_autoptr(GByteArray) packed = g_byte_array_new();
	g_auto(HaStoreCompactChunk) m = { .ts_min = INT64_MAX, .ts_max = INT64_MIN };

	for (guint i = 0; i < ids->len; i++) {
		int64_t id = g_array_index(ids, int64_t, i);
		g_auto(HaStoreCompactChunk) c = { 0 };
		g_autoptr(GBytes) raw = NULL;
		size_t rlen, zlen;
		const void *z;

		if (!ha_store_compact_take(s, id, &c, error))
			return false;
		m.cpu = c.cpu;
		if (c.have_seq) {
			m.first_seq = m.have_seq ? MIN(m.first_seq, c.first_seq) : c.first_seq;
			m.last_seq = m.have_seq ? MAX(m.last_seq, c.last_seq) : c.last_seq;
			m.have_seq = true;
		}
		m.ts_min = MIN(m.ts_min, c.ts_min);
		m.ts_max = MAX(m.ts_max, c.ts_max);
		m.pages += c.pages;
		m.events += c.events;
		m.traced += c.traced;
		z = g_bytes_get_data(c.data, &zlen);
		raw = ha_chunk_decompress(z, zlen, error);
		if (!raw)
			return false;
		g_bytes_get_data(raw, &rlen);
		if (rlen != (size_t)c.raw_bytes) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "%s: chunk %" PRId64 " inflates to %zu bytes, not %" PRId64,
				    ha_store_path(s), id, rlen, c.raw_bytes);
			return false;
		}
		g_byte_array_append(packed, g_bytes_get_data(raw, NULL), (guint)rlen);
	}
	m.raw_bytes = packed->len;
	m.data = ha_chunk_compress(packed, level, error);
	if (!m.data)
		return false;
	return ha_store_compact_put(s, boot, g_array_index(ids, int64_t, 0), &m, error);
}

int ha_compact_step(HaStore *s, int64_t boot, int64_t from_id, bool all, int level,
		    GError **error)
{
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));

	g_return_val_if_fail(!ha_store_in_txn(s), -1);
	if (!ha_store_begin(s, error))
		return -1;
	if (!pick_run(s, boot, from_id, all, ids, error) ||
	    (ids->len && !merge(s, boot, ids, level, error))) {
		ha_store_rollback(s);
		return -1;
	}
	if (!ids->len) {
		ha_store_rollback(s);
		return 0;
	}
	return ha_store_commit(s, error) ? 1 : -1;
}
