/* SPDX-License-Identifier: MIT */
/*
 * wire.h - on-wire offsets and little-endian load/store helpers (internal to proto/).
 *
 * Every multi-byte field is loaded and stored through these helpers, byte by byte or
 * through memcpy, so decoding never depends on alignment or on the host's byte order.
 */
#ifndef SMP_WIRE_H
#define SMP_WIRE_H

#include <stdint.h>
#include <string.h>

#include "proto.h"

/* Frame header offsets (PROTOCOL.md section 2). */
#define SMP_OFF_MAGIC		0
#define SMP_OFF_MAJOR		4
#define SMP_OFF_MINOR		5
#define SMP_OFF_TYPE		6
#define SMP_OFF_FLAGS		7
#define SMP_OFF_LEN		8
#define SMP_OFF_RESERVED	12
#define SMP_OFF_SEQ		16
#define SMP_OFF_CRC		24
#define SMP_OFF_HCRC		28

_Static_assert(SMP_OFF_HCRC + 4 == SMP_HDR_SIZE, "header is 32 bytes");
_Static_assert(SMP_HELLO_FIXED == 64, "HELLO fixed part");
_Static_assert(SMP_DELTA_EPOCH_SIZE == SMP_DELTA_HDR_SIZE + 2 * 8, "epoch record");
_Static_assert(SMP_BIN_ENTRY_SIZE == SMP_DELTA_HDR_SIZE, "delta = bin v1 entry");

static inline uint16_t smp_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t smp_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t smp_get64(const uint8_t *p)
{
	return (uint64_t)smp_get32(p) | (uint64_t)smp_get32(p + 4) << 32;
}

static inline uint32_t smp_get32be(const uint8_t *p)
{
	return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[0] << 24;
}

static inline uint64_t smp_get64be(const uint8_t *p)
{
	return (uint64_t)smp_get32be(p) << 32 | (uint64_t)smp_get32be(p + 4);
}

static inline void smp_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void smp_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void smp_put64(uint8_t *p, uint64_t v)
{
	smp_put32(p, (uint32_t)v);
	smp_put32(p + 4, (uint32_t)(v >> 32));
}

#endif /* SMP_WIRE_H */
