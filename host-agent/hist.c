// SPDX-License-Identifier: MIT
/* hist.c - see hist.h. */
#include "hist.h"

static void put_varint(GByteArray *out, uint64_t v)
{
	uint8_t b[10];
	unsigned int n = 0;

	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	g_byte_array_append(out, b, n);
}

static bool get_varint(const uint8_t *buf, size_t len, size_t *off, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned int shift = 0; shift < 64 && *off < len; shift += 7) {
		uint8_t b = buf[(*off)++];

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

void ha_hist_init(GByteArray *out, bool ranges)
{
	uint8_t b = ranges ? 1 : 0;

	g_byte_array_set_size(out, 0);
	g_byte_array_append(out, &b, 1);
}

void ha_hist_put(GByteArray *out, const HaHistEnt *e, uint64_t base)
{
	bool ranges = out->len && out->data[0] == 1;

	uint64_t key = e->kind == HA_HIST_NONE ? 0 :
		       e->kind == HA_HIST_ID ? 2 * (uint64_t)e->id + 2 :
					       2 * (uint64_t)e->id + 1;

	put_varint(out, key);
	put_varint(out, e->count);
	if (ranges) {
		put_varint(out, e->ts_min - base);
		put_varint(out, e->ts_max - e->ts_min);
	}
}

int ha_hist_next(const uint8_t *buf, size_t len, size_t *off, uint64_t base,
		 uint64_t top, HaHistEnt *ret)
{
	uint64_t key, count, lo = 0, span = top - base;
	bool ranges;

	if (len == 0 || buf[0] > 1)
		return len == 0 ? 0 : -1;
	ranges = buf[0] == 1;
	if (*off == 0)
		*off = 1;
	if (*off >= len)
		return 0;
	if (!get_varint(buf, len, off, &key) || !get_varint(buf, len, off, &count) ||
	    (ranges && (!get_varint(buf, len, off, &lo) || !get_varint(buf, len, off, &span))) ||
	    key > (uint64_t)INT64_MAX)
		return -1;
	if (key == 0)
		*ret = (HaHistEnt){ .kind = HA_HIST_NONE, .count = count };
	else if (key & 1)
		*ret = (HaHistEnt){ .kind = HA_HIST_FULL, .id = (int64_t)(key >> 1), .count = count };
	else
		*ret = (HaHistEnt){ .kind = HA_HIST_ID, .id = (int64_t)(key / 2 - 1), .count = count };
	ret->ts_min = base + lo;
	ret->ts_max = ret->ts_min + span;
	return 1;
}
