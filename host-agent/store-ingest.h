/* SPDX-License-Identifier: MIT */
/*
 * store-ingest.h - the ingest's typed calls on a domain's store (tables: store.h).
 *
 * The ingest (ingest-session.c, ingest-apply.c, ingest-batch.c) reaches the database
 * only through these calls: no SQL and no sqlite3 outside store-ingest.c. Each call
 * runs inside the connection's open transaction (ha_store_begin(); the session opens it
 * before a frame is applied) unless it says otherwise, and each returns false with
 * @error on any store failure, which the caller turns into a failed batch: nothing of
 * it is committed or acknowledged (ingest.h).
 *
 * Ids: @boot is boots.id, @stream streams.id (not the guest's stream_id), both as the
 * calls below returned them. Blobs are borrowed for the call only.
 */
#ifndef HA_STORE_INGEST_H
#define HA_STORE_INGEST_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "clocksync.h"
#include "proto.h"
#include "store.h"

/* ---- sessions (HELLO) ---------------------------------------------------------- */

/* What a boot's first HELLO said, as stored, and the pairing state of its last
 * commit (pair.h; NULL when none). */
typedef struct {
	int64_t id;
	GBytes *pair_state;
	uint32_t nr_cpus;
	uint32_t page_size;
	uint32_t map_bits;
	uint32_t max_depth;
	uint32_t flags;
	uint64_t text_addr;
} HaStoredBoot;

void ha_stored_boot_clear(HaStoredBoot *b);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HaStoredBoot, ha_stored_boot_clear)

/* The boot @uuid (16 bytes): true with *ret_found false when the store has none. */
bool ha_store_boot_find(HaStore *s, const uint8_t *uuid, bool *ret_found,
			HaStoredBoot *ret, GError **error);
/* A new boot row from @h, first and last contact @now (g_get_real_time()). */
bool ha_store_boot_insert(HaStore *s, const struct smp_hello *h, int64_t now,
			  int64_t *ret_boot, GError **error);
/* The boot streams again: not ended, last contact @now. */
bool ha_store_boot_resume(HaStore *s, int64_t boot, int64_t now, GError **error);
/* Every other boot still open or left disconnected ended without a BYE: crashed. */
bool ha_store_boots_crash_others(HaStore *s, int64_t boot, GError **error);

/* The stream @stream_id of @boot: true with *ret_found false when there is none;
 * *ret_epoch -1 when the stream has no EPOCH yet. */
bool ha_store_stream_find(HaStore *s, int64_t boot, uint64_t stream_id, bool *ret_found,
			  int64_t *ret_stream, uint64_t *ret_next_seq, int64_t *ret_epoch,
			  GError **error);
/* A new stream row, next seq 1. */
bool ha_store_stream_insert(HaStore *s, int64_t boot, uint64_t stream_id,
			    int64_t *ret_stream, GError **error);

/* How many boots the store holds. */
bool ha_store_boot_count(HaStore *s, uint64_t *ret, GError **error);

/* The rows @boot holds in the tables whose keys the guest chooses (ingest.h's row
 * limits): streams, epochs, stacks (every epoch), gaps (distinct gaps, not rows),
 * fullstacks and stack_counts; read from the boot's counters (table boot_rows,
 * store.h), not counted. */
typedef struct {
	uint64_t streams;
	uint64_t epochs;
	uint64_t stacks;
	uint64_t gaps;
	uint64_t fullstacks;
	uint64_t counts;
} HaStoreBootRows;
bool ha_store_boot_rows(HaStore *s, int64_t boot, HaStoreBootRows *ret, GError **error);

/* Rows and text bytes the boot stores of the texts of @kind (every stream). */
bool ha_store_text_use(HaStore *s, int64_t boot, const char *kind, uint64_t *ret_rows,
		       uint64_t *ret_bytes, GError **error);

/* The boot's stored FORMAT texts in arrival order; @refused: stored as refused by the
 * parser (kind 'format-refused'). @fn must not call the store. */
typedef void (*HaStoreFormatFn)(const char *name, const void *text, size_t len,
				bool refused, void *user);
bool ha_store_formats_foreach(HaStore *s, int64_t boot, HaStoreFormatFn fn, void *user,
			      GError **error);

/* How the boot ended: 'clean' (BYE) now, or 'disconnected' unless it had ended. */
bool ha_store_boot_clean(HaStore *s, int64_t boot, int64_t now, GError **error);
bool ha_store_boot_disconnected(HaStore *s, int64_t boot, int64_t now, GError **error);

/* ---- frames (apply) ------------------------------------------------------------ */

/* A text row (texts): @stream 0 for FORMAT texts (one per name per boot, the latest
 * wins), the stream's row otherwise. */
bool ha_store_put_text(HaStore *s, int64_t boot, const char *kind, const char *name,
		       int64_t stream, uint32_t gen, uint32_t chunk, bool last, uint64_t seq,
		       const void *text, size_t len, GError **error);

/*
 * A STACKS frame's records are stored between ha_store_stacks_begin() and
 * ha_store_stacks_end() (a savepoint), so that a frame is stored whole or not at all.
 * ha_store_put_stack() sets *ret_conflict when the id is already stored for that
 * epoch with other frames (the stored one is kept); the caller then ends with @keep
 * false, which takes back every record of the frame. *ret_added: a new row (not an
 * id stored already).
 */
bool ha_store_stacks_begin(HaStore *s, GError **error);
bool ha_store_put_stack(HaStore *s, int64_t boot, int64_t epoch,
			const struct smp_delta_rec *rec, bool *ret_conflict, bool *ret_added,
			GError **error);
bool ha_store_stacks_end(HaStore *s, bool keep, GError **error);

/* *ret_added: a new row (not an epoch stored already). */
bool ha_store_put_epoch(HaStore *s, int64_t boot, uint64_t epoch, uint64_t start_ts,
			bool *ret_added, GError **error);
/* The latest LOST counters of one CPU of @stream, and the agent's own drops. */
bool ha_store_put_lost(HaStore *s, int64_t boot, int64_t stream,
		       const struct smp_lost_cpu *lc, GError **error);
bool ha_store_stream_dropped(HaStore *s, int64_t stream, uint64_t frames, uint64_t bytes,
			     GError **error);
/* The latest value of one STATS key of @stream. */
bool ha_store_put_stat(HaStore *s, int64_t boot, int64_t stream, uint32_t key,
		       uint64_t value, GError **error);

/* For each cpu < @nr_cpus, raise @after[cpu] to the newest event time of the boot's
 * stored chunks on that CPU. */
bool ha_store_cpu_newest(HaStore *s, int64_t boot, uint32_t nr_cpus, int64_t *after,
			 GError **error);
/* Where a frame gap fell on one CPU (table gaps). */
bool ha_store_put_gap(HaStore *s, int64_t boot, int64_t stream, uint64_t seq_lo,
		      uint64_t seq_hi, uint32_t cpu, int64_t after_ts, GError **error);

/* ---- batches ------------------------------------------------------------------- */

/* The fullstacks row of an inline stack (@nr ips in host byte order), inserted on
 * first sight while the boot holds fewer than @max_rows; *ret_id 0 when it is not
 * stored (the limit reached). */
bool ha_store_fullstack_id(HaStore *s, int64_t boot, const uint64_t *ips, uint32_t nr,
			   uint64_t max_rows, int64_t *ret_id, GError **error);

/* Add a batch's @count events of stack key @key (hist.h) in [ts_min, ts_max]. A key
 * new to the boot gets a row while the boot holds fewer than @max_rows (keys 0 and
 * HA_HIST_KEY_REFUSED always); otherwise nothing is written and *ret_refused set.
 * @max_rows UINT64_MAX: no limit, for a caller that knows the boot's rows plus the
 * keys it adds stay within it (a cheaper statement: no guard per row). */
bool ha_store_add_count(HaStore *s, int64_t boot, uint64_t key, uint64_t count,
			uint64_t ts_min, uint64_t ts_max, uint64_t max_rows, bool *ret_refused,
			GError **error);

/* One stack key's count of a batch (ha_store_add_counts()). */
typedef struct {
	uint64_t key;
	uint64_t count;
	uint64_t ts_min;
	uint64_t ts_max;
} HaStoreCount;

/* ha_store_add_count() of each of @n rows with no limit (@max_rows UINT64_MAX there),
 * HA_STORE_COUNTS_PER_STMT rows per statement: a caller that knows every new key
 * fits. Rows in key order are faster (their b-tree pages in turn). */
#define HA_STORE_COUNTS_PER_STMT 64
bool ha_store_add_counts(HaStore *s, int64_t boot, const HaStoreCount *rows, size_t n,
			 GError **error);

/* One CPU's chunk of a batch. */
typedef struct {
	uint32_t cpu;
	uint32_t pages;		/* 0: first_seq and last_seq are stored NULL */
	uint64_t first_seq;
	uint64_t last_seq;
	uint64_t ts_min;	/* UINT64_MAX: no event, ts_min and ts_max NULL */
	uint64_t ts_max;
	uint32_t events;
	uint64_t traced;
	uint64_t raw_bytes;	/* packed size (chunk.h) */
	const void *data;	/* zstd */
	size_t len;
	bool recovered;		/* replayed from a crashed guest's memory (postmortem.h) */
} HaStoreChunk;

bool ha_store_put_chunk(HaStore *s, int64_t boot, const HaStoreChunk *ch,
			int64_t *ret_id, GError **error);

/* What a batch adds to its stream's row (the counters are added, the rest set). */
typedef struct {
	uint64_t next_seq;
	uint64_t gap_frames;
	uint64_t dup_frames;
	uint64_t malformed;
	uint64_t bad_pages;
	uint64_t orphan_stacks;
	int64_t cur_epoch;	/* -1: none yet (stored NULL) */
	uint64_t missed_events;
	uint64_t missed_uncounted;
} HaStreamDelta;

bool ha_store_stream_update(HaStore *s, int64_t stream, const HaStreamDelta *d,
			    GError **error);
/* The boot's last contact @now and its pairing state (pair.h ha_pair_save()). */
bool ha_store_boot_update(HaStore *s, int64_t boot, int64_t now, GBytes *pair_state,
			  GError **error);
bool ha_store_put_clock_sample(HaStore *s, int64_t boot, const HaClockSample *cs,
			       GError **error);

/* The database's size in bytes, the pages of the open transaction included. */
bool ha_store_used_bytes(HaStore *s, uint64_t *ret_bytes, GError **error);

#endif /* HA_STORE_INGEST_H */
