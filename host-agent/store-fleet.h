/* SPDX-License-Identifier: MIT */
/*
 * store-fleet.h - what the ClickHouse shipper (clickhouse.h) reads of a domain's store.
 *
 * Tables boots, streams, stacks, epochs, texts, fullstacks, chunks, lost and stats
 * (store.h), read only; the shipper reads each boot inside one read transaction
 * (ha_store_read_begin()) so that its numbers are of one moment. Each call returns
 * false with @error on a store failure; @boot is boots.id. Callbacks must not call the
 * store.
 */
#ifndef HA_STORE_FLEET_H
#define HA_STORE_FLEET_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Every boot's id, ascending, appended to @ret (int64_t). */
bool ha_store_fleet_boot_ids(HaStore *s, GArray *ret, GError **error);

/* What can change an event of the boot already sent (clickhouse-events.c). */
typedef struct {
	char *ended;		/* how the boot ended, "" while it streams */
	int64_t stacks;		/* rows in stacks, epochs, texts and fullstacks */
	int64_t epochs;
	int64_t texts;
	int64_t fullstacks;
	GBytes *pair_state;	/* pair.h, empty when none */
	GBytes *uuid;		/* the guest's boot_id (16 bytes), empty when none */
	int64_t start_us;	/* host real time of the first contact */
	uint64_t first_ts;	/* guest time of its first stored event, 0: none */
} HaStoreFleetBoot;

void ha_store_fleet_boot_clear(HaStoreFleetBoot *b);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HaStoreFleetBoot, ha_store_fleet_boot_clear)

/* @boot's row into @ret (cleared by the caller); *ret_found false (and @ret zeros,
 * no strings) when there is none. */
bool ha_store_fleet_boot(HaStore *s, int64_t boot, bool *ret_found, HaStoreFleetBoot *ret,
			 GError **error);

/* The CPUs (uint32_t, ascending) that have stored pages, appended to @ret. */
bool ha_store_fleet_cpus(HaStore *s, int64_t boot, GArray *ret, GError **error);
/* How many pages @cpu has stored. */
bool ha_store_fleet_cpu_pages(HaStore *s, int64_t boot, uint32_t cpu, uint64_t *ret,
			      GError **error);

/* The latest LOST counters of each (stream, CPU), by the guest's stream_id then CPU:
 * overrun, commit_overrun, dropped and read events in @v. */
typedef void (*HaStoreLostFn)(uint64_t stream_id, uint32_t cpu, const uint64_t v[4],
			      void *user);
bool ha_store_fleet_lost(HaStore *s, int64_t boot, HaStoreLostFn fn, void *user,
			 GError **error);

/* The latest value of each STATS key of each stream, by stream_id then key. */
typedef void (*HaStoreStatFn)(uint64_t stream_id, uint32_t key, int64_t value, void *user);
bool ha_store_fleet_stats(HaStore *s, int64_t boot, HaStoreStatFn fn, void *user,
			  GError **error);

#endif /* HA_STORE_FLEET_H */
