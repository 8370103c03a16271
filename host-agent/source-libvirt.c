// SPDX-License-Identifier: MIT
/*
 * source-libvirt.c - a libvirt domain's org.stackmap.0 channel as a source (source.h).
 *
 * One HaLvSource holds one connection to libvirtd (events through libvirt-glib's
 * gvir_event_register(), i.e. on the GLib main loop) and one domain, looked up by
 * name at each use (it may be undefined, redefined, started and stopped while the
 * agent runs). The channel is opened with virDomainOpenChannel() on a non-blocking
 * virStream (libvirt-gobject has no channel call, so the raw handles are used) and fed
 * to a HaConn (ingest.h), like the socket source does with its fd.
 *
 * Life cycle, driven by VIR_DOMAIN_EVENT_ID_LIFECYCLE:
 *   STARTED            the domain (re)started: open the channel, retrying with backoff
 *                      while it is not there yet (and at once on DEVICE_ADDED, when
 *                      `host-agent attach` hot-plugs it)
 *   CRASHED            drain and commit what the stream holds, then mark the boot
 *                      crashed at the event's time (crash.h)
 *   STOPPED (CRASHED)  the same, then close the channel
 *   STOPPED (other)    close the channel: the stream records 'disconnected' unless
 *                      the guest said BYE ('clean')
 * A stream that ends while the domain still runs is reopened with backoff. When
 * libvirtd goes away, the connection is reopened with backoff.
 */
#include "source.h"

#include <errno.h>
#include <gio/gio.h>
#include <libvirt-glib/libvirt-glib.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <string.h>

#include "crash.h"
#include "libvirt-err.h"

#define BACKOFF_MIN_MS	100u
#define BACKOFF_MAX_MS	5000u
#define READS_PER_WAKE	64
#define CHANNEL_NAME	"org.stackmap.0"

struct _HaLvSource {
	char *uri;		/* NULL: libvirt's default */
	char *name;		/* libvirt domain name */
	char *label;		/* store name, for logs */
	HaStore *store;
	HaLimits limits;

	virConnectPtr lv;
	int lifecycle_cb;	/* -1 when not registered */
	int device_cb;
	guint lv_retry;
	unsigned int lv_backoff_ms;
	bool lv_closed;		/* libvirtd went away: reconnect from an idle */
	guint lv_idle;
	bool stopping;

	virStreamPtr st;	/* NULL when the channel is not open */
	bool st_cb;
	HaConn *conn;
	guint commit_timer;
	guint probe_timer;	/* clock probes (ha_conn_time_probe()) */
	guint more_idle;	/* reading goes on from here after READS_PER_WAKE */
	guint open_retry;
	unsigned int open_backoff_ms;
	bool warned_open;
	int64_t alive_since;	/* real time the domain was last seen starting/running */
};

static void link_close(HaLvSource *s, const char *why);
static void schedule_open(HaLvSource *s);
static void schedule_lv(HaLvSource *s);

/* ---- the channel stream ---------------------------------------------------------- */

static void update_events(HaLvSource *s)
{
	size_t len = 0;
	int ev = VIR_STREAM_EVENT_READABLE | VIR_STREAM_EVENT_ERROR | VIR_STREAM_EVENT_HANGUP;

	if (!s->st_cb)
		return;
	ha_conn_output(s->conn, &len);
	if (len)
		ev |= VIR_STREAM_EVENT_WRITABLE;
	virStreamEventUpdateCallback(s->st, ev);
}

static bool write_output(HaLvSource *s)
{
	size_t len;
	const uint8_t *out = ha_conn_output(s->conn, &len);

	while (len) {
		int n = virStreamSend(s->st, (const char *)out, MIN(len, 1u << 20));

		if (n == -2)
			break;	/* WRITABLE tells us when to go on */
		if (n < 0) {
			g_autofree char *why = ha_lv_error();

			g_debug("%s: channel write: %s", s->label, why);
			return false;
		}
		ha_conn_output_done(s->conn, (size_t)n);
		out = ha_conn_output(s->conn, &len);
	}
	update_events(s);
	return true;
}

static bool flush(HaLvSource *s)
{
	g_autoptr(GError) e = NULL;

	if (s->commit_timer) {
		g_source_remove(s->commit_timer);
		s->commit_timer = 0;
	}
	if (!ha_conn_flush(s->conn, &e)) {
		g_critical("%s: %s", s->label, e->message);
		return false;
	}
	return write_output(s);
}

static gboolean on_probe_timer(gpointer user)
{
	HaLvSource *s = user;

	if (s->conn && ha_conn_time_probe(s->conn) && !write_output(s))
		link_close(s, "write failed");
	return s->st ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static gboolean on_commit_timer(gpointer user)
{
	HaLvSource *s = user;

	s->commit_timer = 0;
	if (!flush(s))
		link_close(s, NULL);
	return G_SOURCE_REMOVE;
}

static bool input_idle(HaLvSource *s)
{
	guint due = ha_conn_commit_due_ms(s->conn);

	if (!due)
		return flush(s);
	if (!s->commit_timer)
		s->commit_timer = g_timeout_add(due, on_commit_timer, s);
	return write_output(s);
}

enum read_result { READ_MORE, READ_DRY, READ_CLOSED };

static ssize_t read_stream(void *ctx, uint8_t *buf, size_t len)
{
	HaLvSource *s = ctx;
	int n = virStreamRecv(s->st, (char *)buf, MIN(len, 1u << 20));

	if (n == -2)
		return -EAGAIN;
	if (n < 0) {
		g_autofree char *why = ha_lv_error();

		g_message("%s: channel read: %s", s->label, why);
		return -EIO;
	}
	return n;
}

static gboolean on_more_input(gpointer user);

/*
 * Read and apply up to READS_PER_WAKE chunks. On READ_CLOSED the link is closed. After
 * READ_MORE, reading goes on from an idle callback: the stream's READABLE event does
 * not come again for data those reads already took, and the batch's commit and ACK
 * (at READ_DRY) must not wait for more input.
 */
static enum read_result read_some(HaLvSource *s)
{
	g_autoptr(GError) e = NULL;

	switch (ha_conn_read(s->conn, READS_PER_WAKE, read_stream, s, &e)) {
	case HA_READ_MORE:
		if (write_output(s)) {
			if (!s->more_idle)
				s->more_idle = g_idle_add(on_more_input, s);
			return READ_MORE;
		}
		link_close(s, "write failed");
		return READ_CLOSED;
	case HA_READ_DRY:
		if (input_idle(s))
			return READ_DRY;
		link_close(s, NULL);
		return READ_CLOSED;
	case HA_READ_END:
		link_close(s, "the channel was closed");
		return READ_CLOSED;
	case HA_READ_FAILED:
	default:
		g_warning("%s: closing the channel: %s", s->label, e->message);
		link_close(s, NULL);
		return READ_CLOSED;
	}
}

static gboolean on_more_input(gpointer user)
{
	HaLvSource *s = user;

	s->more_idle = 0;
	if (s->st)
		read_some(s);
	return G_SOURCE_REMOVE;
}

static void on_stream(virStreamPtr st, int events, void *opaque)
{
	HaLvSource *s = opaque;

	if (events & VIR_STREAM_EVENT_WRITABLE) {
		if (!write_output(s)) {
			link_close(s, "write failed");
			return;
		}
	}
	if (events & (VIR_STREAM_EVENT_READABLE | VIR_STREAM_EVENT_HANGUP |
		      VIR_STREAM_EVENT_ERROR))
		read_some(s);
}

/* Apply everything the stream holds right now and commit it (before a crash mark). */
static void drain(HaLvSource *s)
{
	while (s->st && read_some(s) == READ_MORE)
		;
	if (s->st && !flush(s))
		link_close(s, NULL);
}

static void link_close(HaLvSource *s, const char *why)
{
	if (!s->st)
		return;
	if (why)
		g_message("%s: domain %s: %s", s->label, s->name, why);
	if (s->st_cb)
		virStreamEventRemoveCallback(s->st);
	s->st_cb = false;
	if (s->more_idle)
		g_source_remove(s->more_idle);
	s->more_idle = 0;
	if (s->commit_timer)
		g_source_remove(s->commit_timer);
	s->commit_timer = 0;
	if (s->probe_timer && !(g_main_current_source() &&
				g_source_get_id(g_main_current_source()) == s->probe_timer))
		g_source_remove(s->probe_timer);
	s->probe_timer = 0;
	ha_conn_close(s->conn);
	g_clear_pointer(&s->conn, ha_conn_free);
	virStreamAbort(s->st);
	virStreamFree(s->st);
	s->st = NULL;
	if (!s->stopping)
		schedule_open(s);
}

/* Look the domain up: NULL when it is not defined. The caller frees it. */
static virDomainPtr lookup(HaLvSource *s)
{
	return s->lv ? virDomainLookupByName(s->lv, s->name) : NULL;
}

/* Open the channel when the domain runs. False: try again later. */
static bool try_open(HaLvSource *s)
{
	virDomainPtr dom;
	virStreamPtr st;
	g_autofree char *peer = NULL;

	if (s->st || !s->lv)
		return true;
	dom = lookup(s);
	if (!dom || virDomainIsActive(dom) != 1) {
		if (dom)
			virDomainFree(dom);
		if (!s->warned_open)
			g_message("%s: domain %s is not running; waiting for it to start",
				  s->label, s->name);
		s->warned_open = true;
		return true;	/* the STARTED event brings us back */
	}
	st = virStreamNew(s->lv, VIR_STREAM_NONBLOCK);
	if (!st || virDomainOpenChannel(dom, CHANNEL_NAME, st, VIR_DOMAIN_CHANNEL_FORCE) < 0) {
		g_autofree char *why = ha_lv_error();

		if (!s->warned_open)
			g_message("%s: domain %s: cannot open channel %s (%s); retrying, and at"
				  " once when a device is added (host-agent attach --domain %s)",
				  s->label, s->name, CHANNEL_NAME, why, s->name);
		s->warned_open = true;
		if (st)
			virStreamFree(st);
		virDomainFree(dom);
		return false;
	}
	virDomainFree(dom);
	if (s->alive_since == 0)
		s->alive_since = g_get_real_time();
	s->st = st;
	peer = g_strdup_printf("libvirt domain %s channel %s", s->name, CHANNEL_NAME);
	s->conn = ha_conn_new(s->store, &s->limits, s->label, peer);
	if (virStreamEventAddCallback(st, VIR_STREAM_EVENT_READABLE | VIR_STREAM_EVENT_ERROR |
				      VIR_STREAM_EVENT_HANGUP, on_stream, s, NULL) < 0) {
		g_autofree char *why = ha_lv_error();

		g_warning("%s: stream events: %s", s->label, why);
		link_close(s, NULL);
		return false;
	}
	s->st_cb = true;
	s->warned_open = false;
	s->open_backoff_ms = BACKOFF_MIN_MS;
	if (s->limits.time_probe_ms)
		s->probe_timer = g_timeout_add(s->limits.time_probe_ms, on_probe_timer, s);
	g_message("%s: connected (%s)", s->label, peer);
	return true;
}

static gboolean on_open_retry(gpointer user)
{
	HaLvSource *s = user;

	s->open_retry = 0;
	if (!try_open(s)) {
		s->open_backoff_ms = MIN(s->open_backoff_ms * 2, BACKOFF_MAX_MS);
		schedule_open(s);
	}
	return G_SOURCE_REMOVE;
}

static void schedule_open(HaLvSource *s)
{
	if (!s->open_retry && !s->stopping)
		s->open_retry = g_timeout_add(s->open_backoff_ms, on_open_retry, s);
}

/* ---- domain events ------------------------------------------------------------- */

static void crashed(HaLvSource *s, const char *why)
{
	drain(s);
	ha_crash_mark(s->store, s->label, g_get_real_time(), s->alive_since, why);
}

static int on_lifecycle(virConnectPtr c, virDomainPtr dom, int event, int detail,
			void *opaque)
{
	HaLvSource *s = opaque;

	if (strcmp(virDomainGetName(dom), s->name) != 0)
		return 0;
	g_debug("%s: domain %s: lifecycle event %d detail %d", s->label, s->name, event,
		detail);
	switch (event) {
	case VIR_DOMAIN_EVENT_STARTED:
		/* A channel still open belongs to this run (opened while the event was
		 * on its way): STOPPED closes the previous run's. */
		g_message("%s: domain %s started", s->label, s->name);
		s->alive_since = g_get_real_time();
		s->open_backoff_ms = BACKOFF_MIN_MS;
		s->warned_open = false;
		if (!try_open(s))
			schedule_open(s);
		break;
	case VIR_DOMAIN_EVENT_CRASHED:
		crashed(s, detail == VIR_DOMAIN_EVENT_CRASHED_PANICKED ?
			"libvirt: domain crashed (guest panic)" : "libvirt: domain crashed");
		break;
	case VIR_DOMAIN_EVENT_STOPPED:
		if (detail == VIR_DOMAIN_EVENT_STOPPED_CRASHED)
			crashed(s, "libvirt: domain stopped after a crash");
		else
			drain(s);
		s->stopping = true;	/* no reopen until STARTED */
		link_close(s, "the domain stopped");
		s->stopping = false;
		if (s->open_retry)
			g_source_remove(s->open_retry);
		s->open_retry = 0;
		s->alive_since = 0;
		break;
	default:
		break;
	}
	return 0;
}

static void on_device_added(virConnectPtr c, virDomainPtr dom, const char *alias,
			    void *opaque)
{
	HaLvSource *s = opaque;

	if (strcmp(virDomainGetName(dom), s->name) != 0 || s->st)
		return;
	g_message("%s: domain %s: device %s added", s->label, s->name, alias);
	s->open_backoff_ms = BACKOFF_MIN_MS;
	if (try_open(s) && s->open_retry) {
		g_source_remove(s->open_retry);
		s->open_retry = 0;
	}
}

/* ---- the libvirtd connection ---------------------------------------------------- */

static void lv_disconnect(HaLvSource *s)
{
	bool stopping = s->stopping;

	s->stopping = true;
	link_close(s, "libvirt connection closed");
	s->stopping = stopping;
	if (s->open_retry)
		g_source_remove(s->open_retry);
	s->open_retry = 0;
	if (!s->lv)
		return;
	if (s->lifecycle_cb >= 0)
		virConnectDomainEventDeregisterAny(s->lv, s->lifecycle_cb);
	if (s->device_cb >= 0)
		virConnectDomainEventDeregisterAny(s->lv, s->device_cb);
	s->lifecycle_cb = s->device_cb = -1;
	virConnectClose(s->lv);
	s->lv = NULL;
}

static gboolean on_lv_closed_idle(gpointer user)
{
	HaLvSource *s = user;

	s->lv_idle = 0;
	lv_disconnect(s);
	schedule_lv(s);
	return G_SOURCE_REMOVE;
}

static void on_lv_close(virConnectPtr c, int reason, void *opaque)
{
	HaLvSource *s = opaque;

	g_message("%s: libvirtd went away (reason %d); reconnecting", s->label, reason);
	/* Not from inside libvirt's own callback. */
	if (!s->lv_idle)
		s->lv_idle = g_idle_add(on_lv_closed_idle, s);
}

static bool lv_connect(HaLvSource *s, GError **error)
{
	s->lv = virConnectOpen(s->uri);
	if (!s->lv) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt %s: %s",
			    s->uri ? s->uri : "(default URI)", why);
		return false;
	}
	virConnectSetKeepAlive(s->lv, 5, 3);
	virConnectRegisterCloseCallback(s->lv, on_lv_close, s, NULL);
	/* One call at a time: the next call would reset the error of a failed one. */
	s->lifecycle_cb = virConnectDomainEventRegisterAny(s->lv, NULL,
			VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle),
			s, NULL);
	if (s->lifecycle_cb >= 0)
		s->device_cb = virConnectDomainEventRegisterAny(s->lv, NULL,
				VIR_DOMAIN_EVENT_ID_DEVICE_ADDED,
				VIR_DOMAIN_EVENT_CALLBACK(on_device_added), s, NULL);
	if (s->lifecycle_cb < 0 || s->device_cb < 0) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt events: %s", why);
		lv_disconnect(s);
		return false;
	}
	s->lv_backoff_ms = BACKOFF_MIN_MS;
	s->warned_open = false;
	if (!try_open(s))
		schedule_open(s);
	return true;
}

static gboolean on_lv_retry(gpointer user)
{
	HaLvSource *s = user;
	g_autoptr(GError) e = NULL;

	s->lv_retry = 0;
	if (lv_connect(s, &e))
		return G_SOURCE_REMOVE;
	if (s->lv_backoff_ms == BACKOFF_MIN_MS)
		g_message("%s: %s; retrying with backoff up to %u ms", s->label, e->message,
			  BACKOFF_MAX_MS);
	s->lv_backoff_ms = MIN(s->lv_backoff_ms * 2, BACKOFF_MAX_MS);
	schedule_lv(s);
	return G_SOURCE_REMOVE;
}

static void schedule_lv(HaLvSource *s)
{
	if (!s->lv_retry && !s->stopping)
		s->lv_retry = g_timeout_add(s->lv_backoff_ms, on_lv_retry, s);
}

static void silence_libvirt(void *user, virErrorPtr e)
{
	/* Errors are reported where they matter (ha_lv_error()); not on stderr as well. */
}

void ha_libvirt_init(void)
{
	static gsize done;

	if (g_once_init_enter(&done)) {
		virSetErrorFunc(NULL, silence_libvirt);
		gvir_event_register();
		g_once_init_leave(&done, 1);
	}
}

HaLvSource *ha_lv_source_new(const char *uri, const char *domain, HaStore *store,
			     const HaLimits *limits, const char *label)
{
	HaLvSource *s = g_new0(HaLvSource, 1);

	ha_libvirt_init();
	s->uri = g_strdup(uri);
	s->name = g_strdup(domain);
	s->label = g_strdup(label);
	s->store = store;
	s->limits = *limits;
	s->lifecycle_cb = s->device_cb = -1;
	s->lv_backoff_ms = s->open_backoff_ms = BACKOFF_MIN_MS;
	return s;
}

bool ha_lv_source_start(HaLvSource *s, GError **error)
{
	/* The first connection must work: a wrong URI is an operator's error. Later
	 * losses of libvirtd are reconnected. */
	return lv_connect(s, error);
}

void ha_lv_source_free(HaLvSource *s)
{
	if (!s)
		return;
	s->stopping = true;
	if (s->st)
		drain(s);
	lv_disconnect(s);
	if (s->lv_retry)
		g_source_remove(s->lv_retry);
	if (s->lv_idle)
		g_source_remove(s->lv_idle);
	g_free(s->uri);
	g_free(s->name);
	g_free(s->label);
	g_free(s);
}
