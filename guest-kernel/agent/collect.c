// SPDX-License-Identifier: MIT
/*
 * collect.c - turning what the kernel exposes into frames: setup, HELLO facts, the
 * metadata snapshot, pages, delta records, LOST and STATS (see agent.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "gap.h"
#include "log.h"
#include "sysinfo.h"
#include "util.h"

/* Most pages read from one CPU per collect round: bounds the time of one round. */
#define COLLECT_MAX_PAGES 1024
/* Text chunk size: a KSYMS/MODULES frame fits one 32 KiB port write. */
#define TEXT_CHUNK (32u * 1024u - SMP_HDR_SIZE - SMP_TEXT_FIXED)
#define KALLSYMS_MAX (128u * 1024u * 1024u)
/* saved_cmdlines at its largest (saved_cmdlines_size 32768, "PID COMM\n" each) */
#define CMDLINES_FILE_MAX (1024u * 1024u)

static bool list_has(const char *list, size_t len, const char *name)
{
	for (size_t off = 0; off < len; off += strlen(list + off) + 1)
		if (strcmp(list + off, name) == 0)
			return true;
	return false;
}

static size_t list_count(const char *list, size_t len)
{
	size_t n = 0;

	for (size_t off = 0; off < len; off += strlen(list + off) + 1)
		n++;
	return n;
}

static int list_push(struct agent *a, const char *name)
{
	size_t n = strlen(name) + 1;
	char *p = realloc(a->formats, a->formats_len + n);

	if (!p)
		return -ENOMEM;
	memcpy(p + a->formats_len, name, n);
	a->formats = p;
	a->formats_len += n;
	return 0;
}

/* Send one format file, once per stream unless @again. */
static int send_format(struct agent *a, const char *name, bool again)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	if (!again && list_has(a->formats, a->formats_len, name))
		return 0;
	r = tracefs_read_format(a->tracefs, name, &text, &len);
	if (r < 0) {
		log_debug("no format for %s: %s", name, strerror(-r));
		return r;
	}
	if (len == 0)
		return -ENODATA;
	r = stream_format(a->win, name, text, len);
	if (r < 0) {
		log_warning("cannot send the format of %s: %s", name, strerror(-r));
		return r;
	}
	if (!again)
		return list_push(a, name);
	return 0;
}

static void send_formats_of(struct agent *a, char *names, size_t nr)
{
	const char *p = names;

	for (size_t i = 0; i < nr; i++, p += strlen(p) + 1)
		(void)send_format(a, p, false);
}

/* Formats of newly enabled events (set_event). */
static void send_new_formats(struct agent *a)
{
	_cleanup_free_ char *names = NULL;
	size_t nr;

	if (tracefs_enabled_events(a->tracefs, &names, &nr) == 0)
		send_formats_of(a, names, nr);
}

static int read_text(const char *root, const char *rel, size_t max, char **ret,
		     size_t *ret_len)
{
	char path[4096];
	int r = path_fmt(path, sizeof(path), "%s/%s", root, rel);

	return r < 0 ? r : read_file(path, max, ret, ret_len);
}

static void send_ksyms(struct agent *a)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = read_text(a->o.procfs, "kallsyms", KALLSYMS_MAX, &text, &len);
	if (r < 0) {
		log_warning("cannot read kallsyms: %s (no KSYMS sent)", strerror(-r));
		return;
	}
	if (len > a->o.window_kb * 1024 / 2)
		log_once(LOG_WARNING, "kallsyms is %zu KiB, more than half of the %lu KiB "
			 "window: raise --window-kb, or KSYMS may be cut while the host is "
			 "away", len / 1024, a->o.window_kb);
	/* HELLO's _text comes from the same read: kallsyms is costly to generate */
	if (sysinfo_text_addr(text, &a->text_addr) < 0)
		log_once(LOG_WARNING, "no _text in kallsyms: HELLO carries text_addr 0");
	r = stream_text(a->win, SMP_KSYMS, a->ksyms_gen, text, len, TEXT_CHUNK);
	if (r < 0)
		log_warning("cannot queue KSYMS: %s", strerror(-r));
}

static void send_modules(struct agent *a, char *text, size_t len)
{
	int r = stream_text(a->win, SMP_MODULES, a->modules_gen, text, len, TEXT_CHUNK);

	if (r < 0)
		log_warning("cannot queue MODULES: %s", strerror(-r));
}

void agent_send_cmdlines(struct agent *a, bool full)
{
	_cleanup_free_ char *text = NULL, *lines = NULL;
	size_t len, n;
	int r;

	r = read_text(a->tracefs, "saved_cmdlines", CMDLINES_FILE_MAX, &text, &len);
	if (r < 0) {
		log_once(LOG_NOTICE, "cannot read %s/saved_cmdlines: %s (no CMDLINES sent: the "
			 "host's exports name tasks by pid only)", a->tracefs, strerror(-r));
		return;
	}
	r = cmdlines_diff(&a->cmdlines, text, len, full, &lines, &n);
	if (r < 0 || n == 0)
		return;
	r = stream_text(a->win, SMP_CMDLINES, a->cmdlines_gen++, lines, n, TEXT_CHUNK);
	if (r < 0) {
		log_warning("cannot queue CMDLINES: %s", strerror(-r));
		cmdlines_clear(&a->cmdlines);	/* the next one carries the whole table */
	}
}

int agent_send_metadata(struct agent *a, bool regen)
{
	_cleanup_free_ char *mods = NULL, *ftrace = NULL, *enabled = NULL;
	struct win_stats ws;
	size_t len = 0, nr;
	uint64_t lo;

	win_get_stats(a->win, &ws);
	lo = ws.next_seq;
	if (regen) {
		a->ksyms_gen++;
		a->modules_gen++;
		for (size_t off = 0; off < a->formats_len; off += strlen(a->formats + off) + 1)
			(void)send_format(a, a->formats + off, true);
	} else {
		(void)send_format(a, "header_page", false);
		(void)send_format(a, "header_event", false);
		(void)send_format(a, "ftrace/stack_id", false);
		(void)send_format(a, "ftrace/kernel_stack", false);
		/* the rest of ftrace's own events (function, print, ...), all small */
		if (tracefs_system_events(a->tracefs, "ftrace", &ftrace, &nr) == 0)
			send_formats_of(a, ftrace, nr);
	}
	if (tracefs_enabled_events(a->tracefs, &enabled, &nr) == 0)
		send_formats_of(a, enabled, nr);
	/*
	 * The module list first: it is what modules_rescan() compares with, so a
	 * module loaded while kallsyms is read shows up as a change there and gets
	 * its KSYMS. Read after kallsyms, it would already list that module while
	 * the KSYMS sent lacks its symbols, and no rescan would ever send them.
	 */
	if (read_text(a->o.procfs, "modules", KALLSYMS_MAX, &mods, &len) < 0) {
		mods = strdup("");
		if (!mods)
			return -ENOMEM;
		len = 0;
	}
	send_ksyms(a);
	send_modules(a, mods, len);
	free(a->modules);
	a->modules = mods;
	mods = NULL;
	agent_send_cmdlines(a, true);
	win_get_stats(a->win, &ws);
	log_info("metadata queued: %zu formats, KSYMS generation %" PRIu32 ", MODULES "
		 "generation %" PRIu32 " (%" PRIu64 " frames)",
		 list_count(a->formats, a->formats_len),
		 a->ksyms_gen, a->modules_gen, ws.next_seq - lo);
	return 0;
}

static void modules_rescan(struct agent *a)
{
	_cleanup_free_ char *mods = NULL;
	size_t len;

	if (read_text(a->o.procfs, "modules", KALLSYMS_MAX, &mods, &len) < 0)
		return;
	if (a->modules && strcmp(a->modules, mods) == 0)
		return;
	a->ksyms_gen++;
	a->modules_gen++;
	log_info("module list changed: KSYMS and MODULES generation %" PRIu32,
		 a->modules_gen);
	send_ksyms(a);
	send_modules(a, mods, len);
	free(a->modules);
	a->modules = mods;
	mods = NULL;
}

static void delta_try_open(struct agent *a)
{
	int r;

	if (a->delta.fd >= 0)
		return;
	r = delta_open(&a->delta);
	if (r == -ENOENT)
		log_once(LOG_NOTICE, "%s does not exist (kernel without the delta export): "
			 "streaming pages without stack deltas", a->delta.path);
	else if (r == -EBUSY)
		log_once(LOG_WARNING, "%s is held by another reader: no stack deltas until "
			 "it is released", a->delta.path);
	else if (r < 0)
		log_once(LOG_WARNING, "cannot open %s: %s", a->delta.path, strerror(-r));
	else
		log_info("reading stack deltas from %s", a->delta.path);
}

/* The first EPOCH frame of the stream among the seqs [@from, @to) just queued. */
static void note_first_epoch(struct agent *a, uint64_t from, uint64_t to)
{
	for (uint64_t seq = from; seq < to && !a->first_epoch_seq; seq++) {
		uint32_t len;
		const uint8_t *f = win_frame(a->win, seq, &len);
		struct smp_delta_rec rec;
		size_t off = SMP_HDR_SIZE;

		if (!f || f[6] != SMP_EPOCH ||
		    smp_delta_next(f, len, &off, &rec) != 1)
			continue;
		a->first_epoch_seq = seq;
		log_info("the stream's first EPOCH (epoch %" PRIu64 ") is seq %" PRIu64,
			 rec.epoch, seq);
		if (a->o.test_stall && !a->held_once)
			sess_stall(&a->sess, seq + (a->o.test_stall == TEST_STALL_AFTER_EPOCH));
	}
}

static void collect_delta(struct agent *a)
{
	for (int round = 0; round < 64 && a->delta.fd >= 0; round++) {
		struct delta_counts dc = { 0 };
		struct win_stats ws;
		size_t bad = 0;
		long n = delta_read(&a->delta), used;

		if (n < 0) {
			log_warning("reading %s: %s; reopening later", a->delta.path,
				    strerror((int)-n));
			delta_close(&a->delta);
			return;
		}
		if (a->delta.len == 0)
			return;
		/* each record once, when whole (a no-op on little-endian guests) */
		a->delta.le += delta_to_le(a->delta.buf + a->delta.le,
					   a->delta.len - a->delta.le);
		win_get_stats(a->win, &ws);
		used = stream_delta(a->win, a->delta.buf, a->delta.len, 0, &dc, &bad);
		a->c.stacks += dc.stacks;
		a->c.epochs += dc.epochs;
		if (dc.epochs) {
			struct win_stats after;

			a->map_epoch = dc.last_epoch;
			win_get_stats(a->win, &after);
			note_first_epoch(a, ws.next_seq, after.next_seq);
		}
		if (used == -EBADMSG) {
			a->c.bad_deltas++;
			log_error("%s returned an invalid record at offset %zu: %zu bytes "
				  "discarded", a->delta.path, bad, a->delta.len - bad);
			delta_consume(&a->delta, a->delta.len);
			return;
		}
		if (used < 0) {
			log_warning("cannot queue delta records: %s", strerror((int)-used));
			return;
		}
		delta_consume(&a->delta, (size_t)used);
		if (n == 0)
			return;
	}
}

bool agent_holding(struct agent *a)
{
	struct win_stats ws;

	if (!a->o.test_hold_drops || (!a->holding && a->held_once))
		return false;
	win_get_stats(a->win, &ws);
	if (!a->holding) {
		if (ws.dropped_frames < a->o.test_hold_drops)
			return false;
		a->holding = a->held_once = true;
		sess_stall(&a->sess, 0);
		log_notice("test hook: %" PRIu64 " frames dropped, the window holds seqs %"
			   PRIu64 "..%" PRIu64 ": holding (the ring buffers are not read) "
			   "until the host has every frame held", ws.dropped_frames,
			   ws.oldest_seq, ws.next_seq - 1);
		return true;
	}
	if (a->sess.state == SESS_UP && !win_gap_from(a->win) && ws.acked + 1 >= ws.next_seq) {
		a->holding = false;
		log_notice("test hook: the host has every frame held (up to seq %" PRIu64
			   "): reading the ring buffers again", ws.acked);
		return false;
	}
	return true;
}

void agent_collect(struct agent *a)
{
	bool missed_any = false;

	for (uint32_t i = 0; a->rings && i < a->rings->count; i++) {
		struct ring_cpu *c = &a->rings->cpus[i];

		for (int k = 0; k < COLLECT_MAX_PAGES; k++) {
			const uint8_t *page;
			int missed = 0;
			int r;

			if (agent_holding(a))
				return;
			r = ring_read_page(a->rings, c, &page);

			if (r == 0)
				break;
			if (r < 0) {
				log_once(LOG_ERR, "reading cpu%" PRIu32 " trace_pipe_raw: %s",
					 c->cpu, strerror(-r));
				break;
			}
			r = stream_page(a->win, &a->pl, c->cpu, page, a->rings->page_size,
					&missed);
			if (r == 1) {
				struct win_stats ws;
				uint64_t ts;

				a->c.pages++;
				/* the page header starts with its first event's time stamp */
				memcpy(&ts, page, sizeof(ts));
				win_get_stats(a->win, &ws);
				latency_page(&a->lat, ws.next_seq - 1, ts);
			}
			else if (r == 0)
				a->c.empty_pages++;
			else {
				a->c.bad_pages++;
				log_once(LOG_ERR, "cpu%" PRIu32 ": a page with an impossible "
					 "commit field (not sent, counted)", c->cpu);
			}
			if (missed) {
				a->c.missed_pages++;
				missed_any = true;
			}
		}
	}
	/* After the pages: every stack_id in them was inserted before its event. */
	collect_delta(a);
	if (missed_any)
		agent_queue_lost(a, false);
}

void agent_queue_lost(struct agent *a, bool force)
{
	_cleanup_free_ struct smp_lost_cpu *cpus = NULL;
	struct win_stats ws;
	bool changed = force || !a->lost_sent;
	int r;

	cpus = calloc(a->nr_cpu_dirs, sizeof(*cpus));
	if (!cpus)
		return;
	for (uint32_t i = 0; i < a->nr_cpu_dirs; i++) {
		cpus[i].cpu = a->cpus[i];
		(void)tracefs_read_cpu_stats(a->tracefs, a->cpus[i], &cpus[i]);
		if (memcmp(&cpus[i], &a->lost_last[i], sizeof(cpus[i])) != 0)
			changed = true;
	}
	win_get_stats(a->win, &ws);
	if (ws.dropped_frames != a->lost_frames_last || ws.dropped_bytes != a->lost_bytes_last)
		changed = true;
	if (!changed)
		return;
	r = stream_lost(a->win, cpus, a->nr_cpu_dirs, ws.dropped_frames, ws.dropped_bytes);
	if (r < 0) {
		log_warning("cannot queue LOST: %s", strerror(-r));
		return;
	}
	/* The LOST frame itself may have pushed out older frames: count those next time. */
	memcpy(a->lost_last, cpus, a->nr_cpu_dirs * sizeof(*cpus));
	a->lost_frames_last = ws.dropped_frames;
	a->lost_bytes_last = ws.dropped_bytes;
	a->lost_sent = true;
}

void agent_queue_stats(struct agent *a, bool force)
{
	struct smp_stat st[17];
	struct map_stat ms = { 0 };
	uint64_t unread;
	struct win_stats ws;
	uint32_t n = 0;
	uint64_t sig;
	int r;

	(void)tracefs_read_map_stat(a->tracefs, &ms);
	win_get_stats(a->win, &ws);
	/* send only when something moved besides our own STATS traffic */
	sig = a->c.pages * 31 + a->c.stacks * 37 + a->c.epochs * 41 + ms.entries * 43 +
	      ms.successes * 47 + ms.drops * 53 + ws.dropped_frames * 59 + ms.epoch * 61;
	if (!force && sig == a->stats_sig_last)
		return;
	if (ms.present) {
		st[n++] = (struct smp_stat){ SMP_STAT_MAP_ENTRIES, ms.entries };
		st[n++] = (struct smp_stat){ SMP_STAT_MAP_CAPACITY, ms.capacity };
		st[n++] = (struct smp_stat){ SMP_STAT_MAP_SUCCESSES, ms.successes };
		st[n++] = (struct smp_stat){ SMP_STAT_MAP_DROPS, ms.drops };
		st[n++] = (struct smp_stat){ SMP_STAT_MAP_EPOCH,
					     ms.has_epoch ? ms.epoch : a->map_epoch };
	}
	st[n++] = (struct smp_stat){ SMP_STAT_AGENT_FRAMES, ws.next_seq - 1 };
	st[n++] = (struct smp_stat){ SMP_STAT_AGENT_BYTES, a->sess.out.bytes };
	st[n++] = (struct smp_stat){ SMP_STAT_AGENT_RESENT, ws.resent_frames };
	st[n++] = (struct smp_stat){ SMP_STAT_AGENT_CPU_NS, cpu_time_ns() };
	st[n++] = (struct smp_stat){ SMP_STAT_AGENT_WRITES, a->sess.out.writes };
	if (a->lat.samples) {
		st[n++] = (struct smp_stat){ SMP_STAT_DURABLE_P50_US,
					     latency_quantile_us(&a->lat, 500) };
		st[n++] = (struct smp_stat){ SMP_STAT_DURABLE_P99_US,
					     latency_quantile_us(&a->lat, 990) };
		st[n++] = (struct smp_stat){ SMP_STAT_DURABLE_MAX_US, a->lat.max_us };
		st[n++] = (struct smp_stat){ SMP_STAT_DURABLE_PAGES, a->lat.samples };
	}
	/* The last STATS, after the final drain (begin_stop): what the ring buffer
	 * still counts with tracing off is what no read returned. */
	if (a->stopping && tracefs_read_unread(a->tracefs, a->cpus, a->nr_cpu_dirs,
					       &unread) == 0) {
		st[n++] = (struct smp_stat){ SMP_STAT_RB_UNREAD, unread };
		if (unread)
			log_warning("%" PRIu64 " events left unread in the ring buffer after"
				    " the final drain (the ring-buffer reader race; LOST)", unread);
	}
	r = stream_stats(a->win, st, n);
	if (r < 0) {
		log_warning("cannot queue STATS: %s", strerror(-r));
		return;
	}
	a->stats_sig_last = sig;
}

void agent_rescan(struct agent *a)
{
	agent_collect(a);		/* the safety net for a missed wake-up */
	send_new_formats(a);
	modules_rescan(a);
	agent_send_cmdlines(a, false);
	delta_try_open(a);
	agent_queue_lost(a, false);
}

int agent_build_hello(struct agent *a)
{
	uint8_t frame[SESS_HELLO_MAX];
	struct map_stat ms = { 0 };
	struct smp_hello h = { 0 };
	bool stackmap = false;
	long r;

	(void)tracefs_read_map_stat(a->tracefs, &ms);
	(void)tracefs_option(a->tracefs, "stackmap", &stackmap);
	memcpy(h.boot_id, a->boot_id, 16);
	h.stream_id = a->stream_id;
	h.text_addr = a->text_addr;
	h.nr_cpus = a->nr_cpus;
	h.page_size = a->pl.page_size;
	h.map_bits = ms.present ? ms.map_bits : 0;
	h.max_depth = ms.present ? ms.max_depth : 0;
	h.map_epoch = ms.has_epoch ? ms.epoch : a->map_epoch;
	h.flags = stackmap ? SMP_HELLO_STACKMAP : 0;
	if (a->marker_fd >= 0)
		h.flags |= SMP_HELLO_TIME;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	h.flags |= SMP_HELLO_PAGES_BE;
#endif
	h.release = a->release;
	h.release_len = (uint8_t)strlen(a->release);
	h.build_id = a->build_id;
	h.build_id_len = (uint8_t)(a->build_id_len > 0 ? a->build_id_len : 0);
	h.trace_clock = a->clock;
	h.clock_len = (uint8_t)strlen(a->clock);
	r = stream_hello(&h, frame, sizeof(frame));
	if (r < 0)
		return (int)r;
	sess_set_hello(&a->sess, frame, (size_t)r);
	return 0;
}

int agent_fresh_stream(struct agent *a)
{
	uint64_t old = a->stream_id, dropped = win_reset(a->win);

	a->stream_id = sysinfo_random_u64();
	log_notice("fresh stream %016" PRIx64 " (stream %016" PRIx64 " ended; %" PRIu64
		   " unacknowledged frames of it dropped)", a->stream_id, old, dropped);
	free(a->formats);
	a->formats = NULL;
	a->formats_len = 0;
	a->ksyms_gen = a->modules_gen = 0;
	cmdlines_clear(&a->cmdlines);
	a->cmdlines_gen = 0;
	a->lost_sent = false;
	memset(a->lost_last, 0, a->nr_cpu_dirs * sizeof(*a->lost_last));
	a->lost_frames_last = a->lost_bytes_last = 0;
	a->stats_sig_last = 0;
	a->first_epoch_seq = 0;
	sess_stall(&a->sess, 0);
	latency_reset(&a->lat);
	/* a new opener starts again with the current epoch and the whole map */
	delta_close(&a->delta);
	agent_send_metadata(a, false);
	delta_try_open(a);
	return agent_build_hello(a);
}

/* gap_fill()'s callback: the snapshot goes into @front instead of the window. */
static int metadata_into(void *ctx, struct win *front)
{
	struct agent *a = ctx;
	struct win *held = a->win;
	int r;

	a->win = front;
	r = agent_send_metadata(a, true);
	a->win = held;
	return r;
}

int agent_after_gap(struct agent *a, uint64_t resume_seq)
{
	struct gap_ops ops = {
		.metadata = metadata_into,
		.ctx = a,
		.win_bytes = (size_t)a->o.window_kb * 1024,
		.win_frames = (uint32_t)a->o.window_frames,
		/*
		 * Keep at most half the window behind a new snapshot: it goes out first,
		 * but until it is written new pages keep coming, and in a full window each
		 * would push out the oldest frame, the snapshot itself.
		 */
		.headroom_bytes = (size_t)a->o.window_kb * 1024 / 2,
		.headroom_frames = (uint32_t)(a->o.window_frames / 2),
	};
	struct gap_result g;
	struct win_stats ws;
	int r;

	/*
	 * What the kernel handed over already belongs with the held frames (the reopen
	 * below would discard it, and at a reset the ending epoch's entries are only
	 * handed to this opener).
	 */
	collect_delta(a);
	r = gap_fill(a->win, resume_seq, &ops, &g);
	if (r < 0) {
		log_error("cannot put what the host lacks ahead of the held frames: %s",
			  strerror(-r));
		return r;
	}
	if (!g.spliced) {
		win_get_stats(a->win, &ws);
		latency_rebase(&a->lat, ws.oldest_seq, 0);
		log_info("frames from %" PRIu64 " were dropped before the host got them: "
			 "pages and counters only, nothing to send again", resume_seq);
		return 0;
	}
	latency_rebase(&a->lat, g.first, g.shift);
	if (a->bye_seq)
		a->bye_seq = a->bye_seq >= g.first ? a->bye_seq + (uint64_t)g.shift : 0;
	if (a->first_epoch_seq)
		a->first_epoch_seq = a->first_epoch_seq >= g.first ?
				     a->first_epoch_seq + (uint64_t)g.shift : 0;
	win_get_stats(a->win, &ws);
	log_notice("frames %" PRIu64 "..%" PRIu64 " were dropped before the host got them "
		   "(%" PRIu64 " of them to make room): sending %s%s%s ahead of the %" PRIu64
		   " frames held%s", resume_seq, g.at - (uint64_t)g.shift - 1, g.made_room,
		   g.meta ? "a new snapshot" : "", g.meta && g.epoch ? " and " : "",
		   g.epoch ? "the epoch in effect" : "", ws.next_seq - g.at,
		   g.map ? ", the whole stack map after them" : "");
	if (g.front_dropped)
		log_warning("the new snapshot is larger than the window: its first %" PRIu64
			    " frames were cut (raise --window-kb)", g.front_dropped);
	if (g.map && !g.epoch && a->c.epochs)
		log_warning("the epoch in effect at seq %" PRIu64 " is not known: stack "
			    "records held from before the next epoch will be refused", g.at);
	if (g.map) {
		/* a new opener gets the current epoch and the whole map: after them */
		delta_close(&a->delta);
		delta_try_open(a);
	}
	return 0;
}

static int read_facts(struct agent *a)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = sysinfo_boot_id(a->o.procfs, a->boot_id);
	if (r < 0) {
		log_error("cannot read boot_id under %s: %s", a->o.procfs, strerror(-r));
		return r;
	}
	r = sysinfo_release(a->o.procfs, a->release, sizeof(a->release));
	if (r < 0) {
		log_error("cannot find the kernel release: %s", strerror(-r));
		return r;
	}
	a->build_id_len = sysinfo_build_id(a->o.sysfs, a->build_id, sizeof(a->build_id));
	if (a->build_id_len < 0) {
		log_warning("no vmlinux build-id in %s/kernel/notes: %s", a->o.sysfs,
			    strerror(-a->build_id_len));
		a->build_id_len = 0;
	}
	r = read_text(a->tracefs, "trace_clock", TRACEFS_FILE_MAX, &text, NULL);
	if (r < 0 || tracefs_parse_clock(text, a->clock, sizeof(a->clock)) < 0) {
		log_warning("cannot read the trace clock: assuming 'local'");
		strcpy(a->clock, "local");
	}
	free(text);
	text = NULL;

	page_layout_default(&a->pl, (uint32_t)sysconf(_SC_PAGESIZE));
	r = tracefs_read_format(a->tracefs, "header_page", &text, NULL);
	if (r < 0 || tracefs_parse_header_page(text, &a->pl) < 0)
		log_warning("cannot parse events/header_page: assuming the native layout, "
			    "page size %" PRIu32, a->pl.page_size);
	if (a->pl.page_size < 4096 || a->pl.page_size > SMP_PAGE_SIZE_MAX ||
	    (a->pl.page_size & (a->pl.page_size - 1))) {
		log_error("unsupported ring-buffer page size %" PRIu32, a->pl.page_size);
		return -EINVAL;
	}

	r = tracefs_list_cpus(a->tracefs, &a->cpus, &a->nr_cpu_dirs, &a->nr_cpus);
	if (r < 0) {
		log_error("no per_cpu directories under %s: %s", a->tracefs, strerror(-r));
		return r;
	}
	return 0;
}

/* The session's time callback: the probe's marker, stamped by the guest's trace clock. */
static int write_marker(void *ctx, uint64_t probe_id)
{
	struct agent *a = ctx;
	char text[SMP_TIME_MARKER_LEN];
	long n = smp_time_marker(probe_id, text, sizeof(text));
	ssize_t w;

	if (n < 0)
		return (int)n;
	/* after the final drain (SIGTERM) nothing may enter the ring buffer unread */
	if (a->stopping)
		return -ESHUTDOWN;
	w = write(a->marker_fd, text, (size_t)n);
	if (w < 0) {
		int r = negerrno();

		log_once(LOG_WARNING, "writing a time probe to trace_marker: %s (the host gets "
			 "no time sample while this lasts)", strerror(-r));
		return r;
	}
	return w == n ? 0 : -EIO;
}

/* The host's time probes need the trace marker of the instance we stream. */
static void open_marker(struct agent *a)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/trace_marker", a->tracefs);
	a->marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (a->marker_fd < 0) {
		log_notice("no %s (%s): the host cannot place this guest's trace clock on "
			   "its own clocks", path, strerror(errno));
		return;
	}
	sess_set_time(&a->sess, write_marker, a);
}

int agent_setup(struct agent *a)
{
	int r;

	r = tracefs_find(a->o.tracefs, a->tracefs, sizeof(a->tracefs));
	if (r < 0) {
		log_error("tracefs not found%s%s", a->o.tracefs ? " at " : "",
			  a->o.tracefs ? a->o.tracefs : "");
		return r;
	}
	r = tracefs_apply_setup(a->tracefs, &a->o.setup);
	if (r < 0)
		log_warning("the tracing setup was applied only in part");
	r = read_facts(a);
	if (r < 0)
		return r;
	a->lost_last = calloc(a->nr_cpu_dirs, sizeof(*a->lost_last));
	if (!a->lost_last)
		return -ENOMEM;
	r = latency_init(&a->lat, a->clock, (uint32_t)a->o.window_frames);
	if (r < 0)
		return r;
	if (a->lat.enabled)
		log_info("trace clock %s: measuring commit-to-durable latency", a->clock);
	r = win_new((size_t)a->o.window_kb * 1024, (uint32_t)a->o.window_frames, &a->win);
	if (r < 0) {
		log_error("cannot create a window of %lu KiB / %lu frames: %s",
			  a->o.window_kb, a->o.window_frames, strerror(-r));
		return r;
	}
	/* the epoch in effect at any held frame, after its EPOCH frame left (gap.h) */
	win_track(a->win, SMP_EPOCH);
	r = sess_init(&a->sess, a->win);
	if (r < 0)
		return r;
	open_marker(a);
	r = rings_open(a->tracefs, a->cpus, a->nr_cpu_dirs, a->pl.page_size, &a->rings);
	if (r < 0)
		return r;
	r = delta_init(&a->delta, a->tracefs);
	if (r < 0)
		return r;
	a->stream_id = sysinfo_random_u64();
	r = agent_send_metadata(a, false);
	if (r < 0)
		return r;
	delta_try_open(a);
	r = agent_build_hello(a);
	if (r < 0)
		return r;
	log_info("stream %016" PRIx64 ": kernel %s, %" PRIu32 " CPUs, %" PRIu32 "-byte "
		 "pages, clock %s, tracefs %s", a->stream_id, a->release, a->nr_cpus,
		 a->pl.page_size, a->clock, a->tracefs);
	return 0;
}

void agent_free(struct agent *a)
{
	sess_done(&a->sess);
	win_free(a->win);
	rings_close(a->rings);
	delta_done(&a->delta);
	if (a->marker_fd >= 0)
		close(a->marker_fd);
	a->marker_fd = -1;
	port_close(&a->port);
	free(a->cpus);
	free(a->formats);
	free(a->modules);
	cmdlines_clear(&a->cmdlines);
	free(a->lost_last);
	latency_done(&a->lat);
}
