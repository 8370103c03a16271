/* SPDX-License-Identifier: MIT */
/*
 * cmdlines.h - the tracing instance's saved_cmdlines, as the host last got them.
 *
 * The kernel keeps a table of the comms of traced tasks (saved_cmdlines, "PID COMM"
 * lines, in the order of the table's slots); trace-cmd writes it into its files so
 * that readers name the events' tasks. The agent sends it as CMDLINES text
 * (PROTOCOL.md 4.3): the whole table at the start of a stream and after a gap, and
 * then only what changed. cmdlines_diff() turns a new read of the file into the lines
 * to send and makes it the table last sent.
 *
 * A struct cmdlines holds the table last read twice: as its text, and as an index of
 * its entries by pid (open addressing). The file is read once a rescan (a second by
 * default) and most reads change nothing, or a few slots: a read identical to the last
 * costs one memcmp(); otherwise its lines are compared with the last read's line at
 * the same place (a slot the kernel did not reuse prints the same line at the same
 * place), and only the lines that differ are parsed and looked up in the index. No
 * sort but for a whole table (sent by pid). A line that moved to another place (slots
 * emptied, which the kernel does only when the table is resized) is looked up and not
 * sent again; a pid whose line is gone leaves the index.
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
	int32_t pid;		/* 0: a free slot of the index */
	uint32_t mark;		/* the diff that last found it in the file */
	char comm[CMDLINES_COMM_MAX + 1];
};

struct cmdlines {
	char *text;		/* the last read (its first CMDLINES_MAX_ENTRIES lines) */
	size_t len, text_cap;
	struct cmdline_ent *slots;	/* the index: linear probing by pid */
	size_t cap;		/* slots, a power of two (0: none yet) */
	size_t nr;		/* entries, distinct pids */
	uint32_t mark;		/* diffs made */
	int32_t *gone;		/* scratch: pids whose line changed, cmdlines_diff() */
	size_t gone_cap;
};

/*
 * Parse @text (@len bytes of saved_cmdlines) and put in *@ret (malloc'ed, the caller
 * frees it) the lines to send: every line when @full (by pid), else, in the file's
 * order, those whose pid is new or whose comm changed since the table @last holds;
 * *@ret_len is 0 when there are none. @last then holds the new table. 0 or -ENOMEM
 * (then @last is cleared: the next call sends every line as new).
 */
int cmdlines_diff(struct cmdlines *last, const char *text, size_t len, bool full,
		  char **ret, size_t *ret_len);

/* Forget the table (a new stream sends it whole) and free what it holds. */
void cmdlines_clear(struct cmdlines *c);

#endif /* SMG_CMDLINES_H */
