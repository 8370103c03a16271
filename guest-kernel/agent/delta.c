// SPDX-License-Identifier: MIT
/*
 * delta.c - the stack_map_delta reader (see delta.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "util.h"

int delta_init(struct delta_reader *d, const char *tracefs)
{
	int r;

	memset(d, 0, sizeof(*d));
	d->fd = -1;
	r = path_fmt(d->path, sizeof(d->path), "%s/stack_map_delta", tracefs);
	if (r < 0)
		return r;
	d->buf = malloc(DELTA_BUF_SIZE);
	return d->buf ? 0 : -ENOMEM;
}

void delta_done(struct delta_reader *d)
{
	delta_close(d);
	free(d->buf);
	d->buf = NULL;
}

int delta_open(struct delta_reader *d)
{
	if (d->fd >= 0)
		return 0;
	d->fd = open(d->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (d->fd < 0)
		return negerrno();
	d->len = d->le = 0;
	d->more = false;
	return 0;
}

void delta_close(struct delta_reader *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	d->len = d->le = 0;
	d->more = false;
}

long delta_read(struct delta_reader *d)
{
	ssize_t n;

	if (d->fd < 0)
		return -EBADF;
	if (d->len == DELTA_BUF_SIZE)
		return 0;
	do {
		n = read(d->fd, d->buf + d->len, DELTA_BUF_SIZE - d->len);
		d->reads++;
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		d->empty_reads++;
	if (n < 0 && errno == EINVAL && DELTA_BUF_SIZE - d->len < DELTA_REC_MAX) {
		d->more = true;
		return 0;	/* no room for the next record: consume first */
	}
	d->more = false;
	if (n < 0)
		return errno == EAGAIN ? 0 : negerrno();
	d->len += (size_t)n;
	d->bytes += (size_t)n;
	/*
	 * The kernel copies whole records while the next one fits (patch 0007): a read
	 * that left room for the largest took everything there was. What is inserted
	 * after it (or a stack still being written, where the copy stops) is read in
	 * the next round, as after an EAGAIN.
	 */
	d->more = n > 0 && DELTA_BUF_SIZE - d->len < DELTA_REC_MAX;
	return n;
}

void delta_consume(struct delta_reader *d, size_t n)
{
	if (n >= d->len) {
		d->len = d->le = 0;
		return;
	}
	memmove(d->buf, d->buf + n, d->len - n);
	d->len -= n;
	d->le = d->le > n ? d->le - n : 0;
}
