// SPDX-License-Identifier: MIT
/* kvmem.c - kernel virtual addresses to the core's physical memory (see kvmem.h). */
#include "kvmem.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

#define START_KERNEL_MAP	0xffffffff80000000ull
#define PAGE_SZ			4096ull
/* bits 12..51 of a page-table entry; bit 63 is NX, bits 52..62 software */
#define PTE_ADDR		0x000ffffffffff000ull
#define PTE_PRESENT		1ull
#define PTE_HUGE		(1ull << 7)

struct _HaKvmem {
	HaCore *core;
	uint64_t phys_base;
	uint64_t image_size;	/* KERNEL_IMAGE_SIZE */
	uint64_t pgd;		/* physical address of init_top_pgt */
	uint64_t sme_mask;	/* the memory-encryption bit, masked off entries */
};

HaKvmem *ha_kvmem_new(HaCore *core, const HaVmci *vi, GError **error)
{
	g_autoptr(HaKvmem) m = g_new0(HaKvmem, 1);
	int64_t phys_base, image_size, l5 = 0, sme = 0;
	uint64_t top;

	m->core = core;
	if (!ha_vmci_number(vi, "phys_base", &phys_base) ||
	    !ha_vmci_symbol(vi, "init_top_pgt", &top)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "VMCOREINFO has no NUMBER(phys_base) or SYMBOL(init_top_pgt)"
			    " (not an x86-64 kernel?)");
		return NULL;
	}
	if (ha_vmci_number(vi, "pgtable_l5_enabled", &l5) && l5 != 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "the guest uses 5-level paging, which is not supported");
		return NULL;
	}
	if (!ha_vmci_number(vi, "KERNEL_IMAGE_SIZE", &image_size) || image_size <= 0 ||
	    (uint64_t)image_size > (1ull << 30))
		image_size = 1ll << 30;	/* KASLR's: the largest the kernel uses */
	ha_vmci_number(vi, "sme_mask", &sme);
	m->phys_base = (uint64_t)phys_base;
	m->image_size = (uint64_t)image_size;
	m->sme_mask = (uint64_t)sme;
	if (top < START_KERNEL_MAP || top - START_KERNEL_MAP >= m->image_size) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "SYMBOL(init_top_pgt)=%" PRIx64 " is not in the kernel image", top);
		return NULL;
	}
	m->pgd = top - START_KERNEL_MAP + m->phys_base;
	return g_steal_pointer(&m);
}

void ha_kvmem_free(HaKvmem *m)
{
	g_free(m);
}

bool ha_kvmem_translate(HaKvmem *m, uint64_t va, uint64_t *ret)
{
	uint64_t table = m->pgd;

	if (va >= START_KERNEL_MAP && va - START_KERNEL_MAP < m->image_size) {
		*ret = va - START_KERNEL_MAP + m->phys_base;
		return true;
	}
	/* levels 4..1: PML4 (bits 47..39), PDPT (38..30), PD (29..21), PT (20..12) */
	for (int level = 4; level >= 1; level--) {
		int shift = 12 + 9 * (level - 1);
		uint64_t e;

		if (!ha_core_read_phys(m->core, table + ((va >> shift) & 511) * 8, &e, 8))
			return false;
		e = GUINT64_FROM_LE(e) & ~m->sme_mask;
		if (!(e & PTE_PRESENT))
			return false;
		if (level == 1 || ((level == 2 || level == 3) && (e & PTE_HUGE))) {
			uint64_t mask = (1ull << shift) - 1;

			*ret = ((e & PTE_ADDR) & ~mask) | (va & mask);
			return true;
		}
		table = e & PTE_ADDR;
	}
	return false;	/* not reached */
}

bool ha_kvmem_read(HaKvmem *m, uint64_t va, void *buf, size_t len, GError **error)
{
	uint8_t *out = buf;

	if (len > UINT64_MAX - va) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "%zu bytes at 0x%" PRIx64 " wrap the address space", len, va);
		return false;
	}
	while (len > 0) {
		size_t n = (size_t)MIN((uint64_t)len, PAGE_SZ - (va & (PAGE_SZ - 1)));
		uint64_t pa;

		if (!ha_kvmem_translate(m, va, &pa)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "kernel address 0x%" PRIx64 " is not mapped in the dump", va);
			return false;
		}
		if (!ha_core_read_phys(m->core, pa, out, n)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "kernel address 0x%" PRIx64 " (physical 0x%" PRIx64 ") is"
				    " not in the dump", va, pa);
			return false;
		}
		out += n;
		va += n;
		len -= n;
	}
	return true;
}

bool ha_kvmem_u64(HaKvmem *m, uint64_t va, uint64_t *ret, GError **error)
{
	uint64_t v;

	if (!ha_kvmem_read(m, va, &v, 8, error))
		return false;
	*ret = GUINT64_FROM_LE(v);
	return true;
}

bool ha_kvmem_u32(HaKvmem *m, uint64_t va, uint32_t *ret, GError **error)
{
	uint32_t v;

	if (!ha_kvmem_read(m, va, &v, 4, error))
		return false;
	*ret = GUINT32_FROM_LE(v);
	return true;
}
