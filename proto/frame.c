// SPDX-License-Identifier: MIT
/*
 * frame.c - frame header, sealing, and the incremental decoder with resynchronisation.
 *
 * The decoder owns one buffer of 2 * (SMP_HDR_SIZE + max_payload) bytes, allocated
 * once. Input is appended at `end`; frames are decoded from `start`. When the tail has
 * no room left, the undecoded bytes (at most one partial frame plus read-ahead) are
 * moved to the front. A full buffer always holds a whole frame or an error, so the
 * caller's feed/next loop always makes progress. This is the one place where the
 * protocol's lengths are bounded (PROTOCOL.md section 2.1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* xxHash as header-only inline code: nothing to link (the guest agent is static) */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "proto.h"
#include "wire.h"

struct smp_decoder {
	uint8_t *buf;
	size_t size;
	size_t start;		/* first undecoded byte */
	size_t end;		/* one past the last buffered byte */
	uint32_t max_payload;
	int sticky;		/* -EPROTONOSUPPORT once another major version was seen */
	uint8_t bad_major;
	uint8_t bad_minor;
	struct smp_decoder_stats stats;
};

static const uint8_t smp_magic_bytes[4] = { 'S', 'M', 'A', 'P' };

static uint32_t hdr_crc(const uint8_t *frame)
{
	return smp_crc32c(0, frame, SMP_OFF_HCRC);
}

uint32_t smp_frame_sum(const uint8_t *frame, uint32_t payload_len)
{
	uint32_t hdr = smp_crc32c(0, frame, SMP_OFF_CRC);

	/*
	 * CRC32C's tables cost about 3.9 instructions a byte, XXH64 under 1; in a TCG
	 * guest every one is the traced workload's (README, issue 23). The seed binds
	 * the payload to its header as CRC32C's continuation does.
	 */
	if (frame[SMP_OFF_FLAGS] & SMP_FLAG_XXH64)
		return (uint32_t)XXH64(frame + SMP_HDR_SIZE, payload_len, hdr);
	return smp_crc32c(hdr, frame + SMP_HDR_SIZE, payload_len);
}

long smp_frame_seal(uint8_t *frame, uint8_t type, uint8_t flags, uint64_t seq,
		    uint32_t payload_len)
{
	if (payload_len > SMP_MAX_PAYLOAD)
		return -EMSGSIZE;
	smp_put32(frame + SMP_OFF_MAGIC, SMP_MAGIC);
	frame[SMP_OFF_MAJOR] = SMP_VERSION_MAJOR;
	frame[SMP_OFF_MINOR] = SMP_VERSION_MINOR;
	frame[SMP_OFF_TYPE] = type;
	frame[SMP_OFF_FLAGS] = flags;
	smp_put32(frame + SMP_OFF_LEN, payload_len);
	smp_put32(frame + SMP_OFF_RESERVED, 0);
	smp_put64(frame + SMP_OFF_SEQ, seq);
	smp_put32(frame + SMP_OFF_CRC, smp_frame_sum(frame, payload_len));
	smp_put32(frame + SMP_OFF_HCRC, hdr_crc(frame));
	return (long)(SMP_HDR_SIZE + payload_len);
}

long smp_frame_encode(uint8_t *buf, size_t cap, uint8_t type, uint8_t flags,
		      uint64_t seq, const void *payload, size_t len)
{
	if (len > SMP_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (cap < SMP_HDR_SIZE + len)
		return -ENOSPC;
	if (len)
		memmove(buf + SMP_HDR_SIZE, payload, len);
	return smp_frame_seal(buf, type, flags, seq, (uint32_t)len);
}

enum smp_seq_verdict smp_seq_classify(uint64_t expected, uint64_t seq)
{
	if (!smp_seq_next_ok(expected) || seq == 0 || seq > SMP_SEQ_MAX)
		return SMP_SEQ_BAD;
	if (seq < expected)
		return SMP_SEQ_DUP;
	if (seq == expected)
		return SMP_SEQ_NEXT;
	return seq - expected <= SMP_SEQ_MAX_GAP ? SMP_SEQ_GAP : SMP_SEQ_BAD;
}

struct smp_decoder *smp_decoder_new(uint32_t max_payload)
{
	struct smp_decoder *d;

	if (max_payload == 0 || max_payload > SMP_MAX_PAYLOAD)
		max_payload = SMP_MAX_PAYLOAD;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->max_payload = max_payload;
	d->size = 2 * ((size_t)SMP_HDR_SIZE + max_payload);
	d->buf = malloc(d->size);
	if (!d->buf) {
		free(d);
		return NULL;
	}
	return d;
}

void smp_decoder_free(struct smp_decoder *d)
{
	if (!d)
		return;
	free(d->buf);
	free(d);
}

void smp_decoder_reset(struct smp_decoder *d)
{
	d->start = d->end = 0;
	d->sticky = 0;
}

static void compact(struct smp_decoder *d)
{
	size_t n = d->end - d->start;

	if (d->start == 0)
		return;
	if (n)
		memmove(d->buf, d->buf + d->start, n);
	d->start = 0;
	d->end = n;
}

size_t smp_decoder_space(struct smp_decoder *d, uint8_t **ret_space)
{
	/* Move the tail forward only when it is running out of room: amortised O(1). */
	if (d->size - d->end < SMP_HDR_SIZE + d->max_payload / 2)
		compact(d);
	*ret_space = d->buf + d->end;
	return d->size - d->end;
}

void smp_decoder_commit(struct smp_decoder *d, size_t n)
{
	if (n > d->size - d->end)
		n = d->size - d->end;	/* programmer error; never overrun */
	d->end += n;
}

size_t smp_decoder_feed(struct smp_decoder *d, const void *data, size_t len)
{
	uint8_t *space;
	size_t room = smp_decoder_space(d, &space);

	if (len > room)
		len = room;
	if (!len)
		return 0;	/* @data may be NULL then: memcpy(…, NULL, 0) is undefined */
	memcpy(space, data, len);
	d->end += len;
	return len;
}

size_t smp_decoder_pending(const struct smp_decoder *d)
{
	return d->end - d->start;
}

const struct smp_decoder_stats *smp_decoder_stats(const struct smp_decoder *d)
{
	return &d->stats;
}

/*
 * Skip to the next possible magic. Keeps a trailing partial match (1..3 bytes that are
 * a prefix of the magic) because its rest may still arrive. Returns bytes skipped.
 */
static size_t skip_garbage(struct smp_decoder *d)
{
	const uint8_t *p = d->buf + d->start;
	size_t avail = d->end - d->start;
	size_t i = 0;

	while (i < avail) {
		const uint8_t *hit = memchr(p + i, smp_magic_bytes[0], avail - i);
		size_t n;

		if (!hit) {
			i = avail;
			break;
		}
		i = (size_t)(hit - p);
		n = avail - i < 4 ? avail - i : 4;
		if (memcmp(hit, smp_magic_bytes, n) == 0)
			break;
		i++;
	}
	d->start += i;
	return i;
}

int smp_decoder_next(struct smp_decoder *d, struct smp_frame *ret_frame,
		     size_t *ret_skipped)
{
	const uint8_t *h;
	size_t avail;
	uint32_t len;

	if (ret_skipped)
		*ret_skipped = 0;
	if (d->sticky) {
		ret_frame->major = d->bad_major;
		ret_frame->minor = d->bad_minor;
		return d->sticky;
	}

	avail = d->end - d->start;
	if (avail == 0)
		return 0;
	h = d->buf + d->start;
	if (avail < 4 ? memcmp(h, smp_magic_bytes, avail) != 0
		      : memcmp(h, smp_magic_bytes, 4) != 0) {
		size_t skipped = skip_garbage(d);

		d->stats.garbage_bytes += skipped;
		d->stats.garbage_runs++;
		if (ret_skipped)
			*ret_skipped = skipped;
		return -EPROTO;
	}
	if (avail < SMP_HDR_SIZE)
		return 0;

	if (smp_get32(h + SMP_OFF_HCRC) != hdr_crc(h)) {
		d->stats.header_errors++;
		d->start++;
		if (ret_skipped)
			*ret_skipped = 1;
		return -EBADMSG;
	}
	if (h[SMP_OFF_MAJOR] != SMP_VERSION_MAJOR) {
		d->bad_major = h[SMP_OFF_MAJOR];
		d->bad_minor = h[SMP_OFF_MINOR];
		ret_frame->major = d->bad_major;
		ret_frame->minor = d->bad_minor;
		d->sticky = -EPROTONOSUPPORT;
		return d->sticky;
	}
	len = smp_get32(h + SMP_OFF_LEN);
	if (len > d->max_payload) {
		d->stats.oversize++;
		d->start += SMP_HDR_SIZE;
		if (ret_skipped)
			*ret_skipped = SMP_HDR_SIZE;
		return -EMSGSIZE;
	}
	if (avail < SMP_HDR_SIZE + (size_t)len)
		return 0;

	if (smp_frame_sum(h, len) != smp_get32(h + SMP_OFF_CRC)) {
		d->stats.payload_errors++;
		d->start++;
		if (ret_skipped)
			*ret_skipped = 1;
		return -EBADMSG;
	}

	ret_frame->major = h[SMP_OFF_MAJOR];
	ret_frame->minor = h[SMP_OFF_MINOR];
	ret_frame->type = h[SMP_OFF_TYPE];
	ret_frame->flags = h[SMP_OFF_FLAGS];
	ret_frame->len = len;
	ret_frame->seq = smp_get64(h + SMP_OFF_SEQ);
	ret_frame->payload = h + SMP_HDR_SIZE;
	d->start += SMP_HDR_SIZE + len;
	d->stats.frames++;
	d->stats.bytes += SMP_HDR_SIZE + len;
	if (d->start == d->end)
		d->start = d->end = 0;
	return 1;
}

const char *smp_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case -EPROTO: return "garbage in the byte stream (resynchronised)";
	case -EBADMSG: return "checksum mismatch or malformed message";
	case -EMSGSIZE: return "payload larger than the protocol allows";
	case -EPROTONOSUPPORT: return "unsupported protocol major version";
	case -ENOSPC: return "buffer too small";
	case -ENOENT: return "unknown message type";
	case -EINVAL: return "invalid argument";
	case -ENOMEM: return "out of memory";
	default: return "unknown error";
	}
}
