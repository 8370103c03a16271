/* SPDX-License-Identifier: MIT */
/*
 * libvirt-conn.h - a libvirtd connection that reconnects by itself: the one
 * scaffolding of every daemon-side libvirt user (source-libvirt.c for one domain,
 * fleet.c for every domain).
 *
 * A HaLvConn owns the virConnectPtr (ha_lv_connect(): keepalive, the close callback,
 * LIFECYCLE and DEVICE_ADDED events of every domain to its user's callbacks), and the
 * steps after libvirtd goes away:
 *   closed      libvirt's close callback logs it and defers the rest to an idle (never
 *               inside libvirt's own callback)
 *   idle        ops->closing(), the events deregistered, the connection closed, a
 *               reconnection scheduled with backoff (backoff.h: 100 ms doubling to 5 s)
 *   retry       connect again, then ops->connected(); on failure the first one is
 *               logged ("<label>: <why>; retrying with backoff up to 5000 ms") and the
 *               next attempt scheduled
 * ha_lv_conn_start() connects once and does not retry: the first connection must work
 * (a wrong URI is an operator's error). The user owns nothing of the connection: it
 * reads it with ha_lv_conn_get() (NULL while disconnected) and never closes it.
 */
#ifndef HA_LIBVIRT_CONN_H
#define HA_LIBVIRT_CONN_H

#include <glib.h>
#include <libvirt/libvirt.h>
#include <stdbool.h>

typedef struct {
	/* domain events, with the user pointer given to ha_lv_conn_new() */
	virConnectDomainEventCallback lifecycle;
	virConnectDomainEventDeviceAddedCallback device_added;
	/* connected (at start or again): false with @error drops the connection (then
	 * ha_lv_conn_start() fails, or the next attempt is scheduled). May be NULL. */
	bool (*connected)(virConnectPtr c, void *user, GError **error);
	/* the connection is about to close (libvirtd went away, or the HaLvConn is
	 * freed while connected): drop what was opened through it. May be NULL. */
	void (*closing)(void *user);
} HaLvConnOps;

typedef struct _HaLvConn HaLvConn;

/* @uri NULL: libvirt's default. @label names it in logs. @ops is copied; @user is
 * borrowed and must outlive the HaLvConn. Nothing is connected yet. */
HaLvConn *ha_lv_conn_new(const char *uri, const char *label, const HaLvConnOps *ops,
			 void *user);
/* Connect (and ops->connected()); false with @error, and no retry, on failure. */
bool ha_lv_conn_start(HaLvConn *lc, GError **error);
/* The connection, NULL while there is none (borrowed: valid until the next return to
 * the main loop). */
virConnectPtr ha_lv_conn_get(HaLvConn *lc);
/* ops->closing() if connected, then everything closed and cancelled. NULL: nothing. */
void ha_lv_conn_free(HaLvConn *lc);

#endif /* HA_LIBVIRT_CONN_H */
