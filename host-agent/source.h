/* SPDX-License-Identifier: MIT */
/*
 * source.h - where guest connections come from.
 *
 * A source produces byte-stream connections to one guest's port and owns
 * reconnection; each connection is a link (link.h) that the one connection driver
 * (conn-driver.h) runs through a HaConn (ingest.h) on a thread of its own, the same
 * way for every source; the source itself lives on the GLib main loop, where it is
 * told when a connection ends. Sources: a unix socket (QEMU -chardev socket, as client of a
 * server=on chardev or as the server a server=off chardev connects to), a directory
 * of VM sockets (--socket-dir, a set of socket sources, one per VM), a libvirt
 * domain's channel (virDomainOpenChannel and lifecycle events), and every libvirt
 * domain with the channel (fleet.h). Retries use backoff.h.
 */
#ifndef HA_SOURCE_H
#define HA_SOURCE_H

#include <glib.h>
#include <stdbool.h>

#include "ingest.h"
#include "postmortem.h"
#include "store.h"

typedef struct _HaSource HaSource;

/*
 * A unix-socket source. @listen false: connect to @path (QEMU server=on), retrying
 * with backoff while it is absent or after it went away. @listen true: bind @path and
 * accept one guest at a time (QEMU server=off, which reconnects by itself; the driver
 * refuses a second connection to the store while one runs).
 * @store must outlive the source. Returns NULL with @error (e.g. bind failed).
 * Free with ha_source_free().
 */
HaSource *ha_source_new_socket(const char *path, bool listen, HaStore *store,
			       const HaLimits *limits, const char *domain, GError **error);

/* Start producing connections on the thread-default main context. */
bool ha_source_start(HaSource *s, GError **error);

/* Whether a guest is connected now (its stream may still hold frames to read). */
bool ha_source_connected(const HaSource *s);

/* Close the current connection (recording how it ended) and stop. */
void ha_source_free(HaSource *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaSource, ha_source_free)

/*
 * `--socket-dir DIR`: every plain-QEMU VM whose sockets appear in @dir (source-dir.c).
 *
 * The naming rule: DIR/NAME.sock is VM NAME's stackmap port (QEMU `-chardev
 * socket,path=DIR/NAME.sock,server=on,wait=off`), DIR/NAME.qmp its QMP socket
 * (`-qmp unix:DIR/NAME.qmp,server=on,wait=off`, optional, for GUEST_PANICKED). NAME
 * must be a usable store name (ha_store_name_ok()); the VM is stored into
 * <state-dir>/NAME.db, locked like a single --socket agent's store. Other files are
 * ignored; a socket whose name is refused is logged once.
 *
 * Per VM, an HaSource (client of the socket, the --socket rules: reconnection with
 * backoff, resume from the store) and, when NAME.qmp exists, an HaQmp. The directory
 * is watched (GFileMonitor, inotify) and rescanned every HA_DIR_RESCAN_MS besides, so
 * a missed event (queue overflow) only delays. A VM whose .sock is removed is served
 * until its connection ends (QEMU removes the socket before the stream's last bytes
 * are read), then dropped; a .sock replaced by a new one (a new QEMU) is a new
 * connection. At most HA_DIR_MAX_VMS VMs (and what RLIMIT_NOFILE allows) are served
 * at once; every connection is bounded by @limits and read, decoded and applied on
 * its own thread (conn-driver.h), so one guest never stalls the others.
 */
#define HA_DIR_MAX_VMS		256u
#define HA_DIR_RESCAN_MS	2000u

typedef struct _HaDirSource HaDirSource;
/* Creates @dir when missing. NULL with @error when it cannot be created or watched. */
HaDirSource *ha_dir_source_new(const char *dir, const char *state_dir,
			       const HaLimits *limits, GError **error);
/*
 * The post-mortem of a VM whose NAME.qmp is there (qmp.h: a paused panic is dumped
 * into the state directory as NAME.core and replayed into NAME's store). Call before
 * ha_dir_source_start(); without it, a panic only marks the boot crashed.
 */
void ha_dir_source_set_postmortem(HaDirSource *d, const HaPmOpts *o);
/* Serves what is there now and follows the directory from then on. */
void ha_dir_source_start(HaDirSource *d);
/* Stops every VM's source (recording how each stream ended). */
void ha_dir_source_free(HaDirSource *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaDirSource, ha_dir_source_free)

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
