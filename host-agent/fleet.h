/* SPDX-License-Identifier: MIT */
/*
 * fleet.h - `host-agent --all-domains`: one agent for every libvirt domain that has
 * the org.stackmap.0 channel (CI-fleet mode).
 *
 * An HaFleet keeps its own libvirt connection to discover domains: at start it lists
 * them all, and later follows DEFINED/STARTED and DEVICE_ADDED events (a domain
 * defined or given the channel while the agent runs) and UNDEFINED (it goes away).
 * Each domain with the channel gets its own store, <state-dir>/<name>.db, locked like
 * a single-domain agent's (one writer per store), and its own HaLvSource (source.h),
 * which follows that domain's lifecycle. A domain whose name is not a usable store
 * name ([A-Za-z0-9_.-], 1-64) is skipped with a log line.
 */
#ifndef HA_FLEET_H
#define HA_FLEET_H

#include <glib.h>
#include <stdbool.h>

#include "ingest.h"

typedef struct _HaFleet HaFleet;

HaFleet *ha_fleet_new(const char *uri, const char *state_dir, const HaLimits *limits);
/* Connects, lists the domains and starts serving them; false with @error when the
 * first connection fails. */
bool ha_fleet_start(HaFleet *f, GError **error);
void ha_fleet_free(HaFleet *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaFleet, ha_fleet_free)

#endif /* HA_FLEET_H */
