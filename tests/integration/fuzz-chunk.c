// SPDX-License-Identifier: MIT
/*
 * fuzz-chunk - libFuzzer target for chunk.c: the inflation of a stored chunk (the
 * column format's inverse transform reads only what it was given) and the round trip
 * of any pages through the column format. Input: u8 mode, then
 *   mode 0: a column transform, stored as a chunk ("SMC1" + zstd) and inflated;
 *   mode 1: a stored chunk as it is, inflated;
 *   else:   pages, each u16 little-endian length and its bytes: compressed in the
 *           column format and inflated, which must give them back packed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "chunk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static HaChunkZ *z;

static void inflate(const uint8_t *chunk, size_t len)
{
	GBytes *raw = ha_chunk_decompress(chunk, len, NULL);
	size_t off = 0;
	const uint8_t *page;
	uint32_t plen;
	unsigned sum = 0;

	if (!raw)
		return;
	while (ha_chunk_next_page(raw, &off, &page, &plen))
		for (uint32_t i = 0; i < plen; i++)
			sum += page[i];	/* every byte read: ASan sees each */
	(void)sum;
	g_bytes_unref(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!z)
		z = ha_chunkz_new(1);
	if (!size)
		return 0;
	if (data[0] == 0) {
		size_t cap = 4 + ZSTD_compressBound(size - 1), n;
		uint8_t *c = malloc(cap);

		memcpy(c, "SMC1", 4);
		n = ZSTD_compress(c + 4, cap - 4, data + 1, size - 1, 1);
		if (!ZSTD_isError(n))
			inflate(c, 4 + n);
		free(c);
	} else if (data[0] == 1) {
		inflate(data + 1, size - 1);
	} else {
		GByteArray *packed = g_byte_array_new();
		GArray *spans = g_array_new(FALSE, FALSE, sizeof(HaChunkSpan));
		size_t off = 1, zlen;
		const void *zd;
		GBytes *raw;

		while (size - off >= 2) {
			HaChunkSpan sp = { (uint32_t)off + 2, (uint32_t)(data[off] | data[off + 1] << 8) };

			if (sp.len > size - off - 2)
				sp.len = (uint32_t)(size - off - 2);
			ha_chunk_add_page(packed, data + sp.off, sp.len);
			g_array_append_val(spans, sp);
			off += 2 + sp.len;
		}
		zd = ha_chunkz_compress(z, data, (const HaChunkSpan *)(void *)spans->data,
					spans->len, &zlen, NULL);
		if (!zd)
			abort();
		raw = ha_chunk_decompress(zd, zlen, NULL);
		if (!raw || g_bytes_get_size(raw) != packed->len ||
		    (packed->len && memcmp(g_bytes_get_data(raw, NULL), packed->data, packed->len)))
			abort();	/* the column format lost or changed a byte */
		g_bytes_unref(raw);
		g_byte_array_unref(packed);
		g_array_unref(spans);
	}
	return 0;
}
