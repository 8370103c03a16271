// SPDX-License-Identifier: MIT
/* report-flamegraph.c - flamegraph: an SVG of folded counts, of a boot or of its events. */
#include "report-int.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamegraph.h"

bool ha_rp_flamegraph(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		      GError **error)
{
	g_autoptr(GString) f = g_string_new(NULL);
	g_autoptr(GString) title = g_string_new("virtio-stackmap: ");
	bool from_events = o->since_ns >= 0 || o->until_ns >= 0 || o->event;

	if (from_events) {
		HaReportOpts eo = *o;

		eo.format = "folded";
		if (!ha_rp_events(s, &eo, dw, f, error))
			return false;
	} else if (!ha_rp_folded_report(s, o, dw, f, error)) {
		return false;
	}
	g_string_append_printf(title, "%s %s", o->boot && !strcmp(o->boot, "all") ?
			       "all boots" : "boot", o->boot && !strcmp(o->boot, "all") ? "" :
			       o->boot ? o->boot : "(newest)");
	if (o->event)
		g_string_append_printf(title, ", %s", o->event);
	if (o->since_ns >= 0)
		g_string_append_printf(title, ", from %.9f s", (double)o->since_ns / 1e9);
	if (o->until_ns >= 0)
		g_string_append_printf(title, ", until %.9f s", (double)o->until_ns / 1e9);
	return ha_flamegraph_svg(f->str, title->str, out, error);
}

