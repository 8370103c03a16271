// SPDX-License-Identifier: MIT
/*
 * listen.c - when a clock probe from the host is due (see listen.h).
 */
#include "listen.h"

void listen_start(struct listen *l, uint64_t now)
{
	*l = (struct listen){ .last_ms = now, .gap_ms = LISTEN_GAP_DEFAULT_MS };
}

void listen_probe(struct listen *l, uint64_t now)
{
	uint64_t gap = now > l->last_ms ? now - l->last_ms : 0;

	/* the first probe's distance from the connection's start says nothing */
	if (l->seen)
		l->gap_ms = gap < LISTEN_GAP_MIN_MS ? LISTEN_GAP_MIN_MS :
			    gap > LISTEN_GAP_MAX_MS ? LISTEN_GAP_MAX_MS : gap;
	l->seen = true;
	l->last_ms = now;
}

bool listen_due(const struct listen *l, uint64_t now)
{
	return now >= l->last_ms + l->gap_ms / 4 * 3 &&
	       now < l->last_ms + l->gap_ms / 2 * 3;
}
