// SPDX-License-Identifier: MIT
/* config.c - command line and config file (see config.h). */
#include "config.h"

#include <gio/gio.h>
#include <unistd.h>
#include <zstd.h>

#include "store.h"

#define GROUP "host-agent"

void ha_config_init(HaConfig *c)
{
	*c = (HaConfig){ .quota_mb = -1, .max_malformed = -1, .batch_mb = -1,
			 .time_probe_ms = -1, .zstd_level = HA_CONFIG_UNSET };
}

void ha_config_clear(HaConfig *c)
{
	g_free(c->socket);
	g_free(c->listen);
	g_free(c->state_dir);
	g_free(c->domain);
	g_free(c->config);
	ha_config_init(c);
}

static bool str_key(GKeyFile *kf, const char *key, char **field, GError **error)
{
	g_autoptr(GError) e = NULL;
	char *v;

	if (*field || !g_key_file_has_key(kf, GROUP, key, NULL))
		return true;
	v = g_key_file_get_string(kf, GROUP, key, &e);
	if (!v) {
		g_propagate_prefixed_error(error, g_steal_pointer(&e), "key %s: ", key);
		return false;
	}
	*field = v;
	return true;
}

/* @given: the command line set *@field, which the file then does not change */
static bool int_key(GKeyFile *kf, const char *key, gint64 *field, bool given,
		    GError **error)
{
	g_autoptr(GError) e = NULL;
	gint64 v;

	if (given || !g_key_file_has_key(kf, GROUP, key, NULL))
		return true;
	v = g_key_file_get_int64(kf, GROUP, key, &e);
	if (e) {
		g_propagate_prefixed_error(error, g_steal_pointer(&e), "key %s: ", key);
		return false;
	}
	*field = v;
	return true;
}

bool ha_config_load_file(HaConfig *c, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	gint64 mm = c->max_malformed, bm = c->batch_mb, tp = c->time_probe_ms;

	if (!c->config)
		return true;
	if (!g_key_file_load_from_file(kf, c->config, G_KEY_FILE_NONE, error))
		return false;
	if (!str_key(kf, "socket", &c->socket, error) ||
	    !str_key(kf, "listen", &c->listen, error) ||
	    !str_key(kf, "state-dir", &c->state_dir, error) ||
	    !str_key(kf, "domain-name", &c->domain, error) ||
	    !int_key(kf, "quota-mb", &c->quota_mb, c->quota_mb >= 0, error) ||
	    !int_key(kf, "max-malformed", &mm, mm >= 0, error) ||
	    !int_key(kf, "batch-mb", &bm, bm >= 0, error) ||
	    !int_key(kf, "time-probe-ms", &tp, tp >= 0, error) ||
	    !int_key(kf, "zstd-level", &c->zstd_level, c->zstd_level != HA_CONFIG_UNSET,
		     error)) {
		g_prefix_error(error, "%s: ", c->config);
		return false;
	}
	c->max_malformed = (gint)CLAMP(mm, -1, G_MAXINT);
	c->batch_mb = (gint)CLAMP(bm, -1, 1024);
	c->time_probe_ms = (gint)CLAMP(tp, -1, 3600000);
	return true;
}

bool ha_config_finish(HaConfig *c, GError **error)
{
	if (!c->domain)
		c->domain = g_strdup("default");
	if (!ha_store_name_ok(c->domain)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "domain name '%s': use 1-64 of A-Z a-z 0-9 _ . - (not starting"
			    " with '.')", c->domain);
		return false;
	}
	if (c->zstd_level != HA_CONFIG_UNSET &&
	    (c->zstd_level < ZSTD_minCLevel() || c->zstd_level > ZSTD_maxCLevel())) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "zstd level %" G_GINT64_FORMAT ": zstd's levels are %d to %d",
			    c->zstd_level, ZSTD_minCLevel(), ZSTD_maxCLevel());
		return false;
	}
	if (!c->state_dir)
		c->state_dir = geteuid() == 0 ? g_strdup("/var/lib/virtio-stackmap") :
			       g_build_filename(g_get_user_state_dir(), "virtio-stackmap", NULL);
	return true;
}

char *ha_config_db_path(const HaConfig *c)
{
	g_autofree char *file = g_strconcat(c->domain, ".db", NULL);

	return g_build_filename(c->state_dir, file, NULL);
}

void ha_config_limits(const HaConfig *c, HaLimits *ret)
{
	ha_limits_default(ret);
	if (c->quota_mb >= 0)	/* 0: no quota; unset (-1): HA_QUOTA_DEFAULT_MB */
		ret->quota_bytes = (guint64)c->quota_mb << 20;
	if (c->max_malformed >= 0)
		ret->max_malformed = (guint32)c->max_malformed;
	if (c->batch_mb > 0)
		ret->batch_bytes = (guint32)c->batch_mb << 20;
	if (c->time_probe_ms >= 0)
		ret->time_probe_ms = (guint32)MAX(c->time_probe_ms, c->time_probe_ms ? 10 : 0);
	if (c->zstd_level != HA_CONFIG_UNSET)	/* checked by ha_config_finish() */
		ret->zstd_level = (int)c->zstd_level;
}
