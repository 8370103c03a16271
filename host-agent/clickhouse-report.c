// SPDX-License-Identifier: MIT
/* clickhouse-report.c - `report --clickhouse URL`: boots, top, folded across the fleet. */
#include "clickhouse.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define TOP_DEFAULT 10u

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
		" ORDER BY host, domain, boot_no FORMAT TabSeparated", where);
	g_autoptr(GString) a = g_string_new(NULL);
	gchar **lines;

	if (!ha_ch_query(c, sql, NULL, 0, a, error))
		return false;
	g_string_append_printf(out, "%-16s %-16s %-4s %-36s %-22s %-19s %-19s %-12s %10s %10s"
			       " %8s %6s\n", "HOST", "DOMAIN", "BOOT", "BOOT_ID", "KERNEL",
			       "START (UTC)", "END (UTC)", "ENDED", "EVENTS", "LOST", "STACKS",
			       "EPOCHS");
	lines = g_strsplit(a->str, "\n", -1);
	for (gchar **l = lines; *l; l++) {
		gchar **f;
		g_autofree char *start = NULL, *end = NULL, *lost = NULL;

		if (!**l)
			continue;
		f = ha_ch_tsv_fields(*l);
		if (g_strv_length(f) != 13) {
			g_strfreev(f);
			continue;
		}
		start = fmt_us(g_ascii_strtoll(f[5], NULL, 10));
		end = fmt_us(g_ascii_strtoll(f[6], NULL, 10));
		lost = g_strdup_printf("%sf/%se", f[9], f[10]);
		g_string_append_printf(out, "%-16s %-16s %-4s %-36s %-22.22s %-19s %-19s %-12s %10s"
				       " %10s %8s %6s\n", f[0], f[1], f[2], f[3], f[4], start, end,
				       f[7], f[8], lost, f[11], f[12]);
		g_strfreev(f);
	}
	g_strfreev(lines);
	return true;
}

/* top and folded: the current stacks of the selected boots, summed. */
static bool ch_stacks(HaCh *c, const char *where, bool top, guint limit, GString *out,
		      GError **error)
{
	g_autofree char *lim = top ? g_strdup_printf(" LIMIT %u", limit) : g_strdup("");
	g_autofree char *sql = g_strdup_printf(
		"SELECT frames, sum(events) AS n FROM stacks FINAL"
		" WHERE (host, domain, boot) GLOBAL IN"
		" (SELECT host, domain, boot FROM boots FINAL WHERE %s)"
		" GROUP BY frames HAVING n > 0 ORDER BY %s%s FORMAT TabSeparated", where,
		top ? "n DESC, frames" : "frames", lim);
	g_autofree char *tsql = g_strdup_printf(
		"SELECT sum(events), count() FROM boots FINAL WHERE %s FORMAT TabSeparated",
		where);
	g_autoptr(GString) a = g_string_new(NULL);
	g_autoptr(GString) t = g_string_new(NULL);
	uint64_t total = 0, nboots = 0;
	gchar **lines;
	guint i = 0;

	if (!ha_ch_query(c, sql, NULL, 0, a, error))
		return false;
	if (top) {
		if (!ha_ch_query(c, tsql, NULL, 0, t, error))
			return false;
		sscanf(t->str, "%" SCNu64 "\t%" SCNu64, &total, &nboots);
		g_string_append_printf(out, "%" PRIu64 " events in %" PRIu64 " boots across the"
				       " fleet, top stacks merged by symbolic stack\n", total,
				       nboots);
	}
	lines = g_strsplit(a->str, "\n", -1);
	for (gchar **l = lines; *l; l++) {
		gchar **f;
		uint64_t n;

		if (!**l)
			continue;
		f = ha_ch_tsv_fields(*l);
		if (g_strv_length(f) != 2) {
			g_strfreev(f);
			continue;
		}
		n = g_ascii_strtoull(f[1], NULL, 10);
		if (top)
			g_string_append_printf(out, "#%-3u %10" PRIu64 " events %5.1f%%  %s\n", ++i,
					       n, total ? 100.0 * (double)n / (double)total : 0,
					       f[0]);
		else
			g_string_append_printf(out, "%s %" PRIu64 "\n", f[0], n);
		g_strfreev(f);
	}
	g_strfreev(lines);
	return true;
}

bool ha_ch_report(HaCh *c, const HaChReportOpts *o, GString *out, GError **error)
{
	g_autofree char *where = boot_filter(o);

	if (!g_strcmp0(o->cmd, "boots"))
		return ch_boots(c, where, out, error);
	if (!g_strcmp0(o->cmd, "top"))
		return ch_stacks(c, where, true, o->limit ? o->limit : TOP_DEFAULT, out, error);
	if (!g_strcmp0(o->cmd, "folded"))
		return ch_stacks(c, where, false, 0, out, error);
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
		    "report --clickhouse: boots, top or folded (events are not replicated yet)");
	return false;
}
