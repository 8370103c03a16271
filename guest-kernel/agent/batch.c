// SPDX-License-Identifier: MIT
/*
 * batch.c - the output staging buffer (see batch.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "proto.h"

int batch_init(struct batch *b)
{
	memset(b, 0, sizeof(*b));
	/* one largest frame plus a full write's worth of smaller ones */
	b->cap = SMP_HDR_SIZE + SMP_MAX_PAYLOAD + BATCH_WRITE_MAX;
	b->buf = malloc(b->cap);
	return b->buf ? 0 : -ENOMEM;
}

void batch_done(struct batch *b)
{
	free(b->buf);
	b->buf = NULL;
}

void batch_clear(struct batch *b)
{
	b->off = b->len = 0;
}

static void compact(struct batch *b)
{
	size_t n = batch_pending(b);

	if (b->off == 0)
		return;
	if (n)
		memmove(b->buf, b->buf + b->off, n);
	b->off = 0;
	b->len = n;
}

int batch_fits(struct batch *b, size_t len)
{
	if (b->cap - b->len >= len)
		return 1;
	compact(b);
	return b->cap - b->len >= len;
}

int batch_add(struct batch *b, const uint8_t *frame, size_t len)
{
	if (!batch_fits(b, len))
		return -ENOSPC;
	memcpy(b->buf + b->len, frame, len);
	b->len += len;
	return 0;
}

int batch_flush(struct batch *b, batch_write_fn fn, void *ctx)
{
	while (batch_pending(b) > 0) {
		size_t n = batch_pending(b);
		ssize_t w;

		if (n > BATCH_WRITE_MAX)
			n = BATCH_WRITE_MAX;
		w = fn(ctx, b->buf + b->off, n);
		if (w < 0)
			return (int)w;
		if (w == 0)
			return -EAGAIN;
		b->off += (size_t)w;
		b->writes++;
		b->bytes += (size_t)w;
	}
	b->off = b->len = 0;
	return 0;
}
