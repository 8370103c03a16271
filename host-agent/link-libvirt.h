/* SPDX-License-Identifier: MIT */
/* link-libvirt.h - a libvirt channel's virStream as a HaLink (link.h). */
#ifndef HA_LINK_LIBVIRT_H
#define HA_LINK_LIBVIRT_H

#include <libvirt/libvirt.h>

#include "link.h"

/* @st: a non-blocking stream (VIR_STREAM_NONBLOCK) that virDomainOpenChannel()
 * opened; the link owns it from here (ha_link_close() aborts and frees it). */
HaLink *ha_link_new_virstream(virStreamPtr st, const char *name);

#endif /* HA_LINK_LIBVIRT_H */
