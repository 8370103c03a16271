// SPDX-License-Identifier: MIT
/*
 * fuzz-chunk-seeds DIR: seeds for fuzz-chunk: ring-buffer pages of kmalloc-, stack_id-
 * and kernel_stack-sized events (ringpage.c) as pages to round-trip (mode 2), as the
 * column transform of them (mode 0) and as their stored chunk (mode 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "chunk.h"
#include "ringpage.h"

static void put(const char *dir, int i, uint8_t mode, const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%d", dir, i);
	f = fopen(path, "wb");
	if (!f || fwrite(&mode, 1, 1, f) != 1 || fwrite(buf, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	static uint8_t page[1024], data[512];
	GByteArray *in = g_byte_array_new(), *pages = g_byte_array_new();
	GArray *spans = g_array_new(FALSE, FALSE, sizeof(HaChunkSpan));
	HaChunkZ *z = ha_chunkz_new(1);
	struct ringpage rp;
	uint64_t ts = 100;
	size_t zlen;
	const uint8_t *zd;
	unsigned long long tlen;
	uint8_t *t;

	if (argc != 2)
		return 2;
	ringpage_init(&rp, page, sizeof(page));
	ringpage_reset(&rp, ts);
	for (int i = 0, n = 0; n < 3; i++) {
		uint32_t len = i % 5 == 4 ? 120 + (uint32_t)i % 40 : i % 2 ? 16 : 52;

		memset(data, i, len);
		ts += i % 9 == 8 ? (1u << 28) : 250;
		if (!ringpage_add(&rp, ts, data, len)) {
			uint32_t sz = ringpage_finish(&rp);
			HaChunkSpan sp = { pages->len, sz };
			uint8_t le[2] = { (uint8_t)sz, (uint8_t)(sz >> 8) };

			g_byte_array_append(in, le, 2);
			g_byte_array_append(in, page, sz);
			g_byte_array_append(pages, page, sz);
			g_array_append_val(spans, sp);
			ringpage_reset(&rp, ts);
			n++;
		}
	}
	put(argv[1], 0, 2, in->data, in->len);
	zd = ha_chunkz_compress(z, pages->data, (const HaChunkSpan *)(void *)spans->data,
				spans->len, &zlen, NULL);
	put(argv[1], 1, 1, zd, zlen);
	tlen = ZSTD_getFrameContentSize(zd + 4, zlen - 4);
	t = malloc(tlen);
	if (ZSTD_decompress(t, tlen, zd + 4, zlen - 4) != tlen)
		return 1;
	put(argv[1], 2, 0, t, tlen);
	return 0;
}
