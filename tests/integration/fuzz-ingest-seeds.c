// SPDX-License-Identifier: MIT
/* fuzz-ingest-seeds DIR: seed inputs for fuzz-ingest (type, u16 length, payload). */
#include <stdio.h>
#include <string.h>

#include "guest-formats.h"
#include "proto.h"
#include "ringpage.h"

static void rec(FILE *f, uint8_t type, const uint8_t *p, size_t len)
{
	fputc(type, f);
	fputc((int)(len & 0xff), f);
	fputc((int)(len >> 8), f);
	fwrite(p, 1, len, f);
}

int main(int argc, char **argv)
{
	static uint8_t page[4096], buf[8192];
	uint8_t km[52] = { 0 }, sid[12] = { 0 };
	uint16_t t;
	int32_t pid = 5;
	uint64_t ips[3] = { 0xffffffff81000010ull, 0xffffffff81000020ull, 0xffffffff81000030ull };
	struct ringpage rp;
	char path[4096];
	uint32_t len, id = 5;
	long n;
	FILE *f;

	if (argc != 2)
		return 2;
	snprintf(path, sizeof(path), "%s/seed-0", argv[1]);
	f = fopen(path, "wb");
	if (!f)
		return 1;
	t = GF_ID_KMALLOC;
	memcpy(km, &t, 2);
	memcpy(km + 4, &pid, 4);
	t = GF_ID_STACK_ID;
	memcpy(sid, &t, 2);
	memcpy(sid + 4, &pid, 4);
	memcpy(sid + 8, &id, 4);
	ringpage_init(&rp, page, sizeof(page));
	ringpage_reset(&rp, 100);
	for (int i = 0; i < 10; i++) {
		ringpage_add(&rp, 100 + (uint64_t)i * 50, km, sizeof(km));
		ringpage_add(&rp, 110 + (uint64_t)i * 50, sid, sizeof(sid));
	}
	len = ringpage_finish(&rp);
	n = smp_delta_put_stack(buf, sizeof(buf), id, 1, ips, 3);
	rec(f, SMP_STACKS, buf, (size_t)n);
	n = smp_page_encode(&(struct smp_page){ .cpu = 1, .data = page, .data_len = len },
			    buf, sizeof(buf));
	rec(f, SMP_PAGE, buf, (size_t)n);
	n = smp_delta_put_epoch(buf, sizeof(buf), 1, 1000);
	rec(f, SMP_EPOCH, buf, (size_t)n);
	n = smp_bye_encode(0, buf, sizeof(buf));
	rec(f, SMP_BYE, buf, (size_t)n);
	if (fclose(f) != 0)
		return 1;

	/* Harness commands (type 0, fuzz-ingest.c): seq edges, cut FORMATs, HELLOs
	 * that change the geometry, between valid frames. */
	snprintf(path, sizeof(path), "%s/seed-1", argv[1]);
	f = fopen(path, "wb");
	if (!f)
		return 1;
	for (uint8_t e = 0; e < 13; e++) {
		uint8_t cmd[2] = { 2, e };

		rec(f, 0, cmd, sizeof(cmd));
		n = smp_delta_put_epoch(buf, sizeof(buf), 1, 1000);
		rec(f, SMP_EPOCH, buf, (size_t)n);
	}
	for (uint8_t k = 0; k < 5; k++) {
		uint8_t cmd[5] = { 1, k, (uint8_t)(7 * k + 3), 0, k & 1 ? 2 : 0 };

		rec(f, 0, cmd, sizeof(cmd));
	}
	{
		uint8_t geo[][9] = {
			{ 0, 1, 0x80, 0x80, 0x80, 0x80, 0, 0, 0 },	/* big-endian pages */
			{ 0, 0, 1, 0x80, 0x80, 0x80, 0, 0, 0 },		/* page size 8192 */
			{ 0, 0, 0, 3, 0x80, 0x80, 0, 0, 0 },		/* 4 CPUs */
			{ 0, 0, 0, 0x80, 12, 0x80, 0, 0, 0 },		/* map bits 12 */
			{ 0, 0, 0, 0x80, 0x80, 0x80, 0, 0, 0 },		/* the same again */
			{ 0, 0, 0, 0x80, 0x80, 0x80, 1, 1, 0 },		/* another stream */
		};

		for (size_t i = 0; i < sizeof(geo) / sizeof(geo[0]); i++) {
			rec(f, 0, geo[i], sizeof(geo[i]));
			n = smp_page_encode(&(struct smp_page){ .cpu = 0, .data = page,
					    .data_len = len }, buf, sizeof(buf));
			rec(f, SMP_PAGE, buf, (size_t)n);
		}
	}
	return fclose(f) == 0 ? 0 : 1;
}
