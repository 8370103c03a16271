/* SPDX-License-Identifier: MIT */
/*
 * batch.h - the output staging buffer: whole frames are copied in, and go out in
 * write() calls of at most BATCH_WRITE_MAX bytes (the virtio console takes at most
 * 32 KiB per write and drops nothing it accepted). Window frames sent for the first
 * time with nothing ahead of them skip it (session.c writes them straight from the
 * window); it takes the rest of such a frame that a short write cut.
 *
 * The buffer holds whole frames, except that its head may be the rest of a frame
 * already partly written: so anything appended (a HELLO, a resent frame) always starts
 * at a frame boundary on the wire. batch_clear() forgets everything when the
 * connection is lost (the host side dropped what was in flight anyway).
 */
#ifndef SMG_BATCH_H
#define SMG_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BATCH_WRITE_MAX (32u * 1024u)

struct batch {
	uint8_t *buf;
	size_t cap;
	size_t off;		/* first byte not yet written */
	size_t len;		/* one past the last byte */
	uint64_t writes;	/* successful write() calls */
	uint64_t bytes;		/* bytes written */
};

/* The writer: returns bytes written, or -errno (-EAGAIN when it would block). */
typedef ssize_t (*batch_write_fn)(void *ctx, const void *buf, size_t len);

int batch_init(struct batch *b);
void batch_done(struct batch *b);
void batch_clear(struct batch *b);

static inline size_t batch_pending(const struct batch *b)
{
	return b->len - b->off;
}

/* Append one whole frame. -ENOSPC when it does not fit now (flush first). */
int batch_add(struct batch *b, const uint8_t *frame, size_t len);
/* Room for a frame of @len bytes right now? */
int batch_fits(struct batch *b, size_t len);

/*
 * Write pending bytes, in chunks of at most BATCH_WRITE_MAX, until none are left
 * (returns 0) or the writer would block (-EAGAIN) or fails (its -errno).
 */
int batch_flush(struct batch *b, batch_write_fn fn, void *ctx);

#endif
