// SPDX-License-Identifier: MIT
/*
 * test-session.c - the handshake, batching and resending of one connection, with a
 * fake writer that records every write() the port would see: HELLO first and nothing
 * else before WELCOME, writes of at most 32 KiB, whole frames in order, resending from
 * the resume point after a disconnect in the middle of a frame, and the host's bad
 * input (garbage, unknown types, bad ACKs, invalid WELCOMEs, another major version),
 * and the payload checksum each host gets: XXH64 only after a WELCOME of 1.4 or later.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "session.h"
#include "tap.h"
#include "window.h"
#include "wire.h"

struct fake_port {
	uint8_t *buf;
	size_t len, cap;
	const void *data[256];	/* where each of the first writes took its bytes from */
	size_t data_len[256];
	size_t budget;		/* bytes accepted before -EAGAIN; SIZE_MAX: unlimited */
	size_t max_write;	/* largest write seen */
	unsigned writes;
	unsigned short_writes;	/* accept only part of a write every other time */
};

static ssize_t fake_write(void *ctx, const void *data, size_t len)
{
	struct fake_port *p = ctx;

	if (p->budget == 0)
		return -EAGAIN;
	if (len > p->max_write)
		p->max_write = len;
	if (p->short_writes && (p->writes & 1) && len > 1)
		len = len / 2;
	if (len > p->budget)
		len = p->budget;
	if (p->len + len > p->cap) {
		p->cap = (p->len + len) * 2;
		p->buf = realloc(p->buf, p->cap);
	}
	memcpy(p->buf + p->len, data, len);
	p->len += len;
	if (p->writes < 256) {
		p->data[p->writes] = data;
		p->data_len[p->writes] = len;
	}
	if (p->budget != SIZE_MAX)
		p->budget -= len;
	p->writes++;
	return (ssize_t)len;
}

struct seen {
	uint8_t types[4096];
	uint64_t seqs[4096];
	uint8_t flags[4096];
	unsigned n;
	unsigned errors;
};

/* Decode everything the fake port got. */
static void decode_all(const struct fake_port *p, struct seen *s)
{
	struct smp_decoder *d = smp_decoder_new(0);
	size_t off = 0;

	memset(s, 0, sizeof(*s));
	while (off < p->len) {
		struct smp_frame f;
		int r;

		off += smp_decoder_feed(d, p->buf + off, p->len - off);
		while ((r = smp_decoder_next(d, &f, NULL)) != 0) {
			if (r < 0) {
				s->errors++;
				continue;
			}
			if (s->n < 4096) {
				s->types[s->n] = f.type;
				s->seqs[s->n] = f.seq;
				s->flags[s->n] = f.flags;
				s->n++;
			}
		}
	}
	smp_decoder_free(d);
}

static void hello_frame(struct session *s)
{
	struct smp_hello h = {
		.stream_id = 7, .nr_cpus = 1, .page_size = 4096,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	uint8_t buf[SESS_HELLO_MAX];
	long n = smp_hello_encode(&h, buf + SMP_HDR_SIZE, sizeof(buf) - SMP_HDR_SIZE);

	n = smp_frame_seal(buf, SMP_HELLO, 0, 0, (uint32_t)n);
	sess_set_hello(s, buf, (size_t)n);
}

static int host_says(struct session *s, uint8_t type, const void *payload, size_t len)
{
	uint8_t buf[256];
	long n = smp_frame_encode(buf, sizeof(buf), type, 0, 0, payload, len);

	return sess_input(s, buf, (size_t)n);
}

/* A WELCOME as a host of protocol 1.@minor sends it (its header says the minor). */
static int welcome_minor(struct session *s, uint64_t resume, uint8_t minor)
{
	uint8_t p[16] = { 0 }, buf[SMP_HDR_SIZE + 16];

	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(resume >> (8 * i));
	smp_frame_encode(buf, sizeof(buf), SMP_WELCOME, 0, 0, p, 16);
	buf[5] = minor;		/* covered by both checksums: recompute them */
	smp_put32(buf + 24, smp_frame_sum(buf, 16));
	smp_put32(buf + 28, smp_crc32c(0, buf, 28));
	return sess_input(s, buf, sizeof(buf));
}

static int welcome(struct session *s, uint64_t resume)
{
	return welcome_minor(s, resume, SMP_VERSION_MINOR);
}

static int ack(struct session *s, uint64_t seq)
{
	uint8_t p[8];

	smp_ack_encode(seq, p, sizeof(p));
	return host_says(s, SMP_ACK, p, 8);
}

static void fill_window(struct win *w, unsigned n, uint32_t len)
{
	static uint8_t payload[SMP_MAX_PAYLOAD];

	for (unsigned i = 0; i < n; i++) {
		memset(payload, (int)i, len);
		win_append(w, SMP_PAGE, payload, len);
	}
}

static void test_handshake_and_batching(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct session s;
	struct win *w;
	struct seen seen;
	struct win_stats ws;
	int ok_order = 1;

	win_new(8u << 20, 4096, &w);
	is_int(sess_init(&s, w), 0, "session init");
	hello_frame(&s);
	fill_window(w, 100, 4000);		/* 100 pages, ~400 KB */
	fill_window(w, 1, 200000);		/* one big frame (e.g. a KSYMS chunk) */
	ok(!sess_want_write(&s), "DOWN: nothing to write");
	sess_start(&s);
	ok(sess_want_write(&s), "HELLO queued");
	is_int(sess_flush(&s, fake_write, &p), 0, "flush in HELLO state");
	decode_all(&p, &seen);
	ok(seen.n == 1 && seen.types[0] == SMP_HELLO, "only HELLO before WELCOME");

	is_int(welcome(&s, 1), SESS_ACT_WELCOME, "WELCOME resume 1");
	is_int(s.state, SESS_UP, "session UP");
	is_int(sess_flush(&s, fake_write, &p), 0, "flush everything");
	ok(p.max_write <= 32768, "every write <= 32 KiB (largest %zu)", p.max_write);
	ok(p.writes >= 420000 / 32768, "%u writes for ~600 KB", p.writes);
	decode_all(&p, &seen);
	is_int(seen.errors, 0, "the byte stream decodes without error");
	is_int(seen.n, 102, "HELLO + 101 frames");
	for (unsigned i = 1; i < seen.n; i++)
		if (seen.seqs[i] != i || seen.flags[i])
			ok_order = 0;
	ok(ok_order, "frames in seq order 1..101, none flagged RESENT");
	/* batching: small frames share writes */
	ok(p.writes < 60, "small frames are batched (%u writes)", p.writes);

	is_int(ack(&s, 50), 0, "ACK 50");
	win_get_stats(w, &ws);
	is_int(ws.oldest_seq, 51, "window starts at 51 after ACK 50");
	is_int(ack(&s, 500), SESS_ACT_REHELLO, "ACK beyond what was sent: restart");
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

static void test_disconnect_resend(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct session s;
	struct win *w;
	struct seen seen;
	unsigned i, resent = 0, fresh = 0, bad = 0;

	win_new(8u << 20, 4096, &w);
	sess_init(&s, w);
	hello_frame(&s);
	fill_window(w, 40, 3000);
	sess_start(&s);
	sess_flush(&s, fake_write, &p);
	welcome(&s, 1);
	/* the port takes 50000 bytes then blocks: frame 17 or so is cut in the middle */
	p.budget = 50000;
	is_int(sess_flush(&s, fake_write, &p), -EAGAIN, "port blocks mid-frame");
	/* host goes away: what was in flight is lost; the host held frames 1..10 */
	sess_down(&s);
	ok(!sess_want_write(&s), "nothing to write while the host is away");
	fill_window(w, 5, 3000);		/* tracing goes on */
	free(p.buf);
	memset(&p, 0, sizeof(p));
	p.budget = SIZE_MAX;
	p.short_writes = 1;			/* and the new connection takes partial writes */
	sess_start(&s);
	sess_flush(&s, fake_write, &p);
	is_int(welcome(&s, 11), SESS_ACT_WELCOME, "WELCOME resume 11");
	is_int(sess_flush(&s, fake_write, &p), 0, "resend");
	decode_all(&p, &seen);
	is_int(seen.errors, 0, "the new connection's stream decodes cleanly");
	ok(seen.types[0] == SMP_HELLO, "HELLO first");
	for (i = 1; i < seen.n; i++) {
		if (seen.seqs[i] != 10 + i)
			bad++;
		if (seen.flags[i] & SMP_FLAG_RESENT)
			resent++;
		else
			fresh++;
	}
	is_int(seen.n - 1, 35, "frames 11..45 sent once each");
	is_int(bad, 0, "contiguous from the resume point");
	ok(resent >= 5 && fresh >= 5 && resent + fresh == 35,
	   "frames sent before are RESENT (%u), the new ones are not (%u)", resent, fresh);
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

/*
 * The window drops frames never sent while the port is blocked with a frame half
 * written (a connected host that stopped reading): once the port takes bytes again,
 * the rest of that frame goes out and then nothing beyond the gap until the caller
 * has put what the host lacks ahead of it (SESS_FLUSH_GAP). Taking the next held
 * frame there would send it ahead of the EPOCH it needs, and under a seq that the
 * splice then gives to another frame.
 */
static void test_gap_while_connected(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct session s;
	struct win *w;
	struct seen seen;
	struct win_stats ws;
	uint64_t gap;

	win_new(1u << 20, 32, &w);
	sess_init(&s, w);
	hello_frame(&s);
	fill_window(w, 4, 3000);
	sess_start(&s);
	sess_flush(&s, fake_write, &p);
	welcome(&s, 1);
	sess_flush(&s, fake_write, &p);
	ack(&s, 4);
	fill_window(w, 20, 3000);
	p.budget = 40000;			/* the host stops reading mid-frame */
	is_int(sess_flush(&s, fake_write, &p), -EAGAIN, "live gap: the port blocks");
	fill_window(w, 40, 3000);		/* 32-frame window: the unsent ones go */
	gap = win_gap_from(w);
	ok(gap > 0, "the window dropped frames never sent, from seq %llu",
	   (unsigned long long)gap);
	ok(sess_want_write(&s), "the rest of the cut frame is still to write");
	p.budget = SIZE_MAX;			/* the host reads again */
	is_int(sess_flush(&s, fake_write, &p), SESS_FLUSH_GAP, "the frame in flight goes "
	       "out, then the gap is reported");
	decode_all(&p, &seen);
	is_int(seen.errors, 0, "clean byte stream");
	ok(seen.n > 1 && seen.seqs[seen.n - 1] == gap - 1, "the last frame written is the "
	   "one before the gap (%llu)", (unsigned long long)seen.seqs[seen.n - 1]);
	win_gap_seen(w);			/* what agent_after_gap() ends with */
	is_int(sess_flush(&s, fake_write, &p), 0, "then the held frames go");
	decode_all(&p, &seen);
	win_get_stats(w, &ws);
	ok(seen.seqs[seen.n - 1] == ws.next_seq - 1, "up to the newest");
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

/* sess_stall(): nothing from the stall seq on, and a gap is not acted on. */
static void test_stall(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct session s;
	struct win *w;
	struct seen seen;

	win_new(1u << 20, 16, &w);
	sess_init(&s, w);
	hello_frame(&s);
	fill_window(w, 6, 3000);
	sess_stall(&s, 4);
	sess_start(&s);
	sess_flush(&s, fake_write, &p);
	welcome(&s, 1);
	is_int(sess_flush(&s, fake_write, &p), 0, "stall: flush");
	decode_all(&p, &seen);
	ok(seen.n == 4 && seen.seqs[3] == 3, "HELLO and frames 1..3 only");
	ok(!sess_want_write(&s), "nothing to write while stalled");
	ack(&s, 3);
	fill_window(w, 30, 3000);		/* the window drops unsent frames */
	ok(win_gap_from(w) == 4, "a gap from the stall point");
	is_int(sess_flush(&s, fake_write, &p), 0, "stalled: the gap is not acted on");
	sess_stall(&s, 0);
	is_int(sess_flush(&s, fake_write, &p), SESS_FLUSH_GAP, "unstalled: the gap is");
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

static void test_bad_input(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct session s;
	struct win *w;
	uint8_t garbage[100], frame[64];
	long n;

	win_new(1u << 20, 64, &w);
	sess_init(&s, w);
	hello_frame(&s);
	fill_window(w, 3, 100);
	sess_start(&s);
	sess_flush(&s, fake_write, &p);

	for (unsigned i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)(i * 7 + 1);
	is_int(sess_input(&s, garbage, sizeof(garbage)), SESS_ACT_REHELLO,
	       "garbage: restart the handshake");
	is_int(host_says(&s, 200, "hi", 2), 0, "unknown type: ignored");
	is_int(host_says(&s, SMP_PAGE, "12345678", 8), 0, "a guest-to-host type: ignored");
	is_int(welcome(&s, 0), SESS_ACT_FRESH, "WELCOME resume 0: fresh stream");
	is_int(welcome(&s, 2), SESS_ACT_FRESH, "WELCOME beyond what was sent: fresh stream");
	is_int(welcome(&s, 1), SESS_ACT_WELCOME, "a valid WELCOME after all that");
	sess_flush(&s, fake_write, &p);
	is_int(welcome(&s, 5), SESS_ACT_FRESH, "resume 5 > sent_hi + 1 = 4: fresh");
	is_int(host_says(&s, SMP_WELCOME, "short", 5), SESS_ACT_REHELLO,
	       "malformed WELCOME: restart the handshake");
	/* a frame of major version 2 */
	n = smp_frame_encode(frame, sizeof(frame), SMP_ACK, 0, 0, "\0\0\0\0\0\0\0\0", 8);
	frame[4] = 2;
	/* reseal the header CRC by hand: hcrc covers bytes 0..27 */
	{
		uint32_t crc = smp_crc32c(0, frame, 24);

		crc = smp_crc32c(crc, frame + 32, 8);
		memcpy(frame + 24, &crc, 4);
		crc = smp_crc32c(0, frame, 28);
		memcpy(frame + 28, &crc, 4);
	}
	is_int(sess_input(&s, frame, (size_t)n), SESS_ACT_CLOSE, "major version 2: close");
	/* the decoder was reset: the next connection works */
	sess_down(&s);
	sess_start(&s);
	is_int(welcome(&s, 1), SESS_ACT_WELCOME, "works again after the version error");
	/* a WELCOME split over many tiny reads */
	{
		uint8_t buf[64];
		uint8_t pl[16] = { 1 };
		int act = 0;

		n = smp_frame_encode(buf, sizeof(buf), SMP_WELCOME, 0, 0, pl, 16);
		for (long i = 0; i < n; i++)
			act |= sess_input(&s, buf + i, 1);
		is_int(act, SESS_ACT_WELCOME, "a WELCOME fed byte by byte");
	}
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

static void test_host_max_payload(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct session s;
	struct win *w;
	struct seen seen;
	uint8_t pl[16] = { 1, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0 };	/* max 4096 */

	win_new(1u << 20, 64, &w);
	sess_init(&s, w);
	hello_frame(&s);
	fill_window(w, 1, 100);
	fill_window(w, 1, 5000);
	fill_window(w, 1, 100);
	sess_start(&s);
	is_int(host_says(&s, SMP_WELCOME, pl, 16), SESS_ACT_WELCOME, "WELCOME max 4096");
	sess_flush(&s, fake_write, &p);
	decode_all(&p, &seen);
	ok(seen.n == 3 && seen.seqs[1] == 1 && seen.seqs[2] == 3,
	   "the frame above the host's limit is skipped (host sees the gap)");
	is_int(s.skipped_oversize, 1, "and counted");
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

/* The time callback: records the ids it wrote markers for. */
struct markers {
	uint64_t ids[64];
	unsigned n;
	int ret;
};

static int fake_marker(void *ctx, uint64_t id)
{
	struct markers *m = ctx;

	if (m->n < 64)
		m->ids[m->n++] = id;
	return m->ret;
}

static int probe(struct session *s, uint64_t id)
{
	uint8_t p[SMP_TIME_SIZE];

	smp_time_encode(id, p, sizeof(p));
	return host_says(s, SMP_TIME, p, sizeof(p));
}

/* The TIME_REPLY frames the port got, in order (id, status). */
static unsigned replies(const struct fake_port *p, uint64_t *ids, int32_t *st, unsigned max)
{
	struct smp_decoder *d = smp_decoder_new(0);
	size_t off = 0;
	unsigned n = 0;

	while (off < p->len) {
		struct smp_frame f;
		struct smp_time_reply r;

		off += smp_decoder_feed(d, p->buf + off, p->len - off);
		while (smp_decoder_next(d, &f, NULL) == 1)
			if (f.type == SMP_TIME_REPLY && f.seq == 0 &&
			    !smp_time_reply_decode(&r, f.payload, f.len) && n < max) {
				ids[n] = r.probe_id;
				st[n++] = r.status;
			}
	}
	smp_decoder_free(d);
	return n;
}

static void test_time(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct markers mk = { 0 };
	struct session s;
	struct win *w;
	struct seen seen;
	uint64_t ids[64];
	int32_t st[64];
	unsigned n;

	win_new(1u << 20, 64, &w);
	sess_init(&s, w);
	hello_frame(&s);
	sess_start(&s);
	is_int(probe(&s, 5), 0, "TIME without a time callback: ignored");
	sess_set_time(&s, fake_marker, &mk);
	is_int(welcome(&s, 1), SESS_ACT_WELCOME, "WELCOME");
	fill_window(w, 2, 100);
	is_int(probe(&s, 0x1234), 0, "TIME: answered from sess_input, no action");
	ok(mk.n == 1 && mk.ids[0] == 0x1234, "the marker was written for its id");
	ok(sess_want_write(&s), "the reply waits to be written");
	sess_flush(&s, fake_write, &p);
	decode_all(&p, &seen);
	ok(seen.n >= 2 && seen.types[0] == SMP_HELLO && seen.types[1] == SMP_TIME_REPLY &&
	   seen.seqs[1] == 0, "HELLO, then the unsequenced TIME_REPLY ahead of the window's frames");
	n = replies(&p, ids, st, 64);
	ok(n == 1 && ids[0] == 0x1234 && st[0] == 0, "TIME_REPLY carries the id, status 0");
	mk.ret = -9;
	probe(&s, 0x99);
	sess_flush(&s, fake_write, &p);
	n = replies(&p, ids, st, 64);
	ok(n == 2 && ids[1] == 0x99 && st[1] == -9, "a failed marker write is reported");
	mk.ret = 0;
	is_int(host_says(&s, SMP_TIME, "short", 5), 0, "a malformed TIME: ignored");
	ok(mk.n == 2, "... and no marker written for it");
	/* the rate limit: at most SESS_TIME_PER_S markers a second, the rest -EBUSY */
	for (uint64_t i = 0; i < 3 * SESS_TIME_PER_S; i++)
		probe(&s, 1000 + i);
	sess_flush(&s, fake_write, &p);
	n = replies(&p, ids, st, 64);
	ok(n == 2 + 3 * SESS_TIME_PER_S, "every probe answered (%u)", n);
	ok(mk.n <= 2 + 2 * SESS_TIME_PER_S && s.time_limited >= SESS_TIME_PER_S,
	   "no more than %u markers a second (%u written, %llu limited)", SESS_TIME_PER_S,
	   mk.n, (unsigned long long)s.time_limited);
	ok(st[n - 1] == -EBUSY, "the ones beyond it are answered -EBUSY");
	sess_down(&s);
	mk.n = 0;
	is_int(probe(&s, 77), 0, "TIME while down: ignored");
	ok(mk.n == 0, "... no marker");
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

/*
 * Frames sent for the first time with nothing ahead of them go to the port straight
 * from the window: each such write starts at a frame of the window and holds whole
 * frames that lie next to each other there, at most 32 KiB. A short write that cuts a
 * frame leaves its rest in the batch, which stays right even when the window then
 * drops that frame and reuses its bytes; resent frames go through the batch.
 */
static void test_direct_writes(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct session s;
	struct win *w;
	struct seen seen;
	struct win_stats ws;
	unsigned direct = 0, whole = 1, bad = 0;
	uint32_t len;

	win_new(300u * 1024, 4096, &w);
	sess_init(&s, w);
	hello_frame(&s);
	fill_window(w, 20, 4000);
	sess_start(&s);
	sess_flush(&s, fake_write, &p);
	welcome(&s, 1);
	free(p.buf);
	memset(&p, 0, sizeof(p));
	p.budget = SIZE_MAX;
	is_int(sess_flush(&s, fake_write, &p), 0, "flush 20 frames");
	for (unsigned i = 0; i < p.writes && i < 256; i++) {
		uint64_t seq = 0;

		/* find the frame the write starts at */
		for (uint64_t q = 1; q <= 20; q++)
			if (win_frame(w, q, &len) == p.data[i])
				seq = q;
		if (seq)
			direct++;
		if (p.data_len[i] > 32768 || p.data_len[i] % (SMP_HDR_SIZE + 4000))
			whole = 0;
	}
	is_int(direct, p.writes, "every write came straight from the window (%u)", p.writes);
	ok(whole, "... of whole frames, at most 32 KiB each");
	is_int(p.writes, 3, "20 frames of 4 KB in 3 writes (8 + 8 + 4)");
	decode_all(&p, &seen);
	is_int(seen.errors + (seen.n != 20), 0, "20 frames decode cleanly");

	/* resent frames (after a reconnect) are copied through the batch */
	is_int(ack(&s, 10), 0, "ACK 10");
	sess_down(&s);
	free(p.buf);
	memset(&p, 0, sizeof(p));
	p.budget = SIZE_MAX;
	sess_start(&s);
	sess_flush(&s, fake_write, &p);		/* HELLO */
	welcome(&s, 11);
	is_int(sess_flush(&s, fake_write, &p), 0, "resend 11..20 after a reconnect");
	for (unsigned i = 1; i < p.writes && i < 256; i++)
		for (uint64_t q = 11; q <= 20; q++)
			if (win_frame(w, q, &len) == p.data[i])
				bad++;
	is_int(bad, 0, "no resent frame went straight from the window");
	decode_all(&p, &seen);
	is_int(seen.errors, 0, "... the stream decodes cleanly");
	ok(seen.n == 11 && seen.seqs[1] == 11 && (seen.flags[1] & SMP_FLAG_RESENT) &&
	   (seen.flags[10] & SMP_FLAG_RESENT), "... HELLO and 11..20 flagged RESENT (%u)",
	   seen.n);

	/* a short write cuts frame 23; then the window drops it and reuses its bytes */
	is_int(ack(&s, 20), 0, "ACK 20");
	free(p.buf);
	memset(&p, 0, sizeof(p));
	fill_window(w, 10, 4000);
	p.budget = 2 * (SMP_HDR_SIZE + 4000) + 100;
	is_int(sess_flush(&s, fake_write, &p), -EAGAIN, "the port takes 2 frames and a bit");
	ok(p.writes == 1 && p.data[0] == win_frame(w, 21, &len), "... straight from the "
	   "window");
	ok(batch_pending(&s.out) >= SMP_HDR_SIZE + 4000 - 100 &&
	   memcmp(s.out.buf + s.out.off, win_frame(w, 23, &len) + 100, len - 100) == 0,
	   "the cut frame's rest heads the batch");
	fill_window(w, 80, 4000);	/* more than the window: frame 23 is dropped */
	win_get_stats(w, &ws);
	ok(ws.oldest_seq > 23, "frame 23 left the window (oldest %llu)",
	   (unsigned long long)ws.oldest_seq);
	p.budget = SIZE_MAX;
	is_int(sess_flush(&s, fake_write, &p), SESS_FLUSH_GAP, "rest written, then the gap");
	decode_all(&p, &seen);
	is_int(seen.errors, 0, "the stream decodes cleanly: the cut frame ended from the batch");
	for (unsigned i = 0; i < seen.n; i++)
		if (seen.seqs[i] != i + 21)
			bad++;
	is_int(bad, 0, "frames 21..%u in order", 20 + seen.n);
	ok(seen.n >= 3, "the cut frame 23 arrived whole (%u frames)", seen.n);
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

/* How many of the frames the port got after HELLO carry SMP_FLAG_XXH64. */
static unsigned xxh64_frames(const struct seen *seen)
{
	unsigned n = 0;

	for (unsigned i = 1; i < seen->n; i++)
		n += !!(seen->flags[i] & SMP_FLAG_XXH64);
	return n;
}

/* The host went away and another connection starts: the port sees its HELLO only. */
static void reconnect(struct session *s, struct fake_port *p)
{
	sess_down(s);
	free(p->buf);
	memset(p, 0, sizeof(*p));
	p->budget = SIZE_MAX;
	sess_start(s);
	sess_flush(s, fake_write, p);
}

/*
 * The payload checksum follows the host: CRC32C for a 1.3 host (it would count XXH64
 * frames as checksum errors), XXH64 for 1.4 from the WELCOME on, CRC32C again when the
 * next host is older: frames sealed for the newer one are resealed as they are resent.
 */
static void test_checksum_negotiation(void)
{
	struct fake_port p = { .budget = SIZE_MAX };
	struct session s;
	struct win *w;
	struct seen seen;

	win_new(8u << 20, 4096, &w);
	sess_init(&s, w);
	hello_frame(&s);
	fill_window(w, 4, 1000);		/* before any WELCOME: CRC32C */
	sess_start(&s);
	sess_flush(&s, fake_write, &p);
	is_int(welcome_minor(&s, 1, 3), SESS_ACT_WELCOME, "WELCOME of a 1.3 host");
	fill_window(w, 4, 1000);
	sess_flush(&s, fake_write, &p);
	decode_all(&p, &seen);
	ok(seen.n == 9 && seen.errors == 0, "9 frames, all checksums good (%u, %u errors)",
	   seen.n, seen.errors);
	is_int(xxh64_frames(&seen), 0, "a 1.3 host gets CRC32C only");

	reconnect(&s, &p);
	is_int(welcome_minor(&s, 5, SMP_MINOR_XXH64), SESS_ACT_WELCOME, "WELCOME of a 1.4 host");
	fill_window(w, 4, 1000);
	sess_flush(&s, fake_write, &p);
	decode_all(&p, &seen);
	ok(seen.n == 9 && seen.errors == 0, "HELLO, 4 resent, 4 new (%u, %u errors)", seen.n,
	   seen.errors);
	is_int(xxh64_frames(&seen), 4, "the frames sealed after its WELCOME are XXH64");

	/* a 1.3 host again: the XXH64 frames it has not acknowledged go out as CRC32C */
	reconnect(&s, &p);
	is_int(welcome_minor(&s, 9, 3), SESS_ACT_WELCOME, "WELCOME of a 1.3 host again");
	sess_flush(&s, fake_write, &p);
	decode_all(&p, &seen);
	ok(seen.n == 5 && seen.errors == 0, "HELLO and frames 9..12 (%u, %u errors)", seen.n,
	   seen.errors);
	is_int(xxh64_frames(&seen), 0, "resent as CRC32C");
	sess_done(&s);
	win_free(w);
	free(p.buf);

	/* --frame-checksum crc32c: never XXH64, whatever the host checks */
	memset(&p, 0, sizeof(p));
	p.budget = SIZE_MAX;
	win_new(8u << 20, 4096, &w);
	sess_init(&s, w);
	s.crc32c_only = true;
	hello_frame(&s);
	sess_start(&s);
	sess_flush(&s, fake_write, &p);
	welcome_minor(&s, 1, SMP_MINOR_XXH64);
	fill_window(w, 4, 1000);
	sess_flush(&s, fake_write, &p);
	decode_all(&p, &seen);
	ok(seen.n == 5 && seen.errors == 0, "5 frames (%u, %u errors)", seen.n, seen.errors);
	is_int(xxh64_frames(&seen), 0, "crc32c_only: CRC32C for a 1.4 host");
	sess_done(&s);
	win_free(w);
	free(p.buf);
}

int main(void)
{
	test_direct_writes();
	test_time();
	test_handshake_and_batching();
	test_disconnect_resend();
	test_gap_while_connected();
	test_stall();
	test_bad_input();
	test_host_max_payload();
	test_checksum_negotiation();
	return tap_done();
}
