/* SPDX-License-Identifier: MIT */
/*
 * listen.h - when the agent needs a wake-up for what the host sends while it streams.
 *
 * While the rings are busy the agent runs a collection round every few ms on a timer,
 * and the host ACKs each round's write a few ms later. Waking for each ACK doubles the
 * agent's wake-ups (under TCG, a wake-up is a vCPU switch taken out of the traced
 * workload), and an ACK read at the next round is as good: the window is freed within
 * one round either way. So during busy streaming the port is read in each round,
 * without a wake-up, except while a clock probe (TIME, PROTOCOL.md 4.11) is due: the
 * marker must be written as soon as TIME arrives, or the probe's round trip, and the
 * host's uncertainty of the guest clock, grow by the wait.
 *
 * The host sends TIME on its own timer (once a second by default). This keeps the
 * interval between the last two probes seen and listens from three quarters of it
 * after the last probe until one and a half of it: one probe a period. A probe outside
 * that (the host's interval changed, or a late one) is read at the next round and
 * starts the count again; a host that never probes is listened for once a period only
 * until the first period's end, then not at all, until it probes. Single-threaded; no
 * I/O.
 */
#ifndef SMG_LISTEN_H
#define SMG_LISTEN_H

#include <stdbool.h>
#include <stdint.h>

#define LISTEN_GAP_MIN_MS	10u
#define LISTEN_GAP_MAX_MS	60000u
#define LISTEN_GAP_DEFAULT_MS	1000u	/* the host's default probe interval */

struct listen {
	uint64_t last_ms;	/* the last probe read, or the connection's start */
	uint64_t gap_ms;	/* the interval between the last two probes */
	bool seen;		/* a probe came on this connection */
};

/* A connection started at @now: no probe seen yet, the default interval assumed. */
void listen_start(struct listen *l, uint64_t now);
/* A probe was read at @now. */
void listen_probe(struct listen *l, uint64_t now);
/* Is a probe due at @now (wake up for the port's input)? */
bool listen_due(const struct listen *l, uint64_t now);

#endif
