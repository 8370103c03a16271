// SPDX-License-Identifier: MIT
/*
 * Unit tests of the connection driver (conn-driver.h), the one code every source runs
 * its connections through: a real HaConn and store under the driver, over a scripted
 * link (a HaLink backend whose reads, room for writes and errors the test sets) and
 * over a real socketpair (the fd link). Checked: output the link does not take waits
 * for its writable notification, not for more input, and want-write goes off once it
 * is written; a batch is committed and acknowledged by the timer when the input runs
 * dry, with no further input; a write error ends the connection (the stream recorded
 * as disconnected) and tells the owner, who may free the driver from there; drain
 * applies and acknowledges everything buffered, past the reads-per-wake limit; on a
 * socket whose peer stopped reading, the write error ends the connection; a second
 * connection on a store while one runs is refused, and taken once the first ended.
 * Each driver runs its connection on a thread of its own (conn-driver.h): the test
 * reaches a link's backend under sc_lock, tells it what happened through the link's
 * relay (as libvirt's event loop does), and waits for outcomes, never for a time.
 * Beside a guest whose input never runs dry, another guest's ACKs and a frame it held
 * for a commit in flight are acknowledged while the flooder goes on; and while one
 * connection's thread is stopped in the middle of its read-and-apply loop (its link's
 * read blocks until the test lets it go), another connection is acknowledged: its ACK
 * is not held by that thread (on one loop for every connection it would be). A store
 * taken from the owner's thread (ha_driver_hold_store()) stops its connection's
 * thread until it is given back.
 */
#include <errno.h>
#include <inttypes.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn-driver.h"
#include "crash.h"
#include "guest-formats.h"
#include "guest-hello.h"
#include "link-impl.h"
#include "proto.h"
#include "ringpage.h"
#include "tap.h"

/* ---- a scripted link ----------------------------------------------------------- */

/* Every Script and Flood field below is read or written under sc_lock: the backend
 * runs on its connection's thread, the test on its own. sc_cond: a read blocked or
 * let go (Script.block_at). */
static GMutex sc_lock;
static GCond sc_cond;

typedef struct {
	GByteArray *in;		/* what the guest sent, from in_off on unread */
	size_t in_off;
	size_t read_max;	/* bytes per read at most */
	GByteArray *out;	/* what the host wrote */
	size_t room;		/* bytes writes take now */
	int write_err;		/* a -errno writes return when set */
	bool want_write;
	bool closed;
	HaLink *link;		/* NULL once closed */
	HaLinkRelay *relay;	/* notifications from the test's thread (link-impl.h) */
	/* a read with in_off at block_at or beyond (0: none) waits, blocked set, until
	 * the test clears block_at: the connection's thread stops in its read loop */
	size_t block_at;
	bool blocked;
} Script;

typedef struct {
	HaLink link;
	Script *sc;
} ScriptLink;

static bool sl_start(HaLink *l, GError **error)
{
	return true;
}

static ssize_t sl_read(HaLink *l, uint8_t *buf, size_t len)
{
	Script *sc = ((ScriptLink *)l)->sc;
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);
	size_t n;

	while (sc->block_at && sc->in_off >= sc->block_at) {
		sc->blocked = true;
		g_cond_broadcast(&sc_cond);
		g_cond_wait(&sc_cond, &sc_lock);
	}
	sc->blocked = false;
	n = MIN(MIN(len, sc->read_max), sc->in->len - sc->in_off);
	if (!n)
		return -EAGAIN;
	memcpy(buf, sc->in->data + sc->in_off, n);
	sc->in_off += n;
	return (ssize_t)n;
}

static ssize_t sl_write(HaLink *l, const uint8_t *buf, size_t len)
{
	Script *sc = ((ScriptLink *)l)->sc;
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);
	size_t n = MIN(len, sc->room);

	if (sc->write_err)
		return sc->write_err;
	if (!n)
		return -EAGAIN;
	g_byte_array_append(sc->out, buf, (guint)n);
	sc->room -= n;
	return (ssize_t)n;
}

static void sl_want_write(HaLink *l, bool want)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	((ScriptLink *)l)->sc->want_write = want;
}

static void sl_close(HaLink *l)
{
	Script *sc = ((ScriptLink *)l)->sc;
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	sc->closed = true;
	sc->link = NULL;
	g_free(l);
}

static const HaLinkOps script_ops = {
	.start = sl_start, .read = sl_read, .write = sl_write,
	.want_write = sl_want_write, .close = sl_close,
};

static HaLink *script_link(Script *sc)
{
	ScriptLink *l = g_new0(ScriptLink, 1);

	memset(sc, 0, sizeof(*sc));
	sc->in = g_byte_array_new();
	sc->out = g_byte_array_new();
	sc->read_max = 1u << 20;
	sc->room = SIZE_MAX;
	ha_link_init(&l->link, &script_ops, "script");
	l->sc = sc;
	sc->link = &l->link;
	return &l->link;
}

/* Its driver started (the link's relay exists): the test may notify it from now on. */
static void script_started(Script *sc)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	if (sc->link)
		sc->relay = ha_link_relay_ref(sc->link);
}

/* As the link's backend would: on the link's thread, even once it is closed. */
static void notify(Script *sc, HaLinkEvents ev)
{
	ha_link_relay_notify(sc->relay, ev);
}

static void script_free(Script *sc)
{
	if (sc->relay)
		ha_link_relay_unref(sc->relay);
	g_byte_array_unref(sc->in);
	g_byte_array_unref(sc->out);
}

/* Change the script's input or room under the lock. */
static void script_add(Script *sc, void (*put)(GByteArray *, uint64_t), uint64_t seq)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	put(sc->in, seq);
}

static void script_room(Script *sc, size_t room)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	sc->room = room;
}

/* ---- a flooding guest: its input never runs dry ----------------------------------- */

/* Its link is readable as long as reads are wanted, as a socket's fd watch with bytes
 * waiting is: a source at the fd watch's priority, ready at every iteration of its
 * connection's context. What it sends: the same valid frame over and over, a
 * duplicate the host checks and drops (so it never pauses for a commit of its own). */
typedef struct {
	HaLink *link;		/* NULL once closed */
	GSource *ready;		/* its connection's thread only */
	GByteArray *in;		/* HELLO, then PAGE seq 1 forever after, from off on */
	size_t off;
	uint64_t reads;		/* sc_lock */
	bool closed;		/* sc_lock */
	size_t read_max;
} Flood;

typedef struct {
	HaLink link;
	Flood *fl;
} FloodLink;

static void put_page(GByteArray *to, uint64_t seq);
static void put_hello(GByteArray *to);

static gboolean fl_ready(gpointer user)
{
	ha_link_notify(((Flood *)user)->link, HA_LINK_READABLE);
	return G_SOURCE_CONTINUE;
}

static void fl_want_read(HaLink *l, bool want)
{
	Flood *fl = ((FloodLink *)l)->fl;

	if (want && !fl->ready) {
		fl->ready = g_idle_source_new();
		g_source_set_priority(fl->ready, G_PRIORITY_DEFAULT);
		g_source_set_callback(fl->ready, fl_ready, fl, NULL);
		g_source_attach(fl->ready, l->ctx);
	} else if (!want && fl->ready) {
		g_source_destroy(fl->ready);
		g_clear_pointer(&fl->ready, g_source_unref);
	}
}

static bool fl_start(HaLink *l, GError **error)
{
	fl_want_read(l, true);
	return true;
}

static ssize_t fl_read(HaLink *l, uint8_t *buf, size_t len)
{
	Flood *fl = ((FloodLink *)l)->fl;
	size_t n;

	while (fl->in->len - fl->off < fl->read_max) {
		g_byte_array_remove_range(fl->in, 0, (guint)fl->off);
		fl->off = 0;
		put_page(fl->in, 1);
	}
	n = MIN(len, fl->read_max);
	memcpy(buf, fl->in->data + fl->off, n);
	fl->off += n;
	g_mutex_lock(&sc_lock);
	fl->reads++;
	g_mutex_unlock(&sc_lock);
	return (ssize_t)n;
}

static ssize_t fl_write(HaLink *l, const uint8_t *buf, size_t len)
{
	return (ssize_t)len;
}

static void fl_close(HaLink *l)
{
	Flood *fl = ((FloodLink *)l)->fl;

	fl_want_read(l, false);
	g_mutex_lock(&sc_lock);
	fl->link = NULL;
	fl->closed = true;
	g_mutex_unlock(&sc_lock);
	g_free(l);
}

static const HaLinkOps flood_ops = {
	.start = fl_start, .read = fl_read, .write = fl_write, .want_read = fl_want_read,
	.close = fl_close,
};

static HaLink *flood_link(Flood *fl)
{
	FloodLink *l = g_new0(FloodLink, 1);

	memset(fl, 0, sizeof(*fl));
	fl->in = g_byte_array_new();
	fl->read_max = 4096;
	put_hello(fl->in);
	put_page(fl->in, 1);
	ha_link_init(&l->link, &flood_ops, "flood");
	l->fl = fl;
	fl->link = &l->link;
	return &l->link;
}

static uint64_t flood_reads(Flood *fl)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	return fl->reads;
}

static bool flooding(Flood *fl)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	return !fl->closed;
}

/* ---- frames -------------------------------------------------------------------- */

static uint8_t boot_id[16] = { 7, 7, 7 };

static void put_frame(GByteArray *to, uint8_t type, uint64_t seq, const void *p, size_t len)
{
	g_autofree uint8_t *buf = g_malloc(SMP_HDR_SIZE + len);
	long n = smp_frame_encode(buf, SMP_HDR_SIZE + len, type, 0, seq, p, len);

	g_assert(n > 0);
	g_byte_array_append(to, buf, (guint)n);
}

static void put_hello(GByteArray *to)
{
	uint8_t p[128];
	long n = gh_hello_encode(p, sizeof(p), boot_id, 9, 2);

	g_assert(n > 0);
	put_frame(to, SMP_HELLO, 0, p, (size_t)n);
}

static void put_epoch(GByteArray *to, uint64_t seq, uint64_t epoch)
{
	uint8_t p[64];
	long n = smp_delta_put_epoch(p, sizeof(p), epoch, 1000 + epoch);

	g_assert(n > 0);
	put_frame(to, SMP_EPOCH, seq, p, (size_t)n);
}

/* A PAGE of cpu 0 with one kmalloc event (stored unparsed: no formats were sent). */
static void put_page(GByteArray *to, uint64_t seq)
{
	uint8_t page[4096], p[8 + sizeof(page)];
	struct smp_page m = { .cpu = 0, .data = page };
	long n;

	m.data_len = ringpage_one_kmalloc(page, sizeof(page), 1000 * seq);
	n = smp_page_encode(&m, p, sizeof(p));
	g_assert(n > 0);
	put_frame(to, SMP_PAGE, seq, p, (size_t)n);
}

/* EPOCH seq with epoch seq - 1, the script_add() way. */
static void put_epoch_seq(GByteArray *to, uint64_t seq)
{
	put_epoch(to, seq, seq - 1);
}

/* What the host wrote: the WELCOME's resume seq (0: none) and the last ACK (0: none). */
static void parse_out(const GByteArray *out, uint64_t *ret_welcome, uint64_t *ret_ack)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);
	struct smp_decoder *d = smp_decoder_new(64);
	struct smp_frame f;

	*ret_welcome = *ret_ack = 0;
	smp_decoder_feed(d, out->data, out->len);
	while (smp_decoder_next(d, &f, NULL) == 1) {
		if (f.type == SMP_ACK)
			smp_ack_decode(ret_ack, f.payload, f.len);
		if (f.type == SMP_WELCOME) {
			struct smp_welcome w;

			smp_welcome_decode(&w, f.payload, f.len);
			*ret_welcome = w.resume_seq;
		}
	}
	smp_decoder_free(d);
}

static uint64_t last_ack(const GByteArray *out)
{
	uint64_t w, a;

	parse_out(out, &w, &a);
	return a;
}

/* Run the owner's loop (HaDriverEnded comes there) until @cond or 5 s (a bound for a
 * broken build, not a timing). */
static bool iterate_until(bool (*cond)(void *), void *arg)
{
	gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

	while (!cond(arg) && g_get_monotonic_time() < end)
		if (!g_main_context_iteration(NULL, FALSE))
			g_usleep(1000);
	return cond(arg);
}

static void put_hello_seq(GByteArray *to, uint64_t unused)
{
	(void)unused;
	put_hello(to);
}

typedef struct {
	Script *sc;
	uint64_t ack;
} AckWait;

static bool acked(void *p)
{
	AckWait *w = p;

	return last_ack(w->sc->out) >= w->ack;
}

/* The script's want-write is @want, or its output @len bytes. */
static bool want_write_is(void *p)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);
	AckWait *w = p;

	return w->sc->want_write == (w->ack != 0);
}

static bool out_len_is(void *p)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);
	AckWait *w = p;

	return w->sc->out->len == w->ack;
}

static bool script_want_write(Script *sc)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	return sc->want_write;
}

static bool script_closed(Script *sc)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	return sc->closed;
}

/* The paced guest's ACK reached @ack, or the flooder made @reads_max reads (a bound
 * in its reads rather than in time). */
typedef struct {
	Flood *fl;
	Script *sc;
	uint64_t ack;
	uint64_t reads_max;
} FloodWait;

static bool flood_acked(void *p)
{
	FloodWait *w = p;

	return last_ack(w->sc->out) >= w->ack || flood_reads(w->fl) >= w->reads_max;
}

/* ---- the owner's side ------------------------------------------------------------ */

typedef struct {
	HaDriver *drv;
	int ended;
	bool free_in_ended;
} Owner;

static void on_ended(HaDriver *d, void *user)
{
	Owner *o = user;

	o->ended++;
	if (o->free_in_ended) {
		ha_driver_free(d, NULL);
		o->drv = NULL;
	}
}

/* The driver queued an ACK of this seq (committed), written or not. */
typedef struct {
	HaDriver *drv;
	uint64_t seq;
} QueuedWait;

static bool ack_queued(void *p)
{
	QueuedWait *q = p;
	HaConnStats st;

	return ha_driver_stats(q->drv, &st) && st.acked >= q->seq;
}

static bool owner_ended(void *p)
{
	return ((Owner *)p)->ended > 0;
}

static char *boot_ended(const char *db)
{
	sqlite3 *s;
	sqlite3_stmt *st;
	char *v = NULL;

	if (sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return NULL;
	if (sqlite3_prepare_v2(s, "SELECT ended FROM boots", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			v = g_strdup((const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	sqlite3_close(s);
	return v;
}

/* The script's link blocks in a read (the connection's thread stopped there). */
static bool script_blocked(void *p)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	return ((Script *)p)->blocked;
}

static void script_unblock(Script *sc)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&sc_lock);

	sc->block_at = 0;
	g_cond_broadcast(&sc_cond);
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-driver-XXXXXX", NULL);
	g_autofree char *db = g_build_filename(dir, "t.db", NULL);
	g_autofree char *db2 = g_build_filename(dir, "u.db", NULL);
	g_autofree char *ended = NULL;
	GError *e = NULL;
	HaStore *store = ha_store_open(db, false, &e);
	HaLimits lim;
	Script sc;
	Owner o = { 0 };
	uint64_t welcome, ack;
	AckWait w = { &sc, 0 };

	g_assert(store);
	ha_limits_default(&lim);
	lim.time_probe_ms = 0;

	/* 1. WELCOME into a link with no room: waits for WRITABLE, not for input. */
	o.drv = ha_driver_new(script_link(&sc), store, &lim, "t", on_ended, &o, &e);
	CHECK(o.drv != NULL, "driver over a scripted link");
	script_started(&sc);
	script_room(&sc, 0);
	script_add(&sc, put_hello_seq, 0);
	notify(&sc, HA_LINK_READABLE);
	w.ack = 1;
	CHECK(iterate_until(want_write_is, &w) && last_ack(sc.out) == 0 &&
	      iterate_until(out_len_is, &(AckWait){ &sc, 0 }),
	      "a WELCOME the link cannot take: want-write on, nothing written");
	script_room(&sc, 5);
	notify(&sc, HA_LINK_WRITABLE);
	CHECK(iterate_until(out_len_is, &(AckWait){ &sc, 5 }) && script_want_write(&sc),
	      "5 bytes of room: 5 written, want-write stays on");
	script_room(&sc, SIZE_MAX);
	notify(&sc, HA_LINK_WRITABLE);
	w.ack = 0;
	CHECK(iterate_until(want_write_is, &w), "writable: want-write off");
	parse_out(sc.out, &welcome, &ack);
	CHECK(welcome == 1, "the whole WELCOME written (resume %" PRIu64 ")", welcome);

	/* 2. A frame, then nothing: the commit timer commits and ACKs it. */
	script_add(&sc, put_epoch_seq, 1);
	script_add(&sc, put_epoch_seq, 2);
	notify(&sc, HA_LINK_READABLE);
	w.ack = 2;
	CHECK(iterate_until(acked, &w), "input dry: ACK 2 by the commit timer, no more input"
	      " (ACK %" PRIu64 ")", last_ack(sc.out));

	/* 3. ACK behind a full link, then written on WRITABLE alone. */
	script_room(&sc, 0);
	script_add(&sc, put_epoch_seq, 3);
	notify(&sc, HA_LINK_READABLE);
	CHECK(iterate_until(ack_queued, &(QueuedWait){ o.drv, 3 }) &&
	      iterate_until(want_write_is, &(AckWait){ &sc, 1 }) && last_ack(sc.out) == 2,
	      "ACK 3, committed by the timer, waits in a full link");
	script_room(&sc, SIZE_MAX);
	notify(&sc, HA_LINK_WRITABLE);
	w.ack = 3;
	CHECK(iterate_until(acked, &w) && iterate_until(want_write_is, &(AckWait){ &sc, 0 }),
	      "and is written when writable (%" PRIu64 ")", last_ack(sc.out));

	/* 4. A write error ends the connection; the owner frees the driver right there. */
	o.free_in_ended = true;
	g_mutex_lock(&sc_lock);
	sc.write_err = -EPIPE;
	g_mutex_unlock(&sc_lock);
	script_add(&sc, put_epoch_seq, 4);
	notify(&sc, HA_LINK_READABLE);
	CHECK(iterate_until(owner_ended, &o), "write error: the owner is told");
	CHECK(o.ended == 1 && o.drv == NULL && script_closed(&sc), "once, on its own thread,"
	      " the link closed, the driver freed from the callback");
	ended = boot_ended(db);
	CHECK(ended && strcmp(ended, "disconnected") == 0, "boot recorded '%s'",
	      ended ? ended : "(null)");
	notify(&sc, HA_LINK_READABLE);	/* a late event of a closed link: nothing */
	script_free(&sc);
	ha_store_free(store);

	/* 5. drain: frames in reads of 7 bytes, far past the reads per wake-up. */
	store = ha_store_open(db2, false, &e);
	o = (Owner){ 0 };
	o.drv = ha_driver_new(script_link(&sc), store, &lim, "t", on_ended, &o, &e);
	script_started(&sc);
	g_mutex_lock(&sc_lock);
	sc.read_max = 7;
	put_hello(sc.in);
	for (uint64_t i = 1; i <= 40; i++)
		put_epoch(sc.in, i, i - 1);
	g_mutex_unlock(&sc_lock);
	CHECK(ha_driver_drain(o.drv), "drain: the connection is still up");
	g_mutex_lock(&sc_lock);
	CHECK(sc.in_off == sc.in->len, "drain read all %u bytes (%zu)", sc.in->len,
	      sc.in_off);
	g_mutex_unlock(&sc_lock);
	CHECK(last_ack(sc.out) == 40, "drain committed and acknowledged up to 40 (%" PRIu64
	      ")", last_ack(sc.out));
	{
		Script sc2;
		HaDriver *second = ha_driver_new(script_link(&sc2), store, &lim, "t",
						 on_ended, &o, &e);

		CHECK(!second && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_BUSY) &&
		      sc2.closed, "a second connection on the store is refused: %s",
		      e ? e->message : "accepted");
		g_clear_error(&e);
		script_free(&sc2);
	}
	ha_driver_free(o.drv, "test done");
	CHECK(script_closed(&sc) && o.ended == 0, "freed by its owner: link closed, no"
	      " ended call");
	script_free(&sc);
	{
		Script sc3;
		HaDriver *next = ha_driver_new(script_link(&sc3), store, &lim, "t", on_ended,
					       &o, &e);

		CHECK(next != NULL, "once it ended, the next connection is taken");
		ha_driver_free(next, NULL);
		script_free(&sc3);
	}
	ha_store_free(store);

	/* 6. A real socket whose peer stopped reading: the write error ends it. */
	{
		g_autofree char *db3 = g_build_filename(dir, "v.db", NULL);
		g_autoptr(GByteArray) hello = g_byte_array_new();
		int sv[2];

		store = ha_store_open(db3, false, &e);
		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
		o = (Owner){ 0 };
		o.free_in_ended = true;
		o.drv = ha_driver_new(ha_link_new_fd(sv[0], "socketpair"), store, &lim, "t",
				      on_ended, &o, &e);
		shutdown(sv[1], SHUT_RD);
		put_hello(hello);
		CHECK(write(sv[1], hello->data, hello->len) == (ssize_t)hello->len,
		      "HELLO sent by a guest that reads nothing");
		CHECK(iterate_until(owner_ended, &o) && o.drv == NULL,
		      "the WELCOME's write fails (EPIPE): the connection ends");
		close(sv[1]);
		ha_store_free(store);
	}

	/* 7. A flooder beside a paced guest, each on its thread. */
	{
		g_autofree char *dbf = g_build_filename(dir, "flood.db", NULL);
		g_autofree char *dbp = g_build_filename(dir, "paced.db", NULL);
		HaStore *sf = ha_store_open(dbf, false, &e), *sp = ha_store_open(dbp, false, &e);
		HaLimits plim = lim;
		HaDriver *df, *dp;
		Flood fl;
		uint64_t reads;
		FloodWait fw = { &fl, &sc, 0, 0 };

		plim.batch_frames = 1;	/* each frame its own commit: no timer involved */
		df = ha_driver_new(flood_link(&fl), sf, &lim, "flood", NULL, NULL, &e);
		dp = ha_driver_new(script_link(&sc), sp, &plim, "paced", NULL, NULL, &e);
		CHECK(df && dp, "a flooder and a paced guest");
		script_started(&sc);
		fw.reads_max = 100 * HA_DRIVER_READS_PER_WAKE;
		fw.ack = UINT64_MAX;
		iterate_until(flood_acked, &fw);
		CHECK(flood_reads(&fl) >= fw.reads_max, "the flooder floods (%" PRIu64
		      " reads)", flood_reads(&fl));

		/* a. The paced guest's ACK is written while the flooder goes on. */
		reads = flood_reads(&fl);
		script_add(&sc, put_hello_seq, 0);
		script_add(&sc, put_page, 1);
		notify(&sc, HA_LINK_READABLE);
		fw.ack = 1;
		fw.reads_max = reads + 1000000;
		CHECK(iterate_until(flood_acked, &fw) && last_ack(sc.out) == 1 &&
		      flooding(&fl), "the paced guest's ACK 1 is written while the flooder"
		      " floods (%" PRIu64 " reads of it meanwhile)", flood_reads(&fl) - reads);

		/* b. A frame held for the commit in flight (EPOCH 3 behind PAGE 2, its
		 * guest sending nothing more) is applied and acknowledged while the
		 * flooder goes on, not when it stops. */
		script_add(&sc, put_page, 2);
		script_add(&sc, put_epoch_seq, 3);
		notify(&sc, HA_LINK_READABLE);
		fw.ack = 3;
		fw.reads_max = flood_reads(&fl) + 2000000;
		CHECK(iterate_until(flood_acked, &fw) && last_ack(sc.out) == 3 &&
		      flooding(&fl), "the paced guest's held EPOCH 3 is acknowledged while"
		      " the flooder floods (ACK %" PRIu64 ", %" PRIu64 " reads of the"
		      " flooder)", last_ack(sc.out), flood_reads(&fl) - reads);
		ha_driver_free(dp, NULL);
		ha_driver_free(df, NULL);
		CHECK(!flooding(&fl), "freed: the flooder's link closed on its thread");
		script_free(&sc);
		g_byte_array_unref(fl.in);
		ha_store_free(sp);
		ha_store_free(sf);
	}

	/*
	 * 8. One connection's thread stopped in the middle of its read-and-apply loop
	 * (its link's read blocks, after its HELLO was applied, until the test lets it
	 * go): another connection's frame is committed and acknowledged meanwhile. No
	 * time is measured: B's ACK arrives while A is blocked, which cannot happen if
	 * B's read, apply or ACK waited for A's thread.
	 */
	{
		g_autofree char *dba = g_build_filename(dir, "a.db", NULL);
		g_autofree char *dbb = g_build_filename(dir, "b.db", NULL);
		HaStore *sa = ha_store_open(dba, false, &e), *sb = ha_store_open(dbb, false, &e);
		HaLimits plim = lim;
		Script sa_sc, sb_sc;
		HaDriver *da, *db_;
		size_t hello_len;
		bool a_blocked;

		plim.batch_frames = 1;
		da = ha_driver_new(script_link(&sa_sc), sa, &plim, "a", NULL, NULL, &e);
		db_ = ha_driver_new(script_link(&sb_sc), sb, &plim, "b", NULL, NULL, &e);
		CHECK(da && db_, "two connections");
		script_started(&sa_sc);
		script_started(&sb_sc);
		g_mutex_lock(&sc_lock);
		put_hello(sa_sc.in);
		hello_len = sa_sc.in->len;
		put_page(sa_sc.in, 1);
		sa_sc.read_max = hello_len;	/* HELLO in one read, then the PAGE */
		sa_sc.block_at = hello_len;
		g_mutex_unlock(&sc_lock);
		notify(&sa_sc, HA_LINK_READABLE);
		CHECK(iterate_until(script_blocked, &sa_sc),
		      "A's thread is stopped in its read loop, its HELLO applied");

		script_add(&sb_sc, put_hello_seq, 0);
		script_add(&sb_sc, put_page, 1);
		script_add(&sb_sc, put_epoch_seq, 2);
		notify(&sb_sc, HA_LINK_READABLE);
		CHECK(iterate_until(acked, &(AckWait){ &sb_sc, 2 }), "B's frames are"
		      " acknowledged (ACK %" PRIu64 ")", last_ack(sb_sc.out));
		a_blocked = script_blocked(&sa_sc);
		CHECK(a_blocked && last_ack(sa_sc.out) == 0, "while A's thread is still"
		      " stopped (blocked %d, A's ACK %" PRIu64 ")", a_blocked,
		      last_ack(sa_sc.out));

		script_unblock(&sa_sc);
		CHECK(iterate_until(acked, &(AckWait){ &sa_sc, 1 }), "let go, A's PAGE 1 is"
		      " acknowledged too (ACK %" PRIu64 ")", last_ack(sa_sc.out));
		ha_driver_free(da, NULL);
		ha_driver_free(db_, NULL);
		script_free(&sa_sc);
		script_free(&sb_sc);
		ha_store_free(sa);
		ha_store_free(sb);
	}

	/*
	 * 9. The store taken from the owner's thread (as a crash mark or a post-mortem
	 * takes it): the connection's thread waits meanwhile, so a HELLO sent while the
	 * store is held is not applied (no boot to mark) until it is given back; then it
	 * is, and a mark made holding the store again finds its boot.
	 */
	{
		g_autofree char *dbh = g_build_filename(dir, "held.db", NULL);
		g_autofree char *dbn = g_build_filename(dir, "none.db", NULL);
		HaStore *sh = ha_store_open(dbh, false, &e), *sn = ha_store_open(dbn, false, &e);
		HaLimits plim = lim;
		HaDriverHold *h, *h2;
		HaDriver *dh;

		plim.batch_frames = 1;
		dh = ha_driver_new(script_link(&sc), sh, &plim, "held", NULL, NULL, &e);
		CHECK(dh != NULL, "a connection to hold the store of");
		script_started(&sc);
		CHECK(ha_driver_hold_store(sn) == NULL, "a store no connection runs on: nothing"
		      " to hold");
		h = ha_driver_hold_store(sh);
		h2 = ha_driver_hold_store(sh);
		CHECK(h != NULL && h2 == h, "held, and held again (nested) on the same thread");
		ha_driver_release(h2);
		script_add(&sc, put_hello_seq, 0);
		script_add(&sc, put_page, 1);
		notify(&sc, HA_LINK_READABLE);
		CHECK(!ha_crash_mark(sh, "held", g_get_real_time(), 0, "test"), "while held,"
		      " the connection applied nothing: no boot streaming to mark");
		ha_driver_release(h);
		CHECK(iterate_until(acked, &(AckWait){ &sc, 1 }), "given back: its HELLO and"
		      " PAGE 1 are applied and acknowledged (ACK %" PRIu64 ")",
		      last_ack(sc.out));
		h = ha_driver_hold_store(sh);
		CHECK(ha_crash_mark(sh, "held", g_get_real_time(), 0, "test"), "held again: its"
		      " boot is marked crashed");
		ha_driver_release(h);
		ha_driver_free(dh, NULL);
		script_free(&sc);
		ha_store_free(sh);
		ha_store_free(sn);
	}

	g_unlink(db);
	g_unlink(db2);
	return tap_done();
}
