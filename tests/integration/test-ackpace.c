// SPDX-License-Identifier: MIT
/*
 * Unit tests of ACK pacing (protocol 1.5, PROTOCOL.md 4.1; host-agent/ingest.h,
 * ha_conn_ack_held()), one HaConn on a real SQLite file, commits synchronous:
 *   - a HELLO without pacing: an ACK after every commit
 *   - with pacing: the first ACK at once, the next ones held back within ack_ms,
 *     ha_conn_ack_held() names the wait, ha_conn_ack_release() sends the newest one
 *   - the frames since the last ACK reach ack_bytes: an ACK at once
 *   - a duplicate (the guest resent) or BYE: an ACK at once
 * A held ACK is only right while ack_ms have not passed since the last one: where a
 * step finds them passed (a very slow run), it checks the ACK went out instead.
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <string.h>

#include "conn-feed.h"
#include "ingest.h"
#include "proto.h"
#include "tap.h"

#define ACK_MS	1000u

static uint8_t boot_id[16] = { 4, 2, 4, 2 };

static bool send_hello(HaConn *c, uint64_t stream_id, uint32_t ack_ms, uint32_t ack_bytes,
		       GError **error)
{
	uint8_t p[256];
	struct smp_hello h = {
		.stream_id = stream_id, .text_addr = 0xffffffff81000000ull,
		.nr_cpus = 2, .page_size = 4096, .map_bits = 10, .max_depth = 64,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
		.ack_ms = ack_ms, .ack_bytes = ack_bytes,
	};
	long n;

	memcpy(h.boot_id, boot_id, sizeof(h.boot_id));
	n = smp_hello_encode(&h, p, sizeof(p));
	g_assert(n > 0);
	return conn_send_frame(c, SMP_HELLO, 0, p, (size_t)n, error);
}

/* EPOCH frames seq @from..@to (32 bytes of payload each), then a commit. */
static bool send_epochs(HaConn *c, uint64_t from, uint64_t to, GError **error)
{
	for (uint64_t seq = from; seq <= to; seq++) {
		uint8_t p[SMP_DELTA_EPOCH_SIZE];
		long n = smp_delta_put_epoch(p, sizeof(p), seq, seq * 100);

		if (!conn_send_frame(c, SMP_EPOCH, seq, p, (size_t)n, error))
			return false;
	}
	return ha_conn_flush(c, error);
}

/* After a commit of frames up to @upto within ACK_MS of the ACK sent at @t_ack: held
 * (no ACK out, one held, due within ACK_MS), or, when ACK_MS had passed, sent. */
static void check_held(HaConn *c, uint64_t upto, gint64 t_ack, const char *what)
{
	gint64 since = g_get_monotonic_time() - t_ack;
	uint64_t a = conn_last_ack(c);
	guint ms = 0;
	bool held = ha_conn_ack_held(c, &ms);

	if (since >= (gint64)ACK_MS * 1000 && a == upto) {
		CHECK(1, "%s: ACK %" PRIu64 " sent (%" PRId64 " ms after the last: not held)",
		   what, upto, since / 1000);
		return;
	}
	CHECK(a == 0 && held && ms >= 1 && ms <= ACK_MS,
	   "%s: no ACK out, one held, due in %u ms (out: %" PRIu64 ")", what, ms, a);
}

int main(void)
{
	g_autofree char *dir = g_dir_make_tmp("ha-ackpace-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "t.db", NULL);
	GError *e = NULL;
	HaStore *s = ha_store_open(path, false, &e);
	HaLimits lim;
	HaConn *c;
	gint64 t_ack;
	guint ms;

	g_assert(s);
	ha_limits_default(&lim);

	/* no pacing: every commit acknowledged */
	c = ha_conn_new(s, &lim, "t", "test");
	CHECK(send_hello(c, 11, 0, 0, &e), "HELLO without pacing");
	conn_last_ack(c);
	CHECK(send_epochs(c, 1, 2, &e) && conn_last_ack(c) == 2, "ACK 2 after its commit");
	CHECK(send_epochs(c, 3, 3, &e) && conn_last_ack(c) == 3, "ACK 3 right after the next");
	CHECK(!ha_conn_ack_held(c, &ms), "nothing held");
	ha_conn_close(c);
	ha_conn_free(c);

	/* pacing by time: the first at once, then held */
	c = ha_conn_new(s, &lim, "t", "test");
	CHECK(send_hello(c, 12, ACK_MS, 1u << 20, &e), "HELLO with pacing (%u ms, 1 MiB)", ACK_MS);
	conn_last_ack(c);
	CHECK(send_epochs(c, 1, 2, &e) && conn_last_ack(c) == 2, "the first ACK at once");
	t_ack = g_get_monotonic_time();
	CHECK(send_epochs(c, 3, 3, &e), "frame 3 committed");
	check_held(c, 3, t_ack, "frame 3");
	CHECK(send_epochs(c, 4, 5, &e), "frames 4-5 committed");
	check_held(c, 5, t_ack, "frames 4-5");
	ha_conn_ack_release(c);
	CHECK(conn_last_ack(c) == 5 && !ha_conn_ack_held(c, &ms),
	   "released: ACK 5, the newest, and nothing held");
	t_ack = g_get_monotonic_time();
	/* a duplicate: the guest resent, it wants its ACK now */
	CHECK(send_epochs(c, 6, 6, &e), "frame 6 committed");
	check_held(c, 6, t_ack, "frame 6");
	CHECK(send_epochs(c, 6, 6, &e) && conn_last_ack(c) == 6, "frame 6 again: ACK 6 at once");
	/* BYE: at once */
	t_ack = g_get_monotonic_time();
	{
		uint8_t p[64];
		long n = smp_bye_encode(SMP_BYE_SHUTDOWN, p, sizeof(p));

		CHECK(n > 0 && conn_send_frame(c, SMP_BYE, 7, p, (size_t)n, &e) &&
		   ha_conn_flush(c, &e) && conn_last_ack(c) == 7 && !ha_conn_ack_held(c, &ms),
		   "BYE: ACK 7 at once");
	}
	ha_conn_close(c);
	ha_conn_free(c);

	/* pacing by bytes: 100 bytes, EPOCH payloads of 32 */
	c = ha_conn_new(s, &lim, "t", "test");
	CHECK(send_hello(c, 13, ACK_MS, 100, &e), "HELLO with pacing (%u ms, 100 bytes)", ACK_MS);
	conn_last_ack(c);
	CHECK(send_epochs(c, 1, 1, &e) && conn_last_ack(c) == 1, "the first ACK at once");
	t_ack = g_get_monotonic_time();
	CHECK(send_epochs(c, 2, 4, &e), "96 bytes more committed");
	check_held(c, 4, t_ack, "96 bytes");
	CHECK(send_epochs(c, 5, 5, &e) && conn_last_ack(c) == 5 && !ha_conn_ack_held(c, &ms),
	   "128 bytes: ACK 5 at once");
	ha_conn_close(c);
	ha_conn_free(c);

	if (e)
		printf("# error: %s\n", e->message);
	g_clear_error(&e);
	ha_store_free(s);
	g_unlink(path);
	g_rmdir(dir);
	return tap_done();
}
