// SPDX-License-Identifier: MIT
/*
 * test-cmdlines.c - saved_cmdlines as CMDLINES texts (cmdlines.c, PROTOCOL.md 4.3): the
 * whole table first, then only new pids and reused ones; lines that do not parse are
 * left out; a full resend after a gap; more lines than the cap. The skips (a read like
 * the last, lines compared at the same place, the index by pid) against a model that
 * looks every line up in the whole last table: the same lines sent, over thousands of
 * reads of a kernel-like slot table (slots reused in turn, comms changed in place, the
 * table compacted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdlines.h"
#include "tap.h"

static char *diff(struct cmdlines *c, const char *text, bool full, int *ret_r)
{
	char *out = NULL;
	size_t n = 0;
	char *s;

	*ret_r = cmdlines_diff(c, text, strlen(text), full, &out, &n);
	if (*ret_r < 0)
		return NULL;
	s = malloc(n + 1);
	memcpy(s, out, n);
	s[n] = '\0';
	free(out);
	return s;
}

/* --- the model: the kernel's slot table and the reference diff --- */

#define SLOTS 48
#define PIDS 400	/* few pids: they come back, and collide in the index */

struct model {
	int32_t pid[SLOTS];		/* 0: an empty slot (not printed) */
	char comm[SLOTS][16];
	unsigned cursor;
};

static unsigned rnd_state = 12345;

static unsigned rnd(unsigned n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) % n;
}

static bool model_has(const struct model *m, int32_t pid)
{
	for (unsigned i = 0; i < SLOTS; i++)
		if (m->pid[i] == pid)
			return true;
	return false;
}

/* One step of the kernel: new pids into the next slots, comms changed in place
 * (exec), now and then the table compacted (its lines move up). */
static void model_step(struct model *m)
{
	unsigned what = rnd(10);

	if (what < 2)
		return;				/* nothing traced: the same read */
	for (unsigned k = rnd(what < 8 ? 4 : 2 * SLOTS); k; k--) {
		int32_t pid;

		do
			pid = (int32_t)(1 + rnd(PIDS));
		while (model_has(m, pid));
		m->cursor = (m->cursor + 1) % SLOTS;
		m->pid[m->cursor] = pid;
		snprintf(m->comm[m->cursor], sizeof(m->comm[0]), "t%u", rnd(4));
	}
	for (unsigned k = rnd(3); k; k--) {
		unsigned i = rnd(SLOTS);

		if (m->pid[i])
			snprintf(m->comm[i], sizeof(m->comm[0]), "x%u", rnd(4));
	}
	if (rnd(20) == 0) {			/* emptied slots, the rest moves up */
		unsigned w = 0;

		for (unsigned i = 0; i < SLOTS; i++) {
			if (rnd(4) == 0)
				continue;
			m->pid[w] = m->pid[i];
			memcpy(m->comm[w], m->comm[i], sizeof(m->comm[0]));
			w++;
		}
		for (; w < SLOTS; w++)
			m->pid[w] = 0;
	}
}

static size_t model_print(const struct model *m, char *buf)
{
	size_t n = 0;

	for (unsigned i = 0; i < SLOTS; i++)
		if (m->pid[i])
			n += (size_t)sprintf(buf + n, "%d %s\n", (int)m->pid[i], m->comm[i]);
	return n;
}

/* The reference: the lines of @now whose pid @last lacks or has with another comm. */
static size_t model_diff(const struct model *last, const struct model *now, char *buf)
{
	size_t n = 0;

	for (unsigned i = 0; i < SLOTS; i++) {
		bool same = false;

		if (!now->pid[i])
			continue;
		for (unsigned j = 0; j < SLOTS && last; j++)
			if (last->pid[j] == now->pid[i])
				same = !strcmp(last->comm[j], now->comm[i]);
		if (!same)
			n += (size_t)sprintf(buf + n, "%d %s\n", (int)now->pid[i],
					     now->comm[i]);
	}
	return n;
}

static void model_run(void)
{
	struct model m = { 0 }, prev;
	struct cmdlines c = { 0 };
	char text[SLOTS * 24], want[SLOTS * 24];
	unsigned bad = 0, sent = 0, reads = 5000;

	for (unsigned i = 0; i < reads; i++) {
		size_t len, wlen, olen = 0;
		char *out = NULL;
		int r;

		prev = m;
		model_step(&m);
		len = model_print(&m, text);
		wlen = model_diff(i ? &prev : NULL, &m, want);
		r = cmdlines_diff(&c, text, len, false, &out, &olen);
		if (r != 0 || olen != wlen || memcmp(out, want, wlen)) {
			if (bad++ < 3)
				printf("# read %u: got \"%.*s\", want \"%.*s\"\n", i,
				       (int)olen, out ? out : "", (int)wlen, want);
		}
		sent += olen != 0;
		free(out);
	}
	ok(bad == 0, "%u reads of a slot table against the model: the same lines sent "
	   "(%u reads sent some)", reads, sent);
	{
		size_t live = 0;

		for (unsigned i = 0; i < SLOTS; i++)
			live += m.pid[i] != 0;
		is_int(c.nr, live, "the index holds the last read's pids, no more");
	}
	cmdlines_clear(&c);
}

int main(void)
{
	struct cmdlines c = { 0 };
	char *s;
	int r;

	/* the kernel's layout, in its (hash slot) order: sent by pid */
	s = diff(&c, "42 bash\n7 kworker/0:1\n1 init\n", true, &r);
	ok(r == 0 && !strcmp(s, "1 init\n7 kworker/0:1\n42 bash\n"), "first: whole table, by pid");
	free(s);
	s = diff(&c, "42 bash\n7 kworker/0:1\n1 init\n", false, &r);
	ok(r == 0 && !strcmp(s, ""), "unchanged: nothing");
	free(s);
	s = diff(&c, "42 make\n7 kworker/0:1\n1 init\n300 cc1\n", false, &r);
	ok(r == 0 && !strcmp(s, "42 make\n300 cc1\n"), "a reused pid and a new one: those two");
	free(s);
	/* a pid that left the table is not sent again (the host keeps it) */
	s = diff(&c, "300 cc1\n", false, &r);
	ok(r == 0 && !strcmp(s, ""), "pids gone from the table: nothing");
	free(s);
	s = diff(&c, "1 init\n", false, &r);
	ok(r == 0 && !strcmp(s, "1 init\n"), "a pid back after leaving: sent");
	free(s);
	s = diff(&c, "1 init\n", true, &r);
	ok(r == 0 && !strcmp(s, "1 init\n"), "full (after a gap): whole table again");
	free(s);
	/* malformed: no space, no comm, a placeholder, too long, pid 0, huge, no newline */
	s = diff(&c, "5\n6 \n8 <...>\n9 0123456789abcdef\n0 zero\n99999999 big\n"
		 "-3 neg\n10 ok with space\n11 last", true, &r);
	ok(r == 0 && !strcmp(s, "10 ok with space\n11 last\n"),
	   "malformed lines left out, the last without a newline kept");
	free(s);
	s = diff(&c, "9 0123456789abcde\n", true, &r);
	ok(r == 0 && !strcmp(s, "9 0123456789abcde\n"), "a comm of 15 bytes is kept");
	free(s);
	/* more lines than the cap: the first CMDLINES_MAX_ENTRIES */
	{
		size_t n = CMDLINES_MAX_ENTRIES + 10, len = 0;
		char *big = malloc(n * 16), *out = NULL;
		size_t olen = 0;

		for (size_t i = 0; i < n; i++)
			len += (size_t)sprintf(big + len, "%zu t\n", i + 1);
		r = cmdlines_diff(&c, big, len, true, &out, &olen);
		ok(r == 0 && c.nr == CMDLINES_MAX_ENTRIES, "capped at %u entries (%zu)",
		   CMDLINES_MAX_ENTRIES, c.nr);
		free(out);
		free(big);
	}
	cmdlines_clear(&c);
	s = diff(&c, "3 x\n", false, &r);
	ok(r == 0 && !strcmp(s, "3 x\n") && c.nr == 1, "after clear: sent as new");
	free(s);
	cmdlines_clear(&c);

	/* the skips: a slot reused among unchanged ones, lines moved, comms changed */
	s = diff(&c, "1 init\n2 a\n3 b\n4 c\n5 d\n", true, &r);
	free(s);
	s = diff(&c, "1 init\n2 a\n9 new\n4 c\n5 d\n", false, &r);
	ok(r == 0 && !strcmp(s, "9 new\n") && c.nr == 5, "a slot reused in place: its line");
	free(s);
	s = diff(&c, "1 init\n9 new\n4 c\n5 d\n", false, &r);
	ok(r == 0 && !strcmp(s, "") && c.nr == 4,
	   "a slot emptied, the lines after it moved up: nothing, pid 2 gone");
	free(s);
	s = diff(&c, "1 init\n9 new\n4 c\n5 d\n2 a\n", false, &r);
	ok(r == 0 && !strcmp(s, "2 a\n"), "the pid gone is new again");
	free(s);
	s = diff(&c, "1 init\n9 new\n4 sh\n5 d\n2 a\n", false, &r);
	ok(r == 0 && !strcmp(s, "4 sh\n") && c.nr == 5, "a comm changed in place (exec)");
	free(s);
	s = diff(&c, "4 sh\n1 init\n9 new\n5 d\n2 a\n", false, &r);
	ok(r == 0 && !strcmp(s, ""), "the same lines in another order: nothing");
	free(s);
	s = diff(&c, "4 sh\n1 init\n9 new\n5 d\n2 a", false, &r);
	ok(r == 0 && !strcmp(s, ""), "the last newline gone: nothing");
	free(s);
	s = diff(&c, "4 sh\n1 init\n9 new\n5 d\n2 a\n", false, &r);
	ok(r == 0 && !strcmp(s, ""), "and back: nothing");
	free(s);
	cmdlines_clear(&c);
	model_run();
	return tap_done();
}
