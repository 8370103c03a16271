// SPDX-License-Identifier: MIT
/* coregen.c - a synthetic guest core for the post-mortem tests (see coregen.h). */
#include "coregen.h"

#include <elf.h>
#include <glib.h>
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

uint8_t *coregen_build(const CoregenOpts *o, size_t *len)
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
	size_t vlen, note_len, phoff = 64, notes_off, ram_off, total;
	uint8_t *f, *ram;
	uint64_t head = 0, first, n = o->n;
	Lpos *l = g_new0(Lpos, n ? n : 1);
	unsigned kept = coregen_kept(o->n);

	vlen = (size_t)snprintf(vmci, sizeof(vmci),
				"%sSYMBOL(prb)=%llx\nSYMBOL(init_top_pgt)=%llx\n"
				"NUMBER(phys_base)=%lld\nNUMBER(pgtable_l5_enabled)=%d\n"
				"KERNELOFFSET=%llx\n", layout,
				(unsigned long long)V(P_PRB_PTR),
				(unsigned long long)V(P_PGD),
				PHYS_BASE_NUM, o->l5, (unsigned long long)KASLR);
	note_len = o->no_vmcoreinfo ? 0 : 12 + 12 + ((vlen + 3) & ~(size_t)3);
	notes_off = phoff + 2 * 56;
	ram_off = (notes_off + note_len + 4095) & ~(size_t)4095;
	total = ram_off + RAM;
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
	f[56] = 2;
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
	if (note_len) {
		uint8_t *nt = f + notes_off;

		put32(nt, 11);
		put32(nt + 4, (uint32_t)vlen);
		put32(nt + 8, 0);
		memcpy(nt + 12, "VMCOREINFO", 11);
		memcpy(nt + 24, vmci, vlen);
	}
	ram = f + ram_off;
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
	g_free(l);
	*len = total;
	return f;
}
