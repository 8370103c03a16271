// SPDX-License-Identifier: MIT
/*
 * attach.c - hot-plug the stackmap channel into a libvirt domain (see attach.h).
 *
 * Before it changes anything, attach reads the domain's XML (live when it runs, and its
 * configuration when it has one) for its virtio-serial controllers and the ports their
 * devices take. libvirt puts a hot-plugged channel on a free port and, when there is
 * none, adds a controller for it: in the configuration that is what the user wants to
 * hear about (it appears at the next start), but a controller cannot be hot-plugged, so
 * on a running domain the attach fails and libvirt's record of the live domain keeps the
 * controller it added (QEMU never had it). So a running domain without a free port is
 * refused here, with the step that makes room, and a controller added to the
 * configuration is reported.
 */
#include "attach.h"

#include <gio/gio.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdlib.h>
#include <string.h>

#include "libvirt-err.h"

/* libvirt's number of ports of a virtio-serial controller without ports=. */
#define VS_DEFAULT_PORTS	31
/* Port 0 is the virtio console's; libvirt gives a channel port 1 or above. */
#define VS_FIRST_CHANNEL_PORT	1

const char ha_channel_xml[] =
	"<channel type='unix'>\n"
	"  <source mode='bind'/>\n"
	"  <target type='virtio' name='org.stackmap.0'/>\n"
	"</channel>\n";

typedef struct {
	unsigned int index;
	unsigned int ports;	/* VS_DEFAULT_PORTS when the XML says nothing */
	bool ports_set;		/* the XML has ports= */
	unsigned int taken;	/* channel ports (>= 1, < ports) devices are on */
} VsController;

/* The virtio-serial controllers of one XML description of a domain. */
typedef struct {
	GArray *ctl;		/* VsController */
	GArray *addr;		/* guint64: controller << 32 | port, of every device */
} VsInfo;

static void vs_info_clear(VsInfo *vi)
{
	g_clear_pointer(&vi->ctl, g_array_unref);
	g_clear_pointer(&vi->addr, g_array_unref);
}

static const char *attr(const char **names, const char **values, const char *name)
{
	for (; *names; names++, values++)
		if (strcmp(*names, name) == 0)
			return *values;
	return NULL;
}

/* A decimal attribute; @def when absent, false when it is not a number. */
static bool attr_uint(const char **names, const char **values, const char *name,
		      unsigned int def, unsigned int *ret)
{
	const char *v = attr(names, values, name);
	guint64 n;

	if (!v) {
		*ret = def;
		return true;
	}
	/* libvirt writes ports and indexes in decimal, addresses' port too. */
	if (!g_ascii_string_to_unsigned(v, 10, 0, G_MAXUINT32, &n, NULL))
		return false;
	*ret = (unsigned int)n;
	return true;
}

static void vs_start(GMarkupParseContext *ctx, const char *element, const char **names,
		     const char **values, gpointer user, GError **error)
{
	VsInfo *vi = user;
	const char *type = attr(names, values, "type");

	if (!type || strcmp(type, "virtio-serial") != 0)
		return;
	if (strcmp(element, "controller") == 0) {
		VsController c = { 0 };

		c.ports_set = attr(names, values, "ports") != NULL;
		if (!attr_uint(names, values, "index", 0, &c.index) ||
		    !attr_uint(names, values, "ports", VS_DEFAULT_PORTS, &c.ports)) {
			g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
				    "a virtio-serial controller with an unreadable index or"
				    " ports");
			return;
		}
		g_array_append_val(vi->ctl, c);
	} else if (strcmp(element, "address") == 0) {
		unsigned int ctl, port;
		guint64 a;

		if (!attr_uint(names, values, "controller", 0, &ctl) ||
		    !attr_uint(names, values, "port", 0, &port) || !attr(names, values, "port"))
			return;	/* no port yet: libvirt assigns one */
		a = (guint64)ctl << 32 | port;
		g_array_append_val(vi->addr, a);
	}
}

/* Read the virtio-serial controllers and taken ports of @xml (libvirt's own XML). */
static bool vs_scan(const char *xml, VsInfo *vi, GError **error)
{
	static const GMarkupParser parser = { .start_element = vs_start };
	GMarkupParseContext *ctx;
	bool ok;

	vi->ctl = g_array_new(false, true, sizeof(VsController));
	vi->addr = g_array_new(false, false, sizeof(guint64));
	ctx = g_markup_parse_context_new(&parser, 0, vi, NULL);
	ok = g_markup_parse_context_parse(ctx, xml, -1, error) &&
	     g_markup_parse_context_end_parse(ctx, error);
	g_markup_parse_context_free(ctx);
	if (!ok)
		return false;
	for (guint i = 0; i < vi->ctl->len; i++) {
		VsController *c = &g_array_index(vi->ctl, VsController, i);
		g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);

		for (guint j = 0; j < vi->addr->len; j++) {
			guint64 a = g_array_index(vi->addr, guint64, j);
			unsigned int port = (unsigned int)a;

			if ((a >> 32) != c->index || port < VS_FIRST_CHANNEL_PORT ||
			    port >= c->ports)
				continue;
			if (g_hash_table_add(seen, GUINT_TO_POINTER(port)))
				c->taken++;
		}
	}
	return true;
}

static unsigned int vs_channel_ports(const VsController *c)
{
	return c->ports > VS_FIRST_CHANNEL_PORT ? c->ports - VS_FIRST_CHANNEL_PORT : 0;
}

static unsigned int vs_free(const VsInfo *vi)
{
	unsigned int n = 0;

	for (guint i = 0; i < vi->ctl->len; i++) {
		const VsController *c = &g_array_index(vi->ctl, VsController, i);

		n += vs_channel_ports(c) - MIN(c->taken, vs_channel_ports(c));
	}
	return n;
}

static bool vs_has(const VsInfo *vi, unsigned int index)
{
	for (guint i = 0; i < vi->ctl->len; i++)
		if (g_array_index(vi->ctl, VsController, i).index == index)
			return true;
	return false;
}

static unsigned int vs_next_index(const VsInfo *vi)
{
	unsigned int n = 0;

	for (guint i = 0; i < vi->ctl->len; i++)
		n = MAX(n, g_array_index(vi->ctl, VsController, i).index + 1);
	return n;
}

/* "index 0 (ports='3'): 2 of 2 channel ports taken; ..." (g_free). */
static char *vs_describe(const VsInfo *vi)
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < vi->ctl->len; i++) {
		const VsController *c = &g_array_index(vi->ctl, VsController, i);

		if (i)
			g_string_append(s, "; ");
		g_string_append_printf(s, "index %u", c->index);
		if (c->ports_set)
			g_string_append_printf(s, " (ports='%u')", c->ports);
		g_string_append_printf(s, ": %u of %u channel ports taken",
				       MIN(c->taken, vs_channel_ports(c)), vs_channel_ports(c));
	}
	return g_string_free(s, false);
}

/*
 * The controllers of @after that @before has not, as "<controller
 * type='virtio-serial' index='1'/>" elements (g_free), or NULL when there is none.
 */
static char *vs_added(const VsInfo *before, const VsInfo *after)
{
	GString *s = NULL;

	for (guint i = 0; i < after->ctl->len; i++) {
		unsigned int index = g_array_index(after->ctl, VsController, i).index;

		if (vs_has(before, index))
			continue;
		if (!s)
			s = g_string_new(NULL);
		else
			g_string_append(s, ", ");
		g_string_append_printf(s, "<controller type='virtio-serial' index='%u'/>", index);
	}
	return s ? g_string_free(s, false) : NULL;
}

/* The domain's XML (@flags as virDomainGetXMLDesc), scanned into @vi. */
static char *get_xml(virDomainPtr dom, const char *name, unsigned int flags, VsInfo *vi,
		     GError **error)
{
	g_autoptr(GError) e = NULL;
	char *xml = virDomainGetXMLDesc(dom, flags);

	if (!xml) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "domain %s: %s", name, why);
		return NULL;
	}
	if (vi && !vs_scan(xml, vi, &e)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "domain %s: cannot read libvirt's XML of it: %s", name, e->message);
		vs_info_clear(vi);
		free(xml);
		return NULL;
	}
	return xml;
}

/*
 * The <channel> element of @xml whose target is org.stackmap.0 (g_free), or NULL.
 * @xml is libvirt's own formatting of the domain (single quotes, one element per
 * line), not arbitrary input.
 */
static char *find_channel(const char *xml)
{
	const char *t = strstr(xml, "name='org.stackmap.0'");
	const char *start, *end;

	if (!t)
		return NULL;
	for (start = t; start > xml && strncmp(start, "<channel", 8) != 0; start--)
		;
	end = strstr(t, "</channel>");
	if (strncmp(start, "<channel", 8) != 0 || !end)
		return NULL;
	return g_strndup(start, (gsize)(end + strlen("</channel>") - start));
}

/* Attach to or detach from the live domain and/or its config, as present. */
static bool change(virDomainPtr dom, const char *name, bool attach, const char *dev,
		   unsigned int flags, GError **error)
{
	int r = attach ? virDomainAttachDeviceFlags(dom, dev, flags) :
			 virDomainDetachDeviceFlags(dom, dev, flags);

	if (r < 0) {
		/* Before any other libvirt call (libvirt-err.h). */
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s %s: %s",
			    attach ? "attach to" : "detach from", name, why);
		return false;
	}
	return true;
}

/* A running domain without a free port: what to do, in @error. */
static void no_free_port(const char *name, const VsInfo *live, const VsInfo *conf,
			 GError **error)
{
	g_autofree char *desc = vs_describe(live);
	const VsController *c0 = &g_array_index(live->ctl, VsController, 0);
	g_autofree char *raise = NULL;

	if (c0->ports_set)
		raise = g_strdup_printf("raise ports='%u' of <controller type='virtio-serial'"
					" index='%u'>, or ", c0->ports, c0->index);
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
		    "domain %s has no free port on its virtio-serial controllers (%s), and"
		    " controllers cannot be hot-plugged; nothing was changed.%s Make room in"
		    " its configuration (virsh edit %s: %sadd <controller"
		    " type='virtio-serial' index='%u'/> inside <devices>), restart the domain"
		    " (virsh shutdown %s, virsh start %s), then attach again",
		    name, desc,
		    conf && vs_free(conf) ? " Its configuration has a free port already: it"
		    " takes effect when the domain restarts." : "",
		    name, raise ? raise : "", vs_next_index(conf ? conf : live), name, name);
}

bool ha_attach(const char *uri, const char *name, bool attach, char **ret_note,
	       GError **error)
{
	virConnectPtr c;
	virDomainPtr dom = NULL;
	g_autofree char *live = NULL, *conf = NULL;
	g_autofree char *live_ch = NULL, *conf_ch = NULL;
	VsInfo live_vs = { 0 }, conf_vs = { 0 };
	bool active, persistent, ok = false;

	ha_lv_quiet();
	c = virConnectOpen(uri);
	if (!c) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt %s: %s",
			    uri ? uri : "(default URI)", why);
		return false;
	}
	dom = virDomainLookupByName(c, name);
	if (!dom) {
		g_autofree char *why = ha_lv_error();

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "domain %s: %s", name,
			    why);
		goto out;
	}
	active = virDomainIsActive(dom) == 1;
	persistent = virDomainIsPersistent(dom) == 1;
	if (active && !(live = get_xml(dom, name, 0, &live_vs, error)))
		goto out;
	if (persistent && !(conf = get_xml(dom, name, VIR_DOMAIN_XML_INACTIVE, &conf_vs,
					   error)))
		goto out;
	live_ch = live ? find_channel(live) : NULL;
	conf_ch = conf ? find_channel(conf) : NULL;

	if (attach) {
		unsigned int flags = 0;
		g_autoptr(GError) e = NULL;
		g_autofree char *added_conf = NULL, *added_live = NULL;

		if ((live && !live_vs.ctl->len) || (conf && !conf_vs.ctl->len)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
				    "domain %s has no virtio-serial controller, and controllers"
				    " cannot be hot-plugged. Add one to its configuration"
				    " (virsh edit %s: <controller type='virtio-serial'"
				    " index='0'/> inside <devices>), restart the domain"
				    " (virsh shutdown, virsh start), then attach again",
				    name, name);
			goto out;
		}
		if (live && !live_ch && !vs_free(&live_vs)) {
			no_free_port(name, &live_vs, conf ? &conf_vs : NULL, error);
			goto out;
		}
		if (live && !live_ch)
			flags |= VIR_DOMAIN_AFFECT_LIVE;
		if (conf && !conf_ch)
			flags |= VIR_DOMAIN_AFFECT_CONFIG;
		if (!flags) {
			if (ret_note)
				*ret_note = g_strdup_printf("domain %s has the channel already",
							    name);
			ok = true;
			goto out;
		}
		ok = change(dom, name, true, ha_channel_xml, flags, &e);

		/* What libvirt added besides the channel, said either way. */
		if (flags & VIR_DOMAIN_AFFECT_LIVE) {
			VsInfo after = { 0 };
			g_autofree char *xml = get_xml(dom, name, 0, &after, NULL);

			if (xml)
				added_live = vs_added(&live_vs, &after);
			vs_info_clear(&after);
		}
		if (ok && (flags & VIR_DOMAIN_AFFECT_CONFIG)) {
			VsInfo after = { 0 };
			g_autofree char *xml = get_xml(dom, name, VIR_DOMAIN_XML_INACTIVE,
						       &after, NULL);

			if (xml)
				added_conf = vs_added(&conf_vs, &after);
			vs_info_clear(&after);
		}
		if (!ok) {
			if (added_live)
				g_set_error(error, e->domain, e->code, "%s; libvirt's record of"
					    " the running domain now lists %s, which QEMU does"
					    " not have (it goes when the domain stops)",
					    e->message, added_live);
			else
				g_propagate_error(error, g_steal_pointer(&e));
			goto out;
		}
		if (ret_note && (added_conf || added_live)) {
			GString *n = g_string_new(NULL);

			g_string_printf(n, "channel org.stackmap.0 attached to %s of domain %s",
					!(flags & VIR_DOMAIN_AFFECT_LIVE) ? "the configuration" :
					!(flags & VIR_DOMAIN_AFFECT_CONFIG) ? "the running domain" :
					"the running domain and the configuration", name);
			if (added_conf)
				g_string_append_printf(n, "; its virtio-serial controllers had"
						       " no free port, so libvirt added %s to"
						       " the configuration for it%s", added_conf,
						       active ? " (the running domain gets it"
						       " at its next start)" : "");
			if (added_live)
				g_string_append_printf(n, "; libvirt added %s to the running"
						       " domain", added_live);
			*ret_note = g_string_free(n, false);
		}
		goto out;
	}
	/* Detach: libvirt matches a channel by its whole definition, including the
	 * socket path it picked, so pass the element as the domain has it. */
	if (live_ch && !change(dom, name, false, live_ch, VIR_DOMAIN_AFFECT_LIVE, error))
		goto out;
	if (conf_ch && !change(dom, name, false, conf_ch, VIR_DOMAIN_AFFECT_CONFIG, error))
		goto out;
	if (ret_note && !live_ch && !conf_ch)
		*ret_note = g_strdup_printf("domain %s has no stackmap channel", name);
	ok = true;
out:
	vs_info_clear(&live_vs);
	vs_info_clear(&conf_vs);
	if (dom)
		virDomainFree(dom);
	virConnectClose(c);
	return ok;
}
