// SPDX-License-Identifier: MIT
/* fuzz-core-seeds DIR: seed cores for fuzz-core (coregen.h), full rings and empty. */
#include <glib.h>
#include <stdio.h>

#include "coregen.h"

int main(int argc, char **argv)
{
	static const CoregenOpts seeds[] = {
		{ .n = 0 }, { .n = 5 }, { .n = 23 }, { .n = 200 },
		{ .n = 40, .reserved_last = 1 }, { .n = 40, .bad_block_id = 1 },
		{ .n = 40, .unmap_data = 1 },
	};

	if (argc != 2)
		return 2;
	for (size_t i = 0; i < G_N_ELEMENTS(seeds); i++) {
		g_autofree char *path = g_strdup_printf("%s/core-%zu", argv[1], i);
		size_t len;
		g_autofree uint8_t *core = coregen_build(&seeds[i], &len);

		if (!g_file_set_contents(path, (const char *)core, (gssize)len, NULL))
			return 1;
	}
	return 0;
}
