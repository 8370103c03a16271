/* SPDX-License-Identifier: MIT */
/*
 * kmsg.h - the guest kernel's log (printk ring buffer, Linux 5.10+) from its memory.
 *
 * The lockless printk ring buffer (kernel/printk/printk_ringbuffer.h): `prb` points to
 * a struct printk_ringbuffer, whose desc_ring holds 2^count_bits descriptors (an id
 * and state in state_var, the text's logical positions in text_blk_lpos) and as many
 * struct printk_info (seq, ts_nsec, text_len, caller_id), and whose text_data_ring is
 * 2^size_bits bytes of blocks (an unsigned long id, then the text). Every offset and
 * size comes from VMCOREINFO (log_buf_vmcoreinfo_setup()), none from a header here.
 *
 * The walk, as the kernel's reader does it (prb_read_valid()): ids tail_id..head_id,
 * at most 2^count_bits of them; a descriptor counts when its state_var carries the id
 * asked for in state committed or finalized, its text block lies inside the data ring
 * (get_data()'s rules: same wrap, or wrapping by exactly one; aligned; at least the
 * block id), and the block's id is the descriptor's. A descriptor in state reusable
 * (a dropped record, or prb_init()'s placeholder the tail starts at) is passed over;
 * anything else is skipped and counted, never followed. The text is at most text_len and at most the block.
 *
 * Hostile input: every count and size is bounded (HA_KMSG_MAX_*), every read goes
 * through kvmem.h (checked against the dump), the text is kept as bytes (the report
 * escapes it).
 */
#ifndef HA_KMSG_H
#define HA_KMSG_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "kvmem.h"
#include "vmcoreinfo.h"

#define HA_KMSG_MAX_DESC_BITS	22	/* 4 M records */
#define HA_KMSG_MAX_DATA_BITS	30	/* a 1 GiB text ring */

typedef struct {
	uint64_t seq;
	uint64_t ts_nsec;	/* local_clock() at the printk() */
	uint32_t caller_id;	/* thread id, or 0x80000000 | CPU */
	GBytes *text;		/* the record's text, no trailing newline */
} HaKmsgRecord;

typedef struct {
	GArray *records;	/* HaKmsgRecord, oldest first; clear func set */
	uint64_t skipped;	/* descriptors in the id range not readable (being
				 * written, or corrupt) */
	uint64_t desc_count;	/* the ring's size in records */
	uint64_t text_bytes;	/* the text ring's size */
} HaKmsg;

/* The log in the dump. NULL with @error when its structures cannot be found or read
 * (the message says which). Free with ha_kmsg_free(). */
HaKmsg *ha_kmsg_recover(HaKvmem *m, const HaVmci *vi, GError **error);
void ha_kmsg_free(HaKmsg *k);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaKmsg, ha_kmsg_free)

/* One record as the serial console prints it with PRINTK_TIME: each of its lines as
 * "[%5llu.%06llu] line\n". Appended to @out. */
void ha_kmsg_format(GString *out, uint64_t ts_nsec, const void *text, size_t len);

#endif /* HA_KMSG_H */
