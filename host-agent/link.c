// SPDX-License-Identifier: MIT
/* link.c - the link's four calls, and its fd backend (see link.h). */
#include "link-impl.h"

#include <errno.h>
#include <glib-unix.h>
#include <sys/socket.h>
#include <unistd.h>

void ha_link_init(HaLink *l, const HaLinkOps *ops, const char *name)
{
	l->ops = ops;
	l->name = g_strdup(name);
}

void ha_link_notify(HaLink *l, HaLinkEvents ev)
{
	if (l->fn)
		l->fn(l, ev, l->user);
}

guint ha_link_attach(HaLink *l, GSource *src)
{
	guint id = g_source_attach(src, l->ctx);

	g_source_unref(src);
	return id;
}

/* ---- notifications from other threads (link-impl.h) ------------------------------ */

struct _HaLinkRelay {
	gint ref;
	GMutex lock;		/* the fields below */
	HaLink *link;		/* NULL once closed */
	GMainContext *ctx;
	HaLinkEvents pending;
	GSource *src;		/* attached to ctx while events are pending */
};

HaLinkRelay *ha_link_relay_ref(HaLink *l)
{
	g_atomic_int_inc(&l->relay->ref);
	return l->relay;
}

void ha_link_relay_unref(void *p)
{
	HaLinkRelay *r = p;

	if (!r || !g_atomic_int_dec_and_test(&r->ref))
		return;
	g_mutex_clear(&r->lock);
	g_main_context_unref(r->ctx);
	g_free(r);
}

/* On the link's thread, where it is closed too: once the lock is dropped, the link
 * read under it stays valid until this returns. */
static gboolean on_relayed(gpointer user)
{
	HaLinkRelay *r = user;
	HaLinkEvents ev;
	HaLink *l;

	g_mutex_lock(&r->lock);
	ev = r->pending;
	r->pending = 0;
	g_clear_pointer(&r->src, g_source_unref);
	l = r->link;
	g_mutex_unlock(&r->lock);
	if (l && ev)
		ha_link_notify(l, ev);
	return G_SOURCE_REMOVE;
}

void ha_link_relay_notify(HaLinkRelay *r, HaLinkEvents ev)
{
	g_mutex_lock(&r->lock);
	if (r->link) {
		r->pending |= ev;
		if (!r->src) {
			/* at an fd watch's priority, as a readable socket's would be */
			r->src = g_idle_source_new();
			g_source_set_priority(r->src, G_PRIORITY_DEFAULT);
			g_source_set_callback(r->src, on_relayed, r, NULL);
			g_source_set_static_name(r->src, "host-agent link relay");
			g_source_attach(r->src, r->ctx);
		}
	}
	g_mutex_unlock(&r->lock);
}

/* The link closes (its thread): no relayed event reaches it from here on. */
static void relay_close(HaLinkRelay *r)
{
	g_mutex_lock(&r->lock);
	r->link = NULL;
	if (r->src) {
		g_source_destroy(r->src);
		g_clear_pointer(&r->src, g_source_unref);
	}
	g_mutex_unlock(&r->lock);
	ha_link_relay_unref(r);
}

bool ha_link_start(HaLink *l, HaLinkFunc fn, void *user, GError **error)
{
	HaLinkRelay *r = g_new0(HaLinkRelay, 1);

	l->fn = fn;
	l->user = user;
	l->ctx = g_main_context_ref_thread_default();
	r->ref = 1;
	g_mutex_init(&r->lock);
	r->link = l;
	r->ctx = g_main_context_ref(l->ctx);
	l->relay = r;
	return l->ops->start(l, error);
}

ssize_t ha_link_read(HaLink *l, uint8_t *buf, size_t len)
{
	return l->ops->read(l, buf, len);
}

ssize_t ha_link_read_fn(void *link, uint8_t *buf, size_t len)
{
	return ha_link_read(link, buf, len);
}

ssize_t ha_link_write(HaLink *l, const uint8_t *buf, size_t len)
{
	return l->ops->write(l, buf, len);
}

void ha_link_want_write(HaLink *l, bool want)
{
	if (l->want_write == want)
		return;
	l->want_write = want;
	l->ops->want_write(l, want);
}

void ha_link_want_read(HaLink *l, bool want)
{
	if (l->no_read == !want)
		return;
	l->no_read = !want;
	if (l->ops->want_read)
		l->ops->want_read(l, want);
}

const char *ha_link_name(const HaLink *l)
{
	return l->name;
}

void ha_link_close(HaLink *l)
{
	GMainContext *ctx;
	char *name;

	if (!l)
		return;
	name = l->name;
	l->fn = NULL;
	if (l->relay)
		relay_close(l->relay);
	ctx = l->ctx;
	l->ops->close(l);
	if (ctx)
		g_main_context_unref(ctx);
	g_free(name);
}

/* ---- a stream socket's fd --------------------------------------------------------- */

typedef struct {
	HaLink link;
	int fd;
	GSource *in_watch;
	GSource *out_watch;	/* G_IO_OUT while want-write is on */
} FdLink;

static gboolean on_fd_in(gint fd, GIOCondition cond, gpointer user)
{
	/* Level-triggered: it fires again while input (or the end of it) is there. The
	 * owner may close the link from here: the watch is then destroyed already and
	 * GLib ignores what we return. */
	ha_link_notify(user, HA_LINK_READABLE);
	return G_SOURCE_CONTINUE;
}

static gboolean on_fd_out(gint fd, GIOCondition cond, gpointer user)
{
	ha_link_notify(user, HA_LINK_WRITABLE);
	return G_SOURCE_CONTINUE;
}

/* A watch of the fd on the link's context (its thread's). */
static GSource *fd_watch(FdLink *f, GIOCondition cond, GUnixFDSourceFunc fn)
{
	GSource *src = g_unix_fd_source_new(f->fd, cond);

	g_source_set_callback(src, (GSourceFunc)(void (*)(void))fn, f, NULL);
	g_source_attach(src, f->link.ctx);
	return src;
}

static void unwatch(GSource **src)
{
	if (*src) {
		g_source_destroy(*src);
		g_clear_pointer(src, g_source_unref);
	}
}

static void fd_want_read(HaLink *l, bool want);

static bool fd_start(HaLink *l, GError **error)
{
	fd_want_read(l, !l->no_read);
	return true;
}

static ssize_t fd_read(HaLink *l, uint8_t *buf, size_t len)
{
	FdLink *f = (FdLink *)l;
	ssize_t n;

	do
		n = read(f->fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static ssize_t fd_write(HaLink *l, const uint8_t *buf, size_t len)
{
	FdLink *f = (FdLink *)l;
	ssize_t n;

	do
		n = send(f->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n ? n : -EAGAIN;
}

static void fd_want_write(HaLink *l, bool want)
{
	FdLink *f = (FdLink *)l;

	if (want && !f->out_watch)
		f->out_watch = fd_watch(f, G_IO_OUT, on_fd_out);
	if (!want)
		unwatch(&f->out_watch);
}

static void fd_want_read(HaLink *l, bool want)
{
	FdLink *f = (FdLink *)l;

	if (want && !f->in_watch)
		f->in_watch = fd_watch(f, G_IO_IN | G_IO_HUP | G_IO_ERR, on_fd_in);
	if (!want)
		unwatch(&f->in_watch);
}

static void fd_close(HaLink *l)
{
	FdLink *f = (FdLink *)l;

	unwatch(&f->in_watch);
	unwatch(&f->out_watch);
	close(f->fd);
	g_free(f);
}

static const HaLinkOps fd_ops = {
	.start = fd_start,
	.read = fd_read,
	.write = fd_write,
	.want_write = fd_want_write,
	.want_read = fd_want_read,
	.close = fd_close,
};

HaLink *ha_link_new_fd(int fd, const char *name)
{
	FdLink *f = g_new0(FdLink, 1);

	ha_link_init(&f->link, &fd_ops, name);
	g_unix_set_fd_nonblocking(fd, TRUE, NULL);
	f->fd = fd;
	return &f->link;
}
