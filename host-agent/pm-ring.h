/* SPDX-License-Identifier: MIT */
/*
 * pm-ring.h - the events no reader consumed, out of a crashed guest's ring buffers.
 *
 * The guest agent consumes its ring buffers (per_cpu/cpuN/trace_pipe_raw): what it
 * read is in the stream or in its resend window (pm-arena.h); what it had not read
 * is still in the ring buffer, and is exactly what this walk takes. That is the
 * seam, exact per CPU: the kernel's reader page keeps the index up to which the
 * reader consumed it (buffer_page.read), and the pages after it, from the head page
 * to the commit page, have never been read.
 *
 * The layout comes from the guest kernel itself (patch 0014: VMCOREINFO names
 * SYMBOL(ring_buffer_dump_info), SYMBOL(global_trace) and the offsets from it to
 * its trace_buffer), so no debug information of the guest is needed, and KASLR is
 * handled by kvmem.h.
 *
 * Every page is emitted as the PAGE frame the agent would have sent: the reader
 * page from its read index (rebased on the time stamp of the last event read, as
 * the kernel's ring_buffer_read_page() does for a partial read), the other pages
 * whole up to their commit index.
 *
 * Everything read is hostile: the CPU count is bounded by the boot's nr_cpus, each
 * CPU's walk by its nr_pages (itself bounded) and by a visited set (a loop in a
 * corrupted list ends it), every index by the page size, every pointer is read
 * through kvmem.h, which refuses what the dump does not hold. A CPU whose walk
 * fails is reported in the stats and skipped (its pages before the failure are
 * kept: they are well-formed pages of that CPU, in order).
 */
#ifndef HA_PM_RING_H
#define HA_PM_RING_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "kvmem.h"
#include "pm-frames.h"
#include "vmcoreinfo.h"

#define HA_PM_RING_MAX_PAGES	(1u << 20)	/* per CPU: 4 GiB of 4 KiB pages */

typedef struct {
	uint32_t cpus;		/* CPUs with a ring buffer */
	uint32_t cpus_failed;	/* CPUs whose walk stopped early */
	uint64_t pages;		/* PAGE frames added */
	uint64_t events;	/* data events in them */
	uint64_t bytes;		/* bytes of page data read */
	char *why;		/* the first CPU's failure, or NULL */
} HaPmRingStats;

void ha_pm_ring_stats_clear(HaPmRingStats *st);

/*
 * Add the unread events of every CPU of the guest's top-level trace buffer to
 * @frames as PAGE frames, for a boot with @nr_cpus CPUs and ring-buffer pages of
 * @page_size bytes. False with @error when the layout cannot be found or does not
 * fit (nothing added); per-CPU failures only show in @st.
 */
bool ha_pm_ring_recover(HaKvmem *m, const HaVmci *vi, uint32_t nr_cpus,
			uint32_t page_size, HaPmFrames *frames, HaPmRingStats *st,
			GError **error);

/*
 * Walk the events of one ring-buffer page's data (@data, @commit bytes) from its
 * time stamp @ts: *ret_ts gets the time stamp after the event that ends at
 * @upto (or at the end), *ret_events the data events counted up to there. False
 * when an event does not fit (a corrupted page). For the reader page's rebasing;
 * public for the unit tests.
 */
bool ha_pm_ring_walk(const uint8_t *data, uint32_t commit, uint32_t upto, uint64_t ts,
		     uint64_t *ret_ts, uint64_t *ret_events);

#endif /* HA_PM_RING_H */
