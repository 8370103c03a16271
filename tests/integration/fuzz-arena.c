// SPDX-License-Identifier: MIT
/*
 * fuzz-arena: the scan of the guest agent's window as read from a dump
 * (pm-arena-scan.c). The input is the mapping: the recovery header page, then the
 * arena. Whatever it holds, the scan must stay inside it, and every frame of the
 * stream it returns must decode whole, HELLO first.
 */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>

#include "pm-arena.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of its own size, so that ASan sees any read past the end */
	uint8_t *m = g_memdup2(data, size);
	HaPmArenaScan st;
	GError *e = NULL;
	GBytes *out = ha_pm_arena_scan(m, size, &st, &e);

	if (out) {
		gsize len;
		const uint8_t *p = g_bytes_get_data(out, &len);
		struct smp_decoder *d = smp_decoder_new(0);
		struct smp_frame f;
		uint64_t n = 0, prev = 0;

		smp_decoder_feed(d, p, len);
		while (smp_decoder_next(d, &f, NULL) == 1) {
			if (n == 0 ? f.type != SMP_HELLO : (f.seq <= prev ||
			    !(f.flags & SMP_FLAG_RESENT)))
				abort();
			prev = f.seq;
			n++;
		}
		/* everything decoded: the HELLO and one frame per seq found */
		if (smp_decoder_pending(d) != 0 || n != st.frames + 1)
			abort();
		smp_decoder_free(d);
		g_bytes_unref(out);
	} else if (!e) {
		abort();
	}
	g_clear_error(&e);
	g_free(m);
	return 0;
}
