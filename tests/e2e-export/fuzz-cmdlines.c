// SPDX-License-Identifier: MIT
/*
 * fuzz-cmdlines - libFuzzer target for a guest's CMDLINES texts (host-agent/cmdlines.c).
 * The input is split at NUL bytes into texts added in turn (as a boot's frames are);
 * then the table is written out and read back: it must parse again, line for line,
 * with every comm printable and within bounds.
 */
#include <glib.h>
#include <string.h>

#include "cmdlines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(HaCmdlines) c = ha_cmdlines_new();
	g_autoptr(HaCmdlines) again = ha_cmdlines_new();
	g_autoptr(GBytes) text = NULL, text2 = NULL;
	const uint8_t *p = data, *end = data + size;
	const char *t;
	size_t n;

	while (p < end) {
		const uint8_t *z = memchr(p, '\0', (size_t)(end - p));
		size_t len = z ? (size_t)(z - p) : (size_t)(end - p);

		ha_cmdlines_add(c, p, len);
		p += len + 1;
	}
	text = ha_cmdlines_text(c);
	t = g_bytes_get_data(text, &n);
	for (size_t i = 0; i < n; i++)
		if (t[i] != '\n' && (t[i] < 0x20 || t[i] > 0x7e))
			__builtin_trap();
	ha_cmdlines_add(again, t, n);
	if (ha_cmdlines_refused(again) || ha_cmdlines_size(again) != ha_cmdlines_size(c) ||
	    ha_cmdlines_size(c) > HA_CMDLINES_MAX)
		__builtin_trap();
	text2 = ha_cmdlines_text(again);
	if (!g_bytes_equal(text, text2))
		__builtin_trap();
	return 0;
}
