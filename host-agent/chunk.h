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
