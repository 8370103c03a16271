// SPDX-License-Identifier: MIT
/* postmortem.c - a crashed guest's kernel log out of its core (see postmortem.h). */
#include "postmortem.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "conn-driver.h"
#include "ingest-arena.h"
#include "kvmem.h"
#include "pm-arena.h"
#include "pm-frames.h"
#include "pm-map.h"
#include "pm-ring.h"
#include "proto.h"
#include "store-ingest.h"
#include "store-postmortem.h"

HaKmsg *ha_postmortem_kmsg(HaCore *core, HaVmci **ret_vi, HaKvmem **ret_m,
			   GError **error)
{
	g_autoptr(HaVmci) vi = NULL;
	g_autoptr(HaKvmem) m = NULL;
	HaKmsg *k;
	const uint8_t *note;
	size_t len;

	note = ha_core_note(core, "VMCOREINFO", 0, &len);
	if (!note) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "the dump has no VMCOREINFO note (the guest needs"
			    " CONFIG_FW_CFG_SYSFS and CONFIG_CRASH_CORE, QEMU -device"
			    " vmcoreinfo)");
		return NULL;
	}
	vi = ha_vmci_parse(note, len, error);
	if (!vi)
		return NULL;
	m = ha_kvmem_new(core, vi, error);
	k = m ? ha_kmsg_recover(m, vi, error) : NULL;
	if (ret_vi) {
		if (ret_m)
			*ret_m = g_steal_pointer(&m);
		*ret_vi = g_steal_pointer(&vi);
	}
	return k;
}

/* What the replay of the unstreamed frames could not do, appended to @why. */
static void why_add(GString *why, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void why_add(GString *why, const char *fmt, ...)
{
	va_list ap;

	if (why->len)
		g_string_append(why, "; ");
	va_start(ap, fmt);
	g_string_append_vprintf(why, fmt, ap);
	va_end(ap);
}

/*
 * Everything of @boot that was not streamed, out of @core, replayed into the store
 * through a recovering connection (pm-arena.h): the frames of the agent's window,
 * then the map records (pm-map.h), then the ring buffers' unread pages (pm-ring.h),
 * the map first so that the pages' ids resolve as they are stored. The seam:
 *   - the window's frames carry their seqs: those the store has are duplicates;
 *   - the frames rebuilt from the kernel's structures take the seqs after both the
 *     window's newest and the stream's next, so none of them is taken for one;
 *   - the ring buffers hold exactly what no reader consumed (pm-ring.h), the map
 *     records are ignored when the store has them (the same id with the same frames).
 * Returns false when nothing could be replayed; @why says what was missed.
 */
static bool replay_unstreamed(HaStore *store, int64_t boot, HaCore *core, const HaVmci *vi,
			      HaKvmem *m, HaPmRow *row, GString *why)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(HaArenaList) l = NULL;
	g_autoptr(GBytes) map = NULL, scanned = NULL, stream = NULL;
	g_autoptr(GByteArray) all = g_byte_array_new();
	HaPmArenaScan scan = { 0 };
	HaPmRingStats rst = { 0 };
	HaPmMapStats mst = { 0 };
	HaConnStats cs = { 0 };
	HaPmFrames f = { 0 };
	HaLimits lim;
	struct smp_hello h;
	uint64_t stream_id = 0, next;
	int64_t epoch;
	guint retired = 0;
	bool found;
	bool ok = false;

	/* nothing the live connection applied stays uncommitted, nothing it reads now
	 * is applied: from here the store's seqs are final */
	if (!ha_arena_retire_boot(store, boot, &retired, &e)) {
		g_warning("post-mortem of boot %" PRId64 ": %s", boot, e->message);
		g_clear_error(&e);
	}
	l = ha_arena_list_load(store, boot, &e);
	if (!l)
		why_add(why, "the agent's window: %s", e ? e->message :
			"the guest agent announced none for this boot");
	else if (!(map = ha_pm_arena_read(core, l, &e)) ||
		 !(scanned = ha_pm_arena_scan(g_bytes_get_data(map, NULL),
					      g_bytes_get_size(map), &scan, &e)))
		why_add(why, "the agent's window: %s", e->message);
	g_clear_error(&e);
	if (scanned) {
		g_byte_array_append(all, g_bytes_get_data(scanned, NULL),
				    (guint)g_bytes_get_size(scanned));
		stream_id = scan.stream_id;
		row->arena_frames = scan.frames;
	} else if (!ha_store_pm_hello(store, boot, all, &stream_id, &e)) {
		why_add(why, "%s", e->message);
		return false;
	}
	/* the stream starts with a whole HELLO frame (checked by the scan or built here) */
	if (!ha_pm_stream_hello(all->data, all->len, &h)) {
		why_add(why, "the replay's HELLO does not decode");
		return false;
	}
	if (!ha_store_stream_find(store, boot, stream_id, &found, &row->stream, &next, &epoch,
				  &e)) {
		why_add(why, "%s", e->message);
		return false;
	}
	if (!found) {
		/* the window's stream never reached the store: it starts at seq 1 */
		row->stream = -1;
		next = 1;
	}
	row->seam_seq = (int64_t)next;
	ha_pm_frames_init(&f, MAX(next, scan.seq_hi + 1));
	if (!ha_pm_map_recover(m, vi, &f, &mst, &e)) {
		why_add(why, "the stack map: %s", e->message);
		g_clear_error(&e);
	} else if (mst.why) {
		why_add(why, "the stack map: %s", mst.why);
	}
	row->map_records = mst.backlog_records + mst.unread_records + mst.live_records;
	if (!ha_pm_ring_recover(m, vi, h.nr_cpus, h.page_size, &f, &rst, &e)) {
		why_add(why, "the ring buffers: %s", e->message);
		g_clear_error(&e);
	} else if (rst.cpus_failed) {
		why_add(why, "the ring buffers of %u CPUs: %s", rst.cpus_failed, rst.why);
	}
	row->ring_pages = rst.pages;
	row->ring_events = rst.events;
	g_byte_array_append(all, f.out->data, f.out->len);
	stream = g_byte_array_free_to_bytes(g_steal_pointer(&all));
	ha_limits_default(&lim);
	ok = ha_pm_arena_replay(store, &lim, "post-mortem", boot, stream, &cs, &e);
	if (!ok)
		why_add(why, "the replay: %s", e->message);
	row->frames_stored = cs.applied - MIN(cs.applied, cs.recovered_dup_pages);
	row->frames_dup = cs.duplicates + cs.recovered_dup_pages;
	row->events_stored = cs.events;
	g_message("post-mortem of boot %" PRId64 ": %u live connection(s) retired; replayed"
		  " from seq %" PRIu64 ": %" PRIu64 " frames of the agent's window (seq %"
		  PRIu64 "..%" PRIu64 "), %" PRIu64 " map records (epoch %" PRIu64 "), %"
		  PRIu64 " unread ring-buffer pages of %u CPUs (%" PRIu64 " events): %" PRIu64
		  " frames stored, %" PRIu64 " the store had (%" PRIu64 " of them pages an"
		  " earlier recovery stored), %" PRIu64 " missing, %" PRIu64 " malformed",
		  boot, retired, next, scan.frames, scan.seq_lo, scan.seq_hi,
		  row->map_records, mst.epoch, rst.pages, rst.cpus, rst.events, cs.applied,
		  row->frames_dup, cs.recovered_dup_pages, cs.gap_frames, cs.malformed);
	if (ok && cs.malformed)
		why_add(why, "%" PRIu64 " replayed frames were malformed", cs.malformed);
	ha_pm_frames_clear(&f);
	ha_pm_ring_stats_clear(&rst);
	ha_pm_map_stats_clear(&mst);
	return ok;
}

bool ha_postmortem_recover(HaStore *store, int64_t boot, const char *path,
			   const char *source, int64_t dump_ms, GError **error)
{
	/* the store's connection runs on its own thread: it waits meanwhile */
	g_autoptr(HaDriverHold) hold = ha_driver_hold_store(store);
	g_autoptr(GError) e = NULL, se = NULL;
	g_autoptr(HaCore) core = NULL;
	g_autoptr(HaVmci) vi = NULL;
	g_autoptr(HaKvmem) m = NULL;	/* borrows vi: freed first */
	g_autoptr(HaKmsg) k = NULL;
	g_autoptr(GString) why = g_string_new(NULL);
	int64_t t0 = g_get_monotonic_time();
	uint64_t off;
	bool replayed = false, same = false;
	HaPmRow row = {
		.time_us = g_get_real_time(),
		.source = source,
		.dump_ms = dump_ms,
		.kernel_offset = -1,
		.stream = -1,
		.seam_seq = -1,
	};
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		g_set_error(&e, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s", path,
			    g_strerror(errno));
	} else {
		core = ha_core_open_fd(fd, &e);
		if (core) {
			row.dump_bytes = ha_core_ram_bytes(core);
			k = ha_postmortem_kmsg(core, &vi, &m, &e);
		} else {
			g_prefix_error(&e, "%s: ", path);
		}
	}
	if (vi) {
		const char *rel = ha_vmci_get(vi, "OSRELEASE");
		g_autoptr(GError) ke = NULL;

		row.osrelease = rel;
		if (ha_vmci_hex(vi, "KERNELOFFSET", &off) && off <= INT64_MAX)
			row.kernel_offset = (int64_t)off;
		same = ha_store_pm_same_kernel(store, boot, rel, ha_vmci_get(vi, "BUILD-ID"),
					       &ke);
		if (!same) {
			g_clear_pointer(&k, ha_kmsg_free);
			g_clear_error(&e);
			e = g_steal_pointer(&ke);
		}
	}
	if (!k && e)
		why_add(why, "the kernel log: %s", e->message);
	else if (k && k->skipped)
		why_add(why, "%" PRIu64 " log records in the ring could not be read", k->skipped);
	/* without a reader of kernel addresses the kernel log said why */
	if (same && m)
		replayed = replay_unstreamed(store, boot, core, vi, m, &row, why);
	row.recover_ms = (g_get_monotonic_time() - t0) / 1000;
	if (core)
		g_message("post-mortem: read %" PRIu64 " bytes of the %" PRIu64 " MiB dump in"
			  " %" PRId64 " ms: %s%s%s", ha_core_bytes_read(core),
			  row.dump_bytes >> 20, row.recover_ms,
			  k ? "kernel log recovered" : "no kernel log",
			  replayed ? ", unstreamed frames replayed" : "",
			  why->len ? "" : ", nothing missed");
	if (!k && !replayed)
		row.status = "failed";
	else if (why->len)
		row.status = "partial";
	else
		row.status = "recovered";
	row.message = why->len ? why->str : NULL;
	if (!ha_store_pm_save(store, boot, &row, k, &se)) {
		if (fd >= 0)
			close(fd);
		g_propagate_error(error, g_steal_pointer(&se));
		return false;
	}
	if (fd >= 0)
		close(fd);	/* after the last read of @core */
	if (!k && !replayed) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", why->str);
		return false;
	}
	return true;
}
