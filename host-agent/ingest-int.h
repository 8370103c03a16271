/* SPDX-License-Identifier: MIT */
/*
 * ingest-int.h - the stages of one guest connection (ingest.h), shared by their files.
 *
 * A frame goes through three stages, one file each, over the store's typed calls:
 *
 *   ingest-session.c  the connection and its session: HELLO/WELCOME, the sequence
 *                     (next, duplicate, gap), the group commit and the ACK after it,
 *                     BYE, close; the read loop of every source (ha_conn_*)
 *   ingest-apply.c    one frame of the session applied to the open transaction: the
 *                     per-type checks (every limit from ingest_session_limits), each
 *                     frame whole or not at all (ingest_apply())
 *   ingest-batch.c    what a batch holds until its commit (IngestBatch): each CPU's
 *                     pages packed into one buffer, the stack counts of the events the
 *                     pairer (pair.h) gives; the full-stack cache; written as one zstd
 *                     chunk per CPU at the commit (ingest_batch_write()), and merged
 *                     later off the ACK path (compact.h)
 *   ingest-commit.c   the commit of a batch (IngestFlight): taken from the connection
 *                     on its thread, written, committed and fsync'd on a commit thread
 *                     while the connection reads the next batch, then acknowledged on
 *                     the connection's thread again
 *   store-ingest.c    the only code that sees SQL (store-ingest.h)
 *
 * A store failure anywhere (in the pairing callback too, which cannot return one: it
 * parks it in HaConn.cb_error; on the commit thread, in IngestFlight.error) fails the
 * frame and the batch: the session then never commits nor acknowledges it.
 *
 * Threads: a HaConn lives on its driver's thread (conn-driver.h; another thread may
 * use it only while the driver's thread waits, ha_driver_hold_store(): its sources
 * still go to HaConn.ctx, the connection's context). Only the commit of
 * one batch at a time runs elsewhere; while it does, the store is lent to it (store.h:
 * any store call of the connection's thread waits for it), the batch it writes is
 * HaConn.flight's alone, and the connection fills HaConn.fill, the other IngestBatch.
 * The commit thread reads of the HaConn only what stays constant while a batch is in
 * flight (store, boot, limits, domain) and uses HaConn.z, which nothing else uses then.
 */
#ifndef HA_INGEST_INT_H
#define HA_INGEST_INT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "chunk.h"
#include "hist.h"
#include "ingest.h"
#include "latency.h"
#include "pair.h"
#include "proto.h"
#include "store-ingest.h"
#include "tep.h"

/*
 * What one session may make the host hold, write or log, whatever the guest sends.
 * The configurable limits are HaLimits (ingest.h); these are fixed, in one place.
 */
typedef struct {
	uint32_t map_bits_max;		/* HELLO: map slots 2 << map_bits within a stack_id */
	size_t fullstack_cache_bytes;	/* ips of inline stacks cached per connection */
	uint32_t hist_slots_min;	/* a CPU's stack-count table starts this big */
	uint32_t log_first_n;		/* malformed frames logged per connection ... */
	uint32_t log_every;		/* ... then one in this many */
	size_t out_max;			/* bytes of queued WELCOME/ACK frames */
} IngestSessionLimits;

extern const IngestSessionLimits ingest_session_limits;

/* The texts a guest keys as it likes, and what a boot may store of each (ingest.h). */
enum { TEXT_KSYMS, TEXT_MODULES, TEXT_CMDLINES, TEXT_KINDS };

typedef struct {
	uint8_t type;		/* SMP_* */
	const char *kind;	/* texts.kind */
	uint64_t budget;	/* bytes + HA_TEXT_ROW_COST per row, per boot */
} IngestTextKind;

extern const IngestTextKind ingest_text_kinds[TEXT_KINDS];

/* One stack's count in a batch; count 0: a free slot. */
typedef struct {
	uint64_t key;		/* hist.h */
	uint64_t count;
	uint64_t ts_min;
	uint64_t ts_max;
} HistSlot;

typedef struct {
	GArray *spans;		/* HaChunkSpan: this CPU's pages in HaConn.pages */
	uint64_t first_seq;
	uint64_t last_seq;
	uint64_t ts_min;
	uint64_t ts_max;
	uint32_t pages;
	uint32_t events;
	uint64_t traced;
	/* The batch's stack counts (hist.h keys): open addressing, hist_cap slots (a
	 * power of two, at most half used), the used ones listed in hist_used. */
	HistSlot *hist;
	uint32_t hist_cap;
	GArray *hist_used;	/* uint32_t slot indexes */
} CpuBatch;

/* One batch: what frames fill until the commit writes it. Kept (emptied) across
 * batches: a connection has two, the one it fills and the one in flight. */
typedef struct {
	GHashTable *cpus;	/* cpu -> CpuBatch, kept (emptied) across batches */
	CpuBatch **by_cpu;	/* the same, indexed by cpu < nr_cpus */
	uint32_t nr_cpus;
	uint8_t *pages;		/* the batch's pages of every CPU, in arrival order */
	size_t pages_len, pages_cap;	/* cap <= batch_bytes + max_payload */
	/* Inline stacks new to the connection, met while a commit was in flight (the
	 * store is lent): counted under a provisional key (INGEST_PROV_KEY | index in
	 * pend_list) and given their fullstacks ids by this batch's own commit. */
	GHashTable *pend;	/* FullStackKey -> its entry in pend_list */
	GPtrArray *pend_list;	/* FullStackEnt (ingest-batch.c); id: the index, then
				 * the fullstacks id once resolved */
	size_t pend_bytes;	/* bounded by fullstack_cache_bytes */
	CpuBatch *merged;	/* at the commit: every CPU's stack counts in one table */
	/* rows its commit did not store, the boot's limits reached (full stacks, stack
	 * count keys: their events counted under HA_HIST_KEY_REFUSED); the main loop
	 * takes them into rows_refused when the commit is done */
	uint64_t rows_refused;
} IngestBatch;

#define INGEST_PROV_KEY		(UINT64_C(1) << 63)

typedef struct _IngestFlight IngestFlight;

/* Frames taken off the link by one read (commit to durable, HaConn.durable): the last
 * one's seq, how many, and when the read returned (g_get_monotonic_time()). */
typedef struct {
	uint64_t last_seq;
	gint64 t;
	uint32_t frames;
} IngestRxRun;

/* Runs kept until their ACK is written: enough for the two batches a connection holds
 * (4 MiB each) read 4 KiB at a time. Beyond, the newest run takes the next frames
 * under its own, earlier, time (an upper bound; counted in HaConn.rx_merged). */
#define INGEST_RX_RUNS		2048u

struct _HaConn {
	HaStore *store;
	HaLimits lim;
	char *domain;
	char *peer;
	struct smp_decoder *dec;

	/* session */
	bool hello;
	uint8_t boot_uuid[16];
	char boot_str[37];
	uint64_t stream_id;
	int64_t boot;		/* boots.id */
	int64_t stream;		/* streams.id */
	uint32_t nr_cpus;
	uint32_t page_size;
	uint32_t map_bits;
	bool big_endian;
	uint64_t expected;	/* next sequence number to apply */
	uint64_t acked;		/* last ACKed */
	bool ack_wanted;
	/* ACK pacing (ha_conn_ack_held()): what the HELLO asked for, 0 none */
	uint32_t ack_ms;
	uint32_t ack_bytes;
	gint64 ack_last_us;	/* when the last ACK was queued */
	uint64_t ack_bytes_since;	/* payload applied since then */
	uint64_t ack_held;	/* the acked_seq of an ACK held back, 0: none */
	int64_t cur_epoch;	/* -1 before the stream's first EPOCH */
	unsigned int hellos;
	bool bye;
	bool failed;		/* a batch was rolled back: no more commits or ACKs */
	/* post-mortem (ingest-arena.h, pm-arena.h) */
	bool recovered;		/* replays frames read from a dump (ha_conn_set_recovered()) */
	/* a recovering connection's pages the boot has recovered already (cpu + SHA-256
	 * of the page), loaded at its first PAGE: a page rebuilt again from the same
	 * dump takes another seq, so it is recognised by its bytes (ingest-apply.c) */
	GHashTable *recovered_pages;
	bool retired;		/* a post-mortem took over: input ignored, nothing recorded */
	bool arena_live;	/* in the registry of live connections */
	uint64_t *arena_addrs;	/* the ARENA list being assembled, arena_have so far */
	uint64_t arena_list_id;
	uint32_t arena_page_size;
	uint32_t arena_nr_pages;
	uint32_t arena_have;
	bool warned_unparsed;
	/* clock probes: offered in HELLO, the marker events' format, the time of the
	 * read that completed the frame being decoded */
	bool time_ok;
	HaClockProbe *clk;
	HaMarkerFormat marker;
	HaHostTime rx_time;

	/* apply */
	HaTep *tep;
	HaPair *pair;
	/* counters of the open batch, added to the stream's row at its commit */
	uint64_t d_gap, d_dup, d_malformed, d_bad_pages, orphans_saved;
	uint64_t d_missed, d_missed_uncounted;
	bool gap_note;		/* a gap seen, its rows due in the frame's transaction */
	uint64_t gap_lo, gap_hi;
	/* what the boot stores in the tables whose keys the guest chooses (the row
	 * limits of HaLimits, ingest.h), read at HELLO and counted up as rows are
	 * added (gaps: distinct gaps); like text_used, an upper bound */
	HaStoreBootRows rows;
	bool warned_stat_key;	/* a STATS key >= HA_STAT_KEYS ignored (logged once) */
	bool warned_rows;	/* a full stack or count row refused (logged once) */
	/* what the boot stores of each text kind (ingest_text_kinds), read at HELLO and
	 * counted up as texts are stored; a replaced row is counted again (an upper
	 * bound), and the count of a batch that fails is not taken back (the connection
	 * ends) */
	uint64_t text_used[TEXT_KINDS];

	/* batch */
	IngestBatch *fill;	/* the batch frames go to */
	IngestBatch *spare;	/* the other one, when it is not in flight */
	HaChunkZ *z;
	/* Compaction (compact.h) of the chunks this connection stored, id >= compact_from,
	 * from a low-priority idle source while the connection waits for input. */
	int64_t compact_from;	/* 0: none stored yet */
	bool compact_small;	/* the last commit stored a small chunk */
	bool compact_off;	/* it failed once: left alone for this connection */
	GSource *compact_src;
	GHashTable *fullstacks;	/* FullStackKey (of a FullStackEnt) -> its FullStackEnt */
	size_t fullstacks_bytes;
	uint32_t batch_bytes;
	uint32_t batch_frames;
	gint64 pending_since;
	/* The first store failure inside a pairing callback, which cannot return one:
	 * taken by ingest_take_store_error() before the frame counts as applied, and by
	 * ha_conn_flush() before any commit, so the batch fails with it. */
	GError *cb_error;

	/* commit (ingest-commit.c) */
	IngestFlight *flight;	/* the batch being committed on a commit thread */
	bool flush_due;		/* a commit is due once the one in flight is done */
	bool paused;		/* frames wait in the decoder until then: the batch is full,
				 * or the next frame needs the store (held) */
	bool has_held;
	struct smp_frame held;	/* its payload: held_payload (g_free) */
	uint8_t *held_payload;
	HaConnCommitted committed;	/* async commits: told on our thread */
	void *committed_user;
	GMainContext *ctx;	/* our thread's, from ha_conn_set_committed() */

	/* output */
	GByteArray *out;
	GArray *out_lens;	/* guint: each queued frame's length, oldest first */
	size_t head_sent;	/* bytes of the oldest queued frame already sent */
	HaConnStats st;

	/* Commit to durable, per session: each sequenced frame from the read that
	 * completed it (read_mono) to the write of the whole ACK that covers it. The
	 * runs of frames not acknowledged yet, oldest first in a ring; a batch taken
	 * for its commit ends the newest run (rx_cut), so an ACK covers whole runs. */
	gint64 read_mono;
	IngestRxRun rx[INGEST_RX_RUNS];
	uint32_t rx_head, rx_len;
	bool rx_cut;
	uint64_t rx_merged;	/* frames timed by an earlier read: the ring was full */
	uint64_t ack_pend_upto;	/* the newest ACK queued and not written whole yet, */
	size_t ack_pend_end;	/* which ends this many bytes into out (0: none) */
	HaLatency durable;
};

/* ---- ingest-session.c ---------------------------------------------------------- */

/* Count (and log, rate-limited) a frame dropped as malformed; its seq is consumed. */
void ingest_malformed(HaConn *c, const struct smp_frame *f, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);

/* A store failure seen in a callback fails the frame being applied (and its batch). */
bool ingest_take_store_error(HaConn *c, GError **error);

/* ---- ingest-arena.c ------------------------------------------------------------ */

/* An ARENA frame (unsequenced): one slice of a list, published once whole. False
 * never (a bad one is counted malformed); bool for on_frame()'s sake. */
bool ingest_on_arena(HaConn *c, const struct smp_frame *f);
/* Forget the list being assembled (the session ends). */
void ingest_arena_drop(HaConn *c);
/* The connection's session is open (@live) or ended: the live registry. */
void ingest_arena_live(HaConn *c, bool live);

/* ---- ingest-apply.c ------------------------------------------------------------ */

/* Apply the sequenced frame @f (not HELLO) to the open transaction. False with
 * @error on store failure only: a malformed frame is counted and skipped. */
bool ingest_apply(HaConn *c, const struct smp_frame *f, GError **error);

/* Store where the gap c->gap_lo..gap_hi fell (table gaps), in the frame's
 * transaction. */
bool ingest_note_gap(HaConn *c, GError **error);

/* ---- ingest-session.c (for ingest-commit.c) -------------------------------------- */

/* Queue the ACK of every frame up to @upto (durable) unless it was sent already. */
void ingest_queue_ack(HaConn *c, uint64_t upto);

/* ---- ingest-commit.c ----------------------------------------------------------- */

/*
 * Commit the batch (everything applied since the last commit): on this thread and
 * waiting for it when @sync, otherwise on a commit thread (ingest_commit_start()).
 * Both wait first for a commit in flight. False with @error on a store failure or the
 * quota (the batch then fails, nothing of it acknowledged).
 */
bool ingest_commit(HaConn *c, bool sync, GError **error);
/* The commit in flight, if any, finished here: its ACK queued or c->failed set (the
 * error in @error). Waits for it. True when there was none or it succeeded. */
bool ingest_commit_wait(HaConn *c, GError **error);
/* The flight is a merge of small chunks that no commit thread took yet: dropped, so
 * that a frame that needs the store goes on now (ingest-commit.c). True when there is
 * no flight now. */
bool ingest_flight_yield(HaConn *c);

/* One merge of small chunks (compact.h) on a commit thread, as a flight of its own;
 * false when it cannot start now (sync commits, a flight or a batch open). */
bool ingest_compact_start(HaConn *c);

/* ---- ingest-batch.c ------------------------------------------------------------ */

IngestBatch *ingest_batch_new(void);
void ingest_batch_free(IngestBatch *b);
/* Empty every CPU's batch after a commit, keeping their memory for the next one. */
void ingest_batch_empty(IngestBatch *b);
/* The fullstacks ids of @b's provisional stacks (inserted as needed; 0, counted in
 * @b's rows_refused, beyond the boot's limit), on any thread. */
bool ingest_batch_resolve(HaConn *c, IngestBatch *b, GError **error);
/* Those ids into the connection's full-stack cache (its thread, after the commit). */
void ingest_batch_cache_resolved(HaConn *c, IngestBatch *b);
/* Log, once per session, that the boot's full-stack or stack-count rows are at their
 * limit (ingest.h); on the connection's thread. */
void ingest_rows_refused_log(HaConn *c);
/* Every CPU's chunk and stack counts of @b into the open transaction, on any thread
 * (see Threads above); *@ret_first_chunk the first chunk id stored (0: none),
 * *@ret_small whether a chunk was small (compaction due). */
bool ingest_batch_write(HaConn *c, IngestBatch *b, int64_t *ret_first_chunk,
			bool *ret_small, GError **error);

void ingest_batches_init(HaConn *c);
void ingest_batches_free(HaConn *c);
/* The session's geometry is known (HELLO): @nr_cpus CPUs. */
void ingest_batches_start(HaConn *c, uint32_t nr_cpus);
CpuBatch *ingest_batch_get(HaConn *c, uint32_t cpu);
/* Append one PAGE's data (seq @seq) to CPU @b's batch. */
void ingest_batch_add_page(HaConn *c, CpuBatch *b, uint64_t seq, const uint8_t *data,
			   size_t len);
/* The pairer's callback (pair.h): counts the event into its CPU's batch. */
void ingest_batch_on_paired(const HaPaired *p, void *user);
/* Forget the batches and the full-stack cache (a session ends). */
void ingest_batches_drop(HaConn *c);

/* Merge the small chunks a commit stored, from an idle source (compact.h). */
void ingest_compact_schedule(HaConn *c);
/* The stream ends: merge what is still small, then stop. */
void ingest_compact_finish(HaConn *c);

#endif /* HA_INGEST_INT_H */
