/* SPDX-License-Identifier: MIT */
/*
 * delta.h - the reader of the kernel's stack_map_delta file (PROTOCOL.md section 6.3).
 *
 * The file hands each opener every map entry once, in insertion order, with an epoch
 * record at the start and at every reset. The reader keeps one buffer: a read appends
 * after whatever partial record the last read left (the kernel returns whole records,
 * a fake tree may not), the caller consumes whole records from the front
 * (stream_delta) and delta_consume() keeps the rest.
 *
 * The file may not exist (a kernel without the delta export): delta_open() returns
 * -ENOENT and the agent streams pages without stacks. Reopening (a fresh stream) makes
 * the kernel start again with the current epoch and its whole map.
 */
#ifndef SMG_DELTA_H
#define SMG_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DELTA_BUF_SIZE (64u * 1024u)
/* The largest record: header + 64 return addresses. */
#define DELTA_REC_MAX (16u + 64u * 8u)

struct delta_reader {
	char path[4096];
	int fd;
	uint8_t *buf;
	size_t len;		/* bytes in buf */
	size_t le;		/* leading bytes already in little-endian order */
	uint64_t bytes;		/* bytes read */
	uint64_t reads;		/* read() calls */
	uint64_t empty_reads;	/* ... that returned nothing */
	uint64_t bad;		/* invalid records seen (the buffer was discarded) */
	/* the last read left less than a record's room: the kernel may hold more (a
	 * read that left room took all there was) */
	bool more;
};

int delta_init(struct delta_reader *d, const char *tracefs);
void delta_done(struct delta_reader *d);
/* Open the file (O_NONBLOCK). -ENOENT without the export, -EBUSY with another reader. */
int delta_open(struct delta_reader *d);
void delta_close(struct delta_reader *d);

/* Read more records into the buffer. Returns the bytes added, 0 when nothing is new
 * (or the buffer is full), -errno. Sets @more when the kernel may hold more records
 * than this read took. */
long delta_read(struct delta_reader *d);
/* The caller used the first @n bytes. */
void delta_consume(struct delta_reader *d, size_t n);

#endif
