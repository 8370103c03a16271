// SPDX-License-Identifier: MIT
/*
 * gen-corpus KIND DIR: write seed inputs for a fuzz target (frame, delta, bin) into DIR:
 * valid frames of every type and streams of them, delta record runs, stack_map_bin files
 * in both byte orders.
 */
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "samples.h"

static uint8_t buf[8 * SMP_MAX_PAYLOAD];

static int put(const char *dir, const char *name, unsigned i, const uint8_t *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s-%u", dir, name, i);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned count = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: %s frame|delta|bin DIR\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "frame")) {
		size_t stream = 1;

		buf[0] = 5;	/* the target's chunk-size byte */
		for (size_t t = 0; t < smp_sample_nr_types; t++) {
			for (unsigned v = 0; v < 3; v++) {
				uint8_t one[SMP_HDR_SIZE + 8 + 70000];
				long n = smp_sample_payload(smp_sample_types[t], v,
							    one + 1 + SMP_HDR_SIZE,
							    sizeof(one) - 1 - SMP_HDR_SIZE);

				if (n < 0)
					return 1;
				one[0] = (uint8_t)(v * 31);
				/* the third of each type with the XXH64 payload checksum (1.4) */
				smp_frame_seal(one + 1, smp_sample_types[t],
					       v == 2 ? SMP_FLAG_XXH64 : 0, v + 1, (uint32_t)n);
				if (put(argv[2], "frame", count++, one, 1 + SMP_HDR_SIZE + (size_t)n))
					return 1;
				if (stream + SMP_HDR_SIZE + (size_t)n < sizeof(buf)) {
					memcpy(buf + stream, one + 1, SMP_HDR_SIZE + (size_t)n);
					stream += SMP_HDR_SIZE + (size_t)n;
				}
			}
		}
		return put(argv[2], "stream", 0, buf, stream) ? 1 : 0;
	}
	if (!strcmp(argv[1], "delta")) {
		for (unsigned v = 0; v < 8; v++) {
			long n = smp_sample_payload(SMP_STACKS, v, buf, sizeof(buf));
			long e = smp_sample_payload(SMP_EPOCH, v, buf + n, sizeof(buf) - (size_t)n);

			if (n < 0 || e < 0 || put(argv[2], "delta", v, buf, (size_t)(n + e)))
				return 1;
		}
		return 0;
	}
	if (!strcmp(argv[1], "bin")) {
		for (int be = 0; be < 2; be++) {
			/* a stack_map_bin is the 16-byte header and v1 entries = stack records */
			long n = smp_sample_payload(SMP_STACKS, 4, buf + 16, sizeof(buf) - 16);
			uint32_t hdr[4] = { SMP_BIN_MAGIC, 1, 5, 0 };

			for (int i = 0; i < 4; i++)
				for (int b = 0; b < 4; b++)
					buf[i * 4 + (be ? 3 - b : b)] = (uint8_t)(hdr[i] >> (8 * b));
			if (n < 0 || put(argv[2], "bin", (unsigned)be, buf, 16 + (size_t)n))
				return 1;
		}
		return 0;
	}
	fprintf(stderr, "unknown kind %s\n", argv[1]);
	return 2;
}
