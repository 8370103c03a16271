// SPDX-License-Identifier: MIT
/*
 * fuzz-format - libFuzzer target for a guest's FORMAT text (tep.c): the checks that
 * keep cut or malformed texts away from libtraceevent, then libtraceevent itself, and
 * printing an event with the format it accepted. Input: u8 mode, then the text. Mode
 * bit 0 puts "name: ev\nID: 900\nformat:\n" in front (so that the fuzzer works on the
 * field lines and the print fmt), bit 1 cuts the text at the offset the next two
 * bytes say. Every input gets a fresh parser: what libtraceevent keeps of a text it
 * refused shows as a leak (LeakSanitizer).
 */
#include <glib.h>
#include <string.h>

#include "guest-formats.h"
#include "tep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(HaTep) t = NULL;
	g_autoptr(GString) text = NULL;
	uint8_t mode;
	uint8_t rec[64] = { 0 };

	if (size < 3)
		return 0;
	mode = data[0];
	text = g_string_new(mode & 1 ? "name: ev\nID: 900\nformat:\n" : "");
	g_string_append_len(text, (const char *)data + 3, (gssize)(size - 3));
	if (mode & 2)
		g_string_truncate(text, ((size_t)data[1] | (size_t)data[2] << 8) % (text->len + 1));
	t = ha_tep_new(4096, false);
	ha_tep_add_format(t, "header_page", gf_formats[0].text, strlen(gf_formats[0].text),
			  NULL);
	if (ha_tep_add_format(t, "sys/ev", text->str, text->len, NULL)) {
		HaEvent ev = { .type = 900, .data = rec, .size = sizeof(rec) };
		g_autofree char *s = NULL;

		memcpy(rec, &(uint16_t){ 900 }, 2);
		for (size_t i = 8; i < sizeof(rec); i++)
			rec[i] = (uint8_t)(i * 37);
		s = ha_tep_format_event(t, &ev);
	}
	return 0;
}
