// SPDX-License-Identifier: MIT
/*
 * ingest-commit.c - the commit of a batch (see ingest-int.h and ingest.h).
 *
 * A commit has three steps, each on its own thread:
 *
 *   take     (the connection's thread) the batch leaves the connection: its IngestBatch,
 *            the stream's counters and the pairing state as of its last frame, the
 *            clock samples, and the sequence number its ACK will carry, all in one
 *            IngestFlight; the connection goes on with its other IngestBatch
 *   write    (a commit thread, or the same thread for a synchronous commit) the
 *            chunks (zstd), the stack counts, the stream's and the boot's rows, the
 *            quota check, COMMIT with its fsync (store.h); on any failure ROLLBACK
 *   finish   (the connection's thread) the ACK queued after a successful write, or the
 *            connection failed: nothing of the batch, nor anything later, acknowledged
 *
 * While a flight is written its store is lent to the commit thread (ha_store_lend(),
 * store.h). The connection's thread does not touch it meanwhile: it applies PAGE
 * frames into its other batch (an inline stack new to the connection under a
 * provisional key, ingest-batch.c) and holds any frame that writes rows until the
 * flight is done (ha_conn_process()). A merge of small chunks (compact.h) is a
 * flight too, so a connection's merges never overlap its commits; one that still
 * waits for a commit thread when its connection's commit is due (or a frame needs the
 * store) is dropped instead (ingest_flight_yield()), never waited for.
 *
 * Crash safety is the store's: the batch's rows, its chunks and the stream's next
 * sequence number commit in one transaction, and the ACK follows it. A crash at any
 * instant leaves either the whole batch stored (not acknowledged yet: the guest
 * resends it and the duplicates are dropped by sequence number) or none of it.
 */
#include "ingest-int.h"

#include <gio/gio.h>
#include <inttypes.h>

#include "compact.h"

/* Where a merge's flight is (IngestFlight.state); a batch's is always taken. */
enum {
	FLIGHT_WAITING,		/* in the pool's queue */
	FLIGHT_TAKEN,		/* a commit thread runs it, or ran it */
	FLIGHT_DROPPED,		/* its connection let it go: freed by the pool, unrun */
};

struct _IngestFlight {
	HaConn *c;
	/* a merge of small chunks (compact.h) rather than a batch: its result */
	bool compact;
	int compact_r;
	gint state;		/* FLIGHT_*, atomic: the connection's thread and the pool's */
	IngestBatch *batch;
	HaStreamDelta delta;
	GBytes *pairs;
	GArray *clock;		/* HaClockSample */
	uint64_t from;		/* the first frame not acknowledged yet */
	uint64_t upto;		/* the ACK once durable */
	uint64_t orphans;	/* added to HaConn.orphans_saved once durable */
	size_t bytes;		/* the batch's frames' payload bytes: its lane */
	/* the result, written by the write step */
	bool ok;
	GError *error;
	int64_t first_chunk;
	bool small_chunk;
	/* async: attached by the commit thread to the connection's context when done */
	GSource *done;
	GMainContext *ctx;
};

/*
 * Commit threads of every connection, in two pools of the same size: one for full
 * batches and merges, one for small batches (below HA_COMMIT_SMALL_SHARE of the batch
 * limit: a guest whose input ran dry). Sorting one queue (smaller_first()) puts a
 * small commit first, but then it still waits for a thread, and while guests flood
 * every thread is in a full batch's zstd and COMMIT (tens of ms each on a loaded
 * host): a pool of its own, which full batches never take, leaves it only the cores
 * to wait for. A commit is mostly waiting for its fsync, so each pool has a few more
 * threads than the cores; each connection has at most one commit in flight.
 */
enum { LANE_FULL, LANE_SMALL, N_LANES };
static GThreadPool *pools[N_LANES];	/* g_once_init_enter() */

static IngestFlight *take(HaConn *c)
{
	IngestFlight *f = g_new0(IngestFlight, 1);
	guint n;
	const HaClockSample *cs = ha_clock_probe_samples(c->clk, &n);
	uint64_t orphans = ha_pair_orphans(c->pair) - c->orphans_saved;

	f->c = c;
	f->batch = c->fill;
	c->fill = c->spare ? c->spare : ingest_batch_new();
	c->spare = NULL;
	/* the new fill batch has this session's CPUs too */
	if (c->fill->nr_cpus != f->batch->nr_cpus) {
		g_free(c->fill->by_cpu);
		c->fill->by_cpu = g_new0(CpuBatch *, f->batch->nr_cpus);
		c->fill->nr_cpus = f->batch->nr_cpus;
	}
	f->delta = (HaStreamDelta){
		.next_seq = c->expected,
		.gap_frames = c->d_gap,
		.dup_frames = c->d_dup,
		.malformed = c->d_malformed,
		.bad_pages = c->d_bad_pages,
		.orphan_stacks = orphans,
		.cur_epoch = c->cur_epoch,
		.missed_events = c->d_missed,
		.missed_uncounted = c->d_missed_uncounted,
	};
	f->orphans = orphans;
	f->pairs = ha_pair_save(c->pair);
	f->clock = g_array_new(FALSE, FALSE, sizeof(HaClockSample));
	g_array_append_vals(f->clock, cs, n);
	ha_clock_probe_samples_done(c->clk);
	f->upto = c->expected - 1;
	f->from = c->acked + 1;
	/* what follows belongs to the next batch */
	c->d_gap = c->d_dup = c->d_malformed = c->d_bad_pages = 0;
	c->d_missed = c->d_missed_uncounted = 0;
	c->pending_since = 0;
	f->bytes = c->batch_bytes;
	c->batch_bytes = 0;
	c->batch_frames = 0;
	c->rx_cut = true;	/* this batch's ACK covers its runs of frames whole */
	return f;
}

/* The write step, on whichever thread holds the store. */
static bool write_flight(IngestFlight *f, GError **error)
{
	HaConn *c = f->c;
	uint64_t used = 0;

	if (!ha_store_begin(c->store, error) ||
	    !ingest_batch_resolve(c, f->batch, error) ||
	    !ingest_batch_write(c, f->batch, &f->first_chunk, &f->small_chunk, error) ||
	    !ha_store_stream_update(c->store, c->stream, &f->delta, error) ||
	    !ha_store_boot_update(c->store, c->boot, g_get_real_time(), f->pairs, error))
		return false;
	for (guint i = 0; i < f->clock->len; i++)
		if (!ha_store_put_clock_sample(c->store, c->boot,
					       &g_array_index(f->clock, HaClockSample, i),
					       error))
			return false;
	if (c->lim.quota_bytes && !ha_store_used_bytes(c->store, &used, error))
		return false;
	if (c->lim.quota_bytes && used > c->lim.quota_bytes) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
			    "disk quota of domain %s reached: the store would grow to %" PRIu64
			    " bytes, above the quota of %" PRIu64 " bytes; frames from seq %"
			    PRIu64 " are not stored or acknowledged",
			    c->domain, used, c->lim.quota_bytes, f->from);
		return false;
	}
	return ha_store_commit(c->store, error);
}

static void write_step(IngestFlight *f)
{
	if (f->compact) {
		f->compact_r = ha_compact_step(f->c->store, f->c->boot, f->c->compact_from,
					       false, f->c->lim.zstd_level, &f->error);
		f->ok = true;	/* a failed merge changed nothing: not the batch's failure */
		return;
	}
	f->ok = write_flight(f, &f->error);
	if (!f->ok)
		ha_store_rollback(f->c->store);
}

static void flight_free(IngestFlight *f);

static void on_pool(gpointer data, gpointer unused)
{
	IngestFlight *f = data;
	HaStore *s;

	(void)unused;
	if (!g_atomic_int_compare_and_exchange(&f->state, FLIGHT_WAITING, FLIGHT_TAKEN)) {
		/* a merge its connection dropped (ingest_flight_yield()): the connection
		 * may be gone, nothing of it is touched */
		flight_free(f);
		return;
	}
	s = f->c->store;
	ha_store_borrow(s);
	write_step(f);
	/* Attached before the store is given back: whoever waits for the store may
	 * then destroy it (finish()). Nothing of @f is touched after the give-back. */
	g_source_attach(f->done, f->ctx);
	ha_store_give_back(s);
}

static void flight_free(IngestFlight *f)
{
	if (f->done) {
		g_source_destroy(f->done);
		g_source_unref(f->done);
	}
	if (f->ctx)
		g_main_context_unref(f->ctx);
	g_clear_pointer(&f->pairs, g_bytes_unref);
	if (f->clock)
		g_array_unref(f->clock);
	g_clear_error(&f->error);
	g_free(f);
}

/* A batch written: emptied, it is the connection's spare one. */
static void spare(HaConn *c, IngestBatch *b)
{
	ingest_batch_empty(b);
	if (c->spare)
		ingest_batch_free(b);
	else
		c->spare = b;
}

/* The finish step of a flight whose write is done. */
static bool finish(HaConn *c, IngestFlight *f, GError **error)
{
	bool ok = f->ok;

	if (c->flight == f)
		c->flight = NULL;
	c->paused = false;	/* what waited for this commit can go on */
	if (f->compact) {
		if (f->compact_r < 0) {
			g_warning("%s: boot %s: merging small chunks: %s (left as they are)",
				  c->domain, c->boot_str, f->error->message);
			c->compact_off = true;
		}
		if (f->compact_r == 1)
			c->compact_small = true;	/* more to merge: scheduled again */
		ingest_compact_schedule(c);
		flight_free(f);
		return true;
	}
	if (!ok) {
		c->failed = true;	/* never commit what follows a failed batch */
		g_propagate_error(error, g_steal_pointer(&f->error));
		spare(c, f->batch);
		flight_free(f);
		return false;
	}
	c->st.commits++;
	if (f->batch->rows_refused) {
		c->st.rows_refused += f->batch->rows_refused;
		ingest_rows_refused_log(c);
	}
	ingest_batch_cache_resolved(c, f->batch);
	c->orphans_saved += f->orphans;
	if (f->first_chunk && !c->compact_from)
		c->compact_from = f->first_chunk;
	c->compact_small |= f->small_chunk;
	spare(c, f->batch);
	ingest_queue_ack(c, f->upto);
	ingest_compact_schedule(c);
	flight_free(f);
	return true;
}

/*
 * A merge of small chunks that still waits for a commit thread is dropped, so that
 * whatever waits for it (a commit due, a frame that needs the store, the end of the
 * connection) goes on now: a merge waits behind every full batch of every connection
 * (weight(), lane_of()), and while guests flood there is always another one, so the
 * connection's next commit and ACK would wait as long as the flood lasts. True when
 * it was dropped (no flight now); false when there was none, or a thread took it
 * already (it is then waited for: one merge of a run of small chunks, compact.h).
 * It is tried again after the next commit (finish()).
 */
bool ingest_flight_yield(HaConn *c)
{
	IngestFlight *f = c->flight;

	if (!f || !f->compact ||
	    !g_atomic_int_compare_and_exchange(&f->state, FLIGHT_WAITING, FLIGHT_DROPPED))
		return false;
	/* from here @f is the pool's to free: not touched again */
	c->flight = NULL;
	/* never borrowed: the loan ends here (store.h) */
	ha_store_give_back(c->store);
	c->compact_small = true;
	c->st.merges_dropped++;
	return true;
}

bool ingest_commit_wait(HaConn *c, GError **error)
{
	if (!c->flight || ingest_flight_yield(c))
		return true;
	ha_store_wait(c->store);
	return finish(c, c->flight, error);
}

static gboolean on_done(gpointer user)
{
	HaConn *c = user;
	g_autoptr(GError) e = NULL;
	bool ok = ingest_commit_wait(c, &e);

	/* The next batch filled up meanwhile (or the input ran dry): commit it now,
	 * unless a frame is held for this commit: that one is applied first (and the
	 * frames after it), the commit still due at the next input dry or full batch,
	 * rather than it waiting for one more commit. */
	if (ok && c->flush_due && !c->has_held) {
		c->flush_due = false;
		c->paused = false;
		ok = ingest_commit(c, false, &e);
	}
	if (c->committed)
		c->committed(c, ok ? NULL : e, c->committed_user);
	return G_SOURCE_REMOVE;
}

/* What a waiting flight weighs in the pool's order: a merge of small chunks (no ACK
 * waits for it) after every commit. */
static size_t weight(const IngestFlight *f)
{
	return f->compact || !f->batch ? SIZE_MAX : f->batch->pages_len;
}

/*
 * Flights waiting for a thread, the smallest batch first: a guest at a steady rate
 * commits a few pages every few ms, and behind the full batches of guests that flood
 * (4 MiB each, tens of ms of compression) its ACK would wait for all of them. Each
 * connection has one flight at most, so a full batch waits for at most one smaller
 * commit of each other connection.
 */
static gint smaller_first(gconstpointer a, gconstpointer b, gpointer user)
{
	size_t x = weight(a), y = weight(b);

	(void)user;
	return x < y ? -1 : x > y;
}

/* A lane's pool, made once, by whichever connection's thread commits there first. */
static GThreadPool *commit_pool(int lane)
{
	if (g_once_init_enter(&pools[lane])) {
		int n_threads = (int)CLAMP(2 * g_get_num_processors(), 4, 32);
		GThreadPool *p = g_thread_pool_new(on_pool, NULL, n_threads, FALSE, NULL);

		g_thread_pool_set_sort_function(p, smaller_first, NULL);
		g_once_init_leave(&pools[lane], p);
	}
	return pools[lane];
}

static int lane_of(const HaConn *c, const IngestFlight *f)
{
	/* every frame's bytes, not only the pages': rows a batch of other frames wrote
	 * are COMMIT's to write too */
	return !f->compact && f->bytes < c->lim.batch_bytes / HA_COMMIT_SMALL_SHARE ?
	       LANE_SMALL : LANE_FULL;
}

guint ha_commit_threads(void)
{
	return (guint)g_thread_pool_get_max_threads(commit_pool(LANE_FULL));
}

guint ha_commit_waiting(void)
{
	guint n = 0;

	for (int lane = 0; lane < N_LANES; lane++)
		n += g_thread_pool_unprocessed(commit_pool(lane));
	return n;
}

/* The write step on a commit thread; finish() from on_done() on our thread. */
static void launch(HaConn *c, IngestFlight *f)
{
	/* told back on the connection's thread (ha_conn_set_committed()), whichever
	 * thread started it (a post-mortem's, ha_driver_hold_store()) */
	f->ctx = g_main_context_ref(c->ctx);
	f->done = g_idle_source_new();
	/* Above the links' readable notifications: a commit done is acknowledged (and
	 * the next one started) at the next iteration, before any connection reads
	 * again, rather than after every connection with input waiting had its turn. */
	g_source_set_priority(f->done, G_PRIORITY_HIGH);
	g_source_set_callback(f->done, on_done, c, NULL);
	g_source_set_static_name(f->done, "host-agent commit done");
	c->flight = f;
	ha_store_lend(c->store);
	g_thread_pool_push(commit_pool(lane_of(c, f)), f, NULL);
}

bool ingest_commit(HaConn *c, bool sync, GError **error)
{
	IngestFlight *f;
	guint n;

	if (!c->hello)
		return true;
	if (!sync && c->flight && !ingest_flight_yield(c)) {
		c->flush_due = true;
		return true;
	}
	if (!ingest_commit_wait(c, error))
		return false;
	/* a commit due after the one in flight is this one */
	c->flush_due = false;
	c->paused = false;
	if (c->failed) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "an earlier batch failed");
		return false;
	}
	/* Any failure from here fails the batch; its frames were not acknowledged and
	 * the guest resends them on its next connection. */
	if (!ingest_take_store_error(c, error))
		return false;
	ha_clock_probe_samples(c->clk, &n);
	if (!c->pending_since && !n && !ha_store_in_txn(c->store)) {
		/* nothing to store: only duplicates or malformed frames since the last
		 * commit, which want their ACK again */
		ingest_queue_ack(c, c->expected - 1);
		return true;
	}
	f = take(c);
	if (sync || !c->committed) {
		write_step(f);
		return finish(c, f, error);
	}
	launch(c, f);
	return true;
}

bool ingest_compact_start(HaConn *c)
{
	IngestFlight *f;

	/* only while no batch is open: a merge never delays a commit (the frames it
	 * would hold up open no transaction when they are PAGEs: pending_since) */
	if (!c->committed || c->flight || !c->hello || c->failed || c->pending_since ||
	    ha_store_in_txn(c->store))
		return false;
	/* Nor while anything waits for a thread of full batches: the merge would wait
	 * too, and be dropped at the connection's next commit, left in the queue until a
	 * thread frees it; started again after every commit, those would pile up for as
	 * long as guests flood. Tried again after the next commit (the caller). */
	if (g_thread_pool_unprocessed(commit_pool(LANE_FULL)))
		return false;
	f = g_new0(IngestFlight, 1);
	f->c = c;
	f->compact = true;
	launch(c, f);
	return true;
}
