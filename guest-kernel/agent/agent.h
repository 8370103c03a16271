/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the agent's state and life cycle, shared by main.c (options, main loop)
 * and the files that turn what the kernel exposes into frames, one job each:
 *
 *   setup.c     the HELLO facts, opening the rings, the delta file, the window and
 *               the session; HELLO; a fresh stream
 *   metadata.c  FORMAT, KSYMS, MODULES, CMDLINES, into the window it is given
 *   collect.c   each CPU's pages, then the delta records; the periodic rescan
 *   loss.c      LOST and STATS
 *   recover.c   after a gap: the snapshot and the epoch in effect ahead of the held
 *               frames (gap.h), the delta file reopened
 *
 * Life cycle: agent_setup() reads the HELLO facts and opens the rings, the delta file
 * and the window, and queues the first metadata snapshot (FORMAT, KSYMS, MODULES);
 * the main loop then connects to the port, handshakes, and moves data until SIGTERM,
 * when it queues the final LOST, STATS and BYE and lingers until BYE is ACKed.
 */
#ifndef SMG_AGENT_H
#define SMG_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "cmdlines.h"
#include "delta.h"
#include "latency.h"
#include "listen.h"
#include "port.h"
#include "proto.h"
#include "ring.h"
#include "session.h"
#include "stream.h"
#include "sysinfo.h"
#include "tracefs.h"
#include "window.h"

struct options {
	const char *port_name;
	const char *port_path;
	const char *sysfs;
	const char *procfs;
	const char *devdir;
	const char *tracefs;
	unsigned flush_ms;
	unsigned long window_kb;
	unsigned long window_frames;
	bool hold_when_full;	/* --hold-when-full: backpressure (agent_holding()) */
	bool crc32c_only;	/* --frame-checksum crc32c: never XXH64 (sess.crc32c_only) */
	unsigned stats_ms;
	unsigned rescan_ms;
	unsigned reconnect_ms;
	unsigned hello_ms;
	unsigned linger_ms;
	unsigned ack_ms;	/* --ack-ms: the HELLO's ACK pacing (agent_build_hello()) */
	struct tracefs_setup setup;
	/* test hooks, to force each order of a gap (see main.c's usage) */
	unsigned long test_hold_drops;	/* 0: off */
	int test_stall;			/* TEST_STALL_* */
};

enum {
	TEST_STALL_NONE,
	TEST_STALL_AT_EPOCH,		/* send nothing from the first EPOCH on */
	TEST_STALL_AFTER_EPOCH,		/* send nothing after the first EPOCH */
};

/* The agent's counters that go into STATS (and the log at exit). */
struct agent_counters {
	uint64_t pages;		/* PAGE frames built */
	uint64_t page_bytes;	/* their data bytes */
	uint64_t empty_pages;	/* pages with nothing committed */
	uint64_t bad_pages;	/* pages with an impossible commit, not sent */
	uint64_t missed_pages;	/* pages flagged RB_MISSED_EVENTS */
	uint64_t stacks;	/* stack records */
	uint64_t epochs;	/* epoch records */
	uint64_t bad_deltas;	/* invalid delta buffers discarded */
	uint64_t window_full_holds;	/* times the rings were left unread: window full */
	uint64_t rounds;	/* collection rounds on the flush timer */
	uint64_t wakeups;	/* returns from poll() */
	uint64_t port_reads;	/* read() calls on the port */
	uint64_t port_empty_reads;	/* ... that found nothing (EAGAIN) */
};

struct agent {
	struct options o;
	char tracefs[4096];

	struct win *win;
	struct arena arena;	/* the window's pages, announced for post-mortems */
	struct sysinfo_moves moves;	/* whether they may have moved since (rescan) */
	struct session sess;
	struct port port;
	bool have_port;		/* port.path is known */
	bool connected;		/* a host is there (session not DOWN) */

	struct rings *rings;
	uint32_t *cpus;
	uint32_t nr_cpu_dirs;
	uint32_t nr_cpus;
	struct page_layout pl;
	struct delta_reader delta;
	int marker_fd;		/* <tracefs>/trace_marker for the host's TIME probes, or -1 */

	/* HELLO facts */
	uint8_t boot_id[16];
	char release[256];
	uint8_t build_id[255];
	int build_id_len;
	char clock[256];
	uint64_t text_addr;
	uint64_t stream_id;
	uint64_t map_epoch;	/* the last epoch the delta file reported */

	/* the metadata snapshot of this stream */
	char *formats;		/* NUL-separated names sent in this stream */
	size_t formats_len;
	char *modules;		/* the last /proc/modules read, its module symbols sent */
	size_t ksyms_len;	/* bytes of the last kallsyms sent (window_full()'s reserve) */
	size_t modules_len;	/* bytes of the last /proc/modules sent */
	uint32_t ksyms_gen;
	uint32_t modules_gen;
	struct cmdlines cmdlines;	/* saved_cmdlines as last sent */
	uint32_t cmdlines_gen;

	uint64_t first_epoch_seq;	/* of the stream's first EPOCH frame, 0: none yet */

	/* test hooks (--test-hold-drops, --test-stall) */
	bool holding;		/* not reading the ring buffers */
	bool held_once;
	/* backpressure: the window is too full to take ring pages (agent_holding()) */
	bool window_full;

	/* loss and stats as last sent */
	struct smp_lost_cpu *lost_last;
	int *stats_fds;		/* per_cpu/cpuN/stats kept open, by cpu_dirs index (loss.c) */
	uint64_t lost_frames_last, lost_bytes_last;
	bool lost_sent;
	uint64_t stats_sig_last;

	struct agent_counters c;
	struct latency lat;	/* commit-to-durable time of pages */

	struct listen listen;	/* when a clock probe from the host is due */
	/* when the last ACK was read (CLOCK_MONOTONIC ms; 0: none since the WELCOME),
	 * and the window's resent frames then (main.c's ack_may_be_there()) */
	uint64_t t_ack_read;
	uint64_t resent_at_ack;

	/* timers, CLOCK_MONOTONIC ms; 0 = not armed */
	uint64_t t_gather, t_rescan, t_stats, t_reconnect, t_hello, t_linger;
	bool stopping;
	uint64_t bye_seq;
};

int agent_setup(struct agent *a);
void agent_free(struct agent *a);
/* The HELLO's ack_bytes: with --ack-ms, an ACK at once when an eighth of the window
 * waits for one (so the window is never full for want of it); 0 without. */
uint32_t agent_ack_bytes(const struct agent *a);

/* (Re)build the HELLO frame from the current facts and hand it to the session. */
int agent_build_hello(struct agent *a);
/* Queue into @w a metadata snapshot: FORMAT of every known format, KSYMS, MODULES,
 * CMDLINES (whole). @regen: a new generation (a resend or a change), else generation
 * 0 of a new stream. */
int agent_send_metadata(struct agent *a, struct win *w, bool regen);
/* Queue CMDLINES into @w: the whole saved_cmdlines when @full, else what changed. */
void agent_send_cmdlines(struct agent *a, struct win *w, bool full);
/* Into @w: FORMAT of newly enabled events, KSYMS and MODULES when the module list
 * changed, the CMDLINES that changed. */
void agent_rescan_metadata(struct agent *a, struct win *w);
/* Read every CPU's pages and the delta file into the window. Returns the number of
 * pages read (empty ones included): 0 when the rings had nothing. */
unsigned agent_collect(struct agent *a);
/* Read the delta file's records into the window (also before a gap is filled). */
void agent_collect_delta(struct agent *a);
/* Open the delta file if it is not open (logged once when it cannot be). */
void agent_delta_open(struct agent *a);
/* The slow periodic work: new enabled events, module changes, the delta file, LOST. */
void agent_rescan(struct agent *a);
/* Queue LOST when something changed (or @force). */
void agent_queue_lost(struct agent *a, bool force);
/* Close the per-CPU stats files agent_queue_lost() keeps open (agent_free()). */
void agent_close_cpu_stats(struct agent *a);
/* Queue STATS when something changed since the last one (or @force). */
void agent_queue_stats(struct agent *a, bool force);
/* Send ARENA (arena.h) when the session is UP: always, or with @changed_only only
 * when a page of the window moved since the last list. */
void agent_announce_arena(struct agent *a, bool changed_only);
/* A fresh stream: new stream_id, empty window, delta file reopened, new snapshot. */
int agent_fresh_stream(struct agent *a);
/*
 * The host resumed at @resume_seq but frames from there on were dropped with the
 * window: it may lack the formats, symbols, epoch and stack records they carried.
 * Put a new metadata snapshot and the epoch record in effect ahead of the held frames
 * it lacks, deciding on every frame it will not get, the ones dropped to make room
 * included (gap_fill()), and reopen the delta file so the whole current map follows
 * them. -errno when that cannot be done (the caller starts a fresh stream).
 */
int agent_after_gap(struct agent *a, uint64_t resume_seq);
/*
 * True while the agent holds off reading the ring buffers (and their stack deltas,
 * which must follow the pages they belong to):
 *  - backpressure, with --hold-when-full: from when the frames the host has not
 *    acknowledged leave less than a reserve of the window free (frames: a quarter;
 *    bytes: a quarter, or room for the next KSYMS and MODULES when that is more, at
 *    most half, since a module load queues them whether the agent holds or not)
 *    until they are down to two thirds of that mark. The ring buffers keep
 *    what is not read (and, full, lose their oldest events themselves, counted in
 *    their overrun) instead of the window dropping frames the agent has read, which
 *    the host could only record as lost. Not while stopping: the last drain before
 *    BYE reads everything. Without it (the default for now) a full window drops
 *    its oldest frames, which the host records as lost.
 *  - the --test-hold-drops hook: starts once the window has dropped that many frames
 *    (and ends a --test-stall), ends once the host has every frame the window holds.
 */
bool agent_holding(struct agent *a);

#endif
