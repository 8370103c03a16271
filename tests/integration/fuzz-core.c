// SPDX-License-Identifier: MIT
/*
 * fuzz-core: libFuzzer over the post-mortem readers. The input is a guest core as
 * QEMU's dump-guest-memory writes one (seeds: fuzz-core-seeds, synthetic cores of a
 * 6.1 printk ring); it goes through the ELF core parser (coredump.h), its VMCOREINFO
 * (vmcoreinfo.h), the kernel address translation and page walk (kvmem.h) and the
 * printk ring walk (kmsg.h), and every record recovered is formatted as the console
 * would print it. ASan/UBSan report any read outside the input or the buffers.
 */
#include <stddef.h>
#include <stdint.h>

#include "coredump.h"
#include "kmsg.h"
#include "postmortem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(HaCore) c = ha_core_open_mem(data, size, NULL);
	g_autoptr(HaVmci) vi = NULL;
	g_autoptr(HaKmsg) k = NULL;
	g_autoptr(GString) out = g_string_new(NULL);

	if (!c)
		return 0;
	k = ha_postmortem_kmsg(c, &vi, NULL);
	if (!k)
		return 0;
	for (guint i = 0; i < k->records->len; i++) {
		const HaKmsgRecord *r = &g_array_index(k->records, HaKmsgRecord, i);
		gsize len;
		const void *t = g_bytes_get_data(r->text, &len);

		ha_kmsg_format(out, r->ts_nsec, t, len);
	}
	return 0;
}
