// SPDX-License-Identifier: MIT
/* export-perf.c - `perf script` text layout (see export-perf.h). */
#include "export-perf.h"

#include <inttypes.h>
#include <string.h>

void ha_perf_script_sample(GString *out, uint64_t ts, uint32_t cpu, int pid,
			   const char *text, const uint64_t *ips, guint nr,
			   const HaSyms *syms)
{
	const char *colon = text ? strstr(text, ": ") : NULL;
	const char *slash = text ? strchr(text, '/') : NULL;

	/* as perf prints a sample of an event with call chains: COMM unpadded (it pads to
	 * 16 columns only without them), which speedscope's importer needs */
	g_string_append_printf(out, "%s %6d [%03u] %5" PRIu64 ".%09" PRIu64 ": ", "<...>", pid,
			       cpu, ts / 1000000000u, ts % 1000000000u);
	if (!text) {
		g_string_append(out, "unknown:\n");
	} else if (slash && colon && slash < colon) {
		/* "kmem/kmalloc: fields" -> "kmem:kmalloc: fields" */
		g_string_append_len(out, text, slash - text);
		g_string_append_c(out, ':');
		g_string_append(out, slash + 1);
		g_string_append_c(out, '\n');
	} else {
		g_string_append_printf(out, "%s\n", text);
	}
	for (guint i = 0; i < nr; i++) {
		g_autofree char *f = ha_syms_format(syms, ips[i]);
		char *mod = strstr(f, " [");
		char *size;

		if (mod)
			*mod++ = '\0';		/* "name+0xoff/0xsize [module]" */
		size = strstr(f, "/0x");
		if (size)
			*size = '\0';		/* perf prints name+0xoff */
		if (f[0] == '0' && f[1] == 'x')
			g_string_append_printf(out, "\t%16" PRIx64 " [unknown] ([unknown])\n", ips[i]);
		else
			g_string_append_printf(out, "\t%16" PRIx64 " %s (%s)\n", ips[i], f,
					       mod ? mod : "[kernel.kallsyms]");
	}
	g_string_append_c(out, '\n');
}
