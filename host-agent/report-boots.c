// SPDX-License-Identifier: MIT
/* report-boots.c - boots: one line per boot, its counts and loss (report-int.h). */
#include "report-int.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clocksync.h"
#include "proto.h"

/* boots --json: the clock samples of boot @b (clocksync.h): how many the map keeps and
 * their best and worst uncertainty (0 samples: the guest never answered a probe). */
static bool host_time_json(HaStore *s, int64_t b, JsonBuilder *j, GError **error)
{
	g_autoptr(HaClockMap) m = ha_clockmap_load(s, b, error);
	uint64_t lo = UINT64_MAX, hi = 0;
	guint n;

	if (!m)
		return false;
	n = ha_clockmap_points(m);

	for (guint i = 0; i < n; i++) {
		uint64_t g, u;
		int64_t off;

		ha_clockmap_point(m, i, &g, &off, &u);
		lo = MIN(lo, u);
		hi = MAX(hi, u);
	}
	ha_json_member_int(j, "host_time_points", n);
	if (n) {
		json_builder_set_member_name(j, "host_time_uncertainty_ns");
		json_builder_begin_array(j);
		ha_json_add_u64(j, lo);
		ha_json_add_u64(j, hi);
		json_builder_end_array(j);
	}
	return true;
}

void ha_report_boot_clear(HaReportBoot *b)
{
	g_clear_pointer(&b->boot_id, g_free);
	g_clear_pointer(&b->kernel, g_free);
	g_clear_pointer(&b->ended, g_free);
}

/*
 * Loss the ring buffer's own counters do not show (a reset of the buffer, as by a
 * trace clock switch, clears them; an event the reader never got stays counted only
 * as an entry). From the newest STATS of the boot (HaStoreBootCounts):
 *  - unread: SMP_STAT_RB_UNREAD, the per-CPU "entries" still in the buffer after the
 *    agent's final drain with tracing off (0 when it was not sent);
 *  - map_successes: the map's successes in its epoch map_epoch, i.e. stack ids handed
 *    out in that epoch, each for one TRACE_STACK_ID event committed to the ring
 *    buffer (the kernel reserves the event before it asks the map), against
 *    map_stored, the stored events whose stack_id is of that epoch. A STATS frame
 *    older than the end of the stream makes map_successes a lower bound, never an
 *    excess.
 */
bool ha_report_boot(HaStore *s, int64_t b, HaReportBoot *ret, GError **error)
{
	g_auto(HaStoreBootInfo) info = { 0 };
	g_autoptr(GHashTable) p = NULL;
	HaReportBoot r = { .boot = b };
	HaStoreBootCounts n;
	uint64_t explained;

	if (!ha_store_boot_info(s, b, &info, error))
		return false;
	if (!info.found) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no boot %" PRId64, b);
		return false;
	}
	if (!(p = ha_rp_pending_events(s, b, error)) || !ha_store_boot_counts(s, b, &n, error))
		return false;
	r.kernel = g_steal_pointer(&info.release);
	r.start_us = info.start_us;
	r.end_us = info.has_end ? info.end_us : info.last_us;
	r.ended = g_strdup(info.ended ? info.ended : "running");
	r.boot_id = ha_rp_boot_uuid(s, b, error);
	if (!r.boot_id) {
		ha_report_boot_clear(&r);
		return false;
	}
	r.stack_not_received = g_hash_table_size(p);
	r.events = n.traced + r.stack_not_received;
	r.lost_frames = n.gap_frames;
	/* Ring-buffer loss: the larger of what the pages flagged and what the guest's
	 * per-CPU stats say (they count the same overwritten events). */
	r.lost_events = MAX(n.ring_lost, n.missed_events);
	r.stacks = n.stacks + n.fullstacks;
	r.epochs = n.epochs;
	r.malformed = n.malformed;
	/* LOST counts what the ring buffer's counters missed too, once: stack ids handed
	 * out beyond what is stored and not explained by those counters. */
	explained = n.map_stored + r.lost_events + n.unread;
	if (explained < n.map_stored)
		explained = UINT64_MAX;
	r.unseen_stack_ids = n.map_successes > explained ? n.map_successes - explained : 0;
	r.unread_events = n.unread;
	r.lost_events += n.unread + r.unseen_stack_ids;
	r.map_epoch = n.map_epoch;
	r.map_successes = n.map_successes;
	r.stack_id_events = n.map_stored;
	*ret = r;
	return true;
}

bool ha_rp_boots(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		 GError **error)
{
	g_autoptr(GArray) ids = ha_rp_select_boots(s, o->boot ? o->boot : "all", error);
	HaJsonArray arr;

	(void)dw;
	if (!ids)
		return false;
	if (o->json)
		ha_json_array_begin(&arr, out, NULL, NULL);
	else
		g_string_append_printf(out, "%-4s %-36s %-22s %-19s %-19s %-12s %10s %10s %8s %6s\n",
				       "BOOT", "BOOT_ID", "KERNEL", "START (UTC)", "END (UTC)",
				       "ENDED", "EVENTS", "LOST", "STACKS", "EPOCHS");
	for (guint i = 0; i < ids->len; i++) {
		int64_t b = g_array_index(ids, int64_t, i);
		g_auto(HaReportBoot) r = { 0 };
		g_autofree char *start = NULL, *end = NULL;
		g_autoptr(GError) e = NULL;

		if (!ha_report_boot(s, b, &r, &e)) {
			if (g_error_matches(e, G_IO_ERROR, G_IO_ERROR_NOT_FOUND))
				continue;
			g_propagate_error(error, g_steal_pointer(&e));
			return false;
		}
		start = ha_rp_fmt_time(r.start_us);
		end = ha_rp_fmt_time(r.end_us);
		if (o->json) {
			g_autoptr(JsonBuilder) j = json_builder_new();

			json_builder_begin_object(j);
			ha_json_member_int(j, "boot", b);
			ha_json_member_str(j, "boot_id", r.boot_id);
			ha_json_member_str(j, "kernel", r.kernel);
			ha_json_member_str(j, "start", start);
			ha_json_member_str(j, "end", end);
			ha_json_member_str(j, "ended", r.ended);
			ha_json_member_u64(j, "events", r.events);
			ha_json_member_u64(j, "lost_frames", r.lost_frames);
			ha_json_member_u64(j, "lost_events", r.lost_events);
			ha_json_member_int(j, "stacks", r.stacks);
			ha_json_member_int(j, "epochs", r.epochs);
			ha_json_member_u64(j, "malformed", r.malformed);
			ha_json_member_u64(j, "unread_events", r.unread_events);
			ha_json_member_u64(j, "unseen_stack_ids", r.unseen_stack_ids);
			ha_json_member_u64(j, "map_epoch", r.map_epoch);
			ha_json_member_u64(j, "map_successes", r.map_successes);
			ha_json_member_u64(j, "stack_id_events", r.stack_id_events);
			ha_json_member_u64(j, "stack_not_received", r.stack_not_received);
			if (!host_time_json(s, b, j, error))
				return false;
			json_builder_end_object(j);
			ha_json_array_add(&arr, j);
		} else {
			g_autofree char *lost = g_strdup_printf("%" PRIu64 "f/%" PRIu64 "e",
								r.lost_frames, r.lost_events);

			g_string_append_printf(out, "%-4" PRId64 " %-36s %-22.22s %-19s %-19s %-12s"
					       " %10" PRIu64 " %10s %8" PRId64 " %6" PRId64 "\n",
					       b, r.boot_id, r.kernel ? r.kernel : "?", start, end,
					       r.ended, r.events, lost, r.stacks, r.epochs);
			if (r.unread_events || r.unseen_stack_ids)
				g_string_append_printf(out, "     of the LOST events: %" PRIu64
						       " left unread in the guest's ring buffer, %"
						       PRIu64 " more stack ids of epoch %" PRIu64
						       " handed out than explained (map successes %"
						       PRIu64 ", stack_id events stored %" PRIu64 ")\n",
						       r.unread_events, r.unseen_stack_ids, r.map_epoch,
						       r.map_successes, r.stack_id_events);
		}
	}
	if (o->json)
		ha_json_array_end(&arr);
	else
		g_string_append(out, "LOST: frames the guest agent could not deliver (f) / events"
				" lost in the guest (e): overwritten or dropped by the ring"
				" buffer, left unread in it, or given a stack id by the map but"
				" never stored (a ring-buffer reset).\n");
	return true;
}
