/* SPDX-License-Identifier: MIT */
/*
 * cmdlines.h - the tracing instance's saved_cmdlines, as the host last got them.
 *
 * The kernel keeps a small table of the comms of traced tasks (saved_cmdlines, "PID
 * COMM" lines); trace-cmd writes it into its files so that readers name the events'
 * tasks. The agent sends it as CMDLINES text (PROTOCOL.md 4.3): the whole table at the
 * start of a stream and after a gap, and then only what changed. A struct cmdlines
 * holds the table as last sent, sorted by pid; cmdlines_diff() turns a new read of the
 * file into the lines to send and makes it the table last sent.
 *
 * Pure: no I/O. Lines that do not parse ("<...>" placeholders included) are left out.
 */
#ifndef SMG_CMDLINES_H
#define SMG_CMDLINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CMDLINES_COMM_MAX	15u		/* TASK_COMM_LEN - 1 */
#define CMDLINES_MAX_ENTRIES	65536u		/* more lines than this: the rest dropped */

struct cmdline_ent {
	int32_t pid;
	char comm[CMDLINES_COMM_MAX + 1];
};

struct cmdlines {
	struct cmdline_ent *ents;	/* sorted by pid, distinct pids */
	size_t nr;
};

/*
 * Parse @text (@len bytes of saved_cmdlines) and put in *@ret (malloc'ed, the caller
 * frees it) the lines to send: every line when @full, else those whose pid is new or
 * whose comm changed since the table @last holds; *@ret_len is 0 when there are none.
 * @last then holds the new table. 0 or -ENOMEM (@last unchanged).
 */
int cmdlines_diff(struct cmdlines *last, const char *text, size_t len, bool full,
		  char **ret, size_t *ret_len);

/* Forget the table (a new stream sends it whole). */
void cmdlines_clear(struct cmdlines *c);

#endif /* SMG_CMDLINES_H */
