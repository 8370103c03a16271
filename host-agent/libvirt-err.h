/* SPDX-License-Identifier: MIT */
/*
 * libvirt-err.h - libvirt's last error, copied while it is still there; and the
 * one way the daemon connects to libvirtd.
 *
 * libvirt keeps one error per thread, and every public call resets it first (its
 * message is freed), virDomainGetName() and virDomainFree() included. A pointer into
 * virGetLastError() is therefore only good until the next libvirt call, and C leaves
 * the order in which a call's arguments are evaluated unspecified: a
 * `g_set_error(..., virDomainGetName(dom), virGetLastError()->message)` may read freed
 * memory. Every report of a libvirt failure in host-agent (attach.c, source-libvirt.c,
 * fleet.c) takes its copy with ha_lv_error() as the first thing after the failed call,
 * in a statement of its own, and only then calls libvirt again.
 */
#ifndef HA_LIBVIRT_ERR_H
#define HA_LIBVIRT_ERR_H

#include <glib.h>
#include <libvirt/libvirt.h>

/*
 * A copy of the message of this thread's last libvirt error (g_free, never NULL):
 * "unknown libvirt error" when libvirt has none. Makes no libvirt call that could
 * reset the error, so it may be called more than once.
 */
char *ha_lv_error(void);

/* libvirt's own printing of every error to stderr turned off (they are reported
 * where they matter, through ha_lv_error()). Idempotent. */
void ha_lv_quiet(void);

/*
 * The connection to libvirtd every daemon-side libvirt user opens (source-libvirt.c,
 * fleet.c): @uri (NULL: libvirt's default), keepalive on, @on_close told when
 * libvirtd goes away, and domain LIFECYCLE and DEVICE_ADDED events of every domain to
 * @lifecycle and @device_added with @user. The callback ids go to @ret_lifecycle_cb and
 * @ret_device_cb (give both to ha_lv_disconnect()). NULL with @error on failure (then
 * nothing is registered).
 */
virConnectPtr ha_lv_connect(const char *uri, virConnectDomainEventCallback lifecycle,
			    virConnectDomainEventDeviceAddedCallback device_added,
			    virConnectCloseFunc on_close, void *user, int *ret_lifecycle_cb,
			    int *ret_device_cb, GError **error);

/* Deregister the callbacks (ids set to -1) and close *@c (set to NULL). NULL *@c:
 * nothing. */
void ha_lv_disconnect(virConnectPtr *c, int *lifecycle_cb, int *device_cb);

#endif /* HA_LIBVIRT_ERR_H */
