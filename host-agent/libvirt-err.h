/* SPDX-License-Identifier: MIT */
/*
 * libvirt-err.h - libvirt's last error, copied while it is still there (the daemon's
 * libvirtd connection is libvirt-conn.h's).
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

#endif /* HA_LIBVIRT_ERR_H */
