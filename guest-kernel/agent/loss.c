// SPDX-License-Identifier: MIT
/*
 * loss.c - loss accounting and the agent's figures: LOST (each CPU's ring-buffer
 * counters and the frames the window dropped, whenever one of them moved) and STATS
 * (the map's counters, the agent's traffic and CPU, commit-to-durable latency).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

/*
 * CPU @i's per_cpu/cpuN/stats into @ret, through an fd kept open (opened at the first
 * read; one pread() a read, tracefs.h), or by its path when it cannot be opened.
 */
static void read_cpu_stats(struct agent *a, uint32_t i, struct smp_lost_cpu *ret)
{
	if (!a->stats_fds) {
		a->stats_fds = malloc(a->nr_cpu_dirs * sizeof(*a->stats_fds));
		for (uint32_t k = 0; a->stats_fds && k < a->nr_cpu_dirs; k++)
			a->stats_fds[k] = tracefs_open_cpu_stats(a->tracefs, a->cpus[k]);
	}
	if (a->stats_fds && a->stats_fds[i] >= 0 &&
	    tracefs_pread_cpu_stats(a->stats_fds[i], a->cpus[i], ret) == 0)
		return;
	(void)tracefs_read_cpu_stats(a->tracefs, a->cpus[i], ret);
}

void agent_close_cpu_stats(struct agent *a)
{
	for (uint32_t k = 0; a->stats_fds && k < a->nr_cpu_dirs; k++)
		if (a->stats_fds[k] >= 0)
			close(a->stats_fds[k]);
	free(a->stats_fds);
	a->stats_fds = NULL;
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
		read_cpu_stats(a, i, &cpus[i]);
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
