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

#endif /* HA_SOURCE_H */
