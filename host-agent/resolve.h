/* SPDX-License-Identifier: MIT */
/*
 * resolve.h - runtime addresses to symbols, through a boot's kallsyms snapshot.
 *
 * HaSyms is parsed from the text of /proc/kallsyms as the guest sent it (KSYMS), so
 * KASLR and module load addresses are those of that boot. It names an address the
 * way the guest kernel's own %pS does (what its trace and stack_map files print):
 *
 *  - Every symbol type counts, as in the kernel's lookup (with KALLSYMS_ALL a data
 *    symbol ends the symbol before it).
 *  - Among aliases (symbols at one address) the first in the kernel's kallsyms
 *    table: linux-6.1 kernel/kallsyms.c get_symbol_pos() walks back to the first
 *    entry with the address, and scripts/kallsyms.c compare_symbols() sorted the
 *    table weak symbols last, then linker-script symbols (__sched_text_start,
 *    __lock_text_start, __cpuidle_text_start, __X_end ...), then by more leading
 *    underscores, else in nm's order (by name: __do_sys_X before __x64_sys_X).
 *    /proc/kallsyms lists vmlinux in that order; the same ranking is applied here so
 *    that a snapshot in another order names addresses the same way. A module's
 *    aliases keep the snapshot's order (kernel/module/kallsyms.c takes the first of
 *    its symtab, the order /proc/kallsyms lists it in).
 *  - The size %pS prints is the distance to the next address of the same region.
 *
 * Lookup is a binary search for the last address at or below the IP; an IP above
 * it by HA_SYM_MAX_SIZE or more is reported as unresolved rather than blamed on it.
 */
#ifndef HA_RESOLVE_H
#define HA_RESOLVE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "resolve-dwarf.h"
#include "store.h"

#define HA_SYM_MAX_SIZE (1u << 20)

typedef struct _HaSyms HaSyms;

/* Parse kallsyms text (lines "ADDR TYPE NAME [MODULE]"); bad lines are skipped.
 * Never NULL; free with ha_syms_free(). */
HaSyms *ha_syms_parse(const char *text, size_t len);
void ha_syms_free(HaSyms *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaSyms, ha_syms_free)

/* The newest complete KSYMS snapshot of @boot (empty when none). Free with
 * ha_syms_free(). */
HaSyms *ha_syms_load(HaStore *store, int64_t boot);

/* Call @fn once per symbol address, in address order, with the name the kernel
 * gives that address (module NULL for vmlinux). */
void ha_syms_foreach(const HaSyms *s, void (*fn)(uint64_t addr, const char *name,
						const char *module, void *user), void *user);

/* Symbols parsed, aliases included. */
guint ha_syms_count(const HaSyms *s);

/* As the kernel's %pS: "name+0xoff/0xsize" or "name+0xoff/0xsize [module]" (no
 * "/0xsize" when the symbol is its region's last), or "0x<ip>" when unresolved.
 * g_free(). */
char *ha_syms_format(const HaSyms *s, uint64_t ip);

/* As the kernel's %ps: "name" or "name [module]", or "0x<ip>". g_free(). */
char *ha_syms_format_name(const HaSyms *s, uint64_t ip);

/* The name of @ip's symbol (owned by @s) and @ip's offset in it, or NULL. */
const char *ha_syms_name(const HaSyms *s, uint64_t ip, uint64_t *ret_off);

/*
 * Add DWARF from the boot's vmlinux: @d (borrowed, must outlive @s) at KASLR slide
 * @slide (runtime minus link-time address).
 */
void ha_syms_set_dwarf(HaSyms *s, HaDwarf *d, int64_t slide);

/* The DWARF set by ha_syms_set_dwarf() (borrowed), or NULL. */
HaDwarf *ha_syms_dwarf(const HaSyms *s);

/* Source locations for the return address @ip (innermost inlined function first,
 * see ha_dwarf_lookup()), or NULL without DWARF for it. g_strfreev(). */
char **ha_syms_lines(const HaSyms *s, uint64_t ip);

#endif /* HA_RESOLVE_H */
