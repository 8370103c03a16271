// SPDX-License-Identifier: MIT
/*
 * bin-dump FILE: print a stack_map_bin v1 file through proto's parser in the text
 * format of the seed's stackmap_dump.py (no --vmlinux), so the two can be compared
 * byte for byte. Exit 1 with a message on a file the parser refuses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto.h"

#define FTRACE_TRAMPOLINE_MARKER 0x7fffffffull

int main(int argc, char **argv)
{
	struct smp_bin it;
	struct smp_bin_entry e;
	unsigned long n = 0;
	uint8_t *buf;
	size_t len;
	long sz;
	FILE *f;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		perror(argv[1]);
		return 2;
	}
	len = (size_t)sz;
	buf = malloc(len ? len : 1);
	if (!buf || fread(buf, 1, len, f) != len) {
		perror(argv[1]);
		return 2;
	}
	fclose(f);

	r = smp_bin_open(&it, buf, len);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], smp_strerror(r));
		return 1;
	}
	/* The seed's tool parses everything before printing: do the same. */
	while ((r = smp_bin_next(&it, &e)) == 1)
		n++;
	if (r < 0) {
		fprintf(stderr, "%s: truncated entry %lu: %s\n", argv[1], n, smp_strerror(r));
		return 1;
	}
	smp_bin_open(&it, buf, len);
	while (smp_bin_next(&it, &e) == 1) {
		printf("stack_id %u [ref %u, depth %u]\n", e.stack_id, e.ref_count, e.nr);
		for (uint32_t i = 0; i < e.nr; i++) {
			uint64_t ip = smp_bin_ip(&e, i);

			if (ip == FTRACE_TRAMPOLINE_MARKER)
				printf("  [%u] [FTRACE TRAMPOLINE]\n", i);
			else
				printf("  [%u] 0x%llx\n", i, (unsigned long long)ip);
		}
		printf("\n");
	}
	fprintf(stderr, "Total: %lu unique stacks\n", n);
	free(buf);
	return 0;
}
