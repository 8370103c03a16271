// SPDX-License-Identifier: MIT
/* conn-driver.c - one guest connection on a thread of its own (see conn-driver.h). */
#include "conn-driver.h"

#include <errno.h>
#include <gio/gio.h>
#include <string.h>

struct _HaDriver {
	/* constant from ha_driver_new() to ha_driver_free() */
	HaStore *store;
	char *domain;
	char *peer;		/* the link's name */
	HaDriverEnded ended;
	void *user;
	GMainContext *ctx;	/* the connection's, the thread-default of @thread */
	GMainContext *owner;	/* where HaDriverEnded runs */
	GThread *thread;

	/* the connection's thread only */
	HaLink *link;		/* NULL once ended */
	HaConn *conn;		/* NULL once ended */
	GSource *more_idle;	/* reading goes on from here after READS_PER_WAKE */
	GSource *commit_timer;
	GSource *ack_timer;	/* a held ACK (ha_conn_ack_held()) */
	GSource *probe_timer;	/* clock probes (ha_conn_time_probe()) */
	bool paused;		/* reads off until the commit in flight is done */
	bool quit;		/* the thread's loop ends (ha_driver_free()) */

	HaDriverHold *held;	/* the owners' thread only: ha_driver_hold_store() */
	gint up;		/* atomic: the connection runs (ha_driver_running()) */
	GMutex lock;		/* ended_src, between the two threads */
	GSource *ended_src;	/* HaDriverEnded on its way to the owner's context */
};

/*
 * The running driver of each store (store -> driver). One connection per store at a
 * time: a store has one transaction (store.h), which a second connection's batches
 * would share, committing the first one's half-applied batch with its own and
 * acknowledging frames of the other stream. Entries are added by ha_driver_new() on
 * the owners' thread, and removed there once the connection is closed (its HaConn
 * freed, so a next connection never overlaps the last one's close) and the owner
 * knows it (unregister()); under running_lock.
 */
static GMutex running_lock;
static GHashTable *running;

/* ---- the connection's thread ------------------------------------------------------ */

static gpointer driver_thread(gpointer user)
{
	HaDriver *d = user;

	g_main_context_push_thread_default(d->ctx);
	while (!d->quit)
		g_main_context_iteration(d->ctx, TRUE);
	g_main_context_pop_thread_default(d->ctx);
	return NULL;
}

/* A call made on the connection's thread for another thread, which waits for it. */
typedef struct {
	HaDriver *d;
	void (*fn)(HaDriver *d, void *data);
	void *data;
	GMutex lock;
	GCond cond;
	bool done;
} SyncCall;

static gboolean on_sync_call(gpointer user)
{
	SyncCall *c = user;

	c->fn(c->d, c->data);
	g_mutex_lock(&c->lock);
	c->done = true;
	g_cond_signal(&c->cond);
	/* @c is the caller's, gone once it sees done: not touched after the unlock */
	g_mutex_unlock(&c->lock);
	return G_SOURCE_REMOVE;
}

/* Run @fn(@d, @data) on @d's thread, above any other source of it, and wait. */
static void run_sync(HaDriver *d, void (*fn)(HaDriver *d, void *data), void *data)
{
	SyncCall c = { .d = d, .fn = fn, .data = data };
	GSource *src;

	if (g_thread_self() == d->thread) {
		fn(d, data);
		return;
	}
	g_mutex_init(&c.lock);
	g_cond_init(&c.cond);
	src = g_idle_source_new();
	g_source_set_priority(src, G_PRIORITY_HIGH);
	g_source_set_callback(src, on_sync_call, &c, NULL);
	g_source_set_static_name(src, "host-agent driver call");
	g_source_attach(src, d->ctx);
	g_source_unref(src);
	g_mutex_lock(&c.lock);
	while (!c.done)
		g_cond_wait(&c.cond, &c.lock);
	g_mutex_unlock(&c.lock);
	g_mutex_clear(&c.lock);
	g_cond_clear(&c.cond);
}

/* A source of the connection's context (its thread's); its reference is returned. */
static GSource *attach(HaDriver *d, GSource *src, gint priority, GSourceFunc fn)
{
	g_source_set_priority(src, priority);
	g_source_set_callback(src, fn, d, NULL);
	g_source_attach(src, d->ctx);
	return src;
}

static void unsource(GSource **src)
{
	if (*src) {
		g_source_destroy(*src);
		g_clear_pointer(src, g_source_unref);
	}
}

static void stop_sources(HaDriver *d)
{
	unsource(&d->more_idle);
	unsource(&d->commit_timer);
	unsource(&d->ack_timer);
	unsource(&d->probe_timer);
}

/* Close the HaConn (recording how the stream ended) and the link. */
static void teardown(HaDriver *d, const char *why)
{
	if (!d->conn)
		return;
	if (why)
		g_message("%s: %s: %s", d->domain, ha_link_name(d->link), why);
	stop_sources(d);
	ha_conn_close(d->conn);
	g_clear_pointer(&d->conn, ha_conn_free);
	g_clear_pointer(&d->link, ha_link_close);
	g_atomic_int_set(&d->up, 0);
}

/* The store is free for the next connection: on the owners' thread, once the owner
 * knows this one ended (from its HaDriverEnded on, or freed), so that a new
 * connection it accepts is never taken for the old one. */
static void unregister(HaDriver *d)
{
	g_mutex_lock(&running_lock);
	if (g_hash_table_lookup(running, d->store) == d)
		g_hash_table_remove(running, d->store);
	g_mutex_unlock(&running_lock);
}

/* On the owner's context. The owner may free @d from its callback. */
static gboolean on_ended_owner(gpointer user)
{
	HaDriver *d = user;

	g_mutex_lock(&d->lock);
	g_clear_pointer(&d->ended_src, g_source_unref);
	g_mutex_unlock(&d->lock);
	unregister(d);
	d->ended(d, d->user);
	return G_SOURCE_REMOVE;
}

/* The connection ends by itself: tell the owner, on its thread (who may free us). */
static void end(HaDriver *d, const char *why)
{
	if (!d->conn)
		return;
	teardown(d, why);
	if (!d->ended)
		return;
	g_mutex_lock(&d->lock);
	d->ended_src = g_idle_source_new();
	g_source_set_priority(d->ended_src, G_PRIORITY_DEFAULT);
	g_source_set_callback(d->ended_src, on_ended_owner, d, NULL);
	g_source_set_static_name(d->ended_src, "host-agent connection ended");
	g_source_attach(d->ended_src, d->owner);
	g_mutex_unlock(&d->lock);
}

static gboolean on_ack_timer(gpointer user);

/* Write what the connection holds; false when the link broke (the connection ended).
 * An ACK the connection holds back gets a timer of its own. */
static bool write_output(HaDriver *d)
{
	guint due;
	size_t len;
	const uint8_t *out = ha_conn_output(d->conn, &len);

	while (len) {
		ssize_t n = ha_link_write(d->link, out, len);

		if (n == -EAGAIN) {
			ha_link_want_write(d->link, true);
			return true;
		}
		if (n < 0) {
			g_autofree char *why = g_strdup_printf("write: %s; closing the"
							       " connection", g_strerror((int)-n));

			end(d, why);
			return false;
		}
		ha_conn_output_done(d->conn, (size_t)n);
		out = ha_conn_output(d->conn, &len);
	}
	ha_link_want_write(d->link, false);
	if (!d->ack_timer && ha_conn_ack_held(d->conn, &due))
		d->ack_timer = attach(d, g_timeout_source_new(due), G_PRIORITY_DEFAULT,
				      on_ack_timer);
	return true;
}

static gboolean on_ack_timer(gpointer user)
{
	HaDriver *d = user;

	g_clear_pointer(&d->ack_timer, g_source_unref);
	ha_conn_ack_release(d->conn);
	write_output(d);
	return G_SOURCE_REMOVE;
}

/* Commit the batch: on a commit thread (its ACK written when it is done,
 * on_committed()), or here and now when @sync; false when the connection ended. */
static bool flush(HaDriver *d, bool sync)
{
	g_autoptr(GError) e = NULL;

	unsource(&d->commit_timer);
	if (!(sync ? ha_conn_flush(d->conn, &e) : ha_conn_flush_start(d->conn, &e))) {
		g_critical("%s: %s", d->domain, e->message);
		end(d, "closing the connection: the batch was not stored");
		return false;
	}
	return write_output(d);
}

static gboolean on_commit_timer(gpointer user)
{
	HaDriver *d = user;

	g_clear_pointer(&d->commit_timer, g_source_unref);
	flush(d, false);
	return G_SOURCE_REMOVE;
}

/* The input ran dry: commit now, or when the batch's oldest frame is old enough. */
static bool input_dry(HaDriver *d)
{
	guint due = ha_conn_commit_due_ms(d->conn);

	if (!due)
		return flush(d, false);
	if (!d->commit_timer)
		d->commit_timer = attach(d, g_timeout_source_new(due), G_PRIORITY_DEFAULT,
					 on_commit_timer);
	return write_output(d);
}

static gboolean on_more_input(gpointer user);

/* Reading goes on from an idle callback at the priority of the links' own readable
 * notifications (an fd watch's): at the idle priority, a connection whose link is
 * readable at every iteration (a guest that floods) would starve it, and with it the
 * frames this connection already holds, which no notification announces again. */
static void read_more_later(HaDriver *d)
{
	if (!d->more_idle)
		d->more_idle = attach(d, g_idle_source_new(), G_PRIORITY_DEFAULT,
				      on_more_input);
}

enum step { STEP_MORE, STEP_DRY, STEP_PAUSED, STEP_ENDED };

/* Read and apply up to READS_PER_WAKE reads, BYTES_PER_WAKE bytes (conn-driver.h). */
static enum step read_input(HaDriver *d)
{
	g_autoptr(GError) e = NULL;

	switch (ha_conn_read(d->conn, HA_DRIVER_READS_PER_WAKE, HA_DRIVER_BYTES_PER_WAKE,
			     ha_link_read_fn, d->link, &e)) {
	case HA_READ_MORE:
		if (!write_output(d))
			return STEP_ENDED;
		read_more_later(d);
		return STEP_MORE;
	case HA_READ_DRY:
		return input_dry(d) ? STEP_DRY : STEP_ENDED;
	case HA_READ_PAUSED:
		/* the batch is full and the last one still in flight: no reads until
		 * on_committed() */
		d->paused = true;
		ha_link_want_read(d->link, false);
		return write_output(d) ? STEP_PAUSED : STEP_ENDED;
	case HA_READ_END:
		end(d, "the guest side closed the connection");
		return STEP_ENDED;
	case HA_READ_FAILED:
	default:
		g_warning("%s: %s: closing the connection: %s", d->domain,
			  ha_link_name(d->link), e->message);
		end(d, NULL);
		return STEP_ENDED;
	}
}

static gboolean on_more_input(gpointer user)
{
	HaDriver *d = user;

	g_clear_pointer(&d->more_idle, g_source_unref);
	read_input(d);
	return G_SOURCE_REMOVE;
}

/* Reads on again after a pause, from an idle callback (frames wait in the decoder). */
static void resume(HaDriver *d)
{
	if (!d->paused || !d->conn)
		return;
	d->paused = false;
	ha_link_want_read(d->link, true);
	read_more_later(d);
}

/* A commit made on a commit thread is done (ingest.h): its ACK is queued, or the
 * batch failed. */
static void on_committed(HaConn *c, const GError *error, void *user)
{
	HaDriver *d = user;

	(void)c;
	if (error) {
		g_critical("%s: %s", d->domain, error->message);
		end(d, "closing the connection: the batch was not stored");
	} else if (write_output(d)) {
		resume(d);
	}
}

static void on_link(HaLink *l, HaLinkEvents ev, void *user)
{
	HaDriver *d = user;

	if ((ev & HA_LINK_WRITABLE) && !write_output(d))
		return;
	if ((ev & HA_LINK_READABLE) && d->conn) {
		/* one wake per iteration: the continuation is this read, not one more */
		unsource(&d->more_idle);
		read_input(d);
	}
}

static gboolean on_probe_timer(gpointer user)
{
	HaDriver *d = user;

	if (ha_conn_time_probe(d->conn))
		write_output(d);
	return G_SOURCE_CONTINUE;	/* removed by teardown() when the connection ends */
}

/* What ha_driver_new() starts on the connection's thread. */
typedef struct {
	HaLink *link;
	const HaLimits *limits;
	GError **error;
	bool ok;
} StartArgs;

static void start_call(HaDriver *d, void *data)
{
	StartArgs *a = data;

	d->link = a->link;
	d->conn = ha_conn_new(d->store, a->limits, d->domain, ha_link_name(a->link));
	ha_conn_set_committed(d->conn, on_committed, d);
	g_atomic_int_set(&d->up, 1);
	a->ok = ha_link_start(a->link, on_link, d, a->error);
	if (!a->ok) {
		teardown(d, NULL);
		return;
	}
	if (a->limits->time_probe_ms)
		d->probe_timer = attach(d, g_timeout_source_new(a->limits->time_probe_ms),
					G_PRIORITY_DEFAULT, on_probe_timer);
}

static void quit_call(HaDriver *d, void *why)
{
	teardown(d, why);
	d->quit = true;
}

/* What ha_driver_new() made before its thread started, and the driver itself. */
static void driver_dispose(HaDriver *d)
{
	g_main_context_unref(d->ctx);
	g_main_context_unref(d->owner);
	g_mutex_clear(&d->lock);
	g_free(d->domain);
	g_free(d->peer);
	g_free(d);
}

/* End the thread (closing the connection first) and free @d. */
static void destroy(HaDriver *d, const char *why)
{
	run_sync(d, quit_call, (void *)why);
	g_thread_join(d->thread);
	unregister(d);
	/* the thread is gone: nothing attaches ended_src any more */
	if (d->ended_src) {
		g_source_destroy(d->ended_src);
		g_source_unref(d->ended_src);
	}
	driver_dispose(d);
}

HaDriver *ha_driver_new(HaLink *link, HaStore *store, const HaLimits *limits,
			const char *domain, HaDriverEnded ended, void *user,
			GError **error)
{
	StartArgs a = { .link = link, .limits = limits, .error = error };
	HaDriver *d, *other;

	g_mutex_lock(&running_lock);
	if (!running)
		running = g_hash_table_new(g_direct_hash, g_direct_equal);
	other = g_hash_table_lookup(running, store);
	if (other) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY, "%s: refusing a second connection"
			    " while %s is connected to this store (one connection per store"
			    " at a time)", ha_link_name(link), other->peer);
		g_mutex_unlock(&running_lock);
		ha_link_close(link);
		return NULL;
	}
	d = g_new0(HaDriver, 1);
	d->store = store;
	d->domain = g_strdup(domain);
	d->peer = g_strdup(ha_link_name(link));
	g_hash_table_insert(running, store, d);
	g_mutex_unlock(&running_lock);
	d->ended = ended;
	d->user = user;
	g_mutex_init(&d->lock);
	d->owner = g_main_context_ref_thread_default();
	d->ctx = g_main_context_new();
	d->thread = g_thread_try_new("ha-conn", driver_thread, d, error);
	if (!d->thread) {
		g_mutex_lock(&running_lock);
		g_hash_table_remove(running, store);
		g_mutex_unlock(&running_lock);
		ha_link_close(link);
		driver_dispose(d);
		return NULL;
	}
	run_sync(d, start_call, &a);
	if (!a.ok) {
		destroy(d, NULL);
		return NULL;
	}
	g_message("%s: connected (%s)", domain, ha_link_name(link));
	return d;
}

static void drain_call(HaDriver *d, void *data)
{
	bool *up = data;

	for (;;) {
		enum step st = d->conn ? read_input(d) : STEP_ENDED;

		if (st == STEP_PAUSED && flush(d, true)) {
			/* committed here: the batch that paused us can go on */
			d->paused = false;
			ha_link_want_read(d->link, true);
			continue;
		}
		if (st != STEP_MORE)
			break;
	}
	if (d->conn)
		flush(d, true);
	*up = d->conn != NULL;
}

bool ha_driver_drain(HaDriver *d)
{
	bool up = false;

	run_sync(d, drain_call, &up);
	return up;
}

bool ha_driver_running(const HaDriver *d)
{
	return g_atomic_int_get(&d->up) != 0;
}

typedef struct {
	HaConnStats *ret;
	bool up;
} StatsArgs;

static void stats_call(HaDriver *d, void *data)
{
	StatsArgs *a = data;

	a->up = d->conn != NULL;
	if (a->up)
		*a->ret = *ha_conn_stats(d->conn);
}

bool ha_driver_stats(HaDriver *d, HaConnStats *ret)
{
	StatsArgs a = { .ret = ret };

	run_sync(d, stats_call, &a);
	return a.up;
}

void ha_driver_free(HaDriver *d, const char *why)
{
	if (!d)
		return;
	g_return_if_fail(g_thread_self() != d->thread);
	destroy(d, why);
}

/* ---- another thread takes the store (ha_driver_hold_store()) ------------------------ */

struct _HaDriverHold {
	HaDriver *d;
	unsigned int depth;	/* holds nested on the holder's thread, less one */
	GMutex lock;
	GCond cond;
	bool parked;		/* the connection's thread waits */
	bool released;
};



/* On the connection's thread, which waits here until the holder is done; it frees @h. */
static gboolean on_hold(gpointer user)
{
	HaDriverHold *h = user;

	g_mutex_lock(&h->lock);
	h->parked = true;
	g_cond_broadcast(&h->cond);
	while (!h->released)
		g_cond_wait(&h->cond, &h->lock);
	g_mutex_unlock(&h->lock);
	g_mutex_clear(&h->lock);
	g_cond_clear(&h->cond);
	g_free(h);
	return G_SOURCE_REMOVE;
}

HaDriverHold *ha_driver_hold_store(HaStore *store)
{
	HaDriverHold *h;
	HaDriver *d;
	GSource *src;

	g_mutex_lock(&running_lock);
	d = running ? g_hash_table_lookup(running, store) : NULL;
	g_mutex_unlock(&running_lock);
	/* no connection on it, or we are its thread */
	if (!d || g_thread_self() == d->thread)
		return NULL;
	if (d->held) {
		/* nested: the holder's thread holds it already */
		d->held->depth++;
		return d->held;
	}
	h = g_new0(HaDriverHold, 1);
	h->d = d;
	g_mutex_init(&h->lock);
	g_cond_init(&h->cond);
	src = g_idle_source_new();
	g_source_set_priority(src, G_PRIORITY_HIGH);
	g_source_set_callback(src, on_hold, h, NULL);
	g_source_set_static_name(src, "host-agent store held");
	g_source_attach(src, d->ctx);
	g_source_unref(src);
	g_mutex_lock(&h->lock);
	while (!h->parked)
		g_cond_wait(&h->cond, &h->lock);
	g_mutex_unlock(&h->lock);
	d->held = h;
	return h;
}

void ha_driver_release(HaDriverHold *h)
{
	if (!h)
		return;
	if (h->depth) {
		h->depth--;
		return;
	}
	h->d->held = NULL;
	/* @h is the parked thread's to free from here */
	g_mutex_lock(&h->lock);
	h->released = true;
	g_cond_broadcast(&h->cond);
	g_mutex_unlock(&h->lock);
}
