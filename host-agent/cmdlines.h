/* SPDX-License-Identifier: MIT */
/*
 * cmdlines.h - a boot's task names: the guest's saved_cmdlines as CMDLINES frames
 * brought them (PROTOCOL.md 4.3), merged into one pid -> comm table.
 *
 * The texts are guest bytes: a line is taken only when it is a decimal pid in
 * 1..HA_CMDLINES_PID_MAX, one space and a comm of 1..HA_CMDLINES_COMM_MAX bytes
 * without NUL; bytes outside printable ASCII in a comm become '?', so that a reader
 * printing it to a terminal prints nothing else. Lines are added in the order the
 * guest sent them, a later line for a pid replacing the earlier one; beyond
 * HA_CMDLINES_MAX pids, new pids are dropped (and counted). Memory is bounded by
 * that: at most HA_CMDLINES_MAX entries of 16 bytes and a pid.
 *
 * Life cycle: ha_cmdlines_new(), ha_cmdlines_add() per text, ha_cmdlines_text() for
 * the table as trace-cmd's saved cmdlines, ha_cmdlines_free().
 */
#ifndef HA_CMDLINES_H
#define HA_CMDLINES_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_CMDLINES_PID_MAX	4194304u	/* PID_MAX_LIMIT on 64-bit */
#define HA_CMDLINES_COMM_MAX	15u		/* TASK_COMM_LEN - 1 */
#define HA_CMDLINES_MAX		65536u

typedef struct _HaCmdlines HaCmdlines;

HaCmdlines *ha_cmdlines_new(void);
void ha_cmdlines_free(HaCmdlines *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaCmdlines, ha_cmdlines_free)

/* Add the lines of one CMDLINES text (@len guest bytes, not NUL-terminated). */
void ha_cmdlines_add(HaCmdlines *c, const void *text, size_t len);

/* Pids in the table; lines refused so far (unparsable, out of range, beyond the cap). */
guint ha_cmdlines_size(const HaCmdlines *c);
uint64_t ha_cmdlines_refused(const HaCmdlines *c);

/* The comm of @pid, or NULL; owned by @c. */
const char *ha_cmdlines_lookup(const HaCmdlines *c, uint32_t pid);

/* The table as "PID COMM\n" lines by pid (saved_cmdlines' own layout), a new GBytes
 * (g_bytes_unref). */
GBytes *ha_cmdlines_text(const HaCmdlines *c);

#endif /* HA_CMDLINES_H */
