/* SPDX-License-Identifier: MIT */
/*
 * window.h - the bounded resend window (PROTOCOL.md sections 3 and 3.2).
 *
 * Overview
 * --------
 * Every sequenced frame the agent builds lives in the window, sealed, until the host
 * ACKs it. The window is one byte arena allocated at start (frames are stored whole
 * and contiguous, so a frame can be written to the port straight from it) and a ring
 * of frame descriptors, both bounded (bytes and count). Sequence numbers are
 * contiguous from the oldest frame to the newest, so a frame is found by its seq.
 *
 * Life cycle of a frame:
 *   win_reserve()  space for header + payload, dropping the OLDEST frames when either
 *                  bound is hit (counted: dropped_frames / dropped_bytes);
 *   win_commit()   the caller wrote the payload: seal it with the next seq;
 *   win_next()     the sender takes frames in seq order from the send cursor;
 *                  win_sent() advances the cursor and the highest seq ever sent;
 *   win_ack()      the host made frames <= acked durable: they leave the window;
 *   win_resume()   after a WELCOME: the cursor goes back to resume_seq (or the oldest
 *                  frame still held); frames sent before are resealed RESENT.
 *   win_reset()    a fresh stream: everything is dropped, seq starts again at 1.
 *
 * Single-threaded; nothing here does I/O.
 */
#ifndef SMG_WINDOW_H
#define SMG_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct win;

struct win_stats {
	uint64_t next_seq;		/* seq the next committed frame gets */
	uint64_t oldest_seq;		/* seq of the oldest frame held (= next_seq if empty) */
	uint64_t send_seq;		/* next seq the sender will take */
	uint64_t sent_hi;		/* highest seq ever handed to the sender, 0 if none */
	uint64_t acked;			/* highest acked seq */
	uint32_t frames;		/* frames held */
	size_t bytes;			/* bytes held (headers included) */
	uint64_t dropped_frames;	/* dropped unacknowledged, this stream */
	uint64_t dropped_bytes;		/* their payload bytes */
	uint64_t resent_frames;		/* frames taken again after a resume */
};

/* Create a window of at most @max_bytes arena bytes and @max_frames frames.
 * Free with win_free(). -EINVAL when a bound is too small for one largest frame. */
int win_new(size_t max_bytes, uint32_t max_frames, struct win **ret);
void win_free(struct win *w);

/*
 * Reserve a frame with @payload_len bytes of payload. *ret_frame points to the frame
 * start: the caller writes the payload at *ret_frame + SMP_HDR_SIZE, then calls
 * win_commit() before any other call on @w. Drops the oldest frames to make room.
 * -EMSGSIZE when the frame can never fit.
 */
int win_reserve(struct win *w, uint32_t payload_len, uint8_t **ret_frame);
/* Seal the reserved frame (@payload_len <= the reserved size). Returns its seq. */
uint64_t win_commit(struct win *w, uint8_t type, uint32_t payload_len);

/* Give the reservation up (the payload could not be encoded); nothing is committed. */
void win_cancel(struct win *w);

/* Encode-and-copy convenience: reserve, copy @payload, commit. Returns seq or -errno. */
int64_t win_append(struct win *w, uint8_t type, const void *payload, uint32_t len);

/*
 * The next frame to send, or NULL when the cursor is at the end. *ret_resend is set
 * when the frame was sent before (its header now carries SMP_FLAG_RESENT). The pointer
 * is valid until the next win_reserve/win_ack/win_reset.
 */
const uint8_t *win_next(struct win *w, uint32_t *ret_len, uint64_t *ret_seq,
			int *ret_resend);
/* The frame returned by win_next() was handed to the sender. */
void win_sent(struct win *w);

/* Drop frames <= @acked. -ERANGE when @acked is above the highest seq sent. */
int win_ack(struct win *w, uint64_t acked);
/*
 * Move the send cursor to @resume_seq for a new connection. -ERANGE when the resume
 * point is invalid (0, or above sent_hi + 1): the caller starts a fresh stream. A resume
 * point older than the window is fine: sending restarts at the oldest frame (the host
 * sees the gap).
 */
int win_resume(struct win *w, uint64_t resume_seq);
/* Drop every frame and restart at seq 1 with zeroed counters (a fresh stream).
 * Returns the number of frames that were dropped unacknowledged. */
uint64_t win_reset(struct win *w);

/*
 * After a resume at @resume_seq: will the host miss any frame of the range [@lo, @hi]
 * (e.g. a metadata snapshot)? True when a frame in it that the host does not hold
 * (>= @resume_seq) has already left the window (dropped, never ACKed).
 */
bool win_missing(const struct win *w, uint64_t lo, uint64_t hi, uint64_t resume_seq);

void win_get_stats(const struct win *w, struct win_stats *ret);

#endif
