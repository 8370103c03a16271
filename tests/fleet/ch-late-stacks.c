// SPDX-License-Identifier: MIT
/*
 * ch-late-stacks SCENARIO STATE_DIR URL: one boot of domain "t" written into
 * STATE_DIR/t.db by a real HaConn (frames fed directly, as test-report-cpu.c does) and
 * replicated to ClickHouse at URL by ha_ch_ship() at chosen moments of its stream,
 * each through a read-only store of its own as the daemon's replication thread does.
 * Its events' stacks come late: pages 0-3 of CPU 0 (one chunk each: a commit per
 * page) are stored before the stack delta they need. What t-clickhouse-late.sh then
 * checks: the fleet's events equal the store's, every stack resolved.
 *
 * The orders forced here (no timing involved), after pages 0-3 were shipped (pages
 * 0-2 below the watermark, their events unresolved):
 *
 * merge   page 4, then the chunks merged into one (the ingest's compaction does this
 *         when a run of small chunks reaches its size: the CPU's newest chunk may be
 *         in the run) and an unrelated stack delta so that the boot's signature
 *         moves: shipped while the merged chunk is the CPU's newest, so that pages
 *         0-2 are on it; then page 5 (a chunk of its own), the missing stacks, BYE:
 *         shipped. Before the fix, the second round forgot pages 0-2 (it did not
 *         keep a page of the newest chunk as waiting for a stack: such pages stay
 *         above the watermark, but these were below it).
 * resume  the connection closes without BYE (the boot is 'disconnected'): shipped;
 *         then the guest reconnects, the stream resumes (the same boot and stream)
 *         with page 4, the missing stacks and BYE: shipped. Before the fix, the round
 *         that saw the boot disconnected forgot pages 0-3 (a boot that ended kept
 *         them only when it ended 'crashed').
 * overflow as resume with 300 pages before the first round: more pages wait than the
 *         watermark remembers (256), so the round that sees the boot disconnected
 *         sends the CPU again whole. Before the fix, it then forgot that the CPU had
 *         more waiting pages than U holds: after the resume, pages beyond U's 256
 *         stayed unresolved.
 */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "clickhouse.h"
#include "conn-feed.h"
#include "compact.h"
#include "guest-formats.h"
#include "guest-hello.h"
#include "ingest.h"
#include "proto.h"
#include "ringpage.h"

#define IP0		UINT64_C(0xffffffff81000100)
#define EVENTS_PER_PAGE	8u

static void put_common(uint8_t *d, uint16_t type, int32_t pid)
{
	memcpy(d, &type, 2);
	d[2] = 0;
	d[3] = 0;
	memcpy(d + 4, &pid, 4);
}

/* A kmalloc and its stack event (stack_id @id), as ftrace writes them. */
static void add_event(struct ringpage *rp, uint64_t ts, uint32_t id)
{
	uint8_t d[52] = { 0 }, s[12];
	uint64_t site = IP0, ptr = UINT64_C(0xffff888000001000) + ts, bytes = 64;

	put_common(d, GF_ID_KMALLOC, 7);
	memcpy(d + 8, &site, 8);
	memcpy(d + 16, &ptr, 8);
	memcpy(d + 24, &bytes, 8);
	memcpy(d + 32, &bytes, 8);
	g_assert(ringpage_add(rp, ts, d, sizeof(d)));
	put_common(s, GF_ID_STACK_ID, 7);
	memcpy(s + 8, &id, 4);
	g_assert(ringpage_add(rp, ts + 10, s, sizeof(s)));
}

typedef struct {
	HaStore *store;
	HaConn *conn;
	uint64_t seq;
	uint64_t ts;
	const char *dir;
	const char *url;
} Run;

/* The next page of CPU 0: kmallocs alternating between stack ids 1 and 2 of epoch
 * 0; a commit after it, so that it is a chunk of its own. */
static bool page(Run *r, GError **error)
{
	uint8_t buf[4096], p[SMP_PAGE_FIXED + 4096];
	struct ringpage rp;
	struct smp_page m = { .cpu = 0, .data = buf };
	long n;

	ringpage_init(&rp, buf, sizeof(buf));
	ringpage_reset(&rp, r->ts);
	for (unsigned int i = 0; i < EVENTS_PER_PAGE; i++, r->ts += 100)
		add_event(&rp, r->ts, smp_id_make(0, 1 + i % 2));
	m.data_len = ringpage_finish(&rp);
	n = smp_page_encode(&m, p, sizeof(p));
	return n > 0 && conn_send_frame(r->conn, SMP_PAGE, r->seq++, p, (size_t)n, error) &&
	       ha_conn_flush(r->conn, error);
}

/* A STACKS delta of stack ids @from..@to of epoch 0, committed. */
static bool stacks(Run *r, uint32_t from, uint32_t to, GError **error)
{
	uint8_t st[512];
	size_t len = 0;

	for (uint32_t k = from; k <= to; k++) {
		uint64_t ips[2] = { IP0 + 0x10 * k, IP0 + 0x200 };

		len += (size_t)smp_delta_put_stack(st + len, sizeof(st) - len, smp_id_make(0, k),
						   1, ips, 2);
	}
	return conn_send_frame(r->conn, SMP_STACKS, r->seq++, st, len, error) &&
	       ha_conn_flush(r->conn, error);
}

/* One replication round of the store, as the daemon's thread runs it. */
static bool ship(Run *r, GError **error)
{
	g_autofree char *db = g_build_filename(r->dir, "t.db", NULL);
	g_autofree char *mark = g_strconcat(db, ".ship", NULL);
	g_autoptr(HaStore) ro = ha_store_open(db, true, error);
	g_autoptr(HaCh) ch = ro ? ha_ch_new(r->url, error) : NULL;
	HaShipStats st = { 0 };

	return ch && ha_ch_ship(ch, ro, "hostT", "t", mark, &st, error);
}

static bool hello(Run *r, GError **error)
{
	static const uint8_t boot_id[16] = { 0x15, 0x15, 0x7a, 0x11 };
	uint8_t h[128], ep[SMP_DELTA_EPOCH_SIZE];
	long n = gh_hello_encode(h, sizeof(h), boot_id, 15, 1);

	g_assert(n > 0);
	if (!conn_send_frame(r->conn, SMP_HELLO, 0, h, (size_t)n, error))
		return false;
	if (r->seq > 1)
		return true;	/* a reconnect: the stream resumes where it was */
	if (!conn_send_formats(r->conn, &r->seq, error))
		return false;
	n = smp_delta_put_epoch(ep, sizeof(ep), 0, 0);
	return conn_send_frame(r->conn, SMP_EPOCH, r->seq++, ep, (size_t)n, error) &&
	       ha_conn_flush(r->conn, error);
}

static bool bye(Run *r, GError **error)
{
	uint8_t b[16];
	long n = smp_bye_encode(SMP_BYE_SHUTDOWN, b, sizeof(b));

	return n > 0 && conn_send_frame(r->conn, SMP_BYE, r->seq++, b, (size_t)n, error) &&
	       ha_conn_flush(r->conn, error);
}

/* The connection ends (EOF): without BYE, the boot is disconnected. */
static bool disconnect(Run *r)
{
	ha_conn_close(r->conn);
	g_clear_pointer(&r->conn, ha_conn_free);
	return true;
}

/* The guest's agent connects again: the same boot and stream, resumed. */
static bool reconnect(Run *r, const HaLimits *lim, GError **error)
{
	r->conn = ha_conn_new(r->store, lim, "t", "ch-late-stacks");
	return hello(r, error);
}

/* Merge the boot's small chunks, the newest included, until none is left to merge. */
static bool merge_all(Run *r, const HaLimits *lim, GError **error)
{
	int k;

	while ((k = ha_compact_step(r->store, 1, 0, true, lim->zstd_level, error)) == 1)
		;
	return k == 0;
}

int main(int argc, char **argv)
{
	g_autoptr(GError) e = NULL;
	g_autofree char *db = NULL;
	g_autoptr(HaStore) store = NULL;
	HaLimits lim;
	Run r = { .seq = 1, .ts = 1000 };
	bool ok;

	if (argc != 4 || (strcmp(argv[1], "merge") && strcmp(argv[1], "resume") &&
			  strcmp(argv[1], "overflow"))) {
		fprintf(stderr, "usage: ch-late-stacks merge|resume|overflow STATE_DIR URL\n");
		return 2;
	}
	r.dir = argv[2];
	r.url = argv[3];
	db = g_build_filename(r.dir, "t.db", NULL);
	store = ha_store_open(db, false, &e);
	if (!store) {
		fprintf(stderr, "ch-late-stacks: %s\n", e->message);
		return 1;
	}
	ha_limits_default(&lim);
	r.store = store;
	r.conn = ha_conn_new(store, &lim, "t", "ch-late-stacks");
	ok = hello(&r, &e);
	/* pages 0-3 (0-299), one chunk each; all but the last below the watermark,
	 * unresolved */
	for (int i = 0; ok && i < (strcmp(argv[1], "overflow") ? 4 : 300); i++)
		ok = page(&r, &e);
	ok = ok && ship(&r, &e);
	if (!strcmp(argv[1], "merge")) {
		/* page 4, every chunk merged into one, the CPU's newest; the signature
		 * moves; then a chunk after the merged one */
		ok = ok && page(&r, &e) && merge_all(&r, &lim, &e) && stacks(&r, 9, 9, &e) &&
		     ship(&r, &e) && page(&r, &e);
	} else {
		/* disconnected, shipped; the stream resumes */
		ok = ok && disconnect(&r) && ship(&r, &e) && reconnect(&r, &lim, &e) &&
		     page(&r, &e);
	}
	/* the missing stacks, the end */
	ok = ok && stacks(&r, 1, 2, &e) && bye(&r, &e) && ship(&r, &e);
	g_clear_pointer(&r.conn, ha_conn_free);
	if (!ok) {
		fprintf(stderr, "ch-late-stacks: %s\n", e ? e->message : "failed");
		return 1;
	}
	return 0;
}
