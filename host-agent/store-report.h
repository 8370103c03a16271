/* SPDX-License-Identifier: MIT */
/*
 * store-report.h - the reports' typed calls on a domain's store (tables: store.h).
 *
 * The reports (report*.c) and the stack resolution they use (resolve.h) read the
 * database only through these calls: no SQL and no sqlite3 outside store-report*.c.
 * Each call reads inside the caller's transaction, if any (ha_report() opens one
 * per report, so that a report sees one snapshot). Each returns false with @error on
 * any store failure: a report fails with it, a store error never reads as "no rows".
 *
 * Ids: @boot is boots.id, a chunk's @id chunks.id. A callback (HaStore*Fn) gets data
 * borrowed for the call only and must not call the store.
 *
 *   store-report.c        boots, stacks, epochs, stack counts, texts, pairing state
 *   store-report-chunks.c chunks, gap positions, and a post-mortem's rows
 */
#ifndef HA_STORE_REPORT_H
#define HA_STORE_REPORT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* ---- boots ---------------------------------------------------------------------- */

/* Which boots ha_store_boots_select() gives (report.h's --boot). */
typedef enum {
	HA_STORE_BOOTS_LATEST,		/* the newest */
	HA_STORE_BOOTS_ALL,		/* every one, by id */
	HA_STORE_BOOTS_ID,		/* @arg: a boots.id in decimal */
	HA_STORE_BOOTS_UUID_PREFIX,	/* @arg: the boot_id's first hex digits, upper case,
					 * no dashes (a LIKE pattern's start) */
} HaStoreBootsBy;

/* Append the boots.id (int64_t) of the boots @by and @arg name to @ids, ascending. */
bool ha_store_boots_select(HaStore *s, HaStoreBootsBy by, const char *arg, GArray *ids,
			   GError **error);

/* A boot's row as the reports show it. */
typedef struct {
	bool found;
	bool has_uuid;		/* boot_uuid holds 16 bytes */
	uint8_t uuid[16];
	char *release;		/* NULL: none */
	char *ended;		/* clean, disconnected, crashed; NULL while it runs */
	int64_t start_us;	/* host real time */
	bool has_end;		/* end_time stored */
	int64_t end_us;		/* 0: none */
	int64_t last_us;	/* last contact */
	uint64_t text_addr;	/* HELLO's _text, 0: none */
	GBytes *build_id;	/* NULL or empty: none */
	uint32_t page_size;
	uint32_t flags;		/* HELLO's */
} HaStoreBootInfo;

void ha_store_boot_info_clear(HaStoreBootInfo *b);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HaStoreBootInfo, ha_store_boot_info_clear)

/* @boot's row; ret->found false when there is none. */
bool ha_store_boot_info(HaStore *s, int64_t boot, HaStoreBootInfo *ret, GError **error);

/* The pairing state of @boot's last commit (pair.h ha_pair_save()): *@ret NULL when
 * none (or no such boot). */
bool ha_store_boot_pair_state(HaStore *s, int64_t boot, GBytes **ret, GError **error);

/*
 * What `report boots` counts of a boot. Sums of u64 counters the guest sent (stored
 * as int64) saturate at UINT64_MAX; map figures (SMP_STAT_*) read negative values as
 * 0. map_* come from the newest STATS of the boot (have_map false: none sent).
 */
typedef struct {
	uint64_t traced;	/* chunks.nr_traced */
	uint64_t gap_frames;	/* streams */
	uint64_t ring_lost;	/* lost: overrun + dropped_events */
	uint64_t missed_events;	/* streams: pages flagged RB_MISSED_EVENTS */
	uint64_t malformed;	/* streams */
	int64_t stacks;		/* rows of stacks */
	int64_t fullstacks;	/* rows of fullstacks */
	int64_t epochs;		/* rows of epochs */
	bool have_map;
	uint64_t map_epoch;	/* SMP_STAT_MAP_EPOCH */
	uint64_t map_successes;	/* SMP_STAT_MAP_SUCCESSES in that epoch */
	uint64_t map_stored;	/* stored events whose stack_id is of that epoch */
	uint64_t unread;	/* SMP_STAT_RB_UNREAD, the largest, 0: none */
} HaStoreBootCounts;

bool ha_store_boot_counts(HaStore *s, int64_t boot, HaStoreBootCounts *ret,
			  GError **error);

/* ---- stacks --------------------------------------------------------------------- */

/* The newest epoch of @boot with tag @tag that started at or before @ts: *@ret_epoch
 * -1 when none, else it and its start. */
bool ha_store_epoch_at(HaStore *s, int64_t boot, uint32_t tag, uint64_t ts,
		       int64_t *ret_epoch, uint64_t *ret_start, GError **error);
/* Whether @boot has an epoch with tag @tag older than @epoch. */
bool ha_store_epoch_older(HaStore *s, int64_t boot, uint32_t tag, int64_t epoch,
			  bool *ret, GError **error);
/* The frames (uint64_t, innermost first) stored for (@boot, @epoch, @id): a new
 * array (g_array_unref), *@ret NULL when none. */
bool ha_store_stack_ips(HaStore *s, int64_t boot, int64_t epoch, uint32_t id,
			GArray **ret, GError **error);
/* The frames of fullstacks row @id, as ha_store_stack_ips(). */
bool ha_store_fullstack_ips(HaStore *s, int64_t id, GArray **ret, GError **error);

/* Each epoch of @boot with tag @tag, by epoch: its start and the stack it holds for
 * @id (@ips NULL: none, else uint64_t innermost first, borrowed) with its ref_count. */
typedef void (*HaStoreEpochStackFn)(int64_t epoch, int64_t start_ts, const GArray *ips,
				    int64_t ref_count, void *user);
bool ha_store_epoch_stacks(HaStore *s, int64_t boot, uint32_t tag, uint32_t id,
			   HaStoreEpochStackFn fn, void *user, GError **error);

/* Whether two of @boot's stack keys (hist.h) may carry one stack: it has more than
 * one epoch, or full stacks. */
bool ha_store_keys_may_merge(HaStore *s, int64_t boot, bool *ret, GError **error);

/* Each stack_counts row of @boot: its key (hist.h), count and time range. */
typedef void (*HaStoreCountFn)(uint64_t key, uint64_t count, uint64_t ts_min,
			       uint64_t ts_max, void *user);
bool ha_store_counts_foreach(HaStore *s, int64_t boot, HaStoreCountFn fn, void *user,
			     GError **error);

/* ---- texts ---------------------------------------------------------------------- */

/* The text of @boot's FORMAT @name (kind 'format'): *@ret NULL when none. (Every
 * format in arrival order: store-ingest.h ha_store_formats_foreach().) */
bool ha_store_format_text(HaStore *s, int64_t boot, const char *name, GBytes **ret,
			  GError **error);

/* The (stream, generation) pairs of @boot's KSYMS snapshots whose last chunk arrived,
 * newest first (by stream, then seq), appended to @ret (elements of two int64_t). */
bool ha_store_ksyms_snapshots(HaStore *s, int64_t boot, GArray *ret, GError **error);
/* Append the chunks 0..last of @boot's text snapshot (@kind "ksyms" or "modules",
 * @stream, @gen) to @out: *@ret_complete false when one is missing or there is none. */
bool ha_store_text_snapshot(HaStore *s, int64_t boot, const char *kind, int64_t stream,
			    int64_t gen, GString *out, bool *ret_complete, GError **error);

/* ---- chunks (store-report-chunks.c) --------------------------------------------- */

/* A chunk as the event reports choose it. ts_min: 0 when it has none, as ts_max. */
typedef struct {
	int64_t id;
	int64_t cpu;
	int64_t first_seq;
	uint64_t ts_min;
	bool has_range;		/* ts_min and ts_max stored (not NULL) */
	uint64_t nr_pages;
	uint64_t nr_events;
} HaStoreChunkPos;

/* @boot's chunks with pages (of CPU @cpu, -1: every CPU's), newest end first (by
 * ts_max, then id): @fn returns false to stop. */
typedef bool (*HaStoreChunkPosFn)(const HaStoreChunkPos *c, void *user);
bool ha_store_chunks_newest(HaStore *s, int64_t boot, int64_t cpu, HaStoreChunkPosFn fn,
			    void *user, GError **error);
/* Append (HaStoreChunkPos) @boot's chunks with pages (of @cpu, -1: every CPU's) that
 * overlap [@since, @until] or have no time range, newest start first (by ts_min,
 * then id). */
bool ha_store_chunks_range(HaStore *s, int64_t boot, int64_t cpu, int64_t since,
			   int64_t until, GArray *ret, GError **error);
/* Append (HaStoreChunkPos, id and nr_pages) @boot's chunks of CPU @cpu with pages, by
 * id. */
bool ha_store_cpu_chunks(HaStore *s, int64_t boot, uint32_t cpu, GArray *ret,
			 GError **error);
/* The CPUs of @boot with stored pages (guint, ascending; 0..4095). */
bool ha_store_chunk_cpus(HaStore *s, int64_t boot, GArray *ret, GError **error);

/* Chunk @id's CPU and compressed data (a new GBytes): *@ret_data NULL when there is no
 * such chunk. */
bool ha_store_chunk_data(HaStore *s, int64_t id, int64_t *ret_cpu, GBytes **ret_data,
			 GError **error);

/* Each chunk of @boot recovered from a dump (chunks.recovered) on CPUs 0..4095, by
 * CPU, first seq and id: its compressed data and its ts_min (-1: none). */
typedef void (*HaStoreRecoveredFn)(uint32_t cpu, const void *data, size_t len,
				   int64_t ts_min, void *user);
bool ha_store_recovered_chunks(HaStore *s, int64_t boot, HaStoreRecoveredFn fn,
			       void *user, GError **error);

/* Each frame gap position of @boot (table gaps) on CPUs 0..4095, by CPU and after_ts
 * (negative read as 0). */
typedef void (*HaStoreGapFn)(uint32_t cpu, uint64_t after_ts, void *user);
bool ha_store_gap_positions(HaStore *s, int64_t boot, HaStoreGapFn fn, void *user,
			    GError **error);

/* ---- post-mortems (store-report-chunks.c; written by store-postmortem.h) --------- */

/* The newest boot with a post-mortem, 0: none. */
bool ha_store_pm_newest_boot(HaStore *s, int64_t *ret, GError **error);

/* A postmortems row; -1 for a NULL of the optional figures. */
typedef struct {
	bool found;
	char *status, *source, *message, *osrelease;	/* NULL: none */
	int64_t time, dump_bytes, dump_ms, recover_ms, kernel_offset, records, skipped;
	int64_t stream, seam_seq, arena_frames, ring_pages, ring_events, map_records;
	int64_t frames_stored, frames_dup, events_stored;
} HaStorePmInfo;

void ha_store_pm_info_clear(HaStorePmInfo *p);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HaStorePmInfo, ha_store_pm_info_clear)

bool ha_store_pm_info(HaStore *s, int64_t boot, HaStorePmInfo *ret, GError **error);

/* Each kmsg record of @boot, by seq. */
typedef void (*HaStoreKmsgFn)(int64_t seq, uint64_t ts_nsec, const void *text, size_t len,
			      void *user);
bool ha_store_kmsg_foreach(HaStore *s, int64_t boot, HaStoreKmsgFn fn, void *user,
			   GError **error);

#endif /* HA_STORE_REPORT_H */
