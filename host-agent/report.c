// SPDX-License-Identifier: MIT
/* report.c - queries to text and JSON (see report.h). */
#include "report.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk.h"
#include "clocksync.h"
#include "export-perf.h"
#include "flamegraph.h"
#include "hist.h"
#include "pair.h"
#include "proto.h"
#include "resolve.h"
#include "tep.h"

#define TOP_DEFAULT	20u
#define EVENTS_DEFAULT	50u

typedef enum {
	ST_NONE,		/* the event had no stack event */
	ST_MAP,			/* resolved stack_id */
	ST_FULL,		/* inline full stack */
	ST_UNRESOLVED,		/* stack_id with no stack for its epoch */
	ST_LOST,		/* its stack event may have been lost with other events */
} StKind;

typedef struct {
	StKind kind;
	int64_t sid;		/* stack_id, or fullstacks.id */
	int64_t epoch;		/* ST_MAP */
	GArray *ips;		/* uint64_t, innermost first */
	const char *why;	/* ST_UNRESOLVED (static string) */
} Stack;

static void stack_clear(Stack *s)
{
	if (s->ips)
		g_array_unref(s->ips);
	memset(s, 0, sizeof(*s));
}

static GArray *ips_from_blob(const void *blob, int bytes)
{
	GArray *a = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	const uint8_t *p = blob;

	for (int i = 0; i + 8 <= bytes; i += 8) {
		uint64_t v;

		memcpy(&v, p + i, 8);
		v = GUINT64_FROM_LE(v);
		g_array_append_val(a, v);
	}
	return a;
}

static const char WHY_SPAN[] = "its events span two epochs with the same tag";
static const char WHY_PENDING[] = "the stream ended before its stack event";

/* ---- events still waiting for their stack ---------------------------------------- */

static char *pending_key(uint32_t cpu, uint64_t ts, int pid)
{
	return g_strdup_printf("%u:%" PRIu64 ":%d", cpu, ts, pid);
}

static void pending_add(uint32_t cpu, uint64_t ts, int pid, void *set)
{
	g_hash_table_add(set, pending_key(cpu, ts, pid));
}

static void pending_none(const HaPaired *p, void *user)
{
	(void)p;
	(void)user;
}

/*
 * The events of @boot that wait for their stack event in the stored pairing state, as
 * a set of pending_key()s. The ingest counts an event (boots, top, folded) once its
 * stack event arrives or cannot arrive any more (BYE, lost events); when the stream
 * ends without BYE (a crash) the last events of each CPU stay waiting: `events`
 * decodes them, so every report counts them, as "stack not received". A boot whose
 * stream resumes pairs them and they leave this set. Free with g_hash_table_unref().
 */
static GHashTable *pending_events(HaStore *s, int64_t boot)
{
	GHashTable *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT pair_state FROM boots WHERE id = ?", NULL);

	if (!st)
		return set;
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) > 0) {
		g_autoptr(HaPair) p = ha_pair_new(pending_none, NULL);

		if (ha_pair_load(p, sqlite3_column_blob(st, 0),
				 (size_t)sqlite3_column_bytes(st, 0)))
			ha_pair_foreach_waiting(p, pending_add, set);
	}
	sqlite3_reset(st);
	return set;
}

/*
 * Which epoch does a stack_id seen between ts_min and ts_max belong to? The newest
 * epoch E with the id's tag that started by ts_max. If E started after ts_min and an
 * older epoch with the same tag exists, some of those events may be that older
 * epoch's: ambiguous (the caller retries with finer time ranges).
 */
static void resolve_map(HaStore *s, int64_t boot, uint32_t id, uint64_t ts_min,
			uint64_t ts_max, Stack *ret)
{
	sqlite3_stmt *st;
	int64_t epoch = -1, start = 0;

	ret->kind = ST_UNRESOLVED;
	ret->sid = id;
	ret->epoch = -1;
	st = ha_store_stmt(s, "SELECT epoch, start_ts FROM epochs WHERE boot = ? AND tag = ?"
			   " AND start_ts <= ? ORDER BY epoch DESC LIMIT 1", NULL);
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, smp_id_tag(id));
	sqlite3_bind_int64(st, 3, (int64_t)ts_max);
	if (sqlite3_step(st) == SQLITE_ROW) {
		epoch = sqlite3_column_int64(st, 0);
		start = sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (epoch < 0) {
		ret->why = "no epoch with its tag had started";
		return;
	}
	if ((uint64_t)start > ts_min) {
		st = ha_store_stmt(s, "SELECT 1 FROM epochs WHERE boot = ? AND tag = ? AND"
				   " epoch < ? LIMIT 1", NULL);
		sqlite3_bind_int64(st, 1, boot);
		sqlite3_bind_int64(st, 2, smp_id_tag(id));
		sqlite3_bind_int64(st, 3, epoch);
		if (sqlite3_step(st) == SQLITE_ROW) {
			sqlite3_reset(st);
			ret->why = WHY_SPAN;
			return;
		}
		sqlite3_reset(st);
	}
	ret->epoch = epoch;
	st = ha_store_stmt(s, "SELECT ips FROM stacks WHERE boot = ? AND epoch = ? AND"
			   " stack_id = ?", NULL);
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, epoch);
	sqlite3_bind_int64(st, 3, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		ret->kind = ST_MAP;
		ret->ips = ips_from_blob(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0));
	} else {
		ret->why = "no stack received for this id in its epoch";
	}
	sqlite3_reset(st);
}

static void resolve_full(HaStore *s, int64_t id, Stack *ret)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT ips FROM fullstacks WHERE id = ?", NULL);

	ret->kind = ST_UNRESOLVED;
	ret->sid = id;
	ret->why = "full stack missing";
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		ret->kind = ST_FULL;
		ret->ips = ips_from_blob(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0));
	}
	sqlite3_reset(st);
}

/* ---- progress: on a terminal, once a report has run for a second ----------------- */

typedef struct {
	gint64 start;
	gint64 last;
	bool shown;
	const char *what;
} Progress;

static void progress_init(Progress *p, const char *what)
{
	*p = (Progress){ .start = g_get_monotonic_time(), .what = what };
}

static void progress_tick(Progress *p, uint64_t done, uint64_t total)
{
	gint64 now = g_get_monotonic_time();

	if (now - p->start < G_USEC_PER_SEC || now - p->last < G_USEC_PER_SEC / 5 ||
	    !isatty(2))
		return;
	p->last = now;
	p->shown = true;
	g_printerr("\r%s: %" PRIu64 "/%" PRIu64 " chunks (%.0f%%)", p->what, done, total,
		   total ? 100.0 * (double)done / (double)total : 100.0);
}

static void progress_end(Progress *p)
{
	if (p->shown)
		g_printerr("\r\033[K");
}

/* ---- output helpers ----------------------------------------------------------- */

void ha_report_json_str(GString *o, const char *s)
{
	g_string_append_c(o, '"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			g_string_append_printf(o, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			g_string_append_printf(o, "\\u%04x", ch);
		else
			g_string_append_c(o, (char)ch);
	}
	g_string_append_c(o, '"');
}

static char *fmt_time(int64_t us)
{
	g_autoptr(GDateTime) t = NULL;

	if (us <= 0)
		return g_strdup("-");
	t = g_date_time_new_from_unix_utc(us / G_USEC_PER_SEC);
	return t ? g_date_time_format(t, "%Y-%m-%d %H:%M:%S") : g_strdup("-");
}

static char *stack_label(const Stack *st)
{
	switch (st->kind) {
	case ST_NONE:
		return g_strdup(st->why ? "[stack not received: the stream ended before it]" :
				"[no stack]");
	case ST_LOST:
		return g_strdup("[stack lost with the events lost after it]");
	case ST_MAP:
		return g_strdup_printf("stack_id 0x%08" PRIx64 " (epoch %" PRId64 ", slot %u)",
				       st->sid, st->epoch, smp_id_slot((uint32_t)st->sid));
	case ST_FULL:
		return g_strdup_printf("full stack #%" PRId64, st->sid);
	default:
		return g_strdup_printf("stack_id 0x%08" PRIx64 " UNRESOLVED: %s", st->sid,
				       st->why);
	}
}

static void print_frames(GString *o, const Stack *st, const HaSyms *syms, const char *indent)
{
	if (!st->ips)
		return;
	for (guint i = 0; i < st->ips->len; i++) {
		uint64_t ip = g_array_index(st->ips, uint64_t, i);
		g_autofree char *f = ha_syms_format(syms, ip);
		g_auto(GStrv) lines = ha_syms_lines(syms, ip);

		g_string_append_printf(o, "%s%s\n", indent, f);
		for (guint j = 0; lines && lines[j]; j++)
			g_string_append_printf(o, "%s    %s\n", indent, lines[j]);
	}
}

static void json_frames(GString *o, const Stack *st, const HaSyms *syms)
{
	g_string_append(o, "[");
	for (guint i = 0; st->ips && i < st->ips->len; i++) {
		uint64_t ip = g_array_index(st->ips, uint64_t, i);
		g_autofree char *f = ha_syms_format(syms, ip);
		g_autofree char *a = g_strdup_printf("0x%" PRIx64, ip);

		g_string_append_printf(o, "%s{\"ip\":", i ? "," : "");
		ha_report_json_str(o, a);
		g_string_append(o, ",\"sym\":");
		ha_report_json_str(o, f);
		{
			g_auto(GStrv) lines = ha_syms_lines(syms, ip);

			if (lines) {
				g_string_append(o, ",\"src\":[");
				for (guint j = 0; lines[j]; j++) {
					if (j)
						g_string_append_c(o, ',');
					ha_report_json_str(o, lines[j]);
				}
				g_string_append(o, "]");
			}
		}
		g_string_append(o, "}");
	}
	g_string_append(o, "]");
}

static const char *const stack_kinds[] = { "none", "stack_id", "full", "unresolved",
					   "lost" };

static void json_stack(GString *o, const Stack *st, const HaSyms *syms)
{
	g_string_append_printf(o, "{\"kind\":\"%s\"", stack_kinds[st->kind]);
	if (st->kind == ST_MAP || st->kind == ST_UNRESOLVED)
		g_string_append_printf(o, ",\"stack_id\":%" PRId64 ",\"epoch\":%" PRId64,
				       st->sid, st->epoch);
	if (st->kind == ST_FULL)
		g_string_append_printf(o, ",\"full_id\":%" PRId64, st->sid);
	if (st->why) {
		g_string_append(o, ",\"why\":");
		ha_report_json_str(o, st->why);
	}
	g_string_append(o, ",\"frames\":");
	json_frames(o, st, syms);
	g_string_append(o, "}");
}

/* Outermost first, ';'-separated, for flame graphs. g_free(). */
static char *folded(const Stack *st, const HaSyms *syms)
{
	GString *o = g_string_new(NULL);

	if (st->kind == ST_NONE || st->kind == ST_UNRESOLVED || st->kind == ST_LOST) {
		g_autofree char *l = stack_label(st);

		g_string_append(o, l);
		return g_string_free(o, FALSE);
	}
	for (guint i = st->ips->len; i-- > 0;) {
		g_autofree char *f = ha_syms_format(syms, g_array_index(st->ips, uint64_t, i));
		char *plus = strchr(f, '+');

		if (plus)
			*plus = '\0';	/* flame graphs merge by function */
		if (o->len)
			g_string_append_c(o, ';');
		g_string_append(o, f);
	}
	return g_string_free(o, FALSE);
}

bool ha_report_vmlinux_fits(HaStore *s, int64_t boot, HaDwarf *dw, int64_t *ret_slide)
{
	sqlite3_stmt *st;
	const uint8_t *bits = NULL;
	int nbits = ha_dwarf_build_id(dw, &bits);
	uint64_t text = 0, link;
	bool match = true;

	st = ha_store_stmt(s, "SELECT text_addr, build_id FROM boots WHERE id = ?", NULL);
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW) {
		int blen = sqlite3_column_bytes(st, 1);

		text = (uint64_t)sqlite3_column_int64(st, 0);
		if (blen > 0 && (blen != nbits || memcmp(bits, sqlite3_column_blob(st, 1), blen)))
			match = false;
	}
	sqlite3_reset(st);
	link = ha_dwarf_symbol(dw, "_text");
	if (!match || !link || !text) {
		g_printerr("host-agent: --vmlinux not used for boot %" PRId64 " (%s)\n",
			   boot, !match ? "its build-id differs from the boot's" :
			   "no _text address to compute the KASLR slide");
		return false;
	}
	*ret_slide = (int64_t)(text - link);
	return true;
}

/*
 * The boot's kallsyms, plus @dw's DWARF when @dw is that boot's vmlinux
 * (ha_report_vmlinux_fits()). Free with ha_syms_free().
 */
static HaSyms *load_syms(HaStore *s, int64_t boot, HaDwarf *dw)
{
	HaSyms *syms = ha_syms_load(s, boot);
	int64_t slide;

	if (dw && ha_report_vmlinux_fits(s, boot, dw, &slide))
		ha_syms_set_dwarf(syms, dw, slide);
	return syms;
}

/* ---- boot selection -------------------------------------------------------------- */

static GArray *select_boots(HaStore *s, const char *arg, GError **error)
{
	GArray *ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
	sqlite3_stmt *st;
	const char *sql;
	g_autofree char *pat = NULL;

	if (!arg) {
		sql = "SELECT MAX(id) FROM boots HAVING MAX(id) IS NOT NULL";
	} else if (strcmp(arg, "all") == 0) {
		sql = "SELECT id FROM boots ORDER BY id";
	} else if (arg[strspn(arg, "0123456789")] == '\0' && strlen(arg) < 10) {
		sql = "SELECT id FROM boots WHERE id = CAST(?1 AS INTEGER)";
	} else {
		GString *p = g_string_new(NULL);

		for (const char *c = arg; *c; c++)
			if (*c != '-')
				g_string_append_c(p, g_ascii_toupper(*c));
		g_string_append_c(p, '%');
		pat = g_string_free(p, FALSE);
		sql = "SELECT id FROM boots WHERE hex(boot_uuid) LIKE ?2 ORDER BY id";
	}
	st = ha_store_stmt(s, sql, error);
	if (!st) {
		g_array_unref(ids);
		return NULL;
	}
	if (arg && !pat && strcmp(arg, "all"))
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
	if (pat)
		sqlite3_bind_text(st, 2, pat, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW)
		g_array_append_vals(ids, &(int64_t){ sqlite3_column_int64(st, 0) }, 1);
	sqlite3_reset(st);
	if (!ids->len) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no boot matches '%s' in %s",
			    arg ? arg : "(latest)", ha_store_path(s));
		g_array_unref(ids);
		return NULL;
	}
	return ids;
}

static char *boot_uuid_str(HaStore *s, int64_t boot)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT lower(hex(boot_uuid)) FROM boots WHERE"
					 " id = ?", NULL);
	char *r = NULL;

	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 0);

		if (h && strlen(h) == 32)
			r = g_strdup_printf("%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12,
					    h + 16, h + 20);
	}
	sqlite3_reset(st);
	return r ? r : g_strdup("?");
}

/* ---- boots -------------------------------------------------------------------- */

/*
 * The sum of a column of @boot's rows, each read as the u64 the guest sent (LOST
 * counts are u64 on the wire, stored as int64), saturating at UINT64_MAX: no report
 * shows a negative or wrapped count, whatever the guest sent.
 */
static uint64_t sum_u64(HaStore *s, const char *sql, int64_t boot)
{
	sqlite3_stmt *st = ha_store_stmt(s, sql, NULL);
	uint64_t v = 0;

	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, boot);
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			uint64_t x = (uint64_t)sqlite3_column_int64(st, i);

			v = x > UINT64_MAX - v ? UINT64_MAX : v + x;
		}
	}
	sqlite3_reset(st);
	return v;
}

static int64_t scalar(HaStore *s, const char *sql, int64_t boot)
{
	sqlite3_stmt *st = ha_store_stmt(s, sql, NULL);
	int64_t v = 0;

	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return v;
}

/*
 * Loss the ring buffer's own counters do not show (a reset of the buffer, as by a
 * trace clock switch, clears them; an event the reader never got stays counted only
 * as an entry). From the newest STATS of the boot:
 *  - @unread: SMP_STAT_RB_UNREAD, the per-CPU "entries" still in the buffer after the
 *    agent's final drain with tracing off (0 when it was not sent);
 *  - @successes: the map's successes in its epoch @epoch, i.e. stack ids handed out
 *    in that epoch, each for one TRACE_STACK_ID event committed to the ring buffer
 *    (the kernel reserves the event before it asks the map), against @stored, the
 *    stored events whose stack_id is of that epoch. A STATS frame older than the
 *    end of the stream makes @successes a lower bound, never an excess.
 */
typedef struct {
	uint64_t epoch, successes, stored, unread;	/* negative values read as 0 */
	bool have_map;
} MapLoss;

static uint64_t col_u64(sqlite3_stmt *st, int i)
{
	int64_t v = sqlite3_column_int64(st, i);

	return v > 0 ? (uint64_t)v : 0;
}

static void map_loss(HaStore *s, int64_t boot, MapLoss *ret)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT e.value, n.value FROM stats e JOIN stats n"
					 " ON n.stream = e.stream AND n.key = ?2 WHERE e.boot = ?1"
					 " AND e.key = ?3 ORDER BY e.value DESC, n.value DESC"
					 " LIMIT 1", NULL);

	*ret = (MapLoss){ 0 };
	if (!st)
		return;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, SMP_STAT_MAP_SUCCESSES);
	sqlite3_bind_int64(st, 3, SMP_STAT_MAP_EPOCH);
	if (sqlite3_step(st) == SQLITE_ROW) {
		ret->have_map = true;
		ret->epoch = col_u64(st, 0);
		ret->successes = col_u64(st, 1);
	}
	sqlite3_reset(st);
	/* hist.h keys of stack ids: 2 * (gen << 31 | stack_id) + 2; epoch = gen * 2048 + tag */
	st = ha_store_stmt(s, "SELECT COALESCE(SUM(count), 0) FROM stack_counts WHERE"
			   " boot = ?1 AND key > 0 AND key % 2 = 0 AND ((key / 2 - 1) >> 31) *"
			   " 2048 + (((key / 2 - 1) >> 20) & 2047) = ?2", NULL);
	if (st && ret->have_map) {
		sqlite3_bind_int64(st, 1, boot);
		sqlite3_bind_int64(st, 2, (int64_t)ret->epoch);
		if (sqlite3_step(st) == SQLITE_ROW)
			ret->stored = col_u64(st, 0);
		sqlite3_reset(st);
	}
	st = ha_store_stmt(s, "SELECT COALESCE(MAX(value), 0) FROM stats WHERE boot = ?1 AND"
			   " key = ?2", NULL);
	if (st) {
		sqlite3_bind_int64(st, 1, boot);
		sqlite3_bind_int64(st, 2, SMP_STAT_RB_UNREAD);
		if (sqlite3_step(st) == SQLITE_ROW)
			ret->unread = col_u64(st, 0);
		sqlite3_reset(st);
	}
}

/* boots --json: the clock samples of boot @b (clocksync.h): how many the map keeps and
 * their best and worst uncertainty (0 samples: the guest never answered a probe). */
static void host_time_json(HaStore *s, int64_t b, GString *out)
{
	g_autoptr(HaClockMap) m = ha_clockmap_load(s, b, NULL);
	uint64_t lo = UINT64_MAX, hi = 0;
	guint n = m ? ha_clockmap_points(m) : 0;

	for (guint i = 0; i < n; i++) {
		uint64_t g, u;
		int64_t off;

		ha_clockmap_point(m, i, &g, &off, &u);
		lo = MIN(lo, u);
		hi = MAX(hi, u);
	}
	g_string_append_printf(out, ",\"host_time_points\":%u", n);
	if (n)
		g_string_append_printf(out, ",\"host_time_uncertainty_ns\":[%" PRIu64 ",%" PRIu64
				       "]", lo, hi);
}

static bool report_boots(HaStore *s, const HaReportOpts *o, GString *out, GError **error)
{
	g_autoptr(GArray) ids = select_boots(s, o->boot ? o->boot : "all", error);

	if (!ids)
		return false;
	if (o->json)
		g_string_append(out, "[");
	else
		g_string_append_printf(out, "%-4s %-36s %-22s %-19s %-19s %-12s %10s %10s %8s %6s\n",
				       "BOOT", "BOOT_ID", "KERNEL", "START (UTC)", "END (UTC)",
				       "ENDED", "EVENTS", "LOST", "STACKS", "EPOCHS");
	for (guint i = 0; i < ids->len; i++) {
		int64_t b = g_array_index(ids, int64_t, i);
		sqlite3_stmt *st = ha_store_stmt(s, "SELECT release, start_time, COALESCE(end_time,"
						 " last_time), COALESCE(ended, 'running') FROM boots"
						 " WHERE id = ?", error);
		g_autofree char *uuid = boot_uuid_str(s, b);
		g_autofree char *rel = NULL, *start = NULL, *end = NULL, *ended = NULL;
		int64_t stacks, epochs;
		uint64_t events, lost_frames, overrun, malformed, explained, unseen, pending;
		MapLoss ml;

		if (!st)
			return false;
		sqlite3_bind_int64(st, 1, b);
		if (sqlite3_step(st) != SQLITE_ROW) {
			sqlite3_reset(st);
			continue;
		}
		rel = g_strdup((const char *)sqlite3_column_text(st, 0));
		start = fmt_time(sqlite3_column_int64(st, 1));
		end = fmt_time(sqlite3_column_int64(st, 2));
		ended = g_strdup((const char *)sqlite3_column_text(st, 3));
		sqlite3_reset(st);
		{
			g_autoptr(GHashTable) p = pending_events(s, b);

			pending = g_hash_table_size(p);
		}
		events = sum_u64(s, "SELECT nr_traced FROM chunks WHERE boot = ?", b) + pending;
		lost_frames = sum_u64(s, "SELECT gap_frames FROM streams WHERE boot = ?", b);
		/* Ring-buffer loss: the larger of what the pages flagged and what the
		 * guest's per-CPU stats say (they count the same overwritten events). */
		overrun = MAX(sum_u64(s, "SELECT overrun, dropped_events FROM lost WHERE"
				      " boot = ?", b),
			      sum_u64(s, "SELECT missed_events FROM streams WHERE boot = ?", b));
		stacks = scalar(s, "SELECT COUNT(*) FROM stacks WHERE boot = ?", b) +
			 scalar(s, "SELECT COUNT(*) FROM fullstacks WHERE boot = ?", b);
		epochs = scalar(s, "SELECT COUNT(*) FROM epochs WHERE boot = ?", b);
		malformed = sum_u64(s, "SELECT malformed FROM streams WHERE boot = ?", b);
		/* LOST counts what the ring buffer's counters missed too, once: stack ids
		 * handed out beyond what is stored and not explained by those counters. */
		map_loss(s, b, &ml);
		explained = ml.stored + overrun + ml.unread;
		if (explained < ml.stored)
			explained = UINT64_MAX;
		unseen = ml.successes > explained ? ml.successes - explained : 0;
		overrun += ml.unread + unseen;
		if (o->json) {
			g_string_append_printf(out, "%s{\"boot\":%" PRId64 ",\"boot_id\":",
					       i ? "," : "", b);
			ha_report_json_str(out, uuid);
			g_string_append(out, ",\"kernel\":");
			ha_report_json_str(out, rel ? rel : "");
			g_string_append(out, ",\"start\":");
			ha_report_json_str(out, start);
			g_string_append(out, ",\"end\":");
			ha_report_json_str(out, end);
			g_string_append(out, ",\"ended\":");
			ha_report_json_str(out, ended);
			g_string_append_printf(out, ",\"events\":%" PRIu64 ",\"lost_frames\":%"
					       PRIu64 ",\"lost_events\":%" PRIu64 ",\"stacks\":%"
					       PRId64 ",\"epochs\":%" PRId64 ",\"malformed\":%"
					       PRIu64 ",\"unread_events\":%" PRIu64
					       ",\"unseen_stack_ids\":%" PRIu64 ",\"map_epoch\":%"
					       PRIu64 ",\"map_successes\":%" PRIu64
					       ",\"stack_id_events\":%" PRIu64 ",\"stack_not_received\":%"
					       PRIu64, events, lost_frames, overrun, stacks, epochs,
					       malformed, ml.unread, unseen, ml.epoch, ml.successes,
					       ml.stored, pending);
			host_time_json(s, b, out);
			g_string_append(out, "}");
		} else {
			g_autofree char *lost = g_strdup_printf("%" PRIu64 "f/%" PRIu64 "e",
								lost_frames, overrun);

			g_string_append_printf(out, "%-4" PRId64 " %-36s %-22.22s %-19s %-19s %-12s"
					       " %10" PRIu64 " %10s %8" PRId64 " %6" PRId64 "\n",
					       b, uuid, rel ? rel : "?", start, end, ended, events,
					       lost, stacks, epochs);
			if (ml.unread || unseen)
				g_string_append_printf(out, "     of the LOST events: %" PRIu64
						       " left unread in the guest's ring buffer, %"
						       PRIu64 " more stack ids of epoch %" PRIu64
						       " handed out than explained (map successes %"
						       PRIu64 ", stack_id events stored %" PRIu64 ")\n",
						       ml.unread, unseen, ml.epoch, ml.successes,
						       ml.stored);
		}
	}
	if (o->json)
		g_string_append(out, "]\n");
	else
		g_string_append(out, "LOST: frames the guest agent could not deliver (f) / events"
				" lost in the guest (e): overwritten or dropped by the ring"
				" buffer, left unread in it, or given a stack id by the map but"
				" never stored (a ring-buffer reset).\n");
	return true;
}

/* ---- top / folded --------------------------------------------------------------- */

typedef struct {
	int64_t boot;
	uint64_t count;
	Stack st;
	char *key;
} Entry;

static void entry_free(gpointer p)
{
	Entry *e = p;

	stack_clear(&e->st);
	g_free(e->key);
	g_free(e);
}

static int entry_cmp(gconstpointer a, gconstpointer b)
{
	const Entry *x = *(Entry *const *)a, *y = *(Entry *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return g_strcmp0(x->key, y->key);
}

static void add_entry(GHashTable *by_key, int64_t boot, Stack *st, uint64_t count,
		      const HaSyms *syms, bool merge_symbolic)
{
	g_autofree char *key = NULL;
	Entry *e;

	if (merge_symbolic)
		key = folded(st, syms);
	else if (st->kind == ST_MAP)
		key = g_strdup_printf("%" PRId64 ":e%" PRId64 ":%" PRId64, boot, st->epoch, st->sid);
	else if (st->kind == ST_FULL)
		key = g_strdup_printf("%" PRId64 ":f%" PRId64, boot, st->sid);
	else if (st->kind == ST_NONE)
		key = g_strdup_printf("%" PRId64 ":%s", boot, st->why ? "pending" : "none");
	else if (st->kind == ST_LOST)
		key = g_strdup_printf("%" PRId64 ":lost", boot);
	else
		key = g_strdup_printf("%" PRId64 ":u%" PRId64 ":%s", boot, st->sid, st->why);
	e = g_hash_table_lookup(by_key, key);
	if (e) {
		e->count += count;
		stack_clear(st);
		return;
	}
	e = g_new0(Entry, 1);
	e->boot = boot;
	e->count = count;
	e->st = *st;
	memset(st, 0, sizeof(*st));
	e->key = g_steal_pointer(&key);
	g_hash_table_insert(by_key, e->key, e);
}

static void resolve_ent(HaStore *s, int64_t boot, const HaHistEnt *e, Stack *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (e->kind == HA_HIST_NONE) {
		ret->kind = ST_NONE;
		ret->why = e->pending ? WHY_PENDING : NULL;
	}
	else if (e->kind == HA_HIST_ID)
		resolve_map(s, boot, (uint32_t)(e->id & 0x7fffffff), e->ts_min, e->ts_max, ret);
	else
		resolve_full(s, e->id, ret);
}

static int ent_cmp(gconstpointer a, gconstpointer b)
{
	const HaHistEnt *x = a, *y = b;

	return x->count > y->count ? -1 : x->count < y->count;
}

/*
 * Add the stack counts of @boot to @by_key, resolved in decreasing order of their
 * event count, only the first @resolve_limit (ids of different stacks never merge
 * within a boot, so that order is final); *ret_total and *ret_distinct count all.
 */
static bool collect(HaStore *s, int64_t boot, GHashTable *by_key, const HaSyms *syms,
		    bool merge_symbolic, guint resolve_limit, uint64_t *ret_total,
		    guint *ret_distinct, GError **error)
{
	g_autoptr(GArray) ents = g_array_new(FALSE, FALSE, sizeof(HaHistEnt));
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT key, count, ts_min, ts_max FROM"
					 " stack_counts WHERE boot = ?", error);

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	while (sqlite3_step(st) == SQLITE_ROW) {
		HaHistEnt e = {
			.count = (uint64_t)sqlite3_column_int64(st, 1),
			.ts_min = (uint64_t)sqlite3_column_int64(st, 2),
			.ts_max = (uint64_t)sqlite3_column_int64(st, 3),
		};

		ha_hist_from_key((uint64_t)sqlite3_column_int64(st, 0), &e);
		*ret_total += e.count;
		g_array_append_val(ents, e);
	}
	sqlite3_reset(st);
	{
		g_autoptr(GHashTable) p = pending_events(s, boot);

		if (g_hash_table_size(p)) {
			HaHistEnt e = { .kind = HA_HIST_NONE, .count = g_hash_table_size(p),
					.pending = true };

			*ret_total += e.count;
			g_array_append_val(ents, e);
		}
	}
	*ret_distinct += ents->len;
	g_array_sort(ents, ent_cmp);
	for (guint i = 0; i < ents->len && i < resolve_limit; i++) {
		HaHistEnt *e = &g_array_index(ents, HaHistEnt, i);
		Stack stk;

		resolve_ent(s, boot, e, &stk);
		add_entry(by_key, boot, &stk, e->count, syms, merge_symbolic);
	}
	return true;
}

/* On stderr (never in the report): the event formats of @boot the host refused, whose
 * events are counted by their stacks like any other but have no decoded fields. */
static void note_refused_formats(HaStore *s, int64_t boot)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT name FROM texts WHERE boot = ? AND"
					 " kind = 'format-refused' ORDER BY seq", NULL);
	g_autoptr(GString) names = g_string_new(NULL);
	guint n = 0;

	if (!st)
		return;
	sqlite3_bind_int64(st, 1, boot);
	while (sqlite3_step(st) == SQLITE_ROW) {
		g_autofree char *name = g_strescape((const char *)sqlite3_column_text(st, 0) ?
						    (const char *)sqlite3_column_text(st, 0) : "",
						    NULL);

		if (n++ < 8)
			g_string_append_printf(names, "%s%s", n > 1 ? ", " : "", name);
	}
	sqlite3_reset(st);
	if (n)
		g_printerr("host-agent report: boot %" PRId64 ": the host refused %u event"
			   " format(s) (%s%s): their events are counted by their stacks, `report"
			   " events` shows them with their fields not decoded\n", boot, n,
			   names->str, n > 8 ? ", ..." : "");
}

static bool report_top(HaStore *s, const HaReportOpts *o, HaDwarf *dw, bool as_folded,
		       GString *out, GError **error)
{
	g_autoptr(GArray) ids = select_boots(s, o->boot, error);
	g_autoptr(GHashTable) by_key = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
							    entry_free);
	g_autoptr(GPtrArray) v = NULL;
	GHashTable *syms_by_boot = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
							 (GDestroyNotify)ha_syms_free);
	uint64_t total = 0;
	guint distinct = 0;
	guint limit = as_folded ? G_MAXUINT : (o->limit ? o->limit : TOP_DEFAULT);
	bool merge = as_folded || (ids && ids->len > 1);
	bool ok = true;

	if (!ids) {
		g_hash_table_destroy(syms_by_boot);
		return false;
	}
	for (guint i = 0; i < ids->len && ok; i++) {
		int64_t b = g_array_index(ids, int64_t, i);
		HaSyms *syms = load_syms(s, b, dw);

		g_hash_table_insert(syms_by_boot, g_memdup2(&b, sizeof(b)), syms);
		note_refused_formats(s, b);
		ok = collect(s, b, by_key, syms, merge, merge ? G_MAXUINT : limit, &total,
			     &distinct, error);
	}
	if (!ok) {
		g_hash_table_destroy(syms_by_boot);
		return false;
	}
	v = g_ptr_array_new();
	{
		GHashTableIter it;
		gpointer k, val;

		g_hash_table_iter_init(&it, by_key);
		while (g_hash_table_iter_next(&it, &k, &val))
			g_ptr_array_add(v, val);
	}
	g_ptr_array_sort(v, entry_cmp);
	if (merge)
		distinct = v->len;	/* after merging by symbolic stack */
	if (o->json)
		g_string_append_printf(out, "{\"events\":%" PRIu64 ",\"stacks\":[", total);
	else if (!as_folded)
		g_string_append_printf(out, "%" PRIu64 " events in %u distinct stacks (%s)\n",
				       total, distinct, ids->len > 1 ? "all boots, merged by"
				       " symbolic stack" : "one boot");
	for (guint i = 0; i < v->len && i < limit; i++) {
		Entry *e = v->pdata[i];
		HaSyms *syms = g_hash_table_lookup(syms_by_boot, &e->boot);

		if (o->json) {
			g_autofree char *f = folded(&e->st, syms);

			g_string_append_printf(out, "%s{\"count\":%" PRIu64 ",\"boot\":%" PRId64
					       ",\"folded\":", i ? "," : "", e->count, e->boot);
			ha_report_json_str(out, f);
			g_string_append(out, ",\"stack\":");
			json_stack(out, &e->st, syms);
			g_string_append(out, "}");
		} else if (as_folded) {
			g_autofree char *f = folded(&e->st, syms);

			g_string_append_printf(out, "%s %" PRIu64 "\n", f, e->count);
		} else {
			g_autofree char *l = stack_label(&e->st);

			g_string_append_printf(out, "\n#%-3u %10" PRIu64 " events %5.1f%%  %s\n",
					       i + 1, e->count,
					       total ? 100.0 * (double)e->count / (double)total : 0,
					       l);
			print_frames(out, &e->st, syms, "             ");
		}
	}
	if (o->json)
		g_string_append(out, "]}\n");
	g_hash_table_destroy(syms_by_boot);
	return true;
}

/* ---- events --------------------------------------------------------------------- */

typedef struct {
	GArray *evs;		/* Ev */
	HaStore *store;
	int64_t boot;
	GHashTable *pending;	/* pending_events() */
} EvCtx;

typedef struct {
	uint64_t ts;
	uint32_t cpu;
	int pid;
	char *text;
	Stack st;
} Ev;

typedef struct {
	HaTep *tep;
	HaPair *pair;
	uint32_t cpu;
	bool fed;		/* an event of this page was fed to the pairer */
	const HaMarkerFormat *marker;	/* the clock probes' marker events */
	GPtrArray *gaps;	/* ha_report_gaps(), or NULL */
	guint *gap_next;	/* per CPU: the first gap not yet passed */
} WalkCtx;

static void on_paired(const HaPaired *p, void *user)
{
	EvCtx *x = user;
	Ev e = { .ts = p->ts, .cpu = p->cpu, .pid = p->pid, .text = g_strdup(p->text) };

	if (p->stack == HA_STACK_ID) {
		resolve_map(x->store, x->boot, p->stack_id, p->ts, p->ts, &e.st);
	} else if (p->stack == HA_STACK_LOST) {
		e.st.kind = ST_LOST;
	} else if (p->stack == HA_STACK_FULL) {
		e.st.kind = ST_FULL;
		e.st.sid = 0;
		e.st.ips = g_array_new(FALSE, FALSE, sizeof(uint64_t));
		g_array_append_vals(e.st.ips, p->ips, p->nr_ips);
	} else if (g_hash_table_size(x->pending)) {
		g_autofree char *k = pending_key(p->cpu, p->ts, p->pid);

		if (g_hash_table_contains(x->pending, k))
			e.st.why = WHY_PENDING;
	}
	g_array_append_val(x->evs, e);
}

static void on_event(const HaEvent *ev, void *user)
{
	WalkCtx *w = user;
	uint64_t probe;

	/* a clock probe's marker (clocksync.h) is the agent's, not a traced event */
	if (ev->kind == HA_EV_OTHER &&
	    ha_marker_event_id(w->marker, ev->type, ev->data, ev->size, &probe))
		return;
	/* events lost before this page: no stack after it belongs to one before it */
	if (!w->fed && ha_tep_missed(w->tep) != 0)
		ha_pair_lost(w->pair, w->cpu);
	w->fed = true;
	/* frames the agent dropped lie before this event: so do the stacks of the
	 * events waiting (the daemon finished them as lost when it saw the gap) */
	if (ev->kind == HA_EV_OTHER && w->gaps && w->cpu < w->gaps->len &&
	    w->gaps->pdata[w->cpu]) {
		GArray *g = w->gaps->pdata[w->cpu];

		while (w->gap_next[w->cpu] < g->len &&
		       ev->ts > g_array_index(g, guint64, w->gap_next[w->cpu])) {
			ha_pair_lost(w->pair, w->cpu);
			w->gap_next[w->cpu]++;
		}
	}
	ha_pair_feed(w->pair, w->cpu, ev,
		     ev->kind == HA_EV_OTHER ? ha_tep_format_event(w->tep, ev) : NULL);
}

static int ev_cmp(gconstpointer a, gconstpointer b)
{
	const Ev *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void ev_clear(gpointer p)
{
	Ev *e = p;

	g_free(e->text);
	stack_clear(&e->st);
}

/* %pS and friends as the kernel prints them, from the boot's kallsyms. */
static char *symbolize(uint64_t ip, char conv, void *syms)
{
	if (conv == 's' || conv == 'f')
		return ha_syms_format_name(syms, ip);
	/* %pB: the kernel looks up ip - 1 and prints the offset + 1; the same text
	 * unless the call was a function's last instruction (not told apart here). */
	return ha_syms_format(syms, ip);
}

static bool enum_value(const char *name, int64_t *ret, void *dw)
{
	return ha_dwarf_enum(dw, name, ret);
}

/* The boot's formats in a new HaTep that prints with @syms (borrowed, must outlive
 * it) and the enum constants of @syms' DWARF when it has one. */
static HaTep *load_tep(HaStore *s, int64_t boot, HaSyms *syms)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT page_size, flags FROM boots WHERE id = ?",
					 NULL);
	HaTep *t;
	uint32_t psize = 4096, flags = 0;

	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW) {
		psize = (uint32_t)sqlite3_column_int64(st, 0);
		flags = (uint32_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	t = ha_tep_new(psize, flags & SMP_HELLO_PAGES_BE);
	ha_tep_set_symbolizer(t, symbolize, syms);
	if (ha_syms_dwarf(syms))
		ha_tep_set_enum_resolver(t, enum_value, ha_syms_dwarf(syms));
	/* a refused text (never parsed again) names the events of its id in the report */
	st = ha_store_stmt(s, "SELECT name, text, kind FROM texts WHERE boot = ? AND kind IN"
			   " ('format', 'format-refused') ORDER BY seq", NULL);
	sqlite3_bind_int64(st, 1, boot);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *text = sqlite3_column_blob(st, 1);
		size_t len = (size_t)sqlite3_column_bytes(st, 1);

		if (!name)
			continue;
		if (!g_strcmp0((const char *)sqlite3_column_text(st, 2), "format-refused"))
			ha_tep_add_refused_text(t, name, text, len);
		else
			ha_tep_add_format(t, name, text, len, NULL);
	}
	sqlite3_reset(st);
	return t;
}

/* The boot's ftrace/print format as the clock probes' marker events (none: type -1). */
static void load_marker(HaStore *s, int64_t boot, HaMarkerFormat *ret)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT text FROM texts WHERE boot = ? AND"
					 " kind = 'format' AND name = 'ftrace/print'", NULL);

	ret->type = -1;
	if (!st)
		return;
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    !ha_marker_format_parse(sqlite3_column_blob(st, 0),
				    (size_t)sqlite3_column_bytes(st, 0), ret))
		ret->type = -1;
	sqlite3_reset(st);
}

/* Host time as text: realtime and tai as a UTC date, the others in seconds. */
static void host_time_text(GString *out, HaHostClock clock, int64_t ns, uint64_t unc)
{
	if (clock == HA_HOSTCLOCK_REALTIME || clock == HA_HOSTCLOCK_TAI) {
		g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(ns / 1000000000);
		g_autofree char *d = dt ? g_date_time_format(dt, "%Y-%m-%d %H:%M:%S") : NULL;

		g_string_append_printf(out, "%s.%09" PRId64 "%s", d ? d : "?",
				       ns % 1000000000, clock == HA_HOSTCLOCK_TAI ? " TAI" :
				       " UTC");
	} else {
		g_string_append_printf(out, "%s %" PRId64 ".%09" PRId64, ha_host_clock_name(clock),
				       ns / 1000000000, ns % 1000000000);
	}
	g_string_append_printf(out, " +-%.1f us", (double)unc / 1000.0);
}

static void add_symbol(uint64_t addr, const char *name, const char *module, void *tep)
{
	ha_tep_add_symbol(tep, addr, name, module);
}

/* Is @text ("system/name: fields") an event @name ("system/name" or "name")? */
static bool event_is(const char *text, const char *name)
{
	const char *colon = text ? strstr(text, ": ") : NULL;
	const char *slash = text ? strchr(text, '/') : NULL;
	size_t n = strlen(name);

	if (!colon)
		return false;
	if ((size_t)(colon - text) == n && !strncmp(text, name, n))
		return true;
	return slash && slash < colon && (size_t)(colon - slash - 1) == n &&
	       !strncmp(slash + 1, name, n);
}

/* `folded` lines of the events @evs[@first..] (their own stacks). */
static void events_folded(GArray *evs, guint first, const HaSyms *syms, GString *out)
{
	g_autoptr(GHashTable) counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							     NULL);
	g_autoptr(GList) keys = NULL;

	for (guint i = first; i < evs->len; i++) {
		char *f = folded(&g_array_index(evs, Ev, i).st, syms);
		gpointer v = g_hash_table_lookup(counts, f);

		g_hash_table_insert(counts, f, GSIZE_TO_POINTER(GPOINTER_TO_SIZE(v) + 1));
	}
	keys = g_list_sort(g_hash_table_get_keys(counts), (GCompareFunc)strcmp);
	for (GList *k = keys; k; k = k->next)
		g_string_append_printf(out, "%s %" G_GSIZE_FORMAT "\n", (char *)k->data,
				       GPOINTER_TO_SIZE(g_hash_table_lookup(counts, k->data)));
}

GPtrArray *ha_report_gaps(HaStore *s, int64_t boot, GError **error)
{
	g_autoptr(GPtrArray) g = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT cpu, after_ts FROM gaps WHERE boot = ?"
					 " AND cpu < 4096 ORDER BY cpu, after_ts", error);
	int rc;

	if (!st)
		return NULL;
	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		guint cpu = (guint)sqlite3_column_int64(st, 0);
		guint64 t = (guint64)MAX(sqlite3_column_int64(st, 1), 0);

		if (cpu >= g->len)
			g_ptr_array_set_size(g, (gint)cpu + 1);
		if (!g->pdata[cpu])
			g->pdata[cpu] = g_array_new(FALSE, FALSE, sizeof(guint64));
		g_array_append_val((GArray *)g->pdata[cpu], t);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		ha_store_set_error(s, error, "read gap positions");
		return NULL;
	}
	return g_steal_pointer(&g);
}

static bool ev_wanted(const HaReportOpts *o, const Ev *e)
{
	return !((o->since_ns >= 0 && e->ts < (uint64_t)o->since_ns) ||
		 (o->until_ns >= 0 && e->ts > (uint64_t)o->until_ns) ||
		 (o->event && !event_is(e->text, o->event)));
}

static void perf_sample(const Ev *e, const HaSyms *syms, GString *out)
{
	bool frames = e->st.ips && (e->st.kind == ST_MAP || e->st.kind == ST_FULL);

	ha_perf_script_sample(out, e->ts, e->cpu, e->pid, e->text,
			      frames ? (const uint64_t *)e->st.ips->data : NULL,
			      frames ? e->st.ips->len : 0, syms);
}

static void oldest_waiting(uint32_t cpu, uint64_t ts, int pid, void *user)
{
	uint64_t *min = user;

	*min = MIN(*min, ts);
}

/*
 * Streaming perf-script: write out (and forget) the decoded events older than @limit,
 * the oldest start of a chunk still to decode and of an event still waiting for its
 * stack; nothing decoded later can be older. Same order as sorting them all: the sort
 * is stable and events of one timestamp leave together. False on a write error.
 */
static bool perf_flush(GArray *evs, uint64_t limit, HaPair *pair, const HaReportOpts *o,
		       const HaSyms *syms, GString *buf)
{
	guint n = 0;

	ha_pair_foreach_waiting(pair, oldest_waiting, &limit);
	g_array_sort(evs, ev_cmp);
	while (n < evs->len && g_array_index(evs, Ev, n).ts < limit) {
		const Ev *e = &g_array_index(evs, Ev, n++);

		if (ev_wanted(o, e))
			perf_sample(e, syms, buf);
	}
	g_array_remove_range(evs, 0, n);	/* ev_clear()s them */
	if (buf->len && fwrite(buf->str, 1, buf->len, o->stream) != buf->len)
		return false;
	g_string_truncate(buf, 0);
	return true;
}

static bool report_events(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
			  GError **error)
{
	g_autoptr(GArray) ids = select_boots(s, o->boot, error);
	bool perf = !g_strcmp0(o->format, "perf-script");
	bool as_folded = !g_strcmp0(o->format, "folded");
	guint want = o->limit ? o->limit : perf || as_folded ? G_MAXUINT : EVENTS_DEFAULT;
	int64_t boot;
	g_autoptr(HaTep) tep = NULL;
	g_autoptr(HaSyms) syms = NULL;
	g_autoptr(GArray) chunks = g_array_new(FALSE, FALSE, sizeof(int64_t));
	g_autoptr(GArray) older = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	g_autoptr(GString) buf = g_string_new(NULL);
	bool streaming = perf && !o->limit && o->stream;
	g_autoptr(GPtrArray) gaps = NULL;
	g_autofree guint *gap_next = NULL;
	uint64_t run = UINT64_MAX;
	g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(Ev));
	EvCtx x = { .evs = evs, .store = s };
	g_autoptr(HaPair) pair = NULL;
	g_autoptr(GHashTable) pending = NULL;
	g_autofree char *uuid = NULL;
	g_autoptr(HaClockMap) clk = NULL;
	HaHostClock hclock = HA_HOSTCLOCK_REALTIME;
	HaMarkerFormat marker;
	sqlite3_stmt *st;
	uint64_t have = 0, bad_pages = 0;
	int64_t since = o->since_ns >= 0 ? o->since_ns : 0;
	guint first;
	Progress pr;

	if (!ids)
		return false;
	if (o->host_time && !ha_host_clock_parse(o->host_time, &hclock)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "--host-time %s: not realtime, mono, boot or tai", o->host_time);
		return false;
	}
	if (ids->len != 1) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "events reports one boot at a time");
		return false;
	}
	boot = g_array_index(ids, int64_t, 0);
	x.boot = boot;
	pending = pending_events(s, boot);
	x.pending = pending;
	g_array_set_clear_func(evs, ev_clear);
	syms = load_syms(s, boot, dw);
	tep = load_tep(s, boot, syms);
	ha_syms_foreach(syms, add_symbol, tep);
	pair = ha_pair_new(on_paired, &x);
	load_marker(s, boot, &marker);
	gaps = ha_report_gaps(s, boot, error);
	if (!gaps)
		return false;
	gap_next = g_new0(guint, gaps->len + 1);
	if (o->host_time) {
		clk = ha_clockmap_load(s, boot, error);
		if (!clk)
			return false;
		if (!ha_clockmap_points(clk))
			g_printerr("host-agent report: boot %" PRId64 " has no host time (its"
				   " guest agent never answered a clock probe)\n", boot);
	}
	/*
	 * Which chunks: with a time range, every chunk that overlaps it. Otherwise the
	 * newest chunks until they hold enough ring events (stack events count too),
	 * which gives a time T (their oldest start) after which there are enough; then
	 * every chunk of any CPU that reaches past T, so that no CPU's events after T are
	 * missing from the merge. Decoded oldest first for the pairing.
	 */
	if (o->since_ns < 0 && o->until_ns < 0) {
		int64_t t = INT64_MAX;

		st = ha_store_stmt(s, "SELECT nr_events, ts_min FROM chunks WHERE boot = ? AND"
				   " nr_pages > 0 ORDER BY ts_max DESC, id DESC", error);
		if (!st)
			return false;
		sqlite3_bind_int64(st, 1, boot);
		while (have < 2ull * want + 64 && sqlite3_step(st) == SQLITE_ROW) {
			have += (uint64_t)sqlite3_column_int64(st, 0);
			t = MIN(t, sqlite3_column_int64(st, 1));
		}
		sqlite3_reset(st);
		since = t == INT64_MAX ? 0 : t;
	}
	/* Chunks without a time range hold pages the daemon could not parse when they
	 * came (before the formats): decoded too, they may parse now, or are counted
	 * as unparsable on stderr. */
	st = ha_store_stmt(s, "SELECT id, ts_min FROM chunks WHERE boot = ? AND nr_pages > 0"
			   " AND ((ts_max >= ? AND ts_min <= ?) OR ts_max IS NULL)"
			   " ORDER BY ts_min DESC, id DESC", error);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, since);
	sqlite3_bind_int64(st, 3, o->until_ns >= 0 ? o->until_ns : INT64_MAX);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		/* older[i]: the oldest start of chunks 0..i-1, those decoded after chunk
		 * i (a chunk of unparsed pages, without a range, counts as 0). Decoded by
		 * their start (each CPU's in ring order), so that it keeps moving: by
		 * their end, a chunk of an idle CPU spanning the boot would hold it. */
		g_array_append_val(chunks, id);
		g_array_append_val(older, run);
		run = MIN(run, (uint64_t)MAX(sqlite3_column_int64(st, 1), 0));
	}
	sqlite3_reset(st);
	progress_init(&pr, "decoding pages");
	for (guint i = chunks->len; i-- > 0;) {
		int64_t id = g_array_index(chunks, int64_t, i);
		g_autoptr(GBytes) raw = NULL;
		g_autoptr(GError) e = NULL;
		WalkCtx w = { .tep = tep, .pair = pair, .marker = &marker, .gaps = gaps,
			      .gap_next = gap_next };
		const uint8_t *page;
		uint32_t len;
		size_t off = 0;

		st = ha_store_stmt(s, "SELECT cpu, data FROM chunks WHERE id = ?", error);
		if (!st)
			return false;
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) != SQLITE_ROW) {
			sqlite3_reset(st);
			continue;
		}
		w.cpu = (uint32_t)sqlite3_column_int64(st, 0);
		raw = ha_chunk_decompress(sqlite3_column_blob(st, 1),
					  (size_t)sqlite3_column_bytes(st, 1), &e);
		sqlite3_reset(st);
		if (!raw) {
			/* warnings go to stderr, never into the report (JSON included) */
			g_printerr("host-agent report: boot %" PRId64 ": chunk %" PRId64
				   " unreadable: %s\n", boot, id, e->message);
			continue;
		}
		while (ha_chunk_next_page(raw, &off, &page, &len)) {
			g_autoptr(GError) pe = NULL;

			w.fed = false;
			if (ha_tep_walk_page(tep, page, len, on_event, &w, &pe) < 0) {
				if (++bad_pages <= 10)
					g_printerr("host-agent report: boot %" PRId64 ": chunk %"
						   PRId64 ": unparsable page: %s\n", boot, id,
						   pe ? pe->message : "?");
			} else if (!w.fed && ha_tep_missed(tep) != 0) {
				ha_pair_lost(pair, w.cpu);
			}
		}
		progress_tick(&pr, chunks->len - i, chunks->len);
		if (streaming && !perf_flush(evs, g_array_index(older, uint64_t, i), pair, o,
					     syms, buf)) {
			progress_end(&pr);
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
				    "writing the report: %s", g_strerror(errno));
			return false;
		}
	}
	progress_end(&pr);
	if (bad_pages > 10)
		g_printerr("host-agent report: boot %" PRId64 ": %" PRIu64 " unparsable pages"
			   " in all\n", boot, bad_pages);
	ha_pair_flush(pair);
	g_array_sort(evs, ev_cmp);
	if (o->since_ns >= 0 || o->until_ns >= 0 || o->event) {
		guint keep = 0;

		for (guint i = 0; i < evs->len; i++) {
			Ev *e = &g_array_index(evs, Ev, i);

			if (!ev_wanted(o, e)) {
				ev_clear(e);
				continue;
			}
			g_array_index(evs, Ev, keep++) = *e;
		}
		g_array_set_clear_func(evs, NULL);
		g_array_set_size(evs, keep);
		g_array_set_clear_func(evs, ev_clear);
	}
	first = evs->len > want ? evs->len - want : 0;
	uuid = boot_uuid_str(s, boot);
	if (as_folded) {
		events_folded(evs, first, syms, out);
		return true;
	}
	if (streaming) {
		/* what the last flush kept: the events still waiting, now finished */
		for (guint i = 0; i < evs->len; i++)
			perf_sample(&g_array_index(evs, Ev, i), syms, buf);
		if (buf->len && fwrite(buf->str, 1, buf->len, o->stream) != buf->len) {
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
				    "writing the report: %s", g_strerror(errno));
			return false;
		}
		return true;
	}
	if (perf) {
		for (guint i = first; i < evs->len; i++)
			perf_sample(&g_array_index(evs, Ev, i), syms, out);
		return true;
	}
	if (o->json)
		g_string_append_printf(out, "{\"boot\":%" PRId64 ",\"events\":[", boot);
	else
		g_string_append_printf(out, "last %u events of boot %" PRId64 " (%s), oldest"
				       " first:\n", evs->len - first, boot, uuid);
	for (guint i = first; i < evs->len; i++) {
		Ev *e = &g_array_index(evs, Ev, i);
		int64_t hns = 0;
		uint64_t hunc = 0;
		bool host = clk && ha_clockmap_to_host(clk, e->ts, hclock, &hns, &hunc);

		if (o->json) {
			g_string_append_printf(out, "%s{\"ts\":%" PRIu64 ",\"cpu\":%u,\"pid\":%d,",
					       i > first ? "," : "", e->ts, e->cpu, e->pid);
			if (host)
				g_string_append_printf(out, "\"host_time\":{\"clock\":\"%s\","
						       "\"ns\":%" PRId64 ",\"uncertainty_ns\":%"
						       PRIu64 "},", ha_host_clock_name(hclock),
						       hns, hunc);
			g_string_append(out, "\"event\":");
			ha_report_json_str(out, e->text ? e->text : "");
			g_string_append(out, ",\"stack\":");
			json_stack(out, &e->st, syms);
			g_string_append(out, "}");
		} else {
			g_autofree char *l = stack_label(&e->st);

			g_string_append_printf(out, "\n%" PRIu64 ".%09" PRIu64 " ", e->ts / 1000000000u,
					       e->ts % 1000000000u);
			if (host) {
				g_string_append(out, "[host ");
				host_time_text(out, hclock, hns, hunc);
				g_string_append(out, "] ");
			}
			g_string_append_printf(out, "cpu%u pid %d  %s\n    %s\n", e->cpu, e->pid,
					       e->text ? e->text : "?", l);
			print_frames(out, &e->st, syms, "      ");
		}
	}
	if (o->json)
		g_string_append(out, "]}\n");
	return true;
}

/* ---- stack ID --------------------------------------------------------------------- */

static bool report_stack(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
			 GError **error)
{
	g_autoptr(GArray) ids = select_boots(s, o->boot, error);
	g_autoptr(HaSyms) syms = NULL;
	char *end = NULL;
	uint64_t id;
	int64_t boot;
	sqlite3_stmt *st;
	guint n = 0;

	if (!ids)
		return false;
	if (!o->arg || !*o->arg || (id = g_ascii_strtoull(o->arg, &end, 0), *end) ||
	    id > 0x7fffffffu) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "stack wants a stack_id (decimal or 0x hex), got '%s'",
			    o->arg ? o->arg : "");
		return false;
	}
	boot = g_array_index(ids, int64_t, 0);
	syms = load_syms(s, boot, dw);
	st = ha_store_stmt(s, "SELECT e.epoch, e.start_ts, s.ips, s.ref_count FROM epochs e"
			   " LEFT JOIN stacks s ON s.boot = e.boot AND s.epoch = e.epoch AND"
			   " s.stack_id = ?2 WHERE e.boot = ?1 AND e.tag = ?3 ORDER BY e.epoch",
			   error);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, (int64_t)id);
	sqlite3_bind_int64(st, 3, smp_id_tag((uint32_t)id));
	if (o->json)
		g_string_append_printf(out, "{\"boot\":%" PRId64 ",\"stack_id\":%" PRIu64
				       ",\"epochs\":[", boot, id);
	else
		g_string_append_printf(out, "stack_id 0x%08" PRIx64 " (tag %u, slot %u) in boot %"
				       PRId64 ":\n", id, smp_id_tag((uint32_t)id),
				       smp_id_slot((uint32_t)id), boot);
	while (sqlite3_step(st) == SQLITE_ROW) {
		Stack stk = { .sid = (int64_t)id, .epoch = sqlite3_column_int64(st, 0) };

		if (sqlite3_column_type(st, 2) == SQLITE_NULL) {
			stk.kind = ST_UNRESOLVED;
			stk.why = "no stack received for this id in this epoch";
		} else {
			stk.kind = ST_MAP;
			stk.ips = ips_from_blob(sqlite3_column_blob(st, 2),
						sqlite3_column_bytes(st, 2));
		}
		if (o->json) {
			g_string_append_printf(out, "%s{\"epoch_start_ts\":%" PRId64 ",\"stack\":",
					       n ? "," : "", (int64_t)sqlite3_column_int64(st, 1));
			json_stack(out, &stk, syms);
			g_string_append(out, "}");
		} else {
			g_autofree char *l = stack_label(&stk);

			g_string_append_printf(out, "  epoch %" PRId64 " (from ts %" PRId64 "): %s,"
					       " ref_count %" PRId64 "\n", stk.epoch,
					       (int64_t)sqlite3_column_int64(st, 1), l,
					       (int64_t)sqlite3_column_int64(st, 3));
			print_frames(out, &stk, syms, "      ");
		}
		stack_clear(&stk);
		n++;
	}
	sqlite3_reset(st);
	if (o->json)
		g_string_append(out, "]}\n");
	else if (!n)
		g_string_append(out, "  no epoch with this tag: unresolved\n");
	return true;
}

/* The SVG of folded's counts, or of the events of a range or an event type. */
static bool report_flamegraph(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
			      GError **error)
{
	g_autoptr(GString) f = g_string_new(NULL);
	g_autoptr(GString) title = g_string_new("virtio-stackmap: ");
	bool from_events = o->since_ns >= 0 || o->until_ns >= 0 || o->event;

	if (from_events) {
		HaReportOpts eo = *o;

		eo.format = "folded";
		if (!report_events(s, &eo, dw, f, error))
			return false;
	} else if (!report_top(s, o, dw, true, f, error)) {
		return false;
	}
	g_string_append_printf(title, "%s %s", o->boot && !strcmp(o->boot, "all") ?
			       "all boots" : "boot", o->boot && !strcmp(o->boot, "all") ? "" :
			       o->boot ? o->boot : "(newest)");
	if (o->event)
		g_string_append_printf(title, ", %s", o->event);
	if (o->since_ns >= 0)
		g_string_append_printf(title, ", from %.9f s", (double)o->since_ns / 1e9);
	if (o->until_ns >= 0)
		g_string_append_printf(title, ", until %.9f s", (double)o->until_ns / 1e9);
	return ha_flamegraph_svg(f->str, title->str, out, error);
}

bool ha_report(HaStore *store, const HaReportOpts *o, GString *out, GError **error)
{
	g_autoptr(HaDwarf) dw = NULL;
	bool ok;

	if (o->vmlinux && !(dw = ha_dwarf_open(o->vmlinux, error)))
		return false;
	if (!ha_store_exec(store, "BEGIN", error))	/* one consistent snapshot */
		return false;

	if (!g_strcmp0(o->cmd, "boots"))
		ok = report_boots(store, o, out, error);
	else if (!g_strcmp0(o->cmd, "top"))
		ok = report_top(store, o, dw, false, out, error);
	else if (!g_strcmp0(o->cmd, "folded"))
		ok = report_top(store, o, dw, true, out, error);
	else if (!g_strcmp0(o->cmd, "events"))
		ok = report_events(store, o, dw, out, error);
	else if (!g_strcmp0(o->cmd, "flamegraph"))
		ok = report_flamegraph(store, o, dw, out, error);
	else if (!g_strcmp0(o->cmd, "stack"))
		ok = report_stack(store, o, dw, out, error);
	else {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "unknown report '%s' (boots, top, events, stack ID, folded,"
			    " flamegraph)",
			    o->cmd ? o->cmd : "");
		ok = false;
	}
	ha_store_exec(store, "COMMIT", NULL);
	return ok;
}

GArray *ha_report_select_boots(HaStore *store, const char *arg, GError **error)
{
	return select_boots(store, arg, error);
}

/* ---- one CPU's events, for replication ------------------------------------------ */

typedef struct {
	uint64_t page;
	uint32_t idx;
} EvWhere;

typedef struct {
	HaTep *tep;
	HaPair *pair;
	HaSyms *syms;
	EvCtx x;
	uint32_t cpu;
	bool fed;
	uint64_t page;		/* the page being walked (ordinal) */
	uint32_t idx;		/* the next event's ordinal in it */
	uint64_t from, to;	/* the pages whose events are given */
	uint64_t tail;		/* the first page of the CPU's last chunk */
	guint waiting;		/* events of pages from..to-1 not finished yet */
	GHashTable *where;	/* text (the pairer's per-event pointer) -> EvWhere */
	HaReportEventFn fn;
	void *user;
} CpuWalk;

static void cpu_paired(const HaPaired *p, void *user)
{
	CpuWalk *c = user;
	EvWhere *w = p->text ? g_hash_table_lookup(c->where, p->text) : NULL;
	g_autoptr(GString) js = NULL;
	g_autofree char *fold = NULL;
	HaReportEvent r;
	Ev *e;

	if (!w)
		return;		/* a stack event's own (no text) */
	if (w->page < c->from || w->page >= c->to) {
		g_hash_table_remove(c->where, p->text);
		return;
	}
	c->waiting--;
	on_paired(p, &c->x);	/* as report_events() makes its Ev */
	e = &g_array_index(c->x.evs, Ev, c->x.evs->len - 1);
	js = g_string_new(NULL);
	json_stack(js, &e->st, c->syms);
	fold = folded(&e->st, c->syms);
	r = (HaReportEvent){ .page = w->page, .idx = w->idx, .ts = e->ts, .cpu = e->cpu,
			     .pid = e->pid, .text = e->text ? e->text : "",
			     .stack_json = js->str, .folded = fold,
			     .stack_kind = stack_kinds[e->st.kind],
			     .stack_id = e->st.kind == ST_NONE || e->st.kind == ST_LOST ? -1 :
					 e->st.sid,
			     .epoch = e->st.kind == ST_MAP || e->st.kind == ST_UNRESOLVED ?
				      e->st.epoch : -1,
			     .tail = w->page >= c->tail };
	c->fn(&r, c->user);
	g_array_set_size(c->x.evs, 0);
	g_hash_table_remove(c->where, p->text);
}

static void cpu_event(const HaEvent *ev, void *user)
{
	CpuWalk *c = user;
	char *text = NULL;

	if (!c->fed && ha_tep_missed(c->tep) != 0)
		ha_pair_lost(c->pair, c->cpu);
	c->fed = true;
	if (ev->kind == HA_EV_OTHER) {
		EvWhere *w = g_new(EvWhere, 1);

		text = ha_tep_format_event(c->tep, ev);
		if (!text)
			text = g_strdup("");	/* events prints "" for it too */
		w->page = c->page;
		w->idx = c->idx;
		g_hash_table_insert(c->where, text, w);
		if (c->page >= c->from && c->page < c->to)
			c->waiting++;
	}
	c->idx++;
	ha_pair_feed(c->pair, c->cpu, ev, text);
}

bool ha_report_cpu_events(HaStore *s, int64_t boot, uint32_t cpu, uint64_t from,
			  uint64_t to, HaReportEventFn fn, void *user, uint64_t *ret_pages,
			  GError **error)
{
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
	g_autoptr(GArray) first = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(Ev));
	g_autoptr(GHashTable) pending = NULL;
	g_autoptr(GHashTable) where = g_hash_table_new_full(g_direct_hash, g_direct_equal,
							    NULL, g_free);
	g_autoptr(HaSyms) syms = NULL;
	g_autoptr(HaTep) tep = NULL;
	g_autoptr(HaPair) pair = NULL;
	CpuWalk c = { .cpu = cpu, .from = from, .to = to, .where = where, .fn = fn,
		      .user = user };
	bool own_txn = !ha_store_in_txn(s), ok = false;
	uint64_t pages = 0;
	sqlite3_stmt *st;
	guint i, start = 0;

	if (own_txn && !ha_store_exec(s, "BEGIN", error))	/* one snapshot */
		return false;
	g_array_set_clear_func(evs, ev_clear);
	st = ha_store_stmt(s, "SELECT id, nr_pages FROM chunks WHERE boot = ? AND cpu = ? AND"
			   " nr_pages > 0 ORDER BY id", error);
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, cpu);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		g_array_append_val(ids, id);
		g_array_append_val(first, pages);
		pages += (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	*ret_pages = pages;
	if (to > pages)
		to = c.to = pages;
	if (from >= to) {
		ok = true;
		goto out;
	}
	c.tail = ids->len ? g_array_index(first, uint64_t, ids->len - 1) : 0;
	/* from the chunk that holds the page before @from: its events pair with ours */
	while (start + 1 < ids->len && g_array_index(first, uint64_t, start + 1) < MAX(from, 1))
		start++;
	syms = load_syms(s, boot, NULL);
	tep = load_tep(s, boot, syms);
	ha_syms_foreach(syms, add_symbol, tep);
	pending = pending_events(s, boot);
	pair = ha_pair_new(cpu_paired, &c);
	c.tep = tep;
	c.pair = pair;
	c.syms = syms;
	c.x = (EvCtx){ .evs = evs, .store = s, .boot = boot, .pending = pending };
	/* up to the chunk that holds page @to, and on while an event of ours waits */
	for (i = start; i < ids->len; i++) {
		g_autoptr(GBytes) raw = NULL;
		g_autoptr(GError) e = NULL;
		const uint8_t *page;
		uint32_t len;
		size_t off = 0;

		if (g_array_index(first, uint64_t, i) > to && !c.waiting)
			break;
		st = ha_store_stmt(s, "SELECT data FROM chunks WHERE id = ?", error);
		if (!st)
			goto out;
		sqlite3_bind_int64(st, 1, g_array_index(ids, int64_t, i));
		if (sqlite3_step(st) == SQLITE_ROW)
			raw = ha_chunk_decompress(sqlite3_column_blob(st, 0),
						  (size_t)sqlite3_column_bytes(st, 0), &e);
		sqlite3_reset(st);
		c.page = g_array_index(first, uint64_t, i);
		if (!raw) {
			/* what events skips (it says why on stderr) */
			continue;
		}
		while (ha_chunk_next_page(raw, &off, &page, &len)) {
			c.fed = false;
			c.idx = 0;
			if (ha_tep_walk_page(tep, page, len, cpu_event, &c, NULL) >= 0 &&
			    !c.fed && ha_tep_missed(tep) != 0)
				ha_pair_lost(pair, cpu);
			c.page++;
		}
	}
	if (i == ids->len)
		ha_pair_flush(pair);	/* the CPU's end: as events finishes them */
	ok = true;
out:
	if (own_txn)
		ha_store_exec(s, "COMMIT", NULL);
	return ok;
}
