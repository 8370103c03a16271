/* SPDX-License-Identifier: MIT */
/*
 * attach.h - `host-agent attach|detach --domain NAME`: hot-plug the org.stackmap.0
 * channel into a libvirt domain (live when it runs, and in its persistent config), or
 * take it out again. The XML is qemu-patches/stackmap-channel.xml.
 */
#ifndef HA_ATTACH_H
#define HA_ATTACH_H

#include <glib.h>
#include <stdbool.h>

/* The channel device, as hot-plugged (static). */
extern const char ha_channel_xml[];

/*
 * Attach (@attach true) or detach the channel of domain @name through @uri (NULL:
 * libvirt's default). False with @error: no such domain, no virtio-serial controller
 * (the message says how to add one), libvirt refused. Attaching a domain that has the
 * channel already, or detaching one that has none, succeeds and says so in @ret_note
 * (g_free, may be NULL).
 */
bool ha_attach(const char *uri, const char *name, bool attach, char **ret_note,
	       GError **error);

#endif /* HA_ATTACH_H */
