// SPDX-License-Identifier: MIT
/*
 * fuzz-arena-seeds DIR: seeds for fuzz-arena, mappings as the guest agent leaves them
 * (a recovery header with a HELLO, sealed frames in the arena, stale bytes between).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define PS 4096u

static void put(const char *dir, int i, const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%d", dir, i);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	static uint8_t m[3 * PS];
	uint8_t p[256], hello[1024];
	struct smp_hello h = {
		.boot_id = { 1 }, .stream_id = 7, .nr_cpus = 1, .page_size = PS,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	long n, hl;
	size_t off = 0;

	if (argc != 2)
		return 2;
	n = smp_hello_encode(&h, p, sizeof(p));
	hl = smp_frame_encode(hello, sizeof(hello), SMP_HELLO, 0, 0, p, (size_t)n);
	smp_arena_hdr_init(m, PS, 1, 2 * PS);
	smp_arena_hdr_set_hello(m, hello, (size_t)hl);
	for (uint64_t seq = 1; seq <= 20; seq++) {
		struct smp_stat st = { .key = SMP_STAT_AGENT_FRAMES, .value = seq };

		n = smp_stats_encode(&st, 1, p, sizeof(p));
		/* out of order, with a gap of garbage now and then */
		off += (size_t)smp_frame_encode(m + PS + off, 2 * PS - off, SMP_STATS, 0,
						seq ^ 3, p, (size_t)n);
		if (seq % 7 == 0)
			off += 13;
	}
	put(argv[1], 0, m, sizeof(m));
	m[PS + 40] ^= 1;	/* a damaged frame */
	put(argv[1], 1, m, sizeof(m));
	put(argv[1], 2, m, PS + 100);	/* cut in a frame */
	smp_arena_hdr_set_hello(m, hello, (size_t)hl);	/* the other slot */
	put(argv[1], 3, m, sizeof(m));
	return 0;
}
