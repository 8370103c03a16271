// SPDX-License-Identifier: MIT
/*
 * source-socket.c - QEMU chardev unix socket source (see source.h).
 *
 * Only the socket's side of it lives here: connecting (with backoff) or listening and
 * accepting, one guest at a time. Each connection is an fd link (link.h) run by a
 * connection driver (conn-driver.h), like every other source's.
 *
 * A connecting source also watches its path: host-agent is usually started before
 * QEMU, and by the time QEMU creates its socket the backoff may be waiting seconds
 * for the next try, while the guest boots and its agent's window fills. The socket
 * appearing (or being made anew by a restarted QEMU) is tried at once instead; the
 * backoff stays for a path that exists but does not accept yet.
 */
#include "source.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "backoff.h"
#include "conn-driver.h"
#include "link.h"

struct _HaSource {
	char *path;
	bool listen;
	bool stopping;		/* no reconnection from here on */
	HaStore *store;
	HaLimits limits;
	char *domain;

	int listen_fd;
	guint listen_watch;
	HaBackoff retry;
	GFileMonitor *appear;	/* the path, while connecting (NULL: backoff alone) */

	HaDriver *drv;		/* the guest connection, NULL when none */
};

static bool sockaddr_for(const char *path, struct sockaddr_un *sa, GError **error)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "socket path too long: %s", path);
		return false;
	}
	strcpy(sa->sun_path, path);
	return true;
}

/* The connection ended by itself (conn-driver.h): reconnect, or wait for the next. */
static void on_ended(HaDriver *drv, void *user)
{
	HaSource *s = user;

	ha_driver_free(drv, NULL);
	s->drv = NULL;
	if (!s->listen && !s->stopping)
		ha_backoff_schedule(&s->retry);
}

static void link_open(HaSource *s, int fd)
{
	g_autoptr(GError) e = NULL;
	g_autofree char *peer = g_strdup_printf("socket %s", s->path);
	HaDriver *drv = ha_driver_new(ha_link_new_fd(fd, peer), s->store, &s->limits,
				      s->domain, on_ended, s, &e);

	if (!drv) {
		g_warning("%s: %s", s->domain, e->message);
		if (!s->listen)
			ha_backoff_schedule(&s->retry);
		return;
	}
	s->drv = drv;
}

static bool try_connect(HaSource *s)
{
	struct sockaddr_un sa;
	int fd;

	if (!sockaddr_for(s->path, &sa, NULL))
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		g_debug("%s: connect %s: %s", s->domain, s->path, g_strerror(errno));
		close(fd);
		return false;
	}
	link_open(s, fd);
	return true;
}

static gboolean on_retry(gpointer user)
{
	HaSource *s = user;

	if (try_connect(s)) {
		ha_backoff_reset(&s->retry);
		return G_SOURCE_REMOVE;
	}
	if (ha_backoff_first(&s->retry))
		g_message("%s: %s not available, retrying with backoff up to %u ms", s->domain,
			  s->path, HA_BACKOFF_MAX_MS);
	ha_backoff_schedule(&s->retry);
	return G_SOURCE_REMOVE;
}

/* Something happened at the path: if it may be the socket appearing while we wait
 * for it, try now, and start the backoff over should it not accept yet. */
static void on_path_event(GFileMonitor *m, GFile *file, GFile *other,
			  GFileMonitorEvent ev, gpointer user)
{
	HaSource *s = user;

	if (ev != G_FILE_MONITOR_EVENT_CREATED && ev != G_FILE_MONITOR_EVENT_ATTRIBUTE_CHANGED)
		return;
	if (s->drv || s->stopping || !ha_backoff_pending(&s->retry))
		return;
	g_message("%s: %s appeared, connecting", s->domain, s->path);
	ha_backoff_cancel(&s->retry);
	ha_backoff_reset(&s->retry);
	if (!try_connect(s))
		ha_backoff_schedule(&s->retry);
}

static void watch_path(HaSource *s)
{
	g_autoptr(GFile) f = g_file_new_for_path(s->path);
	g_autoptr(GError) e = NULL;

	s->appear = g_file_monitor_file(f, G_FILE_MONITOR_NONE, NULL, &e);
	if (!s->appear) {
		g_debug("%s: cannot watch %s (%s): the backoff alone retries", s->domain,
			s->path, e->message);
		return;
	}
	g_signal_connect(s->appear, "changed", G_CALLBACK(on_path_event), s);
}

static gboolean on_accept(gint fd, GIOCondition cond, gpointer user)
{
	HaSource *s = user;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return G_SOURCE_CONTINUE;
	/* A second guest while one is connected is refused by the driver (one
	 * connection per store); QEMU (server=off, reconnect) comes back. */
	link_open(s, c);
	return G_SOURCE_CONTINUE;
}

HaSource *ha_source_new_socket(const char *path, bool listening, HaStore *store,
			       const HaLimits *limits, const char *domain, GError **error)
{
	HaSource *s = g_new0(HaSource, 1);
	struct sockaddr_un sa;

	s->path = g_strdup(path);
	s->listen = listening;
	s->store = store;
	s->limits = *limits;
	s->domain = g_strdup(domain);
	s->listen_fd = -1;
	ha_backoff_init(&s->retry, on_retry, s);
	if (!sockaddr_for(path, &sa, error)) {
		ha_source_free(s);
		return NULL;
	}
	if (listening) {
		s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		unlink(path);	/* a stale socket from a previous run */
		if (s->listen_fd < 0 ||
		    bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(s->listen_fd, 4) < 0) {
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
				    "listen on %s: %s", path, g_strerror(errno));
			ha_source_free(s);
			return NULL;
		}
	}
	return s;
}

bool ha_source_start(HaSource *s, GError **error)
{
	if (s->listen) {
		s->listen_watch = g_unix_fd_add(s->listen_fd, G_IO_IN, on_accept, s);
		g_message("%s: listening on %s", s->domain, s->path);
	} else {
		watch_path(s);
		if (!try_connect(s))
			on_retry(s);
	}
	return true;
}

bool ha_source_connected(const HaSource *s)
{
	return s->drv != NULL;
}

void ha_source_free(HaSource *s)
{
	if (!s)
		return;
	s->stopping = true;
	ha_driver_free(s->drv, "host-agent stopping");
	ha_backoff_cancel(&s->retry);
	if (s->appear) {
		g_signal_handlers_disconnect_by_data(s->appear, s);
		g_file_monitor_cancel(s->appear);
		g_object_unref(s->appear);
	}
	if (s->listen_watch)
		g_source_remove(s->listen_watch);
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		unlink(s->path);
	}
	g_free(s->path);
	g_free(s->domain);
	g_free(s);
}
