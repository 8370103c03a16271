// SPDX-License-Identifier: MIT
/* fleet.c - one agent, every domain with the channel (see fleet.h). */
#include "fleet.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "libvirt-conn.h"
#include "libvirt-err.h"
#include "source.h"
#include "store.h"

typedef struct {
	HaStore *store;
	int lock_fd;
	HaLvSource *src;
} FleetDom;

struct _HaFleet {
	char *uri;
	char *state_dir;
	HaLimits limits;
	HaLvConn *lv;		/* libvirtd, reconnected by itself (libvirt-conn.h) */
	GHashTable *doms;	/* name -> FleetDom * (NULL: skipped) */
};

static void dom_free(gpointer p)
{
	FleetDom *d = p;

	if (!d)
		return;
	ha_lv_source_free(d->src);	/* records how the stream ended */
	ha_store_free(d->store);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	g_free(d);
}

static FleetDom *dom_open(HaFleet *f, const char *name, GError **error)
{
	g_autofree char *file = g_strconcat(name, ".db", NULL);
	g_autofree char *db = g_build_filename(f->state_dir, file, NULL);
	g_autofree char *lock = g_strconcat(db, ".lock", NULL);
	FleetDom *d = g_new0(FleetDom, 1);

	d->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (d->lock_fd < 0 || flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY, "%s: %s", lock,
			    d->lock_fd < 0 ? g_strerror(errno) :
			    "another host-agent is already storing this domain");
		dom_free(d);
		return NULL;
	}
	d->store = ha_store_open(db, false, error);
	if (!d->store) {
		dom_free(d);
		return NULL;
	}
	d->src = ha_lv_source_new(f->uri, name, d->store, &f->limits, name);
	if (!ha_lv_source_start(d->src, error)) {
		dom_free(d);
		return NULL;
	}
	g_message("domain %s: storing into %s", name, db);
	return d;
}

/* Serve @dom when it has the channel and is not served yet. */
static void consider(HaFleet *f, virDomainPtr dom)
{
	const char *name = virDomainGetName(dom);
	g_autoptr(GError) e = NULL;
	char *xml;
	bool has;
	FleetDom *d;

	if (!name || g_hash_table_contains(f->doms, name))
		return;
	xml = virDomainGetXMLDesc(dom, 0);
	has = xml && strstr(xml, "name='org.stackmap.0'");
	free(xml);
	if (!has)
		return;
	if (!ha_store_name_ok(name)) {
		g_warning("domain %s: not a usable store name ([A-Za-z0-9_.-], 1-64): skipped;"
			  " run host-agent --domain %s --domain-name NAME for it", name, name);
		g_hash_table_insert(f->doms, g_strdup(name), NULL);
		return;
	}
	d = dom_open(f, name, &e);
	if (!d) {
		g_warning("domain %s: %s", name, e->message);
		return;
	}
	g_hash_table_insert(f->doms, g_strdup(name), d);
}

static int on_lifecycle(virConnectPtr c, virDomainPtr dom, int event, int detail,
			void *opaque)
{
	HaFleet *f = opaque;

	if (event == VIR_DOMAIN_EVENT_DEFINED || event == VIR_DOMAIN_EVENT_STARTED) {
		consider(f, dom);
	} else if (event == VIR_DOMAIN_EVENT_UNDEFINED) {
		const char *name = virDomainGetName(dom);

		if (g_hash_table_remove(f->doms, name))
			g_message("domain %s: undefined, no longer served", name);
	}
	return 0;
}

static void on_device_added(virConnectPtr c, virDomainPtr dom, const char *alias,
			    void *opaque)
{
	consider(opaque, dom);
}

/* (Re)connected: serve every domain defined now; later ones come as events. Each
 * domain's source has its own connection and reconnects by itself. */
static bool on_connected(virConnectPtr c, void *user, GError **error)
{
	HaFleet *f = user;
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(c, &doms, 0);

	if (n < 0) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt: %s", why);
		return false;
	}
	for (int i = 0; i < n; i++) {
		consider(f, doms[i]);
		virDomainFree(doms[i]);
	}
	free(doms);
	g_message("all domains: serving %u with the stackmap channel",
		  g_hash_table_size(f->doms));
	return true;
}

HaFleet *ha_fleet_new(const char *uri, const char *state_dir, const HaLimits *limits)
{
	HaFleet *f = g_new0(HaFleet, 1);

	ha_libvirt_init();
	f->uri = g_strdup(uri);
	f->state_dir = g_strdup(state_dir);
	f->limits = *limits;
	f->lv = ha_lv_conn_new(uri, "all domains", &(HaLvConnOps){
					.lifecycle = on_lifecycle,
					.device_added = on_device_added,
					.connected = on_connected,
				}, f);
	f->doms = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, dom_free);
	return f;
}

bool ha_fleet_start(HaFleet *f, GError **error)
{
	return ha_lv_conn_start(f->lv, error);
}

void ha_fleet_free(HaFleet *f)
{
	if (!f)
		return;
	ha_lv_conn_free(f->lv);
	g_hash_table_destroy(f->doms);
	g_free(f->uri);
	g_free(f->state_dir);
	g_free(f);
}
