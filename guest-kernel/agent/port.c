// SPDX-License-Identifier: MIT
/*
 * port.c - discovery and I/O of the host port (see port.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "log.h"
#include "port.h"
#include "util.h"

int port_find(const char *sysfs, const char *devdir, const char *name, char *ret,
	      size_t cap)
{
	char dir[4096];
	struct dirent *de;
	int r, found = -ENOENT;
	DIR *d;

	r = path_fmt(dir, sizeof(dir), "%s/class/virtio-ports", sysfs);
	if (r < 0)
		return r;
	d = opendir(dir);
	if (!d)
		return negerrno();
	while ((de = readdir(d)) != NULL) {
		_cleanup_free_ char *text = NULL;
		char path[4096];
		size_t len;

		if (de->d_name[0] == '.')
			continue;
		if (path_fmt(path, sizeof(path), "%s/%s/name", dir, de->d_name) < 0)
			continue;
		if (read_file(path, 4096, &text, &len) < 0)
			continue;
		while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
			text[--len] = '\0';
		if (strcmp(text, name) != 0)
			continue;
		found = path_fmt(ret, cap, "%s/%s", devdir, de->d_name);
		break;
	}
	closedir(d);
	return found;
}

int port_init(struct port *p, const char *path)
{
	struct stat st;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	if (strlen(path) >= sizeof(p->path))
		return -ENAMETOOLONG;
	strcpy(p->path, path);
	if (stat(path, &st) < 0)
		return negerrno();
	p->kind = S_ISSOCK(st.st_mode) ? PORT_SOCKET : PORT_VPORT;
	return 0;
}

static int open_socket(struct port *p)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(p->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, p->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negerrno();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return negerrno();
	return take_fd(&fd);
}

static int open_vport(struct port *p)
{
	_cleanup_close_ int fd = -1;
	fd = open(p->path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negerrno();
	/* SIGIO when the host connects or disconnects (virtio_console's fasync). */
	(void)fcntl(fd, F_SETOWN, getpid());
	return take_fd(&fd);
}

int port_open(struct port *p)
{
	int fd;

	if (p->fd >= 0)
		return 0;
	fd = p->kind == PORT_SOCKET ? open_socket(p) : open_vport(p);
	if (fd < 0)
		return fd;
	p->fd = fd;
	return 0;
}

void port_set_async(struct port *p, bool on)
{
	int fl;

	if (p->fd < 0 || p->kind != PORT_VPORT)
		return;
	fl = fcntl(p->fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(p->fd, F_SETFL, on ? fl | O_ASYNC : fl & ~O_ASYNC);
}

void port_close(struct port *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

bool port_host_connected(struct port *p)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };

	if (p->fd < 0)
		return false;
	if (poll(&pfd, 1, 0) < 0)
		return false;
	return !(pfd.revents & (POLLHUP | POLLERR | POLLNVAL));
}

ssize_t port_write(void *ctx, const void *buf, size_t len)
{
	struct port *p = ctx;
	ssize_t n;

	do {
		if (p->kind == PORT_SOCKET)
			n = send(p->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		else
			n = write(p->fd, buf, len);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : negerrno();
	return n;
}

ssize_t port_read(struct port *p, void *buf, size_t cap)
{
	ssize_t n;

	do {
		n = read(p->fd, buf, cap);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : negerrno();
	return n;
}
