/* SPDX-License-Identifier: MIT */
/*
 * store-crash.h - the boots row a hypervisor's panic event marks (crash.h has the
 * rule for which boot that is). Table boots (store.h).
 */
#ifndef HA_STORE_CRASH_H
#define HA_STORE_CRASH_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/*
 * The domain's current boot (crash.h): the newest by last contact that is still
 * streaming, or that was recorded 'disconnected' at or after @alive_since_us.
 * *ret_boot 0 when there is none; false with @error on a store failure.
 */
bool ha_store_crash_current_boot(HaStore *s, int64_t alive_since_us, int64_t *ret_boot,
				 GError **error);

/* @boot ended 'crashed' at @when_us (real time, microseconds). */
bool ha_store_crash_mark_boot(HaStore *s, int64_t boot, int64_t when_us, GError **error);

#endif /* HA_STORE_CRASH_H */
