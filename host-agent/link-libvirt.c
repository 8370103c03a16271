// SPDX-License-Identifier: MIT
/*
 * link-libvirt.c - a libvirt channel's non-blocking virStream as a HaLink (link.h).
 *
 * The stream's events come through libvirt's event loop, which gvir_event_register()
 * (ha_libvirt_init()) put on GLib's main loop, on the main thread, while the link
 * lives on its connection's thread (link.h): on_stream() relays them there
 * (ha_link_relay_notify()), and the link reads and writes the stream from its own
 * thread (libvirt's streams and their event calls are thread-safe; the client's
 * socket is read on the event loop's thread, the packets queued for the stream).
 * READABLE, HANGUP and ERROR all mean "read now" (the read returns the data, 0 or
 * the error); WRITABLE is asked for only while want-write is on.
 * virStreamRecv/Send return -2 for "would block".
 *
 * The event callback's opaque is a number, not the link: on_stream() looks it up in
 * a registry of the open links' relays, under its lock, and the link's close takes it
 * out after removing the callback. An event already being dispatched on the main
 * thread when the link closed thus finds nothing, never a freed link or relay. (Not
 * libvirt's free callback for the relay's reference: with Debian 12's libvirt 9.0 the
 * remote driver did not call it, and LeakSanitizer found the relay leaked in
 * tests/libvirt/t-postmortem.sh.)
 */
#include "link-libvirt.h"

#include <errno.h>
#include <gio/gio.h>
#include <libvirt/virterror.h>

#include "libvirt-err.h"
#include "link-impl.h"

#define IO_MAX	(1u << 20)	/* one virStreamRecv/Send at most (an int) */
#define READ_EVENTS	(VIR_STREAM_EVENT_READABLE | VIR_STREAM_EVENT_ERROR | \
			 VIR_STREAM_EVENT_HANGUP)

typedef struct {
	HaLink link;
	virStreamPtr st;
	guint id;		/* in the registry while the callback is registered */
} StreamLink;

/* The open links' relays by id (a reference each), for on_stream(). */
static GMutex reg_lock;
static GHashTable *reg;
static guint reg_next;

/* On libvirt's event loop (the main thread): @opaque is the link's id. */
static void on_stream(virStreamPtr st, int events, void *opaque)
{
	HaLinkEvents ev = 0;
	HaLinkRelay *r;

	if (events & VIR_STREAM_EVENT_WRITABLE)
		ev |= HA_LINK_WRITABLE;
	if (events & READ_EVENTS)
		ev |= HA_LINK_READABLE;
	g_mutex_lock(&reg_lock);
	r = reg && ev ? g_hash_table_lookup(reg, opaque) : NULL;
	if (r)
		ha_link_relay_notify(r, ev);
	g_mutex_unlock(&reg_lock);
}

/* Out of the registry (the link closes): its relay's reference, NULL when none. */
static HaLinkRelay *unregister(guint id)
{
	HaLinkRelay *r = NULL;

	g_mutex_lock(&reg_lock);
	if (reg)
		g_hash_table_steal_extended(reg, GUINT_TO_POINTER(id), NULL, (gpointer *)&r);
	g_mutex_unlock(&reg_lock);
	return r;
}

static bool st_start(HaLink *l, GError **error)
{
	StreamLink *s = (StreamLink *)l;

	g_mutex_lock(&reg_lock);
	if (!reg)
		reg = g_hash_table_new(g_direct_hash, g_direct_equal);
	do
		s->id = ++reg_next;
	while (!s->id || g_hash_table_contains(reg, GUINT_TO_POINTER(s->id)));
	g_hash_table_insert(reg, GUINT_TO_POINTER(s->id), ha_link_relay_ref(l));
	g_mutex_unlock(&reg_lock);
	if (virStreamEventAddCallback(s->st, READ_EVENTS, on_stream,
				      GUINT_TO_POINTER(s->id), NULL) < 0) {
		g_autofree char *why = ha_lv_error();

		ha_link_relay_unref(unregister(s->id));
		s->id = 0;
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "stream events: %s", why);
		return false;
	}
	return true;
}

static ssize_t st_read(HaLink *l, uint8_t *buf, size_t len)
{
	StreamLink *s = (StreamLink *)l;
	int n;

	n = virStreamRecv(s->st, (char *)buf, MIN(len, IO_MAX));
	if (n == -2)
		return -EAGAIN;
	if (n < 0) {
		g_autofree char *why = ha_lv_error();

		g_message("%s: read: %s", l->name, why);
		return -EIO;
	}
	return n;
}

static ssize_t st_write(HaLink *l, const uint8_t *buf, size_t len)
{
	StreamLink *s = (StreamLink *)l;
	int n = virStreamSend(s->st, (const char *)buf, MIN(len, IO_MAX));

	if (n == -2 || n == 0)
		return -EAGAIN;
	if (n < 0) {
		g_autofree char *why = ha_lv_error();

		g_message("%s: write: %s", l->name, why);
		return -EIO;
	}
	return n;
}

static void st_update(HaLink *l)
{
	StreamLink *s = (StreamLink *)l;

	if (s->id)
		virStreamEventUpdateCallback(s->st, (l->no_read ? 0 : READ_EVENTS) |
					     (l->want_write ? VIR_STREAM_EVENT_WRITABLE : 0));
}

static void st_want_write(HaLink *l, bool want)
{
	(void)want;	/* link.c has set l->want_write */
	st_update(l);
}

static void st_want_read(HaLink *l, bool want)
{
	(void)want;	/* l->no_read */
	st_update(l);
}

static void st_close(HaLink *l)
{
	StreamLink *s = (StreamLink *)l;

	if (s->id) {
		virStreamEventRemoveCallback(s->st);
		ha_link_relay_unref(unregister(s->id));
	}
	virStreamAbort(s->st);
	virStreamFree(s->st);
	g_free(s);
}

static const HaLinkOps stream_ops = {
	.start = st_start,
	.read = st_read,
	.write = st_write,
	.want_write = st_want_write,
	.want_read = st_want_read,
	.close = st_close,
};

HaLink *ha_link_new_virstream(virStreamPtr st, const char *name)
{
	StreamLink *s = g_new0(StreamLink, 1);

	ha_link_init(&s->link, &stream_ops, name);
	s->st = st;
	return &s->link;
}
