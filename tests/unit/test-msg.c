// SPDX-License-Identifier: MIT
/*
 * Typed payloads, delta records and stack_map_bin v1: each decoder refuses what the
 * protocol forbids and never reads outside (buf, len).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "samples.h"
#include "wire.h"
#include "tap.h"

static int decode_any(uint8_t type, const uint8_t *p, size_t len)
{
	union {
		struct smp_hello h;
		struct smp_format f;
		struct smp_text t;
		struct smp_page pg;
		struct smp_lost l;
		struct smp_welcome w;
		struct smp_time_reply tr;
		uint64_t a;
		uint32_t u;
	} m;

	switch (type) {
	case SMP_HELLO: return smp_hello_decode(&m.h, p, len);
	case SMP_FORMAT: return smp_format_decode(&m.f, p, len);
	case SMP_KSYMS: case SMP_MODULES: return smp_text_decode(&m.t, p, len);
	case SMP_PAGE: return smp_page_decode(&m.pg, p, len);
	case SMP_LOST: return smp_lost_decode(&m.l, p, len);
	case SMP_STATS: return smp_stats_decode(&m.u, p, len);
	case SMP_BYE: return smp_bye_decode(&m.u, p, len);
	case SMP_WELCOME: return smp_welcome_decode(&m.w, p, len);
	case SMP_ACK: return smp_ack_decode(&m.a, p, len);
	case SMP_TIME: return smp_time_decode(&m.a, p, len);
	case SMP_TIME_REPLY: return smp_time_reply_decode(&m.tr, p, len);
	case SMP_STACKS: case SMP_EPOCH: {
		struct smp_delta_rec r;
		size_t off = 0;
		int k, n = 0;

		if (smp_msg_check_size(type, len))
			return -EBADMSG;
		while ((k = smp_delta_next(p, len, &off, &r)) == 1)
			n++;
		return k < 0 ? k : n ? 0 : -EBADMSG;
	}
	}
	return -EINVAL;
}

static void test_sizes(void)
{
	static uint8_t buf[SMP_MAX_PAYLOAD + 64];

	for (size_t t = 0; t < smp_sample_nr_types; t++) {
		uint8_t type = smp_sample_types[t];
		long n = smp_sample_payload(type, 1, buf, sizeof(buf));
		int short_ok = 1;

		is_int(decode_any(type, buf, (size_t)n), 0, "%s sample decodes", smp_type_name(type));
		/*
		 * Every strict prefix, in a buffer of exactly its size so that ASan sees any
		 * overread: refused when the layout has an exact size (counts and length
		 * fields must agree with it), or below the type's minimum; otherwise (text,
		 * page data, a run of whole records) a shorter message may be valid.
		 */
		int exact = type == SMP_HELLO || type == SMP_EPOCH || type == SMP_LOST ||
			    type == SMP_STATS || type == SMP_BYE || type == SMP_WELCOME ||
			    type == SMP_ACK || type == SMP_TIME || type == SMP_TIME_REPLY;
		for (long k = 0; k < n; k++) {
			uint8_t *copy = malloc((size_t)k + 1);
			int r;

			memcpy(copy, buf, (size_t)k);
			r = decode_any(type, copy, (size_t)k);
			if (exact || smp_msg_check_size(type, (size_t)k) != 0)
				short_ok &= r < 0;
			free(copy);
		}
		ok(short_ok, "%s: truncations refused (%ld checked)", smp_type_name(type), n);
	}
	is_int(smp_msg_check_size(SMP_PAGE, 8 + 65537), -EBADMSG, "PAGE above 64 KiB refused");
	is_int(smp_msg_check_size(SMP_EPOCH, 33), -EBADMSG, "EPOCH must be 32 bytes");
	is_int(smp_msg_check_size(0, 0), -ENOENT, "type 0 is invalid");
}

static void test_hello(void)
{
	uint8_t buf[1024];
	struct smp_hello h;
	long n = smp_sample_payload(SMP_HELLO, 0, buf, sizeof(buf));

	is_int(smp_hello_decode(&h, buf, (size_t)n), 0, "HELLO decodes");
	ok(h.release_len == 14 && memcmp(h.release, "6.1.0-stackmap", 14) == 0 &&
	   h.clock_len == 5 && memcmp(h.trace_clock, "local", 5) == 0 &&
	   h.build_id_len == 20 && h.build_id[0] == 1 && h.nr_cpus == 2 &&
	   h.page_size == 4096 && h.map_bits == 14,
	   "HELLO fields read back");
	ok(n == 103 && h.ack_ms == 0 && h.ack_bytes == 0,
	   "HELLO without ACK pacing: as in 1.4, no trailing bytes, both 0");
	{
		uint8_t p[1024];
		long m = smp_sample_payload(SMP_HELLO, 2, p, sizeof(p));

		ok(m == n + SMP_HELLO_PACING_SIZE && smp_hello_decode(&h, p, (size_t)m) == 0 &&
		   h.ack_ms == 100 && h.ack_bytes == 2u << 20,
		   "HELLO with ACK pacing (1.5): 8 trailing bytes, read back");
		/* fewer than the pacing's 8 bytes after the strings: not pacing, ignored */
		ok(smp_hello_decode(&h, p, (size_t)m - 4) == 0 && h.ack_ms == 0 &&
		   h.ack_bytes == 0, "HELLO with 4 trailing bytes: no pacing");
		is_int(smp_hello_encode(&h, p, (size_t)n), n, "HELLO without pacing: no room for it");
		h.ack_ms = 1;
		is_int(smp_hello_encode(&h, p, (size_t)n + 7), -ENOSPC,
		       "HELLO with pacing: refused without room for its 8 bytes");
	}

#define HELLO_BAD(off, val, what) do {						\
	uint8_t c[1024];							\
	memcpy(c, buf, (size_t)n);						\
	c[off] = val;								\
	is_int(smp_hello_decode(&h, c, (size_t)n), -EBADMSG, "HELLO refused: " what); \
} while (0)
	HELLO_BAD(60, 15, "release_len disagrees with the size");
	HELLO_BAD(62, 0, "empty trace clock");
	HELLO_BAD(32, 0, "zero CPUs");
	HELLO_BAD(37, 0x11, "page size not a power of two");
	HELLO_BAD(40, 25, "map bits above 19");
	HELLO_BAD(64, '\n', "control character in release");
	{
		uint8_t c[1024];

		memcpy(c, buf, (size_t)n);
		memset(c + 16, 0, 8);
		is_int(smp_hello_decode(&h, c, (size_t)n), -EBADMSG, "HELLO refused: stream_id 0");
	}
}

static void test_format(void)
{
	uint8_t buf[512];
	struct smp_format f;
	static const char *bad[] = { "../etc", "/abs", "a//b", "trail/", "sp ace", "dot.dot", "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t nl = strlen(bad[i]);

		buf[0] = (uint8_t)nl;
		buf[1] = 0;
		buf[2] = buf[3] = 0;
		memcpy(buf + 4, bad[i], nl);
		memcpy(buf + 4 + nl, "text", 4);
		is_int(smp_format_decode(&f, buf, 8 + nl), -EBADMSG, "FORMAT name '%s' refused", bad[i]);
	}
	buf[0] = 200;
	is_int(smp_format_decode(&f, buf, 20), -EBADMSG, "FORMAT name longer than the payload refused");
	struct smp_format g = { .name = "kmem/kmalloc", .name_len = 12, .text = "x", .text_len = 1 };
	long n = smp_format_encode(&g, buf, sizeof(buf));
	is_int(smp_format_decode(&f, buf, (size_t)n), 0, "FORMAT kmem/kmalloc accepted");
	ok(f.text_len == 1 && f.text[0] == 'x', "FORMAT text read back");
}

static void test_counts(void)
{
	uint8_t buf[4096];
	struct smp_lost l;
	uint32_t nr;
	long n = smp_sample_payload(SMP_LOST, 2, buf, sizeof(buf));

	buf[0] = 4;	/* claims one more CPU than present */
	is_int(smp_lost_decode(&l, buf, (size_t)n), -EBADMSG, "LOST with a lying count refused");
	buf[0] = 0xff; buf[1] = 0xff; buf[2] = 0xff; buf[3] = 0xff;
	is_int(smp_lost_decode(&l, buf, (size_t)n), -EBADMSG, "LOST with count 2^32-1 refused");
	n = smp_sample_payload(SMP_STATS, 3, buf, sizeof(buf));
	buf[0] = 200;
	is_int(smp_stats_decode(&nr, buf, (size_t)n), -EBADMSG, "STATS with a lying count refused");
	memset(buf, 0, 16);
	is_int(smp_welcome_decode(&(struct smp_welcome){ 0 }, buf, 16), -EBADMSG,
	       "WELCOME with resume_seq 0 refused");
}

static void test_delta(void)
{
	uint8_t buf[4096];
	uint64_t ips[65];
	struct smp_delta_rec r;
	size_t off = 0;

	for (int i = 0; i < 65; i++)
		ips[i] = 0xffffffff81000000ull + (uint64_t)i;
	is_int(smp_delta_put_stack(buf, sizeof(buf), 1, 1, ips, 65), -EINVAL, "depth 65 cannot be encoded");
	is_int(smp_delta_put_stack(buf, sizeof(buf), 1, 1, ips, 0), -EINVAL, "depth 0 cannot be encoded");

	long a = smp_delta_put_epoch(buf, sizeof(buf), 2049, 123456789);
	long b = smp_delta_put_stack(buf + a, sizeof(buf) - (size_t)a, smp_id_make(2049, 77), 5, ips, 64);
	size_t len = (size_t)(a + b);

	is_int(smp_delta_next(buf, len, &off, &r), 1, "epoch record parses");
	ok(r.kind == SMP_DELTA_EPOCH && r.epoch == 2049 && r.timestamp == 123456789 &&
	   smp_id_tag(r.stack_id) == 1 && smp_id_slot(r.stack_id) == 0,
	   "epoch record: epoch 2049 has tag 1 and timestamp kept");
	is_int(smp_delta_next(buf, len, &off, &r), 1, "stack record parses");
	ok(r.kind == SMP_DELTA_STACK && r.nr == 64 && r.ref_count == 5 &&
	   smp_id_slot(r.stack_id) == 77 && smp_id_tag(r.stack_id) == 1 &&
	   smp_delta_ip(&r, 0) == ips[0] && smp_delta_ip(&r, 63) == ips[63],
	   "stack record: id, depth, ref_count, ips read back");
	is_int(smp_delta_next(buf, len, &off, &r), 0, "end of records");

	int trunc = 1;
	for (size_t k = 1; k < len; k++) {
		uint8_t *c = malloc(k);
		int res, n = 0;

		memcpy(c, buf, k);
		off = 0;
		while ((res = smp_delta_next(c, k, &off, &r)) == 1)
			n++;
		/* exactly at the record boundary the first record is whole */
		trunc &= k == (size_t)a ? (res == 0 && n == 1) : res == -EBADMSG;
		free(c);
	}
	ok(trunc, "every truncation inside a record is refused");

#define DELTA_BAD(off_, val, what) do {						\
	uint8_t c[4096];							\
	size_t o_ = 0;								\
	memcpy(c, buf + a, (size_t)b);						\
	c[off_] = val;								\
	is_int(smp_delta_next(c, (size_t)b, &o_, &r), -EBADMSG, "delta refused: " what); \
} while (0)
	DELTA_BAD(12, 2, "unknown kind");
	DELTA_BAD(4, 0, "depth 0");
	DELTA_BAD(4, 65, "depth 65");
	DELTA_BAD(3, 0x80, "bit 31 set in stack_id");
	{
		uint8_t c[64];
		size_t o = 0;

		memcpy(c, buf, 32);
		c[16] = 0x02;	/* epoch 2050 but id base of 2049 */
		is_int(smp_delta_next(c, 32, &o, &r), -EBADMSG, "epoch record whose id base disagrees");
	}
	ok(smp_id_make(2048, 5) == 5 && smp_id_make(2047, 0xfffff) == 0x7fffffff &&
	   smp_id_valid(smp_id_make(UINT64_MAX, SMP_ID_SLOT_MASK)),
	   "stack_id layout: slot bits 0-19, tag bits 20-30, bit 31 clear");
}

static size_t put32(uint8_t *p, uint32_t v, int be)
{
	for (int i = 0; i < 4; i++)
		p[be ? 3 - i : i] = (uint8_t)(v >> (8 * i));
	return 4;
}

static size_t put64(uint8_t *p, uint64_t v, int be)
{
	for (int i = 0; i < 8; i++)
		p[be ? 7 - i : i] = (uint8_t)(v >> (8 * i));
	return 8;
}

static void test_bin(void)
{
	for (int be = 0; be < 2; be++) {
		uint8_t buf[2048];
		size_t o = 0;
		struct smp_bin it;
		struct smp_bin_entry e;
		int good = 1, n = 0, r;

		o += put32(buf + o, SMP_BIN_MAGIC, be);
		o += put32(buf + o, 1, be);
		o += put32(buf + o, 3, be);
		o += put32(buf + o, 0, be);
		for (uint32_t s = 0; s < 3; s++) {
			o += put32(buf + o, 100 + s, be);
			o += put32(buf + o, s + 1, be);
			o += put32(buf + o, 10 * s, be);
			o += put32(buf + o, 0, be);
			for (uint32_t i = 0; i <= s; i++)
				o += put64(buf + o, 0xffffffff81000000ull + s * 0x100 + i, be);
		}
		is_int(smp_bin_open(&it, buf, o), 0, "stack_map_bin %s opens", be ? "BE" : "LE");
		while ((r = smp_bin_next(&it, &e)) == 1) {
			good &= e.stack_id == 100u + (uint32_t)n && e.nr == (uint32_t)n + 1 &&
				e.ref_count == 10u * (uint32_t)n &&
				smp_bin_ip(&e, e.nr - 1) == 0xffffffff81000000ull + (uint64_t)n * 0x100 + (uint64_t)n;
			n++;
		}
		ok(r == 0 && n == 3 && good, "%s: 3 stacks read back", be ? "BE" : "LE");

		int trunc = 1;
		for (size_t k = 0; k < o; k++) {
			uint8_t *c = malloc(k ? k : 1);

			memcpy(c, buf, k);
			r = smp_bin_open(&it, c, k);
			if (r == 0)
				while ((r = smp_bin_next(&it, &e)) == 1)
					;
			trunc &= r < 0;
			free(c);
		}
		ok(trunc, "%s: every truncation (header, entry header, IP array) refused", be ? "BE" : "LE");

		buf[be ? 7 : 4] = 2;
		is_int(smp_bin_open(&it, buf, o), -EPROTONOSUPPORT, "version 2 refused");
	}
	uint8_t junk[16] = "NOPENOPENOPENOPE";
	struct smp_bin it;
	is_int(smp_bin_open(&it, junk, 16), -EBADMSG, "bad magic refused");
}

/* Sequence rules (PROTOCOL.md 2.2): nothing wraps, a jump too far is malformed. */
static void test_seq(void)
{
	const uint64_t M = SMP_SEQ_MAX, G = SMP_SEQ_MAX_GAP;

	is_int(smp_seq_classify(1, 1), SMP_SEQ_NEXT, "seq 1 of a new stream is next");
	is_int(smp_seq_classify(5, 4), SMP_SEQ_DUP, "below expected: duplicate");
	is_int(smp_seq_classify(5, 6), SMP_SEQ_GAP, "above expected: gap");
	is_int(smp_seq_classify(5, 0), SMP_SEQ_BAD, "seq 0 is not a sequenced frame");
	is_int(smp_seq_classify(1, UINT64_MAX), SMP_SEQ_BAD, "seq 2^64-1 is malformed");
	is_int(smp_seq_classify(M, UINT64_MAX), SMP_SEQ_BAD,
	       "seq 2^64-1 is malformed even just after SMP_SEQ_MAX - 1");
	is_int(smp_seq_classify(M, M), SMP_SEQ_NEXT, "SMP_SEQ_MAX itself is a valid seq");
	is_int(smp_seq_classify(M, M + 1), SMP_SEQ_BAD, "SMP_SEQ_MAX + 1 is not");
	is_int(smp_seq_classify(M + 1, M + 1), SMP_SEQ_BAD, "nothing follows SMP_SEQ_MAX");
	is_int(smp_seq_classify(M + 1, 7), SMP_SEQ_DUP, "... but older frames are duplicates");
	is_int(smp_seq_classify(1, 1 + G), SMP_SEQ_GAP, "a gap of SMP_SEQ_MAX_GAP is allowed");
	is_int(smp_seq_classify(1, 2 + G), SMP_SEQ_BAD, "one more is malformed");
	is_int(smp_seq_classify(0, 1), SMP_SEQ_BAD, "expected 0 is invalid state");
	is_int(smp_seq_classify(UINT64_MAX, 1), SMP_SEQ_BAD, "expected 2^64-1 is invalid state");
	ok(smp_seq_next_ok(1) && smp_seq_next_ok(M + 1) && !smp_seq_next_ok(0) &&
	   !smp_seq_next_ok(M + 2) && !smp_seq_next_ok(UINT64_MAX), "smp_seq_next_ok bounds");
	/* The worst a stream can record: every gap at its maximum up to SMP_SEQ_MAX. */
	ok(M + 1 < (UINT64_C(1) << 63), "the sum of a stream's gaps fits an int64 column");
}

/*
 * Every encoder writes every byte it reports (no byte of the caller's buffer left as it
 * was), and refuses what it cannot encode without touching the output size: encode the
 * same message into buffers pre-filled with two different patterns and compare.
 */
static void test_encoders_write_everything(void)
{
	static uint8_t a[SMP_MAX_PAYLOAD], b[SMP_MAX_PAYLOAD];
	bool all = true;

	for (size_t i = 0; i < smp_sample_nr_types; i++) {
		uint8_t t = smp_sample_types[i];

		for (unsigned v = 0; v < 4; v++) {
			long na, nb;

			memset(a, 0xa5, sizeof(a));
			memset(b, 0x5a, sizeof(b));
			na = smp_sample_payload(t, v, a, sizeof(a));
			nb = smp_sample_payload(t, v, b, sizeof(b));
			if (na <= 0 || na != nb || memcmp(a, b, (size_t)na)) {
				all = false;
				printf("# type %u variant %u: %ld/%ld bytes differ\n", t, v, na, nb);
			}
		}
	}
	ok(all, "every message encoder writes all of its payload bytes");
	{
		struct smp_welcome w = { .resume_seq = 7, .max_payload = 4096 };
		long na, nb;

		memset(a, 0xa5, 64);
		memset(b, 0x5a, 64);
		na = smp_welcome_encode(&w, a, 64);
		nb = smp_welcome_encode(&w, b, 64);
		ok(na == 16 && nb == 16 && !memcmp(a, b, 16), "WELCOME: all 16 bytes written");
		memcpy(b, a, 16);	/* same payload, different bytes after it */
		na = smp_frame_encode(a, 64, SMP_WELCOME, 0, 0, a, 16);
		nb = smp_frame_encode(b, 64, SMP_WELCOME, 0, 0, b, 16);
		ok(na == 48 && nb == 48 && !memcmp(a, b, 48), "a sealed frame: all 48 bytes written");
		na = smp_ack_encode(9, a, 64);
		nb = smp_ack_encode(9, b, 64);
		ok(na == 8 && nb == 8 && !memcmp(a, b, 8), "ACK: all 8 bytes written");
	}
	is_int(smp_welcome_encode(&(struct smp_welcome){ .resume_seq = 0 }, a, 16), -EINVAL,
	       "WELCOME resume_seq 0 cannot be encoded");
	is_int(smp_welcome_encode(&(struct smp_welcome){ .resume_seq = SMP_SEQ_MAX + 2 }, a, 16),
	       -EINVAL, "WELCOME resume_seq beyond SMP_SEQ_MAX + 1 cannot be encoded");
	is_int(smp_welcome_encode(&(struct smp_welcome){ .resume_seq = UINT64_MAX }, a, 16),
	       -EINVAL, "WELCOME resume_seq 2^64-1 cannot be encoded");
	is_int(smp_welcome_encode(&(struct smp_welcome){ .resume_seq = SMP_SEQ_MAX + 1 }, a, 16),
	       16, "WELCOME resume_seq SMP_SEQ_MAX + 1 can");
	is_int(smp_ack_encode(SMP_SEQ_MAX + 1, a, 8), -EINVAL, "ACK beyond SMP_SEQ_MAX refused");
	is_int(smp_ack_encode(UINT64_MAX, a, 8), -EINVAL, "ACK 2^64-1 refused");
}

static void test_time(void)
{
	uint8_t buf[64];
	char text[64];
	struct smp_time_reply r;
	uint64_t id = 0;
	long n;

	is_int(smp_time_encode(0, buf, sizeof(buf)), -EINVAL, "TIME probe id 0 cannot be encoded");
	is_int(smp_time_encode(5, buf, 15), -ENOSPC, "TIME needs 16 bytes");
	n = smp_time_encode(0xfedcba9876543210ull, buf, sizeof(buf));
	is_int(smp_time_decode(&id, buf, (size_t)n), 0, "TIME decodes");
	ok(id == 0xfedcba9876543210ull, "TIME probe id read back");
	memset(buf, 0, 16);
	is_int(smp_time_decode(&id, buf, 16), -EBADMSG, "TIME with probe id 0 is malformed");
	is_int(smp_time_reply_encode(&(struct smp_time_reply){ .probe_id = 1, .status = 3 },
				     buf, sizeof(buf)), -EINVAL,
	       "TIME_REPLY with a positive status cannot be encoded");
	n = smp_time_reply_encode(&(struct smp_time_reply){ .probe_id = 9, .status = -EBADF },
				  buf, sizeof(buf));
	is_int(smp_time_reply_decode(&r, buf, (size_t)n), 0, "TIME_REPLY decodes");
	ok(r.probe_id == 9 && r.status == -EBADF, "TIME_REPLY fields read back");
	buf[8] = 1;
	buf[9] = buf[10] = buf[11] = 0;
	is_int(smp_time_reply_decode(&r, buf, 16), -EBADMSG,
	       "TIME_REPLY with a positive status is malformed");
	ok(smp_type_name(SMP_TIME) && smp_type_name(SMP_TIME_REPLY), "TIME types have names");

	n = smp_time_marker(0x00000000deadbeefull, text, sizeof(text));
	is_int(n, (long)SMP_TIME_MARKER_LEN, "marker is prefix + 16 hex digits");
	ok(!memcmp(text, "stackmap-time 00000000deadbeef", (size_t)n), "marker text");
	is_int(smp_time_marker(1, text, SMP_TIME_MARKER_LEN - 1), -ENOSPC, "marker needs room");
	is_int(smp_time_marker_parse(text, (size_t)n, &id), 0, "marker parses");
	ok(id == 0xdeadbeefull, "marker id read back");
	memcpy(text + n, "\n\0\x55\xaa", 4);
	is_int(smp_time_marker_parse(text, (size_t)n + 4, &id), 0,
	       "marker as the kernel records it (newline, NUL, any padding) parses");
	text[n + 1] = 'x';
	is_int(smp_time_marker_parse(text, (size_t)n + 4, &id), -EBADMSG,
	       "marker with trailing text is refused");
	text[n] = ' ';
	is_int(smp_time_marker_parse(text, (size_t)n + 4, &id), -EBADMSG,
	       "marker with trailing text is refused (no newline)");
	is_int(smp_time_marker_parse(text, (size_t)n - 1, &id), -EBADMSG,
	       "a cut marker is refused");
	text[20] = 'G';
	is_int(smp_time_marker_parse(text, (size_t)n, &id), -EBADMSG,
	       "marker with a non-hex digit is refused");
	is_int(smp_time_marker_parse("stackmap-time 0000000000000000", SMP_TIME_MARKER_LEN,
				     &id), -EBADMSG, "marker of probe id 0 is refused");
	is_int(smp_time_marker_parse("hello", 5, &id), -EBADMSG, "other text is refused");
}

/* Re-encode what the decoder of @type read from (@p, @len): -1 when it refused it. */
static long reencode(uint8_t type, const uint8_t *p, size_t len, uint8_t *out, size_t cap)
{
	struct smp_lost_cpu cpus[8];
	struct smp_stat st[16];
	struct smp_hello h;
	struct smp_lost l;
	struct smp_welcome w;
	struct smp_time_reply tr;
	uint64_t a;
	uint32_t u;

	switch (type) {
	case SMP_HELLO:
		return smp_hello_decode(&h, p, len) ? -1 : smp_hello_encode(&h, out, cap);
	case SMP_LOST:
		if (smp_lost_decode(&l, p, len) || l.nr > 8)
			return -1;
		for (uint32_t i = 0; i < l.nr; i++)
			smp_lost_cpu(&l, i, &cpus[i]);
		return smp_lost_encode(&l, cpus, out, cap);
	case SMP_STATS:
		if (smp_stats_decode(&u, p, len) || u > 16)
			return -1;
		for (uint32_t i = 0; i < u; i++)
			smp_stats_get(p, i, &st[i]);
		return smp_stats_encode(st, u, out, cap);
	case SMP_BYE:
		return smp_bye_decode(&u, p, len) ? -1 : smp_bye_encode(u, out, cap);
	case SMP_WELCOME:
		return smp_welcome_decode(&w, p, len) ? -1 : smp_welcome_encode(&w, out, cap);
	case SMP_ACK:
		return smp_ack_decode(&a, p, len) ? -1 : smp_ack_encode(a, out, cap);
	case SMP_TIME:
		return smp_time_decode(&a, p, len) ? -1 : smp_time_encode(a, out, cap);
	case SMP_TIME_REPLY:
		return smp_time_reply_decode(&tr, p, len) ? -1 :
		       smp_time_reply_encode(&tr, out, cap);
	}
	return -1;
}

/*
 * PROTOCOL.md 4, "Trailing fields": a frame of a later minor version (1.x, x above
 * ours) whose payload carries fields after the layout this receiver knows is
 * delivered, and each decoder reads the fields it knows, exactly as without the extra
 * ones, and ignores the rest. Where no field can follow (EPOCH, text, page data,
 * delta records), the size rules stay.
 */
static void test_trailing(void)
{
	static const uint8_t types[] = { SMP_HELLO, SMP_LOST, SMP_STATS, SMP_BYE,
					 SMP_WELCOME, SMP_ACK, SMP_TIME, SMP_TIME_REPLY };
	static const uint8_t extra[24] = { 0xa5, 0x5a, 0xff, 0, 1, 2, 3, 4, 0xee, 0xee, 0xee,
					   0xee, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0xff, 0x7f };
	static uint8_t pay[4096], frame[4096 + SMP_HDR_SIZE], out[4096];

	for (size_t t = 0; t < sizeof(types); t++) {
		uint8_t type = types[t];
		long n = smp_sample_payload(type, 2, pay, sizeof(pay) - sizeof(extra));
		struct smp_decoder *d = smp_decoder_new(SMP_MAX_PAYLOAD);
		struct smp_frame f = { 0 };
		long fl, k;
		uint32_t crc;
		int r;

		memcpy(pay + n, extra, sizeof(extra));
		fl = smp_frame_encode(frame, sizeof(frame), type, 0, 0, pay,
				      (size_t)n + sizeof(extra));
		/* the same frame from a sender of minor version SMP_VERSION_MINOR + 1 */
		frame[5] = SMP_VERSION_MINOR + 1;
		crc = smp_crc32c(0, frame, 24);
		crc = smp_crc32c(crc, frame + SMP_HDR_SIZE, (size_t)n + sizeof(extra));
		smp_put32(frame + 24, crc);
		smp_put32(frame + 28, smp_crc32c(0, frame, 28));
		smp_decoder_feed(d, frame, (size_t)fl);
		r = smp_decoder_next(d, &f, NULL);
		ok(r == 1 && f.type == type && f.minor == SMP_VERSION_MINOR + 1 &&
		   f.len == (size_t)n + sizeof(extra),
		   "%s of minor %d with %zu trailing bytes delivered", smp_type_name(type),
		   SMP_VERSION_MINOR + 1, sizeof(extra));
		is_int(smp_msg_check_size(type, f.len), 0, "%s: trailing bytes within its size",
		       smp_type_name(type));
		k = r == 1 ? reencode(type, f.payload, f.len, out, sizeof(out)) : -1;
		ok(k == n && !memcmp(out, pay, (size_t)n),
		   "%s: the known fields read as without the trailing ones", smp_type_name(type));
		smp_decoder_free(d);
	}
	is_int(smp_msg_check_size(SMP_EPOCH, SMP_DELTA_EPOCH_SIZE + 8), -EBADMSG,
	       "EPOCH takes no trailing bytes (one kernel delta record)");
}

int main(void)
{
	test_time();
	test_sizes();
	test_hello();
	test_format();
	test_counts();
	test_delta();
	test_bin();
	test_seq();
	test_encoders_write_everything();
	test_trailing();
	return tap_done();
}
