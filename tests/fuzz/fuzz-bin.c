// SPDX-License-Identifier: MIT
/* libFuzzer target: the seed's stack_map_bin v1 parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	struct smp_bin it;
	struct smp_bin_entry e;
	volatile uint64_t sink = 0;

	memcpy(buf, data, size);
	if (smp_bin_open(&it, buf, size) == 0)
		while (smp_bin_next(&it, &e) == 1)
			for (uint32_t i = 0; i < e.nr; i++)
				sink += smp_bin_ip(&e, i);
	(void)sink;
	free(buf);
	return 0;
}
