/* SPDX-License-Identifier: MIT */
/*
 * kvmem.h - read an x86-64 guest kernel's virtual memory out of its core.
 *
 * With KASLR the kernel image sits at a random virtual offset (KERNELOFFSET) and a
 * random physical one (phys_base), and the direct map (page_offset_base) and vmalloc
 * area move too. Two translations, both from VMCOREINFO (vmcoreinfo.h):
 *  - the kernel image, [__START_KERNEL_map, + KERNEL_IMAGE_SIZE): physical =
 *    virtual - __START_KERNEL_map + phys_base (the kernel's __pa_symbol());
 *  - anything else (the direct map, vmalloc): the kernel's own page tables, walked
 *    from init_top_pgt (4-level paging; 5-level is refused), 4 KiB, 2 MiB and 1 GiB
 *    pages. A walk is at most four table reads, each checked to be in the core.
 * A read that crosses pages translates each page; any byte not in the core fails the
 * whole read. Nothing read from the guest is followed without translation.
 */
#ifndef HA_KVMEM_H
#define HA_KVMEM_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coredump.h"
#include "vmcoreinfo.h"

typedef struct _HaKvmem HaKvmem;

/* @core and @vi borrowed (they outlive the reader). NULL with @error when VMCOREINFO
 * lacks what the translation needs, or the paging mode is not supported. */
HaKvmem *ha_kvmem_new(HaCore *core, const HaVmci *vi, GError **error);
void ha_kvmem_free(HaKvmem *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaKvmem, ha_kvmem_free)

/* The physical address of @vaddr: false when it is not mapped or its tables are
 * not in the core. */
bool ha_kvmem_translate(HaKvmem *m, uint64_t vaddr, uint64_t *ret);
/* Read @len bytes at kernel virtual @vaddr. False with @error naming the address
 * when one of them cannot be read. */
bool ha_kvmem_read(HaKvmem *m, uint64_t vaddr, void *buf, size_t len, GError **error);
/* A little-endian u64 / u32 at @vaddr. */
bool ha_kvmem_u64(HaKvmem *m, uint64_t vaddr, uint64_t *ret, GError **error);
bool ha_kvmem_u32(HaKvmem *m, uint64_t vaddr, uint32_t *ret, GError **error);

#endif /* HA_KVMEM_H */
