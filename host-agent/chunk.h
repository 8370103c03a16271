/* SPDX-License-Identifier: MIT */
/*
 * chunk.h - raw pages of one CPU packed and zstd-compressed for the store.
 *
 * Packed layout (what ha_chunk_decompress() gives back): per page, u32 little-endian
 * length, then the PAGE payload's data (page header + committed bytes) as the guest
 * sent it.
 *
 * Stored, a chunk is one of two formats, told by its first 4 bytes:
 *   - a zstd frame of the packed pages (zstd's magic; every chunk written before the
 *     column format, and ha_chunk_compress_raw());
 *   - "SMC1" and a zstd frame of the pages in columns (chunk.c): each page's ring-buffer
 *     events split into their header words and, per body length, their bodies' bytes
 *     side by side (byte 0 of every body, then byte 1, ...), so that zstd sees each
 *     field of an event type as one run. About 14 % smaller and 1.3-1.4x faster to
 *     compress than the packed pages at the same level (README.md, issue 14 seventh
 *     round).
 * Both inflate to the same packed pages; every reader goes through
 * ha_chunk_decompress(), which checks every length of the column format against the
 * bytes it has (a stored chunk is treated as untrusted).
 */
#ifndef HA_CHUNK_H
#define HA_CHUNK_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define HA_CHUNK_RAW_MAX (64u << 20)	/* refuse to inflate a chunk beyond this */
#define HA_CHUNK_CLASSES_MAX 64		/* body lengths per column chunk; the rest of a
					 * page whose event needs another: as it is */

/*
 * The ingest's packer, which allocates nothing per batch: a batch's pages (of every
 * CPU, in arrival order) are copied once into one buffer, and each CPU's chunk is
 * compressed at commit from its spans of that buffer, transformed into one input
 * buffer (the column format), by one zstd context and into one output buffer, all
 * kept for the connection's life.
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
 * Compress the pages @spans of @base as one chunk, in the column format
 * (ha_chunk_decompress() gives the packed pages back). Returns the compressed bytes in @z's buffer (valid until the
 * next call, owned by @z) and their length in @ret_len, or NULL with @error.
 */
const void *ha_chunkz_compress(HaChunkZ *z, const uint8_t *base, const HaChunkSpan *spans,
			       size_t n, size_t *ret_len, GError **error);

/* Append one page to @packed. */
void ha_chunk_add_page(GByteArray *packed, const uint8_t *data, uint32_t len);

/* Compress @packed (in the column format; packed bytes that are not whole pages in
 * the raw one). Returns a new GBytes (g_bytes_unref) or NULL with @error. */
GBytes *ha_chunk_compress(const GByteArray *packed, int level, GError **error);
/* The same in the format before the columns: one zstd frame of @packed. */
GBytes *ha_chunk_compress_raw(const GByteArray *packed, int level, GError **error);

/* Decompress a stored chunk. Returns a new GBytes (g_bytes_unref) or NULL. */
GBytes *ha_chunk_decompress(const void *data, size_t len, GError **error);

/* Iterate the pages of an inflated chunk: returns true and the next page at *off. */
bool ha_chunk_next_page(GBytes *raw, size_t *off, const uint8_t **ret_page,
			uint32_t *ret_len);

#endif /* HA_CHUNK_H */
