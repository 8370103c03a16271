// SPDX-License-Identifier: MIT
/* report-stack.c - stack ID: one stack_id in every epoch it exists in (report-int.h). */
#include "report-int.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

bool ha_rp_stack(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		 GError **error)
{
	HaJsonArray arr;
	g_autoptr(GArray) ids = ha_rp_select_boots(s, o->boot, error);
	g_autoptr(HaSyms) syms = NULL;
	char *end = NULL;
	uint64_t id;
	int64_t boot;
	sqlite3_stmt *st;
	guint n = 0;

	if (!ids)
		return false;
	if (!o->arg || !*o->arg || (id = g_ascii_strtoull(o->arg, &end, 0), *end) ||
	    id > 0x7fffffffu) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "stack wants a stack_id (decimal or 0x hex), got '%s'",
			    o->arg ? o->arg : "");
		return false;
	}
	boot = g_array_index(ids, int64_t, 0);
	syms = ha_rp_load_syms(s, boot, dw);
	st = ha_store_stmt(s, "SELECT e.epoch, e.start_ts, s.ips, s.ref_count FROM epochs e"
			   " LEFT JOIN stacks s ON s.boot = e.boot AND s.epoch = e.epoch AND"
			   " s.stack_id = ?2 WHERE e.boot = ?1 AND e.tag = ?3 ORDER BY e.epoch",
			   error);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, (int64_t)id);
	sqlite3_bind_int64(st, 3, smp_id_tag((uint32_t)id));
	if (o->json) {
		g_autoptr(JsonBuilder) head = json_builder_new();

		json_builder_begin_object(head);
		ha_json_member_int(head, "boot", boot);
		ha_json_member_u64(head, "stack_id", id);
		ha_json_array_begin(&arr, out, head, "epochs");
	} else
		g_string_append_printf(out, "stack_id 0x%08" PRIx64 " (tag %u, slot %u) in boot %"
				       PRId64 ":\n", id, smp_id_tag((uint32_t)id),
				       smp_id_slot((uint32_t)id), boot);
	while (sqlite3_step(st) == SQLITE_ROW) {
		HaRpStack stk = { .sid = (int64_t)id, .epoch = sqlite3_column_int64(st, 0) };

		if (sqlite3_column_type(st, 2) == SQLITE_NULL) {
			stk.kind = ST_UNRESOLVED;
			stk.why = "no stack received for this id in this epoch";
		} else {
			stk.kind = ST_MAP;
			stk.ips = ha_rp_ips_from_blob(sqlite3_column_blob(st, 2),
						      sqlite3_column_bytes(st, 2));
		}
		if (o->json) {
			g_autoptr(JsonBuilder) j = json_builder_new();

			json_builder_begin_object(j);
			ha_json_member_int(j, "epoch_start_ts", sqlite3_column_int64(st, 1));
			json_builder_set_member_name(j, "stack");
			ha_rp_json_stack(j, &stk, syms);
			json_builder_end_object(j);
			ha_json_array_add(&arr, j);
		} else {
			g_autofree char *l = ha_rp_stack_label(&stk);

			g_string_append_printf(out, "  epoch %" PRId64 " (from ts %" PRId64 "): %s,"
					       " ref_count %" PRId64 "\n", stk.epoch,
					       (int64_t)sqlite3_column_int64(st, 1), l,
					       (int64_t)sqlite3_column_int64(st, 3));
			ha_rp_print_frames(out, &stk, syms, "      ");
		}
		ha_rp_stack_clear(&stk);
		n++;
	}
	sqlite3_reset(st);
	if (o->json)
		ha_json_array_end(&arr);
	else if (!n)
		g_string_append(out, "  no epoch with this tag: unresolved\n");
	return true;
}

/* The SVG of folded's counts, or of the events of a range or an event type. */
