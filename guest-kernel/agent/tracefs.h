/* SPDX-License-Identifier: MIT */
/*
 * tracefs.h - what the agent reads from (and, on request, writes to) tracefs: the page
 * header layout, the trace clock, event formats, enabled events, the stack map's
 * statistics, per-CPU ring-buffer statistics, and the optional tracing setup.
 *
 * Paths are built from a root the caller passes (default /sys/kernel/tracing), so the
 * tests run against a fake directory tree.
 */
#ifndef SMG_TRACEFS_H
#define SMG_TRACEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "stream.h"

/* Largest tracefs text file the agent reads (formats are a few KiB). */
#define TRACEFS_FILE_MAX (256u * 1024u)

/* Parse the text of events/header_page into @ret (-EBADMSG when a field is missing). */
int tracefs_parse_header_page(const char *text, struct page_layout *ret);

/* The selected clock in the text of trace_clock ("[local] global ..." -> "local"). */
int tracefs_parse_clock(const char *text, char *ret, size_t cap);

struct map_stat {
	bool present;		/* stack_map_stat exists */
	uint64_t entries;
	uint64_t capacity;	/* max_elts = 1 << map_bits */
	uint64_t table_size;
	uint64_t successes;
	uint64_t drops;
	uint64_t epoch;		/* "epoch:" line of the epoch extension, else 0 */
	bool has_epoch;
	uint32_t map_bits;	/* log2(capacity) */
	uint32_t max_depth;	/* "max_depth:" if printed, else 64 */
};
int tracefs_parse_map_stat(const char *text, struct map_stat *ret);
/* Read and parse <root>/stack_map_stat; ret->present = false when it does not exist. */
int tracefs_read_map_stat(const char *root, struct map_stat *ret);

/* Parse per_cpu/cpuN/stats text into @ret (keys it does not know are ignored). */
int tracefs_parse_cpu_stats(const char *text, struct smp_lost_cpu *ret);
int tracefs_read_cpu_stats(const char *root, uint32_t cpu, struct smp_lost_cpu *ret);
/*
 * The same kept open, for the rescan: tracefs_open_cpu_stats() returns an fd (or
 * -errno), tracefs_pread_cpu_stats() reads it from offset 0 in one pread(). The kernel
 * formats the whole file at every read() (tracing_stats_read()), the one that finds
 * its end included: a whole-file read costs two formats, an open and a close.
 */
int tracefs_open_cpu_stats(const char *root, uint32_t cpu);
int tracefs_pread_cpu_stats(int fd, uint32_t cpu, struct smp_lost_cpu *ret);
/*
 * Events still counted in the ring buffer ("entries:" of per_cpu/cpuN/stats, summed
 * over @cpus) when tracing is off (tracing_on reads 0): after a full drain, events no
 * read returned. -EBUSY while tracing is on (new events make the count meaningless).
 */
int tracefs_read_unread(const char *root, const uint32_t *cpus, uint32_t nr, uint64_t *ret);

/*
 * The possible CPUs: one bit per per_cpu/cpuN directory. *ret_nr is the highest N + 1.
 * @ret_cpus (freed by the caller with free()) lists them in increasing order.
 */
int tracefs_list_cpus(const char *root, uint32_t **ret_cpus, uint32_t *ret_count,
		      uint32_t *ret_nr);

/* Read <root>/events/<name>/format (name "sys/event") or <root>/events/<name>
 * (header_page, header_event). Caller frees *ret. */
int tracefs_read_format(const char *root, const char *name, char **ret, size_t *ret_len);

/*
 * Enabled events, from <root>/set_event ("sys:event" lines), as "sys/event" names in
 * one buffer of NUL-separated strings (caller frees *ret). *ret_nr counts them.
 */
int tracefs_enabled_events(const char *root, char **ret, size_t *ret_nr);

/* Names of all events of a system (<root>/events/<sys>/<ev>/format exists), as
 * "sys/ev" NUL-separated strings. Caller frees *ret. */
int tracefs_system_events(const char *root, const char *sys, char **ret, size_t *ret_nr);

/* The value of options/<name> (true for "1"). -ENOENT when the option does not exist. */
int tracefs_option(const char *root, const char *name, bool *ret);

/* The optional tracing setup of the command line. */
struct tracefs_setup {
	const char *events;	/* "sys:event,sys:event" or NULL */
	const char *tracer;	/* current_tracer, or NULL */
	bool stacktrace;
	bool stackmap;
	unsigned long buffer_kb;	/* 0: leave it */
	bool exclude_self;	/* add our pid to set_event_notrace_pid, set_ftrace_notrace_pid */
};
/* Apply @s; logs what it changes; returns the first error. */
int tracefs_apply_setup(const char *root, const struct tracefs_setup *s);

/* The tracefs root: @override if set, else /sys/kernel/tracing (mounted when it is an
 * empty directory), else /sys/kernel/debug/tracing. */
int tracefs_find(const char *override, char *ret, size_t cap);

#endif
