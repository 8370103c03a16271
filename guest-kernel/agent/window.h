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
 *   win_splice()   after a gap: frames the host must get first (a new metadata
 *                  snapshot) go ahead of the held frames it lacks, seqs stay contiguous.
 *
 * For deciding what goes ahead (gap.h): win_gap_types() and win_held_types() say
 * which types were dropped or would be, and win_track() keeps a copy of the newest
 * frame of one type (EPOCH) that left the window, so that win_last_before() gives the
 * EPOCH in effect at any held frame.
 *
 * Post-mortem recovery (PROTOCOL.md 4.12): the arena is a page-aligned mapping of its
 * own behind a page with the recovery header, which holds the current stream's HELLO
 * (win_set_hello()). The agent locks the mapping and announces its pages' physical
 * addresses (arena.h, win_map()); a host with a dump of the panicked guest reads the
 * frames not yet delivered from there. win_reset() and win_splice() zero the bytes
 * they renumber, so the arena never holds a stale frame under a current seq.
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
/*
 * Would a frame of @payload_len bytes of payload fit now without dropping any held
 * frame? (For a caller that reserves before it knows whether it has anything to put
 * there, as a ring-buffer read straight into the window: it reserves only then.)
 */
bool win_fits(const struct win *w, uint32_t payload_len);
/* Seal the reserved frame (@payload_len <= the reserved size). Returns its seq. */
uint64_t win_commit(struct win *w, uint8_t type, uint32_t payload_len);

/*
 * Seal frames from now on with the cheaper XXH64 payload checksum (@on) or CRC32C
 * (PROTOCOL.md 2): on only after the host's WELCOME says it checks XXH64. Frames
 * already sealed keep theirs; win_next() reseals one with CRC32C when @on is off,
 * so a frame never reaches a host that cannot check it.
 */
void win_set_xxh64(struct win *w, bool on);

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

void win_get_stats(const struct win *w, struct win_stats *ret);

/* The mapping (recovery header page, then the arena) and the page size it uses. */
void win_map(const struct win *w, void **ret_addr, size_t *ret_len, size_t *ret_page_size);
/* Keep a copy of the stream's sealed HELLO frame in the recovery header, published
 * whole (two slots). -EMSGSIZE when larger than SMP_ARENA_HELLO_SLOT. win_reset()
 * clears it: the caller sets the new stream's HELLO after. */
int win_set_hello(struct win *w, const uint8_t *frame, size_t len);

/*
 * Where the gap the host will see starts (0: none): the first frame dropped before
 * it was handed to the sender, or after win_resume() the resume point when frames
 * from there on are gone. Cleared by win_splice() and win_reset().
 */
uint64_t win_gap_from(const struct win *w);
/* 1 << type of every frame dropped unacknowledged since the last win_gap_seen(),
 * win_splice() or win_reset(): what the host may lack besides pages. */
uint64_t win_gap_types(const struct win *w);
/* The caller dealt with the gap (nothing it lacks needs sending again). */
void win_gap_seen(struct win *w);

/* 1 << type of every held frame of seq @from to @to - 1 (clamped to what is held). */
uint64_t win_held_types(const struct win *w, uint64_t from, uint64_t to);

/* Largest payload of a frame of the tracked type that win_track() remembers. */
#define WIN_TRACK_MAX 64u

/*
 * Remember the payload of the newest frame of @type (at most WIN_TRACK_MAX bytes) that
 * left the window, ACKed, dropped or spliced out, for win_last_before(). Forgotten by
 * win_reset().
 */
void win_track(struct win *w, uint8_t type);
/*
 * The payload of the newest frame of the tracked type with a seq below @seq (at least
 * the oldest seq held): a held one, else the one remembered when it left. NULL when
 * there is none in this stream, or the newest was too large to remember.
 */
const uint8_t *win_last_before(const struct win *w, uint64_t seq, uint32_t *ret_len);

/* The frame of @seq if it is still held, else NULL (valid as for win_next()). */
const uint8_t *win_frame(const struct win *w, uint64_t seq, uint32_t *ret_len);

/*
 * After a WELCOME at @resume_seq that leaves a gap (frames the host lacks were dropped,
 * so it may lack what they carried: formats, symbols, stack records), the frames of
 * @front must reach the host before the held frames it lacks. win_splice() rebuilds @w
 * as: the frames of @front, then the held frames >= @keep_from, all resealed with
 * contiguous seqs, so that the host sees one gap whose size is every frame it will
 * never get. Held frames below @resume_seq are delivered (dropped, not counted);
 * held frames the host lacks below @keep_from, and more of the oldest when @front and
 * the rest do not fit, are dropped and counted. Either way a frame of the tracked type
 * among them is remembered (win_track()). @front is emptied.
 *
 * Returns the seq the first kept held frame now has (or the next seq if none is
 * kept) and sets *ret_shift to the amount added to the seq of every kept frame
 * (a caller that remembers seqs of held frames moves them by it). -EMSGSIZE when
 * @front alone does not fit, -ENOMEM: @w is unchanged in both cases.
 */
int64_t win_splice(struct win *w, struct win *front, uint64_t resume_seq,
		   uint64_t keep_from, int64_t *ret_shift);

/*
 * The seq of the oldest held frame win_splice() would keep if @front_bytes bytes
 * (headers included) in @front_frames frames went ahead: for a caller that must add
 * a frame to the front that depends on where the kept frames start.
 */
uint64_t win_splice_first_kept(const struct win *w, size_t front_bytes,
			       uint32_t front_frames, uint64_t resume_seq);

#endif
