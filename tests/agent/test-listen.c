// SPDX-License-Identifier: MIT
/*
 * test-listen.c - when the agent wakes for the host's clock probes while it streams:
 * the window around the next probe, learnt from the last two; no listening for a host
 * that stopped probing or never did; the interval's bounds.
 */
#include <stdint.h>

#include "listen.h"
#include "tap.h"

int main(void)
{
	struct listen l;

	/* a new connection: the host's default interval (1 s) assumed */
	listen_start(&l, 10000);
	ok(!listen_due(&l, 10000), "not at the connection's start");
	ok(!listen_due(&l, 10749), "nor before three quarters of a second");
	ok(listen_due(&l, 10750), "from three quarters of a second");
	ok(listen_due(&l, 11499), "to one and a half");
	ok(!listen_due(&l, 11500), "not after");
	ok(!listen_due(&l, 20000), "nor ever after, without a probe");

	/* the first probe, read late in a round: listening starts from it */
	listen_probe(&l, 23000);
	is_int((long)l.gap_ms, 1000, "the first probe leaves the default interval");
	ok(!listen_due(&l, 23100), "just after a probe: not listening");
	ok(listen_due(&l, 23800), "listening before the next");
	/* the host probes every 2 s: learnt from the second probe on */
	listen_probe(&l, 25000);
	is_int((long)l.gap_ms, 2000, "the interval between two probes: 2 s");
	ok(!listen_due(&l, 26000), "half of it after: not listening");
	ok(listen_due(&l, 26500), "three quarters: listening");
	ok(listen_due(&l, 27000), "when it is due");
	ok(listen_due(&l, 27999), "and until one and a half of it");
	ok(!listen_due(&l, 28000), "not after");
	listen_probe(&l, 27004);
	ok(!listen_due(&l, 27010), "a probe in time: quiet again");
	is_int((long)l.gap_ms, 2004, "the interval follows the host");

	/* bounds: probes back to back, a host silent for minutes */
	listen_probe(&l, 27005);
	is_int((long)l.gap_ms, LISTEN_GAP_MIN_MS, "at least %u ms", LISTEN_GAP_MIN_MS);
	ok(listen_due(&l, 27005 + 8), "10 ms probes: listening most of the time");
	listen_probe(&l, 27005 + 600000);
	is_int((long)l.gap_ms, LISTEN_GAP_MAX_MS, "at most %u ms", LISTEN_GAP_MAX_MS);

	/* a reconnect forgets what it learnt */
	listen_start(&l, 1000000);
	ok(!l.seen && l.gap_ms == LISTEN_GAP_DEFAULT_MS, "a new connection starts over");
	/* a clock that went back (cannot happen with CLOCK_MONOTONIC) is no crash */
	listen_probe(&l, 999000);
	listen_probe(&l, 998000);
	is_int((long)l.gap_ms, LISTEN_GAP_MIN_MS, "no interval below the minimum");
	return tap_done();
}
