/* SPDX-License-Identifier: MIT */
/*
 * store.h - the per-domain SQLite database.
 *
 * One file per domain, <state-dir>/<domain>.db, in WAL mode. The domain name comes
 * from the operator (validated by ha_store_name_ok()), never from the guest.
 *
 * Tables (schema version HA_STORE_SCHEMA, migrations in store.c):
 *   boots        one row per guest boot_id: kernel release, build-id, clock, first and
 *                last contact (host time), how it ended ('clean', 'crashed',
 *                'disconnected', NULL while streaming), and the events still waiting
 *                for their stack event when the last batch committed (pair.h)
 *   streams      one row per (boot, stream_id): next expected seq, gaps, malformed
 *                frames, the epoch the stream's deltas are in, guest drop counters
 *   epochs       (boot, epoch) -> tag, trace-clock start of the epoch
 *   stacks       (boot, epoch, stack_id) -> depth, ips (little-endian u64s)
 *   fullstacks   inline stacks from ftrace/kernel_stack events, deduplicated per boot
 *   chunks       raw PAGE payloads of one CPU, zstd-compressed, with first/last seq,
 *                trace-clock range, page, ring-event and traced-event counts, and
 *                whether they were recovered from a crashed guest's memory
 *   stack_counts per boot and stack key (hist.h): traced events and their time range
 *   texts        FORMAT texts per boot (by name, the latest wins), KSYMS and
 *                MODULES snapshots per stream and generation
 *   lost         latest per-CPU LOST counters per stream
 *   stats        latest STATS values per stream
 *   clock_samples answered clock probes per boot (clocksync.h): the guest trace-clock
 *                time of the probe's marker (guest_ts, on guest CPU cpu) lies in host
 *                [mono_lo, mono_hi] (CLOCK_MONOTONIC ns: probe sent, reply read), i.e.
 *                [real_lo, real_hi] (CLOCK_REALTIME ns); boot_off = CLOCK_BOOTTIME -
 *                CLOCK_MONOTONIC and tai_off = CLOCK_TAI - CLOCK_REALTIME at mono_lo
 *   gaps         frames seq_lo..seq_hi of a stream that never arrived (the guest's
 *                window dropped them): per CPU, the newest event time the host held
 *                then (after_ts, 0: none yet), so the loss lies after it
 *   boot_rows    per boot, its rows in streams, epochs, stacks, fullstacks,
 *                stack_counts and its distinct gaps (stream, seq_lo): kept by triggers in the same transaction as the
 *                rows themselves, so that a HELLO reads the boot's row limits
 *                (ingest.h) without counting them
 *   postmortems  per crashed boot, the recovery from its memory (store-postmortem.h):
 *                when, from what, status and why, dump size and times, counts, and
 *                the seam: the stream and the first seq the recovery replayed
 *   kmsg         the kernel log records recovered (or, later, streamed: recovered
 *                = 0) per boot: printk seq, time, caller, text
 *   arenas       per boot, the newest list of the guest agent's window pages
 *                (ARENA, ingest-arena.h): stream, page size, guest-physical addresses
 *
 * Durability: every connection's frames are applied inside one transaction per batch;
 * ha_store_commit() returns only once SQLite has committed (synchronous=FULL: with WAL,
 * NORMAL may lose the last transactions on power loss, and the guest would have dropped
 * frames we ACKed; FULL fsyncs the WAL at each commit, which batching makes cheap).
 */
#ifndef HA_STORE_H
#define HA_STORE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define HA_STORE_SCHEMA 7

typedef struct _HaStore HaStore;

/* True when @name is a usable domain name: [A-Za-z0-9_.-], 1..64, no leading '.'. */
bool ha_store_name_ok(const char *name);

/*
 * Open (creating and migrating as needed) the database @path. @readonly opens an
 * existing database for reports. Returns NULL with @error set on failure; free with
 * ha_store_free().
 */
/* A number no other store opened by this process has (1, 2, ...): a key for what is
 * kept about a store outside it, which a pointer is not once the store is freed. */
uint64_t ha_store_serial(const HaStore *s);
HaStore *ha_store_open(const char *path, bool readonly, GError **error);
void ha_store_free(HaStore *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaStore, ha_store_free)

const char *ha_store_path(HaStore *s);

bool ha_store_begin(HaStore *s, GError **error);
bool ha_store_commit(HaStore *s, GError **error);
void ha_store_rollback(HaStore *s);
bool ha_store_in_txn(HaStore *s);

/* A read transaction (BEGIN, deferred): every read until ha_store_read_end() sees one
 * snapshot of the database, while writers go on (WAL). For a reader of a store opened
 * read-only (reports, export, the fleet shipper); not around ha_store_begin(). */
bool ha_store_read_begin(HaStore *s, GError **error);
void ha_store_read_end(HaStore *s);

/* Bytes used on disk by the database and its WAL. */
uint64_t ha_store_disk_bytes(HaStore *s);

/*
 * A store lent to another thread: the ingest commits a batch on a commit thread
 * (ingest-commit.c) while its connection's thread goes on reading. The owner's thread
 * calls ha_store_lend() before it hands the store over; the borrowing thread calls
 * ha_store_borrow() first and ha_store_give_back() last, touching the store only in
 * between. Meanwhile every call above (and ha_store_free()) from any other thread
 * waits until the store is given back, so the connection is never used by two
 * threads at once and the owner sees everything the borrower did. ha_store_wait()
 * waits for that alone. A loan whose borrower never took it (its work dropped before
 * it started) ends with ha_store_give_back() from the owner's thread.
 */
void ha_store_lend(HaStore *s);
void ha_store_borrow(HaStore *s);
void ha_store_give_back(HaStore *s);
void ha_store_wait(HaStore *s);

/* Set @error from the connection's last error, prefixed with @what. */
void ha_store_set_error(HaStore *s, GError **error, const char *what);

#endif /* HA_STORE_H */
