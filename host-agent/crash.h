/* SPDX-License-Identifier: MIT */
/*
 * crash.h - what the hypervisor says about how a boot ended.
 *
 * The stream alone cannot tell a crash from a lost connection: a panicking guest sends
 * no BYE, and its stream just stops (store.h: 'disconnected'). The hypervisor knows
 * better: QEMU's QMP GUEST_PANICKED event (qmp.h) or libvirt's lifecycle event
 * CRASHED (source-libvirt.c). Both end up here, and mark the domain's current boot
 * 'crashed' with the time of the event.
 *
 * "Current boot": the newest boot of the store (by last contact) that is still
 * streaming (ended IS NULL), or that was recorded 'disconnected' at or after
 * @alive_since, the time the caller first saw this instance of the hypervisor alive
 * (a QMP connection, a libvirt STARTED event): the stream and the panic event race
 * when QEMU exits on panic, and the stream may lose. A boot that ended 'clean' (BYE)
 * or that disconnected before this QEMU was seen is left alone.
 */
#ifndef HA_CRASH_H
#define HA_CRASH_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/*
 * Mark the current boot of @store crashed at @when_us (real time, microseconds).
 * @why is logged. Returns true when a boot was marked, false when there was none
 * (logged) or on a store error (logged: the caller is an event callback).
 */
bool ha_crash_mark(HaStore *store, const char *domain, int64_t when_us,
		   int64_t alive_since_us, const char *why);

#endif /* HA_CRASH_H */
