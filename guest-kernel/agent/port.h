/* SPDX-License-Identifier: MIT */
/*
 * port.h - the transport to the host: a virtio-serial port found by name in sysfs
 * (no udev in a minimal guest), or, for tests and loopback setups, a unix stream socket.
 *
 * A virtio port stays open for the whole run; the host side comes and goes, which the
 * guest sees as POLLHUP (host away) and a SIGIO on each change (O_ASYNC, set while the
 * host is away). A socket is
 * connected, and closed on hang-up; port_open() reconnects it.
 */
#ifndef SMG_PORT_H
#define SMG_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum port_kind {
	PORT_VPORT,	/* a character device: /dev/vportNpM */
	PORT_SOCKET,	/* a unix stream socket */
};

struct port {
	char path[4096];
	enum port_kind kind;
	int fd;		/* -1 when closed */
};

/*
 * Find the port named @name: the entry of <sysfs>/class/virtio-ports/ whose `name`
 * file holds it. Writes "<devdir>/<entry>" (e.g. /dev/vport0p1) into @ret.
 * -ENOENT when no port has that name.
 */
int port_find(const char *sysfs, const char *devdir, const char *name, char *ret,
	      size_t cap);

/* Remember @path and its kind (from stat: socket or not). -ENOENT, ... */
int port_init(struct port *p, const char *path);
/* Open (vport) or connect (socket). Non-blocking; for a vport, SIGIO on host changes. */
int port_open(struct port *p);
void port_close(struct port *p);
/* SIGIO on host (dis)connection (vport only; it also fires on every incoming byte, so
 * the agent asks for it only while the host is away). */
void port_set_async(struct port *p, bool on);
/* Is a host there now? (vport: no POLLHUP; socket: open.) */
bool port_host_connected(struct port *p);

/* batch_write_fn over a struct port *: bytes written or -errno (-EAGAIN). */
ssize_t port_write(void *ctx, const void *buf, size_t len);
/* Bytes read, 0 at end of stream (host away), -EAGAIN, -errno. */
ssize_t port_read(struct port *p, void *buf, size_t cap);

#endif
