/* SPDX-License-Identifier: MIT */
/*
 * latency.h - how long an event takes from being committed in the guest to being
 * durable on the host, measured where both ends are visible: a PAGE frame's page
 * carries the trace-clock time of its first (oldest) event (page_first_ts(), stream.h:
 * the header's time stamp is not always it), and the host's ACK of the
 * frame means it is committed to disk. With a trace clock user space can read too
 * (mono, mono_raw, boot, tai) the agent takes the difference when the ACK arrives:
 * commit -> on the wire -> stored -> ACK back, for the oldest event of each page, so
 * an upper bound for every event on it. With other clocks (local, global: the
 * scheduler clock) nothing is measured.
 *
 * Samples go into a log-linear histogram (16 steps per power of two, <= 6% error).
 * Single-threaded; no I/O.
 */
#ifndef SMG_LATENCY_H
#define SMG_LATENCY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define LAT_SUB 16
#define LAT_BUCKETS (64 * LAT_SUB)

struct lat_page {
	uint64_t seq;
	uint64_t ts;		/* trace-clock ns of the page's first event */
};

struct latency {
	bool enabled;
	clockid_t clock;
	struct lat_page *q;	/* PAGE frames not ACKed yet, in seq order (a ring) */
	uint32_t cap, head, count;
	uint32_t hist[LAT_BUCKETS];
	uint64_t samples;
	uint64_t max_us;
};

/* Measure when @trace_clock (the tracefs name) is one user space can read. -ENOMEM. */
int latency_init(struct latency *l, const char *trace_clock, uint32_t max_pending);
void latency_done(struct latency *l);

/* A PAGE frame @seq was queued; its first event was committed at @ts. */
void latency_page(struct latency *l, uint64_t seq, uint64_t ts);
/*
 * The host ACKed every frame <= @acked: one sample per page, as of @mono_ns when that
 * is not 0 and the trace clock is CLOCK_MONOTONIC (a time the caller read just before:
 * no clock read of our own), else as of a clock read here.
 */
void latency_acked(struct latency *l, uint64_t acked, uint64_t mono_ns);
/* Frames below @first never reach the host; those from @first on now have seq + @shift
 * (win_splice()). */
void latency_rebase(struct latency *l, uint64_t first, int64_t shift);
/* A fresh stream: nothing pending (the histogram is kept). */
void latency_reset(struct latency *l);

/* The @permille-th sample in microseconds (upper bound of its bucket), 0 if none. */
uint64_t latency_quantile_us(const struct latency *l, unsigned permille);

#endif
