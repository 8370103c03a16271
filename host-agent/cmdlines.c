// SPDX-License-Identifier: MIT
/*
 * cmdlines.c - a boot's pid -> comm table from its CMDLINES texts (see cmdlines.h).
 */
#include "cmdlines.h"

#include <stdlib.h>
#include <string.h>

struct _HaCmdlines {
	GHashTable *comm;	/* GUINT_TO_POINTER(pid) -> g_strdup'ed comm */
	uint64_t refused;
};

HaCmdlines *ha_cmdlines_new(void)
{
	HaCmdlines *c = g_new0(HaCmdlines, 1);

	c->comm = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	return c;
}

void ha_cmdlines_free(HaCmdlines *c)
{
	if (!c)
		return;
	g_hash_table_unref(c->comm);
	g_free(c);
}

/* One line (@n bytes, no newline): true when taken. */
static bool add_line(HaCmdlines *c, const char *l, size_t n)
{
	char comm[HA_CMDLINES_COMM_MAX + 1];
	uint32_t pid = 0;
	size_t i = 0, k;

	while (i < n && i < 8 && l[i] >= '0' && l[i] <= '9')
		pid = pid * 10 + (uint32_t)(l[i++] - '0');
	if (i == 0 || i >= n || l[i] != ' ' || pid == 0 || pid > HA_CMDLINES_PID_MAX)
		return false;
	l += i + 1;
	n -= i + 1;
	if (n == 0 || n > HA_CMDLINES_COMM_MAX || memchr(l, '\0', n))
		return false;
	for (k = 0; k < n; k++)
		comm[k] = l[k] >= 0x20 && l[k] <= 0x7e ? l[k] : '?';
	comm[k] = '\0';
	if (g_hash_table_size(c->comm) >= HA_CMDLINES_MAX &&
	    !g_hash_table_contains(c->comm, GUINT_TO_POINTER(pid)))
		return false;
	g_hash_table_insert(c->comm, GUINT_TO_POINTER(pid), g_strdup(comm));
	return true;
}

void ha_cmdlines_add(HaCmdlines *c, const void *text, size_t len)
{
	const char *t = text;

	for (size_t off = 0; off < len;) {
		const char *nl = memchr(t + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (t + off)) : len - off;

		if (!add_line(c, t + off, n))
			c->refused++;
		off += n + 1;
	}
}

guint ha_cmdlines_size(const HaCmdlines *c)
{
	return g_hash_table_size(c->comm);
}

uint64_t ha_cmdlines_refused(const HaCmdlines *c)
{
	return c->refused;
}

const char *ha_cmdlines_lookup(const HaCmdlines *c, uint32_t pid)
{
	return g_hash_table_lookup(c->comm, GUINT_TO_POINTER(pid));
}

static int pid_cmp(const void *a, const void *b)
{
	guint x = GPOINTER_TO_UINT(*(const gpointer *)a);
	guint y = GPOINTER_TO_UINT(*(const gpointer *)b);

	return (x > y) - (x < y);
}

GBytes *ha_cmdlines_text(const HaCmdlines *c)
{
	guint n;
	g_autofree gpointer *pids = g_hash_table_get_keys_as_array(c->comm, &n);
	GString *s = g_string_sized_new(n * 16u);

	qsort(pids, n, sizeof(*pids), pid_cmp);
	for (guint i = 0; i < n; i++)
		g_string_append_printf(s, "%u %s\n", GPOINTER_TO_UINT(pids[i]),
				       (const char *)g_hash_table_lookup(c->comm, pids[i]));
	return g_string_free_to_bytes(s);
}
