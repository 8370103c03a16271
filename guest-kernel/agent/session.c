// SPDX-License-Identifier: MIT
/*
 * session.c - handshake, ACKs and output of one connection (see session.h).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "log.h"
#include "session.h"

/* The whole length of a frame this agent sealed (header + payload). */
static uint32_t frame_len(const uint8_t *f)
{
	return SMP_HDR_SIZE + ((uint32_t)f[8] | (uint32_t)f[9] << 8 |
			       (uint32_t)f[10] << 16 | (uint32_t)f[11] << 24);
}
#include "util.h"

int sess_init(struct session *s, struct win *w)
{
	int r;

	memset(s, 0, sizeof(*s));
	s->win = w;
	s->host_max_payload = SMP_MAX_PAYLOAD;
	r = batch_init(&s->out);
	if (r < 0)
		return r;
	s->dec = smp_decoder_new(SESS_INPUT_MAX);
	if (!s->dec) {
		batch_done(&s->out);
		return -ENOMEM;
	}
	return 0;
}

void sess_done(struct session *s)
{
	batch_done(&s->out);
	smp_decoder_free(s->dec);
	s->dec = NULL;
}

void sess_set_hello(struct session *s, const uint8_t *frame, size_t len)
{
	if (len > sizeof(s->hello))
		len = sizeof(s->hello);	/* cannot happen: HELLO is bounded */
	memcpy(s->hello, frame, len);
	s->hello_len = len;
	/* the copy a dump reader replays the window's frames behind (window.h) */
	(void)win_set_hello(s->win, frame, len);
}

void sess_set_arena(struct session *s, const uint8_t *frames, size_t len)
{
	s->arena = frames;
	s->arena_len = len;
	s->arena_off = 0;
}

void sess_set_time(struct session *s, sess_time_fn fn, void *ctx)
{
	s->time_fn = fn;
	s->time_ctx = ctx;
}

void sess_start(struct session *s)
{
	s->state = SESS_HELLO;
	s->hello_queued = true;
}

void sess_down(struct session *s)
{
	s->bad_logged = false;
	s->state = SESS_DOWN;
	s->hello_queued = false;
	s->time_reply_queued = false;
	s->arena_len = s->arena_off = 0;	/* announced again after the next WELCOME */
	batch_clear(&s->out);
	smp_decoder_reset(s->dec);
}

static int on_welcome(struct session *s, const struct smp_frame *f)
{
	struct smp_welcome m;
	struct win_stats ws;
	int r;

	r = smp_welcome_decode(&m, f->payload, f->len);
	win_get_stats(s->win, &ws);
	if (r < 0) {
		/* resume_seq 0 is the one invalid value the decoder refuses by itself */
		s->bad_input++;
		if (f->len == 16 && f->payload[0] == 0 &&
		    memcmp(f->payload, "\0\0\0\0\0\0\0\0", 8) == 0) {
			log_error("host sent WELCOME with resume_seq 0 (invalid): "
				  "starting a fresh stream");
			return SESS_ACT_FRESH;
		}
		log_error("host sent a malformed WELCOME (%" PRIu32 " bytes): %s; "
			  "restarting the handshake", f->len, smp_strerror(r));
		return SESS_ACT_REHELLO;
	}
	r = win_resume(s->win, m.resume_seq);
	if (r < 0) {
		s->bad_input++;
		log_error("host WELCOME resume_seq %" PRIu64 " is outside what this stream "
			  "sent (1..%" PRIu64 "): starting a fresh stream",
			  m.resume_seq, ws.sent_hi + 1);
		return SESS_ACT_FRESH;
	}
	s->welcomes++;
	s->resume_seq = m.resume_seq;
	s->host_minor = f->minor;
	/* a 1.4 host checks XXH64 payload checksums, a quarter of CRC32C's cost here */
	win_set_xxh64(s->win, f->minor >= SMP_MINOR_XXH64 && !s->crc32c_only);
	s->host_max_payload = m.max_payload ? m.max_payload : SMP_MAX_PAYLOAD;
	s->state = SESS_UP;
	if (m.resume_seq < ws.oldest_seq)
		log_warning("host resumes at %" PRIu64 " but the window starts at %" PRIu64
			    ": %" PRIu64 " frames were dropped while it was away",
			    m.resume_seq, ws.oldest_seq, ws.oldest_seq - m.resume_seq);
	else
		log_info("host WELCOME: resuming at seq %" PRIu64 " (%" PRIu64 " to resend)",
			 m.resume_seq, ws.sent_hi + 1 - m.resume_seq);
	return SESS_ACT_WELCOME;
}

static int on_ack(struct session *s, const struct smp_frame *f)
{
	struct win_stats ws;
	uint64_t acked;
	int r;

	r = smp_ack_decode(&acked, f->payload, f->len);
	if (r < 0) {
		s->bad_input++;
		log_error("host sent a malformed ACK (%" PRIu32 " bytes); restarting the "
			  "handshake", f->len);
		return SESS_ACT_REHELLO;
	}
	if (s->state == SESS_DOWN)
		return 0;
	r = win_ack(s->win, acked);
	if (r < 0) {
		win_get_stats(s->win, &ws);
		s->bad_input++;
		log_error("host ACKed seq %" PRIu64 ", beyond the last frame sent (%" PRIu64
			  "); restarting the handshake", acked, ws.sent_hi);
		return SESS_ACT_REHELLO;
	}
	s->acks++;
	return 0;
}

/* Write the marker at once, then queue the reply right behind what the batch holds. */
static void on_time(struct session *s, const struct smp_frame *f)
{
	struct smp_time_reply m = { 0 };
	uint8_t payload[SMP_TIME_SIZE];
	uint8_t frame[SESS_TIME_REPLY_MAX];
	uint64_t sec = now_ms() / 1000;
	long n;

	if (smp_time_decode(&m.probe_id, f->payload, f->len) < 0) {
		s->bad_input++;
		log_once(LOG_WARNING, "host sent a malformed TIME (%" PRIu32 " bytes): "
			 "ignored", f->len);
		return;
	}
	if (sec != s->time_sec) {
		s->time_sec = sec;
		s->time_in_sec = 0;
	}
	if (s->time_in_sec >= SESS_TIME_PER_S) {
		m.status = -EBUSY;
		s->time_limited++;
	} else {
		s->time_in_sec++;
		m.status = s->time_fn(s->time_ctx, m.probe_id);
		if (m.status > 0)
			m.status = 0;
	}
	n = smp_time_reply_encode(&m, payload, sizeof(payload));
	if (n < 0)
		return;	/* cannot happen: the id is not 0, the status not positive */
	n = smp_frame_encode(frame, sizeof(frame), SMP_TIME_REPLY, 0, 0, payload, (size_t)n);
	if (n < 0)
		return;
	s->time_probes++;
	/* behind a HELLO still to go out (a restarted handshake): after it, in fill() */
	if (!s->time_reply_queued && !s->hello_queued &&
	    batch_add(&s->out, frame, (size_t)n) == 0)
		return;
	if (s->time_reply_queued)
		s->time_replies_dropped++;
	memcpy(s->time_reply, frame, (size_t)n);
	s->time_reply_queued = true;
}

static int on_frame(struct session *s, const struct smp_frame *f)
{
	const char *name = smp_type_name(f->type);

	if (f->type == SMP_WELCOME)
		return on_welcome(s, f);
	if (f->type == SMP_ACK)
		return on_ack(s, f);
	/* an agent without a trace marker never offered TIME: unknown to it */
	if (f->type == SMP_TIME && s->time_fn && s->state != SESS_DOWN) {
		on_time(s, f);
		return 0;
	}
	s->unknown++;
	if (name && f->type != SMP_TIME)
		log_warning("ignoring %s from the host (a guest-to-host message, "
			    "seq %" PRIu64 ")", name, f->seq);
	else
		log_warning("ignoring message of unknown type %u from the host "
			    "(%" PRIu32 " bytes)", f->type, f->len);
	return 0;
}

int sess_input(struct session *s, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int act = 0;

	while (len > 0) {
		size_t n = smp_decoder_feed(s->dec, p, len);

		p += n;
		len -= n;
		for (;;) {
			struct smp_frame f;
			size_t skipped;
			int r = smp_decoder_next(s->dec, &f, &skipped);

			if (r == 0)
				break;
			if (r == 1) {
				if (f.type == SMP_WELCOME || f.type == SMP_ACK)
					s->bad_logged = false;
				act |= on_frame(s, &f);
				continue;
			}
			if (r == -EPROTONOSUPPORT) {
				log_error("host speaks protocol version %u.%u, this agent "
					  "%u.%u: closing the connection", f.major, f.minor,
					  SMP_VERSION_MAJOR, SMP_VERSION_MINOR);
				smp_decoder_reset(s->dec);
				return act | SESS_ACT_CLOSE;
			}
			s->bad_input++;
			/* one line per run of bad input, until the host makes sense again */
			if (!s->bad_logged)
				log_error("bad input from the host: %s (%zu bytes skipped); "
					  "restarting the handshake", smp_strerror(r), skipped);
			s->bad_logged = true;
			act |= SESS_ACT_REHELLO;
		}
	}
	return act;
}

static void fill(struct session *s)
{
	if (s->state == SESS_DOWN)
		return;
	if (s->hello_queued) {
		if (batch_add(&s->out, s->hello, s->hello_len) < 0)
			return;
		s->hello_queued = false;
	}
	if (s->time_reply_queued) {
		if (batch_add(&s->out, s->time_reply, SESS_TIME_REPLY_MAX) < 0)
			return;
		s->time_reply_queued = false;
	}
	if (s->state != SESS_UP)
		return;
	/* ARENA (unsequenced) ahead of the window's frames, one whole frame at a time */
	while (s->arena_off < s->arena_len) {
		uint32_t n = frame_len(s->arena + s->arena_off);

		if (batch_add(&s->out, s->arena + s->arena_off, n) < 0)
			return;
		s->arena_off += n;
	}
	/* frames beyond a gap wait for what the host lacks to go ahead of them */
	while (batch_pending(&s->out) < BATCH_WRITE_MAX && !win_gap_from(s->win)) {
		const uint8_t *f;
		uint32_t len;
		uint64_t seq;
		int resend;

		f = win_next(s->win, &len, &seq, &resend);
		if (!f || (s->stall_seq && seq >= s->stall_seq))
			break;
		if (len - SMP_HDR_SIZE > s->host_max_payload) {
			s->skipped_oversize++;
			log_once(LOG_WARNING, "a %s frame of %u bytes is above the host's "
				 "max_payload %u: not sent (counted)",
				 smp_type_name(f[6]), len - SMP_HDR_SIZE, s->host_max_payload);
			win_sent(s->win);
			continue;
		}
		/* with nothing ahead of it, a first send goes straight from the window */
		if (batch_pending(&s->out) == 0 && !resend && len <= BATCH_WRITE_MAX)
			break;
		if (batch_add(&s->out, f, len) < 0)
			break;
		win_sent(s->win);
	}
}

void sess_stall(struct session *s, uint64_t seq)
{
	s->stall_seq = seq;
}

bool sess_want_write(struct session *s)
{
	struct win_stats ws;

	if (s->state == SESS_DOWN)
		return false;
	if (batch_pending(&s->out) > 0 || s->hello_queued || s->time_reply_queued)
		return true;
	if (s->state != SESS_UP)
		return false;
	if (s->arena_off < s->arena_len)
		return true;
	if (win_gap_from(s->win))
		return !s->stall_seq;	/* the gap is acted on in sess_flush() */
	win_get_stats(s->win, &ws);
	if (s->stall_seq && ws.send_seq >= s->stall_seq)
		return false;
	return ws.send_seq < ws.next_seq;
}

/*
 * With the batch empty: write the run of frames from the send cursor that lie next to
 * each other in the window's arena, sent for the first time, up to BATCH_WRITE_MAX
 * bytes, in one write straight from the window (no copy into the batch). The frame a
 * short write cuts is finished from the batch: it may leave the window (dropped when
 * the window is full) before the rest is written. Returns 1 when bytes were written,
 * 0 when there is no such frame, -EAGAIN or the writer's error.
 */
static int write_direct(struct session *s, batch_write_fn fn, void *ctx)
{
	const uint8_t *run = NULL;
	struct win_stats ws;
	size_t total = 0, done = 0;
	uint64_t seq;
	ssize_t n;

	if (s->state != SESS_UP || win_gap_from(s->win))
		return 0;
	win_get_stats(s->win, &ws);
	for (seq = ws.send_seq > ws.oldest_seq ? ws.send_seq : ws.oldest_seq;; seq++) {
		uint32_t len;
		const uint8_t *f = win_frame(s->win, seq, &len);

		if (!f || seq <= ws.sent_hi || (s->stall_seq && seq >= s->stall_seq) ||
		    len - SMP_HDR_SIZE > s->host_max_payload ||
		    total + len > BATCH_WRITE_MAX || (run && f != run + total))
			break;
		if (!run)
			run = f;
		total += len;
	}
	if (!total)
		return 0;
	n = fn(ctx, run, total);
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -EAGAIN;
	s->out.writes++;
	s->out.bytes += (size_t)n;
	while (done < (size_t)n) {
		uint32_t len;
		const uint8_t *f = win_next(s->win, &len, &seq, NULL);

		if (done + len > (size_t)n) {
			/* cannot fail: the batch is empty and holds a largest frame */
			int r = batch_add(&s->out, f + ((size_t)n - done), done + len - (size_t)n);

			assert(r == 0);
			(void)r;
		}
		win_sent(s->win);
		done += len;
	}
	return 1;
}

int sess_flush(struct session *s, batch_write_fn fn, void *ctx)
{
	for (;;) {
		int r;

		if (s->state == SESS_UP && batch_pending(&s->out) == 0 &&
		    win_gap_from(s->win) && !s->stall_seq)
			return SESS_FLUSH_GAP;
		fill(s);
		if (batch_pending(&s->out) == 0) {
			r = write_direct(s, fn, ctx);
			if (r <= 0)
				return r;
			continue;
		}
		r = batch_flush(&s->out, fn, ctx);
		if (r < 0)
			return r;
	}
}
