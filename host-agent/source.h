/* SPDX-License-Identifier: MIT */
/*
 * source.h - where guest connections come from.
 *
 * A HaSource produces byte-stream connections to one guest's port and runs each
 * through a HaConn (ingest.h) on the GLib main loop; it owns reconnection. Today:
 * a unix socket (QEMU -chardev socket, as client of a server=on chardev or as the
 * server a server=off chardev connects to). Later: libvirt (virDomainOpenChannel and
 * lifecycle events), behind the same three calls.
 */
#ifndef HA_SOURCE_H
#define HA_SOURCE_H

#include <glib.h>
#include <stdbool.h>

#include "ingest.h"
#include "store.h"

typedef struct _HaSource HaSource;

/*
 * A unix-socket source. @listen false: connect to @path (QEMU server=on), retrying
 * with backoff while it is absent or after it went away. @listen true: bind @path and
 * accept one guest at a time (QEMU server=off, which reconnects by itself).
 * @store must outlive the source. Returns NULL with @error (e.g. bind failed).
 * Free with ha_source_free().
 */
HaSource *ha_source_new_socket(const char *path, bool listen, HaStore *store,
			       const HaLimits *limits, const char *domain, GError **error);

/* Start producing connections on the thread-default main context. */
bool ha_source_start(HaSource *s, GError **error);

/* Close the current connection (recording how it ended) and stop. */
void ha_source_free(HaSource *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaSource, ha_source_free)

/*
 * A libvirt domain's org.stackmap.0 channel (source-libvirt.c; built when libvirt and
 * libvirt-glib are found, HA_HAVE_LIBVIRT). @uri NULL: libvirt's default. @domain is
 * the libvirt domain name, @label the store's name (logs). Follows the domain's
 * lifecycle events: reopens the channel when it starts again, marks the boot crashed
 * on CRASHED (crash.h). @store must outlive the source.
 */
typedef struct _HaLvSource HaLvSource;
HaLvSource *ha_lv_source_new(const char *uri, const char *domain, HaStore *store,
			     const HaLimits *limits, const char *label);
/* Connects to libvirtd (an error when the first connection fails) and starts. */
bool ha_lv_source_start(HaLvSource *s, GError **error);
void ha_lv_source_free(HaLvSource *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaLvSource, ha_lv_source_free)
/* libvirt's event loop on GLib (gvir_event_register); once, before any connection. */
void ha_libvirt_init(void);

#endif /* HA_SOURCE_H */
