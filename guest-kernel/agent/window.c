// SPDX-License-Identifier: MIT
/*
 * window.c - the bounded resend window (see window.h).
 *
 * The arena is used as a circular buffer of whole frames. With `first` the oldest
 * descriptor and `last` the newest, the frames are either in one run
 * [first.off, last.end) (not wrapped: free space at the end and before first.off) or
 * in two runs (wrapped: the newest frames start again at 0, free space is
 * [last.end, first.off)). A frame is never split, so an unusable tail at the end of
 * the arena is simply skipped.
 *
 * Post-mortem recovery (PROTOCOL.md 4.12): the arena is its own mapping, page aligned,
 * behind one page holding the recovery header (the current stream's HELLO), so that
 * the host can find the frames in a dump of the guest's memory from the pages' guest
 * physical addresses (arena.h announces them). A dump reader takes every whole frame
 * it finds in the arena; for that to give only this stream's frames under their
 * current seqs, no stale frame may carry a seq of the current numbering: frames that
 * left the window keep seqs below the oldest held one, and the two operations that
 * restart or change the numbering, win_reset() and win_splice(), zero the bytes used
 * since the last zeroing (hiwater) before frames of the new numbering are written.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto.h"
#include "window.h"

struct win_desc {
	size_t off;
	uint32_t len;		/* whole frame, header included */
};


struct win {
	uint8_t *map;		/* header page(s), then the arena */
	size_t map_len;
	size_t page_size;
	uint8_t *arena;
	size_t cap;
	size_t hiwater;		/* arena bytes written since they were last zeroed */
	struct win_desc *desc;
	uint32_t max_frames;
	uint32_t first;		/* descriptor index of the oldest frame */
	uint32_t count;		/* frames held */
	size_t bytes;

	uint64_t oldest_seq;	/* seq of desc[first] */
	uint64_t send_seq;
	uint64_t sent_hi;
	uint64_t acked;
	uint8_t seal_flags;	/* SMP_FLAG_XXH64 once the host checks it (win_set_xxh64) */

	/* the reservation between win_reserve() and win_commit() */
	size_t res_off;
	uint32_t res_len;
	int reserved;

	uint64_t dropped_frames;
	uint64_t dropped_bytes;
	uint64_t resent_frames;
	uint64_t gap_from;	/* the first frame dropped before it was sent, 0: none */
	uint64_t gap_types;	/* 1 << type of every frame dropped since the gap was seen */

	/* win_track(): the newest frame of track_type that left, its payload */
	int track_type;		/* -1: none */
	int gone_state;		/* 0: none left yet, 1: gone_rec holds it, -1: too large */
	uint32_t gone_len;
	uint8_t gone_rec[WIN_TRACK_MAX];
};

/* The largest frame the window must always be able to hold. */
#define WIN_MIN_BYTES ((size_t)SMP_HDR_SIZE + SMP_MAX_PAYLOAD)

int win_new(size_t max_bytes, uint32_t max_frames, struct win **ret)
{
	long ps = sysconf(_SC_PAGESIZE);
	struct win *w;
	void *map;

	if (max_bytes < WIN_MIN_BYTES || max_frames < 2)
		return -EINVAL;
	if (ps < (long)SMP_ARENA_PAGE_MIN || ps > (long)SMP_ARENA_PAGE_MAX)
		return -ENOTSUP;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->page_size = (size_t)ps;
	/* one header page, then the arena rounded up to whole pages */
	w->map_len = w->page_size + (max_bytes + w->page_size - 1) / w->page_size *
		     w->page_size;
	map = mmap(NULL, w->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	w->desc = calloc(max_frames, sizeof(*w->desc));
	if (map == MAP_FAILED || !w->desc) {
		if (map != MAP_FAILED)
			munmap(map, w->map_len);
		free(w->desc);
		free(w);
		return -ENOMEM;
	}
	w->map = map;
	w->arena = w->map + w->page_size;
	smp_arena_hdr_init(w->map, (uint32_t)w->page_size, 1, max_bytes);
	w->cap = max_bytes;
	w->max_frames = max_frames;
	w->track_type = -1;
	w->oldest_seq = 1;
	w->send_seq = 1;
	*ret = w;
	return 0;
}

void win_free(struct win *w)
{
	if (!w)
		return;
	munmap(w->map, w->map_len);
	free(w->desc);
	free(w);
}

void win_map(const struct win *w, void **ret_addr, size_t *ret_len, size_t *ret_page_size)
{
	*ret_addr = w->map;
	*ret_len = w->map_len;
	*ret_page_size = w->page_size;
}

int win_set_hello(struct win *w, const uint8_t *frame, size_t len)
{
	return smp_arena_hdr_set_hello(w->map, frame, len);
}

/* Zero what frames were written to, before frames of a new numbering go there. */
static void zero_used(struct win *w)
{
	memset(w->arena, 0, w->hiwater);
	w->hiwater = 0;
}

static struct win_desc *desc_at(const struct win *w, uint32_t i)
{
	return &w->desc[(w->first + i) % w->max_frames];
}

static uint64_t next_seq(const struct win *w)
{
	return w->oldest_seq + w->count;
}

/* A held frame leaves the window: remember it if it is of the tracked type. */
static void note_gone(struct win *w, const struct win_desc *d)
{
	const uint8_t *f = w->arena + d->off;

	if (w->track_type < 0 || f[6] != (uint8_t)w->track_type)
		return;
	if (d->len - SMP_HDR_SIZE > WIN_TRACK_MAX) {
		w->gone_state = -1;
		return;
	}
	w->gone_len = d->len - SMP_HDR_SIZE;
	memcpy(w->gone_rec, f + SMP_HDR_SIZE, w->gone_len);
	w->gone_state = 1;
}

static void drop_oldest(struct win *w, int count_loss)
{
	struct win_desc *d = desc_at(w, 0);

	assert(w->count > 0);
	note_gone(w, d);
	if (count_loss) {
		w->dropped_frames++;
		w->dropped_bytes += d->len - SMP_HDR_SIZE;
		if (!w->gap_from && w->oldest_seq >= w->send_seq)
			w->gap_from = w->oldest_seq;
		if (w->arena[d->off + 6] < 64)
			w->gap_types |= 1ull << w->arena[d->off + 6];
	}
	w->bytes -= d->len;
	w->first = (w->first + 1) % w->max_frames;
	w->count--;
	w->oldest_seq++;
	if (w->send_seq < w->oldest_seq)
		w->send_seq = w->oldest_seq;
}

/* Where a frame of @need bytes can go now, or -1. */
static long find_space(const struct win *w, size_t need)
{
	const struct win_desc *first, *last;
	size_t end;

	if (w->count == 0)
		return need <= w->cap ? 0 : -1;
	first = desc_at(w, 0);
	last = desc_at(w, w->count - 1);
	end = last->off + last->len;
	if (last->off >= first->off) {
		/* one run: room after it, or wrap to the start */
		if (w->cap - end >= need)
			return (long)end;
		if (first->off >= need)
			return 0;
		return -1;
	}
	/* wrapped: room between the newest and the oldest */
	if (first->off - end >= need)
		return (long)end;
	return -1;
}

bool win_fits(const struct win *w, uint32_t payload_len)
{
	size_t need = (size_t)SMP_HDR_SIZE + payload_len;

	return payload_len <= SMP_MAX_PAYLOAD && w->count < w->max_frames &&
	       find_space(w, need) >= 0;
}

int win_reserve(struct win *w, uint32_t payload_len, uint8_t **ret_frame)
{
	size_t need = (size_t)SMP_HDR_SIZE + payload_len;
	long off;

	assert(!w->reserved);
	if (payload_len > SMP_MAX_PAYLOAD || need > w->cap)
		return -EMSGSIZE;
	for (;;) {
		if (w->count < w->max_frames) {
			off = find_space(w, need);
			if (off >= 0)
				break;
		}
		drop_oldest(w, 1);
	}
	w->res_off = (size_t)off;
	w->res_len = (uint32_t)need;
	if (w->hiwater < (size_t)off + need)
		w->hiwater = (size_t)off + need;
	w->reserved = 1;
	*ret_frame = w->arena + off;
	return 0;
}

uint64_t win_commit(struct win *w, uint8_t type, uint32_t payload_len)
{
	struct win_desc *d;
	uint64_t seq = next_seq(w);
	long r;

	assert(w->reserved);
	assert((size_t)SMP_HDR_SIZE + payload_len <= w->res_len);
	w->reserved = 0;
	r = smp_frame_seal(w->arena + w->res_off, type, w->seal_flags, seq, payload_len);
	assert(r > 0);
	(void)r;
	d = &w->desc[(w->first + w->count) % w->max_frames];
	d->off = w->res_off;
	d->len = SMP_HDR_SIZE + payload_len;
	w->count++;
	w->bytes += d->len;
	return seq;
}

void win_set_xxh64(struct win *w, bool on)
{
	w->seal_flags = on ? SMP_FLAG_XXH64 : 0;
}

void win_cancel(struct win *w)
{
	assert(w->reserved);
	w->reserved = 0;
}

int64_t win_append(struct win *w, uint8_t type, const void *payload, uint32_t len)
{
	uint8_t *f;
	int r = win_reserve(w, len, &f);

	if (r < 0)
		return r;
	if (len)
		memcpy(f + SMP_HDR_SIZE, payload, len);
	return (int64_t)win_commit(w, type, len);
}

const uint8_t *win_next(struct win *w, uint32_t *ret_len, uint64_t *ret_seq,
			int *ret_resend)
{
	struct win_desc *d;
	uint8_t *f, want;
	int resend;

	if (w->send_seq < w->oldest_seq)
		w->send_seq = w->oldest_seq;
	if (w->send_seq >= next_seq(w))
		return NULL;
	d = desc_at(w, (uint32_t)(w->send_seq - w->oldest_seq));
	f = w->arena + d->off;
	resend = w->send_seq <= w->sent_hi;
	/* RESENT once sent before; XXH64 only while this host checks it */
	want = (uint8_t)((f[7] | (resend ? SMP_FLAG_RESENT : 0)) &
			 (SMP_FLAG_RESENT | w->seal_flags));
	if (want != f[7])
		smp_frame_seal(f, f[6], want, w->send_seq, d->len - SMP_HDR_SIZE);
	*ret_len = d->len;
	*ret_seq = w->send_seq;
	if (ret_resend)
		*ret_resend = resend;
	return f;
}

void win_sent(struct win *w)
{
	assert(w->send_seq < next_seq(w));
	if (w->send_seq <= w->sent_hi)
		w->resent_frames++;
	else
		w->sent_hi = w->send_seq;
	w->send_seq++;
}

int win_ack(struct win *w, uint64_t acked)
{
	if (acked > w->sent_hi)
		return -ERANGE;
	if (acked > w->acked)
		w->acked = acked;
	while (w->count > 0 && w->oldest_seq <= acked)
		drop_oldest(w, 0);
	return 0;
}

int win_resume(struct win *w, uint64_t resume_seq)
{
	if (resume_seq == 0 || resume_seq > w->sent_hi + 1)
		return -ERANGE;
	w->send_seq = resume_seq < w->oldest_seq ? w->oldest_seq : resume_seq;
	/* what this host will never get starts at its resume point, if anywhere */
	w->gap_from = resume_seq < w->oldest_seq ? resume_seq : 0;
	return 0;
}

uint64_t win_reset(struct win *w)
{
	uint64_t n = w->count;

	assert(!w->reserved);
	/* the old stream's HELLO and frames must not be read as the new one's */
	smp_arena_hdr_clear_hello(w->map);
	zero_used(w);
	w->first = 0;
	w->count = 0;
	w->bytes = 0;
	w->oldest_seq = 1;
	w->send_seq = 1;
	w->sent_hi = 0;
	w->acked = 0;
	w->dropped_frames = 0;
	w->dropped_bytes = 0;
	w->resent_frames = 0;
	w->gone_state = 0;
	win_gap_seen(w);
	return n;
}

void win_get_stats(const struct win *w, struct win_stats *ret)
{
	ret->next_seq = next_seq(w);
	ret->oldest_seq = w->oldest_seq;
	ret->send_seq = w->send_seq < w->oldest_seq ? w->oldest_seq : w->send_seq;
	ret->sent_hi = w->sent_hi;
	ret->acked = w->acked;
	ret->frames = w->count;
	ret->bytes = w->bytes;
	ret->dropped_frames = w->dropped_frames;
	ret->dropped_bytes = w->dropped_bytes;
	ret->resent_frames = w->resent_frames;
}

uint64_t win_gap_from(const struct win *w)
{
	return w->gap_from;
}

uint64_t win_gap_types(const struct win *w)
{
	return w->gap_types;
}

void win_gap_seen(struct win *w)
{
	w->gap_from = 0;
	w->gap_types = 0;
}

uint64_t win_held_types(const struct win *w, uint64_t from, uint64_t to)
{
	uint64_t types = 0;

	if (from < w->oldest_seq)
		from = w->oldest_seq;
	if (to > next_seq(w))
		to = next_seq(w);
	for (uint64_t seq = from; seq < to; seq++) {
		uint8_t t = w->arena[desc_at(w, (uint32_t)(seq - w->oldest_seq))->off + 6];

		if (t < 64)
			types |= 1ull << t;
	}
	return types;
}

void win_track(struct win *w, uint8_t type)
{
	w->track_type = type;
	w->gone_state = 0;
}

const uint8_t *win_last_before(const struct win *w, uint64_t seq, uint32_t *ret_len)
{
	if (w->track_type < 0)
		return NULL;
	if (seq > next_seq(w))
		seq = next_seq(w);
	for (uint64_t s = seq; s-- > w->oldest_seq;) {
		const struct win_desc *d = desc_at(w, (uint32_t)(s - w->oldest_seq));
		const uint8_t *f = w->arena + d->off;

		if (f[6] == (uint8_t)w->track_type) {
			*ret_len = d->len - SMP_HDR_SIZE;
			return f + SMP_HDR_SIZE;
		}
	}
	if (w->gone_state != 1)
		return NULL;
	*ret_len = w->gone_len;
	return w->gone_rec;
}

const uint8_t *win_frame(const struct win *w, uint64_t seq, uint32_t *ret_len)
{
	const struct win_desc *d;

	if (seq < w->oldest_seq || seq >= next_seq(w))
		return NULL;
	d = desc_at(w, (uint32_t)(seq - w->oldest_seq));
	if (ret_len)
		*ret_len = d->len;
	return w->arena + d->off;
}

/* The first held frame the host lacks after a WELCOME at @resume_seq. */
static uint64_t first_lacking(const struct win *w, uint64_t resume_seq)
{
	return resume_seq > w->oldest_seq ? resume_seq : w->oldest_seq;
}

uint64_t win_splice_first_kept(const struct win *w, size_t front_bytes,
			       uint32_t front_frames, uint64_t resume_seq)
{
	uint64_t lo = first_lacking(w, resume_seq), seq = next_seq(w);
	size_t bytes = front_bytes;
	uint32_t frames = front_frames;

	/* Rebuilt from offset 0 without wrapping: fitting is a plain sum. */
	while (seq > lo) {
		const struct win_desc *d = desc_at(w, (uint32_t)(seq - 1 - w->oldest_seq));

		if (bytes + d->len > w->cap || frames + 1 > w->max_frames)
			break;
		bytes += d->len;
		frames++;
		seq--;
	}
	return seq;
}

static void reseal_into(uint8_t *arena, size_t *off, struct win_desc *d,
			const uint8_t *frame, uint32_t len, uint64_t seq, uint8_t flags)
{
	long r;

	memcpy(arena + *off, frame, len);
	r = smp_frame_seal(arena + *off, frame[6], flags, seq, len - SMP_HDR_SIZE);
	assert(r > 0);
	(void)r;
	d->off = *off;
	d->len = len;
	*off += len;
}

int64_t win_splice(struct win *w, struct win *front, uint64_t resume_seq,
		   uint64_t keep_from, int64_t *ret_shift)
{
	uint64_t lo = first_lacking(w, resume_seq), nx = next_seq(w), first, seq;
	struct win_desc *desc;
	uint8_t *arena;
	size_t off = 0;
	uint32_t n = 0;

	assert(!w->reserved && !front->reserved);
	if (front->bytes > w->cap || front->count > w->max_frames)
		return -EMSGSIZE;
	first = win_splice_first_kept(w, front->bytes, front->count, resume_seq);
	if (first < keep_from)
		first = keep_from < nx ? keep_from : nx;
	arena = malloc(w->cap);
	desc = calloc(w->max_frames, sizeof(*desc));
	if (!arena || !desc) {
		free(arena);
		free(desc);
		return -ENOMEM;
	}
	/*
	 * The host expects @resume_seq; it will never get the frames from there to
	 * first - 1 (dropped before, or now): that is the gap it sees and records, so the
	 * front frames take the seqs from @first on.
	 */
	for (uint32_t i = 0; i < front->count; i++, n++) {
		const struct win_desc *d = desc_at(front, i);

		reseal_into(arena, &off, &desc[n], front->arena + d->off, d->len, first + n,
			    w->seal_flags);
	}
	for (seq = first; seq < nx; seq++, n++) {
		const struct win_desc *d = desc_at(w, (uint32_t)(seq - w->oldest_seq));

		reseal_into(arena, &off, &desc[n], w->arena + d->off, d->len,
			    seq + front->count, w->seal_flags);
	}
	for (seq = w->oldest_seq; seq < first; seq++) {
		const struct win_desc *d = desc_at(w, (uint32_t)(seq - w->oldest_seq));

		note_gone(w, d);
		if (seq < lo)
			continue;	/* the host's (below its resume point) */
		w->dropped_frames++;
		w->dropped_bytes += d->len - SMP_HDR_SIZE;
	}
	if (ret_shift)
		*ret_shift = (int64_t)front->count;
	/*
	 * The rebuilt frames go back into the same (locked, announced) arena. Zero first:
	 * a held frame's old copy would carry a seq that now names another frame.
	 */
	zero_used(w);
	memcpy(w->arena, arena, off);
	w->hiwater = off;
	free(arena);
	free(w->desc);
	w->desc = desc;
	w->first = 0;
	w->count = n;
	w->bytes = off;
	w->oldest_seq = first;
	w->send_seq = first;
	/* frames below the resume point are the host's; from @first on all is new */
	if (resume_seq - 1 > w->acked)
		w->acked = resume_seq - 1;
	if (w->sent_hi > first - 1)
		w->sent_hi = first - 1;
	win_gap_seen(w);
	seq = first + front->count;
	win_reset(front);
	return (int64_t)seq;
}
