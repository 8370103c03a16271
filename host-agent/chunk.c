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

struct _HaChunkZ {
	ZSTD_CCtx *cctx;
	int level;
	uint8_t *out;
	size_t cap;
	uint8_t *in;		/* one CPU's pages, packed */
	size_t in_cap;
};

HaChunkZ *ha_chunkz_new(int level)
{
	HaChunkZ *z = g_new0(HaChunkZ, 1);

	z->cctx = ZSTD_createCCtx();
	z->level = level;
	if (!z->cctx)
		g_error("zstd: out of memory");
	return z;
}

void ha_chunkz_free(HaChunkZ *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->cctx);
	g_free(z->out);
	g_free(z->in);
	g_free(z);
}

size_t ha_chunk_packed_size(const HaChunkSpan *spans, size_t n)
{
	size_t sz = 0;

	for (size_t i = 0; i < n; i++)
		sz += 4 + (size_t)spans[i].len;
	return sz;
}

static bool zstd_ok(size_t r, GError **error)
{
	if (!ZSTD_isError(r))
		return true;
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "zstd: %s", ZSTD_getErrorName(r));
	return false;
}

/* Grow *@buf to hold @need bytes (its contents not kept). */
static void reserve(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	g_free(*buf);
	*cap = MAX(need, *cap * 2);
	*buf = g_malloc(*cap);
}

/*
 * The spans are packed into one buffer first and compressed in one call: zstd's
 * streaming API would copy them into its window anyway, and one call over contiguous
 * input is 7-10 % faster than feeding it page by page (zstd 1.5.4, host-bench's
 * pages), the copy included.
 */
const void *ha_chunkz_compress(HaChunkZ *z, const uint8_t *base, const HaChunkSpan *spans,
			       size_t n, size_t *ret_len, GError **error)
{
	size_t raw = ha_chunk_packed_size(spans, n), r, off = 0;

	reserve(&z->out, &z->cap, ZSTD_compressBound(raw));
	reserve(&z->in, &z->in_cap, MAX(raw, 1));
	for (size_t i = 0; i < n; i++) {
		uint32_t le = GUINT32_TO_LE(spans[i].len);

		memcpy(z->in + off, &le, 4);
		memcpy(z->in + off + 4, base + spans[i].off, spans[i].len);
		off += 4 + (size_t)spans[i].len;
	}
	/* ZSTD_compress2() writes the content size in the frame header:
	 * ha_chunk_decompress() needs it */
	if (!zstd_ok(ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_only), error) ||
	    !zstd_ok(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, z->level),
		     error))
		return NULL;
	r = ZSTD_compress2(z->cctx, z->out, z->cap, z->in, raw);
	if (!zstd_ok(r, error))
		return NULL;
	*ret_len = r;
	return z->out;
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
