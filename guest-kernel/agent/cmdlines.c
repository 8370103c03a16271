// SPDX-License-Identifier: MIT
/*
 * cmdlines.c - saved_cmdlines as last sent, and what changed since (see cmdlines.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdlines.h"

static int ent_cmp(const void *a, const void *b)
{
	const struct cmdline_ent *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* One "PID COMM" line of @n bytes (no newline) into @e: false when it does not parse. */
static bool parse_line(const char *l, size_t n, struct cmdline_ent *e)
{
	size_t i = 0;
	int64_t pid = 0;

	while (i < n && l[i] >= '0' && l[i] <= '9' && i < 8)
		pid = pid * 10 + (l[i++] - '0');
	if (i == 0 || i >= n || l[i] != ' ' || pid <= 0 || pid > 4194304)
		return false;
	i++;
	if (n - i == 0 || n - i > CMDLINES_COMM_MAX || memchr(l + i, '\0', n - i))
		return false;
	if (n - i == 5 && !memcmp(l + i, "<...>", 5))
		return false;
	e->pid = (int32_t)pid;
	memcpy(e->comm, l + i, n - i);
	e->comm[n - i] = '\0';
	return true;
}

static const struct cmdline_ent *find(const struct cmdlines *c, int32_t pid)
{
	struct cmdline_ent key = { .pid = pid };

	return c->nr ? bsearch(&key, c->ents, c->nr, sizeof(key), ent_cmp) : NULL;
}

int cmdlines_diff(struct cmdlines *last, const char *text, size_t len, bool full,
		  char **ret, size_t *ret_len)
{
	struct cmdline_ent *ents;
	size_t nr = 0, cap = 0, out_len = 0;
	char *out;

	/* at most one entry per line: count the lines first */
	for (size_t i = 0; i < len; i++)
		cap += text[i] == '\n';
	cap = (cap + 1 < CMDLINES_MAX_ENTRIES ? cap + 1 : CMDLINES_MAX_ENTRIES);
	ents = calloc(cap, sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	for (size_t off = 0; off < len && nr < cap;) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (text + off)) : len - off;

		if (parse_line(text + off, n, &ents[nr]))
			nr++;
		off += n + 1;
	}
	qsort(ents, nr, sizeof(*ents), ent_cmp);
	/* a pid twice in one read (the kernel prints each once): one of them kept */
	{
		size_t w = 0;

		for (size_t i = 0; i < nr; i++) {
			if (w && ents[w - 1].pid == ents[i].pid)
				w--;
			ents[w++] = ents[i];
		}
		nr = w;
	}
	/* "PID COMM\n": at most 7 digits, a space, the comm, a newline */
	out = malloc(nr * (8 + CMDLINES_COMM_MAX + 1) + 1);
	if (!out) {
		free(ents);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct cmdline_ent *o = full ? NULL : find(last, ents[i].pid);

		if (o && !strcmp(o->comm, ents[i].comm))
			continue;
		out_len += (size_t)sprintf(out + out_len, "%d %s\n", (int)ents[i].pid,
					   ents[i].comm);
	}
	free(last->ents);
	last->ents = ents;
	last->nr = nr;
	*ret = out;
	*ret_len = out_len;
	return 0;
}

void cmdlines_clear(struct cmdlines *c)
{
	free(c->ents);
	c->ents = NULL;
	c->nr = 0;
}
