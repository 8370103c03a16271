/* SPDX-License-Identifier: MIT */
/*
 * export-tracedat.h - one stored boot as a trace-cmd trace.dat.
 *
 * The file is trace-cmd's documented format version 7 (trace-cmd.dat.v7(5): sections
 * named by options, each CPU's pages in zstd chunks), which libtracecmd 3.x reads
 * (trace-cmd report, KernelShark 2.x), or on request version 6 (trace-cmd.dat.v6(5),
 * uncompressed, also for older readers). Both carry the guest's own
 * header_page/header_event and event FORMAT texts, its kallsyms snapshot, its saved
 * cmdlines (every CMDLINES text of the boot merged, cmdlines.h), a TRACECLOCK option naming the boot's trace clock, then one run of ring-buffer pages
 * per CPU ("flyrecord"), each CPU's events in the order its ring buffer had them.
 *
 * The pages are written anew, not copied: each stored page is walked (tep.h) and its
 * events re-encoded in the 6.1 layout the guest's header_page describes, because one
 * event changes size. A stack_id event (TRACE_STACK_ID) becomes the kernel's own
 * kernel_stack event (TRACE_STACK: common fields of the stack_id event, `size` =
 * number of entries, `caller[]` the frames, innermost first), resolved through the
 * epoch in effect at the stack event's time (report.h's rule), so that trace-cmd
 * prints it exactly as for a guest traced without the stackmap. An id with no stored
 * stack in its epoch stays the stack_id event it was. Full kernel_stack events are
 * copied as they are. Events the guest's ring buffer lost before a page
 * (RB_MISSED_EVENTS, with the count when the guest stored one) flag the first page
 * written after them, where trace-cmd prints "CPU:N [COUNT EVENTS DROPPED]". So do
 * the frames the guest's agent dropped (a sequence gap, store.h's gaps): on every CPU,
 * before its first event newer than what the host held at the gap, without a count
 * ("CPU:N [EVENTS DROPPED]": how many events went is unknown, and whether any of that
 * CPU; the daemon finished the stacks of the events waiting there as lost too).
 *
 * With a host clock (HaExportOpts.host_time) the file also carries trace-cmd's
 * TRACEID (from the boot_id) and TIME_SHIFT options: for every CPU the boot's clock
 * samples (clocksync.h) as (guest time, host - guest) pairs, interpolated
 * (TRACECMD_TSYNC_FLAG_INTERPOLATE), scaling 1. trace-cmd applies them to every event
 * of the file when it reads it, so its timestamps are then host time on that clock,
 * and `trace-cmd report -i host.dat -i guest.dat` merges it with a host recording made
 * with the same clock (trace-cmd record -C mono, ...). The clock probes' marker events
 * are left out of the file, as out of every report.
 *
 * Memory stays bounded by one chunk of one CPU, one page and the stacks cache (one
 * entry per distinct stack_id used), whatever the size of the boot: the CPUs are
 * written one after the other and the CPU offset table is filled in at the end.
 */
#ifndef HA_EXPORT_TRACEDAT_H
#define HA_EXPORT_TRACEDAT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "resolve-dwarf.h"
#include "store.h"

typedef struct {
	const char *boot;	/* as report's --boot; NULL: the newest */
	int64_t since_ns;	/* trace-clock range, -1 when open */
	int64_t until_ns;
	const char *cpus;	/* "0,2-3"; NULL: every CPU */
	const char *output;	/* the file (written as OUTPUT.part, then renamed) */
	bool progress;		/* progress on stderr when it is a terminal */
	bool stack_ids;		/* keep stack_id events as they are (what trace-cmd
				 * record in the guest captures: plugin_stackmap.c) */
	int version;		/* 7 (sections, zstd-compressed pages) or 6 (plain) */
	HaDwarf *dwarf;		/* the boot's vmlinux (borrowed) or NULL: the enum
				 * values the format files leave as names */
	const char *host_time;	/* NULL, or a host clock (clocksync.h: realtime, mono,
				 * boot, tai): TRACEID and TIME_SHIFT options to it */
	uint64_t host_trace_id;	/* TIME_SHIFT's peer: the host recording's TRACEID, or
				 * 0 (unknown) */
} HaExportOpts;

typedef struct {
	uint64_t events;	/* events written (stack events included) */
	uint64_t rehydrated;	/* stack_id events written as kernel_stack */
	uint64_t unresolved;	/* stack_id events kept as they were */
	uint64_t truncated;	/* stacks cut to fit a page */
	uint64_t dropped_marks;	/* pages flagged with events lost before them */
	uint64_t gap_marks;	/* of which for the agent's frame gaps (a CPU each) */
	uint64_t out_of_order;	/* events older than their predecessor (delta 0) */
	uint64_t pages;		/* pages written */
	uint64_t file_bytes;	/* size of the file */
	uint64_t raw_page_bytes; /* the pages before compression (v7) */
	uint64_t store_bytes;	/* compressed chunk bytes read from the store */
	uint32_t nr_cpus;	/* CPU slots in the file */
	uint32_t cmdlines;	/* saved cmdlines (pids named) written */
	uint32_t time_shift_points;	/* samples in TIME_SHIFT (0: none written) */
	uint64_t time_shift_unc_min;	/* their uncertainty, ns */
	uint64_t time_shift_unc_max;
} HaExportStats;

/*
 * Write @o->boot of @s as a trace.dat at @o->output. On success fills @ret_stats and
 * returns true; on failure returns false with @error set and leaves no file at
 * @o->output (a previous file there is kept).
 */
bool ha_export_tracedat(HaStore *s, const HaExportOpts *o, HaExportStats *ret_stats,
			GError **error);

/*
 * Parse a CPU list ("0,2-3") for a boot of @nr_cpus CPUs into a new array of
 * @nr_cpus booleans (g_free), true for each CPU named. NULL with @error when a number
 * is malformed or not below @nr_cpus.
 */
bool *ha_export_parse_cpus(const char *list, uint32_t nr_cpus, GError **error);

#endif /* HA_EXPORT_TRACEDAT_H */
