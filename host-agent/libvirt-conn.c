// SPDX-License-Identifier: MIT
/* libvirt-conn.c - a libvirtd connection that reconnects by itself (see
 * libvirt-conn.h). */
#include "libvirt-conn.h"

#include <gio/gio.h>
#include <libvirt/virterror.h>

#include "backoff.h"
#include "libvirt-err.h"

struct _HaLvConn {
	char *uri;		/* NULL: libvirt's default */
	char *label;
	HaLvConnOps ops;
	void *user;

	virConnectPtr c;	/* NULL while disconnected */
	int lifecycle_cb;	/* -1 when not registered */
	int device_cb;
	HaBackoff retry;
	guint idle;		/* libvirtd went away: disconnect from an idle */
};

/* Deregister the events (ids set to -1) and close *@c (set to NULL). */
static void lv_close(virConnectPtr *c, int *lifecycle_cb, int *device_cb)
{
	if (!*c)
		return;
	if (*lifecycle_cb >= 0)
		virConnectDomainEventDeregisterAny(*c, *lifecycle_cb);
	if (*device_cb >= 0)
		virConnectDomainEventDeregisterAny(*c, *device_cb);
	*lifecycle_cb = *device_cb = -1;
	virConnectClose(*c);
	*c = NULL;
}

static void on_close(virConnectPtr c, int reason, void *opaque);

/*
 * Open @lc->uri with keepalive on, on_close() told when libvirtd goes away, and the
 * LIFECYCLE and DEVICE_ADDED events of every domain to the user's callbacks. False
 * with @error on failure (then nothing is registered).
 */
static bool lv_open(HaLvConn *lc, GError **error)
{
	virConnectPtr c = virConnectOpen(lc->uri);
	int lcb = -1, dcb = -1;

	if (!c) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt %s: %s",
			    lc->uri ? lc->uri : "(default URI)", why);
		return false;
	}
	virConnectSetKeepAlive(c, 5, 3);
	virConnectRegisterCloseCallback(c, on_close, lc, NULL);
	/* One call at a time: the next call would reset the error of a failed one. */
	lcb = virConnectDomainEventRegisterAny(c, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
					       VIR_DOMAIN_EVENT_CALLBACK(lc->ops.lifecycle),
					       lc->user, NULL);
	if (lcb >= 0)
		dcb = virConnectDomainEventRegisterAny(c, NULL, VIR_DOMAIN_EVENT_ID_DEVICE_ADDED,
						       VIR_DOMAIN_EVENT_CALLBACK(lc->ops.device_added),
						       lc->user, NULL);
	if (lcb < 0 || dcb < 0) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt events: %s", why);
		virConnectUnregisterCloseCallback(c, on_close);
		lv_close(&c, &lcb, &dcb);
		return false;
	}
	lc->c = c;
	lc->lifecycle_cb = lcb;
	lc->device_cb = dcb;
	return true;
}

static void lc_disconnect(HaLvConn *lc)
{
	if (!lc->c)
		return;
	if (lc->ops.closing)
		lc->ops.closing(lc->user);
	lv_close(&lc->c, &lc->lifecycle_cb, &lc->device_cb);
}

static gboolean on_closed_idle(gpointer user)
{
	HaLvConn *lc = user;

	lc->idle = 0;
	lc_disconnect(lc);
	ha_backoff_schedule(&lc->retry);
	return G_SOURCE_REMOVE;
}

static void on_close(virConnectPtr c, int reason, void *opaque)
{
	HaLvConn *lc = opaque;

	g_message("%s: libvirtd went away (reason %d); reconnecting", lc->label, reason);
	/* Not from inside libvirt's own callback. */
	if (!lc->idle)
		lc->idle = g_idle_add(on_closed_idle, lc);
}

static bool lc_connect(HaLvConn *lc, GError **error)
{
	if (!lv_open(lc, error))
		return false;
	if (lc->ops.connected && !lc->ops.connected(lc->c, lc->user, error)) {
		lc_disconnect(lc);
		return false;
	}
	ha_backoff_reset(&lc->retry);
	return true;
}

static gboolean on_retry(gpointer user)
{
	HaLvConn *lc = user;
	g_autoptr(GError) e = NULL;

	if (lc_connect(lc, &e))
		return G_SOURCE_REMOVE;
	if (ha_backoff_first(&lc->retry))
		g_message("%s: %s; retrying with backoff up to %u ms", lc->label, e->message,
			  HA_BACKOFF_MAX_MS);
	ha_backoff_schedule(&lc->retry);
	return G_SOURCE_REMOVE;
}

HaLvConn *ha_lv_conn_new(const char *uri, const char *label, const HaLvConnOps *ops,
			 void *user)
{
	HaLvConn *lc = g_new0(HaLvConn, 1);

	lc->uri = g_strdup(uri);
	lc->label = g_strdup(label);
	lc->ops = *ops;
	lc->user = user;
	lc->lifecycle_cb = lc->device_cb = -1;
	ha_backoff_init(&lc->retry, on_retry, lc);
	return lc;
}

bool ha_lv_conn_start(HaLvConn *lc, GError **error)
{
	return lc_connect(lc, error);
}

virConnectPtr ha_lv_conn_get(HaLvConn *lc)
{
	return lc->c;
}

void ha_lv_conn_free(HaLvConn *lc)
{
	if (!lc)
		return;
	lc_disconnect(lc);
	ha_backoff_cancel(&lc->retry);
	if (lc->idle)
		g_source_remove(lc->idle);
	g_free(lc->uri);
	g_free(lc->label);
	g_free(lc);
}
