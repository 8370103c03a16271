// SPDX-License-Identifier: MIT
/* clickhouse-report.c - `report --clickhouse URL`: boots, top, folded across the fleet. */
#include "clickhouse.h"
#include "report.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define TOP_DEFAULT	10u
#define EVENTS_DEFAULT	50u	/* per boot, as the store's events */

/* WHERE of the boots the options select. */
static char *boot_filter(const HaChReportOpts *o)
{
	GString *q = g_string_new("1");

	if (o->host) {
		g_string_append(q, " AND host = ");
		ha_ch_sql_str(q, o->host);
	}
	if (o->domain) {
		g_string_append(q, " AND domain = ");
		ha_ch_sql_str(q, o->domain);
	}
	if (o->ended) {
		g_string_append(q, " AND ended = ");
		ha_ch_sql_str(q, o->ended);
	}
	if (o->since_us >= 0)
		g_string_append_printf(q, " AND end_us >= %" PRId64, o->since_us);
	if (o->until_us >= 0)
		g_string_append_printf(q, " AND start_us <= %" PRId64, o->until_us);
	return g_string_free(q, FALSE);
}

static char *fmt_us(int64_t us)
{
	g_autoptr(GDateTime) t = us > 0 ? g_date_time_new_from_unix_utc(us / G_USEC_PER_SEC) :
				 NULL;

	return t ? g_date_time_format(t, "%Y-%m-%d %H:%M:%S") : g_strdup("-");
}

static bool ch_boots(HaCh *c, const char *where, GString *out, GError **error)
{
	g_autofree char *sql = g_strdup_printf(
		"SELECT host, domain, boot_no, boot, kernel, start_us, end_us, ended, events,"
		" lost_frames, lost_events, stacks, epochs FROM boots FINAL WHERE %s"
		" ORDER BY host, domain, boot_no", where);
	g_autoptr(GPtrArray) rows = ha_ch_query_rows(c, sql, 13, error);

	if (!rows)
		return false;
	g_string_append_printf(out, "%-16s %-16s %-4s %-36s %-22s %-19s %-19s %-12s %10s %10s"
			       " %8s %6s\n", "HOST", "DOMAIN", "BOOT", "BOOT_ID", "KERNEL",
			       "START (UTC)", "END (UTC)", "ENDED", "EVENTS", "LOST", "STACKS",
			       "EPOCHS");
	for (guint i = 0; i < rows->len; i++) {
		gchar **f = rows->pdata[i];
		g_autofree char *start = NULL, *end = NULL, *lost = NULL;

		start = fmt_us(g_ascii_strtoll(f[5], NULL, 10));
		end = fmt_us(g_ascii_strtoll(f[6], NULL, 10));
		lost = g_strdup_printf("%sf/%se", f[9], f[10]);
		g_string_append_printf(out, "%-16s %-16s %-4s %-36s %-22.22s %-19s %-19s %-12s %10s"
				       " %10s %8s %6s\n", f[0], f[1], f[2], f[3], f[4], start, end,
				       f[7], f[8], lost, f[11], f[12]);
	}
	return true;
}

/* The WHERE of the events the options select, within the selected boots; with
 * last_ns, @last is the boot's last event time (a column the caller joins, or a
 * number). */
static char *event_filter(const HaChReportOpts *o, const char *last)
{
	GString *q = g_string_new("1");

	if (o->since_us >= 0)
		g_string_append_printf(q, " AND host_us >= %" PRId64, o->since_us);
	if (o->until_us >= 0)
		g_string_append_printf(q, " AND host_us <= %" PRId64, o->until_us);
	if (o->event) {
		/* "kmem/kmalloc" or "kmalloc", as the store's --event */
		g_string_append(q, strchr(o->event, '/') ? " AND event = " :
				" AND splitByChar('/', event)[-1] = ");
		ha_ch_sql_str(q, o->event);
	}
	if (o->last_ns >= 0)
		g_string_append_printf(q, " AND ts + %" PRId64 " >= %s", o->last_ns, last);
	return g_string_free(q, FALSE);
}

/* FROM of the events of the boots @cond selects (a condition on their host, domain
 * and boot): events FINAL, with each boot's last_ts when needed. */
static char *event_from_cond(const HaChReportOpts *o, const char *cond)
{
	if (o->last_ns < 0)
		return g_strdup_printf("events FINAL WHERE %s", cond);
	return g_strdup_printf("events FINAL GLOBAL ANY INNER JOIN (SELECT host, domain, boot,"
			       " max(ts) AS last_ts FROM events WHERE %s GROUP BY host, domain,"
			       " boot) USING (host, domain, boot) WHERE %s", cond, cond);
}

/* FROM of the selected events (@where: of the boots). */
static char *event_from(const HaChReportOpts *o, const char *where)
{
	g_autofree char *cond = g_strdup_printf("(host, domain, boot) GLOBAL IN (SELECT host,"
						" domain, boot FROM boots FINAL WHERE %s)", where);

	return event_from_cond(o, cond);
}

#define UNSEALED_LISTED	4096u	/* boots named in the query, beyond: a subquery */

/*
 * The selected events' counts per stack, as rows (fstack UInt64, n UInt64, folded
 * String, host, domain, boot): sealed boots' from their aggregates (folded ''),
 * the others' from their events rows, their stacks hashed as sealing hashes them.
 * Only when the time filters are whole seconds, which the aggregates' seconds give
 * exactly (clickhouse.h): *@ret NULL otherwise.
 */
static bool stack_counts(HaCh *c, const HaChReportOpts *o, const char *where, char **ret,
			 GError **error)
{
	g_autofree char *ef = NULL, *from = NULL, *sql = NULL;
	g_autoptr(GString) agg = g_string_new("1");
	g_autoptr(GString) cond = g_string_new("(host, domain, boot) IN (");
	g_autoptr(GPtrArray) rows = NULL;
	bool timed = o->since_us >= 0 || o->until_us >= 0 || o->last_ns >= 0;
	guint n = 0;

	*ret = NULL;
	if ((o->since_us >= 0 && o->since_us % G_USEC_PER_SEC) ||
	    (o->until_us >= 0 && o->until_us % G_USEC_PER_SEC) ||
	    (o->last_ns >= 0 && o->last_ns % 1000000000))
		return true;
	/* host_us >= S s; host_us <= U s; the last L s: L - ts <= L s */
	if (o->since_us >= 0)
		g_string_append_printf(agg, " AND hs >= %" PRId64, o->since_us / G_USEC_PER_SEC);
	if (o->until_us >= 0)
		g_string_append_printf(agg, " AND (hs < %" PRId64 " OR (hs = %" PRId64
				       " AND hs_frac = 0))", o->until_us / G_USEC_PER_SEC,
				       o->until_us / G_USEC_PER_SEC);
	if (o->last_ns >= 0)
		g_string_append_printf(agg, " AND tail_s <= %" PRId64, o->last_ns / 1000000000);
	if (o->event) {
		g_string_append(agg, strchr(o->event, '/') ? " AND event = " :
				" AND splitByChar('/', event)[-1] = ");
		ha_ch_sql_str(agg, o->event);
	}
	g_string_append_printf(agg, " AND (host, domain, boot, version) GLOBAL IN (SELECT host,"
			       " domain, boot, version FROM sealed FINAL WHERE (host, domain, boot,"
			       " snap) GLOBAL IN (SELECT host, domain, boot, snap FROM boots FINAL"
			       " WHERE %s))", where);
	/* The selected boots not sealed (running, mostly), named in the query so that
	 * their events are read through the table's key rather than all of them. */
	sql = g_strdup_printf("SELECT host, domain, boot FROM boots FINAL WHERE %s AND (host,"
			      " domain, boot, snap) GLOBAL NOT IN (SELECT host, domain, boot, snap"
			      " FROM sealed FINAL) LIMIT %u", where, UNSEALED_LISTED + 1);
	rows = ha_ch_query_rows(c, sql, 3, error);
	if (!rows)
		return false;
	for (guint r = 0; r < rows->len; r++) {
		gchar **f = rows->pdata[r];

		g_string_append(cond, n++ ? ", (" : "(");
		for (int i = 0; i < 3; i++) {
			ha_ch_sql_str(cond, f[i]);
			g_string_append(cond, i < 2 ? ", " : ")");
		}
	}
	g_string_append_c(cond, ')');
	if (n > UNSEALED_LISTED)
		g_string_printf(cond, "(host, domain, boot) GLOBAL IN (SELECT host, domain, boot"
				" FROM boots FINAL WHERE %s AND (host, domain, boot, snap) GLOBAL"
				" NOT IN (SELECT host, domain, boot, snap FROM sealed FINAL))",
				where);
	if (!n) {
		*ret = g_strdup_printf("SELECT fstack, n, materialize('') AS folded, host, domain,"
				       " boot FROM %s WHERE %s", timed ? "event_counts" :
				       "event_totals", agg->str);
		return true;
	}
	ef = event_filter(o, "last_ts");
	from = event_from_cond(o, cond->str);
	*ret = g_strdup_printf(
		"SELECT fstack, n, materialize('') AS folded, host, domain, boot FROM %s WHERE %s"
		" UNION ALL"
		" SELECT cityHash64(folded) AS fstack, n, folded, host, domain, boot FROM"
		" (SELECT host, domain, boot, stack, count() AS n FROM %s AND %s"
		" GROUP BY host, domain, boot, stack) ANY INNER JOIN (SELECT host, domain, boot,"
		" stack, folded FROM event_stacks FINAL WHERE %s)"
		" USING (host, domain, boot, stack)",
		timed ? "event_counts" : "event_totals", agg->str, from, ef, cond->str);
	return true;
}

/*
 * Print the (folded, count) @rows: as folded lines, or with @tsql (the selected
 * events' total and boots) as top.
 */
static bool print_stacks(HaCh *c, const HaChReportOpts *o, GPtrArray *rows,
			 const char *tsql, GString *out, GError **error)
{
	uint64_t total = 0;

	if (tsql) {
		g_autoptr(GPtrArray) t = ha_ch_query_rows(c, tsql, 2, error);
		gchar **f;

		if (!t)
			return false;
		f = t->len ? t->pdata[0] : NULL;
		total = f ? g_ascii_strtoull(f[0], NULL, 10) : 0;
		g_string_append_printf(out, "%" PRIu64 " events in %s boots across the fleet",
				       total, f ? f[1] : "0");
		if (o->last_ns >= 0)
			g_string_append_printf(out, ", the last %.3f s of each",
					       (double)o->last_ns / 1e9);
		g_string_append(out, ", top stacks merged by symbolic stack\n");
	}
	for (guint i = 0; i < rows->len; i++) {
		gchar **f = rows->pdata[i];
		uint64_t n = g_ascii_strtoull(f[1], NULL, 10);

		if (tsql)
			g_string_append_printf(out, "#%-3u %10" PRIu64 " events %5.1f%%  %s\n",
					       i + 1, n,
					       total ? 100.0 * (double)n / (double)total : 0, f[0]);
		else
			g_string_append_printf(out, "%s %" PRIu64 "\n", f[0], n);
	}
	return true;
}

/* top and folded of the selected events: their stacks (event_stacks), summed. */
static bool ch_event_stacks(HaCh *c, const HaChReportOpts *o, const char *where, bool top,
			    guint limit, GString *out, GError **error)
{
	g_autofree char *ef = event_filter(o, "last_ts");
	g_autofree char *from = event_from(o, where);
	g_autofree char *counts = NULL;
	g_autofree char *lim = top ? g_strdup_printf(" LIMIT %u", limit) : g_strdup("");
	g_autofree char *sql = NULL, *tsql = NULL;
	g_autoptr(GPtrArray) rows = NULL;

	if (!stack_counts(c, o, where, &counts, error))
		return false;
	if (counts) {
		sql = g_strdup_printf(
			"SELECT if(f != '', f, name) AS fo, n FROM (SELECT fstack,"
			" anyIf(folded, folded != '') AS f, sum(n) AS n FROM (%s) GROUP BY fstack)"
			" ANY LEFT JOIN (SELECT fstack, any(folded) AS name FROM stack_names"
			" GROUP BY fstack) USING fstack ORDER BY %s%s", counts,
			top ? "n DESC, fo" : "fo", lim);
		tsql = g_strdup_printf("SELECT sum(n), uniqExact(host, domain, boot) FROM (%s)",
				       counts);
	} else {
		sql = g_strdup_printf(
			"SELECT folded, sum(n) AS n FROM (SELECT host, domain, boot, stack,"
			" count() AS n FROM %s AND %s GROUP BY host, domain, boot, stack)"
			" ANY INNER JOIN (SELECT host, domain, boot, stack, folded FROM"
			" event_stacks FINAL) USING (host, domain, boot, stack) GROUP BY folded"
			" ORDER BY %s%s", from, ef, top ? "n DESC, folded" : "folded", lim);
		tsql = g_strdup_printf("SELECT count(), uniqExact(host, domain, boot) FROM %s AND"
				       " %s", from, ef);
	}
	rows = ha_ch_query_rows(c, sql, 2, error);
	if (!rows)
		return false;
	return print_stacks(c, o, rows, top ? tsql : NULL, out, error);
}

typedef struct {
	char *folded;
	JsonNode *json;	/* the stack object, parsed; NULL: ClickHouse's was no object */
} EvStack;

static void ev_stack_free(gpointer p)
{
	EvStack *s = p;

	g_free(s->folded);
	if (s->json)
		json_node_unref(s->json);
	g_free(s);
}

/* The stack object ClickHouse holds for an event stack (written by clickhouse-events.c
 * from a report's stack object), parsed: NULL unless it is one JSON object. */
static JsonNode *ev_stack_json(const char *text)
{
	g_autoptr(JsonParser) p = json_parser_new_immutable();
	JsonNode *root;

	if (!json_parser_load_from_data(p, text, -1, NULL))
		return NULL;
	root = json_parser_get_root(p);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root))
		return NULL;
	return json_node_ref(root);
}

/* One boot's selected events, the last @limit, oldest first. */
static bool ch_boot_events(HaCh *c, const HaChReportOpts *o, gchar **b, guint limit,
			   GString *out, GError **error)
{
	g_autoptr(GString) key = g_string_new(NULL);
	g_autoptr(GPtrArray) evs = NULL, srows = NULL;
	g_autoptr(GHashTable) stacks = g_hash_table_new_full(g_int64_hash, g_int64_equal,
							     g_free, ev_stack_free);
	g_autofree char *ef = NULL, *sql = NULL, *ssql = NULL, *last = NULL;
	g_autoptr(JsonBuilder) head = NULL;
	HaJsonArray arr;
	guint n, bad = 0;

	ha_ch_sql_boot(key, b[0], b[1], b[2]);
	if (o->last_ns >= 0) {
		g_autofree char *q = g_strdup_printf("SELECT max(ts) FROM events WHERE %s",
						     key->str);
		uint64_t v;

		if (!ha_ch_query_u64(c, q, &v, error))
			return false;
		last = g_strdup_printf("%" PRIu64, v);
	}
	ef = event_filter(o, last);
	sql = g_strdup_printf("SELECT ts, cpu, pid, event, fields, stack, recovered FROM"
			      " events FINAL"
			      " WHERE %s AND %s ORDER BY ts DESC, cpu DESC, page DESC, idx DESC"
			      " LIMIT %u", key->str, ef, limit);
	ssql = g_strdup_printf("SELECT stack, folded, json FROM event_stacks FINAL WHERE %s",
			       key->str);
	evs = ha_ch_query_rows(c, sql, 7, error);
	srows = evs ? ha_ch_query_rows(c, ssql, 3, error) : NULL;
	if (!srows)
		return false;
	for (guint i = 0; i < srows->len; i++) {
		gchar **f = srows->pdata[i];
		EvStack *s;
		uint64_t k;

		k = g_ascii_strtoull(f[0], NULL, 10);
		s = g_new(EvStack, 1);
		s->folded = g_strdup(f[1]);
		s->json = o->json ? ev_stack_json(f[2]) : NULL;
		bad += o->json && !s->json;
		g_hash_table_insert(stacks, g_memdup2(&k, sizeof(k)), s);
	}
	if (bad)
		g_warning("%s %s boot %s: %u stacks in ClickHouse are not JSON objects:"
			  " their events' stack is null", b[0], b[1], b[3], bad);
	n = evs->len;
	if (o->json) {
		head = json_builder_new();
		json_builder_begin_object(head);
		ha_json_member_str(head, "host", b[0]);
		ha_json_member_str(head, "domain", b[1]);
		ha_json_member_str(head, "boot_id", b[2]);
		ha_json_member_u64(head, "boot", g_ascii_strtoull(b[3], NULL, 10));
		ha_json_array_begin(&arr, out, head, "events");
	} else {
		g_string_append_printf(out, "%s %s boot %s (%s): last %u events, oldest first\n",
				       b[0], b[1], b[3], b[2], n);
	}
	for (guint i = n; i-- > 0;) {
		gchar **f = evs->pdata[i];
		g_autofree char *text = NULL;
		uint64_t k, ts;
		EvStack *s;

		text = *f[3] ? g_strconcat(f[3], ": ", f[4], NULL) : g_strdup(f[4]);
		k = g_ascii_strtoull(f[5], NULL, 10);
		s = g_hash_table_lookup(stacks, &k);
		ts = g_ascii_strtoull(f[0], NULL, 10);
		if (o->json) {
			g_autoptr(JsonBuilder) el = json_builder_new();

			json_builder_begin_object(el);
			ha_json_member_u64(el, "ts", ts);
			ha_json_member_u64(el, "cpu", g_ascii_strtoull(f[1], NULL, 10));
			ha_json_member_int(el, "pid", g_ascii_strtoll(f[2], NULL, 10));
			ha_json_member_str(el, "event", text);
			json_builder_set_member_name(el, "stack");
			if (s && s->json)
				json_builder_add_value(el, json_node_copy(s->json));
			else
				json_builder_add_null_value(el);
			json_builder_set_member_name(el, "recovered");
			json_builder_add_boolean_value(el, !strcmp(f[6], "1"));
			json_builder_end_object(el);
			ha_json_array_add(&arr, el);
		} else {
			g_string_append_printf(out, "%" PRIu64 ".%09" PRIu64 " cpu%s pid %s%s  %s\n"
					       "    %s\n", ts / 1000000000u, ts % 1000000000u, f[1],
					       f[2], !strcmp(f[6], "1") ? " [recovered]" : "", text,
					       s ? s->folded : "[stack not shipped]");
		}
	}
	if (o->json)
		ha_json_array_end(&arr);
	else
		g_string_append_c(out, '\n');
	return true;
}

/* events: each selected boot's, in host, domain, boot order. */
static bool ch_events(HaCh *c, const HaChReportOpts *o, const char *where, GString *out,
		      GError **error)
{
	g_autofree char *sql = g_strdup_printf(
		"SELECT host, domain, boot, boot_no FROM boots FINAL WHERE %s"
		" ORDER BY host, domain, boot_no", where);
	g_autoptr(GPtrArray) rows = ha_ch_query_rows(c, sql, 4, error);

	if (!rows)
		return false;
	for (guint i = 0; i < rows->len; i++) {
		gchar **f = rows->pdata[i];

		if (!ch_boot_events(c, o, f, o->limit ? o->limit : EVENTS_DEFAULT, out, error))
			return false;
	}
	return true;
}

/* top and folded: the current stacks of the selected boots, summed. */
static bool ch_stacks(HaCh *c, const HaChReportOpts *o, const char *where, bool top,
		      guint limit, GString *out, GError **error)
{
	g_autofree char *lim = top ? g_strdup_printf(" LIMIT %u", limit) : g_strdup("");
	g_autofree char *sql = g_strdup_printf(
		"SELECT frames, sum(events) AS n FROM stacks FINAL"
		" WHERE (host, domain, boot) GLOBAL IN"
		" (SELECT host, domain, boot FROM boots FINAL WHERE %s)"
		" GROUP BY frames HAVING n > 0 ORDER BY %s%s", where,
		top ? "n DESC, frames" : "frames", lim);
	g_autofree char *tsql = g_strdup_printf(
		"SELECT sum(events), count() FROM boots FINAL WHERE %s", where);
	g_autoptr(GPtrArray) rows = ha_ch_query_rows(c, sql, 2, error);

	if (!rows)
		return false;
	return print_stacks(c, o, rows, top ? tsql : NULL, out, error);
}

bool ha_ch_report(HaCh *c, const HaChReportOpts *o, GString *out, GError **error)
{
	g_autofree char *where = boot_filter(o);

	bool by_event = o->last_ns >= 0 || o->event;

	if (!g_strcmp0(o->cmd, "boots"))
		return ch_boots(c, where, out, error);
	if (!g_strcmp0(o->cmd, "events"))
		return ch_events(c, o, where, out, error);
	if (by_event && (!g_strcmp0(o->cmd, "top") || !g_strcmp0(o->cmd, "folded")))
		return ch_event_stacks(c, o, where, !g_strcmp0(o->cmd, "top"),
				       o->limit ? o->limit : TOP_DEFAULT, out, error);
	if (!g_strcmp0(o->cmd, "top"))
		return ch_stacks(c, o, where, true, o->limit ? o->limit : TOP_DEFAULT, out, error);
	if (!g_strcmp0(o->cmd, "folded"))
		return ch_stacks(c, o, where, false, 0, out, error);
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
		    "report --clickhouse: boots, top, events or folded");
	return false;
}
