// SPDX-License-Identifier: MIT
/* fuzz-core-seeds DIR: seed cores for fuzz-core (coregen.h): printk rings full and
 * empty; trace buffers and stack maps (small ones: the fuzzer mutates the whole core),
 * intact and with the corruptions the walks must survive. */
#include <glib.h>
#include <stdio.h>

#include "coregen.h"

int main(int argc, char **argv)
{
	static const CoregenOpts seeds[] = {
		{ .n = 0 }, { .n = 5 }, { .n = 23 }, { .n = 200 },
		{ .n = 40, .reserved_last = 1 }, { .n = 40, .bad_block_id = 1 },
		{ .n = 40, .unmap_data = 1 },
		{ .n = 5, .trace_cpus = 2, .trace_pages = 3, .map = 1, .map_bits = 4,
		  .map_backlog = 1 },
		{ .n = 5, .trace_cpus = 1, .trace_pages = 3, .writer_on_reader = 1, .map = 1,
		  .map_bits = 3, .map_prev = 1 },
		{ .n = 5, .trace_cpus = 2, .trace_pages = 3, .rb_list_loop = 1, .map = 1,
		  .map_bits = 3, .map_backlog = 1, .map_prev = 1, .sm_backlog_loop = 1,
		  .sm_bad_slot = 1 },
		{ .n = 5, .trace_cpus = 2, .trace_pages = 3, .rb_commit_over = 1,
		  .rb_unmapped = 1 },
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
