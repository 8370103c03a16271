/* SPDX-License-Identifier: MIT */
/*
 * chunk.h - raw pages of one CPU packed and zstd-compressed for the store.
 *
 * Packed layout (before compression): per page, u32 little-endian length, then the
 * PAGE payload's data (page header + committed bytes) as the guest sent it.
 */
#ifndef HA_CHUNK_H
#define HA_CHUNK_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define HA_CHUNK_RAW_MAX (64u << 20)	/* refuse to inflate a chunk beyond this */

/*
 * The ingest's packer, which allocates nothing per batch: a batch's pages (of every
 * CPU, in arrival order) are copied once into one buffer, and each CPU's chunk is
 * compressed at commit from its spans of that buffer, packed into one input buffer
 * (the same bytes as ha_chunk_add_page() would have built), by one zstd context and
 * into one output buffer, all three kept for the connection's life.
 */
typedef struct {
	uint32_t off;		/* into the batch's page buffer */
	uint32_t len;
} HaChunkSpan;

typedef struct _HaChunkZ HaChunkZ;

/* Free with ha_chunkz_free(). */
HaChunkZ *ha_chunkz_new(int level);
void ha_chunkz_free(HaChunkZ *z);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaChunkZ, ha_chunkz_free)

/* The packed size of @n spans: 4 bytes of length per page and its bytes. */
size_t ha_chunk_packed_size(const HaChunkSpan *spans, size_t n);

/*
 * Compress the pages @spans of @base as one chunk (ha_chunk_decompress() gives the
 * packed pages back). Returns the compressed bytes in @z's buffer (valid until the
 * next call, owned by @z) and their length in @ret_len, or NULL with @error.
 */
const void *ha_chunkz_compress(HaChunkZ *z, const uint8_t *base, const HaChunkSpan *spans,
			       size_t n, size_t *ret_len, GError **error);

/* Append one page to @packed. */
void ha_chunk_add_page(GByteArray *packed, const uint8_t *data, uint32_t len);

/* Compress @packed. Returns a new GBytes (g_bytes_unref) or NULL with @error. */
GBytes *ha_chunk_compress(const GByteArray *packed, int level, GError **error);

/* Decompress a stored chunk. Returns a new GBytes (g_bytes_unref) or NULL. */
GBytes *ha_chunk_decompress(const void *data, size_t len, GError **error);

/* Iterate the pages of an inflated chunk: returns true and the next page at *off. */
bool ha_chunk_next_page(GBytes *raw, size_t *off, const uint8_t **ret_page,
			uint32_t *ret_len);

#endif /* HA_CHUNK_H */
