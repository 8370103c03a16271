// SPDX-License-Identifier: MIT
/*
 * Frames and the incremental decoder: round trip of every type, a stream split at every
 * byte boundary, bit flips, truncation, oversize lengths, wrong magic, garbage before
 * and between frames, version refusal, bounded buffering; the XXH64 payload checksum
 * (1.4) against a vector computed outside this code.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "samples.h"
#include "tap.h"

#define MAXF 64

struct got {
	unsigned n;
	uint8_t type[MAXF];
	uint64_t seq[MAXF];
	uint32_t len[MAXF];
	uint32_t crc[MAXF];	/* of the payload, to compare contents */
	unsigned errors;
	int last_error;
};

/* Feed @len bytes (in one call or by pieces of @step) and collect every frame. */
static void run(struct smp_decoder *d, const uint8_t *buf, size_t len, size_t step,
		struct got *g)
{
	size_t pos = 0;

	if (step == 0)
		step = len ? len : 1;
	while (pos < len) {
		size_t want = len - pos < step ? len - pos : step;
		size_t took = smp_decoder_feed(d, buf + pos, want);
		struct smp_frame f;
		int r;

		pos += took;
		while ((r = smp_decoder_next(d, &f, NULL)) != 0) {
			if (r < 0) {
				g->errors++;
				g->last_error = r;
				if (r == -EPROTONOSUPPORT)
					return;
				continue;
			}
			if (g->n < MAXF) {
				g->type[g->n] = f.type;
				g->seq[g->n] = f.seq;
				g->len[g->n] = f.len;
				g->crc[g->n] = smp_crc32c(0, f.payload, f.len);
			}
			g->n++;
		}
	}
}

static long make_frame(uint8_t *buf, size_t cap, uint8_t type, unsigned variant,
		       uint64_t seq)
{
	long n = smp_sample_payload(type, variant, buf + SMP_HDR_SIZE, cap - SMP_HDR_SIZE);

	if (n < 0)
		return n;
	return smp_frame_seal(buf, type, 0, seq, (uint32_t)n);
}

/* Decode a payload with its typed decoder and encode it again: must be identical. */
static int reencode(uint8_t type, const uint8_t *p, size_t len)
{
	static uint8_t out[SMP_MAX_PAYLOAD];
	long n = -1;

	switch (type) {
	case SMP_HELLO: {
		struct smp_hello m;

		if (smp_hello_decode(&m, p, len))
			return 0;
		n = smp_hello_encode(&m, out, sizeof(out));
		break;
	}
	case SMP_FORMAT: {
		struct smp_format m;

		if (smp_format_decode(&m, p, len))
			return 0;
		n = smp_format_encode(&m, out, sizeof(out));
		break;
	}
	case SMP_KSYMS:
	case SMP_MODULES: {
		struct smp_text m;

		if (smp_text_decode(&m, p, len))
			return 0;
		n = smp_text_encode(&m, out, sizeof(out));
		break;
	}
	case SMP_PAGE: {
		struct smp_page m;

		if (smp_page_decode(&m, p, len))
			return 0;
		n = smp_page_encode(&m, out, sizeof(out));
		break;
	}
	case SMP_STACKS:
	case SMP_EPOCH: {
		struct smp_delta_rec r;
		size_t off = 0, o = 0;
		int k;

		while ((k = smp_delta_next(p, len, &off, &r)) == 1) {
			uint64_t ips[64];
			long m;

			if ((type == SMP_EPOCH) != (r.kind == SMP_DELTA_EPOCH))
				return 0;
			if (r.kind == SMP_DELTA_EPOCH) {
				m = smp_delta_put_epoch(out + o, sizeof(out) - o, r.epoch,
							r.timestamp);
			} else {
				for (uint32_t i = 0; i < r.nr; i++)
					ips[i] = smp_delta_ip(&r, i);
				m = smp_delta_put_stack(out + o, sizeof(out) - o, r.stack_id,
							r.ref_count, ips, r.nr);
			}
			if (m < 0)
				return 0;
			o += (size_t)m;
		}
		if (k < 0)
			return 0;
		n = (long)o;
		break;
	}
	case SMP_LOST: {
		struct smp_lost m;
		struct smp_lost_cpu cpus[8];

		if (smp_lost_decode(&m, p, len) || m.nr > 8)
			return 0;
		for (uint32_t i = 0; i < m.nr; i++)
			smp_lost_cpu(&m, i, &cpus[i]);
		n = smp_lost_encode(&m, cpus, out, sizeof(out));
		break;
	}
	case SMP_STATS: {
		struct smp_stat s[SMP_STATS_MAX];
		uint32_t nr;

		if (smp_stats_decode(&nr, p, len))
			return 0;
		for (uint32_t i = 0; i < nr; i++)
			smp_stats_get(p, i, &s[i]);
		n = smp_stats_encode(s, nr, out, sizeof(out));
		break;
	}
	case SMP_BYE: {
		uint32_t reason;

		if (smp_bye_decode(&reason, p, len))
			return 0;
		n = smp_bye_encode(reason, out, sizeof(out));
		break;
	}
	case SMP_WELCOME: {
		struct smp_welcome m;

		if (smp_welcome_decode(&m, p, len))
			return 0;
		n = smp_welcome_encode(&m, out, sizeof(out));
		break;
	}
	case SMP_ACK: {
		uint64_t a;

		if (smp_ack_decode(&a, p, len))
			return 0;
		n = smp_ack_encode(a, out, sizeof(out));
		break;
	}
	case SMP_TIME: {
		uint64_t id;

		if (smp_time_decode(&id, p, len))
			return 0;
		n = smp_time_encode(id, out, sizeof(out));
		break;
	}
	case SMP_TIME_REPLY: {
		struct smp_time_reply m;

		if (smp_time_reply_decode(&m, p, len))
			return 0;
		n = smp_time_reply_encode(&m, out, sizeof(out));
		break;
	}
	}
	return n == (long)len && memcmp(out, p, len) == 0;
}

static void test_round_trip(void)
{
	static uint8_t buf[SMP_HDR_SIZE + SMP_MAX_PAYLOAD];
	struct smp_decoder *d = smp_decoder_new(0);

	for (size_t t = 0; t < smp_sample_nr_types; t++) {
		uint8_t type = smp_sample_types[t];
		int all = 1;

		for (unsigned v = 0; v < 8; v++) {
			long n = make_frame(buf, sizeof(buf), type, v, 100 + v);
			struct smp_frame f;

			all &= n > 0;
			if (n <= 0)
				continue;
			smp_decoder_feed(d, buf, (size_t)n);
			all &= smp_decoder_next(d, &f, NULL) == 1;
			all &= f.type == type && f.seq == 100 + v && f.flags == 0;
			all &= f.len == (uint32_t)n - SMP_HDR_SIZE;
			all &= memcmp(f.payload, buf + SMP_HDR_SIZE, f.len) == 0;
			all &= smp_msg_check_size(type, f.len) == 0;
			all &= reencode(type, f.payload, f.len);
			all &= smp_decoder_next(d, &f, NULL) == 0;
		}
		ok(all, "round trip of %s: frame and typed payload, 8 variants",
		   smp_type_name(type));
	}
	smp_decoder_free(d);
}

/* A stream of one frame of every type. */
static size_t build_stream(uint8_t *buf, size_t cap, struct got *want)
{
	size_t off = 0;

	memset(want, 0, sizeof(*want));
	for (size_t t = 0; t < smp_sample_nr_types; t++) {
		long n = make_frame(buf + off, cap - off, smp_sample_types[t], (unsigned)t,
				    t + 1);

		want->type[want->n] = smp_sample_types[t];
		want->seq[want->n] = t + 1;
		want->len[want->n] = (uint32_t)n - SMP_HDR_SIZE;
		want->crc[want->n] = smp_crc32c(0, buf + off + SMP_HDR_SIZE,
						(size_t)n - SMP_HDR_SIZE);
		want->n++;
		off += (size_t)n;
	}
	return off;
}

static int same(const struct got *a, const struct got *b)
{
	if (a->n != b->n)
		return 0;
	for (unsigned i = 0; i < a->n && i < MAXF; i++)
		if (a->type[i] != b->type[i] || a->seq[i] != b->seq[i] ||
		    a->len[i] != b->len[i] || a->crc[i] != b->crc[i])
			return 0;
	return 1;
}

static void test_split(void)
{
	static uint8_t buf[64 * 1024];
	struct got want, g;
	size_t len = build_stream(buf, sizeof(buf), &want);
	int all = 1;

	for (size_t k = 0; k <= len; k++) {
		struct smp_decoder *d = smp_decoder_new(0);

		memset(&g, 0, sizeof(g));
		run(d, buf, k, 0, &g);
		run(d, buf + k, len - k, 0, &g);
		all &= same(&g, &want) && g.errors == 0;
		smp_decoder_free(d);
	}
	ok(all, "a %zu-byte stream of %u frames split at every byte boundary decodes whole",
	   len, want.n);

	struct smp_decoder *d = smp_decoder_new(0);

	memset(&g, 0, sizeof(g));
	run(d, buf, len, 1, &g);
	ok(same(&g, &want) && g.errors == 0, "the same stream fed one byte at a time");
	smp_decoder_free(d);
}

static void test_bit_flips(void)
{
	uint8_t good[256], bad[512];
	long n = make_frame(good, sizeof(good), SMP_STACKS, 0, 42);
	long m;
	int all = 1;
	unsigned bits = 0;

	/* the frame after the corrupted one */
	m = make_frame(bad + n, sizeof(bad) - (size_t)n, SMP_ACK, 3, 0);
	for (long bit = 0; bit < n * 8; bit++) {
		struct smp_decoder *d = smp_decoder_new(0);
		struct got g = { 0 };

		memcpy(bad, good, (size_t)n);
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		run(d, bad, (size_t)(n + m), 0, &g);
		/* the corrupted frame is never delivered; the next one always is */
		all &= g.n == 1 && g.type[0] == SMP_ACK && g.errors > 0;
		smp_decoder_free(d);
		bits++;
	}
	ok(all, "each of %u single-bit flips is detected and the next frame still decodes",
	   bits);
}

static void test_truncation(void)
{
	uint8_t buf[2048];
	long n = make_frame(buf, sizeof(buf), SMP_PAGE, 1, 7);
	long m = make_frame(buf + n, sizeof(buf) - (size_t)n, SMP_BYE, 0, 8);
	int all = 1, wait = 1;

	for (long k = 1; k < n; k++) {
		struct smp_decoder *d = smp_decoder_new(0);
		struct got g = { 0 };
		uint8_t s[4096];

		/* a truncated frame alone: nothing is delivered, the decoder waits */
		run(d, buf, (size_t)k, 0, &g);
		wait &= g.n == 0;
		smp_decoder_free(d);

		/*
		 * Followed by whole frames: all of them are recovered, once enough input
		 * arrived to disprove the truncated frame's length (its checksum fails and
		 * the decoder rescans what it buffered).
		 */
		d = smp_decoder_new(0);
		memset(&g, 0, sizeof(g));
		memcpy(s, buf, (size_t)k);
		size_t o = (size_t)k;
		for (int i = 0; i < 40; i++) {
			memcpy(s + o, buf + n, (size_t)m);
			o += (size_t)m;
		}
		run(d, s, o, 0, &g);
		all &= g.n == 40 && g.type[0] == SMP_BYE && g.seq[0] == 8;
		smp_decoder_free(d);
	}
	ok(wait, "a frame truncated at any of %ld points is never delivered", n - 1);
	ok(all, "a truncated frame followed by a whole one: the whole one is recovered");
}

static void reseal_header(uint8_t *h)
{
	uint32_t c = smp_crc32c(0, h, 28);

	h[28] = (uint8_t)c;
	h[29] = (uint8_t)(c >> 8);
	h[30] = (uint8_t)(c >> 16);
	h[31] = (uint8_t)(c >> 24);
}

static void test_oversize(void)
{
	uint8_t buf[128];
	struct got g = { 0 };
	struct smp_decoder *d = smp_decoder_new(0);
	long n = make_frame(buf, sizeof(buf), SMP_ACK, 1, 0);
	long m;
	uint32_t big = SMP_MAX_PAYLOAD + 1;

	buf[8] = (uint8_t)big;
	buf[9] = (uint8_t)(big >> 8);
	buf[10] = (uint8_t)(big >> 16);
	buf[11] = (uint8_t)(big >> 24);
	reseal_header(buf);
	m = make_frame(buf + n, sizeof(buf) - (size_t)n, SMP_ACK, 2, 0);
	run(d, buf, (size_t)(n + m), 0, &g);
	ok(g.n == 1 && smp_decoder_stats(d)->oversize == 1,
	   "a valid header announcing %u payload bytes is refused at once, next frame kept",
	   big);
	smp_decoder_free(d);

	/* a receiver's own lower limit */
	static uint8_t page[SMP_HDR_SIZE + 8 + 4096];
	d = smp_decoder_new(1024);
	memset(&g, 0, sizeof(g));
	n = make_frame(page, sizeof(page), SMP_PAGE, 4, 1);
	run(d, page, (size_t)n, 0, &g);
	ok(g.n == 0 && smp_decoder_stats(d)->oversize == 1, "a decoder limited to 1 KiB refuses a %ld-byte frame", n);
	smp_decoder_free(d);

	ok(smp_frame_seal(page, SMP_PAGE, 0, 1, SMP_MAX_PAYLOAD + 1) == -EMSGSIZE,
	   "the encoder refuses oversize payloads");
	ok(smp_frame_encode(buf, sizeof(buf), SMP_ACK, 0, 0, page, 200) == -ENOSPC,
	   "the encoder refuses a short buffer");
}

static void test_garbage(void)
{
	static uint8_t buf[64 * 1024], s[128 * 1024];
	static const uint8_t junk[] = "SMASMSxxSMA\0\0SSSM garbage SMAP but no header";
	struct got want, g = { 0 };
	size_t len = build_stream(buf, sizeof(buf), &want), o = 0, off = 0, junk_total = 0;
	struct smp_decoder *d = smp_decoder_new(0);

	/* junk before, between every two frames, and after */
	for (unsigned i = 0; i < want.n; i++) {
		size_t fl = SMP_HDR_SIZE + want.len[i];

		memcpy(s + o, junk, sizeof(junk));
		o += sizeof(junk);
		junk_total += sizeof(junk);
		memcpy(s + o, buf + off, fl);
		o += fl;
		off += fl;
	}
	(void)len;
	run(d, s, o, 13, &g);
	ok(same(&g, &want), "garbage before and between frames: every frame decoded");
	ok(g.errors > 0 && smp_decoder_stats(d)->garbage_bytes +
	   smp_decoder_stats(d)->header_errors >= junk_total - 4 * want.n,
	   "the skipped garbage is counted (%llu bytes skipped, %llu header errors)",
	   (unsigned long long)smp_decoder_stats(d)->garbage_bytes,
	   (unsigned long long)smp_decoder_stats(d)->header_errors);
	smp_decoder_free(d);

	/* wrong magic */
	d = smp_decoder_new(0);
	memset(&g, 0, sizeof(g));
	long n = make_frame(s, sizeof(s), SMP_ACK, 1, 0);
	s[0] = 'X';
	long m = make_frame(s + n, sizeof(s) - (size_t)n, SMP_ACK, 2, 0);
	run(d, s, (size_t)(n + m), 0, &g);
	ok(g.n == 1 && g.last_error == -EPROTO, "a frame with a wrong magic is skipped as garbage");
	smp_decoder_free(d);

	/* bounded: 16 MiB of garbage never grows the buffer */
	d = smp_decoder_new(4096);
	size_t maxpend = 0;
	uint32_t x = 1;
	for (int round = 0; round < 256; round++) {
		for (size_t i = 0; i < 65536; i++) {
			x = x * 1664525u + 1013904223u;
			s[i] = (x >> 24) & 1 ? 'S' : (uint8_t)(x >> 16);
		}
		size_t pos = 0;
		while (pos < 65536) {
			struct smp_frame f;

			pos += smp_decoder_feed(d, s + pos, 65536 - pos);
			if (smp_decoder_pending(d) > maxpend)
				maxpend = smp_decoder_pending(d);
			while (smp_decoder_next(d, &f, NULL) != 0)
				;
		}
	}
	ok(maxpend <= 2 * (SMP_HDR_SIZE + 4096),
	   "16 MiB of garbage: at most %zu bytes ever buffered", maxpend);
	smp_decoder_free(d);
}

static void test_versions(void)
{
	uint8_t buf[256];
	struct got g = { 0 };
	struct smp_decoder *d = smp_decoder_new(0);
	struct smp_frame f;
	long n = make_frame(buf, sizeof(buf), SMP_ACK, 1, 0);

	buf[4] = 2;	/* major */
	reseal_header(buf);
	smp_decoder_feed(d, buf, (size_t)n);
	is_int(smp_decoder_next(d, &f, NULL), -EPROTONOSUPPORT, "major version 2 is refused");
	ok(f.major == 2, "the refusal names the peer's version (%u)", f.major);
	make_frame(buf, sizeof(buf), SMP_ACK, 1, 0);
	smp_decoder_feed(d, buf, (size_t)n);
	is_int(smp_decoder_next(d, &f, NULL), -EPROTONOSUPPORT, "the refusal is sticky");
	smp_decoder_reset(d);
	smp_decoder_feed(d, buf, (size_t)n);
	is_int(smp_decoder_next(d, &f, NULL), 1, "after reset the decoder accepts frames again");

	/* higher minor: accepted */
	n = make_frame(buf, sizeof(buf), SMP_ACK, 1, 0);
	buf[5] = 9;
	{
		uint32_t crc = smp_crc32c(0, buf, 24);

		crc = smp_crc32c(crc, buf + 32, (size_t)n - 32);
		buf[24] = (uint8_t)crc;
		buf[25] = (uint8_t)(crc >> 8);
		buf[26] = (uint8_t)(crc >> 16);
		buf[27] = (uint8_t)(crc >> 24);
	}
	reseal_header(buf);
	run(d, buf, (size_t)n, 0, &g);
	ok(g.n == 1 && g.errors == 0, "minor version 9 of major 1 is accepted");

	/* unknown type: delivered, marked unknown by the size table */
	memset(&g, 0, sizeof(g));
	n = smp_frame_encode(buf, sizeof(buf), 77, 0, 5, "future", 6);
	run(d, buf, (size_t)n, 0, &g);
	ok(g.n == 1 && g.type[0] == 77 && smp_type_name(77) == NULL &&
	   smp_msg_check_size(77, 6) == -ENOENT,
	   "an unknown type is delivered for the caller to skip");
	smp_decoder_free(d);
}

static void test_zero_copy(void)
{
	static uint8_t buf[64 * 1024];
	struct got want, g = { 0 };
	size_t len = build_stream(buf, sizeof(buf), &want), pos = 0;
	struct smp_decoder *d = smp_decoder_new(0);

	while (pos < len) {
		uint8_t *space;
		size_t room = smp_decoder_space(d, &space);
		size_t n = len - pos < 1000 ? len - pos : 1000;
		struct smp_frame f;
		int r;

		if (n > room)
			n = room;
		memcpy(space, buf + pos, n);
		smp_decoder_commit(d, n);
		pos += n;
		while ((r = smp_decoder_next(d, &f, NULL)) == 1) {
			g.type[g.n] = f.type;
			g.seq[g.n] = f.seq;
			g.len[g.n] = f.len;
			g.crc[g.n] = smp_crc32c(0, f.payload, f.len);
			g.n++;
		}
	}
	ok(same(&g, &want), "zero-copy space/commit decodes the same frames");
	smp_decoder_free(d);
}

/*
 * A PAGE frame of protocol 1.4 (a 1.4 guest's: it still decodes) with SMP_FLAG_XXH64,
 * payload "123456789", seq 1: its
 * `crc` is XXH64("123456789", seed = CRC32C(header bytes 0..23) = 0x2241945b) & 0xffffffff
 * (computed with Debian's python3-xxhash and a bitwise CRC32C; PROTOCOL.md 2).
 */
static const uint8_t xxh64_vector[] = {
	0x53, 0x4d, 0x41, 0x50, 0x01, 0x04, 0x05, 0x02, 0x09, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x7f, 0x61, 0xd7, 0x14, 0xcc, 0xdd, 0xd0, 0xb9,
	'1', '2', '3', '4', '5', '6', '7', '8', '9',
};

/* The same frame as this version's sender seals it (protocol 1.5, minor byte 5):
 * seed = CRC32C(header bytes 0..23) = 0x9b7ad8bc, computed the same way. */
static const uint8_t xxh64_vector_15[] = {
	0x53, 0x4d, 0x41, 0x50, 0x01, 0x05, 0x05, 0x02, 0x09, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x2c, 0xf4, 0x72, 0x2c, 0x94, 0x87, 0xa3, 0x4f,
	'1', '2', '3', '4', '5', '6', '7', '8', '9',
};

static void test_xxh64(void)
{
	uint8_t buf[SMP_HDR_SIZE + 9], page[4096 + SMP_HDR_SIZE], bad[sizeof(page) + 64];
	struct smp_decoder *d;
	struct got g = { 0 };
	long n, m;
	int all = 1;

	n = smp_frame_encode(buf, sizeof(buf), SMP_PAGE, SMP_FLAG_XXH64, 1, "123456789", 9);
	ok(n == (long)sizeof(xxh64_vector_15) &&
	   memcmp(buf, xxh64_vector_15, sizeof(buf)) == 0,
	   "XXH64 frame: sealed as the reference vector says (1.5)");
	d = smp_decoder_new(0);
	run(d, xxh64_vector_15, sizeof(xxh64_vector_15), 1, &g);
	ok(g.n == 1 && g.errors == 0 && g.len[0] == 9, "the 1.5 reference vector decodes");
	smp_decoder_free(d);
	memset(&g, 0, sizeof(g));
	d = smp_decoder_new(0);
	run(d, xxh64_vector, sizeof(xxh64_vector), 1, &g);
	ok(g.n == 1 && g.errors == 0 && g.len[0] == 9 &&
	   g.crc[0] == smp_crc32c(0, "123456789", 9), "the reference vector decodes");
	smp_decoder_free(d);

	/* the flag is covered: cleared (header checksum redone), the CRC32C check fails */
	memcpy(buf, xxh64_vector, sizeof(buf));
	buf[7] = 0;
	reseal_header(buf);
	d = smp_decoder_new(0);
	memset(&g, 0, sizeof(g));
	run(d, buf, sizeof(buf), 0, &g);
	ok(g.n == 0 && g.errors > 0, "its flag cleared: refused as a payload checksum error");
	smp_decoder_free(d);

	/* a page-sized XXH64 frame: every single-bit flip in it is caught */
	for (size_t i = 0; i < 4096; i++)
		page[SMP_HDR_SIZE + i] = (uint8_t)(i * 7 + (i >> 8));
	n = smp_frame_seal(page, SMP_PAGE, SMP_FLAG_XXH64, 99, 4096);
	m = make_frame(bad + n, sizeof(bad) - (size_t)n, SMP_ACK, 3, 0);
	for (long bit = 0; bit < n * 8; bit += 3) {
		d = smp_decoder_new(0);
		memset(&g, 0, sizeof(g));
		memcpy(bad, page, (size_t)n);
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		run(d, bad, (size_t)(n + m), 0, &g);
		all &= g.n == 1 && g.type[0] == SMP_ACK && g.errors > 0;
		smp_decoder_free(d);
	}
	ok(all, "XXH64 page frame: every third bit flipped is detected, the next frame decodes");
}

int main(void)
{
	test_round_trip();
	test_split();
	test_bit_flips();
	test_truncation();
	test_oversize();
	test_garbage();
	test_versions();
	test_zero_copy();
	test_xxh64();
	return tap_done();
}
