// SPDX-License-Identifier: MIT
/*
 * crc32c.c - CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Two implementations behind one entry point: the SSE4.2 crc32 instruction, chosen at
 * run time when the CPU has it, and slicing-by-8 tables, built on first use. Both
 * continue a running CRC: smp_crc32c(smp_crc32c(0, a), b) == smp_crc32c(0, a || b).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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

static uint32_t crc32c_resolve(uint32_t crc, const void *buf, size_t len)
{
	/* Racing first callers all store the same pointer: benign. */
	__atomic_store_n(&crc32c_impl, crc32c_have_hw() ? crc32c_sse42 : smp_crc32c_sw,
			 __ATOMIC_RELAXED);
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
