// SPDX-License-Identifier: MIT
/*
 * fuzz-ingest - libFuzzer target for one guest connection (ingest-*.c) on a fresh
 * store (a copy of a migrated one, below), then every report over the store it
 * produced: a valid HELLO, the 6.1 FORMAT texts and an EPOCH, then frames the fuzzer
 * chooses. Input: records of u8 type, u16 length (little-endian), payload; the harness
 * seals each as a frame with the next sequence number (every 16th record re-uses an
 * older one, every 32nd skips ahead) so that the decoders, size table and handlers are
 * reached rather than stopped at the checksums.
 *
 * Records of type 0 (not a protocol type) are harness commands, by their first byte:
 *   0  a later HELLO with the geometry the next bytes choose (byte order, page size,
 *      CPU count, map bits, depth, stream, boot): refused or a new session
 *   1  a FORMAT text of guest-formats.c cut at a token boundary the next bytes choose
 *      (or at any byte): refused or accepted whole, never leaked
 *   2  the next record's seq at an edge: 0, 2^48-1 and around it, 2^64-1, a jump of
 *      SMP_SEQ_MAX_GAP and one more, an old seq
 * After the connection, every report runs over the store (text and JSON): with the
 * harness's -fsanitize=undefined -fno-sanitize-recover=all, undefined behaviour in a
 * report on any store the daemon can write stops the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest-formats.h"
#include "ingest.h"
#include "proto.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static uint8_t frame[SMP_HDR_SIZE + 65536 + 64];

static void quiet_log(const gchar *domain, GLogLevelFlags level, const gchar *msg,
		      gpointer user)
{
}

static void quiet_print(const gchar *s)
{
}

/*
 * Each input gets a fresh store. Opening an empty one migrates its schema from
 * nothing, which took two thirds of an input's time (21 of 32 ms under ASan): the
 * migrated store's file is made once, and each input opens a copy of it (on
 * /dev/shm when there is one). The copy is this process's own (its pid in the name):
 * each input replaces it, and it is removed at exit (an input that crashes the run
 * leaves it behind).
 */
static char *db_path;
static gchar *tmpl;
static gsize tmpl_len;

static void remove_db(void)
{
	static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };

	for (unsigned int i = 0; i < G_N_ELEMENTS(sfx); i++) {
		g_autofree char *f = g_strconcat(db_path, sfx[i], NULL);

		g_unlink(f);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) ? "/dev/shm" :
			  g_get_tmp_dir();
	g_autoptr(GError) e = NULL;
	HaStore *s;

	if (!g_getenv("FUZZ_VERBOSE")) {
		g_log_set_default_handler(quiet_log, NULL);
		g_set_printerr_handler(quiet_print);
	}
	db_path = g_strdup_printf("%s/fuzz-ingest-%d.db", dir, (int)getpid());
	remove_db();
	s = ha_store_open(db_path, false, &e);
	if (!s)
		g_error("fuzz-ingest: template store %s: %s", db_path, e->message);
	ha_store_free(s);
	if (!g_file_get_contents(db_path, &tmpl, &tmpl_len, &e))
		g_error("fuzz-ingest: %s", e->message);
	remove_db();
	atexit(remove_db);
	return 0;
}

/* A fresh store for one input: the template's bytes in db_path. */
static HaStore *fresh_store(void)
{
	int fd;
	bool ok;

	remove_db();
	fd = open(db_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		g_error("fuzz-ingest: %s: %s", db_path, g_strerror(errno));
	ok = write(fd, tmpl, tmpl_len) == (ssize_t)tmpl_len;
	close(fd);
	if (!ok)
		g_error("fuzz-ingest: writing %s", db_path);
	return ha_store_open(db_path, false, NULL);
}

static void feed(HaConn *c, const uint8_t *buf, size_t len)
{
	while (len) {
		uint8_t *space;
		size_t room = ha_conn_space(c, &space), n = len < room ? len : room;

		if (!room) {
			if (!ha_conn_process(c, NULL))
				return;
			continue;
		}
		memcpy(space, buf, n);
		ha_conn_commit(c, n);
		buf += n;
		len -= n;
	}
}

static bool send(HaConn *c, uint8_t type, uint64_t seq, const void *p, size_t len)
{
	long n = smp_frame_encode(frame, sizeof(frame), type, 0, seq, p, len);

	if (n < 0)
		return true;
	feed(c, frame, (size_t)n);
	return ha_conn_process(c, NULL);
}

static bool send_hello(HaConn *c, const struct smp_hello *h)
{
	uint8_t p[SMP_HELLO_FIXED + 3 * 255];
	long n = smp_hello_encode(h, p, sizeof(p));

	return n > 0 && send(c, SMP_HELLO, 0, p, (size_t)n);
}

/* The offset of the @k-th token boundary of @t (a change between word characters,
 * blanks and punctuation), or its length. */
static size_t token_cut(const char *t, size_t len, unsigned int k)
{
	for (size_t i = 1; i < len; i++) {
		int a = g_ascii_isalnum(t[i - 1]) || t[i - 1] == '_';
		int b = g_ascii_isalnum(t[i]) || t[i] == '_';

		if ((a != b || !a) && k-- == 0)
			return i;
	}
	return len;
}

static uint64_t seq_edge(uint8_t sel, uint64_t seq)
{
	static const uint64_t fixed[] = {
		0, 1, SMP_SEQ_MAX - 1, SMP_SEQ_MAX, SMP_SEQ_MAX + 1, UINT64_MAX,
		UINT64_MAX - 1, UINT64_C(1) << 63, (UINT64_C(1) << 63) - 1,
	};

	switch (sel % 13) {
	case 9:
		return seq + SMP_SEQ_MAX_GAP;
	case 10:
		return seq + SMP_SEQ_MAX_GAP + 1;
	case 11:
		return seq > 3 ? seq - 3 : seq;
	case 12:
		return seq + SMP_SEQ_MAX;
	default:
		return fixed[sel % 13];
	}
}

static void run_reports(HaStore *s)
{
	static const HaReportOpts reps[] = {
		{ .cmd = "boots", .boot = "all", .json = true },
		{ .cmd = "top", .json = true },
		{ .cmd = "top", .boot = "all" },
		{ .cmd = "folded", .boot = "all" },
		{ .cmd = "events", .json = true },
		{ .cmd = "stack", .arg = "0x5" },
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(reps); i++) {
		HaReportOpts o = reps[i];
		g_autoptr(GString) out = g_string_new(NULL);
		g_autoptr(GError) e = NULL;

		o.since_ns = -1;
		o.until_ns = -1;
		ha_report(s, &o, out, &e);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	HaStore *s = fresh_store();
	HaLimits lim;
	HaConn *c;
	uint8_t p[4096];
	struct smp_hello h = {
		.stream_id = 1, .text_addr = 0xffffffff81000000ull, .nr_cpus = 2,
		.page_size = 4096, .map_bits = 10, .max_depth = 64,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	uint64_t seq = 1, forced = 0;
	bool have_forced = false;
	size_t off = 0;
	long n;
	bool ok;

	if (!s)
		return 0;
	ha_limits_default(&lim);
	lim.max_malformed = 50;
	c = ha_conn_new(s, &lim, "fuzz", "fuzz");
	ok = send_hello(c, &h);
	for (unsigned int i = 0; ok && i < gf_nr_formats; i++) {
		struct smp_format m = {
			.name = gf_formats[i].name, .name_len = (uint16_t)strlen(gf_formats[i].name),
			.text = gf_formats[i].text, .text_len = strlen(gf_formats[i].text),
		};

		n = smp_format_encode(&m, p, sizeof(p));
		ok = send(c, SMP_FORMAT, seq++, p, (size_t)n);
	}
	n = smp_delta_put_epoch(p, sizeof(p), 0, 0);
	ok = ok && send(c, SMP_EPOCH, seq++, p, (size_t)n);
	for (unsigned int r = 0; ok && size - off >= 3; r++) {
		uint8_t type = data[off];
		size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
		const uint8_t *q;

		off += 3;
		if (len > size - off)
			len = size - off;
		q = data + off;
		off += len;
		if (type == 0 && len >= 1) {
			uint8_t a[8] = { 0 };

			memcpy(a, q + 1, MIN(len - 1, sizeof(a)));
			if (q[0] % 3 == 0) {
				struct smp_hello h2 = h;

				h2.flags ^= (a[0] & 1) ? SMP_HELLO_PAGES_BE : 0;
				h2.flags ^= (a[0] & 2) ? SMP_HELLO_STACKMAP : 0;
				h2.page_size = 4096u << (a[1] % 5);
				h2.nr_cpus = a[2] & 0x80 ? 2 : 1 + a[2] % 8;
				h2.map_bits = a[3] & 0x80 ? 10 : a[3] % 20;
				h2.max_depth = a[4] & 0x80 ? 64 : a[4] % 65;
				h2.stream_id = 1 + (a[5] % 3);
				h2.boot_id[0] = a[6] % 2;
				h2.text_addr ^= (uint64_t)(a[7] % 2) << 21;
				ok = send_hello(c, &h2);
				if (ok && h2.stream_id != h.stream_id)
					seq = 1;
			} else if (q[0] % 3 == 1) {
				const struct gf_format *g = &gf_formats[a[0] % gf_nr_formats];
				size_t tl = strlen(g->text);
				size_t cut = a[3] & 1 ? ((size_t)a[1] | (size_t)a[2] << 8) % (tl + 1) :
					     token_cut(g->text, tl, (unsigned int)a[1] |
						       (unsigned int)a[2] << 8);
				struct smp_format m = {
					.name = g->name, .name_len = (uint16_t)strlen(g->name),
					.text = g->text, .text_len = cut ? cut : 1,
				};
				char name[64];

				if (a[3] & 2) {
					/* a new event name each time: what used to leak */
					g_snprintf(name, sizeof(name), "%s%u", g->name, r);
					m.name = name;
					m.name_len = (uint16_t)strlen(name);
				}
				n = smp_format_encode(&m, p, sizeof(p));
				if (n > 0)
					ok = send(c, SMP_FORMAT, seq++, p, (size_t)n);
			} else {
				forced = seq_edge(a[0], seq);
				have_forced = true;
			}
			continue;
		}
		if (r % 16 == 15 && seq > 2)
			seq -= 2;	/* a resend */
		if (r % 32 == 31)
			seq += 3;	/* a gap */
		if (type == SMP_HELLO || type >= 128) {
			ok = send(c, type, 0, q, len);
		} else if (have_forced) {
			ok = send(c, type, forced, q, len);
			have_forced = false;
			if (forced >= seq && forced <= SMP_SEQ_MAX)
				seq = forced + 1;
		} else {
			ok = send(c, type, seq++, q, len);
		}
		if (r % 8 == 7 && ok)
			ok = ha_conn_flush(c, NULL);
	}
	if (ok)
		ha_conn_flush(c, NULL);
	ha_conn_close(c);
	ha_conn_free(c);
	run_reports(s);
	ha_store_free(s);
	return 0;
}
