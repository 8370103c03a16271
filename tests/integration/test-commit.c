// SPDX-License-Identifier: MIT
/*
 * Unit tests of the commits made off the connection's thread (host-agent/
 * ingest-commit.c), one HaConn on a real SQLite file. A second connection to the same
 * file holding its write lock (BEGIN IMMEDIATE) keeps the commit thread's BEGIN waiting,
 * so a commit stays in flight for as long as the test wants:
 *   - a full batch's commit in flight: nothing of it acknowledged, nothing of it in the
 *     database; a frame that writes rows meanwhile is held (the connection pauses) and
 *     not applied
 *   - the lock released: the batch committed and acknowledged, the held frame applied
 *     after it, its own commit acknowledged
 *   - a store failure on the commit thread (a trigger refusing the chunk): reported to
 *     the connection's thread, nothing acknowledged, the stream's resume point left
 *     before the batch, no later commit
 *   - a steady guest beside guests that flood: every commit thread of full batches
 *     held (a guest per thread whose BEGIN waits for another connection's lock), the
 *     steady guest's merge of small chunks waiting for a thread, and a flooder's full
 *     batch queued before it; the steady guest's next commit due: the merge is
 *     dropped rather than waited for (it would wait for every full batch of every
 *     other guest), the small commit, on threads of its own, is acknowledged while
 *     all of that still waits, and no merge is started again while full batches wait
 *     (dropped ones would pile up in the queue)
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <string.h>

#include "guest-formats.h"
#include "guest-hello.h"
#include "ingest.h"
#include "proto.h"
#include "ringpage.h"
#include "tap.h"
#include "conn-feed.h"

static uint8_t boot_id[16] = { 9, 8, 7 };

typedef struct {
	unsigned int calls;
	char *error;	/* the last one's message, NULL: none */
	/* another connection's calls, as they were at this one's last call */
	const unsigned int *watch;
	unsigned int seen;
} Committed;

static void on_committed(HaConn *c, const GError *error, void *user)
{
	Committed *k = user;

	(void)c;
	k->calls++;
	k->seen = k->watch ? *k->watch : 0;
	g_free(k->error);
	k->error = error ? g_strdup(error->message) : NULL;
}

/* Run the main context until @k has seen @calls commits (each iteration blocks until
 * a source is ready: the commit thread's "done" source). */
static bool wait_commits(Committed *k, unsigned int calls)
{
	for (int i = 0; i < 10000 && k->calls < calls; i++)
		g_main_context_iteration(NULL, TRUE);
	return k->calls >= calls;
}

static bool send_hello(HaConn *c, GError **error)
{
	uint8_t p[128];
	long n = gh_hello_encode(p, sizeof(p), boot_id, 5, 2);

	g_assert(n > 0);
	return conn_send_frame(c, SMP_HELLO, 0, p, (size_t)n, error);
}

static bool send_epoch(HaConn *c, uint64_t seq, uint64_t epoch, GError **error)
{
	uint8_t p[SMP_DELTA_EPOCH_SIZE];
	long n = smp_delta_put_epoch(p, sizeof(p), epoch, epoch * 100);

	return conn_send_frame(c, SMP_EPOCH, seq, p, (size_t)n, error);
}

/* A PAGE of cpu 0 with one kmalloc event (stored unparsed: no formats were sent). */
static bool send_page(HaConn *c, uint64_t seq, GError **error)
{
	uint8_t page[4096], p[8 + sizeof(page)];
	struct smp_page m = { .cpu = 0, .data = page };
	long n;

	m.data_len = ringpage_one_kmalloc(page, sizeof(page), 1000 * seq);
	n = smp_page_encode(&m, p, sizeof(p));
	return n > 0 && conn_send_frame(c, SMP_PAGE, seq, p, (size_t)n, error);
}

static ssize_t read_nothing(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	(void)len;
	return -EAGAIN;
}

/* One number from the other connection (@db), -1 on error. */
static int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* One connection on a store of its own in @dir, named @name, committing off-thread. */
typedef struct {
	HaStore *s;
	HaConn *c;
	sqlite3 *lock;		/* another connection to its file: holds its write lock */
	Committed k;
} Guest;

/* With @full, a batch is full at its first page (a commit of full batches). */
static bool guest_open(Guest *g, const char *dir, const char *name, bool full,
		       GError **error)
{
	g_autofree char *file = g_strconcat(name, ".db", NULL);
	g_autofree char *path = g_build_filename(dir, file, NULL);
	HaLimits lim;

	ha_limits_default(&lim);
	if (full)
		lim.batch_bytes = HA_COMMIT_SMALL_SHARE;
	if (!(g->s = ha_store_open(path, false, error)))
		return false;
	g->c = ha_conn_new(g->s, &lim, name, "test");
	ha_conn_set_committed(g->c, on_committed, &g->k);
	return sqlite3_open(path, &g->lock) == SQLITE_OK && send_hello(g->c, error);
}

static void guest_close(Guest *g)
{
	if (g->c) {
		ha_conn_close(g->c);
		ha_conn_free(g->c);
	}
	sqlite3_close(g->lock);
	ha_store_free(g->s);
	g_free(g->k.error);
}

/* Until ha_commit_waiting() is @n: with @iterate, the main context's sources run
 * meanwhile (without blocking), so that a merge due from an idle source starts. */
static bool waiting_becomes(guint n, bool iterate)
{
	for (int i = 0; i < 100000 && ha_commit_waiting() != n; i++) {
		if (iterate)
			g_main_context_iteration(NULL, FALSE);
		g_usleep(100);
	}
	return ha_commit_waiting() == n;
}

/*
 * A steady guest beside flooders (the header comment's last case). Every commit thread
 * of full batches is held by a guest whose BEGIN waits for the write lock of another
 * connection to its store (SQLite's busy timeout, 5 s, is far above what this takes).
 */
static void steady_beside_flood(const char *dir)
{
	guint n = ha_commit_threads();
	g_autofree Guest *hold = g_new0(Guest, n);
	Guest steady = { 0 }, flood = { 0 };
	GError *e = NULL;
	bool ok = true;

	CHECK(guest_open(&steady, dir, "steady", false, &e) && send_page(steady.c, 1, &e) &&
	      ha_conn_flush_start(steady.c, &e) && wait_commits(&steady.k, 1) &&
	      conn_last_ack(steady.c) == 1, "a steady guest's first page committed: a small chunk"
	      " (%s)", e ? e->message : "ok");
	g_clear_error(&e);
	/* its merge is now due from a low-priority idle source, not run yet */
	for (guint i = 0; i < n && ok; i++) {
		g_autofree char *name = g_strdup_printf("hold%u", i);

		ok = guest_open(&hold[i], dir, name, true, &e) &&
		     sqlite3_exec(hold[i].lock, "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
		     SQLITE_OK && send_page(hold[i].c, 1, &e);
	}
	CHECK(ok && waiting_becomes(0, false), "each of the %u commit threads of full"
	      " batches holds one waiting for a lock (%s)", n, e ? e->message : "ok");
	g_clear_error(&e);
	CHECK(waiting_becomes(1, true), "the steady guest's merge waits for a thread");
	CHECK(guest_open(&flood, dir, "flood", true, &e) && send_page(flood.c, 1, &e) &&
	      ha_commit_waiting() == 2, "a flooding guest's full batch waits too, before it"
	      " (%s)", e ? e->message : "ok");
	g_clear_error(&e);
	steady.k.watch = &flood.k.calls;
	CHECK(send_page(steady.c, 2, &e) && ha_conn_flush_start(steady.c, &e) &&
	      ha_conn_stats(steady.c)->merges_dropped == 1,
	      "the steady guest's next page due: its merge dropped (%s)",
	      e ? e->message : "ok");
	g_clear_error(&e);
	CHECK(wait_commits(&steady.k, 2) && !steady.k.error && conn_last_ack(steady.c) == 2 &&
	      steady.k.seen == 0 && hold[0].k.calls == 0, "its commit acknowledged while"
	      " every full batch's thread is held and the flooder waits (%u of the flooder's"
	      " commits before it)", steady.k.seen);
	while (g_main_context_iteration(NULL, FALSE))
		;
	CHECK(ha_commit_waiting() == 2 && ha_conn_stats(steady.c)->merges_dropped == 1,
	      "no merge started again while the flooder's batch waits (%u waiting)",
	      ha_commit_waiting());
	for (guint i = 0; i < n; i++)
		sqlite3_exec(hold[i].lock, "ROLLBACK", NULL, NULL, NULL);
	ok = wait_commits(&flood.k, 1) && !flood.k.error && conn_last_ack(flood.c) == 1;
	for (guint i = 0; i < n; i++)
		ok = ok && wait_commits(&hold[i].k, 1) && !hold[i].k.error &&
		     conn_last_ack(hold[i].c) == 1;
	CHECK(ok, "the locks released: the flooder and every held guest acknowledged");
	/* the dropped merge was freed by the pool, unrun; the closes merge what is left */
	for (guint i = 0; i < n; i++)
		guest_close(&hold[i]);
	guest_close(&flood);
	guest_close(&steady);
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-commit-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "t.db", NULL);
	GError *e = NULL;
	HaStore *s = ha_store_open(path, false, &e);
	Committed k = { 0 };
	sqlite3 *other = NULL;
	HaLimits lim;
	HaConn *c;

	CHECK(s && sqlite3_open(path, &other) == SQLITE_OK, "store and a second connection");
	ha_limits_default(&lim);
	lim.batch_frames = 2;
	c = ha_conn_new(s, &lim, "t", "test");
	ha_conn_set_committed(c, on_committed, &k);

	CHECK(send_hello(c, &e) && send_epoch(c, 1, 0, &e) && send_epoch(c, 2, 1, &e),
	      "HELLO and a full batch of two EPOCHs");
	CHECK(wait_commits(&k, 1) && !k.error && conn_last_ack(c) == 2,
	      "committed on the commit thread, then ACK 2 (%s)", k.error ? k.error : "no error");

	/* the database's write lock, held by another connection */
	CHECK(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK,
	      "another connection holds the write lock");
	CHECK(send_page(c, 3, &e) && send_page(c, 4, &e), "a full batch of two PAGEs: in flight");
	CHECK(send_epoch(c, 5, 2, &e), "an EPOCH while it is in flight");
	CHECK(ha_conn_read(c, 4, 1 << 20, read_nothing, NULL, &e) == HA_READ_PAUSED,
	      "the connection is paused: the EPOCH is held");
	CHECK(k.calls == 1 && conn_last_ack(c) == 0, "nothing acknowledged while in flight");
	CHECK(q1(other, "SELECT COUNT(*) FROM chunks") == 0 &&
	      q1(other, "SELECT COUNT(*) FROM epochs") == 2 &&
	      q1(other, "SELECT next_seq FROM streams") == 3,
	      "the database holds nothing of the batch in flight, nor the held EPOCH");
	CHECK(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK, "lock released");
	CHECK(wait_commits(&k, 2) && !k.error && conn_last_ack(c) == 4,
	      "the PAGEs committed, ACK 4, not 5 (%s)", k.error ? k.error : "no error");
	CHECK(ha_conn_read(c, 4, 1 << 20, read_nothing, NULL, &e) == HA_READ_DRY &&
	      ha_conn_flush_start(c, &e) && wait_commits(&k, 3) && !k.error &&
	      conn_last_ack(c) == 5, "the held EPOCH applied after it, committed, ACK 5");
	CHECK(q1(other, "SELECT COUNT(*) FROM chunks") == 1 &&
	      q1(other, "SELECT COUNT(*) FROM epochs") == 3 &&
	      q1(other, "SELECT next_seq FROM streams") == 6, "the database has all of it");

	/* a store failure on the commit thread */
	CHECK(sqlite3_exec(other, "CREATE TRIGGER fault BEFORE INSERT ON chunks BEGIN"
			   " SELECT RAISE(ABORT, 'injected fault'); END", NULL, NULL,
			   NULL) == SQLITE_OK, "chunks refused by a trigger");
	CHECK(send_page(c, 6, &e) && send_page(c, 7, &e), "a full batch of two PAGEs");
	CHECK(wait_commits(&k, 4) && k.error && strstr(k.error, "injected fault"),
	      "the commit thread's failure reported: %s", k.error ? k.error : "none");
	CHECK(conn_last_ack(c) == 0 && q1(other, "SELECT next_seq FROM streams") == 6 &&
	      q1(other, "SELECT COUNT(*) FROM chunks") == 1,
	      "nothing of the failed batch acknowledged or stored");
	CHECK(!ha_conn_flush(c, &e) && e && strstr(e->message, "earlier batch failed"),
	      "no commit after it: %s", e ? e->message : "committed");
	g_clear_error(&e);
	CHECK(!send_page(c, 8, &e) || !ha_conn_flush(c, &e), "nor of a later frame");
	g_clear_error(&e);
	ha_conn_close(c);
	CHECK(conn_last_ack(c) == 0 && q1(other, "SELECT next_seq FROM streams") == 6,
	      "closed: still nothing acknowledged beyond 5");
	ha_conn_free(c);

	sqlite3_close(other);
	ha_store_free(s);
	g_free(k.error);

	steady_beside_flood(dir);
	{
		/* t.db and steady_beside_flood()'s stores, with their -wal and -shm */
		g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
		const char *name;

		while (d && (name = g_dir_read_name(d))) {
			g_autofree char *f = g_build_filename(dir, name, NULL);

			g_unlink(f);
		}
		g_rmdir(dir);
	}
	return tap_done();
}
