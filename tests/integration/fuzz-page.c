// SPDX-License-Identifier: MIT
/*
 * fuzz-page - libFuzzer target for what the host does with a guest's PAGE: the bounds
 * pre-check and kbuffer walk (tep.c), the event printer's field checks, and the
 * pairing of events with stacks (pair.c), with the 6.1 formats of guest-formats.c.
 * Each page is walked twice, by the bounds check's own event list and by kbuffer
 * (ha_tep_walk_page_kbuffer()): the two must give the same events.
 * Input: u8 cpu, then the PAGE data (page header + committed bytes).
 * With --seeds DIR (not a libFuzzer flag: handled before it) writes seed pages.
 */
#include <stdio.h>
#include <string.h>

#include "guest-formats.h"
#include "pair.h"
#include "ringpage.h"
#include "tep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static HaTep *tep;
static HaPair *pair;

static void on_pair(const HaPaired *p, void *user)
{
	(void)p;
	(void)user;
}

static void on_event(const HaEvent *ev, void *user)
{
	uint32_t cpu = *(uint32_t *)user;

	ha_pair_feed(pair, cpu, ev, ev->kind == HA_EV_OTHER ? ha_tep_format_event(tep, ev) : NULL);
}

/* What a walk delivered, to compare the two walks. */
typedef struct {
	uint64_t ts;
	const void *data;
	uint32_t size;
	int kind, type, pid;
	uint32_t stack_id, nr_ips;
} Seen;

static Seen seen[2][8192];
static unsigned nseen[2];

static void on_seen(const HaEvent *ev, void *user)
{
	int w = *(int *)user;

	if (nseen[w] < G_N_ELEMENTS(seen[w]))
		seen[w][nseen[w]] = (Seen){ ev->ts, ev->data, ev->size, ev->kind, ev->type,
					    ev->pid, ev->kind == HA_EV_STACK_ID ? ev->stack_id : 0,
					    ev->nr_ips };
	nseen[w]++;
}

static void same_walks(const uint8_t *data, size_t size)
{
	int w0 = 0, w1 = 1;
	long n0, n1, m0;

	nseen[0] = nseen[1] = 0;
	n0 = ha_tep_walk_page(tep, data, size, on_seen, &w0, NULL);
	m0 = ha_tep_missed(tep);
	n1 = ha_tep_walk_page_kbuffer(tep, data, size, on_seen, &w1, NULL);
	if (n0 != n1 || nseen[0] != nseen[1] || (n0 >= 0 && m0 != ha_tep_missed(tep))) {
		fprintf(stderr, "walks differ: %ld / %ld events\n", n0, n1);
		abort();
	}
	for (unsigned i = 0; i < MIN(nseen[0], G_N_ELEMENTS(seen[0])); i++) {
		const Seen *a = &seen[0][i], *b = &seen[1][i];

		if (a->ts != b->ts || a->data != b->data || a->size != b->size ||
		    a->kind != b->kind || a->type != b->type || a->pid != b->pid ||
		    a->stack_id != b->stack_id || a->nr_ips != b->nr_ips) {
			fprintf(stderr, "walks differ at event %u\n", i);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t cpu;

	if (!tep) {
		tep = ha_tep_new(4096, false);
		for (unsigned int i = 0; i < gf_nr_formats; i++)
			ha_tep_add_format(tep, gf_formats[i].name, gf_formats[i].text,
					  strlen(gf_formats[i].text), NULL);
		pair = ha_pair_new(on_pair, NULL);
	}
	if (size < 1)
		return 0;
	cpu = data[0] % 4;
	same_walks(data + 1, size - 1);
	ha_tep_walk_page(tep, data + 1, size - 1, on_event, &cpu, NULL);
	if (data[0] & 0x80)
		ha_pair_flush(pair);
	return 0;
}
