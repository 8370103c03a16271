// SPDX-License-Identifier: MIT
/* clickhouse.c - ClickHouse over HTTP, the fleet schema and RowBinary rows (clickhouse.h). */
#include "clickhouse.h"

#include <curl/curl.h>
#include <gio/gio.h>
#include <string.h>

#define CH_CONNECT_TIMEOUT_S	5L
#define CH_TIMEOUT_S		120L
#define CH_MAX_ANSWER		(64u << 20)	/* a report's answer, at most */

struct _HaCh {
	char *url;
	bool has_query;		/* the URL has a '?' already (?database=...) */
	bool schema_ok;		/* ha_ch_schema() done since the last failure */
	CURL *curl;
};

static gsize curl_ready;

HaCh *ha_ch_new(const char *url, GError **error)
{
	HaCh *c;

	if (!g_str_has_prefix(url, "http://") && !g_str_has_prefix(url, "https://")) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "ClickHouse URL %s: not http:// or https:// (its HTTP interface,"
			    " port 8123 by default)", url);
		return NULL;
	}
	if (g_once_init_enter(&curl_ready)) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		g_once_init_leave(&curl_ready, 1);
	}
	c = g_new0(HaCh, 1);
	c->url = g_strdup(url);
	c->has_query = strchr(url, '?') != NULL;
	c->curl = curl_easy_init();
	if (!c->curl) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "curl_easy_init failed");
		ha_ch_free(c);
		return NULL;
	}
	return c;
}

void ha_ch_free(HaCh *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	g_free(c->url);
	g_free(c);
}

typedef struct {
	GString *s;
	bool over;
} Answer;

static size_t on_data(char *p, size_t size, size_t n, void *user)
{
	Answer *a = user;

	if (a->s->len + size * n > CH_MAX_ANSWER) {
		a->over = true;
		return 0;	/* ends the transfer with an error */
	}
	g_string_append_len(a->s, p, (gssize)(size * n));
	return size * n;
}

bool ha_ch_query(HaCh *c, const char *sql, const void *data, size_t len, GString *out,
		 GError **error)
{
	g_autoptr(GString) answer = g_string_new(NULL);
	g_autofree char *url = NULL;
	Answer a = { .s = answer };
	long code = 0;
	CURLcode rc;

	if (data) {
		char *q = curl_easy_escape(c->curl, sql, 0);

		url = g_strconcat(c->url, c->has_query ? "&" : "?", "query=", q, NULL);
		curl_free(q);
	} else {
		url = g_strdup(c->url);
		data = sql;
		len = strlen(sql);
	}
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, data);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, CH_CONNECT_TIMEOUT_S);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, CH_TIMEOUT_S);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(c->curl);
	if (rc != CURLE_OK)
		c->schema_ok = false;	/* the server may have been replaced */
	if (rc != CURLE_OK) {
		g_set_error(error, G_IO_ERROR, a.over ? G_IO_ERROR_MESSAGE_TOO_LARGE :
			    G_IO_ERROR_HOST_UNREACHABLE, "ClickHouse %s: %s", c->url,
			    a.over ? "answer too large" : curl_easy_strerror(rc));
		return false;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		g_strchomp(answer->str);
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "ClickHouse %s: HTTP %ld: %.400s",
			    c->url, code, answer->str);
		return false;
	}
	if (out)
		g_string_append_len(out, answer->str, (gssize)answer->len);
	return true;
}

/* The fleet schema; host-agent/README.md shows it and the Distributed tables over it. */
static const char *const schema[] = {
	"CREATE TABLE IF NOT EXISTS boots ("
	" host String, domain String, boot String, boot_no UInt32, kernel String,"
	" start_us Int64, end_us Int64, ended String, events UInt64, lost_frames UInt64,"
	" lost_events UInt64, stacks UInt64, epochs UInt64, malformed UInt64,"
	" stack_not_received UInt64, snap UInt64, version UInt64)"
	" ENGINE = ReplacingMergeTree(version) ORDER BY (host, domain, boot)",
	"CREATE TABLE IF NOT EXISTS stacks ("
	" host String, domain String, boot String, frames String, events UInt64,"
	" version UInt64)"
	" ENGINE = ReplacingMergeTree(version) ORDER BY (host, domain, boot, frames)",
	"CREATE TABLE IF NOT EXISTS lost ("
	" host String, domain String, boot String, stream UInt64, cpu UInt32,"
	" overrun UInt64, commit_overrun UInt64, dropped_events UInt64, read_events UInt64,"
	" version UInt64)"
	" ENGINE = ReplacingMergeTree(version) ORDER BY (host, domain, boot, stream, cpu)",
	"CREATE TABLE IF NOT EXISTS stats ("
	" host String, domain String, boot String, stream UInt64, key UInt32, value Int64,"
	" version UInt64)"
	" ENGINE = ReplacingMergeTree(version) ORDER BY (host, domain, boot, stream, key)",
	"CREATE TABLE IF NOT EXISTS events ("
	" host String, domain String, boot String, cpu UInt32, page UInt64, idx UInt32,"
	" ts UInt64, host_us Int64, host_uncert_us Int64, event String, pid Int32,"
	" fields String,"
	" stack_id Int64, stack UInt64, version UInt64, recovered UInt8)"
	" ENGINE = ReplacingMergeTree(version) ORDER BY (host, domain, boot, cpu, page, idx)",
	/* stack: FNV-1a 64 of json (clickhouse-events.c), a key within one boot */
	"CREATE TABLE IF NOT EXISTS event_stacks ("
	" host String, domain String, boot String, stack UInt64, kind String,"
	" stack_id Int64, epoch Int64, folded String, json String, version UInt64)"
	" ENGINE = ReplacingMergeTree(version) ORDER BY (host, domain, boot, stack)",
	/* the aggregates of a sealed boot (clickhouse.h), rows of its seal's version */
	"CREATE TABLE IF NOT EXISTS sealed ("
	" host String, domain String, boot String, snap UInt64, last_ts UInt64,"
	" events UInt64, version UInt64)"
	" ENGINE = ReplacingMergeTree(version) ORDER BY (host, domain, boot)",
	"CREATE TABLE IF NOT EXISTS event_counts ("
	" tail_s UInt64, host String, domain String, boot String, hs Int64, hs_frac UInt8,"
	" event String, fstack UInt64, n UInt64, version UInt64)"
	" ENGINE = MergeTree ORDER BY (tail_s, host, domain, boot, event, fstack)",
	"CREATE TABLE IF NOT EXISTS event_totals ("
	" host String, domain String, boot String, event String, fstack UInt64, n UInt64,"
	" version UInt64)"
	" ENGINE = MergeTree ORDER BY (host, domain, boot, event, fstack)",
	/* fstack: cityHash64(folded), 64 bits across the fleet: 10 million distinct
	 * stacks collide with a probability of about n^2 / 2^65 = 3e-6 */
	"CREATE TABLE IF NOT EXISTS stack_names (fstack UInt64, folded String)"
	" ENGINE = ReplacingMergeTree ORDER BY fstack",
};

void ha_ch_sql_str(GString *q, const char *s)
{
	g_string_append_c(q, '\'');
	for (; *s; s++) {
		if (*s == '\'' || *s == '\\')
			g_string_append_c(q, '\\');
		g_string_append_c(q, *s);
	}
	g_string_append_c(q, '\'');
}

/* The fields of one TabSeparated line (an empty line: one empty field), unescaped in
 * place (g_strfreev). */
static gchar **tsv_fields(char *line)
{
	gchar **f = g_strsplit(line, "\t", -1);

	if (!*line) {
		g_strfreev(f);
		f = g_new0(gchar *, 2);
		f[0] = g_strdup("");
	}
	for (gchar **p = f; *p; p++) {
		char *r = *p, *w = *p;

		for (; *r; r++) {
			if (*r == '\\' && r[1]) {
				/* ClickHouse's escapes; \0 cannot be in a C string */
				static const char from[] = "tnrbf", to[] = "\t\n\r\b\f";
				const char *k = strchr(from, *++r);

				*w++ = k ? to[k - from] : *r;
			} else {
				*w++ = *r;
			}
		}
		*w = '\0';
	}
	return f;
}

void ha_ch_sql_boot(GString *q, const char *host, const char *domain, const char *boot)
{
	g_string_append(q, "host = ");
	ha_ch_sql_str(q, host);
	g_string_append(q, " AND domain = ");
	ha_ch_sql_str(q, domain);
	g_string_append(q, " AND boot = ");
	ha_ch_sql_str(q, boot);
}

GPtrArray *ha_ch_query_rows(HaCh *c, const char *sql, guint ncols, GError **error)
{
	g_autofree char *q = g_strconcat(sql, " FORMAT TabSeparated", NULL);
	g_autoptr(GString) a = g_string_new(NULL);
	g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	char *line, *next;

	if (!ha_ch_query(c, q, NULL, 0, a, error))
		return NULL;
	/* one line per row, each ended by '\n' (an empty line: one empty field) */
	for (line = a->str; *line; line = next) {
		char *nl = strchr(line, '\n');
		gchar **f;

		if (!nl) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "ClickHouse: an answer's last line has no end");
			return NULL;
		}
		*nl = '\0';
		next = nl + 1;
		f = tsv_fields(line);
		if (g_strv_length(f) != ncols) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "ClickHouse: a row of %u fields, %u expected", g_strv_length(f),
				    ncols);
			g_strfreev(f);
			return NULL;
		}
		g_ptr_array_add(rows, f);
	}
	return g_steal_pointer(&rows);
}

bool ha_ch_query_u64(HaCh *c, const char *sql, uint64_t *ret, GError **error)
{
	g_autoptr(GPtrArray) rows = ha_ch_query_rows(c, sql, 1, error);

	if (!rows)
		return false;
	*ret = rows->len ? g_ascii_strtoull(((gchar **)rows->pdata[0])[0], NULL, 10) : 0;
	return true;
}

bool ha_ch_schema(HaCh *c, GError **error)
{
	if (c->schema_ok)
		return true;
	g_autoptr(GPtrArray) have = NULL;

	for (gsize i = 0; i < G_N_ELEMENTS(schema); i++)
		if (!ha_ch_query(c, schema[i], NULL, 0, NULL, error))
			return false;
	/*
	 * events.recovered (1: replayed from a crashed guest's memory, report events'
	 * "recovered") came later: an older host-agent's table gets it last, where a new
	 * one's has it. Debian's ClickHouse (18.16) has no ADD COLUMN IF NOT EXISTS.
	 */
	have = ha_ch_query_rows(c, "SELECT count() FROM system.columns WHERE database ="
				" currentDatabase() AND table = 'events' AND name = 'recovered'",
				1, error);
	if (!have)
		return false;
	if (have->len == 1 && !strcmp(((gchar **)have->pdata[0])[0], "0") &&
	    !ha_ch_query(c, "ALTER TABLE events ADD COLUMN recovered UInt8", NULL, 0, NULL,
			 error))
		return false;
	c->schema_ok = true;
	return true;
}
