// SPDX-License-Identifier: MIT
/*
 * crc32c.c - CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Two implementations behind one entry point: the SSE4.2 crc32 instruction, chosen at
 * run time when the CPU has it and it is not slower than the tables, and slicing-by-8
 * tables, built on first use. Both continue a running CRC:
 * smp_crc32c(smp_crc32c(0, a), b) == smp_crc32c(0, a || b).
 *
 * "Not slower": an emulated CPU may offer the instruction at a cost. QEMU 7.2's TCG
 * computes it bit by bit: in a TCG guest with -cpu max the instruction took 14.4 ms
 * per MB against 3.3 ms for the tables (tests/bench/agent-cost's guest, measured with
 * a static probe in that guest). So the first call times both on the same 16 KiB and
 * keeps the instruction unless the tables took less than two thirds of its time (on
 * hardware it is 4x faster: the choice does not flip on noise there).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "proto.h"

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = crc_table[0][n];

		for (int t = 1; t < 8; t++) {
			c = crc_table[0][c & 0xff] ^ (c >> 8);
			crc_table[t][n] = c;
		}
	}
}

uint32_t smp_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_table_once, crc_table_init);
	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
			      (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
			      (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;

		lo ^= crc;
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	while (len && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

static uint32_t crc32c_resolve(uint32_t crc, const void *buf, size_t len);
static uint32_t (*crc32c_impl)(uint32_t, const void *, size_t) = crc32c_resolve;

static bool crc32c_have_hw(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}

/* The best of three runs of @fn over @buf, in ns. */
static uint64_t crc32c_time(uint32_t (*fn)(uint32_t, const void *, size_t),
			    const uint8_t *buf, size_t len)
{
	uint64_t best = UINT64_MAX;
	volatile uint32_t sink = 0;

	for (int i = 0; i < 3; i++) {
		struct timespec a, b;
		uint64_t ns;

		clock_gettime(CLOCK_MONOTONIC, &a);
		sink ^= fn(0, buf, len);
		clock_gettime(CLOCK_MONOTONIC, &b);
		ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u +
		     (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
		if (ns < best)
			best = ns;
	}
	(void)sink;
	return best;
}

/* The instruction when the CPU has it, unless the tables are clearly faster here. */
static uint32_t (*crc32c_pick(void))(uint32_t, const void *, size_t)
{
	static uint8_t probe[16384];
	uint64_t hw, sw;

	if (!crc32c_have_hw())
		return smp_crc32c_sw;
	for (size_t i = 0; i < sizeof(probe); i++)
		probe[i] = (uint8_t)(i * 131 + 7);
	(void)smp_crc32c_sw(0, probe, 64);	/* the tables are built outside the timing */
	hw = crc32c_time(crc32c_sse42, probe, sizeof(probe));
	sw = crc32c_time(smp_crc32c_sw, probe, sizeof(probe));
	return sw * 3 < hw * 2 ? smp_crc32c_sw : crc32c_sse42;
}

static uint32_t crc32c_resolve(uint32_t crc, const void *buf, size_t len)
{
	/* Racing first callers may each time and pick; either pick is right: benign. */
	__atomic_store_n(&crc32c_impl, crc32c_pick(), __ATOMIC_RELAXED);
	return __atomic_load_n(&crc32c_impl, __ATOMIC_RELAXED)(crc, buf, len);
}

uint32_t smp_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return __atomic_load_n(&crc32c_impl, __ATOMIC_RELAXED)(crc, buf, len);
}

bool smp_crc32c_hw(void)
{
	return crc32c_have_hw();
}
#else
uint32_t smp_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return smp_crc32c_sw(crc, buf, len);
}

bool smp_crc32c_hw(void)
{
	return false;
}
#endif
