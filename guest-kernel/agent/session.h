/* SPDX-License-Identifier: MIT */
/*
 * session.h - one connection's protocol state (PROTOCOL.md section 3): the HELLO /
 * WELCOME handshake, ACKs, what goes out next, and the host's input judged hostile.
 *
 * Overview
 * --------
 * A session sits between the window (frames to deliver) and the port (bytes). It has
 * three states: DOWN (no host), HELLO (HELLO queued or sent, waiting for WELCOME) and
 * UP (sending window frames from the resume point). It does no I/O itself: the caller
 * hands it the host's bytes (sess_input) and a writer (sess_flush), and acts on the
 * returned SESS_ACT_* bits (restart the handshake, start a fresh stream, close).
 *
 * The host's clock probes (TIME, PROTOCOL.md 4.11) are answered from sess_input()
 * itself: the caller's time callback writes the trace marker, and the TIME_REPLY goes
 * into the output batch at once, ahead of any window frame not yet taken, so that the
 * host's round trip stays short. At most SESS_TIME_PER_S probes a second get a marker
 * (the rest are answered -EBUSY), and a reply that finds the batch full waits in one
 * slot (an older one waiting there is dropped: the host then expires its probe).
 */
#ifndef SMG_SESSION_H
#define SMG_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "batch.h"
#include "proto.h"
#include "window.h"

enum sess_state {
	SESS_DOWN,
	SESS_HELLO,
	SESS_UP,
};

/* What sess_input() asks the caller to do (bits). */
enum {
	SESS_ACT_WELCOME = 1 << 0,	/* a valid WELCOME: the stream resumes */
	SESS_ACT_REHELLO = 1 << 1,	/* bad input: resend HELLO, same stream */
	SESS_ACT_FRESH	 = 1 << 2,	/* invalid WELCOME: start a fresh stream */
	SESS_ACT_CLOSE	 = 1 << 3,	/* another major version: close, retry later */
};

#define SESS_HELLO_MAX (SMP_HDR_SIZE + SMP_HELLO_FIXED + 3 * 255 + SMP_HELLO_PACING_SIZE)
#define SESS_TIME_PER_S 16u
#define SESS_TIME_REPLY_MAX (SMP_HDR_SIZE + SMP_TIME_SIZE)

/* Write the marker of @probe_id into the trace: 0 or -errno. */
typedef int (*sess_time_fn)(void *ctx, uint64_t probe_id);
/* Host-to-guest frames are tiny; this bounds the decoder's buffer. */
#define SESS_INPUT_MAX 4096u

struct session {
	struct win *win;
	struct batch out;
	struct smp_decoder *dec;
	enum sess_state state;
	uint8_t hello[SESS_HELLO_MAX];
	size_t hello_len;
	bool hello_queued;
	uint32_t host_max_payload;
	uint64_t resume_seq;		/* of the last WELCOME */
	uint8_t host_minor;		/* the last WELCOME's minor version */
	bool crc32c_only;		/* never seal with XXH64, whatever the host checks */
	uint64_t stall_seq;		/* sess_stall(): send nothing from here on, 0: off */
	bool bad_logged;		/* this run of bad input was logged */
	sess_time_fn time_fn;		/* NULL: TIME is ignored as unknown */
	void *time_ctx;
	uint8_t time_reply[SESS_TIME_REPLY_MAX];	/* a reply the batch had no room for */
	bool time_reply_queued;
	const uint8_t *arena;		/* ARENA frames to send (sess_set_arena()) */
	size_t arena_len;
	size_t arena_off;		/* ... the first one not yet in the batch */
	uint64_t time_sec;		/* CLOCK_MONOTONIC second of the rate limit */
	unsigned time_in_sec;		/* markers written in it */

	uint64_t welcomes;
	uint64_t acks;
	uint64_t bad_input;		/* garbage, bad checksums, malformed frames */
	uint64_t unknown;		/* frames of unknown type, ignored */
	uint64_t skipped_oversize;	/* frames above the host's max_payload */
	uint64_t time_probes;		/* TIME frames answered */
	uint64_t time_limited;		/* ... of which beyond SESS_TIME_PER_S (-EBUSY) */
	uint64_t time_replies_dropped;	/* replies that never left (batch full) */
};

int sess_init(struct session *s, struct win *w);
void sess_done(struct session *s);

/* The HELLO frame (sealed, seq 0) this session sends on every (re)start. */
void sess_set_hello(struct session *s, const uint8_t *frame, size_t len);
/*
 * Send @len bytes of sealed ARENA frames (arena.h) ahead of the window frames not yet
 * taken, once the session is UP. @frames is the caller's and must stay valid until the
 * next sess_set_arena() or sess_down(), which forgets them (the caller announces again
 * after the next WELCOME). A call while older ones are going out replaces them: the
 * batch takes whole frames only, so the host sees whole frames of one list or the
 * other.
 */
void sess_set_arena(struct session *s, const uint8_t *frames, size_t len);
/* Answer TIME through @fn (see the overview); NULL: do not. */
void sess_set_time(struct session *s, sess_time_fn fn, void *ctx);
/* A host is there: queue HELLO and wait for WELCOME. */
void sess_start(struct session *s);
/* The host went away: forget the bytes in flight and the decoder's state. */
void sess_down(struct session *s);

/* Feed bytes from the host. Returns SESS_ACT_* bits (0: nothing to do). */
int sess_input(struct session *s, const void *buf, size_t len);

/*
 * A test hook: send no sequenced frame from @seq on, and do not act on a gap, until
 * sess_stall(s, 0) (as if the host stopped reading there).
 */
void sess_stall(struct session *s, uint64_t seq);

/* Anything to write now? */
bool sess_want_write(struct session *s);
/*
 * Write what is due: HELLO, TIME_REPLY, ARENA and resent frames through the output
 * batch; window frames sent for the first time, when nothing is ahead of them, in
 * runs of frames adjacent in the window, straight from it (one write of at most
 * BATCH_WRITE_MAX bytes each, no copy). 0 when all is out, -EAGAIN when
 * the writer would block, or the writer's error. No frame beyond a gap is taken:
 * SESS_FLUSH_GAP when everything before it is out (win_gap_from()), and what the host
 * lacks must go ahead of the frames after it (agent_after_gap()); then flush again.
 */
#define SESS_FLUSH_GAP 1
int sess_flush(struct session *s, batch_write_fn fn, void *ctx);

#endif
