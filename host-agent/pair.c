// SPDX-License-Identifier: MIT
/* pair.c - events to their stacks; the rule is explained in pair.h. */
#include "pair.h"

#include <string.h>

typedef struct {
	uint64_t ts;
	int type;
	int pid;
	uint8_t flags;
	uint8_t preempt;
	char *text;
} Waiting;

typedef struct {
	Waiting w[HA_PAIR_DEPTH];
	unsigned int n;
} CpuQ;

struct _HaPair {
	HaPairFn fn;
	void *user;
	GHashTable *cpus;	/* cpu -> CpuQ (owned) */
	CpuQ *last;		/* the queue of the CPU last fed (NULL: none yet) ... */
	uint32_t last_cpu;	/* ... and that CPU: a page's events are one CPU's */
	uint64_t orphans;
};

HaPair *ha_pair_new(HaPairFn fn, void *user)
{
	HaPair *p = g_new0(HaPair, 1);

	p->fn = fn;
	p->user = user;
	p->cpus = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	return p;
}

static void finish(HaPair *p, uint32_t cpu, Waiting *w, const HaEvent *st,
		   HaStackKind none)
{
	HaPaired r = {
		.cpu = cpu, .ts = w->ts, .type = w->type, .pid = w->pid, .text = w->text,
		.stack = none,
	};

	if (st && st->kind == HA_EV_STACK_ID) {
		r.stack = HA_STACK_ID;
		r.stack_id = st->stack_id;
	} else if (st && st->kind == HA_EV_KSTACK) {
		r.stack = HA_STACK_FULL;
		r.nr_ips = st->nr_ips;
		r.ips = st->ips;
	}
	p->fn(&r, p->user);
	g_free(w->text);
	w->text = NULL;
}

static void flush_q(HaPair *p, uint32_t cpu, CpuQ *q, HaStackKind why)
{
	for (unsigned int i = 0; i < q->n; i++)
		finish(p, cpu, &q->w[i], NULL, why);
	q->n = 0;
}

/* The context an event was traced in, as its flags tell (pair.h): 0 task, 1 softirq,
 * 2 hardirq, 3 NMI. The bits of linux-6.1 kernel/trace/trace.h's trace_flag_type. */
static int context_of(uint8_t flags)
{
	if (flags & 0x40)	/* TRACE_FLAG_NMI */
		return 3;
	if (flags & 0x08)	/* TRACE_FLAG_HARDIRQ */
		return 2;
	if (flags & 0x10)	/* TRACE_FLAG_SOFTIRQ */
		return 1;
	return 0;
}

void ha_pair_free(HaPair *p)
{
	GHashTableIter it;
	gpointer k, v;

	if (!p)
		return;
	g_hash_table_iter_init(&it, p->cpus);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		CpuQ *q = v;

		for (unsigned int i = 0; i < q->n; i++)
			g_free(q->w[i].text);
	}
	g_hash_table_destroy(p->cpus);
	g_free(p);
}

void ha_pair_feed(HaPair *p, uint32_t cpu, const HaEvent *ev, char *text)
{
	CpuQ *q = p->last && p->last_cpu == cpu ? p->last :
		  g_hash_table_lookup(p->cpus, GUINT_TO_POINTER(cpu));

	if (!q) {
		q = g_new0(CpuQ, 1);
		g_hash_table_insert(p->cpus, GUINT_TO_POINTER(cpu), q);
	}
	p->last = q;	/* queues live as long as the pairer */
	p->last_cpu = cpu;
	if (ev->kind == HA_EV_OTHER) {
		int ctx = context_of(ev->flags);
		unsigned int keep = 0;

		/* the waiting events of this context or a deeper one had their chance */
		while (keep < q->n && context_of(q->w[keep].flags) < ctx)
			keep++;
		for (unsigned int i = keep; i < q->n; i++)
			finish(p, cpu, &q->w[i], NULL, HA_STACK_NONE);
		q->n = keep;
		if (q->n == HA_PAIR_DEPTH) {
			finish(p, cpu, &q->w[0], NULL, HA_STACK_NONE);
			memmove(&q->w[0], &q->w[1], sizeof(q->w[0]) * (HA_PAIR_DEPTH - 1));
			q->n--;
		}
		q->w[q->n++] = (Waiting){ .ts = ev->ts, .type = ev->type, .pid = ev->pid,
					  .flags = ev->flags, .preempt = ev->preempt,
					  .text = text };
		return;
	}
	g_free(text);
	for (unsigned int i = q->n; i-- > 0;) {
		Waiting *w = &q->w[i];

		if (w->pid != ev->pid || w->flags != ev->flags || w->preempt != ev->preempt)
			continue;
		/* Everything that started after w and is still waiting: nested, stackless. */
		for (unsigned int j = i + 1; j < q->n; j++)
			finish(p, cpu, &q->w[j], NULL, HA_STACK_NONE);
		finish(p, cpu, w, ev, HA_STACK_NONE);
		q->n = i;
		return;
	}
	p->orphans++;
}

static void flush_all(HaPair *p, HaStackKind why)
{
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, p->cpus);
	while (g_hash_table_iter_next(&it, &k, &v))
		flush_q(p, GPOINTER_TO_UINT(k), v, why);
}

void ha_pair_flush(HaPair *p)
{
	flush_all(p, HA_STACK_NONE);
}

void ha_pair_lost(HaPair *p, uint32_t cpu)
{
	CpuQ *q = g_hash_table_lookup(p->cpus, GUINT_TO_POINTER(cpu));

	if (q)
		flush_q(p, cpu, q, HA_STACK_LOST);
}

void ha_pair_lost_all(HaPair *p)
{
	flush_all(p, HA_STACK_LOST);
}

void ha_pair_foreach_waiting(const HaPair *p, void (*fn)(uint32_t cpu, uint64_t ts,
							  int pid, void *user), void *user)
{
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, p->cpus);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		const CpuQ *q = v;

		for (unsigned int i = 0; i < q->n; i++)
			fn(GPOINTER_TO_UINT(k), q->w[i].ts, q->w[i].pid, user);
	}
}

uint64_t ha_pair_orphans(const HaPair *p)
{
	return p->orphans;
}

/* Blob: per CPU { u32 cpu, u32 n, n * { u64 ts, i32 type, i32 pid, u8 flags,
 * u8 preempt, u16 0 } }, host byte order (it never leaves this host). */
#define REC_SIZE 20u

GBytes *ha_pair_save(const HaPair *p)
{
	GByteArray *b = g_byte_array_new();
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, p->cpus);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		CpuQ *q = v;
		uint32_t hdr[2] = { GPOINTER_TO_UINT(k), q->n };

		if (!q->n)
			continue;
		g_byte_array_append(b, (const guint8 *)hdr, sizeof(hdr));
		for (unsigned int i = 0; i < q->n; i++) {
			uint8_t rec[REC_SIZE] = { 0 };

			memcpy(rec, &q->w[i].ts, 8);
			memcpy(rec + 8, &q->w[i].type, 4);
			memcpy(rec + 12, &q->w[i].pid, 4);
			rec[16] = q->w[i].flags;
			rec[17] = q->w[i].preempt;
			g_byte_array_append(b, rec, REC_SIZE);
		}
	}
	return g_byte_array_free_to_bytes(b);
}

bool ha_pair_load(HaPair *p, const void *data, size_t len)
{
	const uint8_t *d = data;
	size_t off = 0;

	while (off < len) {
		uint32_t hdr[2];
		CpuQ *q;

		if (len - off < sizeof(hdr))
			return false;
		memcpy(hdr, d + off, sizeof(hdr));
		off += sizeof(hdr);
		if (hdr[1] > HA_PAIR_DEPTH || (len - off) / REC_SIZE < hdr[1])
			return false;
		q = g_hash_table_lookup(p->cpus, GUINT_TO_POINTER(hdr[0]));
		if (!q) {
			q = g_new0(CpuQ, 1);
			g_hash_table_insert(p->cpus, GUINT_TO_POINTER(hdr[0]), q);
		}
		for (uint32_t i = 0; i < hdr[1] && q->n < HA_PAIR_DEPTH; i++) {
			Waiting *w = &q->w[q->n++];

			memset(w, 0, sizeof(*w));
			memcpy(&w->ts, d + off, 8);
			memcpy(&w->type, d + off + 8, 4);
			memcpy(&w->pid, d + off + 12, 4);
			w->flags = d[off + 16];
			w->preempt = d[off + 17];
			off += REC_SIZE;
		}
	}
	return true;
}
