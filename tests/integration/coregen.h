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
 *
 * With trace_cpus or map set, the core also holds what patch 0014 describes (a second
 * PT_LOAD at 1 MiB, read through the direct map and, for the map's table and pool,
 * through 4 KiB vmalloc pages mapped in reverse physical order):
 *  - the top-level trace buffer: a 6.1 trace_buffer, its ring_buffer_per_cpu, each
 *    ring of trace_pages buffer_pages plus a reader page, and struct
 *    ring_buffer_dump_info. Per CPU, the reader page was read up to a nonzero index
 *    (its consumed part holds a TIME_EXTEND and an absolute TIME_STAMP or a
 *    discarded event); then the head page (a TIME_EXTEND, a type_len 0 event, a
 *    discarded event, a padding to the page's end) up to the commit page, which has
 *    an event reserved but not committed after its commit; the pages after it hold a
 *    previous lap's events. CPU 0's commit page is the third of the ring, CPU 1's the
 *    head page itself, CPU 2's the page before the head; CPU 0's head_page hint is the
 *    head, the others' the page before it (stale, as the kernel leaves it).
 *  - the stack map (struct ftrace_stackmap_dump_info): two stackmap_gen, the current
 *    one with map_elts elts taken (the newest still being filled, the one before it
 *    keyed but not yet published), optionally the delta reader on the previous map
 *    (map_prev) and two chunks of delta records in its backlog (map_backlog).
 * coregen_build_truth() says what a reader of the dump must recover of them.
 */
#ifndef COREGEN_H
#define COREGEN_H

#include <glib.h>
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
	/* the trace buffer: none when 0 */
	unsigned trace_cpus;	/* CPUs with a ring buffer, at most COREGEN_MAX_CPUS */
	unsigned trace_pages;	/* ring pages per CPU besides the reader page (0: 4, >= 3) */
	int writer_on_reader;	/* the last CPU's commit page is its reader page */
	/* the stack map: none when 0 */
	int map;
	unsigned map_bits;	/* max_elts = 1 << map_bits (0: 7) */
	unsigned map_elts;	/* the current map's next_elt (0: 10; may pass max_elts) */
	int map_prev;		/* the delta reader still on the previous map */
	int map_backlog;	/* two chunks of records queued for the reader */
	/* corruptions */
	int rb_bad_magic;	/* ring_buffer_dump_info's magic wrong */
	int rb_list_loop;	/* CPU 0's second ring page points back to the head */
	int rb_commit_over;	/* CPU 0's commit page commits past the page's end */
	int sm_bad_magic;	/* ftrace_stackmap_dump_info's magic wrong */
	int sm_bad_slot;	/* elt 1's slot is elt 2's entry, elt 3's out of the table */
	int sm_backlog_loop;	/* the second backlog chunk points back to the first */
	int rb_unmapped;	/* CPU 0's second ring page's data page is not in the core */
} CoregenOpts;

#define COREGEN_MAX_CPUS	4
#define COREGEN_PAGE_SIZE	4096u
#define COREGEN_EVENT_MAX	256u
#define COREGEN_MAX_DEPTH	64u

/* An unread event: its CPU, absolute time stamp and payload. */
typedef struct {
	uint32_t cpu;
	uint64_t ts;
	uint32_t len;
	uint8_t data[COREGEN_EVENT_MAX];
} CoregenEvent;

typedef struct {
	uint32_t read;		/* the reader page's read index */
	uint64_t read_ts;	/* the time stamp of the last event the reader consumed */
	uint32_t pages;		/* unread pages: the reader page's rest, head .. commit */
	uint64_t events;	/* unread data events in them */
} CoregenCpu;

/* A map record a reader of the dump must recover, in the order it must. */
typedef struct {
	uint32_t kind;		/* 0 stack, 1 epoch (PROTOCOL.md 4.5) */
	uint32_t id;		/* stack_id; an epoch's id base */
	uint32_t nr;
	uint64_t ips[COREGEN_MAX_DEPTH];
	uint64_t epoch, ts;	/* epoch records */
} CoregenRec;

typedef struct {
	GArray *events;		/* CoregenEvent, per CPU in CPU order, each in order */
	CoregenCpu cpu[COREGEN_MAX_CPUS];
	GArray *recs;		/* CoregenRec */
	uint64_t epoch;		/* the map's current epoch */
	/* the stack records of recs: the backlog's, the previous map's, the current map's */
	uint32_t backlog_stacks, prev_stacks, live_stacks;
} CoregenTruth;

/* The core (g_free()), *len bytes. */
uint8_t *coregen_build(const CoregenOpts *o, size_t *len);
/* The same, and in @t (coregen_truth_clear()) what must be recovered of the trace
 * buffer and the map. For the corruptions, what an intact core would give, except
 * sm_bad_slot's elts: by the kernel's rule (the table entry points back) they are
 * not published, so they are not in it. */
uint8_t *coregen_build_truth(const CoregenOpts *o, size_t *len, CoregenTruth *t);
void coregen_truth_clear(CoregenTruth *t);
/* Record @seq's text (static buffer) and time. */
const char *coregen_text(uint64_t seq);
uint64_t coregen_ts(uint64_t seq);
/* How many of the newest records a ring holds after @n records (a pure function of
 * the ring's sizes and coregen_text()'s lengths). */
unsigned coregen_kept(unsigned n);

#endif
