// SPDX-License-Identifier: MIT
/*
 * delta.c - records of the kernel's stack_map_delta file (PROTOCOL.md 4.5 and 6.3),
 * carried verbatim in STACKS and EPOCH payloads.
 *
 * A record is the stack_map_bin v1 entry header (stack_id, nr, ref_count, kind) and
 * nr u64 words. Stack records: kind 0, 1..64 return addresses. Epoch records: kind 1,
 * nr 2, words = { epoch, reset timestamp }, stack_id = the new epoch's id base.
 */
#include <errno.h>

#include "proto.h"
#include "wire.h"

int smp_delta_next(const uint8_t *buf, size_t len, size_t *off,
		   struct smp_delta_rec *ret)
{
	struct smp_delta_rec r = { 0 };
	size_t pos = *off, words;

	if (pos >= len)
		return 0;
	if (len - pos < SMP_DELTA_HDR_SIZE)
		return -EBADMSG;
	r.stack_id = smp_get32(buf + pos);
	r.nr = smp_get32(buf + pos + 4);
	r.ref_count = smp_get32(buf + pos + 8);
	r.kind = smp_get32(buf + pos + 12);
	if (!smp_id_valid(r.stack_id))
		return -EBADMSG;

	switch (r.kind) {
	case SMP_DELTA_STACK:
		if (r.nr == 0 || r.nr > SMP_DELTA_MAX_DEPTH)
			return -EBADMSG;
		break;
	case SMP_DELTA_EPOCH:
		if (r.nr != 2 || r.ref_count != 0)
			return -EBADMSG;
		break;
	default:
		return -EBADMSG;
	}
	words = (size_t)r.nr * 8;
	if (len - pos - SMP_DELTA_HDR_SIZE < words)
		return -EBADMSG;
	r.ips = buf + pos + SMP_DELTA_HDR_SIZE;
	if (r.kind == SMP_DELTA_EPOCH) {
		r.epoch = smp_get64(r.ips);
		r.timestamp = smp_get64(r.ips + 8);
		if (r.stack_id != smp_id_make(r.epoch, 0))
			return -EBADMSG;
	}
	*off = pos + SMP_DELTA_HDR_SIZE + words;
	*ret = r;
	return 1;
}

long smp_delta_put_stack(uint8_t *buf, size_t cap, uint32_t stack_id, uint32_t ref_count,
			 const uint64_t *ips, uint32_t nr)
{
	size_t len = SMP_DELTA_HDR_SIZE + (size_t)nr * 8;

	if (nr == 0 || nr > SMP_DELTA_MAX_DEPTH || !smp_id_valid(stack_id))
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	smp_put32(buf, stack_id);
	smp_put32(buf + 4, nr);
	smp_put32(buf + 8, ref_count);
	smp_put32(buf + 12, SMP_DELTA_STACK);
	for (uint32_t i = 0; i < nr; i++)
		smp_put64(buf + SMP_DELTA_HDR_SIZE + (size_t)i * 8, ips[i]);
	return (long)len;
}

long smp_delta_put_epoch(uint8_t *buf, size_t cap, uint64_t epoch, uint64_t timestamp)
{
	if (cap < SMP_DELTA_EPOCH_SIZE)
		return -ENOSPC;
	smp_put32(buf, smp_id_make(epoch, 0));
	smp_put32(buf + 4, 2);
	smp_put32(buf + 8, 0);
	smp_put32(buf + 12, SMP_DELTA_EPOCH);
	smp_put64(buf + 16, epoch);
	smp_put64(buf + 24, timestamp);
	return SMP_DELTA_EPOCH_SIZE;
}
