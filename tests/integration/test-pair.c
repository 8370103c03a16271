// SPDX-License-Identifier: MIT
/*
 * Unit tests of the pairer's context rule (pair.h): an event waiting for its stack is
 * finished stackless as soon as an event of its own context or a shallower one comes
 * on its CPU, since only a nested context can come between an event and its stack;
 * events of nested contexts wait together and get their stacks innermost first; a
 * stored state of an older host (several waiting events of one context) is put right
 * by the next event. Issue 19: 7 events of a real guest's first page, traced before
 * options/stacktrace was set, stayed waiting under every later event that paired at
 * once, hundreds of pages long.
 */
#include <inttypes.h>
#include <string.h>

#include "pair.h"
#include "tap.h"

#define F_SOFTIRQ	0x10
#define F_HARDIRQ	0x08
#define F_NMI		0x40

typedef struct {
	GArray *ts;		/* uint64_t: the finished events, in finish order */
	GArray *kind;		/* int: their HaStackKind */
	GArray *id;		/* uint32_t: their stack_id */
} Fin;

static void on_pair(const HaPaired *p, void *user)
{
	Fin *f = user;
	int k = p->stack;

	g_array_append_val(f->ts, p->ts);
	g_array_append_val(f->kind, k);
	g_array_append_val(f->id, p->stack_id);
}

static void fin_reset(Fin *f)
{
	g_array_set_size(f->ts, 0);
	g_array_set_size(f->kind, 0);
	g_array_set_size(f->id, 0);
}

static void count_waiting(uint32_t cpu, uint64_t ts, int pid, void *user)
{
	(void)cpu;
	(void)ts;
	(void)pid;
	(*(unsigned int *)user)++;
}

static unsigned int waiting(const HaPair *p)
{
	unsigned int n = 0;

	ha_pair_foreach_waiting(p, count_waiting, &n);
	return n;
}

static void feed(HaPair *p, HaEvKind k, uint64_t ts, int pid, uint8_t flags, uint32_t id)
{
	HaEvent ev = { .kind = k, .ts = ts, .pid = pid, .flags = flags, .stack_id = id };

	ha_pair_feed(p, 0, &ev, NULL);
}

#define TS(f, i)	g_array_index((f)->ts, uint64_t, i)
#define KIND(f, i)	g_array_index((f)->kind, int, i)
#define ID(f, i)	g_array_index((f)->id, uint32_t, i)

int main(void)
{
	Fin f = { g_array_new(FALSE, FALSE, sizeof(uint64_t)),
		  g_array_new(FALSE, FALSE, sizeof(int)),
		  g_array_new(FALSE, FALSE, sizeof(uint32_t)) };
	g_autoptr(HaPair) p = ha_pair_new(on_pair, &f);
	g_autoptr(HaPair) q = NULL;
	bool ok = true;

	/* 7 events without stacks (a shell enabling events, kernel threads), then 100
	 * events of the workload each followed by its stack */
	for (int i = 0; i < 7; i++)
		feed(p, HA_EV_OTHER, (uint64_t)(10 + i), 100 + i, 0, 0);
	CHECK(waiting(p) == 1 && f.ts->len == 6, "each stackless event is finished by the"
	      " next of its context: %u waiting, %u finished", waiting(p), f.ts->len);
	for (int i = 0; i < 100; i++) {
		feed(p, HA_EV_OTHER, (uint64_t)(100 + 2 * i), 500, 0, 0);
		feed(p, HA_EV_STACK_ID, (uint64_t)(101 + 2 * i), 500, 0, (uint32_t)i + 1);
	}
	CHECK(waiting(p) == 0, "nothing waits after 100 paired events (%u)", waiting(p));
	for (guint i = 0; i < f.ts->len; i++)
		ok = ok && (i < 7 ? TS(&f, i) == 10 + i && KIND(&f, i) == HA_STACK_NONE :
			    TS(&f, i) == 100 + 2 * (i - 7) && KIND(&f, i) == HA_STACK_ID &&
			    ID(&f, i) == i - 6);
	CHECK(ok && f.ts->len == 107, "the 7 finished without a stack, in order, before the"
	      " first paired event; each of the 100 with its own stack");
	CHECK(ha_pair_orphans(p) == 0, "no stack event left without its event");

	/* task, softirq, hardirq, NMI: each interrupts the one before between its commit
	 * and its stack; the stacks come innermost first */
	fin_reset(&f);
	feed(p, HA_EV_OTHER, 1000, 7, 0, 0);
	feed(p, HA_EV_OTHER, 1001, 7, F_SOFTIRQ, 0);
	feed(p, HA_EV_OTHER, 1002, 7, F_SOFTIRQ | F_HARDIRQ, 0);
	feed(p, HA_EV_OTHER, 1003, 7, F_SOFTIRQ | F_HARDIRQ | F_NMI, 0);
	CHECK(waiting(p) == 4 && f.ts->len == 0, "nested contexts wait together (%u)",
	      waiting(p));
	feed(p, HA_EV_STACK_ID, 1004, 7, F_SOFTIRQ | F_HARDIRQ | F_NMI, 44);
	feed(p, HA_EV_STACK_ID, 1005, 7, F_SOFTIRQ | F_HARDIRQ, 33);
	feed(p, HA_EV_STACK_ID, 1006, 7, F_SOFTIRQ, 22);
	feed(p, HA_EV_STACK_ID, 1007, 7, 0, 11);
	CHECK(f.ts->len == 4 && TS(&f, 0) == 1003 && ID(&f, 0) == 44 && TS(&f, 1) == 1002 &&
	      ID(&f, 1) == 33 && TS(&f, 2) == 1001 && ID(&f, 2) == 22 && TS(&f, 3) == 1000 &&
	      ID(&f, 3) == 11 && waiting(p) == 0, "each gets its own stack, innermost first");

	/* a task event waits; an interrupt's event without a stack, then the next
	 * interrupt's event: the first interrupt had ended, the task event still waits */
	fin_reset(&f);
	feed(p, HA_EV_OTHER, 2000, 7, 0, 0);
	feed(p, HA_EV_OTHER, 2001, 7, F_HARDIRQ, 0);
	feed(p, HA_EV_OTHER, 2002, 9, F_HARDIRQ, 0);
	CHECK(f.ts->len == 1 && TS(&f, 0) == 2001 && KIND(&f, 0) == HA_STACK_NONE &&
	      waiting(p) == 2, "the next interrupt's event finishes the last one's");
	feed(p, HA_EV_STACK_ID, 2003, 9, F_HARDIRQ, 5);
	feed(p, HA_EV_STACK_ID, 2004, 7, 0, 6);
	CHECK(f.ts->len == 3 && TS(&f, 1) == 2002 && ID(&f, 1) == 5 && TS(&f, 2) == 2000 &&
	      ID(&f, 2) == 6, "and both waiting ones get their stacks");

	/* a softirq's event waits above a task event that never gets its stack; the next
	 * task event finishes both (the softirq had ended, so had the task event's turn) */
	fin_reset(&f);
	feed(p, HA_EV_OTHER, 3000, 7, 0, 0);
	feed(p, HA_EV_OTHER, 3001, 7, F_SOFTIRQ, 0);
	feed(p, HA_EV_OTHER, 3002, 8, 0, 0);
	CHECK(f.ts->len == 2 && TS(&f, 0) == 3000 && TS(&f, 1) == 3001 &&
	      KIND(&f, 0) == HA_STACK_NONE && KIND(&f, 1) == HA_STACK_NONE && waiting(p) == 1,
	      "a task event finishes every waiting one");
	feed(p, HA_EV_STACK_ID, 3003, 8, 0, 9);
	CHECK(f.ts->len == 3 && ID(&f, 2) == 9 && waiting(p) == 0, "and gets its stack");

	/* the state an older host stored: 8 task events waiting (its HA_PAIR_DEPTH) */
	{
		uint8_t blob[8 + HA_PAIR_DEPTH * 20] = { 0 };
		uint32_t hdr[2] = { 0, HA_PAIR_DEPTH };

		memcpy(blob, hdr, 8);
		for (uint32_t i = 0; i < HA_PAIR_DEPTH; i++) {
			uint64_t ts = 4000 + i;
			int32_t pid = 20 + (int32_t)i;

			memcpy(blob + 8 + 20 * i, &ts, 8);
			memcpy(blob + 8 + 20 * i + 12, &pid, 4);
		}
		fin_reset(&f);
		q = ha_pair_new(on_pair, &f);
		CHECK(ha_pair_load(q, blob, sizeof(blob)) && waiting(q) == HA_PAIR_DEPTH,
		      "an older host's state of %u task events loads", HA_PAIR_DEPTH);
		feed(q, HA_EV_OTHER, 5000, 7, 0, 0);
		feed(q, HA_EV_STACK_ID, 5001, 7, 0, 3);
		ok = f.ts->len == HA_PAIR_DEPTH + 1 && ID(&f, HA_PAIR_DEPTH) == 3;
		for (guint i = 0; ok && i < HA_PAIR_DEPTH; i++)
			ok = TS(&f, i) == 4000 + i && KIND(&f, i) == HA_STACK_NONE;
		CHECK(ok && waiting(q) == 0, "the next task event finishes them all; it pairs");
	}

	/* whatever the flags (a hostile guest), the waiting events stay bounded */
	fin_reset(&f);
	for (int i = 0; i < 1000; i++)
		feed(p, HA_EV_OTHER, (uint64_t)(6000 + i), i, (uint8_t)(i * 37), 0);
	CHECK(waiting(p) <= HA_PAIR_DEPTH && f.ts->len + waiting(p) == 1000,
	      "1000 events of random flags: %u waiting, the others finished", waiting(p));

	g_array_unref(f.ts);
	g_array_unref(f.kind);
	g_array_unref(f.id);
	return tap_done();
}
