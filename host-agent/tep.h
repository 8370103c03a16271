/* SPDX-License-Identifier: MIT */
/*
 * tep.h - libtraceevent glue: parse the guest's raw ring-buffer pages.
 *
 * A HaTep owns one struct tep_handle built from the FORMAT texts the guest sent
 * (header_page and SYSTEM/EVENT formats) and one struct kbuffer. ha_tep_walk_page()
 * pads a PAGE payload (page header + committed bytes) back to the page size, checks
 * the committed size against what was received, and walks it with kbuffer, calling
 * back once per data event with its timestamp, its common fields and, for the two
 * stack events, the decoded stack:
 *
 *   ftrace/stack_id      (TRACE_STACK_ID, field `int stack_id`)   -> HA_EV_STACK_ID
 *   ftrace/kernel_stack  (TRACE_STACK, `int size; caller[]`)      -> HA_EV_KSTACK
 *   anything else                                                 -> HA_EV_OTHER
 *
 * Every field read is bounded by the event's size as kbuffer reports it, and that size
 * by the committed bytes of the page: nothing a guest writes into a page makes this
 * read outside the padded page buffer. Event ids come from the FORMAT texts, never
 * from constants.
 */
#ifndef HA_TEP_H
#define HA_TEP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "printfmt.h"

#define HA_KSTACK_MAX 512	/* deepest full stack we keep (kernel: 512 on x86) */

typedef enum {
	HA_EV_OTHER = 0,
	HA_EV_STACK_ID,
	HA_EV_KSTACK,
} HaEvKind;

typedef struct {
	uint64_t ts;		/* trace-clock timestamp, ns */
	int type;		/* event id from the format, -1 when unknown */
	HaEvKind kind;
	int pid;		/* common_pid */
	uint8_t flags;		/* common_flags */
	uint8_t preempt;	/* common_preempt_count */
	uint32_t stack_id;	/* HA_EV_STACK_ID */
	uint32_t nr_ips;	/* HA_EV_KSTACK */
	const uint64_t *ips;	/* HA_EV_KSTACK: valid during the callback only */
	const void *data;	/* the raw event (common header first) */
	uint32_t size;		/* its size in bytes */
} HaEvent;

typedef void (*HaEventFn)(const HaEvent *ev, void *user);

typedef struct _HaTep HaTep;

/* Create an empty parser for pages of @page_size bytes. Free with ha_tep_free(). */
HaTep *ha_tep_new(uint32_t page_size, bool big_endian);
void ha_tep_free(HaTep *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaTep, ha_tep_free)

/*
 * The budget of one HaTep, whatever a guest sends: libtraceevent's state grows with
 * every event format it parses (about 2.5 times the text, measured), and keeps part of
 * a text even when it refuses it. Texts handed to it count, accepted or not.
 */
#define HA_TEP_FORMATS_MAX	4096u		/* event formats parsed */
#define HA_TEP_BYTES_MAX	(8u << 20)	/* their text bytes */
#define HA_TEP_TEXT_MAX		(64u << 10)	/* one text (6.1's largest: ~4 KiB) */

/*
 * Every text is parsed in a sandboxed child first (sandbox.h, tep.c): a text on which
 * libtraceevent crashes, or that it refuses or takes in part, is refused and never
 * reaches this process's libtraceevent. Verdicts are cached per process by a hash of
 * the text (at most HA_TEP_VERDICTS_MAX of them, then every new text costs a child);
 * after HA_TEP_KILLED_MAX children of one HaTep died, its new texts are refused
 * unparsed (each death may have cost HA_SANDBOX_CPU_SECONDS).
 */
#define HA_TEP_VERDICTS_MAX	16384u
#define HA_TEP_KILLED_MAX	16u
#define HA_TEP_PROBE_RECORD	4096u		/* the sandbox prints one record this big */

/*
 * Add one FORMAT text: @name is "header_page", "header_event" (ignored: 6.1 has one
 * layout) or "SYSTEM/EVENT". A later text for an event name already known is ignored
 * (libtraceevent cannot replace an event): true, and ha_tep_knows() said so before.
 * Returns false and sets @error when the text is not a whole format file of that event
 * (cut, another event's, fields libtraceevent did not all parse, a crash of the
 * sandboxed parse: G_IO_ERROR_INVALID_DATA), over the budget (G_IO_ERROR_NO_SPACE), or
 * when no sandbox could run (G_IO_ERROR_FAILED: the host's fault, the name stays free).
 */
bool ha_tep_add_format(HaTep *t, const char *name, const char *text, size_t len,
		       GError **error);

/* True when a text for @name reached libtraceevent, accepted (header_page included)
 * or not: a later text of that name is not parsed again. */
bool ha_tep_knows(const HaTep *t, const char *name);
/* ... and was accepted. */
bool ha_tep_accepted(const HaTep *t, const char *name);
/* A text of @len bytes for @name that libtraceevent refused earlier (in an earlier
 * session of the boot): taken and charged to the budget, not parsed again. */
void ha_tep_add_refused(HaTep *t, const char *name, size_t len);
/* ... with its @text: the event id it declares (its "ID:" line) is remembered, and
 * ha_tep_format_event() prints that id's events as "NAME: <event type N of a format
 * the host refused: fields not decoded>". A text ha_tep_add_format() refused in the
 * sandbox or in libtraceevent is remembered the same way. */
void ha_tep_add_refused_text(HaTep *t, const char *name, const char *text, size_t len);

/* Bytes of event format texts handed to libtraceevent so far (the budget's use). */
size_t ha_tep_parsed_bytes(const HaTep *t);

/* True once header_page and ftrace/stack_id or ftrace/kernel_stack are known. */
bool ha_tep_ready(const HaTep *t);

/*
 * Walk one PAGE payload (@data, @len: page header + committed bytes). Calls @fn for
 * each data event in order. Returns the number of events, or -1 with @error set when
 * the page is malformed (no callback is made for a malformed page: the page is checked
 * whole before any event is delivered).
 */
long ha_tep_walk_page(HaTep *t, const uint8_t *data, size_t len, HaEventFn fn,
		      void *user, GError **error);
/* The same walk by libtraceevent's kbuffer (kbuffer_read_event() and
 * kbuffer_next_event()) instead of the bounds check's own list of the page's events:
 * the events must be the same (test-tep, fuzz-page). */
long ha_tep_walk_page_kbuffer(HaTep *t, const uint8_t *data, size_t len, HaEventFn fn,
			      void *user, GError **error);

/* Events the guest's ring buffer lost before the page last walked (RB_MISSED_EVENTS
 * with the count stored after the data): the count, -1 when lost but not counted,
 * 0 when none. */
long ha_tep_missed(const HaTep *t);

/* The "system/name" of an event id, or NULL. Owned by @t. */
const char *ha_tep_event_name(HaTep *t, int type);

/*
 * How the printer names code addresses (%pS, %ps, %pB, %pF, %pf fields, see
 * printfmt.h): @fn returns the text for @ip as the kernel's %p<conv> prints it (a new
 * string, g_free(), or NULL for 0x<ip>). Without it they print as 0x<ip>.
 */
typedef char *(*HaSymbolizeFn)(uint64_t ip, char conv, void *user);
void ha_tep_set_symbolizer(HaTep *t, HaSymbolizeFn fn, void *user);

/* Where the printer finds enum constants the format files leave as names
 * (printfmt.h). Set it before adding formats; without it such fields print raw. */
void ha_tep_set_enum_resolver(HaTep *t, HaEnumFn fn, void *user);

/* How many __print_symbolic()/__print_flags() fields of the formats added so far
 * print raw because a name in them is unknown. */
unsigned int ha_tep_raw_fields(const HaTep *t);

/* Teach libtraceevent a kernel symbol (for %p conversions it prints itself). */
void ha_tep_add_symbol(HaTep *t, uint64_t addr, const char *name, const char *module);

/* Print an event's fields as "name: a=1 b=2" into a new string (g_free); an event of
 * a refused format's id as "name: <event type N of a format the host refused: fields
 * not decoded>", one of an id no format named as "<unknown event type N>". */
char *ha_tep_format_event(HaTep *t, const HaEvent *ev);

#endif /* HA_TEP_H */
