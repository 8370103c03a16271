/* SPDX-License-Identifier: MIT */
/*
 * store-clock.h - a boot's stored clock samples (table clock_samples, store.h), read
 * back for its guest-to-host clock map (clocksync.h). The ingest writes them
 * (store-ingest.h, ha_store_put_clock_sample()).
 */
#ifndef HA_STORE_CLOCK_H
#define HA_STORE_CLOCK_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "clocksync.h"
#include "store.h"

/* Append every clock sample of @boot (boots.id) to @ret (HaClockSample), in no
 * particular order; false with @error on a store failure. */
bool ha_store_clock_samples(HaStore *s, int64_t boot, GArray *ret, GError **error);

#endif /* HA_STORE_CLOCK_H */
