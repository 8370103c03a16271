/* SPDX-License-Identifier: MIT */
/*
 * clickhouse-rows.h - RowBinary rows and their batches, shared by the shippers
 * (clickhouse-ship.c: a boot's snapshot; clickhouse-events.c: its events).
 *
 * RowBinary: every column in the table's order, integers little-endian at their
 * width, String as a LEB128 length and its bytes. A batch is one table's rows, sent
 * as one "INSERT INTO t FORMAT RowBinary" once it holds HA_CH_FLUSH_BYTES, so that a
 * shipper holds at most that much whatever the store's size.
 */
#ifndef HA_CLICKHOUSE_ROWS_H
#define HA_CLICKHOUSE_ROWS_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "clickhouse.h"

#define HA_CH_FLUSH_BYTES	(1u << 20)	/* one INSERT per MiB of rows */

static inline void ha_rb_u64(GByteArray *b, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	g_byte_array_append(b, le, 8);
}

static inline void ha_rb_u8(GByteArray *b, uint8_t v)
{
	g_byte_array_append(b, &v, 1);
}

static inline void ha_rb_u32(GByteArray *b, uint32_t v)
{
	uint8_t le[4];

	for (int i = 0; i < 4; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	g_byte_array_append(b, le, 4);
}

static inline void ha_rb_strn(GByteArray *b, const char *s, size_t n)
{
	size_t v = n;

	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		if (v)
			c |= 0x80;
		g_byte_array_append(b, &c, 1);
	} while (v);
	g_byte_array_append(b, (const guint8 *)s, (guint)n);
}

static inline void ha_rb_str(GByteArray *b, const char *s)
{
	ha_rb_strn(b, s, strlen(s));
}

typedef struct {
	HaCh *ch;
	const char *table;
	GByteArray *rows;
	uint64_t n;
	HaShipStats *st;	/* rows and bytes confirmed are added to it */
} HaChBatch;

/* Send the batch's rows (none: nothing); false with @error, the rows kept. */
bool ha_ch_batch_flush(HaChBatch *b, GError **error);
/* One more row appended: sent when the batch is full. */
bool ha_ch_batch_row_done(HaChBatch *b, GError **error);

/* A version above every one this watermark group has handed out, recorded in @kf
 * (the caller saves it before sending rows with it). */
uint64_t ha_ch_next_version(GKeyFile *kf, const char *group);

/*
 * The events of @boot (boots.id of @store) not yet confirmed in
 * ClickHouse, or changed since (clickhouse.h): rows into `events` and their stacks
 * into `event_stacks`, the watermark keys of @group in @kf saved to @mark after each
 * confirmed window.
 */
bool ha_ch_ship_events(HaCh *c, HaStore *store, const char *host, const char *domain,
		       int64_t boot, GKeyFile *kf, const char *group, const char *mark,
		       HaShipStats *st, GError **error);

#endif /* HA_CLICKHOUSE_ROWS_H */
