/* SPDX-License-Identifier: MIT */
/*
 * vmcoreinfo.h - the kernel's VMCOREINFO: where its structures are, from the guest.
 *
 * A kernel with CRASH_CORE keeps a text of "KEY=VALUE" lines describing itself for
 * dump readers (kernel/crash_core.c, arch/x86/kernel/crash_core_64.c,
 * kernel/printk/printk.c log_buf_vmcoreinfo_setup()); with the fw_cfg driver
 * (FW_CFG_SYSFS) it hands the note to QEMU's -device vmcoreinfo, and QEMU's
 * dump-guest-memory copies it into the core as the ELF note "VMCOREINFO". The lines
 * used here:
 *
 *   OSRELEASE=6.1.0            BUILD-ID=hex          PAGESIZE=4096
 *   KERNELOFFSET=hex           the KASLR slide of the kernel's virtual addresses
 *   NUMBER(phys_base)=dec      where the kernel image is in physical memory
 *   NUMBER(pgtable_l5_enabled)=0|1
 *   SYMBOL(name)=hex           a runtime (slid) virtual address
 *   OFFSET(struct.member)=dec  SIZE(struct)=dec  LENGTH(name)=dec
 *
 * The text is the guest's and hostile: at most HA_VMCI_MAX_BYTES, at most
 * HA_VMCI_MAX_LINES lines, a value that does not parse is absent, a key given twice
 * keeps its first value.
 */
#ifndef HA_VMCOREINFO_H
#define HA_VMCOREINFO_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_VMCI_MAX_BYTES	(64u << 10)
#define HA_VMCI_MAX_LINES	2048

typedef struct _HaVmci HaVmci;

/* Parse @len bytes of VMCOREINFO text. NULL with @error when it is over the bounds
 * or has no line at all. */
HaVmci *ha_vmci_parse(const void *text, size_t len, GError **error);
void ha_vmci_free(HaVmci *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaVmci, ha_vmci_free)

/* The raw value of @key (e.g. "OSRELEASE", "SYMBOL(prb)"), owned by @v, or NULL. */
const char *ha_vmci_get(const HaVmci *v, const char *key);
/* SYMBOL(@name): true with the address. */
bool ha_vmci_symbol(const HaVmci *v, const char *name, uint64_t *ret);
/* OFFSET(@name) ("struct.member"), SIZE(@name), NUMBER(@name), LENGTH(@name): decimal. */
bool ha_vmci_offset(const HaVmci *v, const char *name, uint64_t *ret);
bool ha_vmci_size(const HaVmci *v, const char *name, uint64_t *ret);
bool ha_vmci_number(const HaVmci *v, const char *name, int64_t *ret);
/* A bare key with a hexadecimal value (KERNELOFFSET). */
bool ha_vmci_hex(const HaVmci *v, const char *key, uint64_t *ret);
guint ha_vmci_nr_lines(const HaVmci *v);

#endif /* HA_VMCOREINFO_H */
