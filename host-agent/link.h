/* SPDX-License-Identifier: MIT */
/*
 * link.h - one byte-stream connection to a guest's port, whatever carries it.
 *
 * A HaLink is opaque and has five calls: read, write, want-write, want-read and close. Where the
 * bytes come from is its backend's business: a unix socket's fd (--socket, --listen,
 * --socket-dir; ha_link_new_fd()) or a libvirt channel's virStream (--domain,
 * --all-domains; ha_link_new_virstream(), link-libvirt.c). The backend tells its
 * owner, through one HaLinkFunc on the thread-default main context, when the link is
 * readable (data, end of input or an error: the next read says which) and, only while
 * want-write is on, when it is writable. Reads and writes never block.
 *
 * The one owner of a link is the connection driver (conn-driver.h), which runs a
 * HaConn (ingest.h) over it the same way for every source.
 *
 * Life cycle: a backend's constructor returns the link (it owns the fd or stream from
 * then on); ha_link_start() begins the notifications; ha_link_close() stops them,
 * closes the fd or aborts the stream, and frees the link. It may be called from inside
 * the link's own HaLinkFunc (which must then return without touching the link).
 */
#ifndef HA_LINK_H
#define HA_LINK_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct _HaLink HaLink;

typedef enum {
	HA_LINK_READABLE = 1 << 0,	/* data, end of input or an error to read */
	HA_LINK_WRITABLE = 1 << 1,	/* room to write (only while want-write is on) */
} HaLinkEvents;

typedef void (*HaLinkFunc)(HaLink *l, HaLinkEvents ev, void *user);

/* A connected stream socket @fd (non-blocking from here on; the link closes it).
 * @name names the link in logs. Never NULL. */
HaLink *ha_link_new_fd(int fd, const char *name);

/* Notifications of @l to @fn from now on. False with @error when the backend cannot
 * watch the link (the link is left to close). */
bool ha_link_start(HaLink *l, HaLinkFunc fn, void *user, GError **error);

/*
 * Up to @len bytes into @buf: the count read, 0 at the end of the input, -EAGAIN when
 * nothing is there now, or another -errno (the backend logs its own detail, e.g.
 * libvirt's message, at debug level).
 */
ssize_t ha_link_read(HaLink *l, uint8_t *buf, size_t len);

/* Up to @len bytes of @buf: the count written (> 0), -EAGAIN when the link takes
 * nothing now, or another -errno (the link is broken). */
ssize_t ha_link_write(HaLink *l, const uint8_t *buf, size_t len);

/* Whether the owner wants HA_LINK_WRITABLE notifications (output is waiting). */
void ha_link_want_write(HaLink *l, bool want);

/* Whether the owner wants HA_LINK_READABLE notifications (on at the start; off while
 * it cannot take more input, e.g. its batch waits for a commit). */
void ha_link_want_read(HaLink *l, bool want);

/* The name given at creation (owned by @l). */
const char *ha_link_name(const HaLink *l);

/* Stop, close and free (NULL: nothing). */
void ha_link_close(HaLink *l);

/* ha_link_read() as an HaReadFn (ingest.h) with the link as its context. */
ssize_t ha_link_read_fn(void *link, uint8_t *buf, size_t len);

#endif /* HA_LINK_H */
