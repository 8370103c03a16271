/* SPDX-License-Identifier: MIT */
/*
 * store-compact.h - the chunk rows compaction (compact.h) reads, takes and puts back.
 *
 * Table chunks (store.h). The merge runs in one transaction of its own
 * (ha_store_begin()): ha_store_compact_take() deletes the small chunks it reads,
 * ha_store_compact_put() inserts the merged one under the first one's id, and a
 * failure anywhere rolls all of it back. Each call returns false with @error on a
 * store failure; @boot is boots.id.
 */
#ifndef HA_STORE_COMPACT_H
#define HA_STORE_COMPACT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/*
 * Call @fn for each chunk of @boot of id >= @from_id in id order, with its CPU and raw
 * (packed) size; @fixed: never merged (no time range, or recovered from a crashed
 * guest's memory). @fn returns false to stop there. @fn must not call the store.
 */
typedef bool (*HaStoreChunkSizeFn)(int64_t id, uint32_t cpu, uint64_t raw_bytes,
				   bool fixed, void *user);
bool ha_store_compact_chunks(HaStore *s, int64_t boot, int64_t from_id,
			     HaStoreChunkSizeFn fn, void *user, GError **error);

/* A chunk row as compaction moves it. */
typedef struct {
	uint32_t cpu;
	bool have_seq;		/* false: first_seq and last_seq are NULL */
	int64_t first_seq, last_seq;
	int64_t ts_min, ts_max;
	int64_t pages, events, traced;
	int64_t raw_bytes;	/* packed size (chunk.h) */
	GBytes *data;		/* zstd */
} HaStoreCompactChunk;

void ha_store_compact_chunk_clear(HaStoreCompactChunk *c);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HaStoreCompactChunk, ha_store_compact_chunk_clear)

/* Read chunk @id into @ret (cleared by the caller) and delete it; an error when
 * there is no such chunk. */
bool ha_store_compact_take(HaStore *s, int64_t id, HaStoreCompactChunk *ret,
			   GError **error);

/* Insert @c (its data: @c->data) as chunk @id of @boot. */
bool ha_store_compact_put(HaStore *s, int64_t boot, int64_t id,
			  const HaStoreCompactChunk *c, GError **error);

#endif /* HA_STORE_COMPACT_H */
