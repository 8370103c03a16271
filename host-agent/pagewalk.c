// SPDX-License-Identifier: MIT
/* pagewalk.c - a CPU's page walked into the pairer (see pagewalk.h). */
#include "pagewalk.h"

typedef struct {
	const HaPageWalk *w;
	uint32_t cpu;
	bool fed;		/* an event of this page was fed to the pairer */
} Walk;

static void on_event(const HaEvent *ev, void *user)
{
	Walk *k = user;
	const HaPageWalk *w = k->w;
	uint64_t probe;

	if (ev->kind == HA_EV_OTHER && w->marker &&
	    ha_marker_event_id(w->marker, ev->type, ev->data, ev->size, &probe)) {
		if (w->on_marker)
			w->on_marker(ev, k->cpu, probe, w->user);
		return;
	}
	/* events lost before this page: no stack after it belongs to one before it */
	if (!k->fed && ha_tep_missed(w->tep) != 0)
		ha_pair_lost(w->pair, k->cpu);
	k->fed = true;
	ha_pair_feed(w->pair, k->cpu, ev, w->on_event ? w->on_event(ev, k->cpu, w->user) :
		     NULL);
}

long ha_pagewalk_page(const HaPageWalk *w, uint32_t cpu, const uint8_t *data, size_t len,
		      GError **error)
{
	Walk k = { .w = w, .cpu = cpu };
	long n = ha_tep_walk_page(w->tep, data, len, on_event, &k, error);

	if (n >= 0 && !k.fed && ha_tep_missed(w->tep) != 0)
		ha_pair_lost(w->pair, cpu);
	return n;
}
