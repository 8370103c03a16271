// SPDX-License-Identifier: MIT
/*
 * stream.c - frame builders (see stream.h).
 */
#include <errno.h>
#include <string.h>

#include "stream.h"

void page_layout_default(struct page_layout *ret, uint32_t page_size)
{
	ret->page_size = page_size;
	ret->commit_off = 8;
	ret->commit_size = sizeof(long);
	ret->data_off = 8 + sizeof(long);
}

static uint64_t load_native(const uint8_t *p, uint32_t size)
{
	uint32_t v32;
	uint64_t v64;

	if (size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

static void store_native(uint8_t *p, uint32_t size, uint64_t v)
{
	uint32_t v32 = (uint32_t)v;

	if (size == 4)
		memcpy(p, &v32, 4);
	else
		memcpy(p, &v, 8);
}

bool page_take_caught_up(const struct page_layout *pl, uint8_t *page)
{
	uint64_t raw;

	if (pl->commit_off + pl->commit_size > pl->data_off)
		return false;
	raw = load_native(page + pl->commit_off, pl->commit_size);
	/* in the low 32 bits, as the other flags (see page_wire_len()) */
	if (!((uint32_t)raw & RB_CAUGHT_UP))
		return false;
	store_native(page + pl->commit_off, pl->commit_size, raw & ~(uint64_t)RB_CAUGHT_UP);
	return true;
}

int page_wire_len(const struct page_layout *pl, const uint8_t *page, size_t len,
		  size_t *ret_len, int *ret_missed)
{
	uint64_t raw;
	uint32_t commit;
	size_t data_max, n;

	if (len < pl->data_off || len > pl->page_size ||
	    pl->commit_off + pl->commit_size > pl->data_off)
		return -EBADMSG;
	raw = load_native(page + pl->commit_off, pl->commit_size);
	/*
	 * The flags are added to a long as the int (1 << 31): on 64-bit kernels that sign-
	 * extends, so only the low 32 bits are meaningful (as libtraceevent's kbuffer reads).
	 */
	commit = (uint32_t)raw & ~RB_MISSED_FLAGS;
	data_max = len - pl->data_off;
	if (commit > data_max)
		return -EBADMSG;
	n = pl->data_off + commit;
	if ((uint32_t)raw & RB_MISSED_STORED)
		n = n + pl->commit_size <= len ? n + pl->commit_size : len;
	if (commit == 0 && !((uint32_t)raw & RB_MISSED_FLAGS))
		n = 0;
	*ret_len = n;
	if (ret_missed)
		*ret_missed = !!((uint32_t)raw & RB_MISSED_EVENTS);
	return 0;
}

/* kernel/trace/ring_buffer.c's event types and time stamp shift (6.1) */
#define RB_TYPE_LEN_MAX		28
#define RB_TYPE_PADDING		29
#define RB_TYPE_TIME_EXTEND	30
#define RB_TYPE_TIME_STAMP	31
#define RB_TS_SHIFT		27

uint64_t page_first_ts(const struct page_layout *pl, const uint8_t *page, size_t len)
{
	uint32_t commit;
	uint64_t ts;
	size_t off, n;

	if (len < pl->data_off || pl->commit_off < 8 ||
	    pl->commit_off + pl->commit_size > pl->data_off)
		return 0;
	memcpy(&ts, page, 8);
	commit = (uint32_t)load_native(page + pl->commit_off, pl->commit_size) &
		 ~RB_MISSED_FLAGS;
	if (commit > len - pl->data_off)
		return ts;	/* as page_wire_len(): such a page is not sent either */
	off = pl->data_off;
	n = off + commit;
	while (off + 4 <= n) {
		uint32_t w, type_len, delta, arg = 0;

		memcpy(&w, page + off, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		type_len = w >> 27;
		delta = w & 0x7ffffffu;
#else
		type_len = w & 0x1f;
		delta = w >> 5;
#endif
		if (type_len <= RB_TYPE_LEN_MAX && type_len)
			return ts + delta;
		if (off + 8 > n)
			break;
		memcpy(&arg, page + off + 4, 4);
		switch (type_len) {
		case 0:
			return ts + delta;
		case RB_TYPE_TIME_EXTEND:
			ts += ((uint64_t)arg << RB_TS_SHIFT) + delta;
			off += 8;
			break;
		case RB_TYPE_TIME_STAMP:
			/* 59 bits of absolute time; the rest as rb_fix_abs_ts() takes it */
			ts = (((uint64_t)arg << RB_TS_SHIFT) | delta) |
			     (ts & ~((UINT64_C(1) << 59) - 1));
			off += 8;
			break;
		default:	/* padding: a discarded event (the kernel's reader adds no time) */
			if (!delta || arg > n - off - 4)
				return ts;	/* the rest of the page */
			off += 4 + (size_t)arg;
			break;
		}
	}
	return ts;
}

/* The bytes of @page that go on the wire (0: none), as page_wire_len() and at least
 * the minimum a PAGE carries. */
static int page_send_len(const struct page_layout *pl, const uint8_t *page, size_t len,
			 size_t *ret_len, int *ret_missed)
{
	size_t n;
	int r;

	r = page_wire_len(pl, page, len, &n, ret_missed);
	if (r < 0)
		return r;
	if (n && n < SMP_PAGE_HDR_MIN)
		n = SMP_PAGE_HDR_MIN <= len ? SMP_PAGE_HDR_MIN : n;
	*ret_len = n;
	return 0;
}

/* Encode the PAGE fixed part in front of the @n page bytes at frame + SMP_HDR_SIZE +
 * SMP_PAGE_FIXED and commit the frame, or cancel it. */
static int page_commit(struct win *w, uint32_t cpu, uint8_t *f, size_t n)
{
	struct smp_page m = { .cpu = cpu, .data = NULL, .data_len = n };
	long plen = smp_page_encode(&m, f + SMP_HDR_SIZE, SMP_PAGE_FIXED + n);

	if (plen < 0) {
		win_cancel(w);
		return (int)plen;
	}
	win_commit(w, SMP_PAGE, (uint32_t)plen);
	return 1;
}

int stream_page(struct win *w, const struct page_layout *pl, uint32_t cpu,
		const uint8_t *page, size_t len, int *ret_missed)
{
	size_t n;
	uint8_t *f;
	int r;

	r = page_send_len(pl, page, len, &n, ret_missed);
	if (r < 0 || n == 0)
		return r;
	r = win_reserve(w, (uint32_t)(SMP_PAGE_FIXED + n), &f);
	if (r < 0)
		return r;
	memcpy(f + SMP_HDR_SIZE + SMP_PAGE_FIXED, page, n);
	return page_commit(w, cpu, f, n);
}

int stream_page_reserved(struct win *w, const struct page_layout *pl, uint32_t cpu,
			 uint8_t *frame, size_t len, int *ret_missed)
{
	size_t n;
	int r;

	r = page_send_len(pl, frame + SMP_HDR_SIZE + SMP_PAGE_FIXED, len, &n, ret_missed);
	if (r < 0 || n == 0) {
		win_cancel(w);
		return r;
	}
	return page_commit(w, cpu, frame, n);
}

/*
 * The size of the record at @p (@avail bytes), 0 when it is not complete yet, -EBADMSG
 * when its header can never be valid.
 */
static long delta_rec_size(const uint8_t *p, size_t avail)
{
	uint32_t nr, kind;
	size_t size;

	if (avail < SMP_DELTA_HDR_SIZE)
		return 0;
	nr = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
	     (uint32_t)p[7] << 24;
	kind = (uint32_t)p[12] | (uint32_t)p[13] << 8 | (uint32_t)p[14] << 16 |
	       (uint32_t)p[15] << 24;
	if (kind == SMP_DELTA_STACK && (nr == 0 || nr > SMP_DELTA_MAX_DEPTH))
		return -EBADMSG;
	if (kind == SMP_DELTA_EPOCH && nr != 2)
		return -EBADMSG;
	if (kind != SMP_DELTA_STACK && kind != SMP_DELTA_EPOCH)
		return -EBADMSG;
	size = SMP_DELTA_HDR_SIZE + (size_t)nr * 8;
	return avail < size ? 0 : (long)size;
}

long stream_delta(struct win *w, const uint8_t *buf, size_t len, uint32_t max_payload,
		  struct delta_counts *counts, size_t *ret_bad_off)
{
	size_t off = 0, run = 0, run_len = 0;
	int64_t r;

	if (max_payload > STREAM_STACKS_MAX || max_payload == 0)
		max_payload = STREAM_STACKS_MAX;
	for (;;) {
		struct smp_delta_rec rec;
		size_t next = off;
		long size = delta_rec_size(buf + off, len - off);

		if (size == 0)
			break;
		if (size > 0 && smp_delta_next(buf, len, &next, &rec) == 1) {
			if (rec.kind == SMP_DELTA_STACK) {
				if (run_len + (size_t)size > max_payload) {
					r = win_append(w, SMP_STACKS, buf + run, (uint32_t)run_len);
					if (r < 0)
						return r;
					counts->frames++;
					run = off;
					run_len = 0;
				}
				if (run_len == 0)
					run = off;
				run_len += (size_t)size;
				counts->stacks++;
			} else {
				if (run_len) {
					r = win_append(w, SMP_STACKS, buf + run, (uint32_t)run_len);
					if (r < 0)
						return r;
					counts->frames++;
					run_len = 0;
				}
				r = win_append(w, SMP_EPOCH, buf + off, (uint32_t)size);
				if (r < 0)
					return r;
				if (!counts->epochs) {
					counts->first_epoch_seq = (uint64_t)r;
					counts->first_epoch = rec.epoch;
				}
				counts->frames++;
				counts->epochs++;
				counts->last_epoch = rec.epoch;
			}
			off = next;
			continue;
		}
		/* invalid: deliver what came before, then report */
		if (run_len) {
			r = win_append(w, SMP_STACKS, buf + run, (uint32_t)run_len);
			if (r < 0)
				return r;
			counts->frames++;
		}
		if (ret_bad_off)
			*ret_bad_off = off;
		return -EBADMSG;
	}
	if (run_len) {
		r = win_append(w, SMP_STACKS, buf + run, (uint32_t)run_len);
		if (r < 0)
			return r;
		counts->frames++;
	}
	return (long)off;
}

int stream_text(struct win *w, uint8_t type, uint32_t gen, const char *text, size_t len,
		size_t chunk_max)
{
	size_t off = 0;
	uint32_t chunk = 0;

	if (chunk_max == 0 || chunk_max > SMP_MAX_PAYLOAD - SMP_TEXT_FIXED)
		chunk_max = SMP_MAX_PAYLOAD - SMP_TEXT_FIXED;
	do {
		struct smp_text m = { .generation = gen, .chunk = chunk };
		size_t n = len - off;
		uint8_t *f;
		long plen;
		int r;

		if (n > chunk_max) {
			const char *nl = memrchr(text + off, '\n', chunk_max);

			n = nl ? (size_t)(nl - (text + off)) + 1 : chunk_max;
		}
		m.flags = off + n == len ? SMP_TEXT_LAST : 0;
		m.text = text + off;
		m.text_len = n;
		r = win_reserve(w, (uint32_t)(SMP_TEXT_FIXED + n), &f);
		if (r < 0)
			return r;
		plen = smp_text_encode(&m, f + SMP_HDR_SIZE, SMP_TEXT_FIXED + n);
		if (plen < 0) {
			win_cancel(w);
			return (int)plen;
		}
		win_commit(w, type, (uint32_t)plen);
		off += n;
		chunk++;
	} while (off < len);
	return (int)chunk;
}

int stream_format(struct win *w, const char *name, const char *text, size_t len)
{
	struct smp_format m = {
		.name = name, .name_len = (uint16_t)strlen(name),
		.text = text, .text_len = len,
	};
	size_t plen = 4 + m.name_len + len;
	uint8_t *f;
	long r;
	int e;

	if (strlen(name) > SMP_FORMAT_NAME_MAX || len == 0 || plen > SMP_MAX_PAYLOAD)
		return -EINVAL;
	e = win_reserve(w, (uint32_t)plen, &f);
	if (e < 0)
		return e;
	r = smp_format_encode(&m, f + SMP_HDR_SIZE, plen);
	if (r < 0) {
		win_cancel(w);
		return (int)r;
	}
	win_commit(w, SMP_FORMAT, (uint32_t)r);
	return 0;
}

int stream_lost(struct win *w, const struct smp_lost_cpu *cpus, uint32_t nr,
		uint64_t dropped_frames, uint64_t dropped_bytes)
{
	struct smp_lost m = {
		.nr = nr,
		.agent_dropped_frames = dropped_frames,
		.agent_dropped_bytes = dropped_bytes,
	};
	size_t plen = SMP_LOST_FIXED + (size_t)SMP_LOST_CPU_SIZE * nr;
	uint8_t *f;
	long r;
	int e;

	if (nr > SMP_MAX_CPUS)
		return -EINVAL;
	e = win_reserve(w, (uint32_t)plen, &f);
	if (e < 0)
		return e;
	r = smp_lost_encode(&m, cpus, f + SMP_HDR_SIZE, plen);
	if (r < 0) {
		win_cancel(w);
		return (int)r;
	}
	win_commit(w, SMP_LOST, (uint32_t)r);
	return 0;
}

int stream_stats(struct win *w, const struct smp_stat *stats, uint32_t nr)
{
	uint8_t buf[8 + 16 * 32];
	long r;

	if (nr > 32)
		return -EINVAL;
	r = smp_stats_encode(stats, nr, buf, sizeof(buf));
	if (r < 0)
		return (int)r;
	r = win_append(w, SMP_STATS, buf, (uint32_t)r);
	return r < 0 ? (int)r : 0;
}

int stream_bye(struct win *w, uint32_t reason)
{
	uint8_t buf[8];
	long r = smp_bye_encode(reason, buf, sizeof(buf));

	if (r < 0)
		return (int)r;
	r = win_append(w, SMP_BYE, buf, (uint32_t)r);
	return r < 0 ? (int)r : 0;
}

long stream_hello(const struct smp_hello *h, uint8_t *buf, size_t cap)
{
	long r;

	if (cap < SMP_HDR_SIZE)
		return -ENOSPC;
	r = smp_hello_encode(h, buf + SMP_HDR_SIZE, cap - SMP_HDR_SIZE);
	if (r < 0)
		return r;
	return smp_frame_seal(buf, SMP_HELLO, 0, 0, (uint32_t)r);
}

static void swap32(uint8_t *p)
{
	uint8_t t = p[0];

	p[0] = p[3];
	p[3] = t;
	t = p[1];
	p[1] = p[2];
	p[2] = t;
}

static void swap64(uint8_t *p)
{
	for (int i = 0; i < 4; i++) {
		uint8_t t = p[i];

		p[i] = p[7 - i];
		p[7 - i] = t;
	}
}

size_t delta_to_le(uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (len - off >= SMP_DELTA_HDR_SIZE) {
		uint32_t nr;
		size_t size;

		memcpy(&nr, buf + off + 4, 4);
		size = SMP_DELTA_HDR_SIZE + (size_t)nr * 8;
		if (nr > SMP_DELTA_MAX_DEPTH || len - off < size)
			break;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		for (int i = 0; i < 4; i++)
			swap32(buf + off + 4 * i);
		for (uint32_t i = 0; i < nr; i++)
			swap64(buf + off + SMP_DELTA_HDR_SIZE + 8 * i);
#endif
		off += size;
	}
#if __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
	(void)swap32;
	(void)swap64;
#endif
	return off;
}
