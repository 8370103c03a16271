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
 *  - The size %pS prints is the distance to the next address of the same region (for
 *    a module, the next text symbol: its last function ends at its core text's end,
 *    which the host does not know, and is printed without a size).
 *
 * Regions. An address is named only by a symbol of the region that holds it, as the
 * kernel does, so that memory no symbol covers prints as the kernel prints it, a raw
 * "0x<ip>", never as the symbol before it:
 *
 *  - A module's symbols name only its core, [base, base + size) of its /proc/modules
 *    line (MODULES, the snapshot of the same generation; kernel/module/kallsyms.c
 *    looks up only the module __module_address() finds). Its freed .init.text, the
 *    gaps between modules, and symbols listed outside the core (init symbols of a
 *    module still Loading) name nothing.
 *  - vmlinux symbols name [_stext, _etext) and [_sinittext, _einittext) (when the
 *    snapshot has those markers): kernel/kallsyms.c is_ksym_addr(), whose init
 *    symbols keep naming .init.text after free_initmem().
 *  - A module-tagged symbol with no known core ([bpf], [__builtin__ftrace], a boot
 *    with no MODULES text, a base hidden by kptr_restrict) names up to the next
 *    symbol, within HA_SYM_MAX_SIZE, as every symbol did before MODULES was read.
 *  - Every address named is code (a return address): the symbol before it must be
 *    a function (t, T, w, W). Data symbols still end the function before them.
 *
 * Modules unloaded while traced. ha_syms_load() reads every complete snapshot of the
 * boot, newest first: vmlinux from the newest, each module load (name and base) from
 * the newest snapshot that lists it, so an unloaded module's symbols keep naming its
 * core for the events recorded while it was loaded. Where a newer load's core covers
 * an older one's (another module loaded at the same base), the newer one owns those
 * addresses: an older load never names an address of a module loaded after it. The
 * snapshots carry no trace time, so an event recorded by the older module at an
 * address the newer one reuses is named by the newer one.
 *
 * Lookup is a binary search for the last address at or below the IP in its region;
 * an IP above it by HA_SYM_MAX_SIZE or more is reported as unresolved rather than
 * blamed on it.
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
 * No module core is known: module symbols as "no known core" above. Never NULL;
 * free with ha_syms_free(). */
HaSyms *ha_syms_parse(const char *text, size_t len);

/* One snapshot of a boot's symbols: /proc/kallsyms text and the /proc/modules text
 * of the same generation (NULL: none). Borrowed by ha_syms_parse_snapshots(). */
typedef struct {
	const char *ksyms;
	size_t ksyms_len;
	const char *modules;
	size_t modules_len;
} HaSymsSnapshot;

/* Parse @n snapshots, newest first: vmlinux from the first, modules from each (see
 * "Modules unloaded while traced"). Never NULL; free with ha_syms_free(). */
HaSyms *ha_syms_parse_snapshots(const HaSymsSnapshot *snaps, guint n);
void ha_syms_free(HaSyms *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaSyms, ha_syms_free)

/* Every complete KSYMS snapshot of @boot, each with its MODULES text (the newest
 * must be complete, else the result is empty). Free with ha_syms_free(); NULL with
 * @error on a store error (store-report.h). */
HaSyms *ha_syms_load(HaStore *store, int64_t boot, GError **error);

/* Call @fn once per symbol address, in address order, with the name the kernel
 * gives that address (module NULL for vmlinux). */
void ha_syms_foreach(const HaSyms *s, void (*fn)(uint64_t addr, const char *name,
						const char *module, void *user), void *user);

/* Symbols kept, aliases included. */
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

/*
 * A stack_id to its stack. The id resolves through the epoch in effect at the
 * event's time: the newest epoch E of @boot with the id's tag that started by @ts_max
 * (PROTOCOL.md 6.1), then the stack the guest exported for (boot, E, id). Events of
 * one id seen from @ts_min to @ts_max may also be an older epoch's with the same tag
 * when E started after @ts_min: ambiguous, never guessed (the caller may retry with
 * finer time ranges). An event's own id: @ts_min = @ts_max = its time.
 */
typedef enum {
	HA_STACK_ID_RESOLVED,	/* epoch and ips */
	HA_STACK_ID_NO_EPOCH,	/* no epoch with its tag had started */
	HA_STACK_ID_SPAN,	/* the range spans two epochs with the same tag */
	HA_STACK_ID_NO_STACK,	/* epoch, but no stack received for the id in it */
} HaStackIdResult;

typedef struct {
	HaStackIdResult result;
	int64_t epoch;		/* -1 unless RESOLVED or NO_STACK */
	GArray *ips;		/* RESOLVED: uint64_t, innermost first (g_array_unref) */
} HaStackIdStack;

/* False with @error on a store error (store-report.h). */
bool ha_resolve_stack_id(HaStore *s, int64_t boot, uint32_t id, uint64_t ts_min,
			 uint64_t ts_max, HaStackIdStack *ret, GError **error);

#endif /* HA_RESOLVE_H */
