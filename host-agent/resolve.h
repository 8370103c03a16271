/* SPDX-License-Identifier: MIT */
/*
 * resolve.h - runtime addresses to symbols, through a boot's kallsyms snapshot.
 *
 * HaSyms is a sorted array of (address, type, name, module) parsed from the text of
 * /proc/kallsyms as the guest sent it (KSYMS), so KASLR and module load addresses are
 * those of that boot. Lookup is a binary search for the last symbol at or below the
 * address; an address above the last symbol of its region by more than
 * HA_SYM_MAX_SIZE is reported as unresolved rather than blamed on that symbol.
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

guint ha_syms_count(const HaSyms *s);

/* Call @fn for every symbol (module NULL for vmlinux). */
void ha_syms_foreach(const HaSyms *s, void (*fn)(uint64_t addr, const char *name,
						const char *module, void *user), void *user);

/* "name+0xoff" or "name+0xoff [module]", or "0x<ip>" when unresolved. g_free(). */
char *ha_syms_format(const HaSyms *s, uint64_t ip);

/*
 * Add DWARF from the boot's vmlinux: @d (borrowed, must outlive @s) at KASLR slide
 * @slide (runtime minus link-time address).
 */
void ha_syms_set_dwarf(HaSyms *s, HaDwarf *d, int64_t slide);

/* Source locations for the return address @ip (innermost inlined function first,
 * see ha_dwarf_lookup()), or NULL without DWARF for it. g_strfreev(). */
char **ha_syms_lines(const HaSyms *s, uint64_t ip);

#endif /* HA_RESOLVE_H */
