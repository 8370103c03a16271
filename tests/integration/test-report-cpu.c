// SPDX-License-Identifier: MIT
/*
 * Unit tests of ha_report_cpu_events() (report.h), what the ClickHouse replication
 * reads a CPU's events through, over a real store written by a real HaConn (frames fed
 * directly, as test-ingest.c does):
 *
 * - the guest agent's clock-probe markers (ftrace/print "stackmap-time <id>") are
 *   neither given nor paired, and keep their ordinal in their page, so the other
 *   events' (page, idx) keys are those of the page's layout; a user's own trace_marker
 *   write is an event like any other;
 * - exactly the events `report events --json` shows, with the same stacks; in the
 *   order the pairer finishes them (a nested event before the one it interrupted);
 * - any range of pages gives the same events as the whole walk;
 * - an event before frames the guest dropped has its stack "lost", as in events;
 * - an event traced without a stack (before options/stacktrace was set) is finished
 *   stackless by the next event of its CPU's task context, in the stored pairing state
 *   too: it is never "waiting" (issue 19), while the stream's last event, whose stack
 *   the crash cut, is waiting and on the tail.
 *
 * And the events a post-mortem recovered (its chunks marked recovered, issue 17): from
 * the CPU's oldest recovered chunk on, each event is recovered in this walk, in events
 * (JSON and text) and in report postmortem's last events per CPU, the others streamed;
 * report postmortem shows the replay's figures of the postmortems row.
 */
#include <glib/gstdio.h>
#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "conn-feed.h"
#include "guest-formats.h"
#include "ingest.h"
#include "proto.h"
#include "report.h"
#include "ringpage.h"
#include "store-postmortem.h"
#include "tap.h"
#include "store-int.h"

#define IP0	UINT64_C(0xffffffff81000100)

typedef struct {
	uint64_t page;
	uint32_t idx;
	uint64_t ts;
	int pid;
	char *text;
	char *kind;
	char *stack_json;
	int64_t stack_id;
	bool tail;
	bool waiting;
	bool recovered;
} Got;

static void got_clear(gpointer p)
{
	Got *g = p;

	g_free(g->text);
	g_free(g->kind);
	g_free(g->stack_json);
}

static void on_event(const HaReportEvent *e, void *user)
{
	GArray *a = user;
	Got g = { .page = e->page, .idx = e->idx, .ts = e->ts, .pid = e->pid,
		  .text = g_strdup(e->text), .kind = g_strdup(e->stack_kind),
		  .stack_json = g_strdup(e->stack_json), .stack_id = e->stack_id,
		  .tail = e->tail, .waiting = e->waiting, .recovered = e->recovered };

	g_array_append_val(a, g);
}

static GArray *walk(HaStore *s, uint64_t from, uint64_t to, uint64_t *pages)
{
	GArray *a = g_array_new(FALSE, TRUE, sizeof(Got));
	g_autoptr(GError) e = NULL;

	g_array_set_clear_func(a, got_clear);
	if (!ha_report_cpu_events(s, 1, 0, from, to, on_event, a, pages, &e))
		printf("# ha_report_cpu_events: %s\n", e->message);
	return a;
}

static void put_common(uint8_t *d, uint16_t type, uint8_t flags, int32_t pid)
{
	memcpy(d, &type, 2);
	d[2] = flags;
	d[3] = 0;
	memcpy(d + 4, &pid, 4);
}

static void add_kmalloc(struct ringpage *rp, uint64_t ts, uint8_t flags, int32_t pid,
			uint64_t bytes)
{
	uint8_t d[52] = { 0 };
	uint64_t site = IP0, ptr = UINT64_C(0xffff888000001000) + ts;

	put_common(d, GF_ID_KMALLOC, flags, pid);
	memcpy(d + 8, &site, 8);
	memcpy(d + 16, &ptr, 8);
	memcpy(d + 24, &bytes, 8);
	memcpy(d + 32, &bytes, 8);
	g_assert(ringpage_add(rp, ts, d, sizeof(d)));
}

static void add_stack_id(struct ringpage *rp, uint64_t ts, uint8_t flags, int32_t pid,
			 uint32_t id)
{
	uint8_t d[12];

	put_common(d, GF_ID_STACK_ID, flags, pid);
	memcpy(d + 8, &id, 4);
	g_assert(ringpage_add(rp, ts, d, sizeof(d)));
}

/* A trace_marker write of @text (the kernel ends it with a newline). */
static void add_print(struct ringpage *rp, uint64_t ts, int32_t pid, const char *text)
{
	uint8_t d[64] = { 0 };
	size_t n = strlen(text);
	uint64_t ip = IP0 + 0x40;

	g_assert(16 + n + 2 <= sizeof(d));
	put_common(d, GF_ID_PRINT, 0, pid);
	memcpy(d + 8, &ip, 8);
	memcpy(d + 16, text, n);
	d[16 + n] = '\n';
	g_assert(ringpage_add(rp, ts, d, (uint32_t)(16 + n + 2)));
}

static void add_marker(struct ringpage *rp, uint64_t ts, int32_t pid, uint64_t probe)
{
	char m[SMP_TIME_MARKER_LEN + 1];

	g_assert(smp_time_marker(probe, m, sizeof(m)) > 0);
	add_print(rp, ts, pid, m);
}

static bool send_page(HaConn *c, uint64_t seq, struct ringpage *rp, GError **error)
{
	uint8_t p[SMP_PAGE_FIXED + 4096];
	struct smp_page m = { .cpu = 0, .data = rp->buf, .data_len = ringpage_finish(rp) };
	long n = smp_page_encode(&m, p, sizeof(p));

	return n > 0 && conn_send_frame(c, SMP_PAGE, seq, p, (size_t)n, error);
}

static bool send_format(HaConn *c, uint64_t seq, const struct gf_format *f, GError **error)
{
	g_autofree uint8_t *p = g_malloc(SMP_MAX_PAYLOAD);
	struct smp_format m = { .name = f->name, .name_len = (uint16_t)strlen(f->name),
				.text = f->text, .text_len = strlen(f->text) };
	long n = smp_format_encode(&m, p, SMP_MAX_PAYLOAD);

	return n > 0 && conn_send_frame(c, SMP_FORMAT, seq, p, (size_t)n, error);
}

/*
 * The stream, CPU 0 (pid 5 is a shell enabling the events, 7 and 8 the workload):
 *   page 0: A kmalloc (5, traced before options/stacktrace), marker, B kmalloc (7),
 *           B's stack_id, "hello" trace_marker write (7), marker, C kmalloc (7, 8 bytes),
 *           irq{ H kmalloc without a stack }, C's stack_id
 *   page 1: marker, D kmalloc (8), D's stack_id, E kmalloc (8)
 *   a frame the guest dropped (E's stack event was in it)
 *   page 2: F kmalloc (8), F's stack_id, G kmalloc (8): the stream ends there (no BYE:
 *           a crash before G's stack event)
 * As ordinals: page 0 A 0, marker 1, B 2, stack 3, hello 4, marker 5, C 6, H 7,
 * stack 8; page 1 marker 0, D 1, stack 2, E 3; page 2 F 0, stack 1, G 2.
 */
static bool stream(HaStore *s, GError **error)
{
	static const uint8_t boot_id[16] = { 0x19, 0x19 };
	HaLimits lim;
	g_autoptr(HaConn) c = NULL;
	uint8_t hello[128], page[4096], st[256], ep[SMP_DELTA_EPOCH_SIZE];
	struct smp_hello h = {
		.stream_id = 19, .text_addr = 0xffffffff81000000ull, .nr_cpus = 1,
		.page_size = 4096, .map_bits = 10, .max_depth = 64,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	uint64_t ips[2] = { IP0, IP0 + 0x200 }, seq = 1;
	uint32_t id1 = smp_id_make(0, 1), id2 = smp_id_make(0, 2);
	struct ringpage rp;
	size_t stl = 0;
	long n;

	ha_limits_default(&lim);
	c = ha_conn_new(s, &lim, "t", "test");
	memcpy(h.boot_id, boot_id, 16);
	n = smp_hello_encode(&h, hello, sizeof(hello));
	if (!conn_send_frame(c, SMP_HELLO, 0, hello, (size_t)n, error))
		return false;
	for (unsigned int i = 0; i < gf_nr_formats; i++)
		if (!send_format(c, seq++, &gf_formats[i], error))
			return false;
	if (!send_format(c, seq++, &gf_print, error))
		return false;
	n = smp_delta_put_epoch(ep, sizeof(ep), 0, 0);
	if (!conn_send_frame(c, SMP_EPOCH, seq++, ep, (size_t)n, error))
		return false;
	stl += (size_t)smp_delta_put_stack(st + stl, sizeof(st) - stl, id1, 1, ips, 2);
	ips[0] += 0x10;
	stl += (size_t)smp_delta_put_stack(st + stl, sizeof(st) - stl, id2, 1, ips, 2);
	if (!conn_send_frame(c, SMP_STACKS, seq++, st, stl, error))
		return false;

	ringpage_init(&rp, page, sizeof(page));
	ringpage_reset(&rp, 1000);
	add_kmalloc(&rp, 1000, 0, 5, 64);		/* A */
	add_marker(&rp, 1100, 5, 0x1234);
	add_kmalloc(&rp, 1200, 0, 7, 32);		/* B */
	add_stack_id(&rp, 1210, 0, 7, id1);
	add_print(&rp, 1300, 7, "hello");
	add_marker(&rp, 1400, 1, 0x1235);
	add_kmalloc(&rp, 1500, 0, 7, 8);		/* C */
	add_kmalloc(&rp, 1505, 0x08, 7, 16);		/* H, in a hardirq */
	add_stack_id(&rp, 1510, 0, 7, id2);
	if (!send_page(c, seq++, &rp, error) || !ha_conn_flush(c, error))
		return false;	/* a commit: page 1 goes into a chunk of its own */
	ringpage_reset(&rp, 2000);
	add_marker(&rp, 2000, 1, 0x1236);
	add_kmalloc(&rp, 2100, 0, 8, 128);		/* D */
	add_stack_id(&rp, 2110, 0, 8, id1);
	add_kmalloc(&rp, 2200, 0, 8, 256);		/* E */
	if (!send_page(c, seq++, &rp, error))
		return false;
	seq++;						/* dropped */
	ringpage_reset(&rp, 3000);
	add_kmalloc(&rp, 3000, 0, 8, 512);		/* F */
	add_stack_id(&rp, 3010, 0, 8, id2);
	add_kmalloc(&rp, 3100, 0, 8, 1024);		/* G */
	if (!send_page(c, seq++, &rp, error))
		return false;
	return ha_conn_flush(c, error);	/* committed; then the connection just ends */
}

static bool same(const Got *a, const Got *b)
{
	return a->page == b->page && a->idx == b->idx && a->ts == b->ts &&
	       !strcmp(a->text, b->text) && !strcmp(a->stack_json, b->stack_json) &&
	       a->waiting == b->waiting;
}

/* ha_report() of @o into a new string, NULL (said) on an error. */
static GString *run_report(HaStore *s, const HaReportOpts *o)
{
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(GError) e = NULL;

	if (!ha_report(s, o, out, &e)) {
		printf("# report %s: %s\n", o->cmd, e->message);
		return NULL;
	}
	return g_steal_pointer(&out);
}

static guint count_of(const char *hay, const char *needle)
{
	guint n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/*
 * The pages from ts 2000 on (pages 1 and 2: D, E, F, G) recovered from the crashed
 * guest's memory, the first (A, B, hello, C, H) streamed; a postmortems row for the
 * boot with its replay's figures.
 */
static void check_recovered(HaStore *s)
{
	static const uint64_t rec_ts[] = { 2100, 2200, 3000, 3100 };	/* D E F G */
	g_autoptr(GError) e = NULL;
	g_autoptr(GArray) all = NULL;
	g_autoptr(GString) ej = NULL, et = NULL, pt = NULL, pj = NULL, none = NULL;
	g_autoptr(JsonParser) jp = json_parser_new();
	HaReportOpts ev = { .cmd = "events", .json = true, .limit = 1000, .since_ns = -1,
			    .until_ns = -1 };
	HaReportOpts pm = { .cmd = "postmortem", .arg = "6", .since_ns = -1, .until_ns = -1 };
	HaPmRow row = { .time_us = 1000000, .source = "test", .status = "partial",
			.message = "the stack map: test", .dump_bytes = 1 << 20, .dump_ms = 5,
			.recover_ms = 1, .kernel_offset = -1, .stream = 1, .seam_seq = 12,
			.arena_frames = 3, .ring_pages = 2, .ring_events = 7, .map_records = 4,
			.frames_stored = 2, .frames_dup = 1, .events_stored = 7 };
	uint64_t pages;
	bool ok = true;
	guint nrec = 0;

	/* before a post-mortem: no event recovered, report postmortem as it was */
	all = walk(s, 0, 100, &pages);
	for (guint i = 0; i < all->len; i++)
		ok = ok && !g_array_index(all, Got, i).recovered;
	none = run_report(s, &pm);
	ok = ok && all->len == 9 && none && strstr(none->str, "Post-mortem: none") &&
	     !strstr(none->str, "Replay") && !strstr(none->str, "[streamed]");
	CHECK(ok, "without recovered chunks no event is recovered; postmortem without one: %s",
	      ok ? "ok" : none ? none->str : "-");
	g_clear_pointer(&all, g_array_unref);

	CHECK(ha_store_exec(s, "UPDATE chunks SET recovered = 1 WHERE boot = 1 AND"
			    " ts_min >= 2000", &e) &&
	      sqlite3_changes(ha_store_db(s)) == 1, "the chunk of pages 1-2 marked recovered"
	      " (%s)", e ? e->message : "ok");
	all = walk(s, 0, 100, &pages);
	ok = all->len == 9;
	for (guint i = 0; ok && i < all->len; i++) {
		const Got *g = &g_array_index(all, Got, i);

		ok = g->recovered == (g->ts >= 2000);
		if (!ok)
			printf("# %" PRIu64 ": recovered %d\n", g->ts, g->recovered);
	}
	CHECK(ok, "ha_report_cpu_events(): D, E, F, G recovered, the others streamed");

	/* events --json: the member on each event; text: the tag on the recovered */
	ej = run_report(s, &ev);
	ok = ej && json_parser_load_from_data(jp, ej->str, (gssize)ej->len, NULL);
	if (ok) {
		JsonArray *a = json_object_get_array_member(
			json_node_get_object(json_parser_get_root(jp)), "events");

		ok = json_array_get_length(a) == 9;
		for (guint i = 0; ok && i < json_array_get_length(a); i++) {
			JsonObject *o = json_array_get_object_element(a, i);
			uint64_t ts = (uint64_t)json_object_get_int_member(o, "ts");

			ok = json_object_has_member(o, "recovered") &&
			     json_object_get_boolean_member(o, "recovered") == (ts >= 2000);
			nrec += ok && ts >= 2000;
		}
	}
	ok = ok && nrec == 4;
	CHECK(ok, "events --json: \"recovered\" true on the 4 recovered, false"
	      " on the 5 streamed: %s", ok ? "ok" : ej ? ej->str : "-");
	ev.json = false;
	et = run_report(s, &ev);
	ok = et && count_of(et->str, " [recovered]  ") == 4 &&
	     !strstr(et->str, "[streamed]");
	for (guint i = 0; ok && i < G_N_ELEMENTS(rec_ts); i++) {
		g_autofree char *l = g_strdup_printf("\n0.%09" PRIu64 " cpu0 pid 8 [recovered]"
						     "  kmem/kmalloc: ", rec_ts[i]);

		ok = strstr(et->str, l) != NULL;
	}
	ok = ok && strstr(et->str, "\n0.000001000 cpu0 pid 5  kmem/kmalloc: ");
	CHECK(ok, "events: [recovered] after the cpu and pid of D, E, F, G only: %s",
	      ok ? "ok" : et ? et->str : "-");

	/* postmortem: the replay's figures, the last 6 events of CPU 0 */
	CHECK(ha_store_pm_save(s, 1, &row, NULL, &e), "a postmortems row (%s)",
	      e ? e->message : "ok");
	pt = run_report(s, &pm);
	ok = pt && strstr(pt->str, "Events after the last streamed ones: 7 recovered\n") &&
	     strstr(pt->str, "\nReplay of what had not been streamed (post-mortem partial):"
		    " into stream 1 from seq 12 (the seam)\n"
		    "  the guest agent's window: 3 frames found (acknowledged ones too, until"
		    " overwritten)\n"
		    "  the ring buffers: 2 pages no reader had consumed, 7 events\n"
		    "  the stack map: 4 records (those not read, and the live map whole)\n"
		    "  frames stored: 2, already streamed: 1 (duplicates), events stored: 7\n") &&
	     strstr(pt->str, "\nThe last 6 events of each CPU before the panic") &&
	     strstr(pt->str, "\ncpu0: 6 events\n") &&
	     count_of(pt->str, " [streamed]  ") == 2 && count_of(pt->str, " [recovered]  ") == 4 &&
	     strstr(pt->str, "\n0.000001500 cpu0 pid 7 [streamed]  kmem/kmalloc: ") &&
	     strstr(pt->str, "\n0.000002100 cpu0 pid 8 [recovered]  kmem/kmalloc: ");
	CHECK(ok, "postmortem: the replay's figures and the last 6 events (C, H streamed;"
	      " D..G recovered): %s", ok ? "ok" : pt ? pt->str : "-");

	pm.json = true;
	pm.arg = NULL;	/* the default: 5 per CPU */
	pj = run_report(s, &pm);
	ok = pj && json_parser_load_from_data(jp, pj->str, (gssize)pj->len, NULL);
	if (ok) {
		JsonObject *root = json_node_get_object(json_parser_get_root(jp));
		JsonObject *r = json_object_get_object_member(root, "postmortem");
		JsonArray *last = json_object_get_array_member(root, "last_events");
		JsonArray *evs = NULL;
		static const uint64_t want_ts[] = { 1505, 2100, 2200, 3000, 3100 };

		ok = r && json_object_get_int_member(r, "stream") == 1 &&
		     json_object_get_int_member(r, "seam_seq") == 12 &&
		     json_object_get_int_member(r, "arena_frames") == 3 &&
		     json_object_get_int_member(r, "ring_pages") == 2 &&
		     json_object_get_int_member(r, "ring_events") == 7 &&
		     json_object_get_int_member(r, "map_records") == 4 &&
		     json_object_get_int_member(r, "frames_stored") == 2 &&
		     json_object_get_int_member(r, "frames_dup") == 1 &&
		     json_object_get_int_member(r, "events_stored") == 7 &&
		     !json_object_has_member(root, "events") && last &&
		     json_array_get_length(last) == 1;
		if (ok) {
			JsonObject *c = json_array_get_object_element(last, 0);

			evs = json_object_get_array_member(c, "events");
			ok = json_object_get_int_member(c, "cpu") == 0 && evs &&
			     json_array_get_length(evs) == G_N_ELEMENTS(want_ts);
		}
		for (guint i = 0; ok && i < G_N_ELEMENTS(want_ts); i++) {
			JsonObject *o = json_array_get_object_element(evs, i);
			JsonObject *st = json_object_get_object_member(o, "stack");

			ok = (uint64_t)json_object_get_int_member(o, "ts") == want_ts[i] &&
			     json_object_get_boolean_member(o, "recovered") == (i > 0) && st &&
			     json_object_has_member(st, "kind");
		}
		/* the same objects as events --json's */
		for (guint i = 0; ok && i < G_N_ELEMENTS(want_ts); i++) {
			g_autoptr(JsonGenerator) gen = json_generator_new();
			g_autofree char *one = NULL;

			json_generator_set_root(gen, json_array_get_element(evs, i));
			one = json_generator_to_data(gen, NULL);
			ok = strstr(ej->str, one) != NULL;
			if (!ok)
				printf("# not in events --json: %s\n", one);
		}
	}
	CHECK(ok, "postmortem --json: the row's replay members, last_events of CPU 0 (5 by"
	      " default, H streamed, D..G recovered) as events --json has them: %s",
	      ok ? "ok" : pj ? pj->str : "-");
	{
		g_autoptr(GString) out = g_string_new(NULL);
		g_autoptr(GError) be = NULL;

		pm.arg = "many";
		CHECK(!ha_report(s, &pm, out, &be) && be && strstr(be->message, "per CPU"),
		      "postmortem many: refused (%s)", be ? be->message : "accepted");
	}
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-report-cpu-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "t.db", NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(HaStore) s = ha_store_open(path, false, &e);
	g_autoptr(GArray) all = NULL, lo = NULL, hi = NULL, mid = NULL;
	g_autoptr(GString) js = g_string_new(NULL);
	g_autoptr(JsonParser) jp = json_parser_new();
	g_autofree char *wal = g_strconcat(path, "-wal", NULL);
	g_autofree char *shm = g_strconcat(path, "-shm", NULL);
	HaReportOpts o = { .cmd = "events", .json = true, .limit = 1000, .since_ns = -1,
			  .until_ns = -1 };
	uint64_t pages = 0, p2 = 0;
	static const struct {
		uint64_t page;
		uint32_t idx;
		uint64_t ts;
		int pid;
		const char *kind;
		int64_t id;
		bool tail, waiting;
	} want[] = {
		{ 0, 0, 1000, 5, "none", -1, false, false },	/* A */
		{ 0, 2, 1200, 7, "stack_id", 1, false, false },	/* B */
		{ 0, 4, 1300, 7, "none", -1, false, false },	/* hello */
		{ 0, 7, 1505, 7, "none", -1, false, false },	/* H */
		{ 0, 6, 1500, 7, "stack_id", 2, false, false },	/* C */
		{ 1, 1, 2100, 8, "stack_id", 1, true, false },	/* D */
		{ 1, 3, 2200, 8, "lost", -1, true, false },	/* E */
		{ 2, 0, 3000, 8, "stack_id", 2, true, false },	/* F */
		{ 2, 2, 3100, 8, "none", -1, true, true },	/* G */
	};
	bool ok = true;

	CHECK(s && stream(s, &e), "a boot streamed into a real store: %s",
	      e ? e->message : "ok");
	if (!s)
		return tap_done();

	all = walk(s, 0, 100, &pages);
	CHECK(pages == 3, "the CPU has 3 stored pages (%" PRIu64 ")", pages);
	CHECK(all->len == G_N_ELEMENTS(want), "9 events given, no marker among them (%u)",
	      all->len);
	for (guint i = 0; i < MIN(all->len, G_N_ELEMENTS(want)); i++) {
		const Got *g = &g_array_index(all, Got, i);

		ok = ok && g->page == want[i].page && g->idx == want[i].idx &&
		     g->ts == want[i].ts && g->pid == want[i].pid &&
		     !strcmp(g->kind, want[i].kind) &&
		     (want[i].id < 0 ? g->stack_id == -1 :
		      g->stack_id == (int64_t)smp_id_make(0, (uint32_t)want[i].id)) &&
		     g->tail == want[i].tail && g->waiting == want[i].waiting;
		if (!ok) {
			printf("# event %u: page %" PRIu64 " idx %u ts %" PRIu64 " pid %d %s"
			       " id %" PRId64 " tail %d waiting %d\n", i, g->page, g->idx,
			       g->ts, g->pid, g->kind, g->stack_id, g->tail, g->waiting);
			break;
		}
	}
	CHECK(ok, "each event's (page, idx) key counts the markers, its stack, tail and"
	      " waiting are the stream's; the stack of the event before the dropped frame"
	      " is lost");
	ok = true;
	for (guint i = 0; i < all->len; i++) {
		const Got *g = &g_array_index(all, Got, i);

		ok = ok && !strstr(g->text, SMP_TIME_MARKER);
	}
	CHECK(ok && all->len > 2 && strstr(g_array_index(all, Got, 2).text, "hello"),
	      "no marker text given; the user's trace_marker write is: %s",
	      all->len > 2 ? g_array_index(all, Got, 2).text : "-");
	ok = all->len == G_N_ELEMENTS(want);
	for (guint i = 0; i < all->len; i++) {
		const Got *g = &g_array_index(all, Got, i);

		if (g->ts == 1000 || g->ts == 1300)	/* A, hello */
			ok = ok && !g->waiting && !strstr(g->stack_json, "stream ended");
		if (g->ts == 3100)			/* G */
			ok = ok && g->waiting && strstr(g->stack_json, "stream ended");
	}
	CHECK(ok, "the events traced without a stack are not waiting for one; the last,"
	      " whose stack the crash cut, is");

	/* the same events as `report events --json`, with the same stacks */
	CHECK(ha_report(s, &o, js, &e), "report events --json: %s", e ? e->message : "ok");
	ok = json_parser_load_from_data(jp, js->str, (gssize)js->len, NULL);
	if (ok) {
		JsonObject *root = json_node_get_object(json_parser_get_root(jp));
		JsonArray *evs = json_object_get_array_member(root, "events");

		ok = json_array_get_length(evs) == all->len;
		if (!ok)
			printf("# %u events: %s\n", json_array_get_length(evs), js->str);
		for (guint i = 0; ok && i < all->len; i++) {
			JsonObject *ev = json_array_get_object_element(evs, i);
			g_autoptr(JsonGenerator) gen = json_generator_new();
			g_autofree char *stack = NULL;
			const Got *g = NULL;

			/* events is in time order */
			for (guint k = 0; k < all->len; k++)
				if (g_array_index(all, Got, k).ts ==
				    (uint64_t)json_object_get_int_member(ev, "ts"))
					g = &g_array_index(all, Got, k);
			if (!g) {
				ok = false;
				printf("# events[%u]: not given: %s\n", i, js->str);
				break;
			}

			json_generator_set_root(gen, json_object_get_member(ev, "stack"));
			stack = json_generator_to_data(gen, NULL);
			ok = (uint64_t)json_object_get_int_member(ev, "ts") == g->ts &&
			     !strcmp(json_object_get_string_member(ev, "event"), g->text) &&
			     !strcmp(stack, g->stack_json);
			if (!ok)
				printf("# events[%u]: %s\n#   vs %" PRIu64 " %s %s\n", i,
				       js->str, g->ts, g->text, g->stack_json);
		}
	}
	CHECK(ok, "report events shows exactly these events and stacks");

	/* any range gives what the whole walk gives for its pages */
	lo = walk(s, 0, 1, &p2);
	hi = walk(s, 1, 3, &p2);
	mid = walk(s, 1, 1, &p2);
	ok = lo->len + hi->len == all->len && mid->len == 0;
	for (guint i = 0; ok && i < all->len; i++)
		ok = same(&g_array_index(all, Got, i),
			  i < lo->len ? &g_array_index(lo, Got, i) :
			  &g_array_index(hi, Got, i - lo->len));
	g_array_unref(mid);
	mid = walk(s, 2, 3, &p2);
	ok = ok && mid->len == 2 && same(&g_array_index(mid, Got, 0),
					 &g_array_index(all, Got, all->len - 2)) &&
	     same(&g_array_index(mid, Got, 1), &g_array_index(all, Got, all->len - 1));
	CHECK(ok, "pages [0,1) and [1,3) give the whole walk's events (%u + %u of %u),"
	      " [1,1) none, [2,3) its last 2", lo->len, hi->len, all->len);
	check_recovered(s);

	ha_store_free(g_steal_pointer(&s));
	g_unlink(path);
	g_unlink(wal);
	g_unlink(shm);
	g_rmdir(dir);
	return tap_done();
}
