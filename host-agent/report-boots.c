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

/*
 * The sum of a column of @boot's rows, each read as the u64 the guest sent (LOST
 * counts are u64 on the wire, stored as int64), saturating at UINT64_MAX: no report
 * shows a negative or wrapped count, whatever the guest sent.
 */
static uint64_t sum_u64(HaStore *s, const char *sql, int64_t boot)
{
	sqlite3_stmt *st = ha_store_stmt(s, sql, NULL);
	uint64_t v = 0;

	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, boot);
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			uint64_t x = (uint64_t)sqlite3_column_int64(st, i);

			v = x > UINT64_MAX - v ? UINT64_MAX : v + x;
		}
	}
	sqlite3_reset(st);
	return v;
}

static int64_t scalar(HaStore *s, const char *sql, int64_t boot)
{
	sqlite3_stmt *st = ha_store_stmt(s, sql, NULL);
	int64_t v = 0;

	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, boot);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return v;
}

/*
 * Loss the ring buffer's own counters do not show (a reset of the buffer, as by a
 * trace clock switch, clears them; an event the reader never got stays counted only
 * as an entry). From the newest STATS of the boot:
 *  - @unread: SMP_STAT_RB_UNREAD, the per-CPU "entries" still in the buffer after the
 *    agent's final drain with tracing off (0 when it was not sent);
 *  - @successes: the map's successes in its epoch @epoch, i.e. stack ids handed out
 *    in that epoch, each for one TRACE_STACK_ID event committed to the ring buffer
 *    (the kernel reserves the event before it asks the map), against @stored, the
 *    stored events whose stack_id is of that epoch. A STATS frame older than the
 *    end of the stream makes @successes a lower bound, never an excess.
 */
typedef struct {
	uint64_t epoch, successes, stored, unread;	/* negative values read as 0 */
	bool have_map;
} MapLoss;

static uint64_t col_u64(sqlite3_stmt *st, int i)
{
	int64_t v = sqlite3_column_int64(st, i);

	return v > 0 ? (uint64_t)v : 0;
}

static void map_loss(HaStore *s, int64_t boot, MapLoss *ret)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT e.value, n.value FROM stats e JOIN stats n"
					 " ON n.stream = e.stream AND n.key = ?2 WHERE e.boot = ?1"
					 " AND e.key = ?3 ORDER BY e.value DESC, n.value DESC"
					 " LIMIT 1", NULL);

	*ret = (MapLoss){ 0 };
	if (!st)
		return;
	sqlite3_bind_int64(st, 1, boot);
	sqlite3_bind_int64(st, 2, SMP_STAT_MAP_SUCCESSES);
	sqlite3_bind_int64(st, 3, SMP_STAT_MAP_EPOCH);
	if (sqlite3_step(st) == SQLITE_ROW) {
		ret->have_map = true;
		ret->epoch = col_u64(st, 0);
		ret->successes = col_u64(st, 1);
	}
	sqlite3_reset(st);
	/* hist.h keys of stack ids: 2 * (gen << 31 | stack_id) + 2; epoch = gen * 2048 + tag */
	st = ha_store_stmt(s, "SELECT COALESCE(SUM(count), 0) FROM stack_counts WHERE"
			   " boot = ?1 AND key > 0 AND key % 2 = 0 AND ((key / 2 - 1) >> 31) *"
			   " 2048 + (((key / 2 - 1) >> 20) & 2047) = ?2", NULL);
	if (st && ret->have_map) {
		sqlite3_bind_int64(st, 1, boot);
		sqlite3_bind_int64(st, 2, (int64_t)ret->epoch);
		if (sqlite3_step(st) == SQLITE_ROW)
			ret->stored = col_u64(st, 0);
		sqlite3_reset(st);
	}
	st = ha_store_stmt(s, "SELECT COALESCE(MAX(value), 0) FROM stats WHERE boot = ?1 AND"
			   " key = ?2", NULL);
	if (st) {
		sqlite3_bind_int64(st, 1, boot);
		sqlite3_bind_int64(st, 2, SMP_STAT_RB_UNREAD);
		if (sqlite3_step(st) == SQLITE_ROW)
			ret->unread = col_u64(st, 0);
		sqlite3_reset(st);
	}
}

/* boots --json: the clock samples of boot @b (clocksync.h): how many the map keeps and
 * their best and worst uncertainty (0 samples: the guest never answered a probe). */
static void host_time_json(HaStore *s, int64_t b, JsonBuilder *j)
{
	g_autoptr(HaClockMap) m = ha_clockmap_load(s, b, NULL);
	uint64_t lo = UINT64_MAX, hi = 0;
	guint n = m ? ha_clockmap_points(m) : 0;

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
}

void ha_report_boot_clear(HaReportBoot *b)
{
	g_clear_pointer(&b->boot_id, g_free);
	g_clear_pointer(&b->kernel, g_free);
	g_clear_pointer(&b->ended, g_free);
}

bool ha_report_boot(HaStore *s, int64_t b, HaReportBoot *ret, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT release, start_time, COALESCE(end_time,"
					 " last_time), COALESCE(ended, 'running') FROM boots"
					 " WHERE id = ?", error);
	HaReportBoot r = { .boot = b };
	uint64_t explained;
	MapLoss ml;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, b);
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_reset(st);
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no boot %" PRId64, b);
		return false;
	}
	r.kernel = g_strdup((const char *)sqlite3_column_text(st, 0));
	r.start_us = sqlite3_column_int64(st, 1);
	r.end_us = sqlite3_column_int64(st, 2);
	r.ended = g_strdup((const char *)sqlite3_column_text(st, 3));
	sqlite3_reset(st);
	r.boot_id = ha_rp_boot_uuid(s, b);
	{
		g_autoptr(GHashTable) p = ha_rp_pending_events(s, b);

		r.stack_not_received = g_hash_table_size(p);
	}
	r.events = sum_u64(s, "SELECT nr_traced FROM chunks WHERE boot = ?", b) +
		   r.stack_not_received;
	r.lost_frames = sum_u64(s, "SELECT gap_frames FROM streams WHERE boot = ?", b);
	/* Ring-buffer loss: the larger of what the pages flagged and what the guest's
	 * per-CPU stats say (they count the same overwritten events). */
	r.lost_events = MAX(sum_u64(s, "SELECT overrun, dropped_events FROM lost WHERE"
				    " boot = ?", b),
			    sum_u64(s, "SELECT missed_events FROM streams WHERE boot = ?", b));
	r.stacks = scalar(s, "SELECT COUNT(*) FROM stacks WHERE boot = ?", b) +
		   scalar(s, "SELECT COUNT(*) FROM fullstacks WHERE boot = ?", b);
	r.epochs = scalar(s, "SELECT COUNT(*) FROM epochs WHERE boot = ?", b);
	r.malformed = sum_u64(s, "SELECT malformed FROM streams WHERE boot = ?", b);
	/* LOST counts what the ring buffer's counters missed too, once: stack ids handed
	 * out beyond what is stored and not explained by those counters. */
	map_loss(s, b, &ml);
	explained = ml.stored + r.lost_events + ml.unread;
	if (explained < ml.stored)
		explained = UINT64_MAX;
	r.unseen_stack_ids = ml.successes > explained ? ml.successes - explained : 0;
	r.unread_events = ml.unread;
	r.lost_events += ml.unread + r.unseen_stack_ids;
	r.map_epoch = ml.epoch;
	r.map_successes = ml.successes;
	r.stack_id_events = ml.stored;
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
			host_time_json(s, b, j);
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
