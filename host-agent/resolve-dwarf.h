/* SPDX-License-Identifier: MIT */
/*
 * resolve-dwarf.h - file:line and inlined frames from a vmlinux with DWARF (elfutils libdwfl).
 *
 * A HaDwarf is one ELF file reported offline to libdwfl at its link-time addresses.
 * The caller converts a runtime address to a link-time one with the boot's KASLR
 * slide (HELLO text_addr minus the file's `_text`, ha_dwarf_symbol()). Lookups take
 * the address of a call (return address - 1) and return the chain of functions at
 * that address, innermost inlined function first, each with its source location.
 */
#ifndef HA_DWARF_H
#define HA_DWARF_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct _HaDwarf HaDwarf;

/* Open @path. NULL with @error when it is not a readable ELF file. Free with
 * ha_dwarf_free(). */
HaDwarf *ha_dwarf_open(const char *path, GError **error);
void ha_dwarf_free(HaDwarf *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaDwarf, ha_dwarf_free)

/* The file's GNU build-id: its length, and *ret_bits (owned by @d); 0 when none. */
int ha_dwarf_build_id(HaDwarf *d, const uint8_t **ret_bits);

/* The link-time address of symbol @name, 0 when absent. */
uint64_t ha_dwarf_symbol(HaDwarf *d, const char *name);

/*
 * Functions at link-time address @addr, innermost first, as "name (file:line)"
 * strings; inlined functions are marked "[inlined]". NULL when the address has no
 * debug information. Free with g_strfreev().
 */
char **ha_dwarf_lookup(HaDwarf *d, uint64_t addr);

/*
 * The value of the enum constant @name (DW_TAG_enumerator) in *ret, or false. The
 * first call reads every compile unit's enumeration types (one level into structures
 * too); the first of equal names wins.
 */
bool ha_dwarf_enum(HaDwarf *d, const char *name, int64_t *ret);

#endif /* HA_DWARF_H */
