// SPDX-License-Identifier: MIT
/* coregen.c - a synthetic guest core for the post-mortem tests (see coregen.h). */
#include "coregen.h"

#include <elf.h>
#include <glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START_KERNEL_MAP	0xffffffff80000000ull
#define KASLR			0x1e400000ull	/* KERNELOFFSET */
#define PAGE_OFFSET		0xffff888000000000ull	/* the direct map */
#define RAM			COREGEN_RAM

/* physical layout (all inside RAM) */
#define P_IMAGE			0x00008000ull	/* where the image is loaded */
#define P_PRB_PTR		(P_IMAGE + 0x0000)
#define P_RB			(P_IMAGE + 0x0100)
#define P_DESCS			(P_IMAGE + 0x1000)
#define P_INFOS			(P_IMAGE + 0x2000)
#define P_PGD			(P_IMAGE + 0x8000)
#define P_PUD			(P_IMAGE + 0x9000)
#define P_PMD			(P_IMAGE + 0xa000)
#define P_DATA			0x00018000ull	/* read through the direct map */
/* the image's virtual start with KASLR: 16 MiB (LOAD_PHYSICAL_ADDR) + the slide; the
 * kernel folds both shifts into phys_base (virtual = physical - phys_base +
 * __START_KERNEL_map), so it is negative here, as it may be in a real guest */
#define V_IMAGE			(START_KERNEL_MAP + 0x1000000ull + KASLR)
#define V(p)			(V_IMAGE + ((p) - P_IMAGE))
#define PHYS_BASE_NUM		((long long)P_IMAGE - (long long)(V_IMAGE - START_KERNEL_MAP))

#define NDESC			(1u << COREGEN_DESC_BITS)
#define NDATA			(1u << COREGEN_DATA_BITS)
#define DESC_SZ			24
#define INFO_SZ			88

/*
 * The trace buffer and the stack map (patch 0014), when asked for: their
 * descriptions and global_trace in the image, page tables of the vmalloc area in the
 * image's free room; the rest in a second PT_LOAD at HI_BASE, reached through the
 * direct map (its 2 MiB page covers it) or vmalloc pages.
 */
#define P_RBINFO		(P_IMAGE + 0x3000)
#define P_SMINFO		(P_IMAGE + 0x3100)
#define P_GTRACE		(P_IMAGE + 0x4000)	/* struct trace_array global_trace */
#define P_PUD2			(P_IMAGE + 0x5000)
#define P_PMD2			(P_IMAGE + 0x6000)
#define P_PT2			(P_IMAGE + 0x7000)
#define HI_BASE			0x100000ull
#define HI_MAX			0x100000ull		/* the direct map's 2 MiB page */
#define VMALLOC			0xffffc90000000000ull
#define VM_PAGES		512u			/* one page table */
#define PG			COREGEN_PAGE_SIZE

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);	/* the test host is little-endian, like the guest */
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

const char *coregen_text(uint64_t seq)
{
	static char buf[96];

	/* lengths vary (13..40 bytes), so blocks land at varying places and one wraps */
	snprintf(buf, sizeof(buf), "record %llu %.*s", (unsigned long long)seq,
		 (int)(seq * 7 % 28), "abcdefghijklmnopqrstuvwxyz0123456789");
	return buf;
}

uint64_t coregen_ts(uint64_t seq)
{
	return 1000000000ull + seq * 1234567ull;
}

/* Block size of record @seq: id + text, aligned to 8. */
static uint64_t blk_size(uint64_t seq)
{
	return (8 + strlen(coregen_text(seq)) + 7) & ~7ull;
}

/*
 * The kernel's data_alloc() in short: the next block starts at head_lpos; when it
 * would cross the ring's end it starts at the next wrap's 0, and its begin still
 * says where the previous block ended. Old blocks are overwritten: a record is kept
 * while its block lies within the last NDATA bytes of lpos and its descriptor
 * within the last NDESC ids.
 */
typedef struct {
	uint64_t begin, next;
} Lpos;

static Lpos place(uint64_t *head, uint64_t seq)
{
	uint64_t sz = blk_size(seq), b = *head, n;

	if ((b & (NDATA - 1)) + sz >= NDATA)
		n = ((b + NDATA) & ~(uint64_t)(NDATA - 1)) + sz;	/* wraps */
	else
		n = b + sz;
	*head = n;
	return (Lpos){ b, n };
}

unsigned coregen_kept(unsigned n)
{
	uint64_t head = 0;
	Lpos *l = g_new0(Lpos, n ? n : 1);
	unsigned kept = 0;

	for (unsigned i = 0; i < n; i++)
		l[i] = place(&head, i);
	for (unsigned i = n; i-- > 0 && kept < NDESC;) {
		if (head - l[i].begin > NDATA)
			break;
		kept++;
	}
	g_free(l);
	return kept;
}

/* ---- the trace buffer and the stack map (patch 0014) ---------------------------- */

/* 6.1's structs as laid out for x86-64 without lockdep: trace_buffer,
 * ring_buffer_per_cpu, buffer_page, buffer_data_page; and where global_trace keeps
 * its trace_buffer and its stackmap */
enum {
	TB_CPUS = 4, TB_BUFFERS = 0x40, TB_SIZE = 0x100,
	CPU_CPU = 0, CPU_BUFFER = 0x10, CPU_NR_PAGES = 0x28, CPU_PAGES = 0x38,
	CPU_HEAD = 0x40, CPU_TAIL = 0x48, CPU_COMMIT = 0x50, CPU_READER = 0x58,
	CPU_SIZE = 0x200,
	BP_LIST = 0, BP_WRITE = 16, BP_READ = 24, BP_ENTRIES = 32, BP_REAL_END = 40,
	BP_PAGE = 48, BP_SIZE = 56,
	DP_TS = 0, DP_COMMIT = 8, DP_DATA = 16,
	TR_ARRAY_BUFFER = 24, AB_BUFFER = 8, TR_STACKMAP = 0x2a8,
};
#define RB_PAGE_HEAD		1ull
#define RB_FLAG_MASK		3u
#define RB_WRITE_MASK		0xfffffu
#define BUF_PAGE_SIZE		(PG - DP_DATA)
#define RB_MAX_SMALL_DATA	112u
#define TS_MASK			((1ull << 27) - 1)
#define RB_PADDING		29u
#define RB_TIME_EXTEND		30u
#define RB_TIME_STAMP		31u
#define MAX_RING_PAGES		16u
/* a direct-map address past the 2 MiB page: not in the core */
#define UNMAPPED		(PAGE_OFFSET + HI_BASE + HI_MAX + 0x1000)

/* struct ftrace_stackmap, stackmap_gen, stackmap_elt, stackmap_entry and
 * stackmap_delta_chunk (patches 0003, 0007, 0012) */
enum {
	SM_MAP_BITS = 0x8, SM_MAP_SIZE = 0xc, SM_MAX_ELTS = 0x10, SM_GEN = 0x18,
	SM_CUR = 0x78, SM_HAS_SPARE = 0x80, SM_EPOCH = 0xc8, SM_EPOCH_TS = 0xd0,
	SM_DELTA_ACTIVE = 0x130, SM_DELTA_GEN = 0x138, SM_DELTA_NEXT = 0x144,
	SM_DELTA_BACKLOG = 0x148, SM_BACKLOG_BYTES = 0x158, SM_SIZE = 0x200,
	GEN_ENTRIES = 0, GEN_ELTS = 8, GEN_NEXT_ELT = 0x10, GEN_ID_TAG = 0x18,
	GEN_SIZE = 0x30,
	ELT_NR = 0, ELT_REF = 4, ELT_SLOT = 8, ELT_IPS = 16,
	ELT_SIZE = 16 + 8 * COREGEN_MAX_DEPTH,
	ENTRY_KEY = 0, ENTRY_VAL = 8, ENTRY_SIZE = 16,
	CHUNK_LIST = 0, CHUNK_SIZE = 0x10, CHUNK_OFF = 0x18, CHUNK_DATA = 0x20,
};
#define SM_EPOCH_NOW		2049ull		/* its tag has wrapped to 1 */
#define SM_EPOCH_TS_NOW		7000000000ull
#define SM_PREV_ELTS		8u		/* the previous map's next_elt */
#define SM_PREV_READ		3u		/* ... and the reader's delta_next in it */

typedef struct {
	uint8_t *ram;		/* RAM bytes at physical 0 */
	uint8_t *hi;		/* HI_MAX bytes at HI_BASE */
	uint64_t hi_used;
	uint32_t vm_used;	/* vmalloc pages handed out, guard pages included */
	uint64_t vm_phys[VM_PAGES];	/* the physical page of each, 0: not mapped */
	CoregenTruth *t;	/* NULL: no ground truth wanted */
	int part;		/* the map's part being written: 0 backlog, 1 previous, 2 live */
} Mem;

static uint8_t *phys(Mem *m, uint64_t pa, size_t len)
{
	if (pa + len <= RAM)
		return m->ram + pa;
	if (pa >= HI_BASE && pa - HI_BASE + len <= HI_MAX)
		return m->hi + (pa - HI_BASE);
	g_error("coregen: physical %#llx is not in the core", (unsigned long long)pa);
}

static uint64_t v2p(Mem *m, uint64_t va)
{
	if (va >= V_IMAGE && va - V_IMAGE < P_PGD - P_IMAGE)
		return va - V_IMAGE + P_IMAGE;
	if (va >= PAGE_OFFSET && va - PAGE_OFFSET < HI_BASE + HI_MAX)
		return va - PAGE_OFFSET;
	if (va >= VMALLOC && (va - VMALLOC) / PG < VM_PAGES && m->vm_phys[(va - VMALLOC) / PG])
		return m->vm_phys[(va - VMALLOC) / PG] + (va & (PG - 1));
	g_error("coregen: %#llx is not mapped", (unsigned long long)va);
}

/* Write at a kernel virtual address, page by page. */
static void vw(Mem *m, uint64_t va, const void *src, size_t len)
{
	const uint8_t *s = src;

	while (len) {
		size_t n = MIN(len, PG - (va & (PG - 1)));

		memcpy(phys(m, v2p(m, va), n), s, n);
		va += n;
		s += n;
		len -= n;
	}
}

static void vw64(Mem *m, uint64_t va, uint64_t v)
{
	vw(m, va, &v, 8);
}

static void vw32(Mem *m, uint64_t va, uint32_t v)
{
	vw(m, va, &v, 4);
}

/* kmalloc() or alloc_pages(): zeroed, in the direct map */
static uint64_t kmalloc(Mem *m, uint64_t size, uint64_t align)
{
	uint64_t off = (m->hi_used + align - 1) & ~(align - 1);

	g_assert(off + size <= HI_MAX);
	m->hi_used = off + size;
	return PAGE_OFFSET + HI_BASE + off;
}

/* vmalloc(): 4 KiB pages mapped in reverse physical order, then a guard page */
static uint64_t vmalloc(Mem *m, uint64_t size)
{
	uint32_t n = (uint32_t)((size + PG - 1) / PG);
	uint64_t va = VMALLOC + (uint64_t)m->vm_used * PG;
	uint64_t first = kmalloc(m, (uint64_t)n * PG, PG) - PAGE_OFFSET;

	g_assert(m->vm_used + n + 1 <= VM_PAGES);
	for (uint32_t i = 0; i < n; i++)
		m->vm_phys[m->vm_used + i] = first + (uint64_t)(n - 1 - i) * PG;
	m->vm_used += n + 1;
	return va;
}

/* One buffer_data_page being written, as the kernel's writer does. */
typedef struct {
	Mem *m;
	uint8_t *pg;		/* the page's bytes */
	uint32_t cpu;
	uint32_t off;		/* the write index in data[] */
	uint64_t last;		/* the writer's time stamp after the last header */
	uint32_t entries;
	bool unread;		/* its data events are ground truth */
} Pw;

static void pw_begin(Pw *w, uint64_t dp, bool unread)
{
	w->pg = phys(w->m, v2p(w->m, dp), PG);
	w->off = 0;
	w->entries = 0;
	w->unread = unread;
}

static void pw_hdr(Pw *w, uint32_t type, uint64_t delta, uint32_t array0)
{
	g_assert(delta <= TS_MASK && w->off + 8 <= BUF_PAGE_SIZE);
	put32(w->pg + DP_DATA + w->off, (uint32_t)delta << 5 | type);
	put32(w->pg + DP_DATA + w->off + 4, array0);
}

static uint32_t ev_size(uint32_t len)
{
	return len <= RB_MAX_SMALL_DATA ? 4 + len : 8 + len;
}

/* The payload of event @seq of @cpu: seq, cpu, then bytes of both. */
static void payload(uint32_t cpu, uint32_t seq, uint32_t len, uint8_t *buf)
{
	put32(buf, seq);
	put32(buf + 4, 0xc0de0000u | cpu);
	for (uint32_t i = 8; i < len; i++)
		buf[i] = (uint8_t)(seq * 31 + i * 7 + cpu);
}

/* A data event of @len bytes at @ts, after a TIME_EXTEND when its delta needs one
 * (rb_add_time_stamp()); type_len 0 above RB_MAX_SMALL_DATA (rb_update_event()). */
static bool pw_event(Pw *w, uint64_t ts, uint32_t seq, uint32_t len)
{
	uint64_t d = ts - w->last;
	bool ext = d > TS_MASK;
	uint8_t buf[COREGEN_EVENT_MAX];
	uint8_t *p;

	g_assert(ts >= w->last && len % 4 == 0 && len >= 8 && len <= COREGEN_EVENT_MAX);
	if (w->off + ev_size(len) + (ext ? 8 : 0) > BUF_PAGE_SIZE)
		return false;
	if (ext) {
		pw_hdr(w, RB_TIME_EXTEND, d & TS_MASK, (uint32_t)(d >> 27));
		w->off += 8;
		d = 0;
	}
	payload(w->cpu, seq, len, buf);
	p = w->pg + DP_DATA + w->off;
	if (len <= RB_MAX_SMALL_DATA) {
		put32(p, (uint32_t)d << 5 | len / 4);
		memcpy(p + 4, buf, len);
	} else {
		put32(p, (uint32_t)d << 5);
		put32(p + 4, len + 4);
		memcpy(p + 8, buf, len);
	}
	w->off += ev_size(len);
	w->last = ts;
	w->entries++;
	if (w->unread && w->m->t) {
		CoregenEvent e = { .cpu = w->cpu, .ts = ts, .len = len };

		memcpy(e.data, buf, len);
		g_array_append_val(w->m->t->events, e);
		w->m->t->cpu[w->cpu].events++;
	}
	return true;
}

/* A new page: its time stamp is its first event's, whose delta is 0. */
static void pw_first(Pw *w, uint64_t ts, uint32_t seq, uint32_t len)
{
	put64(w->pg + DP_TS, ts);
	w->last = ts;
	pw_event(w, ts, seq, len);
}

/* An absolute time stamp (RINGBUF_TYPE_TIME_STAMP: the low 59 bits). */
static void pw_abs(Pw *w, uint64_t ts)
{
	pw_hdr(w, RB_TIME_STAMP, ts & TS_MASK, (uint32_t)(ts >> 27));
	w->off += 8;
	w->last = ts;
}

/* An event of @len bytes at @ts discarded in place (rb_event_discard(): PADDING with
 * its delta, array[0] its length past the header, its old data after). */
static void pw_discard(Pw *w, uint64_t ts, uint32_t len)
{
	g_assert(ts > w->last && len >= 8 && len <= RB_MAX_SMALL_DATA);
	pw_hdr(w, RB_PADDING, ts - w->last, len);
	memset(w->pg + DP_DATA + w->off + 8, 0xdd, len - 4);
	w->off += 4 + len;
	w->last = ts;
}

/* Events until the page has less than @keep bytes left for the next one. */
static void pw_fill(Pw *w, uint64_t *ts, uint32_t *seq, uint32_t keep)
{
	for (;;) {
		uint32_t len = 8 + 4 * (*seq * 7 % 26);

		if (w->off + ev_size(len) + keep > BUF_PAGE_SIZE)
			return;
		*ts += 100 + *seq * 37 % 900;
		pw_event(w, *ts, (*seq)++, len);
	}
}

/* The writer moved on: rb_reset_tail()'s padding to the page's end. Returns the
 * commit index (the page's end, or where the events end when no event fits). */
static uint32_t pw_close(Pw *w)
{
	uint32_t room = BUF_PAGE_SIZE - w->off;

	if (room < 8) {
		if (room >= 4)	/* rb_event_set_padding(): the rest of the page */
			put32(w->pg + DP_DATA + w->off, RB_PADDING);
		return w->off;
	}
	pw_hdr(w, RB_PADDING, 1, room - 4);
	w->off = BUF_PAGE_SIZE;
	return w->off;
}

static void bp_set(Mem *m, uint64_t bp, uint64_t dp, uint32_t write, uint32_t read,
		   uint32_t entries, uint32_t real_end)
{
	vw64(m, bp + BP_WRITE, write);
	vw32(m, bp + BP_READ, read);
	vw64(m, bp + BP_ENTRIES, entries);
	vw64(m, bp + BP_REAL_END, real_end);
	vw64(m, bp + BP_PAGE, dp);
}

/* The commit page: committed up to here, then one event reserved and not committed. */
static void pw_commit_here(Pw *w, Mem *m, uint64_t bp, uint64_t dp, uint64_t ts,
			   uint32_t seq, uint32_t read)
{
	uint32_t commit = w->off, entries = w->entries;
	bool unread = w->unread;

	put64(w->pg + DP_COMMIT, commit);
	w->unread = false;
	pw_event(w, ts, seq, 20);
	w->unread = unread;
	bp_set(m, bp, dp, w->off, read, entries, w->off);
	w->off = commit;
}

static void gen_cpu(Mem *m, const CoregenOpts *o, uint32_t cpu, uint64_t tb, uint64_t cb)
{
	uint32_t np = o->trace_pages ? o->trace_pages : 4, k, seq = 1, stale = 0x800000, read;
	bool on_reader = o->writer_on_reader && cpu == o->trace_cpus - 1;
	bool loop = o->rb_list_loop && cpu == 0;
	uint64_t ring[MAX_RING_PAGES], dp[MAX_RING_PAGES], reader, rdp, commit_bp;
	uint64_t ts = 1000000000ull + cpu * 1000003ull, sts = ts - 50000000ull;
	Pw w = { .m = m, .cpu = cpu };

	g_assert(np >= 3 && np <= MAX_RING_PAGES);
	k = cpu == 0 ? np - 2 : cpu == 1 ? 0 : cpu == 2 ? np - 1 : 1;
	/* buffer_pages (kzalloc) at descending addresses along the ring, data pages */
	for (uint32_t j = 0; j < np; j++)
		ring[np - 1 - j] = kmalloc(m, BP_SIZE, 64);
	reader = kmalloc(m, BP_SIZE, 64);
	for (uint32_t j = 0; j < np; j++)
		dp[j] = kmalloc(m, PG, PG);
	rdp = kmalloc(m, PG, PG);

	/* a previous lap's pages after the commit page: read long ago */
	for (uint32_t j = on_reader ? 0 : k + 1; j < np; j++) {
		uint32_t end, commit;

		pw_begin(&w, dp[j], false);
		pw_first(&w, sts, stale++, 16);
		pw_fill(&w, &sts, &stale, 0);
		end = w.off;
		commit = pw_close(&w);
		put64(w.pg + DP_COMMIT, commit);
		bp_set(m, ring[j], dp[j], commit, 0, w.entries, end);
	}

	/* the reader page: consumed up to its read index */
	pw_begin(&w, rdp, false);
	pw_first(&w, ts, seq++, 16);
	ts += 250;
	pw_event(&w, ts, seq++, 40);
	ts += 3000000000ull + 17;			/* a TIME_EXTEND */
	pw_event(&w, ts, seq++, 24);
	if (cpu % 2 == 0) {
		ts += 777;
		pw_abs(&w, ts);
	} else {
		ts += 555;
		pw_discard(&w, ts, 28);
	}
	ts += 300;
	pw_event(&w, ts, seq++, 12);
	read = w.off;
	if (m->t) {
		m->t->cpu[cpu].read = read;
		m->t->cpu[cpu].read_ts = ts;
		m->t->cpu[cpu].pages = 1 + (on_reader ? 0 : k + 1);
	}
	w.unread = true;
	ts += 400;
	pw_event(&w, ts, seq++, 32);
	ts += 10;
	pw_event(&w, ts, seq++, 136);		/* type_len 0 */
	ts += 90;
	pw_event(&w, ts, seq++, 8);
	if (on_reader) {
		pw_commit_here(&w, m, reader, rdp, ts + 50, seq++, read);
	} else {
		uint32_t end, commit;

		pw_fill(&w, &ts, &seq, 0);
		end = w.off;
		commit = pw_close(&w);
		put64(w.pg + DP_COMMIT, commit);
		bp_set(m, reader, rdp, commit, read, w.entries, end);
	}

	/* the head page .. the commit page */
	for (uint32_t j = 0; !on_reader && j <= k; j++) {
		pw_begin(&w, dp[j], true);
		ts += 1000;
		pw_first(&w, ts, seq++, 20);
		if (j == 0) {
			ts += (3ull << 27) + 12345;	/* a TIME_EXTEND */
			pw_event(&w, ts, seq++, 44);
			ts += 60;
			pw_event(&w, ts, seq++, 200);	/* type_len 0 */
			ts += 70;
			pw_discard(&w, ts, 16);
			ts += 80;
			pw_event(&w, ts, seq++, 8);
		}
		if (j < k) {
			uint32_t end, commit;

			pw_fill(&w, &ts, &seq, 0);
			end = w.off;
			commit = pw_close(&w);
			put64(w.pg + DP_COMMIT, commit);
			bp_set(m, ring[j], dp[j], commit, 0, w.entries, end);
			if (o->rb_unmapped && cpu == 0 && j == 1)
				vw64(m, ring[j] + BP_PAGE, UNMAPPED);
		} else {
			for (int e = 0; e < 5; e++) {
				ts += 123;
				pw_event(&w, ts, seq++, 12 + 8 * (uint32_t)e);
			}
			pw_commit_here(&w, m, ring[j], dp[j], ts + 50, seq++, 0);
			if (o->rb_unmapped && cpu == 0 && j == 1)
				vw64(m, ring[j] + BP_PAGE, UNMAPPED);
			if (o->rb_commit_over && cpu == 0)
				put64(w.pg + DP_COMMIT, BUF_PAGE_SIZE + 920);
		}
	}

	/* the ring, the pointer to the head page flagged; the reader page out of it,
	 * pointing into it as rb_get_reader_page() leaves it */
	for (uint32_t j = 0; j < np; j++) {
		uint64_t next = ring[(j + 1) % np] + BP_LIST;

		if (j == np - 1)
			next |= RB_PAGE_HEAD;
		if (loop && j == k - 1)
			next = ring[0] + BP_LIST;
		vw64(m, ring[j] + BP_LIST, next);
		vw64(m, ring[j] + BP_LIST + 8, ring[(j + np - 1) % np] + BP_LIST);
	}
	vw64(m, reader + BP_LIST, ring[0] + BP_LIST);
	vw64(m, reader + BP_LIST + 8, ring[np - 2] + BP_LIST);
	commit_bp = on_reader ? reader : ring[k];
	vw32(m, cb + CPU_CPU, cpu);
	vw64(m, cb + CPU_BUFFER, tb);
	vw64(m, cb + CPU_NR_PAGES, np);
	vw64(m, cb + CPU_PAGES, ring[0] + BP_LIST);
	vw64(m, cb + CPU_HEAD, cpu == 0 && !loop ? ring[0] : ring[np - 1]);
	vw64(m, cb + CPU_TAIL, commit_bp);
	vw64(m, cb + CPU_COMMIT, commit_bp);
	vw64(m, cb + CPU_READER, reader);
}

/* The trace buffer of global_trace: returns the trace_buffer. */
static uint64_t gen_trace(Mem *m, const CoregenOpts *o)
{
	uint64_t tb = kmalloc(m, TB_SIZE, 64), buffers;

	g_assert(o->trace_cpus <= COREGEN_MAX_CPUS);
	buffers = kmalloc(m, 8ull * o->trace_cpus, 8);
	vw32(m, tb + TB_CPUS, o->trace_cpus);
	vw64(m, tb + TB_BUFFERS, buffers);
	for (uint32_t cpu = 0; cpu < o->trace_cpus; cpu++) {
		uint64_t cb = kmalloc(m, CPU_SIZE, 64);

		vw64(m, buffers + 8ull * cpu, cb);
		gen_cpu(m, o, cpu, tb, cb);
	}
	return tb;
}

static uint32_t id_tag(uint64_t epoch)
{
	return (uint32_t)(epoch & 0x7ff) << 20;
}

/* The stack of entry @i of a map of @epoch. */
static uint32_t stack_of(uint64_t epoch, uint32_t i, uint64_t *ips)
{
	uint32_t nr = 1 + (uint32_t)((i * 13 + epoch * 5) % COREGEN_MAX_DEPTH);

	for (uint32_t d = 0; d < nr; d++)
		ips[d] = 0xffffffff81000000ull + (epoch & 0xff) * 0x100000 + i * 0x1000 + d * 0x10 + 5;
	return nr;
}

static void truth_stack(Mem *m, uint32_t id, const uint64_t *ips, uint32_t nr)
{
	CoregenRec r = { .kind = 0, .id = id, .nr = nr };

	if (!m->t)
		return;
	memcpy(r.ips, ips, 8ull * nr);
	g_array_append_val(m->t->recs, r);
	if (m->part == 0)
		m->t->backlog_stacks++;
	else if (m->part == 1)
		m->t->prev_stacks++;
	else
		m->t->live_stacks++;
}

static void truth_epoch(Mem *m, uint64_t epoch, uint64_t ts)
{
	CoregenRec r = { .kind = 1, .id = id_tag(epoch), .nr = 2, .epoch = epoch, .ts = ts };

	if (m->t)
		g_array_append_val(m->t->recs, r);
}

/* A delta record (PROTOCOL.md 4.5: a stack_map_bin v1 entry and its kind). */
static size_t put_rec(uint8_t *p, uint32_t id, uint32_t nr, uint32_t ref, uint32_t kind,
		      const uint64_t *ips)
{
	put32(p, id);
	put32(p + 4, nr);
	put32(p + 8, ref);
	put32(p + 12, kind);
	for (uint32_t d = 0; d < nr; d++)
		put64(p + 16 + 8 * d, ips[d]);
	return 16 + 8ull * nr;
}

/*
 * A backlog chunk as a reset queues it: the tail of the map of @epoch - 1 (@n
 * entries from @first) and the record of @epoch; the reader has read @read of its
 * records. Returns the chunk.
 */
static uint64_t gen_chunk(Mem *m, uint64_t epoch, uint64_t ts, uint32_t first, uint32_t n,
			  uint32_t read, uint64_t *ret_size)
{
	uint8_t buf[8 * (16 + 8 * COREGEN_MAX_DEPTH)];
	uint64_t ips[COREGEN_MAX_DEPTH], chunk, off = 0;
	size_t size = 0;

	g_assert(n < 8);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t nr = stack_of(epoch - 1, first + i, ips);
		uint32_t id = id_tag(epoch - 1) | ((first + i) * 37 + 5);

		if (i == read)
			off = size;
		size += put_rec(buf + size, id, nr, 3 + i, 0, ips);
		if (i >= read)
			truth_stack(m, id, ips, nr);
	}
	ips[0] = epoch;
	ips[1] = ts;
	size += put_rec(buf + size, id_tag(epoch), 2, 0, 1, ips);
	truth_epoch(m, epoch, ts);
	chunk = kmalloc(m, CHUNK_DATA + size, 8);
	vw64(m, chunk + CHUNK_SIZE, size);
	vw64(m, chunk + CHUNK_OFF, off);
	vw(m, chunk + CHUNK_DATA, buf, size);
	*ret_size = size;
	return chunk;
}

/*
 * Map @g of @epoch: @next_elt elts taken; those from @from are ground truth when
 * published. The live map's newest elt is still being filled (slot 0) and the one
 * before it keyed but not yet published (entry val NULL); sm_bad_slot breaks two.
 */
static void gen_elts(Mem *m, const CoregenOpts *o, uint64_t g, uint64_t epoch,
		     uint32_t next_elt, uint32_t from, bool live, uint32_t max_elts,
		     uint32_t map_size)
{
	uint64_t entries = vmalloc(m, (uint64_t)map_size * ENTRY_SIZE);
	uint64_t elts = vmalloc(m, (uint64_t)max_elts * ELT_SIZE);
	uint32_t n = MIN(next_elt, max_elts);

	vw64(m, g + GEN_ENTRIES, entries);
	vw64(m, g + GEN_ELTS, elts);
	vw32(m, g + GEN_NEXT_ELT, next_elt);
	vw32(m, g + GEN_ID_TAG, id_tag(epoch));
	/* elt n, past next_elt, looks published: a reader that ignores next_elt takes it */
	for (uint32_t i = 0; i <= n && i < max_elts; i++) {
		uint64_t elt = elts + (uint64_t)i * ELT_SIZE, ips[COREGEN_MAX_DEPTH];
		uint32_t slot = (i * 37 + 5) & (map_size - 1), eslot = slot + 1;
		uint32_t nr = stack_of(epoch, i, ips);
		bool filling = live && n >= 3 && i == n - 1;
		bool keyed = live && n >= 3 && i == n - 2;
		bool pub = i < n && !filling && !keyed;

		vw32(m, elt + ELT_NR, nr);
		vw32(m, elt + ELT_REF, i + 1);
		for (uint32_t d = 0; d < nr; d++)
			vw64(m, elt + ELT_IPS + 8 * d, ips[d]);
		vw32(m, entries + (uint64_t)slot * ENTRY_SIZE + ENTRY_KEY, 0x9e3779b9u ^ i);
		if (!filling && !keyed)
			vw64(m, entries + (uint64_t)slot * ENTRY_SIZE + ENTRY_VAL, elt);
		if (filling)
			eslot = 0;
		if (live && o->sm_bad_slot && n >= 6 && i == 1) {
			eslot = ((2 * 37 + 5) & (map_size - 1)) + 1;	/* elt 2's entry */
			pub = false;
		}
		if (live && o->sm_bad_slot && n >= 6 && i == 3) {
			eslot = map_size + 5;
			pub = false;
		}
		vw32(m, elt + ELT_SLOT, eslot);
		if (pub && i >= from)
			truth_stack(m, id_tag(epoch) | slot, ips, nr);
	}
}

/* The stack map of global_trace: returns the ftrace_stackmap. */
static uint64_t gen_map(Mem *m, const CoregenOpts *o)
{
	uint32_t bits = o->map_bits ? o->map_bits : 7, max_elts = 1u << bits;
	uint32_t map_size = 2u << bits, taken = o->map_elts ? o->map_elts : 10;
	uint64_t e = SM_EPOCH_NOW, smap = kmalloc(m, SM_SIZE, 64);
	uint64_t cur = smap + SM_GEN + GEN_SIZE * (e & 1);
	uint64_t prev = smap + SM_GEN + GEN_SIZE * ((e - 1) & 1);
	uint64_t head = smap + SM_DELTA_BACKLOG, bytes = 0;

	g_assert(bits >= 2 && bits <= 8);
	if (m->t)
		m->t->epoch = e;
	vw32(m, smap + SM_MAP_BITS, bits);
	vw32(m, smap + SM_MAP_SIZE, map_size);
	vw32(m, smap + SM_MAX_ELTS, max_elts);
	vw64(m, smap + SM_CUR, cur);
	vw32(m, smap + SM_HAS_SPARE, 1);
	vw64(m, smap + SM_EPOCH, e);
	vw64(m, smap + SM_EPOCH_TS, SM_EPOCH_TS_NOW);
	vw32(m, smap + SM_DELTA_ACTIVE, o->map_prev || o->map_backlog);
	vw64(m, smap + SM_DELTA_GEN, o->map_prev ? prev : cur);
	vw32(m, smap + SM_DELTA_NEXT, o->map_prev ? SM_PREV_READ : taken / 2);
	vw64(m, head, head);
	vw64(m, head + 8, head);
	/* 1. the backlog: two resets queued a tail and an epoch record each */
	if (o->map_backlog) {
		uint64_t f = o->map_prev ? e - 1 : e, sa, sb;
		uint64_t tb_ = f == e ? SM_EPOCH_TS_NOW : SM_EPOCH_TS_NOW - 1000000000ull;
		uint64_t a = gen_chunk(m, f - 1, tb_ - 1000000000ull, 40, 3, 1, &sa);
		uint64_t b = gen_chunk(m, f, tb_, 50, 2, 0, &sb);

		vw64(m, head, a + CHUNK_LIST);
		vw64(m, a + CHUNK_LIST, b + CHUNK_LIST);
		vw64(m, a + CHUNK_LIST + 8, head);
		vw64(m, b + CHUNK_LIST, o->sm_backlog_loop ? a + CHUNK_LIST : head);
		vw64(m, b + CHUNK_LIST + 8, a + CHUNK_LIST);
		vw64(m, head + 8, b + CHUNK_LIST);
		bytes = sa + sb;
	}
	vw64(m, smap + SM_BACKLOG_BYTES, bytes);
	/* 2. the previous map, the reader still in it, or clean for the next switch */
	m->part = 1;
	gen_elts(m, o, prev, e - 1, o->map_prev ? SM_PREV_ELTS : 0,
		 o->map_prev ? SM_PREV_READ : 0, false, max_elts, map_size);
	/* 3. the epoch in effect and its map */
	m->part = 2;
	truth_epoch(m, e, SM_EPOCH_TS_NOW);
	gen_elts(m, o, cur, e, taken, 0, true, max_elts, map_size);
	return smap;
}

/* The descriptions of patch 0014, as the kernel fills them for the layout above. */
static void gen_dump_info(Mem *m, const CoregenOpts *o)
{
	static const uint32_t rb[] = {
		0x49445252, 1, 22 * 4, 8, RB_FLAG_MASK, RB_PAGE_HEAD, RB_WRITE_MASK,
		TB_CPUS, TB_BUFFERS, CPU_CPU, CPU_NR_PAGES, CPU_HEAD, CPU_TAIL, CPU_COMMIT,
		CPU_READER, BP_LIST, BP_WRITE, BP_READ, BP_PAGE, DP_TS, DP_COMMIT, DP_DATA,
	};
	static const uint32_t sm[] = {
		0x49444d53, 1, 31 * 4, COREGEN_MAX_DEPTH, 20, TR_STACKMAP, SM_MAP_SIZE,
		SM_MAX_ELTS, SM_GEN, SM_CUR, SM_EPOCH, SM_EPOCH_TS, SM_DELTA_ACTIVE,
		SM_DELTA_GEN, SM_DELTA_NEXT, SM_DELTA_BACKLOG, GEN_SIZE, GEN_ENTRIES, GEN_ELTS,
		GEN_NEXT_ELT, GEN_ID_TAG, ELT_SIZE, ELT_NR, ELT_SLOT, ELT_IPS, ENTRY_SIZE,
		ENTRY_VAL, CHUNK_LIST, CHUNK_SIZE, CHUNK_OFF, CHUNK_DATA,
	};
	G_STATIC_ASSERT(G_N_ELEMENTS(rb) == 22 && G_N_ELEMENTS(sm) == 31);

	for (size_t i = 0; i < G_N_ELEMENTS(rb); i++)
		put32(m->ram + P_RBINFO + 4 * i, rb[i]);
	for (size_t i = 0; i < G_N_ELEMENTS(sm); i++)
		put32(m->ram + P_SMINFO + 4 * i, sm[i]);
	if (o->rb_bad_magic)
		put32(m->ram + P_RBINFO, 0x49445253);
	if (o->sm_bad_magic)
		put32(m->ram + P_SMINFO, 0x49444d54);
}

/* global_trace and what hangs off it, the vmalloc area's page tables. */
static void gen_tracing(Mem *m, const CoregenOpts *o)
{
	gen_dump_info(m, o);
	if (o->trace_cpus)
		put64(m->ram + P_GTRACE + TR_ARRAY_BUFFER + AB_BUFFER, gen_trace(m, o));
	if (o->map)
		put64(m->ram + P_GTRACE + TR_STACKMAP, gen_map(m, o));
	put64(m->ram + P_PGD + ((VMALLOC >> 39) & 511) * 8, P_PUD2 | 0x63);
	put64(m->ram + P_PUD2 + ((VMALLOC >> 30) & 511) * 8, P_PMD2 | 0x63);
	put64(m->ram + P_PMD2 + ((VMALLOC >> 21) & 511) * 8, P_PT2 | 0x63);
	for (uint32_t i = 0; i < VM_PAGES; i++)
		if (m->vm_phys[i])
			put64(m->ram + P_PT2 + 8ull * i, m->vm_phys[i] | 0x63);
}

void coregen_truth_clear(CoregenTruth *t)
{
	if (t->events)
		g_array_unref(t->events);
	if (t->recs)
		g_array_unref(t->recs);
	memset(t, 0, sizeof(*t));
}

static uint8_t *build(const CoregenOpts *o, size_t *len, CoregenTruth *truth)
{
	static const char *const layout =
		"OSRELEASE=6.1.0-coregen\n"
		"BUILD-ID=00112233445566778899aabbccddeeff00112233\n"
		"PAGESIZE=4096\n"
		"SYMBOL(init_uts_ns)=ffffffff9f600000\n"
		"SIZE(printk_ringbuffer)=88\n"
		"OFFSET(printk_ringbuffer.desc_ring)=0\n"
		"OFFSET(printk_ringbuffer.text_data_ring)=48\n"
		"OFFSET(printk_ringbuffer.fail)=80\n"
		"SIZE(prb_desc_ring)=48\n"
		"OFFSET(prb_desc_ring.count_bits)=0\n"
		"OFFSET(prb_desc_ring.descs)=8\n"
		"OFFSET(prb_desc_ring.infos)=16\n"
		"OFFSET(prb_desc_ring.head_id)=24\n"
		"OFFSET(prb_desc_ring.tail_id)=32\n"
		"SIZE(prb_desc)=24\n"
		"OFFSET(prb_desc.state_var)=0\n"
		"OFFSET(prb_desc.text_blk_lpos)=8\n"
		"SIZE(prb_data_blk_lpos)=16\n"
		"OFFSET(prb_data_blk_lpos.begin)=0\n"
		"OFFSET(prb_data_blk_lpos.next)=8\n"
		"SIZE(printk_info)=88\n"
		"OFFSET(printk_info.seq)=0\n"
		"OFFSET(printk_info.ts_nsec)=8\n"
		"OFFSET(printk_info.text_len)=16\n"
		"OFFSET(printk_info.caller_id)=20\n"
		"OFFSET(printk_info.dev_info)=24\n"
		"SIZE(prb_data_ring)=32\n"
		"OFFSET(prb_data_ring.size_bits)=0\n"
		"OFFSET(prb_data_ring.data)=8\n"
		"OFFSET(prb_data_ring.head_lpos)=16\n"
		"OFFSET(prb_data_ring.tail_lpos)=24\n"
		"SIZE(atomic_long_t)=8\n"
		"OFFSET(atomic_long_t.counter)=0\n"
		"NUMBER(KERNEL_IMAGE_SIZE)=1073741824\n";
	char vmci[4096];
	size_t vlen, note_len, phoff = 64, notes_off, ram_off, hi_off, hi_len = 0, total;
	uint8_t *f, *ram;
	uint64_t head = 0, first, n = o->n;
	Lpos *l = g_new0(Lpos, n ? n : 1);
	unsigned kept = coregen_kept(o->n), nph = 2;
	bool tracing = o->trace_cpus || o->map;
	Mem *m = g_new0(Mem, 1);

	m->ram = ram = g_malloc0(RAM);
	m->t = truth;
	if (truth) {
		memset(truth, 0, sizeof(*truth));
		truth->events = g_array_new(FALSE, TRUE, sizeof(CoregenEvent));
		truth->recs = g_array_new(FALSE, TRUE, sizeof(CoregenRec));
	}
	vlen = (size_t)snprintf(vmci, sizeof(vmci),
				"%sSYMBOL(prb)=%llx\nSYMBOL(init_top_pgt)=%llx\n"
				"NUMBER(phys_base)=%lld\nNUMBER(pgtable_l5_enabled)=%d\n"
				"KERNELOFFSET=%llx\n", layout,
				(unsigned long long)V(P_PRB_PTR),
				(unsigned long long)V(P_PGD),
				PHYS_BASE_NUM, o->l5, (unsigned long long)KASLR);
	if (tracing) {
		m->hi = g_malloc0(HI_MAX);
		gen_tracing(m, o);
		hi_len = (m->hi_used + PG - 1) & ~(uint64_t)(PG - 1);
		nph = 3;
		vlen += (size_t)snprintf(vmci + vlen, sizeof(vmci) - vlen,
					 "SYMBOL(global_trace)=%llx\n"
					 "OFFSET(trace_array.array_buffer)=%d\n"
					 "OFFSET(array_buffer.buffer)=%d\n"
					 "SYMBOL(ring_buffer_dump_info)=%llx\n"
					 "SYMBOL(ftrace_stackmap_dump_info)=%llx\n",
					 (unsigned long long)V(P_GTRACE), TR_ARRAY_BUFFER, AB_BUFFER,
					 (unsigned long long)V(P_RBINFO),
					 (unsigned long long)V(P_SMINFO));
		g_assert(vlen < sizeof(vmci));
	}
	note_len = o->no_vmcoreinfo ? 0 : 12 + 12 + ((vlen + 3) & ~(size_t)3);
	notes_off = phoff + nph * 56;
	ram_off = (notes_off + note_len + 4095) & ~(size_t)4095;
	hi_off = ram_off + RAM;
	total = hi_off + hi_len;
	f = g_malloc0(total);
	/* ELF header */
	memcpy(f, ELFMAG, SELFMAG);
	f[EI_CLASS] = ELFCLASS64;
	f[EI_DATA] = ELFDATA2LSB;
	f[EI_VERSION] = EV_CURRENT;
	f[16] = ET_CORE;
	f[18] = EM_X86_64;
	put32(f + 20, EV_CURRENT);
	put64(f + 32, phoff);
	f[52] = 64;
	f[54] = 56;
	f[56] = (uint8_t)nph;
	/* PT_NOTE, PT_LOAD */
	put32(f + phoff, PT_NOTE);
	put64(f + phoff + 8, notes_off);
	put64(f + phoff + 32, note_len);
	put64(f + phoff + 40, note_len);
	put32(f + phoff + 56, PT_LOAD);
	put64(f + phoff + 56 + 8, ram_off);
	put64(f + phoff + 56 + 24, 0);
	put64(f + phoff + 56 + 32, RAM);
	put64(f + phoff + 56 + 40, RAM);
	if (hi_len) {
		uint8_t *ph = f + phoff + 2 * 56;

		put32(ph, PT_LOAD);
		put64(ph + 8, hi_off);
		put64(ph + 24, HI_BASE);
		put64(ph + 32, hi_len);
		put64(ph + 40, hi_len);
		memcpy(f + hi_off, m->hi, hi_len);
	}
	if (note_len) {
		uint8_t *nt = f + notes_off;

		put32(nt, 11);
		put32(nt + 4, (uint32_t)vlen);
		put32(nt + 8, 0);
		memcpy(nt + 12, "VMCOREINFO", 11);
		memcpy(nt + 24, vmci, vlen);
	}
	/* page tables: PAGE_OFFSET -> a 2 MiB page at physical 0 */
	put64(ram + P_PGD + ((PAGE_OFFSET >> 39) & 511) * 8, P_PUD | 0x63);
	put64(ram + P_PUD + ((PAGE_OFFSET >> 30) & 511) * 8, P_PMD | 0x63);
	put64(ram + P_PMD + ((PAGE_OFFSET >> 21) & 511) * 8, o->unmap_data ? 0 : 0xe3);
	/* prb -> the ring */
	put64(ram + P_PRB_PTR, V(P_RB));
	put32(ram + P_RB + 0, COREGEN_DESC_BITS);
	put64(ram + P_RB + 8, V(P_DESCS));
	put64(ram + P_RB + 16, V(P_INFOS));
	put32(ram + P_RB + 48, COREGEN_DATA_BITS);
	put64(ram + P_RB + 56, PAGE_OFFSET + P_DATA);
	/* the records: ids are seqs here (the kernel's start at DESC0_ID + 1; any do) */
	for (uint64_t i = 0; i < n; i++)
		l[i] = place(&head, i);
	first = n - kept;
	/* when the ring is not full, tail_id is a reusable descriptor before the first
	 * record, as prb_init()'s placeholder or a dropped record leaves it */
	{
		uint64_t tail = first ? first - 1 : (uint64_t)-1 & ~(3ull << 62);
		uint8_t *d = ram + P_DESCS + (tail & (NDESC - 1)) * DESC_SZ;

		if (kept < NDESC) {
			put64(d, (3ull << 62) | (tail & ~(3ull << 62)));
			put64(d + 8, 1);
			put64(d + 16, 1);
		}
		put64(ram + P_RB + 32, kept < NDESC ? tail : first);
	}
	put64(ram + P_RB + 24, n ? n - 1 : (uint64_t)-1 & ~(3ull << 62));
	for (uint64_t s = first; s < n; s++) {
		uint8_t *d = ram + P_DESCS + (s & (NDESC - 1)) * DESC_SZ;
		uint8_t *in = ram + P_INFOS + (s & (NDESC - 1)) * INFO_SZ;
		const char *t = coregen_text(s);
		uint64_t at = (l[s].begin >> COREGEN_DATA_BITS) == (l[s].next >> COREGEN_DATA_BITS)
			      ? (l[s].begin & (NDATA - 1)) : 0;
		uint64_t state = (s == n - 1 && o->reserved_last) ? 0 : 2;

		put64(d, (state << 62) | s);
		put64(d + 8, l[s].begin);
		put64(d + 16, l[s].next);
		put64(in, s);
		put64(in + 8, coregen_ts(s));
		in[16] = (uint8_t)strlen(t);
		in[17] = 0;
		put32(in + 20, 0x80000000u | (uint32_t)(s & 1));
		put64(ram + P_DATA + at, (s == n - 1 && o->bad_block_id) ? s + 100 : s);
		memcpy(ram + P_DATA + at + 8, t, strlen(t));
	}
	memcpy(f + ram_off, ram, RAM);
	g_free(l);
	g_free(ram);
	g_free(m->hi);
	g_free(m);
	*len = total;
	return f;
}

uint8_t *coregen_build(const CoregenOpts *o, size_t *len)
{
	return build(o, len, NULL);
}

uint8_t *coregen_build_truth(const CoregenOpts *o, size_t *len, CoregenTruth *t)
{
	return build(o, len, t);
}
