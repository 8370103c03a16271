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

/* One epoch of the id (HaStoreEpochStackFn). */
typedef struct {
	bool json;
	HaJsonArray *arr;
	GString *out;
	const HaSyms *syms;
	int64_t id;
	guint n;
} StackCtx;

static void epoch_stack(int64_t epoch, int64_t start_ts, const GArray *ips,
			int64_t ref_count, void *user)
{
	StackCtx *x = user;
	HaRpStack stk = { .sid = x->id, .epoch = epoch };

	if (!ips) {
		stk.kind = ST_UNRESOLVED;
		stk.why = "no stack received for this id in this epoch";
	} else {
		stk.kind = ST_MAP;
		stk.ips = g_array_ref((GArray *)ips);
	}
	if (x->json) {
		g_autoptr(JsonBuilder) j = json_builder_new();

		json_builder_begin_object(j);
		ha_json_member_int(j, "epoch_start_ts", start_ts);
		json_builder_set_member_name(j, "stack");
		ha_rp_json_stack(j, &stk, x->syms);
		json_builder_end_object(j);
		ha_json_array_add(x->arr, j);
	} else {
		g_autofree char *l = ha_rp_stack_label(&stk);

		g_string_append_printf(x->out, "  epoch %" PRId64 " (from ts %" PRId64 "): %s,"
				       " ref_count %" PRId64 "\n", stk.epoch, start_ts, l,
				       ref_count);
		ha_rp_print_frames(x->out, &stk, x->syms, "      ");
	}
	ha_rp_stack_clear(&stk);
	x->n++;
}

bool ha_rp_stack(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		 GError **error)
{
	HaJsonArray arr;
	g_autoptr(GArray) ids = ha_rp_select_boots(s, o->boot, error);
	g_autoptr(HaSyms) syms = NULL;
	char *end = NULL;
	uint64_t id;
	int64_t boot;
	StackCtx x = { .json = o->json, .arr = &arr, .out = out };

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
	syms = ha_rp_load_syms(s, boot, dw, error);
	if (!syms)
		return false;
	x.syms = syms;
	x.id = (int64_t)id;
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
	if (!ha_store_epoch_stacks(s, boot, smp_id_tag((uint32_t)id), (uint32_t)id,
				   epoch_stack, &x, error)) {
		if (o->json)
			ha_json_array_end(&arr);
		return false;
	}
	if (o->json)
		ha_json_array_end(&arr);
	else if (!x.n)
		g_string_append(out, "  no epoch with this tag: unresolved\n");
	return true;
}

/* The SVG of folded's counts, or of the events of a range or an event type. */
