/* SPDX-License-Identifier: MIT */
/*
 * qmp.h - watch QEMU's QMP socket for the guest's crash (plain-QEMU path).
 *
 * QEMU started with `-qmp unix:PATH,server=on,wait=off` and `-device pvpanic` sends
 * a GUEST_PANICKED event when the guest panics (and SHUTDOWN with reason
 * "guest-panic" when the panic action is exit-failure). An HaQmp connects to PATH on
 * the thread-default GLib main context, answers the greeting with qmp_capabilities,
 * and marks the domain's current boot crashed (crash.h) with the event's timestamp.
 * Nothing else changes the store: a shutdown without panic and without BYE stays
 * 'disconnected', as the stream recorded it.
 *
 * Non-blocking: reads are driven by an fd watch, the greeting and events by lines.
 * When QEMU is absent or goes away, it reconnects with backoff (100 ms up to 5 s),
 * through a timer. QMP is a trusted peer (the host's own QEMU); lines are still
 * bounded (64 KiB) and parsed by a small scanner of QEMU's JSON output, enough for
 * the few members read here.
 *
 * With ha_qmp_set_postmortem(), a GUEST_PANICKED whose action is "pause" starts the
 * post-mortem (postmortem.h): query-memory-size-summary, dump-guest-memory (detached,
 * so this socket keeps answering), DUMP_COMPLETED, the recovery, then quit.
 */
#ifndef HA_QMP_H
#define HA_QMP_H

#include <glib.h>
#include <stdbool.h>

#include "postmortem.h"
#include "store.h"

typedef struct _HaQmp HaQmp;

/* @store is borrowed and must outlive the watcher. Free with ha_qmp_free(). */
HaQmp *ha_qmp_new(const char *path, HaStore *store, const char *domain);

/* After a GUEST_PANICKED with action pause, dump the guest and recover its kernel
 * log as @o says (postmortem.h); copied. Without this call nothing is dumped. */
void ha_qmp_set_postmortem(HaQmp *q, const HaPmOpts *o);

/* Start connecting on the thread-default main context. */
void ha_qmp_start(HaQmp *q);

void ha_qmp_free(HaQmp *q);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaQmp, ha_qmp_free)

#endif /* HA_QMP_H */
