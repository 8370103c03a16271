/* SPDX-License-Identifier: MIT */
/*
 * printfmt.h - make libtraceevent print an event's fields as the guest kernel did.
 *
 * The kernel prints an event with its compiled TP_printk(); libtraceevent evaluates
 * the text of that expression from the format file ("print fmt:"). With the format
 * files of a linux-6.1 guest, libtraceevent 1.7.1 prints some fields otherwise, and
 * ha_printfmt_fix() rewrites the print fmt line before tep_parse_format() sees it:
 *
 *  1. Constant subexpressions. `REC->flags & (0x00040000 | 0x00080000 | ...)` is
 *     evaluated as `(REC->flags & 0x00040000) | 0x00080000 | ...` (timer:timer_start
 *     printed flags=D|P|I for every timer). Every parenthesised expression of integer
 *     constants, and a cast of a constant to an integer type, is folded into one
 *     number first (not the argument list of a call, not a negative result).
 *  2. Names the format leaves unresolved. The kernel's eval map replaces the enum
 *     names declared with TRACE_DEFINE_ENUM() in the format files; others stay names
 *     (hrtimer_start's mode: HRTIMER_MODE_ABS ...), which libtraceevent reads as 0
 *     (mode=0x0 and 0x1 where the kernel says ABS and REL). Each such name is looked up
 *     through @fn (reports: the boot's vmlinux DWARF, --vmlinux). A __print_symbolic()
 *     or __print_flags() that still holds an unknown name prints its value raw, and
 *     says so: "0x1(raw)"; any other argument that still names something the host
 *     cannot evaluate (mm_page_alloc's page: vmemmap_base, a variable of the guest)
 *     prints "(unknown)".
 *  3. %pS, %ps, %pB, %pF, %pf. The kernel prints name+0xoff/0xsize [module] (%ps: name
 *     [module]); libtraceevent has no size and no module. Each becomes %s of the print
 *     function __ha_sym_S() (s, B, ...) registered by tep.c, which asks the boot's
 *     kallsyms. A bare %p becomes %016lx, which is how the kernel prints it with the
 *     trace option nohash-ptr (%px); with the default hash-ptr the kernel prints a hash
 *     keyed by a secret of that boot, which no host can reproduce.
 *
 * The text is the guest's: every scan is bounded by it and a line that does not parse
 * as expected is left as it was.
 */
#ifndef HA_PRINTFMT_H
#define HA_PRINTFMT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* The value of enum constant @name, or false. */
typedef bool (*HaEnumFn)(const char *name, int64_t *ret_value, void *user);

/*
 * A copy of the format text @text (@len bytes) with its print fmt line rewritten as
 * above (@fn may be NULL: every unresolved name then prints raw). *ret_raw, if not
 * NULL, gets the number of fields made to print raw. g_free().
 */
char *ha_printfmt_fix(const char *text, size_t len, HaEnumFn fn, void *user,
		      unsigned int *ret_raw);

/*
 * The same for any libtraceevent reader (a trace.dat for trace-cmd): only 1. and 2.'s
 * substitution of the names @fn knows, no host print function, the format string as
 * it was. Names @fn does not know stay as they are (libtraceevent prints 0 for them).
 * g_free().
 */
char *ha_printfmt_portable(const char *text, size_t len, HaEnumFn fn, void *user);

#endif /* HA_PRINTFMT_H */
