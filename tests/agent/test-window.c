// SPDX-License-Identifier: MIT
/*
 * test-window.c - the bounded resend window: sequence numbers, ACKs, resume points,
 * drop-oldest accounting under both bounds, invalid resume points, RESENT resealing,
 * splicing a new snapshot ahead of the held frames after a gap.
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

/* Walk the window from the send cursor: seqs from @seq0, payloads tagged @tags. */
static int walk_is(struct win *w, uint64_t seq0, const uint8_t *tags, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t len;
		uint64_t seq;
		int resend;
		const uint8_t *f = win_next(w, &len, &seq, &resend);

		if (!f || seq != seq0 + (uint64_t)i || resend || !frame_ok(f, len, seq, 0) ||
		    f[SMP_HDR_SIZE] != tags[i] || f[len - 1] != tags[i])
			return 0;
		win_sent(w);
	}
	return win_next(w, &(uint32_t){ 0 }, &(uint64_t){ 0 }, NULL) == NULL;
}

static void test_splice(void)
{
	/* 30032-byte frames: 9 fit in 300000 bytes */
	static const uint8_t tags[] = { 100, 101, 6, 7, 8, 9, 10, 11, 12 };
	static const uint8_t tags2[] = { 102, 10, 11, 12 };
	struct win *w, *front, *big;
	struct win_stats s;
	int64_t shift = -1;
	uint32_t len;
	uint64_t seq;

	is_int(win_new(300000, 16, &w), 0, "window for splice");
	is_int(win_new(300000, 16, &front), 0, "front window");
	for (int i = 1; i <= 12; i++)
		put(w, 30000, (uint8_t)i);		/* the host is away: 1..3 dropped */
	is_int(win_resume(w, 1), 0, "a late host resumes at 1");
	put(front, 30000, 100);
	put(front, 30000, 101);
	is_int((long)win_splice_first_kept(w, 2 * 30032, 2, 1), 6,
	       "with 2 frames ahead, 7 of the 9 held fit: the first kept is 6");
	is_int(win_splice(w, front, 1, 6, &shift), 8, "the first kept frame is now seq 8");
	is_int(shift, 2, "kept frames moved by the 2 front frames");
	win_get_stats(w, &s);
	ok(s.oldest_seq == 6 && s.next_seq == 15 && s.send_seq == 6,
	   "the front starts where the host's gap ends (6), 9 frames held");
	is_int((long)s.dropped_frames, 5, "dropped 1..3 before, 4..5 now: 5 = the gap 1..5");
	is_int((long)s.dropped_bytes, 5 * 30000, "dropped payload bytes counted");
	win_get_stats(front, &s);
	ok(s.frames == 0, "the front window is emptied");
	ok(walk_is(w, 6, tags, 9), "front frames, then the kept ones, resealed 6..14");
	is_int(win_ack(w, 14), 0, "the host ACKs the spliced frames");

	/* a second gap: frames queued while away again, keep_from drops more */
	for (int i = 0; i < 4; i++)
		put(w, 30000, (uint8_t)(9 + i));	/* 15..18 */
	put(front, 30000, 102);
	is_int(win_resume(w, 15), 0, "resume at 15, nothing dropped yet");
	is_int(win_splice(w, front, 15, 16, &shift), 17,
	       "keep_from 16: 15 dropped, the front takes 16, the kept start at 17");
	win_get_stats(w, &s);
	is_int((long)s.dropped_frames, 6, "the frame below keep_from is counted");
	ok(walk_is(w, 16, tags2, 4), "seqs 16..19 after the 1-frame gap at 15");

	/* delivered frames below the resume point are not loss */
	win_ack(w, 19);
	for (int i = 0; i < 3; i++)
		put(w, 100, 7);				/* 20..22 */
	for (int i = 0; i < 3; i++) {
		win_next(w, &len, &seq, NULL);
		win_sent(w);
	}
	put(front, 100, 103);
	is_int(win_resume(w, 22), 0, "the host holds 20 and 21");
	is_int(win_splice(w, front, 22, 0, &shift), 23, "only 22 is moved");
	win_get_stats(w, &s);
	ok(s.dropped_frames == 6 && s.acked == 21 && s.oldest_seq == 22 && s.frames == 2,
	   "20, 21 delivered (ACKed, not counted), front 22, kept 23");

	is_int(win_new(400000, 16, &big), 0, "a larger front");
	for (int i = 0; i < 10; i++)
		put(big, 30000, 1);
	is_int(win_splice(w, big, 22, 0, &shift), -EMSGSIZE, "a front larger than the "
	       "window is refused");
	win_get_stats(w, &s);
	ok(s.frames == 2 && s.oldest_seq == 22, "and the window is unchanged");
	win_free(big);
	win_free(front);
	win_free(w);
}

/* An EPOCH-like frame whose payload is @n bytes of @tag. */
static void put_typed(struct win *w, uint8_t type, uint32_t n, uint8_t tag)
{
	uint8_t buf[128];

	memset(buf, tag, n);
	win_append(w, type, buf, n);
}

static void test_types_and_track(void)
{
	struct win *w, *front;
	const uint8_t *p;
	uint32_t len = 0;
	int64_t shift;

	is_int(win_new(MB, 8, &w), 0, "window for tracking");
	win_new(MB, 8, &front);
	ok(!win_last_before(w, 1, &len), "nothing tracked: NULL");
	win_track(w, SMP_EPOCH);
	ok(!win_last_before(w, 1, &len), "no EPOCH yet: NULL");
	put_typed(w, SMP_FORMAT, 10, 1);	/* 1 */
	put_typed(w, SMP_EPOCH, 32, 0xe0);	/* 2 */
	put_typed(w, SMP_STACKS, 40, 2);	/* 3 */
	put_typed(w, SMP_PAGE, 40, 3);		/* 4 */
	put_typed(w, SMP_EPOCH, 32, 0xe1);	/* 5 */
	put_typed(w, SMP_PAGE, 40, 3);		/* 6 */
	is_int(win_held_types(w, 1, 7), (1 << SMP_FORMAT) | (1 << SMP_EPOCH) |
	       (1 << SMP_STACKS) | (1 << SMP_PAGE), "held types of 1..6");
	is_int(win_held_types(w, 3, 5), (1 << SMP_STACKS) | (1 << SMP_PAGE),
	       "held types of 3..4");
	is_int(win_held_types(w, 0, 100), win_held_types(w, 1, 7), "clamped to what is held");
	p = win_last_before(w, 5, &len);
	ok(p && len == 32 && p[0] == 0xe0, "the EPOCH in effect at 5 is the held seq 2");
	p = win_last_before(w, 6, &len);
	ok(p && p[0] == 0xe1, "at 6, seq 5");
	for (int i = 0; i < 6; i++) {
		win_next(w, &len, &(uint64_t){ 0 }, NULL);
		win_sent(w);
	}
	win_ack(w, 2);
	p = win_last_before(w, 4, &len);
	ok(p && len == 32 && p[0] == 0xe0, "ACKed, seq 2 is remembered: still in effect at 4");
	win_ack(w, 5);
	p = win_last_before(w, 6, &len);
	ok(p && p[0] == 0xe1, "the newest that left is remembered");
	for (int i = 0; i < 10; i++)
		put_typed(w, SMP_PAGE, 40, 4);	/* 7..16: the window drops 6..8 */
	p = win_last_before(w, 12, &len);
	ok(p && p[0] == 0xe1, "after drops the epoch in effect is still known");
	put_typed(w, SMP_EPOCH, 32, 0xe2);	/* 17, drops 9 */
	put_typed(w, SMP_PAGE, 40, 4);		/* 18, drops 10 */
	is_int(win_resume(w, 6), 0, "resume at 6, below the window");
	put_typed(front, SMP_FORMAT, 10, 9);
	/* 11..16 and 17 (the EPOCH) go to make room; 18 is kept */
	is_int(win_splice(w, front, 6, 18, &shift), 19, "splice keeping only 18");
	p = win_last_before(w, 19, &len);
	ok(p && p[0] == 0xe2, "an EPOCH dropped by the splice is remembered");
	put_typed(w, SMP_EPOCH, 100, 0xe3);	/* too large to remember */
	win_next(w, &len, &(uint64_t){ 0 }, NULL);
	win_sent(w);
	win_next(w, &len, &(uint64_t){ 0 }, NULL);
	win_sent(w);
	win_next(w, &len, &(uint64_t){ 0 }, NULL);
	win_sent(w);
	win_ack(w, 20);
	ok(!win_last_before(w, 21, &len), "an EPOCH too large to remember: unknown, NULL");
	win_reset(w);
	ok(!win_last_before(w, 1, &len), "forgotten by win_reset()");
	win_free(front);
	win_free(w);
}

int main(void)
{
	test_types_and_track();
	test_splice();
	test_basic();
	test_drop_oldest_bytes();
	test_drop_oldest_count();
	test_wrap_integrity();
	test_reset();
	return tap_done();
}
