// SPDX-License-Identifier: MIT
/*
 * fuzz-page - libFuzzer target for what the host does with a guest's PAGE: the bounds
 * pre-check and kbuffer walk (tep.c), the event printer's field checks, and the
 * pairing of events with stacks (pair.c), with the 6.1 formats of guest-formats.c.
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
	ha_tep_walk_page(tep, data + 1, size - 1, on_event, &cpu, NULL);
	if (data[0] & 0x80)
		ha_pair_flush(pair);
	return 0;
}
