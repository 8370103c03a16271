// SPDX-License-Identifier: MIT
/*
 * test-cmdlines.c - saved_cmdlines as CMDLINES texts (cmdlines.c, PROTOCOL.md 4.3): the
 * whole table first, then only new pids and reused ones; lines that do not parse are
 * left out; a full resend after a gap; more lines than the cap.
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
	return tap_done();
}
