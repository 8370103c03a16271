/* SPDX-License-Identifier: MIT */
/*
 * pagewalk.h - one ring-buffer page of a CPU walked into the pairer (pair.h), the one
 * way the ingest (ingest-apply.c) and the event reports (report-events.c,
 * report-cpu.c) do it, so that they pair every event alike.
 *
 * It owns the rules of the walk; the caller owns the parser, the pairer and what is
 * done with each event:
 *  - a clock probe's marker event (clocksync.h) is the agent's, not a traced event:
 *    handed to on_marker, never fed to the pairer;
 *  - events lost before the page (ha_tep_missed() != 0 after the walk): no stack
 *    event after them belongs to an event before them, so ha_pair_lost() for the CPU
 *    before the page's first event is fed (or after the walk when none was);
 *  - every other event goes to on_event (which may give the text to pair it with),
 *    then to ha_pair_feed(), in ring order.
 * A malformed page feeds nothing (tep.h checks it whole first). The end of a CPU's
 * pages (BYE, its last stored chunk) is the caller's: ha_pair_flush().
 */
#ifndef HA_PAGEWALK_H
#define HA_PAGEWALK_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "clocksync.h"
#include "pair.h"
#include "tep.h"

typedef struct {
	HaTep *tep;
	HaPair *pair;
	const HaMarkerFormat *marker;	/* the boot's, read at each event (NULL: none) */
	/* a marker event, with its probe id (may be NULL) */
	void (*on_marker)(const HaEvent *ev, uint32_t cpu, uint64_t probe, void *user);
	/* any other event, before it is fed: the text to pair it with (taken over by the
	 * pairer, pair.h), or NULL (may be NULL: no text) */
	char *(*on_event)(const HaEvent *ev, uint32_t cpu, void *user);
	void *user;
} HaPageWalk;

/* Walk @cpu's page @data (@len bytes) as above: ha_tep_walk_page()'s result (the
 * events, or -1 with @error for a malformed page). */
long ha_pagewalk_page(const HaPageWalk *w, uint32_t cpu, const uint8_t *data, size_t len,
		      GError **error);

#endif /* HA_PAGEWALK_H */
