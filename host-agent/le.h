/* SPDX-License-Identifier: MIT */
/*
 * le.h - little-endian integers out of bytes that may be unaligned: a guest's wire
 * data, its memory in a dump. One copy for every reader of them.
 */
#ifndef HA_LE_H
#define HA_LE_H

#include <glib.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t ha_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return GUINT32_FROM_LE(v);
}

static inline uint64_t ha_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return GUINT64_FROM_LE(v);
}

#endif /* HA_LE_H */
