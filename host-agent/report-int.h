/* SPDX-License-Identifier: MIT */
/*
 * report-int.h - what the report files share (not for outside host-agent/report*.c).
 *
 *   report.c           the dispatch table (ha_report()), stacks and their resolution,
 *                      boot selection, symbols, the text and JSON forms of a stack
 *   report-boots.c     boots
 *   report-top.c       top, folded
 *   report-events.c    events (text, JSON, perf-script, folded), the decoding of a
 *                      boot's pages the event reports share (ha_rp_decode()) and an
 *                      event's text and JSON
 *   report-postmortem.c postmortem
 *   report-cpu.c       ha_report_cpu_events(): one CPU's events, for replication
 *   report-stack.c     stack ID
 *   report-flamegraph.c flamegraph
 *
 * Every report runs inside the read transaction ha_report() opens, writes its text or
 * JSON into the caller's GString and its warnings to stderr, never into the report.
 * No report sees SQL: it reads the store through store-report.h's typed calls, and a
 * store error fails it. A CPU's pages are walked into the pairer by pagewalk.h.
 */
#ifndef HA_REPORT_INT_H
#define HA_REPORT_INT_H

#include "clocksync.h"
#include "pair.h"
#include "report-json.h"
#include "report.h"
#include "resolve.h"
#include "store-report.h"
#include "tep.h"

#define HA_RP_TOP_DEFAULT	20u
#define HA_RP_EVENTS_DEFAULT	50u

typedef enum {
	ST_NONE,		/* the event had no stack event */
	ST_MAP,			/* resolved stack_id */
	ST_FULL,		/* inline full stack */
	ST_UNRESOLVED,		/* stack_id with no stack for its epoch */
	ST_LOST,		/* its stack event may have been lost with other events */
} HaRpStKind;

/* A stack as the reports show it. */
typedef struct {
	HaRpStKind kind;
	int64_t sid;		/* stack_id, or fullstacks.id */
	int64_t epoch;		/* ST_MAP */
	GArray *ips;		/* uint64_t, innermost first */
	const char *why;	/* ST_UNRESOLVED (static string) */
} HaRpStack;

extern const char HA_RP_WHY_PENDING[];
/* why of the stack of key HA_HIST_KEY_REFUSED (hist.h): events whose stacks the
 * boot's row limits did not store */
extern const char HA_RP_WHY_REFUSED[];
/* The stack object's "kind", by HaRpStKind. */
extern const char *const ha_rp_stack_kinds[];

void ha_rp_stack_clear(HaRpStack *s);
/* The stack of stack_id @id seen between @ts_min and @ts_max (resolve.h's
 * ha_resolve_stack_id()), or of fullstacks row @id. False with @error on a store
 * error. */
bool ha_rp_resolve_map(HaStore *s, int64_t boot, uint32_t id, uint64_t ts_min,
		       uint64_t ts_max, HaRpStack *ret, GError **error);
bool ha_rp_resolve_full(HaStore *s, int64_t id, HaRpStack *ret, GError **error);

/* The boot's ftrace/print format as the clock probes' marker events (clocksync.h),
 * which no report shows: ret->type -1 when the boot has none. False with @error on a
 * store error. */
bool ha_rp_load_marker(HaStore *s, int64_t boot, HaMarkerFormat *ret, GError **error);

/* pending_key()s of the events of @boot still waiting for their stack event in the
 * stored pairing state: g_hash_table_unref(); NULL with @error on a store error. */
GHashTable *ha_rp_pending_events(HaStore *s, int64_t boot, GError **error);
/*
 * Frames the agent dropped lie before an event at @ts of @cpu: finish as lost, in
 * @pair, the events waiting for their stack before each of @gaps (one CPU's of
 * ha_report_gaps(), or NULL) older than @ts, as the daemon did when it saw the gap.
 * *@next: the first gap not passed yet, advanced.
 */
void ha_rp_pass_gaps(HaPair *pair, uint32_t cpu, const GArray *gaps, guint *next,
		     uint64_t ts);
char *ha_rp_pending_key(uint32_t cpu, uint64_t ts, int pid);

/* As --boot names them (report.h's ha_report_select_boots()). */
GArray *ha_rp_select_boots(HaStore *s, const char *arg, GError **error);
/* The boot's boot_id as a UUID string ("?" without one): g_free(); NULL with @error
 * on a store error. */
char *ha_rp_boot_uuid(HaStore *s, int64_t boot, GError **error);
/* The boot's kallsyms, with @dw's DWARF when it fits the boot: ha_syms_free(); NULL
 * with @error on a store error. */
HaSyms *ha_rp_load_syms(HaStore *s, int64_t boot, HaDwarf *dw, GError **error);

/* The stack's one-line label ("stack_id 0x... (epoch 2, slot 5)"): g_free(). */
char *ha_rp_stack_label(const HaRpStack *st);
/* Its frames, one line each (and their source lines), after @indent. */
void ha_rp_print_frames(GString *o, const HaRpStack *st, const HaSyms *syms,
			const char *indent);
/* Its "stack" object as a value of @b. */
void ha_rp_json_stack(JsonBuilder *b, const HaRpStack *st, const HaSyms *syms);
/* Outermost first, ';'-separated, for flame graphs: g_free(). */
char *ha_rp_folded(const HaRpStack *st, const HaSyms *syms);
/* "YYYY-MM-DD HH:MM:SS" of a Unix time in us, "-" for none: g_free(). */
char *ha_rp_fmt_time(int64_t us);

/* A progress line on stderr when on a terminal, once a report has run for a second. */
typedef struct {
	gint64 start;
	gint64 last;
	bool shown;
	const char *what;
} HaRpProgress;

void ha_rp_progress_init(HaRpProgress *p, const char *what);
void ha_rp_progress_tick(HaRpProgress *p, uint64_t done, uint64_t total);
void ha_rp_progress_end(HaRpProgress *p);

/* ---- decoding a boot's events (report-events.c) ---- */

typedef struct {
	uint64_t ts;
	uint32_t cpu;
	int pid;
	char *text;
	HaRpStack st;
	bool recovered;		/* replayed from the crashed guest's memory, not streamed */
} HaRpEv;

/*
 * Per CPU (a GArray of guint64, by CPU), the trace-clock time from which that CPU's
 * events were recovered from the crashed guest's memory: the time of the first ring
 * event of its first chunk marked recovered (store.h; by seq), G_MAXUINT64 for a CPU
 * without. A CPU's recovered chunks hold events strictly newer than every one it
 * streamed (the seam), so an event at or after it is recovered. Not the chunks'
 * ts_min: that also counts streamed events whose stack event was recovered (they
 * are paired, and counted, where their stack arrives). @tep parses the pages. NULL
 * with @error on a store error.
 */
GArray *ha_rp_recovered_from(HaStore *s, int64_t boot, HaTep *tep, GError **error);

/* What ha_rp_on_paired() appends to. */
typedef struct {
	GArray *evs;		/* HaRpEv, clear func ha_rp_ev_clear() */
	HaStore *store;
	int64_t boot;
	GHashTable *pending;	/* ha_rp_pending_events() */
	const GArray *recovered_from;	/* ha_rp_recovered_from(), or NULL: none */
	GError *error;		/* the first store error resolving a stack: the caller
				 * fails with it (g_clear_error() it) */
} HaRpEvCtx;

/* HaPairFn: the paired event as an HaRpEv, its stack resolved, appended to @user's
 * (a store error is kept in @user's error, the event appended unresolved). */
void ha_rp_on_paired(const HaPaired *p, void *user);
void ha_rp_ev_clear(gpointer p);
/* The boot's formats and symbols in a new HaTep printing with @syms (which must outlive
 * it): g_autoptr(HaTep); NULL with @error on a store error. */
HaTep *ha_rp_load_tep(HaStore *s, int64_t boot, HaSyms *syms, GError **error);

/* What decoding a boot's events needs, loaded once (ha_rp_boot_load()). */
typedef struct {
	HaStore *store;
	int64_t boot;
	HaSyms *syms;		/* ha_rp_load_syms() */
	HaTep *tep;		/* ha_rp_load_tep(), printing with @syms */
	HaMarkerFormat marker;	/* ha_rp_load_marker() */
	GPtrArray *gaps;	/* ha_report_gaps() */
	GHashTable *pending;	/* ha_rp_pending_events() */
	GArray *recovered_from;	/* ha_rp_recovered_from() */
} HaRpBoot;

/* Load @boot's (@dw: the --vmlinux, or NULL) into *@ret: ha_rp_boot_clear() it, also
 * after a failure (false with @error). */
bool ha_rp_boot_load(HaStore *s, int64_t boot, HaDwarf *dw, HaRpBoot *ret, GError **error);
void ha_rp_boot_clear(HaRpBoot *b);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HaRpBoot, ha_rp_boot_clear)

/* Which of a boot's events ha_rp_decode() gives. */
typedef struct {
	int64_t cpu;		/* only this CPU's, -1: every CPU's */
	guint want;		/* no time range: enough of the newest chunks for the last
				 * @want events (and every chunk reaching past them) */
	int64_t since_ns, until_ns;	/* the chunks overlapping this range, -1: open */
	/* called after each chunk (may be NULL): no event decoded later is older than
	 * @limit (the streaming perf-script writes out and drops the older ones);
	 * false stops the decoding, with errno set */
	bool (*chunk_done)(GArray *evs, uint64_t limit, HaPair *pair, void *user);
	void *user;
} HaRpDecode;

/*
 * Decode the chunks of @b @d selects (each CPU's in the order its pages came), pair
 * their events with their stacks, and append them to @evs (HaRpEv, clear func
 * ha_rp_ev_clear()) sorted by time, their stacks resolved. Not filtered by @d's
 * range: the chunks overlapping it may hold events outside. Warnings (an unreadable
 * chunk, unparsable pages) go to stderr. False with @error on a store or write error.
 */
bool ha_rp_decode(HaRpBoot *b, const HaRpDecode *d, GArray *evs, GError **error);

/* An event's time on a host clock (clocksync.h), as events --host-time shows it. */
typedef struct {
	HaHostClock clock;
	int64_t ns;
	uint64_t unc;
} HaRpHostTime;

/*
 * One event as report events prints it: text ("\nTS [host ...] cpuN pid P  text",
 * " [recovered]" after the pid when it was, " [streamed]" otherwise only with
 * @mark_streamed, then its stack's label and frames) and JSON (its object as a value
 * of @j, "recovered" its last member). @host: NULL for none.
 */
void ha_rp_event_text(GString *out, const HaRpEv *e, const HaSyms *syms,
		      const HaRpHostTime *host, bool mark_streamed);
void ha_rp_event_json(JsonBuilder *j, const HaRpEv *e, const HaSyms *syms,
		      const HaRpHostTime *host);

/* The reports (@dw: the --vmlinux, or NULL). */
bool ha_rp_boots(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		 GError **error);
bool ha_rp_top(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
	       GError **error);
bool ha_rp_folded_report(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
			 GError **error);
bool ha_rp_events(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		  GError **error);
bool ha_rp_stack(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		 GError **error);
bool ha_rp_postmortem(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		      GError **error);
bool ha_rp_flamegraph(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		      GError **error);

#endif /* HA_REPORT_INT_H */
