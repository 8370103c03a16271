// SPDX-License-Identifier: MIT
/* fuzz-page-seeds DIR: seed inputs for fuzz-page (a cpu byte, then a 6.1 page). */
#include <stdio.h>
#include <string.h>

#include "guest-formats.h"
#include "ringpage.h"

static void common(uint8_t *d, uint16_t type, uint8_t flags, int pid)
{
	memcpy(d, &type, 2);
	d[2] = flags;
	d[3] = 0;
	memcpy(d + 4, &pid, 4);
}

int main(int argc, char **argv)
{
	static uint8_t page[4096];
	uint8_t km[52] = { 0 }, sid[12], ks[16 + 8 * 8] = { 0 };
	struct ringpage p;
	int32_t n = 8;
	uint32_t id = (3u << 20) | 5u;

	if (argc != 2)
		return 2;
	common(km, GF_ID_KMALLOC, 0, 7);
	common(sid, GF_ID_STACK_ID, 0, 7);
	memcpy(sid + 8, &id, 4);
	common(ks, GF_ID_KERNEL_STACK, 8, 7);
	memcpy(ks + 8, &n, 4);
	for (int seed = 0; seed < 3; seed++) {
		char path[4096];
		uint32_t len;
		FILE *f;

		ringpage_init(&p, page, sizeof(page));
		ringpage_reset(&p, 1000);
		for (int i = 0; i < 5 + seed * 20; i++) {
			uint64_t ts = 1000 + (uint64_t)i * (seed == 2 ? (1ull << 28) : 100);

			ringpage_add(&p, ts, km, sizeof(km));
			if (seed == 1 && i % 3 == 0) {
				km[2] = 8;
				ringpage_add(&p, ts + 1, km, sizeof(km));
				ringpage_add(&p, ts + 2, ks, sizeof(ks));
				km[2] = 0;
			}
			ringpage_add(&p, ts + 3, sid, sizeof(sid));
		}
		len = ringpage_finish(&p);
		snprintf(path, sizeof(path), "%s/seed-%d", argv[1], seed);
		f = fopen(path, "wb");
		if (!f)
			return 1;
		fputc(seed, f);
		fwrite(page, 1, len, f);
		fclose(f);
	}
	return 0;
}
