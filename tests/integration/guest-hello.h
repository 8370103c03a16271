/* SPDX-License-Identifier: MIT */
/*
 * guest-hello.h - the HELLO the unit tests' guests send: a linux-6.1 x86_64 guest with
 * 4 KiB pages and a map of 1,024 slots, as guest-formats.h describes it.
 */
#ifndef GUEST_HELLO_H
#define GUEST_HELLO_H

#include <stdint.h>
#include <string.h>

#include "proto.h"

/* Its payload into @buf: the length, or a negative errno from smp_hello_encode(). */
static inline long gh_hello_encode(uint8_t *buf, size_t cap, const uint8_t boot_id[16],
				   uint64_t stream_id, uint32_t nr_cpus)
{
	struct smp_hello h = {
		.stream_id = stream_id, .text_addr = 0xffffffff81000000ull,
		.nr_cpus = nr_cpus, .page_size = 4096, .map_bits = 10, .max_depth = 64,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};

	memcpy(h.boot_id, boot_id, sizeof(h.boot_id));
	return smp_hello_encode(&h, buf, cap);
}

#endif /* GUEST_HELLO_H */
