// SPDX-License-Identifier: MIT
/* libFuzzer target: stack_map_delta records (STACKS / EPOCH payloads). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so any read past the end is caught */
	uint8_t *buf = malloc(size ? size : 1);
	struct smp_delta_rec r;
	size_t off = 0, prev = 0;
	volatile uint64_t sink = 0;

	memcpy(buf, data, size);
	while (smp_delta_next(buf, size, &off, &r) == 1) {
		if (off <= prev || off > size)
			abort();	/* must advance and stay inside */
		prev = off;
		if (r.kind == SMP_DELTA_STACK)
			for (uint32_t i = 0; i < r.nr; i++)
				sink += smp_delta_ip(&r, i);
		else
			sink += r.epoch + r.timestamp;
	}
	(void)sink;
	free(buf);
	return 0;
}
