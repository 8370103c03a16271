// SPDX-License-Identifier: MIT
/* chunk.c - pack and zstd-compress pages (see chunk.h). */
#include "chunk.h"

#include <gio/gio.h>
#include <string.h>
#include <zstd.h>

void ha_chunk_add_page(GByteArray *packed, const uint8_t *data, uint32_t len)
{
	uint32_t le = GUINT32_TO_LE(len);

	g_byte_array_append(packed, (const guint8 *)&le, 4);
	g_byte_array_append(packed, data, len);
}

GBytes *ha_chunk_compress(const GByteArray *packed, int level, GError **error)
{
	size_t cap = ZSTD_compressBound(packed->len);
	g_autofree uint8_t *out = g_malloc(cap);
	size_t n = ZSTD_compress(out, cap, packed->data, packed->len, level);

	if (ZSTD_isError(n)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "zstd: %s",
			    ZSTD_getErrorName(n));
		return NULL;
	}
	return g_bytes_new_take(g_realloc(g_steal_pointer(&out), n ? n : 1), n);
}

GBytes *ha_chunk_decompress(const void *data, size_t len, GError **error)
{
	unsigned long long sz = ZSTD_getFrameContentSize(data, len);
	g_autofree uint8_t *out = NULL;
	size_t n;

	if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN ||
	    sz > HA_CHUNK_RAW_MAX) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "stored chunk has no valid zstd size");
		return NULL;
	}
	out = g_malloc(sz ? sz : 1);
	n = ZSTD_decompress(out, sz, data, len);
	if (ZSTD_isError(n) || n != sz) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "zstd: %s",
			    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short chunk");
		return NULL;
	}
	return g_bytes_new_take(g_steal_pointer(&out), n);
}

bool ha_chunk_next_page(GBytes *raw, size_t *off, const uint8_t **ret_page,
			uint32_t *ret_len)
{
	size_t len;
	const uint8_t *p = g_bytes_get_data(raw, &len);
	uint32_t n;

	if (*off > len || len - *off < 4)
		return false;
	memcpy(&n, p + *off, 4);
	n = GUINT32_FROM_LE(n);
	if (len - *off - 4 < n)
		return false;
	*ret_page = p + *off + 4;
	*ret_len = n;
	*off += 4 + (size_t)n;
	return true;
}
