// SPDX-License-Identifier: MIT
/* attach.c - hot-plug the stackmap channel into a libvirt domain (see attach.h). */
#include "attach.h"

#include <gio/gio.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <string.h>

const char ha_channel_xml[] =
	"<channel type='unix'>\n"
	"  <source mode='bind'/>\n"
	"  <target type='virtio' name='org.stackmap.0'/>\n"
	"</channel>\n";

static const char *lv_err(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->message ? e->message : "unknown libvirt error";
}

static void silence(void *user, virErrorPtr e)
{
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

static bool has_virtio_serial(const char *xml)
{
	return strstr(xml, "<controller type='virtio-serial'") != NULL;
}

/* Attach to or detach from the live domain and/or its config, as present. */
static bool change(virDomainPtr dom, bool attach, const char *dev, unsigned int flags,
		   GError **error)
{
	int r = attach ? virDomainAttachDeviceFlags(dom, dev, flags) :
			 virDomainDetachDeviceFlags(dom, dev, flags);

	if (r < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s %s: %s",
			    attach ? "attach to" : "detach from", virDomainGetName(dom),
			    lv_err());
		return false;
	}
	return true;
}

bool ha_attach(const char *uri, const char *name, bool attach, char **ret_note,
	       GError **error)
{
	virConnectPtr c;
	virDomainPtr dom = NULL;
	g_autofree char *live = NULL, *conf = NULL;
	g_autofree char *live_ch = NULL, *conf_ch = NULL;
	bool active, persistent, ok = false;

	virSetErrorFunc(NULL, silence);
	c = virConnectOpen(uri);
	if (!c) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt %s: %s",
			    uri ? uri : "(default URI)", lv_err());
		return false;
	}
	dom = virDomainLookupByName(c, name);
	if (!dom) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "domain %s: %s", name,
			    lv_err());
		goto out;
	}
	active = virDomainIsActive(dom) == 1;
	persistent = virDomainIsPersistent(dom) == 1;
	if (active)
		live = virDomainGetXMLDesc(dom, 0);
	if (persistent)
		conf = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
	if ((active && !live) || (persistent && !conf)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "domain %s: %s", name,
			    lv_err());
		goto out;
	}
	live_ch = live ? find_channel(live) : NULL;
	conf_ch = conf ? find_channel(conf) : NULL;

	if (attach) {
		unsigned int flags = 0;

		if ((live && !has_virtio_serial(live)) || (conf && !has_virtio_serial(conf))) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
				    "domain %s has no virtio-serial controller, and controllers"
				    " cannot be hot-plugged. Add one to its configuration"
				    " (virsh edit %s: <controller type='virtio-serial'"
				    " index='0'/> inside <devices>), restart the domain"
				    " (virsh shutdown, virsh start), then attach again",
				    name, name);
			goto out;
		}
		if (live && !live_ch)
			flags |= VIR_DOMAIN_AFFECT_LIVE;
		if (conf && !conf_ch)
			flags |= VIR_DOMAIN_AFFECT_CONFIG;
		if (flags && !change(dom, true, ha_channel_xml, flags, error))
			goto out;
		if (ret_note && !flags)
			*ret_note = g_strdup_printf("domain %s has the channel already", name);
		ok = true;
		goto out;
	}
	/* Detach: libvirt matches a channel by its whole definition, including the
	 * socket path it picked, so pass the element as the domain has it. */
	if (live_ch && !change(dom, false, live_ch, VIR_DOMAIN_AFFECT_LIVE, error))
		goto out;
	if (conf_ch && !change(dom, false, conf_ch, VIR_DOMAIN_AFFECT_CONFIG, error))
		goto out;
	if (ret_note && !live_ch && !conf_ch)
		*ret_note = g_strdup_printf("domain %s has no stackmap channel", name);
	ok = true;
out:
	if (dom)
		virDomainFree(dom);
	virConnectClose(c);
	return ok;
}
