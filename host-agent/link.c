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

bool ha_link_start(HaLink *l, HaLinkFunc fn, void *user, GError **error)
{
	l->fn = fn;
	l->user = user;
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
	char *name;

	if (!l)
		return;
	name = l->name;
	l->fn = NULL;
	l->ops->close(l);
	g_free(name);
}

/* ---- a stream socket's fd --------------------------------------------------------- */

typedef struct {
	HaLink link;
	int fd;
	guint in_watch;
	guint out_watch;	/* G_IO_OUT while want-write is on */
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

static bool fd_start(HaLink *l, GError **error)
{
	FdLink *f = (FdLink *)l;

	f->in_watch = g_unix_fd_add(f->fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_fd_in, f);
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
		f->out_watch = g_unix_fd_add(f->fd, G_IO_OUT, on_fd_out, f);
	if (!want && f->out_watch) {
		g_source_remove(f->out_watch);
		f->out_watch = 0;
	}
}

static void fd_want_read(HaLink *l, bool want)
{
	FdLink *f = (FdLink *)l;

	if (want && !f->in_watch)
		f->in_watch = g_unix_fd_add(f->fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_fd_in, f);
	if (!want && f->in_watch) {
		g_source_remove(f->in_watch);
		f->in_watch = 0;
	}
}

static void fd_close(HaLink *l)
{
	FdLink *f = (FdLink *)l;

	if (f->in_watch)
		g_source_remove(f->in_watch);
	if (f->out_watch)
		g_source_remove(f->out_watch);
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
