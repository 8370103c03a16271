// SPDX-License-Identifier: MIT
/* report.c - what the reports share, and the table they dispatch from (report-int.h). */
#include "report-int.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

void ha_rp_stack_clear(HaRpStack *s)
{
	if (s->ips)
		g_array_unref(s->ips);
	memset(s, 0, sizeof(*s));
}

GArray *ha_rp_ips_from_blob(const void *blob, int bytes)
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
const char HA_RP_WHY_PENDING[] = "the stream ended before its stack event";
const char HA_RP_WHY_REFUSED[] = "beyond the boot's row limits, not stored";

/* ---- events still waiting for their stack ---------------------------------------- */

char *ha_rp_pending_key(uint32_t cpu, uint64_t ts, int pid)
{
	return g_strdup_printf("%u:%" PRIu64 ":%d", cpu, ts, pid);
}

static void pending_add(uint32_t cpu, uint64_t ts, int pid, void *set)
{
	g_hash_table_add(set, ha_rp_pending_key(cpu, ts, pid));
}

static void pending_none(const HaPaired *p, void *user)
{
	(void)p;
	(void)user;
}

/*
 * The events of @boot that wait for their stack event in the stored pairing state, as
 * a set of ha_rp_pending_key()s. The ingest counts an event (boots, top, folded) once
 * its stack event arrives or cannot arrive any more (BYE, lost events); when the stream
 * ends without BYE (a crash) the last events of each CPU stay waiting: `events`
 * decodes them, so every report counts them, as "stack not received". A boot whose
 * stream resumes pairs them and they leave this set. Free with g_hash_table_unref().
 */
GHashTable *ha_rp_pending_events(HaStore *s, int64_t boot)
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
void ha_rp_resolve_map(HaStore *s, int64_t boot, uint32_t id, uint64_t ts_min,
			uint64_t ts_max, HaRpStack *ret)
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
		ret->ips = ha_rp_ips_from_blob(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0));
	} else {
		ret->why = "no stack received for this id in its epoch";
	}
	sqlite3_reset(st);
}

void ha_rp_resolve_full(HaStore *s, int64_t id, HaRpStack *ret)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT ips FROM fullstacks WHERE id = ?", NULL);

	ret->kind = ST_UNRESOLVED;
	ret->sid = id;
	ret->why = id == 0 ? HA_RP_WHY_REFUSED : "full stack missing";
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		ret->kind = ST_FULL;
		ret->ips = ha_rp_ips_from_blob(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0));
	}
	sqlite3_reset(st);
}

/* ---- progress: on a terminal, once a report has run for a second ----------------- */

void ha_rp_progress_init(HaRpProgress *p, const char *what)
{
	*p = (HaRpProgress){ .start = g_get_monotonic_time(), .what = what };
}

void ha_rp_progress_tick(HaRpProgress *p, uint64_t done, uint64_t total)
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

void ha_rp_progress_end(HaRpProgress *p)
{
	if (p->shown)
		g_printerr("\r\033[K");
}

/* ---- output helpers ----------------------------------------------------------- */

char *ha_rp_fmt_time(int64_t us)
{
	g_autoptr(GDateTime) t = NULL;

	if (us <= 0)
		return g_strdup("-");
	t = g_date_time_new_from_unix_utc(us / G_USEC_PER_SEC);
	return t ? g_date_time_format(t, "%Y-%m-%d %H:%M:%S") : g_strdup("-");
}

char *ha_rp_stack_label(const HaRpStack *st)
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
		if (st->why == HA_RP_WHY_REFUSED)
			return g_strdup_printf("[stacks %s]", st->why);
		return g_strdup_printf("stack_id 0x%08" PRIx64 " UNRESOLVED: %s", st->sid,
				       st->why);
	}
}

void ha_rp_print_frames(GString *o, const HaRpStack *st, const HaSyms *syms,
			const char *indent)
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

static void json_frames(JsonBuilder *b, const HaRpStack *st, const HaSyms *syms)
{
	json_builder_begin_array(b);
	for (guint i = 0; st->ips && i < st->ips->len; i++) {
		uint64_t ip = g_array_index(st->ips, uint64_t, i);
		g_autofree char *f = ha_syms_format(syms, ip);
		g_autofree char *a = g_strdup_printf("0x%" PRIx64, ip);
		g_auto(GStrv) lines = ha_syms_lines(syms, ip);

		json_builder_begin_object(b);
		ha_json_member_str(b, "ip", a);
		ha_json_member_str(b, "sym", f);
		if (lines) {
			json_builder_set_member_name(b, "src");
			json_builder_begin_array(b);
			for (guint j = 0; lines[j]; j++)
				ha_json_add_str(b, lines[j]);
			json_builder_end_array(b);
		}
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
}

const char *const ha_rp_stack_kinds[] = { "none", "stack_id", "full", "unresolved",
					   "lost" };

void ha_rp_json_stack(JsonBuilder *b, const HaRpStack *st, const HaSyms *syms)
{
	json_builder_begin_object(b);
	ha_json_member_str(b, "kind", ha_rp_stack_kinds[st->kind]);
	if (st->kind == ST_MAP || st->kind == ST_UNRESOLVED) {
		ha_json_member_int(b, "stack_id", st->sid);
		ha_json_member_int(b, "epoch", st->epoch);
	}
	if (st->kind == ST_FULL)
		ha_json_member_int(b, "full_id", st->sid);
	if (st->why)
		ha_json_member_str(b, "why", st->why);
	json_builder_set_member_name(b, "frames");
	json_frames(b, st, syms);
	json_builder_end_object(b);
}

/* Outermost first, ';'-separated, for flame graphs. g_free(). */
char *ha_rp_folded(const HaRpStack *st, const HaSyms *syms)
{
	GString *o = g_string_new(NULL);

	if (st->kind == ST_NONE || st->kind == ST_UNRESOLVED || st->kind == ST_LOST) {
		g_autofree char *l = ha_rp_stack_label(st);

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
HaSyms *ha_rp_load_syms(HaStore *s, int64_t boot, HaDwarf *dw)
{
	HaSyms *syms = ha_syms_load(s, boot);
	int64_t slide;

	if (dw && ha_report_vmlinux_fits(s, boot, dw, &slide))
		ha_syms_set_dwarf(syms, dw, slide);
	return syms;
}

/* ---- boot selection -------------------------------------------------------------- */

GArray *ha_rp_select_boots(HaStore *s, const char *arg, GError **error)
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

char *ha_rp_boot_uuid(HaStore *s, int64_t boot)
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

/* The reports, by name: ha_report() runs one. */
static const struct {
	const char *name;
	bool (*run)(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		    GError **error);
} reports[] = {
	{ "boots", ha_rp_boots },
	{ "top", ha_rp_top },
	{ "events", ha_rp_events },
	{ "stack", ha_rp_stack },
	{ "folded", ha_rp_folded_report },
	{ "flamegraph", ha_rp_flamegraph },
	{ "postmortem", ha_rp_postmortem },
};

bool ha_report(HaStore *store, const HaReportOpts *o, GString *out, GError **error)
{
	g_autoptr(HaDwarf) dw = NULL;
	bool ok;

	for (guint i = 0; i < G_N_ELEMENTS(reports); i++) {
		if (g_strcmp0(o->cmd, reports[i].name))
			continue;
		if (o->vmlinux && !(dw = ha_dwarf_open(o->vmlinux, error)))
			return false;
		if (!ha_store_exec(store, "BEGIN", error))	/* one consistent snapshot */
			return false;
		ok = reports[i].run(store, o, dw, out, error);
		ha_store_exec(store, "COMMIT", NULL);
		return ok;
	}
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
		    "unknown report '%s' (boots, top, events, stack ID, folded, flamegraph,"
		    " postmortem)",
		    o->cmd ? o->cmd : "");
	return false;
}

GArray *ha_report_select_boots(HaStore *store, const char *arg, GError **error)
{
	return ha_rp_select_boots(store, arg, error);
}

