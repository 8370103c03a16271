// SPDX-License-Identifier: MIT
/* libvirt-err.c - libvirt's last error, and the daemon's libvirtd connection (see
 * libvirt-err.h). */
#include "libvirt-err.h"

#include <gio/gio.h>
#include <glib.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

char *ha_lv_error(void)
{
	/* virGetLastError() reads the thread's error without resetting it. */
	virErrorPtr e = virGetLastError();

	return g_strdup(e && e->message ? e->message : "unknown libvirt error");
}

static void silence(void *user, virErrorPtr e)
{
}

void ha_lv_quiet(void)
{
	virSetErrorFunc(NULL, silence);
}

void ha_lv_disconnect(virConnectPtr *c, int *lifecycle_cb, int *device_cb)
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

virConnectPtr ha_lv_connect(const char *uri, virConnectDomainEventCallback lifecycle,
			    virConnectDomainEventDeviceAddedCallback device_added,
			    virConnectCloseFunc on_close, void *user, int *ret_lifecycle_cb,
			    int *ret_device_cb, GError **error)
{
	virConnectPtr c = virConnectOpen(uri);
	int lc = -1, dc = -1;

	if (!c) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt %s: %s",
			    uri ? uri : "(default URI)", why);
		return NULL;
	}
	virConnectSetKeepAlive(c, 5, 3);
	virConnectRegisterCloseCallback(c, on_close, user, NULL);
	/* One call at a time: the next call would reset the error of a failed one. */
	lc = virConnectDomainEventRegisterAny(c, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
					      VIR_DOMAIN_EVENT_CALLBACK(lifecycle), user, NULL);
	if (lc >= 0)
		dc = virConnectDomainEventRegisterAny(c, NULL, VIR_DOMAIN_EVENT_ID_DEVICE_ADDED,
						      VIR_DOMAIN_EVENT_CALLBACK(device_added),
						      user, NULL);
	if (lc < 0 || dc < 0) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt events: %s", why);
		virConnectUnregisterCloseCallback(c, on_close);
		ha_lv_disconnect(&c, &lc, &dc);
		return NULL;
	}
	*ret_lifecycle_cb = lc;
	*ret_device_cb = dc;
	return c;
}
