// SPDX-License-Identifier: MIT
/* conn-driver.c - one guest connection on the main loop (see conn-driver.h). */
#include "conn-driver.h"

#include <errno.h>
#include <gio/gio.h>
#include <string.h>

struct _HaDriver {
	HaStore *store;
	HaLink *link;		/* NULL once ended */
	HaConn *conn;		/* NULL once ended */
	char *domain;
	guint more_idle;	/* reading goes on from here after READS_PER_WAKE */
	guint commit_timer;
	guint probe_timer;	/* clock probes (ha_conn_time_probe()) */
	HaDriverEnded ended;
	void *user;
	bool paused;		/* reads off until the commit in flight is done */
	unsigned int busy;	/* inside one of our callbacks (nesting depth) */
	bool freed;		/* ha_driver_free() ran while busy */
};

/*
 * The running driver of each store (store -> driver). One connection per store at a
 * time: a store has one transaction (store.h), which a second connection's batches
 * would share, committing the first one's half-applied batch with its own and
 * acknowledging frames of the other stream. Main-loop thread only.
 */
static GHashTable *running;

/* Every entry point brackets its work with enter()/leave(): a driver freed by its
 * owner from HaDriverEnded is released only when the outermost one returns. */
static void enter(HaDriver *d)
{
	d->busy++;
}

/* False when the driver must not be touched any more (it was freed). */
static bool leave(HaDriver *d)
{
	if (--d->busy == 0 && d->freed) {
		g_free(d);
		return false;
	}
	return true;
}

static void stop_sources(HaDriver *d)
{
	if (d->more_idle)
		g_source_remove(d->more_idle);
	d->more_idle = 0;
	if (d->commit_timer)
		g_source_remove(d->commit_timer);
	d->commit_timer = 0;
	if (d->probe_timer)
		g_source_remove(d->probe_timer);
	d->probe_timer = 0;
}

/* Close the HaConn (recording how the stream ended) and the link. */
static void teardown(HaDriver *d, const char *why)
{
	if (!d->conn)
		return;
	if (why)
		g_message("%s: %s: %s", d->domain, ha_link_name(d->link), why);
	stop_sources(d);
	g_hash_table_remove(running, d->store);
	ha_conn_close(d->conn);
	g_clear_pointer(&d->conn, ha_conn_free);
	g_clear_pointer(&d->link, ha_link_close);
}

/* The connection ends by itself: tell the owner (who may free us). */
static void end(HaDriver *d, const char *why)
{
	if (!d->conn)
		return;
	teardown(d, why);
	if (d->ended)
		d->ended(d, d->user);
}

/* Write what the connection holds; false when the link broke (the connection ended). */
static bool write_output(HaDriver *d)
{
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
	return true;
}

/* Commit the batch: on a commit thread (its ACK written when it is done,
 * on_committed()), or here and now when @sync; false when the connection ended. */
static bool flush(HaDriver *d, bool sync)
{
	g_autoptr(GError) e = NULL;

	if (d->commit_timer) {
		g_source_remove(d->commit_timer);
		d->commit_timer = 0;
	}
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

	d->commit_timer = 0;
	enter(d);
	flush(d, false);
	leave(d);
	return G_SOURCE_REMOVE;
}

/* The input ran dry: commit now, or when the batch's oldest frame is old enough. */
static bool input_dry(HaDriver *d)
{
	guint due = ha_conn_commit_due_ms(d->conn);

	if (!due)
		return flush(d, false);
	if (!d->commit_timer)
		d->commit_timer = g_timeout_add(due, on_commit_timer, d);
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
		d->more_idle = g_idle_add_full(G_PRIORITY_DEFAULT, on_more_input, d, NULL);
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

	d->more_idle = 0;
	enter(d);
	read_input(d);
	leave(d);
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
	enter(d);
	if (error) {
		g_critical("%s: %s", d->domain, error->message);
		end(d, "closing the connection: the batch was not stored");
	} else if (write_output(d)) {
		resume(d);
	}
	leave(d);
}

static void on_link(HaLink *l, HaLinkEvents ev, void *user)
{
	HaDriver *d = user;

	enter(d);
	if ((ev & HA_LINK_WRITABLE) && !write_output(d))
		goto out;
	if ((ev & HA_LINK_READABLE) && d->conn) {
		/* one wake per iteration: the continuation is this read, not one more */
		if (d->more_idle) {
			g_source_remove(d->more_idle);
			d->more_idle = 0;
		}
		read_input(d);
	}
out:
	leave(d);
}

static gboolean on_probe_timer(gpointer user)
{
	HaDriver *d = user;

	enter(d);
	if (ha_conn_time_probe(d->conn))
		write_output(d);
	leave(d);
	return G_SOURCE_CONTINUE;	/* removed by teardown() when the connection ends */
}

HaDriver *ha_driver_new(HaLink *link, HaStore *store, const HaLimits *limits,
			const char *domain, HaDriverEnded ended, void *user,
			GError **error)
{
	HaDriver *d, *other;

	if (!running)
		running = g_hash_table_new(g_direct_hash, g_direct_equal);
	other = g_hash_table_lookup(running, store);
	if (other) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY, "%s: refusing a second connection"
			    " while %s is connected to this store (one connection per store"
			    " at a time)",
			    ha_link_name(link), ha_link_name(other->link));
		ha_link_close(link);
		return NULL;
	}
	d = g_new0(HaDriver, 1);
	d->store = store;
	d->domain = g_strdup(domain);
	d->ended = ended;
	d->user = user;
	d->link = link;
	d->conn = ha_conn_new(store, limits, domain, ha_link_name(link));
	ha_conn_set_committed(d->conn, on_committed, d);
	g_hash_table_insert(running, store, d);
	if (!ha_link_start(link, on_link, d, error)) {
		d->ended = NULL;
		ha_driver_free(d, NULL);
		return NULL;
	}
	if (limits->time_probe_ms)
		d->probe_timer = g_timeout_add(limits->time_probe_ms, on_probe_timer, d);
	g_message("%s: connected (%s)", domain, ha_link_name(link));
	return d;
}

bool ha_driver_drain(HaDriver *d)
{
	bool up;

	enter(d);
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
	up = d->conn != NULL;
	return leave(d) && up;
}

bool ha_driver_running(const HaDriver *d)
{
	return d->conn != NULL;
}

const HaConnStats *ha_driver_stats(const HaDriver *d)
{
	return d->conn ? ha_conn_stats(d->conn) : NULL;
}

void ha_driver_free(HaDriver *d, const char *why)
{
	if (!d || d->freed)
		return;
	teardown(d, why);
	g_free(d->domain);
	d->domain = NULL;
	d->freed = true;
	if (!d->busy)
		g_free(d);
}
