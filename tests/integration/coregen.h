/* SPDX-License-Identifier: MIT */
/*
 * coregen.h - a small synthetic x86-64 guest core, as QEMU's dump-guest-memory writes
 * one, for the post-mortem tests and the fuzz seeds: an ELF ET_CORE with a PT_NOTE
 * (a VMCOREINFO note with Linux 6.1's printk layout and KASLR numbers) and one
 * PT_LOAD of guest physical memory holding a kernel image (prb, the ring's
 * descriptors and infos) and, reached through the kernel's page tables (a 2 MiB page
 * of the direct map), the text data ring.
 *
 * Ground truth: coregen_build() writes @n records whose texts and timestamps are
 * coregen_text() / coregen_ts(); the ring of 16 records and 1 KiB of text wraps when
 * @n is large, so the oldest are gone and one block wraps the ring's end.
 */
#ifndef COREGEN_H
#define COREGEN_H

#include <stddef.h>
#include <stdint.h>

#define COREGEN_DESC_BITS	4
#define COREGEN_DATA_BITS	10
#define COREGEN_RAM		0x20000ull	/* guest RAM at physical 0 */

typedef struct {
	unsigned n;		/* records printed since boot */
	int no_vmcoreinfo;	/* leave the note out */
	int l5;			/* NUMBER(pgtable_l5_enabled)=1 */
	int unmap_data;		/* the direct-map entry not present */
	int reserved_last;	/* the newest descriptor in state reserved */
	int bad_block_id;	/* the newest block's id not its descriptor's */
} CoregenOpts;

/* The core (g_free()), *len bytes. */
uint8_t *coregen_build(const CoregenOpts *o, size_t *len);
/* Record @seq's text (static buffer) and time. */
const char *coregen_text(uint64_t seq);
uint64_t coregen_ts(uint64_t seq);
/* How many of the newest records a ring holds after @n records (a pure function of
 * the ring's sizes and coregen_text()'s lengths). */
unsigned coregen_kept(unsigned n);

#endif
