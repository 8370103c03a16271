/* SPDX-License-Identifier: MIT */
/*
 * pm-arena.h - post-mortem of the guest agent's resend window: the frames it had read
 * from the ring buffers but the host had not stored when the guest panicked.
 *
 * The guest agent keeps every sequenced frame, sealed, in one arena until the host
 * ACKs it, behind a page with a recovery header holding a copy of its stream's HELLO
 * (PROTOCOL.md 4.12), and announces the guest-physical address of every page (ARENA,
 * kept per boot by ingest-arena.h). From a dump of the guest's memory:
 *
 *   ha_pm_arena_read()    the announced pages out of the core, in list order;
 *   ha_pm_arena_scan()    the header's HELLO and every whole frame found in the arena
 *                         (magic, header CRC, payload CRC), ordered by seq, as the
 *                         byte stream a reconnecting agent would send: the HELLO,
 *                         then the frames flagged RESENT;
 *   ha_pm_arena_replay()  that stream through a recovering connection (ingest.h,
 *                         ha_conn_set_recovered()) into the crashed boot: frames the
 *                         store holds are duplicates, the rest are stored, nothing is
 *                         acknowledged to anyone;
 *   ha_pm_arena_recover() all of it, after retiring the boot's live connections
 *                         (ingest-arena.h), for postmortem.c.
 *
 * Everything read from the dump is hostile: the header's sizes are bounded, the scan
 * visits each arena byte at most once as a frame start and checksums at most
 * HA_PM_ARENA_CRC_BUDGET times the arena's size, every length is checked against the
 * arena before use, the HELLO must decode and be of the boot recovered into, and the
 * frames then go through the same ingest checks as a live guest's.
 */
#ifndef HA_PM_ARENA_H
#define HA_PM_ARENA_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "coredump.h"
#include "ingest-arena.h"
#include "ingest.h"
#include "proto.h"
#include "store.h"

/* Largest window read from a dump (the agent's --window-kb is 16 MiB by default). */
#define HA_PM_ARENA_MAX_BYTES	(1ull << 30)
/* Payload bytes checksummed by a scan, at most this many times the arena's size. */
#define HA_PM_ARENA_CRC_BUDGET	4u

typedef struct {
	uint32_t pages;		/* pages announced */
	uint64_t arena_bytes;	/* arena scanned */
	uint64_t frames;	/* whole sequenced frames found, each seq once */
	uint64_t seq_lo, seq_hi;	/* their seq range (0, 0: none) */
	uint64_t same_seq;	/* frames whose seq another frame had (the first kept) */
	uint64_t unsequenced;	/* whole frames with seq 0 (not the window's) */
	uint64_t bad;		/* a magic whose header or payload checksum failed */
	bool budget_hit;	/* the scan stopped at HA_PM_ARENA_CRC_BUDGET */
	uint64_t stream_id;	/* of the HELLO */
} HaPmArenaScan;

/*
 * The mapping @l names (header pages and arena) out of @core, in list order (g_bytes
 * owned by the caller). NULL with @error when a page is not in the core or the
 * mapping is above HA_PM_ARENA_MAX_BYTES.
 */
GBytes *ha_pm_arena_read(HaCore *core, const HaArenaList *l, GError **error);

/*
 * Scan @map (@len bytes: the recovery header, then the arena) and return the stream
 * to replay: the HELLO, then each frame once, in seq order, flagged RESENT (caller
 * frees). *@ret gets what was found (may be NULL). NULL with @error when the header or
 * its HELLO is not valid. Never reads outside @map.
 */
GBytes *ha_pm_arena_scan(const uint8_t *map, size_t len, HaPmArenaScan *ret,
			 GError **error);

/*
 * The HELLO frame a replay stream (@buf, @len bytes) starts with, decoded into @ret
 * (its strings point into @buf): false when the stream is shorter than the frame its
 * header announces or does not start with a HELLO that decodes.
 */
bool ha_pm_stream_hello(const uint8_t *buf, size_t len, struct smp_hello *ret);

/*
 * Feed @stream (ha_pm_arena_scan()) to a new recovering connection on @store: its
 * HELLO must be of boot @boot. *@ret_stats (may be NULL) gets the connection's
 * counters (duplicates: frames the store had; applied: frames stored now; gap_frames:
 * frames missing in between). False with @error when the HELLO is not @boot's or the
 * connection failed (a failed batch is not committed).
 */
bool ha_pm_arena_replay(HaStore *store, const HaLimits *limits, const char *domain,
			int64_t boot, GBytes *stream, HaConnStats *ret_stats, GError **error);

typedef struct {
	guint retired;		/* live connections retired first */
	HaPmArenaScan scan;
	HaConnStats conn;
} HaPmArenaResult;

/*
 * The whole post-mortem of the window of @boot: retire its live connections (their
 * batches committed: ha_arena_retire_boot()), read the newest ARENA list announced
 * for it from @core, scan, replay. Call on the thread of the domain's connections
 * (the main loop), any time after the dump is complete; the live connection may stay
 * open (it ignores its input from then on). False with @error when no list was
 * announced for @boot, or a step failed; *@ret (may be NULL) gets what was done so far.
 */
bool ha_pm_arena_recover(HaCore *core, HaStore *store, const HaLimits *limits,
			 const char *domain, int64_t boot, HaPmArenaResult *ret,
			 GError **error);

#endif /* HA_PM_ARENA_H */
