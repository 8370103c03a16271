/* SPDX-License-Identifier: MIT */
/*
 * config.h - what the command line and the optional config file set.
 *
 * The config file is a GKeyFile with one group, [host-agent], whose keys are the long
 * option names (socket, listen, state-dir, domain-name, quota-mb, max-malformed,
 * batch-mb, time-probe-ms, zstd-level). A command-line option overrides the file.
 */
#ifndef HA_CONFIG_H
#define HA_CONFIG_H

#include <glib.h>
#include <stdbool.h>

#include "ingest.h"

typedef struct {
	char *socket;
	char *listen;
	char *state_dir;
	char *domain;
	char *config;
	gint64 quota_mb;	/* -1: unset */
	gint max_malformed;	/* -1: unset */
	gint batch_mb;		/* -1: unset */
	gint time_probe_ms;	/* -1: unset; 0: no clock probes */
	gint64 zstd_level;	/* HA_CONFIG_UNSET: unset (levels go below 0) */
} HaConfig;

#define HA_CONFIG_UNSET G_MININT64

void ha_config_init(HaConfig *c);
void ha_config_clear(HaConfig *c);

/* Fill unset fields from @c->config (when set). False with @error when the file
 * cannot be read or a key has the wrong type; each key reports its own error. */
bool ha_config_load_file(HaConfig *c, GError **error);

/* Defaults for what is still unset; validates the domain name and the zstd level. */
bool ha_config_finish(HaConfig *c, GError **error);

/* The database path for the domain: <state-dir>/<domain>.db (g_free). */
char *ha_config_db_path(const HaConfig *c);

void ha_config_limits(const HaConfig *c, HaLimits *ret);

#endif /* HA_CONFIG_H */
