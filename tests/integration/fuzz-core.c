// SPDX-License-Identifier: MIT
/*
 * fuzz-core: libFuzzer over the post-mortem readers. The input is a guest core as
 * QEMU's dump-guest-memory writes one (seeds: fuzz-core-seeds, synthetic cores of a
 * 6.1 printk ring, trace buffer and stack map, coregen.h); it goes through the ELF
 * core parser (coredump.h), its VMCOREINFO (vmcoreinfo.h), the kernel address
 * translation and page walk (kvmem.h), the printk ring walk (kmsg.h), whose records
 * are formatted as the console would print them, and the walks of the ring buffers'
 * unread pages (pm-ring.h) and of the stack map (pm-map.h) into frames
 * (pm-frames.h), each of which must then be one the ingest takes (its size within
 * its type's bounds, a PAGE that decodes). ASan/UBSan report any read outside the
 * input or the buffers.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "coredump.h"
#include "kmsg.h"
#include "kvmem.h"
#include "pm-frames.h"
#include "pm-map.h"
#include "pm-ring.h"
#include "postmortem.h"
#include "proto.h"
#include "vmcoreinfo.h"

#define FUZZ_NR_CPUS	8u
#define FUZZ_PAGE_SIZE	4096u

/* Every frame of @f decodes and is of a size its type allows; abort() otherwise. */
static void check_frames(const HaPmFrames *f)
{
	static struct smp_decoder *d;
	size_t fed = 0;
	uint64_t n = 0;

	if (!d)
		d = smp_decoder_new(0);
	smp_decoder_reset(d);
	for (;;) {
		struct smp_frame fr;
		struct smp_page pg;
		int r = smp_decoder_next(d, &fr, NULL);

		if (r == 1) {
			n++;
			if (smp_msg_check_size(fr.type, fr.len) < 0 ||
			    (fr.type == SMP_PAGE && smp_page_decode(&pg, fr.payload, fr.len) < 0) ||
			    (fr.type != SMP_PAGE && fr.type != SMP_STACKS && fr.type != SMP_EPOCH))
				abort();
			continue;
		}
		if (r < 0)
			abort();
		if (fed == f->out->len)
			break;
		fed += smp_decoder_feed(d, f->out->data + fed, f->out->len - fed);
	}
	if (n != f->frames || smp_decoder_pending(d))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(HaCore) c = ha_core_open_mem(data, size, NULL);
	g_autoptr(HaVmci) vi = NULL;
	g_autoptr(HaKvmem) m = NULL;
	g_autoptr(HaKmsg) k = NULL;
	g_autoptr(GString) out = g_string_new(NULL);
	HaPmFrames f;
	HaPmMapStats ms = { 0 };
	HaPmRingStats rs = { 0 };

	if (!c)
		return 0;
	k = ha_postmortem_kmsg(c, &vi, &m, NULL);
	for (guint i = 0; k && i < k->records->len; i++) {
		const HaKmsgRecord *r = &g_array_index(k->records, HaKmsgRecord, i);
		gsize len;
		const void *t = g_bytes_get_data(r->text, &len);

		ha_kmsg_format(out, r->ts_nsec, t, len);
	}
	/* the reader the kmsg walk made, whether or not that walk found a log */
	if (!m)
		return 0;
	/* as postmortem.c: the map first, then the ring buffers, into one run of frames */
	ha_pm_frames_init(&f, 1);
	ha_pm_map_recover(m, vi, &f, &ms, NULL);
	ha_pm_ring_recover(m, vi, FUZZ_NR_CPUS, FUZZ_PAGE_SIZE, &f, &rs, NULL);
	check_frames(&f);
	ha_pm_map_stats_clear(&ms);
	ha_pm_ring_stats_clear(&rs);
	ha_pm_frames_clear(&f);
	return 0;
}
