/* SPDX-License-Identifier: MIT */
/*
 * backoff.h - the retry timer of every reconnecting source.
 *
 * A peer that is not there (a QEMU socket not created yet, a domain's channel not
 * attached, libvirtd restarting, a QMP socket) is tried again after
 * HA_BACKOFF_MIN_MS, then after twice as long each time, up to HA_BACKOFF_MAX_MS; a
 * success starts over (ha_backoff_reset()). The socket, libvirt, fleet and QMP sources
 * each hold one HaBackoff per thing they retry and use only these calls, so they all
 * retry alike. One timer at most is pending per HaBackoff; its callback runs once
 * (the timer is forgotten before it runs, so the callback may schedule the next try).
 */
#ifndef HA_BACKOFF_H
#define HA_BACKOFF_H

#include <glib.h>
#include <stdbool.h>

#define HA_BACKOFF_MIN_MS	100u
#define HA_BACKOFF_MAX_MS	5000u

typedef struct {
	guint delay_ms;		/* the next wait; 0 counts as HA_BACKOFF_MIN_MS */
	guint last_ms;		/* the wait before the try now running, 0: none */
	guint timer;		/* the pending try, 0 when none */
	GSourceFunc fn;
	gpointer user;
} HaBackoff;

/* Zero-filled is a valid HaBackoff too; this names what a retry calls. */
void ha_backoff_init(HaBackoff *b, GSourceFunc fn, gpointer user);

/* Whether the try that just failed was the first of a series (no wait, or the
 * shortest, before it): the time to log, once, that we wait for the peer. */
bool ha_backoff_first(const HaBackoff *b);

/* Call the function after the current delay, then double the delay (up to the
 * maximum). Nothing when a try is pending already. The function's return value is
 * ignored: it runs once. */
void ha_backoff_schedule(HaBackoff *b);

/* Whether a try is pending. */
bool ha_backoff_pending(const HaBackoff *b);

/* The pending try, if any, is cancelled. */
void ha_backoff_cancel(HaBackoff *b);

/* The peer is back (or known to be about to be): the next wait is the shortest. */
void ha_backoff_reset(HaBackoff *b);

#endif /* HA_BACKOFF_H */
