/* SPDX-License-Identifier: MIT */
/*
 * pair.h - attach each traced event to the stack event ftrace recorded for it.
 *
 * The rule, from linux-6.1 kernel/trace/trace.c: trace_buffer_unlock_commit_regs()
 * (and trace_function(), __trace_puts() ...) first commits the event, then calls
 * ftrace_trace_stack() with the *same* trace_ctx, which reserves the stack event
 * (TRACE_STACK, or TRACE_STACK_ID with the stackmap patches) on the same CPU. So the
 * stack event carries the event's common_flags, common_preempt_count and common_pid,
 * and follows it on the same CPU's ring buffer. The two are separate reservations, so
 * their timestamps usually differ, and an interrupt (or NMI) between the commit and
 * the stack reservation can put its own events - with or without their stacks - in
 * between; being nested, those complete before the interrupted context resumes.
 *
 * Hence, per CPU, a small stack of events still waiting for their stack: a new
 * non-stack event is pushed; a stack event takes the most recent waiting event with
 * the same pid, flags and preempt count, and every event above that one (nested,
 * without a stack) is finished without a stack. A stack event that matches nothing
 * (its event was on an earlier page that was lost) is counted as an orphan.
 *
 * Only an event of a deeper context can come between an event and its stack: the
 * tracepoint runs with preemption off (no other task), and an interrupt that comes in
 * between completes before the event's context resumes. The context is in the flags
 * (tracing_gen_ctx_irq_test(): NMI above HARDIRQ above SOFTIRQ above task). So when a
 * new event arrives, every waiting event of its context or a deeper one cannot get a
 * stack any more (it was traced without one: before options/stacktrace was set, a
 * trace_marker write, a user stack event) and is finished stackless at once; the
 * waiting events are then of strictly nested contexts, at most one per context. Before
 * this rule such an event stayed waiting under every later event that paired at once,
 * for as long as the CPU had no interrupt between an event and its stack.
 * The waiting stack holds at most HA_PAIR_DEPTH events (a stored state of an older
 * host may hold more than one per context); older ones are finished stackless.
 *
 * Loss: when events were lost before a page (the ring buffer overwrote them, flagged
 * RB_MISSED_EVENTS; or the agent dropped PAGE frames), a waiting event's stack event
 * may have been among them, and the next stack event on the CPU may belong to a lost
 * event of the same task: it must not be given to the waiting one. ha_pair_lost()
 * finishes the waiting events as HA_STACK_LOST first.
 */
#ifndef HA_PAIR_H
#define HA_PAIR_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "tep.h"

#define HA_PAIR_DEPTH 8

typedef enum {
	HA_STACK_NONE = 0,
	HA_STACK_ID,		/* stack_id into the map */
	HA_STACK_FULL,		/* full stack inline (ips) */
	HA_STACK_LOST,		/* its stack event may have been lost with other events */
} HaStackKind;

typedef struct {
	uint32_t cpu;
	uint64_t ts;
	int type;
	int pid;
	HaStackKind stack;
	uint32_t stack_id;
	uint32_t nr_ips;
	const uint64_t *ips;	/* valid during the callback only */
	char *text;		/* the caller's per-event text (see ha_pair_feed), or NULL */
} HaPaired;

/* Called once per finished event. @p->text is freed by the pairer after the call. */
typedef void (*HaPairFn)(const HaPaired *p, void *user);

typedef struct _HaPair HaPair;

/* Free with ha_pair_free(); @fn is called from ha_pair_feed() and ha_pair_flush(). */
HaPair *ha_pair_new(HaPairFn fn, void *user);
void ha_pair_free(HaPair *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaPair, ha_pair_free)

/* Feed one event of @cpu, in ring-buffer order. @text (may be NULL) is taken over. */
void ha_pair_feed(HaPair *p, uint32_t cpu, const HaEvent *ev, char *text);
/* Finish every waiting event without a stack. */
void ha_pair_flush(HaPair *p);
/* Events of @cpu were lost before the next one fed: finish its waiting ones as
 * HA_STACK_LOST. ha_pair_lost_all(): every CPU (frames lost). */
void ha_pair_lost(HaPair *p, uint32_t cpu);
void ha_pair_lost_all(HaPair *p);
uint64_t ha_pair_orphans(const HaPair *p);

/* Call @fn for each event still waiting for its stack event, per CPU oldest first.
 * After a crash these are the events whose stack never reached the host: every
 * report counts them (as "stack not received"), so that all reports agree. */
void ha_pair_foreach_waiting(const HaPair *p, void (*fn)(uint32_t cpu, uint64_t ts,
							  int pid, void *user), void *user);

/* The waiting events (texts dropped), as a new GBytes (g_bytes_unref), so that a
 * restarted host pairs a stack on the next page with its event on a stored one. */
GBytes *ha_pair_save(const HaPair *p);
/* Restore a ha_pair_save() blob; a malformed blob is ignored (returns false). */
bool ha_pair_load(HaPair *p, const void *data, size_t len);

#endif /* HA_PAIR_H */
