/* SPDX-License-Identifier: MIT */
/*
 * store-postmortem.h - what a recovery from a crashed guest's memory adds to its boot.
 *
 * Tables postmortems and kmsg (store.h). A recovery joins the boot that crashed: the
 * one the hypervisor's panic event marked (crash.h), and only when the dump's kernel
 * is that boot's (VMCOREINFO's OSRELEASE and BUILD-ID against the release and build
 * id the stream's HELLO gave, when both are known). Its rows are written under one
 * SAVEPOINT: inside a connection's open batch or alone, a failed recovery leaves
 * nothing, and nothing streamed is touched (kmsg and postmortems are only these
 * rows). The kernel log is stored as the records the ring held, marked recovered.
 */
#ifndef HA_STORE_POSTMORTEM_H
#define HA_STORE_POSTMORTEM_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "kmsg.h"
#include "store.h"

typedef struct {
	int64_t time_us;	/* host real time of the recovery */
	const char *source;	/* how the memory was read ("qmp dump-guest-memory") */
	const char *status;	/* "recovered", "partial", "failed" */
	const char *message;	/* what could not be recovered and why, or NULL */
	uint64_t dump_bytes;
	int64_t dump_ms, recover_ms;	/* -1: unknown */
	const char *osrelease;	/* VMCOREINFO's, or NULL */
	int64_t kernel_offset;	/* KASLR slide, or -1 */
	/* the replay of what was not streamed (postmortem.h) */
	int64_t stream;		/* streams.id replayed into, or -1: none */
	int64_t seam_seq;	/* the stream's next seq before it, or -1 */
	uint64_t arena_frames;	/* frames found in the agent's window */
	uint64_t ring_pages;	/* ring-buffer pages no reader had consumed */
	uint64_t ring_events;	/* their events */
	uint64_t map_records;	/* map records the reader had not read, and the live map */
	uint64_t frames_stored;	/* replayed frames the store did not have */
	uint64_t frames_dup;	/* replayed frames it had */
	uint64_t events_stored;	/* ring-buffer events those stored frames hold */
} HaPmRow;

/*
 * The boot a dump taken now belongs to: the newest boot marked 'crashed' whose
 * end time is at or after @since_us (the panic event this hypervisor instance
 * reported). 0 when there is none.
 */
int64_t ha_store_pm_crashed_boot(HaStore *s, int64_t since_us, GError **error);

/* Whether @boot's kernel is the dump's: false with @error saying how they differ.
 * @osrelease / @build_id_hex NULL: not checked. */
bool ha_store_pm_same_kernel(HaStore *s, int64_t boot, const char *osrelease,
			     const char *build_id_hex, GError **error);

/* Store @row and @kmsg's records (may be NULL) for @boot, replacing an earlier
 * recovery of it. */
bool ha_store_pm_save(HaStore *s, int64_t boot, const HaPmRow *row, const HaKmsg *kmsg,
		      GError **error);

/*
 * The HELLO (a whole frame, seq 0) of @boot's newest stream, as the store holds it,
 * for a replay when the guest agent's own copy is not in the dump; with that stream's
 * id. False with @error when the boot has no stream.
 */
bool ha_store_pm_hello(HaStore *s, int64_t boot, GByteArray *out, uint64_t *ret_stream_id,
		       GError **error);

/*
 * The guest agent's window pages (@nr little-endian u64 guest-physical addresses in
 * @addrs) as @boot's newest ARENA list, replacing the one stored before.
 */
bool ha_store_pm_put_arena(HaStore *s, int64_t boot, uint64_t stream_id,
			   uint32_t page_size, const uint64_t *addrs, uint32_t nr,
			   GError **error);
/* @boot's stored list: false without @error when there is none. */
bool ha_store_pm_get_arena(HaStore *s, int64_t boot, uint64_t *ret_stream_id,
			   uint32_t *ret_page_size, GArray **ret_addrs, GError **error);

/* Call @fn with the CPU and the compressed data of each chunk of @boot recovered from
 * a dump (chunks.recovered), in id order. */
typedef void (*HaStorePmChunkFn)(uint32_t cpu, const void *data, size_t len, void *user);
bool ha_store_pm_recovered_chunks(HaStore *s, int64_t boot, HaStorePmChunkFn fn,
				  void *user, GError **error);

#endif /* HA_STORE_POSTMORTEM_H */
