/* SPDX-License-Identifier: MIT */
/*
 * report.h - answers from the store (never from a live connection).
 *
 *   boots        one line per boot: kernel, start, end, how it ended, events, loss,
 *                stacks, epochs
 *   top          stacks by event count, resolved
 *   events       the last N events with their resolved stacks (post-mortem)
 *   stack ID     one stack_id, in every epoch it exists in
 *   folded       "outer;...;inner count" lines for flame graphs
 *   flamegraph   an interactive SVG of folded's counts (flamegraph.h); with a time
 *                range or an event, of those events' stacks (decoded like events)
 *   postmortem   how the boot ended and what its memory said after a panic: the
 *                recovery's status, the panic message, the oops with its backtrace
 *                and the kernel log lines before it, the replay of what had not been
 *                streamed, and each CPU's last events (report-postmortem.c)
 *   events --format perf-script: the `perf script` layout (export-perf.h)
 *   events --host-time CLOCK: with each event's time on a host clock and its
 *                uncertainty, from the boot's clock samples (clocksync.h)
 *
 * The clock probes' marker events (ftrace/print "stackmap-time ...", clocksync.h) are
 * the agent's, not the guest's traced events: no report shows or counts them.
 *
 * Every JSON document is written by json-glib (report-json.h): valid UTF-8 whatever the
 * guest sent. Warnings (an unreadable chunk, a vmlinux that does not fit) go to stderr,
 * never into a report.
 *
 * A stack_id resolves through the epoch in effect at the event's time (the newest
 * epoch with the id's tag that started at or before it, PROTOCOL.md 6.1) to the stack
 * the guest exported for (boot, epoch, id). When no such stack was received, or the
 * events of one id span the start of another epoch with the same tag, the id is shown
 * as unresolved: never guessed.
 */
#ifndef HA_REPORT_H
#define HA_REPORT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report-json.h"
#include "resolve-dwarf.h"
#include "store.h"

typedef struct {
	const char *cmd;	/* boots, top, events, stack, folded */
	const char *boot;	/* NULL: latest; "all"; a boots.id; a boot_id prefix */
	const char *arg;	/* stack: the id; postmortem: events per CPU (NULL: 5) */
	guint limit;		/* top / events: how many (0: default) */
	const char *vmlinux;	/* optional: file:line and inlines through libdwfl */
	int64_t since_ns;	/* events: trace-clock range, -1 when open */
	int64_t until_ns;
	bool json;
	const char *format;	/* events: NULL (text), "perf-script" or "folded" */
	const char *event;	/* events, flamegraph: only this event ("kmem/kmalloc" or
				 * "kmalloc"), NULL for all */
	const char *host_time;	/* events: also show each event's host time on this clock
				 * (realtime, mono, boot, tai: clocksync.h), NULL: not */
	FILE *stream;		/* events --format perf-script without a limit: written
				 * here as it is decoded, in bounded memory (NULL: into
				 * the report's GString like the others) */
} HaReportOpts;

/* Append the report to @out. False with @error on a bad argument or store error. */
bool ha_report(HaStore *store, const HaReportOpts *o, GString *out, GError **error);

/* One boot's numbers, as `report boots` shows them (its --json members). */
typedef struct {
	int64_t boot;		/* boots.id */
	char *boot_id;		/* the UUID, "?" without one */
	char *kernel;		/* the release, NULL when the guest sent none */
	int64_t start_us;	/* host real time, us */
	int64_t end_us;		/* its end, or its last contact while running */
	char *ended;		/* clean, disconnected, crashed, running */
	uint64_t events;	/* with stack_not_received */
	uint64_t lost_frames;
	uint64_t lost_events;	/* with unread_events and unseen_stack_ids */
	int64_t stacks;
	int64_t epochs;
	uint64_t malformed;
	uint64_t unread_events;
	uint64_t unseen_stack_ids;
	uint64_t map_epoch;
	uint64_t map_successes;
	uint64_t stack_id_events;
	uint64_t stack_not_received;
} HaReportBoot;

/* Fill *@ret with boot @boot's numbers (free them with ha_report_boot_clear()); false
 * with @error (G_IO_ERROR_NOT_FOUND: no such boot). Reads in the caller's
 * transaction, if any. */
bool ha_report_boot(HaStore *store, int64_t boot, HaReportBoot *ret, GError **error);
void ha_report_boot_clear(HaReportBoot *b);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HaReportBoot, ha_report_boot_clear)

/* One stack of ha_report_folded(): @folded as `report folded` prints it. */
typedef void (*HaReportFoldedFn)(const char *folded, uint64_t count, void *user);

/*
 * The stacks of @boot with their event counts, exactly the lines of `report folded
 * --boot N` (without a vmlinux), in its order. False with @error on a store error.
 */
bool ha_report_folded(HaStore *store, int64_t boot, HaReportFoldedFn fn, void *user,
		      GError **error);

/*
 * Where frame gaps of @boot fell (store.h, table gaps): a new array (g_ptr_array_unref)
 * indexed by CPU, each entry NULL or a GArray of guint64 after_ts, ascending: the
 * agent's dropped frames lie after that event time of that CPU. NULL with @error on a
 * store error.
 */
GPtrArray *ha_report_gaps(HaStore *store, int64_t boot, GError **error);

/* The boots @arg names (as --boot: NULL the newest, "all", a number, a boot_id
 * prefix): a new array of boots.id (int64_t, g_array_unref), or NULL with @error when
 * none matches. */
GArray *ha_report_select_boots(HaStore *store, const char *arg, GError **error);

/*
 * Is @dw the vmlinux of @boot: the same build-id when the boot sent one, and a KASLR
 * slide (HELLO's _text against the file's) into *@ret_slide? False, and a line on
 * stderr saying why, otherwise.
 */
bool ha_report_vmlinux_fits(HaStore *store, int64_t boot, HaDwarf *dw, int64_t *ret_slide);

/* One event of ha_report_cpu_events(), valid during the callback only. */
typedef struct {
	uint64_t page;		/* its page's ordinal among the CPU's stored pages */
	uint32_t idx;		/* its ordinal among its page's events */
	uint64_t ts;		/* guest trace clock, ns */
	uint32_t cpu;
	int pid;
	const char *text;	/* "system/name: fields" as events prints it */
	const char *stack_json;	/* its "stack" object as events --json prints it */
	const char *folded;	/* its stack as events --format folded counts it */
	const char *stack_kind;	/* the stack object's "kind" */
	int64_t stack_id;	/* its stack_id (or full_id), -1 when none */
	int64_t epoch;		/* the epoch it resolved in, -1 when none */
	bool tail;		/* on the CPU's newest chunk: the next chunk may pair it */
	bool waiting;		/* shown as waiting for its stack at the stream's end:
				 * the boot's stored pairing state may let it go */
	bool recovered;		/* replayed from the crashed guest's memory (events
				 * --json's "recovered"), not streamed */
} HaReportEvent;

typedef void (*HaReportEventFn)(const HaReportEvent *ev, void *user);

/*
 * The events of @boot's CPU @cpu on its pages @from..@to-1, exactly as `events
 * --json` shows them (the same decoding, pairing and stack resolution, without a
 * vmlinux), in no particular order. Pages are numbered per CPU in chunk id order
 * (stable across compaction, which merges consecutive chunks into the first's id), so
 * (cpu, page, idx) names an event for good. Decodes from the chunk before @from and
 * past @to while an event of the range waits for its stack, so that one range at a
 * time gives what the whole boot gives; holds only the events that wait. *@ret_pages:
 * the CPU's stored pages. One read transaction unless the caller holds one.
 */
bool ha_report_cpu_events(HaStore *store, int64_t boot, uint32_t cpu, uint64_t from,
			  uint64_t to, HaReportEventFn fn, void *user, uint64_t *ret_pages,
			  GError **error);

#endif /* HA_REPORT_H */
