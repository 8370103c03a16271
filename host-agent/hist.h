/* SPDX-License-Identifier: MIT */
/*
 * hist.h - how many traced events had which stack, per boot (store table
 * stack_counts), and the keys that name a stack there.
 *
 * The ingest adds each committed batch's counts to the boot's rows (count, and the
 * time range of those events, which resolution needs: a stack_id resolves through
 * the epoch in effect at its events' time, report.h). `report top` reads these rows
 * and never decodes pages.
 *
 * Key: 0 no stack; 2*(gen << 31 | id) + 2 the map stack_id `id` in tag generation
 * `gen` (epoch >> 11 as the ingest estimated it, so that ids of epochs 2048 apart,
 * which share a tag, keep separate rows and time ranges); 2*n + 1 fullstacks row n.
 * Row 0 is never a fullstacks row (SQLite numbers them from 1): its key,
 * HA_HIST_KEY_REFUSED, counts the events whose stack the boot's row limits refused
 * (a full stack not stored, or a key beyond the stack_counts rows, ingest.h).
 */
#ifndef HA_HIST_H
#define HA_HIST_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
	HA_HIST_NONE,
	HA_HIST_ID,
	HA_HIST_FULL,
} HaHistKind;

typedef struct {
	HaHistKind kind;
	int64_t id;		/* gen << 31 | stack_id, or fullstacks.id */
	uint64_t count;
	uint64_t ts_min;
	uint64_t ts_max;
	bool pending;		/* reports only: events still waiting for their stack */
} HaHistEnt;

#define HA_HIST_KEY_REFUSED	UINT64_C(1)

static inline uint64_t ha_hist_key(const HaHistEnt *e)
{
	return e->kind == HA_HIST_NONE ? 0 :
	       e->kind == HA_HIST_ID ? 2 * (uint64_t)e->id + 2 : 2 * (uint64_t)e->id + 1;
}

/* Kind and id of @key (count and times left untouched). */
static inline void ha_hist_from_key(uint64_t key, HaHistEnt *ret)
{
	ret->kind = key == 0 ? HA_HIST_NONE : (key & 1) ? HA_HIST_FULL : HA_HIST_ID;
	ret->id = key == 0 ? 0 : (key & 1) ? (int64_t)(key >> 1) : (int64_t)(key / 2 - 1);
}

#endif /* HA_HIST_H */
