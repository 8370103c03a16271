/* SPDX-License-Identifier: MIT */
/*
 * ingest.h - one guest connection: decode, validate, persist, acknowledge.
 *
 * A HaConn is transport-neutral. Its one user is the connection driver
 * (conn-driver.h), which every source runs its connections through: it reads with
 * ha_conn_read(), calls ha_conn_flush() when the input runs dry (now or by its commit
 * timer, ha_conn_commit_due_ms()), writes whatever ha_conn_output() holds (WELCOME,
 * ACK, TIME) and calls ha_conn_close() on EOF or error. Inside, a frame goes
 * through the stages of ingest-int.h (session, apply, batch) over the store's typed
 * calls (store-ingest.h).
 *
 * Memory per connection is bounded: the proto decoder's one buffer (header + max
 * payload, twice), a per-CPU batch of packed pages that is flushed at
 * HaLimits.batch_bytes, the pairing state (HA_PAIR_DEPTH events per CPU), the
 * full-stack cache (16 MiB) and the session's event parser, which holds the boot's
 * stored formats and whatever the guest adds within tep.h's budget. Per boot, across
 * sessions and connections, the stored formats are what a parser accepted within that
 * budget, so a later session's parser is bounded the same way (host-agent/README.md).
 *
 * Durability: frames of a batch are applied in one SQLite transaction; the ACK for
 * them is queued only after ha_store_commit() returned (store.h). A frame is applied
 * whole or not at all: each one is checked completely before it touches the store,
 * and a store failure anywhere (in a pairing callback too) fails the whole batch,
 * which is then neither committed nor acknowledged.
 *
 * Commits off the connection's thread: once ha_conn_set_committed() is called, a
 * batch that is full or flushed with ha_conn_flush_start() is compressed, written and
 * committed (fsync) on a commit thread while the connection reads and applies the
 * next one; its ACK is queued back on the connection's thread, which is then told
 * (HaConnCommitted). One commit per connection is in flight at a time: when the next
 * batch is full before it is done, ha_conn_read() returns HA_READ_PAUSED and the
 * frames wait in the decoder (and the guest's window) until the commit is done. A
 * frame that writes rows (every type but PAGE, or a HELLO) while a commit is in flight
 * pauses the connection the same way, held until it is done. Without
 * ha_conn_set_committed() every commit runs on the caller's thread (the unit tests,
 * the fuzzer).
 *
 * Main loop: besides the source's read watch and commit timer, a connection adds a
 * low-priority idle source of its own that merges the small chunks it stored
 * (compact.h) on a commit thread, as a flight of its own that a commit due before a
 * thread took it replaces (ingest-commit.c); ha_conn_close() merges what is left. A
 * commit made off the thread is told back by a source of G_PRIORITY_HIGH, above the
 * link's readable notification: its ACK goes out before the connection's next read.
 * Both go to the connection's context: the thread-default one of the
 * ha_conn_set_committed() call (its driver's thread, conn-driver.h), else the
 * caller's.
 */
#ifndef HA_INGEST_H
#define HA_INGEST_H

#include <glib.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "clocksync.h"
#include "latency.h"
#include "store.h"

/*
 * What a boot may store of the texts whose keys the guest chooses (KSYMS, MODULES and
 * CMDLINES chunks, keyed by stream, generation and chunk): per boot and kind, the bytes
 * of the texts plus HA_TEXT_ROW_COST per row, across every stream and session. A text
 * beyond its kind's budget is refused: counted as malformed (and in texts_refused),
 * not stored, its seq consumed. Two or more whole kallsyms of the largest the guest
 * agent sends (128 MiB) fit, and years of saved_cmdlines changes.
 */
#define HA_TEXT_ROW_COST	64u
#define HA_TEXT_KSYMS_MAX	(256ull << 20)
#define HA_TEXT_MODULES_MAX	(16ull << 20)
#define HA_TEXT_CMDLINES_MAX	(32ull << 20)

/*
 * Rows a guest can make a store hold in the tables keyed by numbers it chooses (the
 * texts have their budgets above; chunks are bounded by the disk quota; LOST rows by
 * nr_cpus per stream; STATS by HA_STAT_KEYS per stream). HaLimits holds them (tests
 * lower them); at each bound the host says so and stores nothing beyond it:
 *   boots per store      a HELLO of a new boot is refused (the connection ends with
 *                        the error, logged); the boots stored stay as they are
 *   streams per boot     a HELLO of a new stream of the boot is refused the same way
 *   epochs per boot      an EPOCH beyond is refused (malformed, logged); the stacks of
 *                        that epoch then are too, and its events count as orphans
 *   stacks per boot      a STACKS frame that would store more is refused (malformed,
 *                        logged), its events count as orphans
 *   gap positions        per boot (rows of table gaps, nr_cpus per gap): beyond,
 *                        streams.gap_frames alone counts the frames
 *   full stacks          per boot (table fullstacks, inline kernel_stack events):
 *                        a new one beyond is not stored; its events are counted
 *                        under HA_HIST_KEY_REFUSED (hist.h), their pages kept
 *   stack counts         per boot (rows of table stack_counts, one per stack key,
 *                        hist.h; the only rows an event's stack_id alone adds, even
 *                        an id no STACKS declared): the events of a new key beyond
 *                        are counted under HA_HIST_KEY_REFUSED, their pages kept
 * Both of the last two count each refused row in rows_refused, logged once per
 * session; HA_HIST_KEY_REFUSED itself and key 0 (no stack) are always counted.
 * The defaults leave room for years of a real guest: a reboot a day for 100 years,
 * an agent restart every minute for a month of one boot, a map reset a minute for
 * two years, 16 M distinct stacks and 16 M distinct inline stacks, and a count row
 * for each of them with 1 M more for ids the guest never declared (their STACKS
 * lost, or refused above).
 */
#define HA_BOOTS_MAX_DEFAULT	36500u
#define HA_STREAMS_MAX_DEFAULT	43200u
#define HA_EPOCHS_MAX_DEFAULT	(1u << 20)
#define HA_STACKS_MAX_DEFAULT	(16ull << 20)
#define HA_GAPS_MAX_DEFAULT	4096u
#define HA_FULLSTACKS_MAX_DEFAULT	(16ull << 20)
#define HA_COUNTS_MAX_DEFAULT	(HA_STACKS_MAX_DEFAULT + HA_FULLSTACKS_MAX_DEFAULT + \
				 (1ull << 20))
/* STATS keys stored per stream: keys 0..HA_STAT_KEYS-1 (PROTOCOL.md 4.7 defines up to
 * 25); others are ignored, as the protocol says, and logged once per session. */
#define HA_STAT_KEYS		256u

/* The disk quota of a domain's store unless configured (--quota-mb; 0: none). */
#define HA_QUOTA_DEFAULT_MB	1024u
#define HA_QUOTA_DEFAULT_BYTES	((uint64_t)HA_QUOTA_DEFAULT_MB << 20)

typedef struct {
	uint64_t quota_bytes;	/* database size limit per domain, 0: none */
	uint32_t max_payload;	/* announced in WELCOME, <= SMP_MAX_PAYLOAD */
	uint32_t max_malformed;	/* malformed frames per connection before we hang up */
	uint32_t max_hellos;	/* HELLOs per connection before we hang up */
	uint32_t batch_bytes;	/* flush a batch at this many payload bytes */
	uint32_t batch_frames;	/* ... or this many frames */
	int zstd_level;
	uint32_t time_probe_ms;	/* clock probes (clocksync.h) this often, 0: none */
	uint32_t max_boots;	/* boots per store (HA_BOOTS_MAX_DEFAULT) */
	uint32_t max_streams;	/* streams per boot */
	uint32_t max_epochs;	/* epochs per boot */
	uint64_t max_stacks;	/* stacks rows per boot, every epoch */
	uint32_t max_gaps;	/* gaps whose positions are stored, per boot */
	uint64_t max_fullstacks; /* fullstacks rows per boot */
	uint64_t max_counts;	/* stack_counts rows per boot */
} HaLimits;

void ha_limits_default(HaLimits *l);

typedef struct _HaConn HaConn;

/* @store is borrowed and must outlive the connection. @peer names it in logs. */
HaConn *ha_conn_new(HaStore *store, const HaLimits *limits, const char *domain,
		    const char *peer);
void ha_conn_free(HaConn *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaConn, ha_conn_free)

/* Where to read input to, and how much fits (0: call ha_conn_process first). */
size_t ha_conn_space(HaConn *c, uint8_t **ret_space);
void ha_conn_commit(HaConn *c, size_t n);

/*
 * Decode and apply every whole frame buffered. Returns false with @error when the
 * connection must be closed (protocol error, unsupported version, too many malformed
 * frames, store failure, quota reached).
 */
bool ha_conn_process(HaConn *c, GError **error);

/*
 * The read loop of every source: up to @max_reads reads, and @max_bytes bytes, from @fn
 * into the decoder, each applied at once. @fn returns bytes read, 0 at the end of the
 * input, -EAGAIN when nothing is there now, or another -errno. HA_READ_DRY: the input
 * ran dry (time for ha_conn_commit_due_ms()); HA_READ_MORE: @max_reads or @max_bytes
 * done, more may wait; HA_READ_END:
 * the guest side closed; HA_READ_FAILED: close the link, @error says why.
 */
typedef ssize_t (*HaReadFn)(void *ctx, uint8_t *buf, size_t len);
typedef enum {
	HA_READ_MORE, HA_READ_DRY, HA_READ_END, HA_READ_FAILED,
	HA_READ_PAUSED,	/* a commit is due while one is in flight: read again when told */
} HaReadResult;
HaReadResult ha_conn_read(HaConn *c, unsigned int max_reads, size_t max_bytes,
			  HaReadFn fn, void *ctx,
			  GError **error);

/* Commit the current batch and queue its ACK, on this thread (after the commit in
 * flight, if any). False with @error on store failure or when the quota is reached
 * (the batch is then rolled back and not acknowledged). */
bool ha_conn_flush(HaConn *c, GError **error);

/*
 * Asynchronous commits (see Durability above): @fn runs on the connection's thread
 * (the thread-default main context of the ha_conn_set_committed() call) after each
 * commit made off it, with NULL when its ACK is queued (write the output; a paused
 * connection can be read again), or with the error that failed the batch (close the
 * connection: nothing more is committed or acknowledged).
 */
typedef void (*HaConnCommitted)(HaConn *c, const GError *error, void *user);
void ha_conn_set_committed(HaConn *c, HaConnCommitted fn, void *user);

/* Start the commit of the current batch (with ha_conn_set_committed(): on a commit
 * thread, or as soon as the one in flight is done; without it, as ha_conn_flush()).
 * False with @error when the batch failed already. */
bool ha_conn_flush_start(HaConn *c, GError **error);

/*
 * Group commit, for a source whose input ran dry: milliseconds until the batch is due
 * (its oldest frame HA_COMMIT_DELAY_US old), 0 when it is due now or empty. Under a
 * steady stream the batch limits of HaLimits commit it first; a slow stream commits
 * within a few milliseconds of a frame's arrival, which bounds the guest's wait for
 * its ACK. The small chunks that makes are merged later, off the ACK path, while the
 * connection waits for input (compact.h), so they end up compressed as well as large
 * batches are.
 */
#define HA_COMMIT_DELAY_US	(5 * 1000)
guint ha_conn_commit_due_ms(const HaConn *c);

/*
 * Clock probes (clocksync.h): a source calls this every HaLimits.time_probe_ms (a
 * timer of its own) and writes the output when it returns true (a TIME is queued).
 * Only a guest whose HELLO offered TIME is probed; its replies and marker events are
 * matched inside ha_conn_process(), and the samples are stored with the next batch.
 */
bool ha_conn_time_probe(HaConn *c);

/*
 * ACK pacing (PROTOCOL.md 4.1, protocol 1.5), for a guest whose HELLO asks for it:
 * every ACK a guest gets costs it an interrupt and a read, so after one ACK the next
 * is held back until the HELLO's ack_ms have passed, unless the frames applied since
 * hold its ack_bytes of payload or more (its window is not to fill), the guest wants
 * one at once (duplicates: it resent; BYE), or the connection replays a dump. What is
 * durable is unchanged: a held ACK only tells the guest later. A source that writes
 * the output calls ha_conn_ack_held() after each write: true when an ACK is held, with
 * the milliseconds until it is due (at least 1); then ha_conn_ack_release() when they
 * have passed, and writes the output again.
 */
bool ha_conn_ack_held(const HaConn *c, guint *ret_ms);
void ha_conn_ack_release(HaConn *c);

/* Bytes waiting to be written to the guest (owned by @c), and how many were written. */
const uint8_t *ha_conn_output(HaConn *c, size_t *ret_len);
void ha_conn_output_done(HaConn *c, size_t n);

/* The peer went away (or we hang up): flush what is complete and record how the
 * stream ended. */
void ha_conn_close(HaConn *c);

/*
 * A connection that replays frames read from a dump of the crashed guest (pm-arena.h)
 * rather than a live guest: call before the first input. Its HELLO must be of a boot
 * the store holds (it never adds a boot), and it leaves how the boot ended as it was:
 * no resume, no crash of other boots, no BYE's clean end, no 'disconnected' at its
 * close. The chunks it stores are marked recovered (ingest-batch.c) and not merged
 * with streamed ones. Its output (WELCOME, ACK) is for no one: the caller drops it.
 */
void ha_conn_set_recovered(HaConn *c, bool recovered);

/* Counters for tests and logs. */
typedef struct {
	uint64_t frames;
	uint64_t applied;
	uint64_t duplicates;
	uint64_t gap_frames;
	uint64_t malformed;
	uint64_t events;
	uint64_t commits;
	uint64_t merges_dropped;	/* merges of small chunks given up before a commit
					 * thread took them, for a commit (ingest-commit.c) */
	uint64_t acked;
	uint64_t texts_refused;	/* KSYMS/MODULES/CMDLINES beyond the boot's budget */
	uint64_t rows_refused;	/* EPOCH/STACKS frames beyond the boot's row limits,
				 * and full stacks and stack count rows not stored */
	uint64_t arena_lists;	/* ARENA lists received whole (ingest-arena.h) */
	uint64_t recovered_chunks; /* chunks a recovering connection stored */
	uint64_t recovered_dup_pages; /* pages of a recovering connection the boot had
				       * recovered already (not stored again) */
} HaConnStats;
const HaConnStats *ha_conn_stats(const HaConn *c);

/*
 * The commit threads every connection shares (ingest-commit.c): full batches and
 * merges on some, batches of frames below 1 / HA_COMMIT_SMALL_SHARE of
 * HaLimits.batch_bytes (256 KiB by default: a guest whose input ran dry) on as many
 * others, so that guests flooding with full batches never hold a small commit's
 * thread. For tests: the threads full batches have, and how many commits and merges
 * wait for a thread.
 */
#define HA_COMMIT_SMALL_SHARE	16u
guint ha_commit_threads(void);
guint ha_commit_waiting(void);

/* The clock probes of this connection (clocksync.h). */
const HaClockProbeStats *ha_conn_clock_stats(const HaConn *c);

/*
 * Commit to durable in the current session: every sequenced frame, from the return of
 * the read that completed it (ha_conn_commit()) to the write of the whole ACK that
 * covers it (ha_conn_output_done()), so the guest's own flush window and its wait to
 * read the ACK are not in it. Logged at the end of each session ("commit to durable
 * (frame read -> its ACK written): p50 ..."). Frames whose ACK was not written by
 * then are not counted: the last batch of a connection that ends or of a session a
 * later HELLO ends (its ACK is queued by that end), a failed batch.
 */
const HaLatency *ha_conn_durable(const HaConn *c);

#endif /* HA_INGEST_H */
