// SPDX-License-Identifier: MIT
/*
 * report-postmortem.c - postmortem: how a boot ended and what its memory said
 * (report-int.h, store-postmortem.h).
 *
 * The boot: --boot, else the newest boot with a post-mortem, else the newest boot.
 * From its recovered kernel log: the panic message (the last "Kernel panic - not
 * syncing" record), the oops around it (from the first record of the crash report in
 * the burst of records before the panic, up to the panic's "---[ end" line), and the
 * --limit (default 20) records before that. Lines are printed as the serial console
 * prints them (PRINTK_TIME), so they can be compared with a console log.
 *
 * Then, for a boot with a post-mortem, the replay of what had not been streamed (the
 * postmortems row's seam and counts, store-postmortem.h) and the last events of each
 * CPU (the report's argument, default 5) with their stacks, as events shows them,
 * each marked streamed or recovered (ha_rp_decode(), HaRpEv.recovered).
 */
#include "report-int.h"

#include <inttypes.h>
#include <string.h>

#include "kmsg.h"

#define BEFORE_DEFAULT	20
#define PER_CPU_DEFAULT	5
#define PER_CPU_MAX	10000
#define BURST_GAP_NS	2000000000ull	/* records of one crash report: < 2 s apart */
#define BURST_MAX	1024

typedef struct {
	int64_t seq;
	uint64_t ts;
	GBytes *text;
} Rec;

static void rec_clear(gpointer p)
{
	g_clear_pointer(&((Rec *)p)->text, g_bytes_unref);
}

static bool text_has(const Rec *r, const char *needle)
{
	gsize len;
	const char *t = g_bytes_get_data(r->text, &len);

	return len && g_strstr_len(t, (gssize)len, needle) != NULL;
}

static bool text_starts(const Rec *r, const char *prefix)
{
	gsize len;
	const char *t = g_bytes_get_data(r->text, &len);
	size_t n = strlen(prefix);

	return len >= n && memcmp(t, prefix, n) == 0;
}

/* The first line of a crash report, as the kernel prints them. */
static bool starts_report(const Rec *r)
{
	static const char *const first[] = {
		"sysrq: Trigger a crash", "BUG: ", "Oops", "general protection fault",
		"kernel BUG at", "Unable to handle kernel", "watchdog: BUG: soft lockup",
		"INFO: task ", "Kernel panic - not syncing", "WARNING: ", "divide error",
		"invalid opcode", "stack segment", "double fault", "NMI watchdog",
	};

	for (size_t i = 0; i < G_N_ELEMENTS(first); i++)
		if (text_starts(r, first[i]))
			return true;
	return false;
}

static void add_rec(int64_t seq, uint64_t ts_nsec, const void *text, size_t len,
		    void *user)
{
	Rec r = { .seq = seq, .ts = ts_nsec, .text = g_bytes_new(text, len) };

	g_array_append_val((GArray *)user, r);
}

static GArray *load_kmsg(HaStore *s, int64_t boot, GError **error)
{
	g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(Rec));

	g_array_set_clear_func(a, rec_clear);
	if (!ha_store_kmsg_foreach(s, boot, add_rec, a, error))
		return NULL;
	return g_steal_pointer(&a);
}

/* Console lines of records [@from, @to), control bytes but tab shown as \xNN. */
static void append_lines(GString *out, GArray *recs, guint from, guint to, bool escape)
{
	for (guint i = from; i < to; i++) {
		const Rec *r = &g_array_index(recs, Rec, i);
		gsize len;
		const uint8_t *t = g_bytes_get_data(r->text, &len);
		g_autoptr(GString) clean = g_string_new(NULL);

		for (gsize j = 0; j < len; j++) {
			if (escape && ((t[j] < 0x20 && t[j] != '\t' && t[j] != '\n') ||
				       t[j] == 0x7f))
				g_string_append_printf(clean, "\\x%02x", t[j]);
			else
				g_string_append_c(clean, (char)t[j]);
		}
		ha_kmsg_format(out, r->ts, clean->str, clean->len);
	}
}

static void json_recs(JsonBuilder *b, const char *name, GArray *recs, guint from, guint to)
{
	json_builder_set_member_name(b, name);
	json_builder_begin_array(b);
	for (guint i = from; i < to; i++) {
		const Rec *r = &g_array_index(recs, Rec, i);
		gsize len;
		const char *t = g_bytes_get_data(r->text, &len);
		g_autofree char *s = g_strndup(t ? t : "", len);

		json_builder_begin_object(b);
		ha_json_member_int(b, "seq", r->seq);
		ha_json_member_u64(b, "ts_nsec", r->ts);
		ha_json_member_str(b, "text", s);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
}

typedef HaStorePmInfo PmRow;

/* The replay's figures, after the kernel log. */
static void append_replay(GString *out, const PmRow *pm)
{
	if (pm->stream < 0) {
		g_string_append_printf(out, "\nReplay of what had not been streamed: none%s\n",
				       pm->message ? " (see Not recovered above)" : "");
		return;
	}
	g_string_append_printf(out, "\nReplay of what had not been streamed (post-mortem %s):"
			       " into stream %" PRId64 " from seq %" PRId64 " (the seam)\n",
			       pm->status ? pm->status : "?", pm->stream, pm->seam_seq);
	g_string_append_printf(out, "  the guest agent's window: %" PRId64 " frames found"
			       " (acknowledged ones too, until overwritten)\n", pm->arena_frames);
	g_string_append_printf(out, "  the ring buffers: %" PRId64 " pages no reader had"
			       " consumed, %" PRId64 " events\n", pm->ring_pages, pm->ring_events);
	g_string_append_printf(out, "  the stack map: %" PRId64 " records (those not read,"
			       " and the live map whole)\n",
			       pm->map_records);
	g_string_append_printf(out, "  frames stored: %" PRId64 ", already streamed: %" PRId64
			       " (duplicates), events stored: %" PRId64 "\n",
			       pm->frames_stored, pm->frames_dup, pm->events_stored);
}

static void json_replay(JsonBuilder *b, const PmRow *pm)
{
	ha_json_member_int(b, "stream", pm->stream);
	ha_json_member_int(b, "seam_seq", pm->seam_seq);
	ha_json_member_int(b, "arena_frames", pm->arena_frames);
	ha_json_member_int(b, "ring_pages", pm->ring_pages);
	ha_json_member_int(b, "ring_events", pm->ring_events);
	ha_json_member_int(b, "map_records", pm->map_records);
	ha_json_member_int(b, "frames_stored", pm->frames_stored);
	ha_json_member_int(b, "frames_dup", pm->frames_dup);
	ha_json_member_int(b, "events_stored", pm->events_stored);
}

/* The CPUs with stored pages (guint, ascending): NULL with @error. */
static GArray *boot_cpus(HaStore *s, int64_t boot, GError **error)
{
	g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(guint));

	if (!ha_store_chunk_cpus(s, boot, a, error))
		return NULL;
	return g_steal_pointer(&a);
}

/*
 * The last @n events of each CPU of @boot, decoded as events decodes them: as text
 * into @out, or as the "last_events" member of @j (then @out is unused).
 */
static bool last_events(HaStore *s, int64_t boot, HaDwarf *dw, guint n, JsonBuilder *j,
			GString *out, GError **error)
{
	g_auto(HaRpBoot) b = { 0 };
	g_autoptr(GArray) cpus = n ? boot_cpus(s, boot, error) : g_array_new(FALSE, FALSE,
										  sizeof(guint));

	if (!cpus || (cpus->len && !ha_rp_boot_load(s, boot, dw, &b, error)))
		return false;
	if (j) {
		json_builder_set_member_name(j, "last_events");
		json_builder_begin_array(j);
	} else if (n) {
		g_string_append_printf(out, "\nThe last %u events of each CPU before the panic,"
				       " oldest first, each [streamed] or [recovered] from the"
				       " guest's memory:\n", n);
		if (!cpus->len)
			g_string_append(out, "none stored\n");
	}
	for (guint c = 0; c < cpus->len; c++) {
		guint cpu = g_array_index(cpus, guint, c);
		g_autoptr(GArray) evs = g_array_new(FALSE, TRUE, sizeof(HaRpEv));
		HaRpDecode d = { .cpu = cpu, .want = n, .since_ns = -1, .until_ns = -1 };
		guint first;

		g_array_set_clear_func(evs, ha_rp_ev_clear);
		if (!ha_rp_decode(&b, &d, evs, error))
			return false;
		first = evs->len > n ? evs->len - n : 0;
		if (j) {
			json_builder_begin_object(j);
			ha_json_member_int(j, "cpu", cpu);
			json_builder_set_member_name(j, "events");
			json_builder_begin_array(j);
		} else {
			g_string_append_printf(out, "\ncpu%u: %u events\n", cpu, evs->len - first);
		}
		for (guint i = first; i < evs->len; i++) {
			const HaRpEv *e = &g_array_index(evs, HaRpEv, i);

			if (j)
				ha_rp_event_json(j, e, b.syms, NULL);
			else
				ha_rp_event_text(out, e, b.syms, NULL, true);
		}
		if (j) {
			json_builder_end_array(j);
			json_builder_end_object(j);
		}
	}
	if (j)
		json_builder_end_array(j);
	return true;
}

/* The boot --boot names, or the newest with a post-mortem, or the newest. */
static int64_t pick_boot(HaStore *s, const HaReportOpts *o, GError **error)
{
	g_autoptr(GArray) ids = NULL;
	int64_t boot = 0;

	if (!o->boot) {
		if (!ha_store_pm_newest_boot(s, &boot, error))
			return -1;
		if (boot > 0)
			return boot;
	}
	ids = ha_rp_select_boots(s, o->boot, error);
	if (!ids)
		return -1;
	if (ids->len == 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no boot %s",
			    o->boot ? o->boot : "in the store");
		return -1;
	}
	return g_array_index(ids, int64_t, ids->len - 1);
}

bool ha_rp_postmortem(HaStore *s, const HaReportOpts *o, HaDwarf *dw, GString *out,
		      GError **error)
{
	g_autoptr(GArray) recs = NULL;
	g_autofree char *uuid = NULL, *end_s = NULL;
	g_autofree char *pm_s = NULL;
	g_auto(HaStoreBootInfo) info = { 0 };
	const char *ended, *release;
	PmRow pm = { 0 };
	int64_t boot, end_time;
	guint panic = G_MAXUINT, start = 0, end = 0, before, limit, per_cpu = PER_CPU_DEFAULT;
	bool ok = true;

	if (o->arg) {
		guint64 n;

		if (!g_ascii_string_to_unsigned(o->arg, 10, 0, PER_CPU_MAX, &n, NULL)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
				    "postmortem %s: the events to show per CPU, 0 to %u", o->arg,
				    PER_CPU_MAX);
			return false;
		}
		per_cpu = (guint)n;
	}
	boot = pick_boot(s, o, error);
	if (boot < 0)
		return false;
	if (!ha_store_boot_info(s, boot, &info, error) ||
	    !(uuid = ha_rp_boot_uuid(s, boot, error)))
		return false;
	ended = info.ended;
	end_time = info.end_us;
	release = info.release;
	if (!ha_store_pm_info(s, boot, &pm, error) || !(recs = load_kmsg(s, boot, error))) {
		ha_store_pm_info_clear(&pm);
		return false;
	}
	/* the panic, the crash report's first record, its last */
	for (guint i = recs->len; i-- > 0;) {
		if (text_starts(&g_array_index(recs, Rec, i), "Kernel panic - not syncing")) {
			panic = i;
			break;
		}
	}
	if (panic != G_MAXUINT) {
		start = panic;
		for (guint i = panic; i > 0 && panic - i < BURST_MAX; i--) {
			const Rec *a = &g_array_index(recs, Rec, i - 1);
			const Rec *b = &g_array_index(recs, Rec, i);

			if (b->ts - a->ts > BURST_GAP_NS || b->ts < a->ts)
				break;
			if (starts_report(a))
				start = i - 1;
		}
		end = panic + 1;
		for (guint i = panic + 1; i < recs->len; i++) {
			if (text_has(&g_array_index(recs, Rec, i), "---[ end Kernel panic")) {
				end = i + 1;
				break;
			}
		}
		if (end == panic + 1)
			end = recs->len;	/* no end line: everything after it */
	} else {
		start = end = recs->len;
	}
	limit = o->limit ? o->limit : BEFORE_DEFAULT;
	before = start > limit ? start - limit : 0;
	end_s = ha_rp_fmt_time(end_time);
	pm_s = ha_rp_fmt_time(pm.time);
	if (o->json) {
		g_autoptr(JsonBuilder) b = json_builder_new();
		g_autoptr(GString) oops = g_string_new(NULL);

		append_lines(oops, recs, start, end, false);
		json_builder_begin_object(b);
		ha_json_member_int(b, "boot", boot);
		ha_json_member_str(b, "boot_id", uuid);
		ha_json_member_str(b, "kernel", release);
		ha_json_member_str(b, "ended", ended ? ended : "running");
		ha_json_member_int(b, "end_time_us", end_time);
		json_builder_set_member_name(b, "postmortem");
		if (!pm.found) {
			json_builder_add_null_value(b);
		} else {
			json_builder_begin_object(b);
			ha_json_member_str(b, "status", pm.status);
			ha_json_member_str(b, "source", pm.source);
			ha_json_member_str(b, "message", pm.message);
			ha_json_member_int(b, "time_us", pm.time);
			ha_json_member_int(b, "dump_bytes", pm.dump_bytes);
			ha_json_member_int(b, "dump_ms", pm.dump_ms);
			ha_json_member_int(b, "recover_ms", pm.recover_ms);
			ha_json_member_str(b, "osrelease", pm.osrelease);
			ha_json_member_int(b, "kernel_offset", pm.kernel_offset);
			ha_json_member_int(b, "kmsg_records", pm.records);
			ha_json_member_int(b, "kmsg_skipped", pm.skipped);
			json_replay(b, &pm);
			json_builder_end_object(b);
		}
		json_builder_set_member_name(b, "panic");
		if (panic == G_MAXUINT) {
			json_builder_add_null_value(b);
		} else {
			const Rec *r = &g_array_index(recs, Rec, panic);
			gsize len;
			const char *t = g_bytes_get_data(r->text, &len);
			g_autofree char *p = g_strndup(t, len);

			ha_json_add_str(b, p);
		}
		ha_json_member_str(b, "oops_text", oops->str);
		json_recs(b, "oops", recs, start, end);
		json_recs(b, "before", recs, before, start);
		if (pm.found)
			ok = last_events(s, boot, dw, per_cpu, b, NULL, error);
		else
			ha_json_member_str(b, "events", "not recovered yet: only the kernel log is");
		json_builder_end_object(b);
		if (ok) {
			ha_json_append(out, b);
			g_string_append_c(out, '\n');
		}
		ha_store_pm_info_clear(&pm);
		return ok;
	}
	g_string_append_printf(out, "Boot %" PRId64 " (%s, kernel %s) ended %s at %s UTC\n",
			       boot, uuid, release ? release : "?", ended ? ended : "running"
			       " (not ended)", end_s);
	if (!pm.found) {
		g_string_append(out, "Post-mortem: none (the guest's memory was not read: no"
				" --qmp or libvirt domain, a panic action other than pause or"
				" preserve, or not a crash)\n");
		ha_store_pm_info_clear(&pm);
		return true;
	}
	g_string_append_printf(out, "Post-mortem: %s, %s at %s UTC", pm.status, pm.source,
			       pm_s);
	if (pm.dump_bytes > 0)
		g_string_append_printf(out, ": %" PRId64 " MiB of guest memory", pm.dump_bytes >> 20);
	if (pm.dump_ms >= 0)
		g_string_append_printf(out, ", dumped in %.1f s", pm.dump_ms / 1e3);
	if (pm.recover_ms >= 0)
		g_string_append_printf(out, ", read in %.3f s", pm.recover_ms / 1e3);
	g_string_append_c(out, '\n');
	if (pm.osrelease || pm.kernel_offset >= 0)
		g_string_append_printf(out, "Dump's kernel: %s, KASLR offset 0x%" PRIx64 "\n",
				       pm.osrelease ? pm.osrelease : "?",
				       (uint64_t)MAX(pm.kernel_offset, 0));
	if (pm.message)
		g_string_append_printf(out, "Not recovered: %s\n", pm.message);
	g_string_append_printf(out, "Kernel log: %" PRId64 " records recovered", pm.records);
	if (pm.skipped)
		g_string_append_printf(out, ", %" PRId64 " unreadable", pm.skipped);
	g_string_append_printf(out, "\nEvents after the last streamed ones: %" PRId64
			       " recovered\n", pm.events_stored);
	if (panic == G_MAXUINT) {
		g_string_append(out, "\nNo panic message in the recovered log. Its last lines:\n");
		append_lines(out, recs, recs->len > limit ? recs->len - limit : 0, recs->len,
			     true);
	} else {
		const Rec *r = &g_array_index(recs, Rec, panic);
		gsize len;
		const char *t = g_bytes_get_data(r->text, &len);

		g_string_append_printf(out, "\nPanic: %.*s\n", (int)MIN(len, 4096), t);
		g_string_append_printf(out, "\nThe crash report (%u lines of the kernel log):\n",
				       end - start);
		append_lines(out, recs, start, end, true);
		g_string_append_printf(out, "\nThe %u lines before it:\n", start - before);
		append_lines(out, recs, before, start, true);
	}
	append_replay(out, &pm);
	ok = last_events(s, boot, dw, per_cpu, NULL, out, error);
	ha_store_pm_info_clear(&pm);
	return ok;
}
