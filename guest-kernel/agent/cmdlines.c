// SPDX-License-Identifier: MIT
/*
 * cmdlines.c - saved_cmdlines as last sent, and what changed since (see cmdlines.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmdlines.h"

#define INDEX_MIN 256u

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
	memset(e->comm, 0, sizeof(e->comm));
	memcpy(e->comm, l + i, n - i);
	return true;
}

/* "PID COMM\n" at @out: its length (at most 8 + CMDLINES_COMM_MAX + 1). */
static size_t put_line(char *out, const struct cmdline_ent *e)
{
	char digits[8];
	size_t n = 0, k = strlen(e->comm);
	uint32_t v = (uint32_t)e->pid;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = digits[n - 1 - i];
	out[n] = ' ';
	memcpy(out + n + 1, e->comm, k);
	out[n + 1 + k] = '\n';
	return n + k + 2;
}

/* The next line of @text (@len bytes) at *@off: its start and length; false at the end. */
static bool next_line(const char *text, size_t len, size_t *off, const char **l, size_t *n)
{
	const char *nl;

	if (*off >= len)
		return false;
	*l = text + *off;
	nl = memchr(*l, '\n', len - *off);
	*n = nl ? (size_t)(nl - *l) : len - *off;
	*off += *n + 1;
	return true;
}

/* --- the index: linear probing on the pid, deletion by backward shift --- */

/* Fibonacci hashing: the product's high bits (cap is at least 2^8, at most 2^18) */
static size_t slot_of(const struct cmdlines *c, int32_t pid)
{
	unsigned bits = (unsigned)__builtin_ctzl(c->cap);

	return (size_t)(((uint32_t)pid * 2654435761u) >> (32 - bits));
}

static struct cmdline_ent *index_find(const struct cmdlines *c, int32_t pid)
{
	if (!c->cap)
		return NULL;
	for (size_t i = slot_of(c, pid);; i = (i + 1) & (c->cap - 1)) {
		if (c->slots[i].pid == pid)
			return &c->slots[i];
		if (c->slots[i].pid == 0)
			return NULL;
	}
}

static int index_grow(struct cmdlines *c)
{
	struct cmdline_ent *old = c->slots;
	size_t old_cap = c->cap, cap = c->cap ? c->cap * 2 : INDEX_MIN;

	c->slots = calloc(cap, sizeof(*c->slots));
	if (!c->slots) {
		c->slots = old;
		return -ENOMEM;
	}
	c->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].pid)
			continue;
		for (j = slot_of(c, old[i].pid); c->slots[j].pid; j = (j + 1) & (cap - 1))
			;
		c->slots[j] = old[i];
	}
	free(old);
	return 0;
}

/* Put @e (its pid's entry replaced), marked as found in this diff. */
static int index_put(struct cmdlines *c, const struct cmdline_ent *e)
{
	struct cmdline_ent *s = index_find(c, e->pid);
	size_t i;

	if (!s) {
		if ((c->nr + 1) * 2 > c->cap && index_grow(c) < 0)
			return -ENOMEM;
		for (i = slot_of(c, e->pid); c->slots[i].pid; i = (i + 1) & (c->cap - 1))
			;
		s = &c->slots[i];
		c->nr++;
	}
	*s = *e;
	s->mark = c->mark;
	return 0;
}

static void index_del(struct cmdlines *c, struct cmdline_ent *s)
{
	size_t i = (size_t)(s - c->slots), mask = c->cap - 1;

	/* pull back every later entry of the run that may sit at or before the hole */
	for (size_t j = (i + 1) & mask; c->slots[j].pid; j = (j + 1) & mask) {
		size_t home = slot_of(c, c->slots[j].pid);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			c->slots[i] = c->slots[j];
			i = j;
		}
	}
	memset(&c->slots[i], 0, sizeof(c->slots[i]));
	c->nr--;
}

static int push_gone(struct cmdlines *c, size_t *nr, int32_t pid)
{
	if (*nr == c->gone_cap) {
		size_t cap = c->gone_cap ? c->gone_cap * 2 : 64;
		int32_t *g = realloc(c->gone, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		c->gone = g;
		c->gone_cap = cap;
	}
	c->gone[(*nr)++] = pid;
	return 0;
}

static int keep_text(struct cmdlines *c, const char *text, size_t len)
{
	if (len + 1 > c->text_cap) {
		char *t = realloc(c->text, len + 1);

		if (!t)
			return -ENOMEM;
		c->text = t;
		c->text_cap = len + 1;
	}
	memcpy(c->text, text, len);
	c->text[len] = '\0';
	c->len = len;
	return 0;
}

/* The length of the first CMDLINES_MAX_ENTRIES lines of @text. */
static size_t capped_len(const char *text, size_t len)
{
	size_t off = 0, n, lines = 0;
	const char *l;

	while (lines < CMDLINES_MAX_ENTRIES && next_line(text, len, &off, &l, &n))
		lines++;
	return off < len ? off : len;
}

/* Every line of @text: the index rebuilt from it, every entry into @out, by pid. */
static int diff_full(struct cmdlines *c, const char *text, size_t len, char *out,
		     size_t *out_len)
{
	struct cmdline_ent *ents;
	size_t off = 0, n, nr = 0;
	const char *l;

	if (c->cap)
		memset(c->slots, 0, c->cap * sizeof(*c->slots));
	c->nr = 0;
	while (next_line(text, len, &off, &l, &n)) {
		struct cmdline_ent e;

		if (parse_line(l, n, &e) && index_put(c, &e) < 0)
			return -ENOMEM;
	}
	ents = malloc((c->nr ? c->nr : 1) * sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].pid)
			ents[nr++] = c->slots[i];
	qsort(ents, nr, sizeof(*ents), ent_cmp);
	for (size_t i = 0; i < nr; i++)
		*out_len += put_line(out + *out_len, &ents[i]);
	free(ents);
	return 0;
}

/*
 * @text against the last read, line by line at the same place: a line that differs
 * (or is new) is looked up and goes to @out when its pid is new or its comm changed;
 * the pid of a last-read line that differs (or is gone) leaves the index unless a
 * line of @text has it.
 */
static int diff_lines(struct cmdlines *c, const char *text, size_t len, char *out,
		      size_t *out_len)
{
	size_t off = 0, old_off = 0, n, on, nr_gone = 0;
	const char *l, *ol;

	for (;;) {
		bool have = next_line(text, len, &off, &l, &n);
		bool old = next_line(c->text, c->len, &old_off, &ol, &on);
		struct cmdline_ent e, *s;

		if (!have && !old)
			break;
		if (have && old && n == on && !memcmp(l, ol, n))
			continue;
		if (old && parse_line(ol, on, &e) && push_gone(c, &nr_gone, e.pid) < 0)
			return -ENOMEM;
		if (!have || !parse_line(l, n, &e))
			continue;
		s = index_find(c, e.pid);
		if (s && !strcmp(s->comm, e.comm)) {
			s->mark = c->mark;	/* moved to another place: still there */
			continue;
		}
		if (index_put(c, &e) < 0)
			return -ENOMEM;
		*out_len += put_line(out + *out_len, &e);
	}
	for (size_t i = 0; i < nr_gone; i++) {
		struct cmdline_ent *s = index_find(c, c->gone[i]);

		if (s && s->mark != c->mark)
			index_del(c, s);
	}
	return 0;
}

int cmdlines_diff(struct cmdlines *last, const char *text, size_t len, bool full,
		  char **ret, size_t *ret_len)
{
	size_t out_len = 0;
	char *out;
	int r;

	if (len > CMDLINES_MAX_ENTRIES)		/* else it cannot have more lines */
		len = capped_len(text, len);
	/* a line at most one byte longer as sent: the last one's newline */
	out = malloc(len + 2);
	if (!out)
		return -ENOMEM;
	if (!full && last->text && len == last->len && !memcmp(text, last->text, len)) {
		*ret = out;
		*ret_len = 0;
		return 0;
	}
	/* a mark per diff, never 0 (an entry put with mark 0 would look unfound) */
	if (++last->mark == 0)
		last->mark = 1;
	r = full ? diff_full(last, text, len, out, &out_len) :
		   diff_lines(last, text, len, out, &out_len);
	if (r == 0)
		r = keep_text(last, text, len);
	if (r < 0) {
		cmdlines_clear(last);
		free(out);
		return r;
	}
	*ret = out;
	*ret_len = out_len;
	return 0;
}

void cmdlines_clear(struct cmdlines *c)
{
	free(c->text);
	free(c->slots);
	free(c->gone);
	memset(c, 0, sizeof(*c));
}
