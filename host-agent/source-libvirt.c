// SPDX-License-Identifier: MIT
/*
 * source-libvirt.c - a libvirt domain's org.stackmap.0 channel as a source (source.h).
 *
 * One HaLvSource holds one connection to libvirtd (events through libvirt-glib's
 * gvir_event_register(), i.e. on the GLib main loop) and one domain, looked up by
 * name at each use (it may be undefined, redefined, started and stopped while the
 * agent runs). The channel is opened with virDomainOpenChannel() on a non-blocking
 * virStream (libvirt-gobject has no channel call, so the raw handles are used) and fed
 * to a connection driver (conn-driver.h) as a link (link-libvirt.c), like the socket
 * source does with its fd.
 *
 * Life cycle, driven by VIR_DOMAIN_EVENT_ID_LIFECYCLE:
 *   STARTED            the domain (re)started: open the channel, retrying with backoff
 *                      while it is not there yet (and at once on DEVICE_ADDED, when
 *                      `host-agent attach` hot-plugs it)
 *   CRASHED            drain and commit what the stream holds, then mark the boot
 *                      crashed at the event's time (crash.h), then the post-mortem
 *                      (pm-libvirt.h: a memory dump of a preserved guest, in a worker
 *                      thread, its kernel log into the crashed boot)
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

#include "backoff.h"
#include "conn-driver.h"
#include "crash.h"
#include "libvirt-conn.h"
#include "libvirt-err.h"
#include "link-libvirt.h"
#include "pm-libvirt.h"

#define CHANNEL_NAME	"org.stackmap.0"

struct _HaLvSource {
	char *name;		/* libvirt domain name */
	char *label;		/* store name, for logs */
	HaStore *store;
	HaLimits limits;

	HaLvConn *lv;		/* libvirtd, reconnected by itself (libvirt-conn.h) */
	bool stopping;

	HaDriver *drv;		/* the open channel's connection, NULL when none */
	HaBackoff open_retry;
	bool warned_open;
	int64_t alive_since;	/* real time the domain was last seen starting/running */
	HaLvPm *pm;		/* the post-mortem, NULL when off (pm-libvirt.h) */
};

static void schedule_open(HaLvSource *s);

/* ---- the channel --------------------------------------------------------------- */

/* The channel's connection ended by itself (conn-driver.h) while the domain may
 * still run: reopen it with backoff (STOPPED cancels that). */
static void on_ended(HaDriver *drv, void *user)
{
	HaLvSource *s = user;

	ha_driver_free(drv, NULL);
	s->drv = NULL;
	schedule_open(s);
}

/* Close the channel, if open, without reopening it. */
static void channel_close(HaLvSource *s, const char *why)
{
	g_autofree char *msg = NULL;

	if (!s->drv)
		return;
	msg = g_strdup_printf("domain %s: %s", s->name, why);
	ha_driver_free(s->drv, msg);
	s->drv = NULL;
}

/* Apply everything the channel holds right now and commit it (before a crash mark). */
static void drain(HaLvSource *s)
{
	if (s->drv)
		ha_driver_drain(s->drv);	/* on_ended ran when it ended */
}

/* Look the domain up: NULL when it is not defined. The caller frees it. */
static virDomainPtr lookup(HaLvSource *s)
{
	virConnectPtr c = ha_lv_conn_get(s->lv);

	return c ? virDomainLookupByName(c, s->name) : NULL;
}

/* Open the channel when the domain runs. False: try again later. */
static bool try_open(HaLvSource *s)
{
	g_autoptr(GError) e = NULL;
	g_autofree char *peer = NULL;
	virDomainPtr dom;
	virStreamPtr st;

	if (s->drv || !ha_lv_conn_get(s->lv))
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
	st = virStreamNew(ha_lv_conn_get(s->lv), VIR_STREAM_NONBLOCK);
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
	peer = g_strdup_printf("libvirt domain %s channel %s", s->name, CHANNEL_NAME);
	s->drv = ha_driver_new(ha_link_new_virstream(st, peer), s->store, &s->limits,
			       s->label, on_ended, s, &e);
	if (!s->drv) {
		g_warning("%s: %s: %s", s->label, peer, e->message);
		return false;
	}
	s->warned_open = false;
	ha_backoff_reset(&s->open_retry);
	return true;
}

static gboolean on_open_retry(gpointer user)
{
	HaLvSource *s = user;

	if (!try_open(s))
		schedule_open(s);
	return G_SOURCE_REMOVE;
}

static void schedule_open(HaLvSource *s)
{
	if (!s->stopping)
		ha_backoff_schedule(&s->open_retry);
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
	ha_lv_pm_event(s->pm, event);	/* before STOPPED's or STARTED's changes */
	switch (event) {
	case VIR_DOMAIN_EVENT_STARTED:
		/* A channel still open belongs to this run (opened while the event was
		 * on its way): STOPPED closes the previous run's. */
		g_message("%s: domain %s started", s->label, s->name);
		s->alive_since = g_get_real_time();
		ha_backoff_reset(&s->open_retry);
		s->warned_open = false;
		if (!try_open(s))
			schedule_open(s);
		break;
	case VIR_DOMAIN_EVENT_CRASHED:
		crashed(s, detail == VIR_DOMAIN_EVENT_CRASHED_PANICKED ?
			"libvirt: domain crashed (guest panic)" : "libvirt: domain crashed");
		ha_lv_pm_crashed(s->pm, dom, s->alive_since);	/* after the mark */
		break;
	case VIR_DOMAIN_EVENT_STOPPED:
		if (detail == VIR_DOMAIN_EVENT_STOPPED_CRASHED)
			crashed(s, "libvirt: domain stopped after a crash");
		else
			drain(s);
		channel_close(s, "the domain stopped");	/* no reopen until STARTED */
		ha_backoff_cancel(&s->open_retry);
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

	if (strcmp(virDomainGetName(dom), s->name) != 0 || s->drv)
		return;
	g_message("%s: domain %s: device %s added", s->label, s->name, alias);
	ha_backoff_reset(&s->open_retry);
	if (try_open(s))
		ha_backoff_cancel(&s->open_retry);
}

/* ---- the libvirtd connection (libvirt-conn.h) ---------------------------------- */

static void on_lv_closing(void *user)
{
	HaLvSource *s = user;

	channel_close(s, "libvirt connection closed");
	ha_backoff_cancel(&s->open_retry);
}

static bool on_lv_connected(virConnectPtr c, void *user, GError **error)
{
	HaLvSource *s = user;

	s->warned_open = false;
	if (!try_open(s))
		schedule_open(s);
	return true;
}

void ha_libvirt_init(void)
{
	static gsize done;

	if (g_once_init_enter(&done)) {
		ha_lv_quiet();
		gvir_event_register();
		g_once_init_leave(&done, 1);
	}
}

HaLvSource *ha_lv_source_new(const char *uri, const char *domain, HaStore *store,
			     const HaLimits *limits, const char *label)
{
	HaLvSource *s = g_new0(HaLvSource, 1);

	ha_libvirt_init();
	s->name = g_strdup(domain);
	s->label = g_strdup(label);
	s->store = store;
	s->limits = *limits;
	s->lv = ha_lv_conn_new(uri, label, &(HaLvConnOps){
					.lifecycle = on_lifecycle,
					.device_added = on_device_added,
					.connected = on_lv_connected,
					.closing = on_lv_closing,
				}, s);
	ha_backoff_init(&s->open_retry, on_open_retry, s);
	s->pm = ha_lv_pm_new(store, label);
	return s;
}

bool ha_lv_source_start(HaLvSource *s, GError **error)
{
	/* The first connection must work: a wrong URI is an operator's error. Later
	 * losses of libvirtd are reconnected. */
	return ha_lv_conn_start(s->lv, error);
}

void ha_lv_source_free(HaLvSource *s)
{
	if (!s)
		return;
	s->stopping = true;
	drain(s);
	channel_close(s, "host-agent stopping");
	ha_lv_pm_free(s->pm);
	ha_lv_conn_free(s->lv);
	ha_backoff_cancel(&s->open_retry);
	g_free(s->name);
	g_free(s->label);
	g_free(s);
}
