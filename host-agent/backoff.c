// SPDX-License-Identifier: MIT
/* backoff.c - the retry timer of every reconnecting source (see backoff.h). */
#include "backoff.h"

void ha_backoff_init(HaBackoff *b, GSourceFunc fn, gpointer user)
{
	b->delay_ms = HA_BACKOFF_MIN_MS;
	b->last_ms = 0;
	b->timer = 0;
	b->fn = fn;
	b->user = user;
}

bool ha_backoff_first(const HaBackoff *b)
{
	return b->last_ms <= HA_BACKOFF_MIN_MS;
}

static gboolean on_timer(gpointer user)
{
	HaBackoff *b = user;

	b->timer = 0;
	b->fn(b->user);
	return G_SOURCE_REMOVE;
}

void ha_backoff_schedule(HaBackoff *b)
{
	guint d = MAX(b->delay_ms, HA_BACKOFF_MIN_MS);

	if (b->timer)
		return;
	b->timer = g_timeout_add(d, on_timer, b);
	b->last_ms = d;
	b->delay_ms = MIN(d * 2, HA_BACKOFF_MAX_MS);
}

bool ha_backoff_pending(const HaBackoff *b)
{
	return b->timer != 0;
}

void ha_backoff_cancel(HaBackoff *b)
{
	if (b->timer)
		g_source_remove(b->timer);
	b->timer = 0;
}

void ha_backoff_reset(HaBackoff *b)
{
	b->delay_ms = HA_BACKOFF_MIN_MS;
	b->last_ms = 0;
}
