/* SPDX-License-Identifier: MIT */
/*
 * link-impl.h - what a HaLink backend provides (link.h; only backends include this).
 *
 * A backend allocates its own struct with a HaLink as its first member, fills in @ops
 * and the name with ha_link_init(), and calls ha_link_notify() from its watches. The
 * generic half (link.c) dispatches the four calls to @ops and frees the name.
 *
 * Threads: a link lives on the thread whose thread-default main context was current
 * at ha_link_start() (HaLink.ctx: its connection driver's, conn-driver.h). Its
 * backend attaches its watches there and calls ha_link_notify() there only. A backend
 * whose events come on another thread (libvirt's event loop is on the main context)
 * relays them with ha_link_relay_notify(), which is safe from any thread at any time,
 * even once the link is closed: the relay (HaLinkRelay) is reference counted, and the
 * backend holds a reference of its own (ha_link_relay_ref()) for its event callback
 * until that callback can no longer run (link-libvirt.c: a registry looked up under
 * its lock).
 */
#ifndef HA_LINK_IMPL_H
#define HA_LINK_IMPL_H

#include "link.h"

typedef struct {
	bool (*start)(HaLink *l, GError **error);
	ssize_t (*read)(HaLink *l, uint8_t *buf, size_t len);
	ssize_t (*write)(HaLink *l, const uint8_t *buf, size_t len);
	void (*want_write)(HaLink *l, bool want);
	/* readable notifications on (the default) or off; NULL: always on */
	void (*want_read)(HaLink *l, bool want);
	/* stop notifications, release the fd or stream and free the backend's struct
	 * (the name excepted) */
	void (*close)(HaLink *l);
} HaLinkOps;

typedef struct _HaLinkRelay HaLinkRelay;

struct _HaLink {
	const HaLinkOps *ops;
	GMainContext *ctx;	/* the link's thread's (ha_link_start()), a reference */
	HaLinkRelay *relay;	/* notifications from other threads, made at start */
	char *name;
	HaLinkFunc fn;
	void *user;
	bool want_write;
	bool no_read;		/* want-read is off */
};

void ha_link_init(HaLink *l, const HaLinkOps *ops, const char *name);

/* Tell the owner; the owner may close the link from there (nothing of @l is read
 * after this returns). */
void ha_link_notify(HaLink *l, HaLinkEvents ev);

/* Attach @src to the link's context (HaLink.ctx); the source ID, as g_source_attach()
 * returns it, @src's reference dropped. */
guint ha_link_attach(HaLink *l, GSource *src);

/*
 * From any thread: @ev for the link of @r, delivered by ha_link_notify() on the link's
 * thread at the next iteration of its context (events coalesce until then); nothing
 * once the link is closed. ha_link_relay_ref() gives the caller a reference of its
 * own, dropped with ha_link_relay_unref() (a GDestroyNotify; NULL: nothing).
 */
void ha_link_relay_notify(HaLinkRelay *r, HaLinkEvents ev);
HaLinkRelay *ha_link_relay_ref(HaLink *l);
void ha_link_relay_unref(void *r);

#endif /* HA_LINK_IMPL_H */
