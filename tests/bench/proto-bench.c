// SPDX-License-Identifier: MIT
/*
 * proto-bench: decode + checksum throughput of PAGE frames (CRC32C and XXH64, PROTOCOL.md
 * 2) on one core, beside memcpy of the same bytes in the same run. Prints medians of
 * several rounds; asserts nothing about time (the machine is shared and noisy).
 *
 * The stream is what a 2-vCPU guest sends: PAGE frames of 4 KiB ring-buffer pages with
 * a little garbage-free framing between them. It is fed to the decoder the way the host
 * agent reads a socket: 64 KiB read()s into the decoder's own buffer (zero copy), then
 * every frame decoded and its PAGE payload validated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto.h"
#include "wire.h"

#define STREAM_MB	256
#define ROUNDS		7
#define CHUNK		(64 * 1024)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

/* Decode @len bytes of @frames frames as the host's read loop does; seconds, or -1. */
static double decode_time(const uint8_t *stream, size_t len, size_t frames,
			  volatile uint64_t *sink)
{
	struct smp_decoder *d = smp_decoder_new(0);
	size_t pos = 0, got = 0;
	double t0 = now(), t;

	while (pos < len) {
		uint8_t *space;
		size_t room = smp_decoder_space(d, &space);
		size_t n = len - pos < CHUNK ? len - pos : CHUNK;
		struct smp_frame f;
		struct smp_page pg;

		if (n > room)
			n = room;
		memcpy(space, stream + pos, n);	/* stands for read(2) */
		smp_decoder_commit(d, n);
		pos += n;
		while (smp_decoder_next(d, &f, NULL) == 1) {
			if (smp_page_decode(&pg, f.payload, f.len) == 0)
				*sink += pg.data[0];
			got++;
		}
	}
	t = now() - t0;
	smp_decoder_free(d);
	if (got != frames) {
		fprintf(stderr, "decoded %zu of %zu frames\n", got, frames);
		return -1;
	}
	return t;
}

/* Seal every frame of the stream again with @flags (0: CRC32C, SMP_FLAG_XXH64). */
static void reseal_all(uint8_t *stream, size_t len, uint8_t flags)
{
	for (size_t o = 0, seq = 1; o < len; seq++) {
		uint32_t plen = smp_get32(stream + o + SMP_OFF_LEN);

		smp_frame_seal(stream + o, SMP_PAGE, flags, seq, plen);
		o += SMP_HDR_SIZE + plen;
	}
}

int main(void)
{
	size_t cap = (size_t)STREAM_MB << 20, len = 0, frames = 0;
	uint8_t *stream = malloc(cap), *copy = malloc(cap);
	double t_dec[ROUNDS], t_xxh[ROUNDS], t_cpy[ROUNDS], t_sw[ROUNDS], t_hw[ROUNDS];
	volatile uint64_t sink = 0;
	uint32_t x = 1;

	if (!stream || !copy)
		return 1;
	while (len + SMP_HDR_SIZE + 8 + 4096 <= cap) {
		uint8_t *p = stream + len + SMP_HDR_SIZE;
		struct smp_page pg = { .cpu = (uint32_t)(frames & 1), .data = NULL,
				       .data_len = 4096 };

		for (size_t i = 0; i < 4096; i += 4) {
			x = x * 1664525u + 1013904223u;
			memcpy(p + 8 + i, &x, 4);
		}
		smp_page_encode(&pg, p, 8 + 4096);
		len += (size_t)smp_frame_seal(stream + len, SMP_PAGE, 0, frames + 1, 8 + 4096);
		frames++;
	}
	memset(copy, 0, cap);

	for (int r = 0; r < ROUNDS; r++) {
		double t0;

		reseal_all(stream, len, 0);
		t_dec[r] = decode_time(stream, len, frames, &sink);
		reseal_all(stream, len, SMP_FLAG_XXH64);
		t_xxh[r] = decode_time(stream, len, frames, &sink);
		if (t_dec[r] < 0 || t_xxh[r] < 0)
			return 1;

		t0 = now();
		for (size_t o = 0; o < len; o += CHUNK)
			memcpy(copy + o, stream + o, len - o < CHUNK ? len - o : CHUNK);
		t_cpy[r] = now() - t0;
		sink += copy[len / 2];

		t0 = now();
		sink += smp_crc32c(0, stream, len);
		t_hw[r] = now() - t0;
		t0 = now();
		sink += smp_crc32c_sw(0, stream, len);
		t_sw[r] = now() - t0;
	}

	double mb = (double)len / 1e6;
	double dec = mb / median(t_dec, ROUNDS), cpy = mb / median(t_cpy, ROUNDS);

	printf("proto-bench: %zu PAGE frames (4 KiB pages), %.1f MB, median of %d rounds, one core\n",
	       frames, mb, ROUNDS);
	printf("  %-34s %9.0f MB/s\n", "decode + CRC32C + PAGE decode", dec);
	printf("  %-34s %9.0f MB/s\n", "decode + XXH64 + PAGE decode", mb / median(t_xxh, ROUNDS));
	printf("  %-34s %9.0f MB/s\n", "memcpy of the same bytes", cpy);
	printf("  %-34s %9.0f MB/s  (%s)\n", "CRC32C alone, smp_crc32c", mb / median(t_hw, ROUNDS),
	       smp_crc32c_hw() ? "sse4.2" : "table");
	printf("  %-34s %9.0f MB/s\n", "CRC32C alone, table", mb / median(t_sw, ROUNDS));
	printf("  decode / memcpy ratio: %.2f; decode vs the 267 MB/s port: %.1fx headroom\n",
	       dec / cpy, dec / 267.0);
	return sink == 42 ? 2 : 0;
}
