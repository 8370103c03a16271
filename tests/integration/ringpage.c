// SPDX-License-Identifier: MIT
/* ringpage.c - see ringpage.h. */
#include "ringpage.h"
#include "guest-formats.h"

#include <string.h>

#define HDR		16u
#define ALIGN4(x)	(((x) + 3u) & ~3u)
#define SMALL_MAX	(4u * 28u)
#define TS_BITS		27

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void ringpage_init(struct ringpage *p, uint8_t *buf, uint32_t page_size)
{
	memset(p, 0, sizeof(*p));
	p->buf = buf;
	p->page_size = page_size;
}

void ringpage_reset(struct ringpage *p, uint64_t ts)
{
	memset(p->buf, 0, p->page_size);
	p->used = 0;
	p->page_ts = ts;
	p->last_ts = ts;
	p->nr_events = 0;
}

bool ringpage_add(struct ringpage *p, uint64_t ts, const void *data, uint32_t len)
{
	uint64_t delta = ts - p->last_ts;
	uint32_t need_ext = delta >= (1ull << TS_BITS) ? 8u : 0u;
	uint32_t evlen = len > SMALL_MAX ? 8u + ALIGN4(len) : 4u + ALIGN4(len ? len : 1);
	uint8_t *w;

	if (HDR + p->used + need_ext + evlen > p->page_size)
		return false;
	w = p->buf + HDR + p->used;
	if (need_ext) {
		put32(w, 30u | (uint32_t)((delta & ((1u << TS_BITS) - 1)) << 5));
		put32(w + 4, (uint32_t)(delta >> TS_BITS));
		w += 8;
		delta = 0;
	}
	if (len > SMALL_MAX) {
		put32(w, 0u | (uint32_t)(delta << 5));
		put32(w + 4, ALIGN4(len) + 4u);
		memcpy(w + 8, data, len);
	} else {
		put32(w, (ALIGN4(len ? len : 1) / 4u) | (uint32_t)(delta << 5));
		memcpy(w + 4, data, len);
	}
	p->used += need_ext + evlen;
	p->last_ts = ts;
	p->nr_events++;
	return true;
}

uint32_t ringpage_finish(struct ringpage *p)
{
	put64(p->buf, p->page_ts);
	put64(p->buf + 8, p->used);
	return HDR + p->used;
}

uint32_t ringpage_one_kmalloc(uint8_t *buf, uint32_t page_size, uint64_t ts)
{
	uint8_t km[52] = { 0 };
	uint16_t type = GF_ID_KMALLOC;
	struct ringpage rp;

	memcpy(km, &type, 2);
	ringpage_init(&rp, buf, page_size);
	ringpage_reset(&rp, ts);
	ringpage_add(&rp, ts, km, sizeof(km));
	return ringpage_finish(&rp);
}
