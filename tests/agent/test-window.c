// SPDX-License-Identifier: MIT
/*
 * test-window.c - the bounded resend window: sequence numbers, ACKs, resume points,
 * drop-oldest accounting under both bounds, invalid resume points, RESENT resealing.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "proto.h"
#include "tap.h"
#include "window.h"

#define MB (1024u * 1024u)

/* Append a frame whose payload is @len bytes of (seq-derived) pattern. */
static int64_t put(struct win *w, uint32_t len, uint8_t tag)
{
	uint8_t buf[70000];

	memset(buf, tag, len);
	return win_append(w, SMP_PAGE, buf, len);
}

/* Decode a frame taken from the window and check its seq and flags. */
static int frame_ok(const uint8_t *f, uint32_t len, uint64_t seq, int resent)
{
	struct smp_decoder *d = smp_decoder_new(0);
	struct smp_frame fr;
	int ok_ = 0;

	smp_decoder_feed(d, f, len);
	if (smp_decoder_next(d, &fr, NULL) == 1)
		ok_ = fr.seq == seq && !!(fr.flags & SMP_FLAG_RESENT) == !!resent &&
		      fr.len == len - SMP_HDR_SIZE;
	smp_decoder_free(d);
	return ok_;
}

static void test_basic(void)
{
	struct win *w;
	struct win_stats s;
	const uint8_t *f;
	uint32_t len;
	uint64_t seq;
	int resend;

	is_int(win_new(1000, 10, &w), -EINVAL, "window smaller than one max frame refused");
	is_int(win_new(MB, 1, &w), -EINVAL, "window of one frame refused");
	is_int(win_new(MB, 64, &w), 0, "window created");
	is_int(put(w, 100, 1), 1, "first frame gets seq 1");
	is_int(put(w, 100, 2), 2, "second frame gets seq 2");
	is_int(put(w, 100, 3), 3, "third frame gets seq 3");

	f = win_next(w, &len, &seq, &resend);
	ok(f && seq == 1 && len == 132 && !resend, "next is seq 1, 132 bytes, not resent");
	ok(frame_ok(f, len, 1, 0), "frame 1 decodes with seq 1, no RESENT");
	win_sent(w);
	f = win_next(w, &len, &seq, &resend);
	ok(f && seq == 2, "next is seq 2");
	win_sent(w);
	is_int(win_ack(w, 3), -ERANGE, "ACK beyond the highest sent is refused");
	is_int(win_ack(w, 1), 0, "ACK 1");
	win_get_stats(w, &s);
	is_int(s.frames, 2, "two frames held after ACK 1");
	is_int(s.oldest_seq, 2, "oldest is 2");
	is_int(s.acked, 1, "acked is 1");
	is_int(s.dropped_frames, 0, "ACKed frames are not counted as dropped");

	/* reconnect: the host resumes at 2 (it lost 2 in flight) */
	is_int(win_resume(w, 0), -ERANGE, "resume 0 is invalid");
	is_int(win_resume(w, 4), -ERANGE, "resume beyond sent_hi + 1 is invalid");
	is_int(win_resume(w, 2), 0, "resume at 2");
	f = win_next(w, &len, &seq, &resend);
	ok(f && seq == 2 && resend, "seq 2 comes again, marked as a resend");
	ok(frame_ok(f, len, 2, 1), "the resent frame carries RESENT and a valid CRC");
	win_sent(w);
	f = win_next(w, &len, &seq, &resend);
	ok(f && seq == 3 && !resend, "seq 3 was never sent: not a resend");
	ok(frame_ok(f, len, 3, 0), "frame 3 without RESENT");
	win_sent(w);
	ok(win_next(w, &len, &seq, &resend) == NULL, "nothing more to send");
	win_get_stats(w, &s);
	is_int(s.resent_frames, 1, "one frame counted as resent");
	is_int(win_resume(w, 4), 0, "resume at sent_hi + 1 (host has everything)");
	ok(win_next(w, &len, &seq, &resend) == NULL, "nothing to resend");
	is_int(win_ack(w, 3), 0, "ACK 3");
	win_get_stats(w, &s);
	is_int(s.frames, 0, "window empty");
	is_int(put(w, 10, 4), 4, "numbering goes on after an empty window");
	win_free(w);
}

static void test_drop_oldest_bytes(void)
{
	struct win *w;
	struct win_stats s;
	const uint8_t *f;
	uint32_t len;
	uint64_t seq;
	int resend;
	size_t cap = (size_t)SMP_HDR_SIZE + SMP_MAX_PAYLOAD;	/* the minimum */
	uint32_t plen = 60000 - SMP_HDR_SIZE;			/* 60000-byte frames */
	uint64_t expect_drop = 0, n;

	is_int(win_new(cap, 1000, &w), 0, "minimum-size window");
	/* 262176 / 60000 = 4 frames fit; the 5th wraps and must drop the oldest */
	for (n = 1; n <= 20; n++)
		put(w, plen, (uint8_t)n);
	win_get_stats(w, &s);
	ok(s.bytes <= cap, "bytes held (%zu) within the arena (%zu)", s.bytes, cap);
	ok(s.frames >= 3 && s.frames <= 4, "3 or 4 frames held (%u)", s.frames);
	expect_drop = 20 - s.frames;
	is_int(s.dropped_frames, expect_drop, "every frame pushed out is counted");
	is_int(s.dropped_bytes, expect_drop * plen, "dropped payload bytes counted");
	is_int(s.oldest_seq, 21 - s.frames, "the newest frames are the ones kept");
	f = win_next(w, &len, &seq, &resend);
	ok(f && seq == s.oldest_seq, "sending starts at the oldest held frame");
	ok(f && f[SMP_HDR_SIZE + 8] == (uint8_t)seq, "its payload is that frame's");
	ok(frame_ok(f, len, seq, 0), "it decodes");
	/* a resume point older than the window is not an error: start at the oldest */
	win_sent(w);
	is_int(win_resume(w, 1), 0, "resume older than the window accepted");
	f = win_next(w, &len, &seq, &resend);
	ok(f && seq == s.oldest_seq && resend, "resend restarts at the oldest frame");
	win_free(w);
}

static void test_drop_oldest_count(void)
{
	struct win *w;
	struct win_stats s;
	const uint8_t *f;
	uint32_t len;
	uint64_t seq;
	int resend;

	is_int(win_new(MB, 8, &w), 0, "window of 8 frames");
	for (int i = 0; i < 5; i++)
		put(w, 50, 1);
	for (int i = 0; i < 3; i++) {
		f = win_next(w, &len, &seq, &resend);
		win_sent(w);
	}
	/* host gone; 10 more frames: 7 oldest must go (5 + 10 - 8) */
	for (int i = 0; i < 10; i++)
		put(w, 50, 2);
	win_get_stats(w, &s);
	is_int(s.frames, 8, "count bound holds");
	is_int(s.dropped_frames, 7, "7 dropped");
	is_int(s.dropped_bytes, 7 * 50, "350 payload bytes dropped");
	is_int(s.oldest_seq, 8, "oldest kept is seq 8");
	is_int(win_resume(w, 2), 0, "host resumes at 2 (it had only seq 1)");
	f = win_next(w, &len, &seq, &resend);
	ok(f && seq == 8 && !resend, "resending starts at 8, never sent before");
	is_int(win_ack(w, 9), -ERANGE, "ACK of an unsent frame refused");
	(void)f;
	win_free(w);
}

static void test_wrap_integrity(void)
{
	struct win *w;
	uint64_t acked = 0, sent = 0, next = 1;
	unsigned bad = 0, checked = 0;
	uint32_t seed = 12345;

	is_int(win_new(300000, 64, &w), 0, "window for the wrap test");
	for (int round = 0; round < 2000; round++) {
		uint32_t len;
		uint64_t seq;
		int resend;
		const uint8_t *f;

		seed = seed * 1103515245u + 12345u;
		put(w, 16 + (seed >> 8) % 40000, (uint8_t)next);
		next++;
		f = win_next(w, &len, &seq, &resend);
		if (f && (seed & 3)) {
			checked++;
			if (!frame_ok(f, len, seq, resend) || f[SMP_HDR_SIZE] != (uint8_t)seq)
				bad++;
			win_sent(w);
			sent = seq;
		}
		if ((seed & 15) == 0 && sent > acked) {
			acked = sent;
			win_ack(w, acked);
		}
	}
	ok(checked > 1000, "%u frames checked across wraps", checked);
	is_int(bad, 0, "every frame read back intact with its own seq");
	win_free(w);
}

static void test_reset(void)
{
	struct win *w;
	struct win_stats s;
	uint32_t len;
	uint64_t seq;

	is_int(win_new(MB, 16, &w), 0, "window for reset");
	put(w, 10, 1);
	put(w, 10, 2);
	win_next(w, &len, &seq, NULL);
	win_sent(w);
	is_int(win_reset(w), 2, "reset reports 2 frames dropped");
	win_get_stats(w, &s);
	ok(s.frames == 0 && s.next_seq == 1 && s.sent_hi == 0 && s.dropped_frames == 0,
	   "fresh stream: empty, seq from 1, counters zero");
	is_int(put(w, 10, 3), 1, "first frame of the fresh stream is seq 1");
	is_int(win_resume(w, 2), -ERANGE, "old stream's resume point now invalid");
	win_free(w);
}

static void test_missing(void)
{
	struct win *w;
	uint32_t len;
	uint64_t seq;

	is_int(win_new(1u << 20, 8, &w), 0, "window for win_missing");
	for (int i = 0; i < 6; i++)
		put(w, 10, 1);			/* seq 1..6: a "snapshot" 1..4, then data */
	for (int i = 0; i < 6; i++) {
		win_next(w, &len, &seq, NULL);
		win_sent(w);
	}
	win_ack(w, 2);				/* 1, 2 durable and gone by ACK */
	ok(!win_missing(w, 1, 4, 3), "ACKed frames are not missing (resume 3)");
	ok(!win_missing(w, 1, 4, 5), "host holds the whole snapshot (resume 5)");
	for (int i = 0; i < 6; i++)
		put(w, 10, 2);			/* 7..12: 8 frames max, 3 and 4 dropped */
	ok(win_missing(w, 1, 4, 3), "dropped before the host got them: missing");
	ok(!win_missing(w, 1, 4, 5), "dropped after the host had them: not missing");
	ok(!win_missing(w, 7, 8, 3), "a range still in the window is not missing");
	ok(!win_missing(w, 5, 4, 1), "an empty range is never missing");
	win_free(w);
}

int main(void)
{
	test_missing();
	test_basic();
	test_drop_oldest_bytes();
	test_drop_oldest_count();
	test_wrap_integrity();
	test_reset();
	return tap_done();
}
