// SPDX-License-Identifier: MIT
/*
 * setup.c - the agent's life cycle (agent.h): setup reads the HELLO facts (boot_id,
 * release, build-id, trace clock, page layout, CPUs) and opens the window, the
 * session, the rings, the delta file and trace_marker; HELLO is built from those
 * facts; a fresh stream starts everything that is per stream again.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "sysinfo.h"
#include "util.h"

uint32_t agent_ack_bytes(const struct agent *a)
{
	return a->o.ack_ms ? (uint32_t)MIN(a->o.window_kb * 1024 / 8, UINT32_MAX) : 0;
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
	h.ack_ms = a->o.ack_ms;
	h.ack_bytes = agent_ack_bytes(a);
	r = stream_hello(&h, frame, sizeof(frame));
	if (r < 0)
		return (int)r;
	sess_set_hello(&a->sess, frame, (size_t)r);
	return 0;
}

void agent_announce_arena(struct agent *a, bool changed_only)
{
	int r = arena_refresh(&a->arena);

	if (r < 0 || (changed_only && r == 0) || a->sess.state != SESS_UP)
		return;
	if (arena_encode(&a->arena, a->sess.host_max_payload) < 0)
		return;
	if (r == 1 && a->arena.changes)
		log_info("the window's pages moved: announcing them again (list %" PRIu64 ")",
			 a->arena.list_id);
	sess_set_arena(&a->sess, a->arena.frames, a->arena.frames_len);
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
	agent_send_metadata(a, a->win, false);
	agent_delta_open(a);
	return agent_build_hello(a);
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
	r = read_file_at(a->tracefs, "trace_clock", TRACEFS_FILE_MAX, &text, NULL);
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
	/* locked, and its pages' physical addresses announced (arena.h) */
	r = arena_init(&a->arena, a->win, "/proc/self/pagemap");
	if (r < 0)
		return r;
	(void)arena_refresh(&a->arena);
	/* the epoch in effect at any held frame, after its EPOCH frame left (gap.h) */
	win_track(a->win, SMP_EPOCH);
	r = sess_init(&a->sess, a->win);
	if (r < 0)
		return r;
	a->sess.crc32c_only = a->o.crc32c_only;
	open_marker(a);
	r = rings_open(a->tracefs, a->cpus, a->nr_cpu_dirs, &a->pl, &a->rings);
	if (r < 0)
		return r;
	r = delta_init(&a->delta, a->tracefs);
	if (r < 0)
		return r;
	a->stream_id = sysinfo_random_u64();
	r = agent_send_metadata(a, a->win, false);
	if (r < 0)
		return r;
	agent_delta_open(a);
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
	if (a->win)
		arena_done(&a->arena);
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
	agent_close_cpu_stats(a);
	latency_done(&a->lat);
}
