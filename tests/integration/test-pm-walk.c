// SPDX-License-Identifier: MIT
/*
 * test-pm-walk: the post-mortem walks of the trace buffer (pm-ring.h) and of the
 * stack map (pm-map.h) on synthetic cores whose content is known (coregen.h).
 *
 * The frames they add are decoded with proto's decoder, the PAGE frames walked with
 * libtraceevent's kbuffer (as tep.c does; not with pm-ring's own walk), and compared
 * with the ground truth: per CPU, in order, exactly the events no reader consumed,
 * with their payloads and absolute time stamps; the reader page rebased on the last
 * consumed event; every map record, in the order the delta reader would have
 * returned them. Each corrupted core must fail cleanly or say in the stats which CPU
 * or part failed, keeping what came before, and read only a bounded part of the core
 * (the -asan build checks that nothing outside it is read).
 */
#include <gio/gio.h>
#include <string.h>
#include <traceevent/kbuffer.h>

#include "coredump.h"
#include "coregen.h"
#include "kvmem.h"
#include "pm-frames.h"
#include "pm-map.h"
#include "pm-ring.h"
#include "proto.h"
#include "tap.h"
#include "vmcoreinfo.h"

#define FIRST_SEQ	1000

typedef struct {
	uint8_t *buf;
	size_t len;
	HaCore *core;
	HaVmci *vi;
	HaKvmem *m;
	CoregenTruth t;
} Dump;

static bool dump_open(Dump *d, const CoregenOpts *o)
{
	g_autoptr(GError) e = NULL;
	const uint8_t *note;
	size_t nl;

	memset(d, 0, sizeof(*d));
	d->buf = coregen_build_truth(o, &d->len, &d->t);
	d->core = ha_core_open_mem(d->buf, d->len, &e);
	note = d->core ? ha_core_note(d->core, "VMCOREINFO", 0, &nl) : NULL;
	d->vi = note ? ha_vmci_parse(note, nl, &e) : NULL;
	d->m = d->vi ? ha_kvmem_new(d->core, d->vi, &e) : NULL;
	if (!d->m)
		CHECK(0, "the synthetic core opens: %s", e ? e->message : "no VMCOREINFO");
	return d->m != NULL;
}

static void dump_close(Dump *d)
{
	g_clear_pointer(&d->m, ha_kvmem_free);
	g_clear_pointer(&d->vi, ha_vmci_free);
	g_clear_pointer(&d->core, ha_core_free);
	g_clear_pointer(&d->buf, g_free);
	coregen_truth_clear(&d->t);
}

/* ---- frames ------------------------------------------------------------------- */

typedef struct {
	uint8_t type;
	uint64_t seq;
	GBytes *payload;
} Frame;

static void frame_clear(gpointer p)
{
	g_bytes_unref(((Frame *)p)->payload);
}

/* Every frame of @f through proto's decoder; NULL when one does not decode whole,
 * or the seqs do not follow each other from FIRST_SEQ. */
static GArray *decode(const HaPmFrames *f, char **why)
{
	GArray *out = g_array_new(FALSE, TRUE, sizeof(Frame));
	struct smp_decoder *d = smp_decoder_new(0);
	size_t fed = 0;

	g_array_set_clear_func(out, frame_clear);
	for (;;) {
		struct smp_frame fr;
		int r = smp_decoder_next(d, &fr, NULL);

		if (r == 1) {
			Frame x = { .type = fr.type, .seq = fr.seq,
				    .payload = g_bytes_new(fr.payload, fr.len) };

			g_array_append_val(out, x);
			if (x.seq != FIRST_SEQ + out->len - 1) {
				*why = g_strdup_printf("frame %u has seq %" G_GUINT64_FORMAT,
						       out->len - 1, x.seq);
				goto bad;
			}
			continue;
		}
		if (r < 0) {
			*why = g_strdup_printf("the decoder: %s", smp_strerror(r));
			goto bad;
		}
		if (fed == f->out->len)
			break;
		fed += smp_decoder_feed(d, f->out->data + fed, f->out->len - fed);
	}
	if (smp_decoder_pending(d) || out->len != f->frames) {
		*why = g_strdup_printf("%zu bytes left, %u frames of %" G_GUINT64_FORMAT,
				       smp_decoder_pending(d), out->len, f->frames);
		goto bad;
	}
	smp_decoder_free(d);
	return out;
bad:
	smp_decoder_free(d);
	g_array_unref(out);
	return NULL;
}

/* ---- the ring buffers --------------------------------------------------------- */

typedef struct {
	uint32_t pages[COREGEN_MAX_CPUS];
	uint64_t first_ts[COREGEN_MAX_CPUS];	/* the first page's time stamp */
	uint64_t bytes;
	GArray *events;				/* CoregenEvent, in frame order */
	char *why;				/* the first thing wrong */
} Pages;

static void pages_clear(Pages *p)
{
	g_clear_pointer(&p->events, g_array_unref);
	g_clear_pointer(&p->why, g_free);
}

/* The PAGE frames of @fr walked with kbuffer, as host-agent's tep.c walks pages. */
static void walk_pages(GArray *fr, Pages *p)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	uint8_t page[COREGEN_PAGE_SIZE + 64];
	int64_t last_cpu = -1;

	memset(p, 0, sizeof(*p));
	p->events = g_array_new(FALSE, TRUE, sizeof(CoregenEvent));
	for (guint i = 0; i < fr->len && !p->why; i++) {
		const Frame *x = &g_array_index(fr, Frame, i);
		struct smp_page pg;
		gsize len;
		const uint8_t *b = g_bytes_get_data(x->payload, &len);
		unsigned long long ts;
		uint64_t commit;
		void *ev;

		if (x->type != SMP_PAGE || smp_page_decode(&pg, b, len) < 0 ||
		    pg.cpu >= COREGEN_MAX_CPUS || pg.data_len > COREGEN_PAGE_SIZE) {
			p->why = g_strdup_printf("frame %u: type %u, not a valid PAGE", i, x->type);
			break;
		}
		if ((int64_t)pg.cpu < last_cpu) {
			p->why = g_strdup_printf("frame %u: cpu %u after cpu %" G_GINT64_FORMAT,
						 i, pg.cpu, last_cpu);
			break;
		}
		memcpy(&commit, pg.data + 8, 8);
		if (commit != pg.data_len - 16) {
			p->why = g_strdup_printf("frame %u: commit %#" G_GINT64_MODIFIER "x for %zu"
						 " bytes of data", i, commit, pg.data_len - 16);
			break;
		}
		if (!p->pages[pg.cpu])
			memcpy(&p->first_ts[pg.cpu], pg.data, 8);
		last_cpu = pg.cpu;
		p->pages[pg.cpu]++;
		p->bytes += commit;
		memset(page, 0, sizeof(page));
		memcpy(page, pg.data, pg.data_len);
		if (kbuffer_load_subbuffer(kb, page) < 0) {
			p->why = g_strdup_printf("frame %u: kbuffer refuses it", i);
			break;
		}
		for (ev = kbuffer_read_event(kb, &ts); ev; ev = kbuffer_next_event(kb, &ts)) {
			CoregenEvent e = { .cpu = pg.cpu, .ts = ts };
			int sz = kbuffer_event_size(kb);

			if (sz < 0 || (size_t)sz > COREGEN_EVENT_MAX ||
			    (uint8_t *)ev + sz > page + 16 + commit) {
				p->why = g_strdup_printf("frame %u: an event of %d bytes", i, sz);
				break;
			}
			e.len = (uint32_t)sz;
			memcpy(e.data, ev, e.len);
			g_array_append_val(p->events, e);
		}
	}
	kbuffer_free(kb);
}

static bool event_eq(const CoregenEvent *a, const CoregenEvent *b)
{
	return a->cpu == b->cpu && a->ts == b->ts && a->len == b->len &&
	       !memcmp(a->data, b->data, a->len);
}

/* The events of @cpu in @events, from *@at on; *@at moves past them. */
static guint cpu_events(GArray *events, uint32_t cpu, guint *at)
{
	guint n = 0;

	while (*at + n < events->len && g_array_index(events, CoregenEvent, *at + n).cpu == cpu)
		n++;
	*at += n;
	return n;
}

/*
 * The events of every CPU: exactly the ground truth's, except CPU @bad (-1: none),
 * whose walk failed: a prefix of its truth, of @bad_pages pages.
 */
static void check_events(const char *name, Dump *d, const Pages *p, uint32_t cpus,
			 int bad, uint32_t bad_pages)
{
	guint gi = 0, ti = 0;

	for (uint32_t cpu = 0; cpu < cpus; cpu++) {
		guint g0 = gi, t0 = ti, ng = cpu_events(p->events, cpu, &gi);
		guint nt = cpu_events(d->t.events, cpu, &ti), same = 0;
		const CoregenCpu *tc = &d->t.cpu[cpu];

		while (same < ng && same < nt &&
		       event_eq(&g_array_index(p->events, CoregenEvent, g0 + same),
				&g_array_index(d->t.events, CoregenEvent, t0 + same)))
			same++;
		if ((int)cpu != bad) {
			CHECK(p->pages[cpu] == tc->pages, "%s: cpu %u: %u PAGE frames (want %u)",
			      name, cpu, p->pages[cpu], tc->pages);
			CHECK(p->first_ts[cpu] == tc->read_ts,
			      "%s: cpu %u: the reader page rebased on the last event read,"
			      " %" G_GUINT64_FORMAT " (got %" G_GUINT64_FORMAT ")", name, cpu,
			      tc->read_ts, p->first_ts[cpu]);
			CHECK(same == ng && ng == nt && nt == tc->events,
			      "%s: cpu %u: its %u unread events in order with their time stamps"
			      " and payloads (got %u, %u equal)", name, cpu, nt, ng, same);
		} else {
			CHECK(p->pages[cpu] == bad_pages && same == ng && ng > 0 && ng < nt,
			      "%s: cpu %u: the %u pages before the failure, %u of its events"
			      " (got %u pages, %u events, %u equal)", name, cpu, bad_pages, nt,
			      p->pages[cpu], ng, same);
		}
	}
	CHECK(gi == p->events->len, "%s: no event of another CPU (%u of %u)", name, gi,
	      p->events->len);
}

/*
 * Recover the ring buffers of the core of @o into fresh frames; CPU @bad (-1: none)
 * fails after @bad_pages pages with a message holding @bad_why.
 */
static void check_ring(const char *name, const CoregenOpts *o, int bad, uint32_t bad_pages,
		       const char *bad_why)
{
	Dump d;
	HaPmFrames f;
	HaPmRingStats st = { 0 };
	g_autoptr(GError) e = NULL;
	g_autofree char *why = NULL;
	g_autoptr(GArray) fr = NULL;
	Pages p;
	uint32_t want_pages = 0;
	bool ok;

	if (!dump_open(&d, o))
		return;
	ha_pm_frames_init(&f, FIRST_SEQ);
	ok = ha_pm_ring_recover(d.m, d.vi, o->trace_cpus, COREGEN_PAGE_SIZE, &f, &st, &e);
	CHECK(ok, "%s: recovered (%s)", name, e ? e->message : "ok");
	fr = decode(&f, &why);
	CHECK(fr, "%s: %" G_GUINT64_FORMAT " frames decode (%s)", name, f.frames,
	      why ? why : "ok");
	if (!ok || !fr)
		goto out;
	walk_pages(fr, &p);
	CHECK(!p.why, "%s: every frame a PAGE, CPUs in order, kbuffer walks them (%s)", name,
	      p.why ? p.why : "ok");
	for (uint32_t c = 0; c < o->trace_cpus; c++)
		want_pages += (int)c == bad ? bad_pages : d.t.cpu[c].pages;
	CHECK(st.cpus == o->trace_cpus - (bad >= 0) && st.cpus_failed == (bad >= 0) &&
	      st.pages == want_pages && st.pages == fr->len && st.events == p.events->len &&
	      st.bytes == p.bytes,
	      "%s: stats: %u CPUs, %u failed, %" G_GUINT64_FORMAT " pages, %" G_GUINT64_FORMAT
	      " events, %" G_GUINT64_FORMAT " bytes", name, st.cpus, st.cpus_failed, st.pages,
	      st.events, st.bytes);
	if (bad >= 0)
		CHECK(st.why && strstr(st.why, bad_why), "%s: the stats say why: %s", name,
		      st.why ? st.why : "(none)");
	else
		CHECK(!st.why, "%s: no failure (%s)", name, st.why ? st.why : "none");
	check_events(name, &d, &p, o->trace_cpus, bad, bad_pages);
	pages_clear(&p);
out:
	ha_pm_ring_stats_clear(&st);
	ha_pm_frames_clear(&f);
	dump_close(&d);
}

static void check_ring_refused(const char *name, const CoregenOpts *o, uint32_t nr_cpus,
			       uint32_t page_size, const char *want)
{
	Dump d;
	HaPmFrames f;
	HaPmRingStats st = { 0 };
	g_autoptr(GError) e = NULL;
	bool ok;

	if (!dump_open(&d, o))
		return;
	ha_pm_frames_init(&f, FIRST_SEQ);
	ok = ha_pm_ring_recover(d.m, d.vi, nr_cpus, page_size, &f, &st, &e);
	CHECK(!ok && e && strstr(e->message, want) && f.frames == 0 && f.out->len == 0 &&
	      st.pages == 0, "%s: refused, nothing added: %s", name, e ? e->message : "ok");
	ha_pm_ring_stats_clear(&st);
	ha_pm_frames_clear(&f);
	dump_close(&d);
}

/* ha_pm_ring_walk() on hand-made pages: the reader page's rebasing. */
static void check_walk(void)
{
	uint8_t pg[64] = { 0 };
	uint64_t ts = 0, n = 0;
	uint32_t w;

#define HDR(off, type, delta) (w = (uint32_t)(delta) << 5 | (type), memcpy(pg + (off), &w, 4))
#define ARR(off, v) (w = (v), memcpy(pg + (off) + 4, &w, 4))
	HDR(0, 2, 10);			/* 8 bytes of data, +10 */
	HDR(12, 30, 5);			/* TIME_EXTEND: + (1 << 27) + 5 */
	ARR(12, 1);
	HDR(20, 0, 7);			/* type_len 0, 8 bytes of data, +7 */
	ARR(20, 12);
	HDR(36, 29, 3);			/* a discarded event of 12 bytes, +3 */
	ARR(36, 8);
	HDR(48, 31, 100);		/* TIME_STAMP: 100 */
	ARR(48, 0);
	HDR(56, 1, 1);			/* 4 bytes of data, +1 */
	CHECK(ha_pm_ring_walk(pg, 64, 36, 1000, &ts, &n) && ts == 1000 + 10 + (1u << 27) + 5 + 7
	      && n == 2, "walk to an event's end: its time stamp, 2 events (%" G_GUINT64_FORMAT
	      ", %" G_GUINT64_FORMAT ")", ts, n);
	CHECK(ha_pm_ring_walk(pg, 64, 64, 1000, &ts, &n) && ts == 101 && n == 3,
	      "a discarded event's delta counts, TIME_STAMP sets (%" G_GUINT64_FORMAT ", %"
	      G_GUINT64_FORMAT ")", ts, n);
	CHECK(!ha_pm_ring_walk(pg, 64, 24, 1000, &ts, &n), "an index inside an event refused");
	CHECK(!ha_pm_ring_walk(pg, 60, 60, 1000, &ts, &n), "an event past the commit refused");
	ARR(20, 3);
	CHECK(!ha_pm_ring_walk(pg, 64, 64, 1000, &ts, &n), "a type_len 0 length below 4 refused");
	ARR(20, 0xfffffff0u);
	CHECK(!ha_pm_ring_walk(pg, 64, 64, 1000, &ts, &n), "a huge type_len 0 length refused");
	HDR(0, 29, 0);
	CHECK(ha_pm_ring_walk(pg, 64, 64, 5, &ts, &n) && ts == 5 && n == 0,
	      "a padding with delta 0 ends the page");
#undef HDR
#undef ARR
}

/* ---- the stack map ------------------------------------------------------------ */

/* The records of @fr: STACKS frames hold stack records only, EPOCH one epoch record. */
static GArray *map_records(GArray *fr, guint from, uint64_t *epoch_frames, char **why)
{
	GArray *out = g_array_new(FALSE, TRUE, sizeof(CoregenRec));

	*epoch_frames = 0;
	for (guint i = from; i < fr->len; i++) {
		const Frame *x = &g_array_index(fr, Frame, i);
		gsize len;
		const uint8_t *b = g_bytes_get_data(x->payload, &len);
		struct smp_delta_rec rec;
		size_t off = 0;
		int r, n = 0;

		if (x->type != SMP_STACKS && x->type != SMP_EPOCH) {
			*why = g_strdup_printf("frame %u: type %u", i, x->type);
			break;
		}
		*epoch_frames += x->type == SMP_EPOCH;
		while ((r = smp_delta_next(b, len, &off, &rec)) == 1) {
			CoregenRec c = { .kind = rec.kind, .id = rec.stack_id, .nr = rec.nr };

			n++;
			if ((x->type == SMP_EPOCH) != (rec.kind == SMP_DELTA_EPOCH) ||
			    (x->type == SMP_EPOCH && n > 1)) {
				*why = g_strdup_printf("frame %u: a record of kind %u in %s", i,
						       rec.kind, smp_type_name(x->type));
				return out;
			}
			if (rec.kind == SMP_DELTA_EPOCH) {
				c.epoch = rec.epoch;
				c.ts = rec.timestamp;
			} else {
				for (uint32_t k = 0; k < rec.nr; k++)
					c.ips[k] = smp_delta_ip(&rec, k);
			}
			g_array_append_val(out, c);
		}
		if (r < 0 || n == 0 || smp_msg_check_size(x->type, len) < 0) {
			*why = g_strdup_printf("frame %u: %s of %zu bytes, %d records, %d", i,
					       smp_type_name(x->type), len, n, r);
			break;
		}
	}
	return out;
}

static bool rec_eq(const CoregenRec *a, const CoregenRec *b)
{
	if (a->kind != b->kind || a->id != b->id || a->nr != b->nr)
		return false;
	if (a->kind == 1)
		return a->epoch == b->epoch && a->ts == b->ts;
	return !memcmp(a->ips, b->ips, 8ull * a->nr);
}

/* How many of @got's records are @want's, in order, from @want's record @from. */
static guint same_recs(GArray *got, guint gfrom, GArray *want, guint wfrom, guint n)
{
	guint same = 0;

	while (same < n && gfrom + same < got->len && wfrom + same < want->len &&
	       rec_eq(&g_array_index(got, CoregenRec, gfrom + same),
		      &g_array_index(want, CoregenRec, wfrom + same)))
		same++;
	return same;
}

static guint count_epochs(GArray *recs)
{
	guint n = 0;

	for (guint i = 0; i < recs->len; i++)
		n += g_array_index(recs, CoregenRec, i).kind == 1;
	return n;
}

/*
 * Recover the map of the core of @o. With @bad_why, its backlog is broken: the stats
 * say so, and the live part (the epoch record and the current map) must still be
 * whole at the end.
 */
static void check_map(const char *name, const CoregenOpts *o, const char *bad_why)
{
	Dump d;
	HaPmFrames f;
	HaPmMapStats st = { 0 };
	g_autoptr(GError) e = NULL;
	g_autofree char *why = NULL, *rwhy = NULL;
	g_autoptr(GArray) fr = NULL, got = NULL;
	uint64_t epochs = 0, read;
	guint live;
	bool ok;

	if (!dump_open(&d, o))
		return;
	ha_pm_frames_init(&f, FIRST_SEQ);
	ok = ha_pm_map_recover(d.m, d.vi, &f, &st, &e);
	read = ha_core_bytes_read(d.core);
	CHECK(ok && st.present && st.epoch == d.t.epoch, "%s: recovered (%s), epoch %"
	      G_GUINT64_FORMAT, name, e ? e->message : "ok", st.epoch);
	fr = decode(&f, &why);
	CHECK(fr, "%s: %" G_GUINT64_FORMAT " frames decode (%s)", name, f.frames,
	      why ? why : "ok");
	if (!ok || !fr)
		goto out;
	got = map_records(fr, 0, &epochs, &rwhy);
	CHECK(!rwhy, "%s: STACKS frames of stack records, EPOCH frames of one epoch record"
	      " (%s)", name, rwhy ? rwhy : "ok");
	/* the live part: the current epoch's record and its map, last */
	live = d.t.live_stacks + 1;
	CHECK(got->len >= live &&
	      same_recs(got, got->len - live, d.t.recs, d.t.recs->len - live, live) == live &&
	      st.live_records == d.t.live_stacks,
	      "%s: the epoch in effect and the current map's %u published entries, last"
	      " (%" G_GUINT64_FORMAT " live records)", name, d.t.live_stacks,
	      st.live_records);
	CHECK(read < 4 * d.len, "%s: %" G_GUINT64_FORMAT " bytes of the %zu-byte core read",
	      name, read, d.len);
	if (!bad_why) {
		guint same = same_recs(got, 0, d.t.recs, 0, d.t.recs->len);

		CHECK(same == d.t.recs->len && got->len == d.t.recs->len,
		      "%s: all %u records in the reader's order, ids, depths and ips (got %u,"
		      " %u equal)", name, d.t.recs->len, got->len, same);
		CHECK(epochs == count_epochs(d.t.recs) && st.epochs == epochs &&
		      st.backlog_records == d.t.backlog_stacks &&
		      st.unread_records == d.t.prev_stacks && !st.why,
		      "%s: stats: %" G_GUINT64_FORMAT " epochs, %" G_GUINT64_FORMAT " backlog, %"
		      G_GUINT64_FORMAT " unread, %" G_GUINT64_FORMAT " live (%s)", name,
		      st.epochs, st.backlog_records, st.unread_records, st.live_records,
		      st.why ? st.why : "no failure");
	} else {
		guint same = same_recs(got, 0, d.t.recs, 0, d.t.recs->len);

		CHECK(st.why && strstr(st.why, bad_why), "%s: the stats say why: %s", name,
		      st.why ? st.why : "(none)");
		CHECK(same == d.t.recs->len && got->len == d.t.recs->len,
		      "%s: what was read before the failure is kept, once (%u records, want %u,"
		      " %u equal)", name, got->len, d.t.recs->len, same);
	}
out:
	ha_pm_map_stats_clear(&st);
	ha_pm_frames_clear(&f);
	dump_close(&d);
}

static void check_map_refused(const char *name, const CoregenOpts *o, const char *want)
{
	Dump d;
	HaPmFrames f;
	HaPmMapStats st = { 0 };
	g_autoptr(GError) e = NULL;
	bool ok;

	if (!dump_open(&d, o))
		return;
	ha_pm_frames_init(&f, FIRST_SEQ);
	ok = ha_pm_map_recover(d.m, d.vi, &f, &st, &e);
	CHECK(!ok && e && strstr(e->message, want) && f.frames == 0,
	      "%s: refused, nothing added: %s", name, e ? e->message : "ok");
	ha_pm_map_stats_clear(&st);
	ha_pm_frames_clear(&f);
	dump_close(&d);
}

/* No map (trace_array.stackmap NULL), no patch 0014: nothing to do, or refused. */
static void check_absent(void)
{
	CoregenOpts o = { .n = 3, .trace_cpus = 1 };
	Dump d;
	HaPmFrames f;
	HaPmMapStats st = { 0 };
	HaPmRingStats rs = { 0 };
	g_autoptr(GError) e = NULL;

	if (dump_open(&d, &o)) {
		ha_pm_frames_init(&f, FIRST_SEQ);
		CHECK(ha_pm_map_recover(d.m, d.vi, &f, &st, &e) && !st.present && f.frames == 0,
		      "no stack map: nothing, no error (%s)", e ? e->message : "ok");
		ha_pm_frames_clear(&f);
		dump_close(&d);
	}
	g_clear_error(&e);
	o = (CoregenOpts){ .n = 3 };
	if (dump_open(&d, &o)) {
		ha_pm_frames_init(&f, FIRST_SEQ);
		CHECK(!ha_pm_map_recover(d.m, d.vi, &f, &st, &e) && e &&
		      e->code == G_IO_ERROR_NOT_SUPPORTED, "a kernel without patch 0014: %s",
		      e ? e->message : "");
		g_clear_error(&e);
		CHECK(!ha_pm_ring_recover(d.m, d.vi, 2, COREGEN_PAGE_SIZE, &f, &rs, &e) && e &&
		      e->code == G_IO_ERROR_NOT_SUPPORTED && f.frames == 0,
		      "... nor its ring buffers: %s", e ? e->message : "");
		ha_pm_frames_clear(&f);
		dump_close(&d);
	}
	ha_pm_map_stats_clear(&st);
	ha_pm_ring_stats_clear(&rs);
}

/* Both walks into one HaPmFrames, as postmortem.c does: the map first, seqs follow. */
static void check_both(void)
{
	CoregenOpts o = { .n = 5, .trace_cpus = 2, .map = 1, .map_backlog = 1 };
	Dump d;
	HaPmFrames f;
	HaPmMapStats ms = { 0 };
	HaPmRingStats rs = { 0 };
	g_autoptr(GError) e = NULL;
	g_autofree char *why = NULL;
	g_autoptr(GArray) fr = NULL;
	uint64_t map_frames = 0, pages = 0;

	if (!dump_open(&d, &o))
		return;
	ha_pm_frames_init(&f, FIRST_SEQ);
	CHECK(ha_pm_map_recover(d.m, d.vi, &f, &ms, &e), "map and ring: the map (%s)",
	      e ? e->message : "ok");
	map_frames = f.frames;
	CHECK(ha_pm_ring_recover(d.m, d.vi, 2, COREGEN_PAGE_SIZE, &f, &rs, &e),
	      "map and ring: the ring buffers (%s)", e ? e->message : "ok");
	fr = decode(&f, &why);
	for (guint i = 0; fr && i < fr->len; i++)
		pages += g_array_index(fr, Frame, i).type == SMP_PAGE && i >= map_frames;
	CHECK(fr && map_frames > 0 && pages == rs.pages && pages == d.t.cpu[0].pages +
	      d.t.cpu[1].pages && fr->len == map_frames + pages,
	      "map and ring: %" G_GUINT64_FORMAT " map frames then %" G_GUINT64_FORMAT
	      " PAGE frames, one run of seqs (%s)", map_frames, pages, why ? why : "ok");
	ha_pm_map_stats_clear(&ms);
	ha_pm_ring_stats_clear(&rs);
	ha_pm_frames_clear(&f);
	dump_close(&d);
}

int main(void)
{
	check_walk();

	/* the ring buffers */
	check_ring("1 cpu", &(CoregenOpts){ .n = 5, .trace_cpus = 1 }, -1, 0, NULL);
	check_ring("2 cpus", &(CoregenOpts){ .n = 5, .trace_cpus = 2 }, -1, 0, NULL);
	check_ring("4 cpus, 3 pages", &(CoregenOpts){ .n = 5, .trace_cpus = 4, .trace_pages = 3 },
		   -1, 0, NULL);
	check_ring("4 cpus, 8 pages", &(CoregenOpts){ .n = 5, .trace_cpus = 4, .trace_pages = 8 },
		   -1, 0, NULL);
	check_ring("writer on the reader page",
		   &(CoregenOpts){ .n = 5, .trace_cpus = 2, .writer_on_reader = 1 }, -1, 0, NULL);
	check_ring("writer on cpu 0's reader page",
		   &(CoregenOpts){ .n = 5, .trace_cpus = 1, .writer_on_reader = 1 }, -1, 0, NULL);
	/* CPU 0: 4 ring pages, the commit page the third: reader page + 2 before it */
	check_ring("a loop in cpu 0's pages", &(CoregenOpts){ .n = 5, .trace_cpus = 2,
		   .rb_list_loop = 1 }, 0, 3, "cpu 0");
	check_ring("cpu 0 commits past its page", &(CoregenOpts){ .n = 5, .trace_cpus = 2,
		   .rb_commit_over = 1 }, 0, 3, "cpu 0");
	check_ring("cpu 0's data page not in the dump", &(CoregenOpts){ .n = 5,
		   .trace_cpus = 2, .rb_unmapped = 1 }, 0, 2, "cpu 0");
	check_ring_refused("a bad ring_buffer_dump_info magic",
			   &(CoregenOpts){ .n = 5, .trace_cpus = 2, .rb_bad_magic = 1 }, 2,
			   COREGEN_PAGE_SIZE, "magic");
	check_ring_refused("more CPUs than the boot", &(CoregenOpts){ .n = 5, .trace_cpus = 4 },
			   2, COREGEN_PAGE_SIZE, "4 CPUs");

	/* the stack map */
	check_map("the current map", &(CoregenOpts){ .n = 5, .map = 1 }, NULL);
	check_map("over a read's 64 elts", &(CoregenOpts){ .n = 5, .map = 1, .map_elts = 70 },
		  NULL);
	check_map("next_elt past a full pool", &(CoregenOpts){ .n = 5, .map = 1, .map_bits = 4,
		  .map_elts = 20 }, NULL);
	check_map("the reader's backlog", &(CoregenOpts){ .n = 5, .map = 1, .map_backlog = 1 },
		  NULL);
	check_map("the reader on the previous map",
		  &(CoregenOpts){ .n = 5, .map = 1, .map_prev = 1 }, NULL);
	check_map("backlog and previous map",
		  &(CoregenOpts){ .n = 5, .map = 1, .map_prev = 1, .map_backlog = 1 }, NULL);
	check_map("elts whose slot is not theirs",
		  &(CoregenOpts){ .n = 5, .map = 1, .sm_bad_slot = 1, .map_backlog = 1 }, NULL);
	check_map("a loop in the backlog", &(CoregenOpts){ .n = 5, .map = 1, .map_backlog = 1,
		  .sm_backlog_loop = 1 }, "backlog");
	check_map_refused("a bad ftrace_stackmap_dump_info magic",
			  &(CoregenOpts){ .n = 5, .map = 1, .sm_bad_magic = 1 }, "magic");
	check_absent();
	check_both();
	return tap_done();
}
