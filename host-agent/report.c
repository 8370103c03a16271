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
#include "store-report.h"

void ha_rp_stack_clear(HaRpStack *s)
{
	if (s->ips)
		g_array_unref(s->ips);
	memset(s, 0, sizeof(*s));
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
 * stream resumes pairs them and they leave this set. Free with g_hash_table_unref();
 * NULL with @error on a store error.
 */
GHashTable *ha_rp_pending_events(HaStore *s, int64_t boot, GError **error)
{
	g_autoptr(GHashTable) set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							  NULL);
	g_autoptr(GBytes) state = NULL;

	if (!ha_store_boot_pair_state(s, boot, &state, error))
		return NULL;
	if (state) {
		g_autoptr(HaPair) p = ha_pair_new(pending_none, NULL);
		gsize len;
		const void *data = g_bytes_get_data(state, &len);

		if (ha_pair_load(p, data, len))
			ha_pair_foreach_waiting(p, pending_add, set);
	}
	return g_steal_pointer(&set);
}

/* The stack of stack_id @id seen between @ts_min and @ts_max (resolve.h's rule). */
bool ha_rp_resolve_map(HaStore *s, int64_t boot, uint32_t id, uint64_t ts_min,
		       uint64_t ts_max, HaRpStack *ret, GError **error)
{
	HaStackIdStack r;

	ret->kind = ST_UNRESOLVED;
	ret->sid = id;
	ret->epoch = -1;
	if (!ha_resolve_stack_id(s, boot, id, ts_min, ts_max, &r, error))
		return false;
	ret->epoch = r.epoch;
	switch (r.result) {
	case HA_STACK_ID_RESOLVED:
		ret->kind = ST_MAP;
		ret->ips = r.ips;
		break;
	case HA_STACK_ID_NO_EPOCH:
		ret->why = "no epoch with its tag had started";
		break;
	case HA_STACK_ID_SPAN:
		ret->why = WHY_SPAN;
		break;
	case HA_STACK_ID_NO_STACK:
		ret->why = "no stack received for this id in its epoch";
		break;
	}
	return true;
}

bool ha_rp_resolve_full(HaStore *s, int64_t id, HaRpStack *ret, GError **error)
{
	ret->kind = ST_UNRESOLVED;
	ret->sid = id;
	ret->why = id == 0 ? HA_RP_WHY_REFUSED : "full stack missing";
	if (!ha_store_fullstack_ips(s, id, &ret->ips, error))
		return false;
	if (ret->ips) {
		ret->kind = ST_FULL;
		ret->why = NULL;	/* found: no reason to give */
	}
	return true;
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
	g_auto(HaStoreBootInfo) info = { 0 };
	g_autoptr(GError) e = NULL;
	const uint8_t *bits = NULL;
	int nbits = ha_dwarf_build_id(dw, &bits);
	uint64_t link;
	bool match = true;

	if (!ha_store_boot_info(s, boot, &info, &e)) {
		g_printerr("host-agent: --vmlinux not used for boot %" PRId64 " (%s)\n", boot,
			   e->message);
		return false;
	}
	if (info.build_id) {
		gsize blen;
		const void *b = g_bytes_get_data(info.build_id, &blen);

		if (blen != (gsize)MAX(nbits, 0) || memcmp(bits, b, blen))
			match = false;
	}
	link = ha_dwarf_symbol(dw, "_text");
	if (!match || !link || !info.text_addr) {
		g_printerr("host-agent: --vmlinux not used for boot %" PRId64 " (%s)\n",
			   boot, !match ? "its build-id differs from the boot's" :
			   "no _text address to compute the KASLR slide");
		return false;
	}
	*ret_slide = (int64_t)(info.text_addr - link);
	return true;
}

/*
 * The boot's kallsyms, plus @dw's DWARF when @dw is that boot's vmlinux
 * (ha_report_vmlinux_fits()). Free with ha_syms_free().
 */
HaSyms *ha_rp_load_syms(HaStore *s, int64_t boot, HaDwarf *dw, GError **error)
{
	HaSyms *syms = ha_syms_load(s, boot, error);
	int64_t slide;

	if (!syms)
		return NULL;
	if (dw && ha_report_vmlinux_fits(s, boot, dw, &slide))
		ha_syms_set_dwarf(syms, dw, slide);
	return syms;
}

/* ---- boot selection -------------------------------------------------------------- */

GArray *ha_rp_select_boots(HaStore *s, const char *arg, GError **error)
{
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
	g_autofree char *pat = NULL;
	HaStoreBootsBy by;

	if (!arg) {
		by = HA_STORE_BOOTS_LATEST;
	} else if (strcmp(arg, "all") == 0) {
		by = HA_STORE_BOOTS_ALL;
	} else if (arg[strspn(arg, "0123456789")] == '\0' && strlen(arg) < 10) {
		by = HA_STORE_BOOTS_ID;
	} else {
		GString *p = g_string_new(NULL);

		for (const char *c = arg; *c; c++)
			if (*c != '-')
				g_string_append_c(p, g_ascii_toupper(*c));
		pat = g_string_free(p, FALSE);
		by = HA_STORE_BOOTS_UUID_PREFIX;
	}
	if (!ha_store_boots_select(s, by, pat ? pat : arg, ids, error))
		return NULL;
	if (!ids->len) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no boot matches '%s' in %s",
			    arg ? arg : "(latest)", ha_store_path(s));
		return NULL;
	}
	return g_steal_pointer(&ids);
}

char *ha_rp_boot_uuid(HaStore *s, int64_t boot, GError **error)
{
	g_auto(HaStoreBootInfo) info = { 0 };
	const uint8_t *u = info.uuid;

	if (!ha_store_boot_info(s, boot, &info, error))
		return NULL;
	if (!info.has_uuid)
		return g_strdup("?");
	return g_strdup_printf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x"
			       "%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8],
			       u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
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
		if (!ha_store_read_begin(store, error))	/* one consistent snapshot */
			return false;
		ok = reports[i].run(store, o, dw, out, error);
		ha_store_read_end(store);
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

