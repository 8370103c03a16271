/* SPDX-License-Identifier: MIT */
/*
 * link-impl.h - what a HaLink backend provides (link.h; only backends include this).
 *
 * A backend allocates its own struct with a HaLink as its first member, fills in @ops
 * and the name with ha_link_init(), and calls ha_link_notify() from its watches. The
 * generic half (link.c) dispatches the four calls to @ops and frees the name.
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

struct _HaLink {
	const HaLinkOps *ops;
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

#endif /* HA_LINK_IMPL_H */
