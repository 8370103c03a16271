// SPDX-License-Identifier: MIT
/*
 * ingest-arena.c - ARENA assembly, the per-boot list registry and the live
 * connections a post-mortem retires (see ingest-arena.h).
 */
#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

#include "ingest-arena.h"

#include "store-postmortem.h"
#include "ingest-int.h"

typedef struct {
	uint64_t store;		/* ha_store_serial() */
	int64_t boot;
	HaArenaList *list;
} ArenaEntry;

static GMutex reg_lock;
static GPtrArray *reg_lists;	/* ArenaEntry, at most HA_ARENA_LISTS */
static GPtrArray *reg_live;	/* HaConn with a session open, not recovering */

void ha_arena_list_free(HaArenaList *l)
{
	if (!l)
		return;
	g_free(l->addrs);
	g_free(l);
}

static HaArenaList *list_copy(const HaArenaList *l)
{
	HaArenaList *c = g_memdup2(l, sizeof(*l));

	c->addrs = g_memdup2(l->addrs, (gsize)l->nr_pages * sizeof(*l->addrs));
	return c;
}

static void entry_free(gpointer p)
{
	ArenaEntry *e = p;

	ha_arena_list_free(e->list);
	g_free(e);
}

/* Under reg_lock. */
static void publish(HaStore *store, int64_t boot, HaArenaList *l)
{
	ArenaEntry *e;
	guint oldest = 0;

	if (!reg_lists)
		reg_lists = g_ptr_array_new_with_free_func(entry_free);
	for (guint i = 0; i < reg_lists->len; i++) {
		e = g_ptr_array_index(reg_lists, i);
		if (e->store == ha_store_serial(store) && e->boot == boot) {
			ha_arena_list_free(e->list);
			e->list = l;
			return;
		}
		if (e->list->when < ((ArenaEntry *)g_ptr_array_index(reg_lists, oldest))->list->when)
			oldest = i;
	}
	if (reg_lists->len >= HA_ARENA_LISTS)
		g_ptr_array_remove_index_fast(reg_lists, oldest);
	e = g_new0(ArenaEntry, 1);
	e->store = ha_store_serial(store);
	e->boot = boot;
	e->list = l;
	g_ptr_array_add(reg_lists, e);
}

HaArenaList *ha_arena_list_get(HaStore *store, int64_t boot)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&reg_lock);

	for (guint i = 0; reg_lists && i < reg_lists->len; i++) {
		ArenaEntry *e = g_ptr_array_index(reg_lists, i);

		if (e->store == ha_store_serial(store) && e->boot == boot)
			return list_copy(e->list);
	}
	return NULL;
}

HaArenaList *ha_arena_list_load(HaStore *store, int64_t boot, GError **error)
{
	g_autoptr(GArray) addrs = NULL;
	g_autoptr(GError) e = NULL;
	HaArenaList *l;
	uint64_t stream_id;
	uint32_t page_size;

	l = ha_arena_list_get(store, boot);
	if (l)
		return l;
	if (!ha_store_pm_get_arena(store, boot, &stream_id, &page_size, &addrs, &e)) {
		if (e)
			g_propagate_error(error, g_steal_pointer(&e));
		return NULL;
	}
	/* what this process stored itself: bounded as ingest bounded it */
	if (!addrs->len || addrs->len > SMP_ARENA_MAX_PAGES) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "boot %" G_GINT64_FORMAT ": the stored window list has %u pages",
			    boot, addrs->len);
		return NULL;
	}
	l = g_new0(HaArenaList, 1);
	l->stream_id = stream_id;
	l->page_size = page_size;
	l->nr_pages = addrs->len;
	l->addrs = (uint64_t *)g_array_free(g_steal_pointer(&addrs), FALSE);
	return l;
}

void ha_arena_forget_store(HaStore *store)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&reg_lock);

	for (guint i = reg_lists ? reg_lists->len : 0; i-- > 0;)
		if (((ArenaEntry *)g_ptr_array_index(reg_lists, i))->store ==
		    ha_store_serial(store))
			g_ptr_array_remove_index_fast(reg_lists, i);
	for (guint i = reg_live ? reg_live->len : 0; i-- > 0;) {
		HaConn *c = g_ptr_array_index(reg_live, i);

		if (c->store == store) {
			c->arena_live = false;
			g_ptr_array_remove_index_fast(reg_live, i);
		}
	}
}

void ingest_arena_live(HaConn *c, bool live)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&reg_lock);

	if (c->recovered || live == c->arena_live)
		return;
	if (!reg_live)
		reg_live = g_ptr_array_new();
	if (live)
		g_ptr_array_add(reg_live, c);
	else
		g_ptr_array_remove_fast(reg_live, c);
	c->arena_live = live;
}

bool ha_arena_retire_boot(HaStore *store, int64_t boot, guint *ret_n, GError **error)
{
	g_autoptr(GPtrArray) conns = g_ptr_array_new();
	bool ok = true;

	g_mutex_lock(&reg_lock);
	for (guint i = 0; reg_live && i < reg_live->len; i++) {
		HaConn *c = g_ptr_array_index(reg_live, i);

		if (c->store == store && c->boot == boot && c->hello && !c->retired)
			g_ptr_array_add(conns, c);
	}
	g_mutex_unlock(&reg_lock);
	/* on the connections' thread (ingest-arena.h): none is freed meanwhile */
	for (guint i = 0; i < conns->len; i++) {
		HaConn *c = g_ptr_array_index(conns, i);
		g_autoptr(GError) e = NULL;

		if (!c->failed && !ha_conn_flush(c, &e)) {
			g_warning("%s: boot %s stream %016" PRIx64 ": retiring it for the "
				  "post-mortem, its last batch failed: %s", c->domain,
				  c->boot_str, c->stream_id, e->message);
			if (ok)
				g_propagate_error(error, g_steal_pointer(&e));
			ok = false;
		}
		c->retired = true;
		/* what it queued (an ACK of what it committed) may still go out; nothing
		 * it reads from now on is applied */
		smp_decoder_reset(c->dec);
		g_message("%s: boot %s stream %016" PRIx64 ": retired after seq %" PRIu64
			  " for the post-mortem of its window", c->domain, c->boot_str,
			  c->stream_id, c->expected - 1);
	}
	if (ret_n)
		*ret_n = conns->len;
	return ok;
}

void ingest_arena_drop(HaConn *c)
{
	g_clear_pointer(&c->arena_addrs, g_free);
	c->arena_have = 0;
	c->arena_list_id = 0;
}

bool ingest_on_arena(HaConn *c, const struct smp_frame *f)
{
	g_autoptr(GError) e = NULL;
	struct smp_arena m;
	int r = smp_arena_decode(&m, f->payload, f->len);
	HaArenaList *l;

	if (r < 0) {
		ingest_malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	/* a replay's ARENA is the dump's own, no news; a retired one's is stale */
	if (c->recovered || c->retired)
		return true;
	if (m.first == 0) {
		/* a new list: what was being assembled is superseded */
		ingest_arena_drop(c);
		c->arena_addrs = g_new(uint64_t, m.nr_pages);
		c->arena_list_id = m.list_id;
		c->arena_page_size = m.page_size;
		c->arena_nr_pages = m.nr_pages;
	} else if (!c->arena_addrs || m.list_id != c->arena_list_id ||
		   m.page_size != c->arena_page_size || m.nr_pages != c->arena_nr_pages ||
		   m.first != c->arena_have) {
		ingest_malformed(c, f, "ARENA slice %u..%u of list %" PRIx64 " out of order",
				 m.first, m.first + m.nr, m.list_id);
		ingest_arena_drop(c);
		return true;
	}
	for (uint32_t i = 0; i < m.nr; i++)
		c->arena_addrs[m.first + i] = smp_arena_addr(&m, i);
	c->arena_have = m.first + m.nr;
	if (c->arena_have < c->arena_nr_pages)
		return true;
	l = g_new0(HaArenaList, 1);
	memcpy(l->boot_uuid, c->boot_uuid, 16);
	l->stream_id = c->stream_id;
	l->page_size = c->arena_page_size;
	l->nr_pages = c->arena_nr_pages;
	l->addrs = g_steal_pointer(&c->arena_addrs);
	l->list_id = c->arena_list_id;
	l->when = g_get_real_time();
	ingest_arena_drop(c);
	c->st.arena_lists++;
	/* kept in the store too, for a post-mortem by another host-agent process; a
	 * failure there loses only that, never the stream */
	if (!ha_store_pm_put_arena(c->store, c->boot, l->stream_id, l->page_size, l->addrs,
				   l->nr_pages, &e)) {
		g_warning("%s: boot %s: the window's pages not stored: %s", c->domain,
			  c->boot_str, e->message);
		g_clear_error(&e);
	}
	g_mutex_lock(&reg_lock);
	publish(c->store, c->boot, l);
	g_mutex_unlock(&reg_lock);
	g_debug("%s: boot %s stream %016" PRIx64 ": window at %u pages of %u bytes (list %"
		PRIx64 ")", c->domain, c->boot_str, c->stream_id, l->nr_pages, l->page_size,
		l->list_id);
	return true;
}
