// SPDX-License-Identifier: MIT
/* source-socket.c - QEMU chardev unix socket source (see source.h). */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define BACKOFF_MIN_MS	100u
#define BACKOFF_MAX_MS	5000u
#define READS_PER_WAKE	64	/* then yield to the main loop */

struct _HaSource {
	char *path;
	bool listen;
	HaStore *store;
	HaLimits limits;
	char *domain;

	int listen_fd;
	guint listen_watch;
	guint retry_timer;
	unsigned int backoff_ms;

	int fd;			/* the guest connection, -1 when none */
	guint watch;
	guint out_watch;	/* G_IO_OUT while output is left over, else 0 */
	guint more_idle;	/* reading goes on from here after READS_PER_WAKE */
	guint commit_timer;
	guint probe_timer;	/* clock probes (ha_conn_time_probe()) */
	HaConn *conn;
};

static void link_close(HaSource *s, const char *why);
static void schedule_connect(HaSource *s);

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

/* Send what the connection holds; true while some of it is left for later. */
static bool send_output(HaSource *s)
{
	size_t len;
	const uint8_t *out = ha_conn_output(s->conn, &len);

	while (len) {
		ssize_t n = send(s->fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return true;
			/* the read side sees the broken connection and closes it */
			g_debug("%s: write: %s", s->path, g_strerror(errno));
			return false;
		}
		ha_conn_output_done(s->conn, (size_t)n);
		out = ha_conn_output(s->conn, &len);
	}
	return false;
}

static gboolean on_writable(gint fd, GIOCondition cond, gpointer user)
{
	HaSource *s = user;

	if (send_output(s))
		return G_SOURCE_CONTINUE;
	s->out_watch = 0;
	return G_SOURCE_REMOVE;
}

/*
 * What the socket does not take now waits for G_IO_OUT, never for the next input: a
 * guest that stops sending until it has its ACK (after BYE, say) must still get it.
 */
static void write_output(HaSource *s)
{
	if (send_output(s)) {
		if (!s->out_watch)
			s->out_watch = g_unix_fd_add(s->fd, G_IO_OUT, on_writable, s);
	} else if (s->out_watch) {
		g_source_remove(s->out_watch);
		s->out_watch = 0;
	}
}

static bool flush(HaSource *s)
{
	g_autoptr(GError) e = NULL;

	if (s->commit_timer) {
		g_source_remove(s->commit_timer);
		s->commit_timer = 0;
	}
	if (!ha_conn_flush(s->conn, &e)) {
		g_critical("%s: %s", s->domain, e->message);
		return false;
	}
	write_output(s);
	return true;
}

static gboolean on_commit_timer(gpointer user)
{
	HaSource *s = user;

	s->commit_timer = 0;
	if (!flush(s))
		link_close(s, NULL);
	return G_SOURCE_REMOVE;
}

/* The input ran dry: commit now, or when the batch's oldest frame is old enough. */
static bool input_idle(HaSource *s)
{
	guint due = ha_conn_commit_due_ms(s->conn);

	if (!due)
		return flush(s);
	if (!s->commit_timer)
		s->commit_timer = g_timeout_add(due, on_commit_timer, s);
	write_output(s);
	return true;
}

static ssize_t read_fd(void *ctx, uint8_t *buf, size_t len)
{
	ssize_t n = read(*(const int *)ctx, buf, len);

	return n < 0 ? -errno : n;
}

static gboolean on_more_input(gpointer user);

/*
 * Read and apply what the socket holds, READS_PER_WAKE reads at a time. The watch is
 * level-triggered: when those reads happened to take the last bytes, it never fires
 * again for them, so the rest of the work (reading on to EAGAIN, then the commit and
 * its ACK) goes on from an idle callback, never from the next input, which a guest
 * waiting for its ACK does not send. False when the link was closed.
 */
static bool read_input(HaSource *s)
{
	g_autoptr(GError) e = NULL;

	switch (ha_conn_read(s->conn, READS_PER_WAKE, read_fd, &s->fd, &e)) {
	case HA_READ_MORE:
		write_output(s);
		if (!s->more_idle)
			s->more_idle = g_idle_add(on_more_input, s);
		return true;
	case HA_READ_DRY:
		if (input_idle(s))
			return true;
		link_close(s, NULL);
		return false;
	case HA_READ_END:
		link_close(s, "guest side closed the connection");
		return false;
	case HA_READ_FAILED:
	default:
		g_warning("%s: %s: closing the connection: %s", s->domain, s->path, e->message);
		link_close(s, NULL);
		return false;
	}
}

static gboolean on_more_input(gpointer user)
{
	HaSource *s = user;

	s->more_idle = 0;
	read_input(s);
	return G_SOURCE_REMOVE;
}

static gboolean on_readable(gint fd, GIOCondition cond, gpointer user)
{
	return read_input(user) ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static gboolean on_probe_timer(gpointer user)
{
	HaSource *s = user;

	if (ha_conn_time_probe(s->conn))
		write_output(s);
	return G_SOURCE_CONTINUE;
}

static void link_open(HaSource *s, int fd)
{
	g_autofree char *peer = g_strdup_printf("socket %s", s->path);

	g_unix_set_fd_nonblocking(fd, TRUE, NULL);
	s->fd = fd;
	s->conn = ha_conn_new(s->store, &s->limits, s->domain, peer);
	s->watch = g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_readable, s);
	if (s->limits.time_probe_ms)
		s->probe_timer = g_timeout_add(s->limits.time_probe_ms, on_probe_timer, s);
	g_message("%s: connected (%s)", s->domain, peer);
}

/* @why: NULL when the reason was already logged. Keep the watch bookkeeping exact:
 * called from on_readable, whose watch is removed by its return value. */
static void link_close(HaSource *s, const char *why)
{
	if (s->fd < 0)
		return;
	if (why)
		g_message("%s: %s: %s", s->domain, s->path, why);
	if (s->watch && g_main_current_source() &&
	    g_source_get_id(g_main_current_source()) == s->watch)
		s->watch = 0;	/* our caller returns G_SOURCE_REMOVE */
	if (s->watch)
		g_source_remove(s->watch);
	s->watch = 0;
	if (s->more_idle)
		g_source_remove(s->more_idle);
	s->more_idle = 0;
	if (s->out_watch)
		g_source_remove(s->out_watch);
	s->out_watch = 0;
	if (s->commit_timer)
		g_source_remove(s->commit_timer);
	s->commit_timer = 0;
	if (s->probe_timer)
		g_source_remove(s->probe_timer);
	s->probe_timer = 0;
	ha_conn_close(s->conn);
	ha_conn_free(s->conn);
	s->conn = NULL;
	close(s->fd);
	s->fd = -1;
	if (!s->listen)
		schedule_connect(s);
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

	s->retry_timer = 0;
	if (try_connect(s)) {
		s->backoff_ms = BACKOFF_MIN_MS;
		return G_SOURCE_REMOVE;
	}
	if (s->backoff_ms == BACKOFF_MIN_MS)
		g_message("%s: %s not available, retrying with backoff up to %u ms", s->domain,
			  s->path, BACKOFF_MAX_MS);
	s->backoff_ms = MIN(s->backoff_ms * 2, BACKOFF_MAX_MS);
	schedule_connect(s);
	return G_SOURCE_REMOVE;
}

static void schedule_connect(HaSource *s)
{
	if (!s->retry_timer)
		s->retry_timer = g_timeout_add(s->backoff_ms, on_retry, s);
}

static gboolean on_accept(gint fd, GIOCondition cond, gpointer user)
{
	HaSource *s = user;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return G_SOURCE_CONTINUE;
	if (s->fd >= 0) {
		g_warning("%s: %s: refusing a second connection while a guest is connected",
			  s->domain, s->path);
		close(c);
		return G_SOURCE_CONTINUE;
	}
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
	s->fd = -1;
	s->listen_fd = -1;
	s->backoff_ms = BACKOFF_MIN_MS;
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
	} else if (!try_connect(s)) {
		on_retry(s);
	}
	return true;
}

bool ha_source_connected(const HaSource *s)
{
	return s->fd >= 0;
}

void ha_source_free(HaSource *s)
{
	if (!s)
		return;
	s->listen = true;	/* no reconnection from here on */
	link_close(s, "host-agent stopping");
	if (s->retry_timer)
		g_source_remove(s->retry_timer);
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
