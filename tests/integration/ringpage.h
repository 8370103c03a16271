/* SPDX-License-Identifier: MIT */
/*
 * ringpage.h - write ring-buffer pages the way linux-6.1 kernel/trace/ring_buffer.c
 * lays them out (x86_64: 4-byte alignment, 8-byte long): a buffer_data_page header
 * (u64 time_stamp, local_t commit) then events of a 32-bit header (type_len:5,
 * time_delta:27) and data; type_len 1..28 encodes data of type_len*4 bytes, 0 puts the
 * length in array[0] (data above 112 bytes); a delta of 2^27 ns or more is written as
 * a TIME_EXTEND (type 30) event first.
 */
#ifndef RINGPAGE_H
#define RINGPAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ringpage {
	uint8_t *buf;		/* page_size bytes */
	uint32_t page_size;
	uint32_t used;		/* bytes after the 16-byte header */
	uint64_t page_ts;
	uint64_t last_ts;
	uint32_t nr_events;
};

void ringpage_init(struct ringpage *p, uint8_t *buf, uint32_t page_size);
/* Start an empty page whose first event will be at @ts. */
void ringpage_reset(struct ringpage *p, uint64_t ts);
/* Append an event of @len data bytes at @ts (>= the last). False when it does not fit
 * (the caller sends the page and resets it). */
bool ringpage_add(struct ringpage *p, uint64_t ts, const void *data, uint32_t len);
/* Seal the commit field; returns the bytes to send (header + committed). */
uint32_t ringpage_finish(struct ringpage *p);
/* A page of one kmalloc event (guest-formats.h's id, every field 0) at @ts into @buf;
 * returns the bytes to send. */
uint32_t ringpage_one_kmalloc(uint8_t *buf, uint32_t page_size, uint64_t ts);

#endif
