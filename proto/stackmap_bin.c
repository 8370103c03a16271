// SPDX-License-Identifier: MIT
/*
 * stackmap_bin.c - the seed's stack_map_bin v1 export (PROTOCOL.md 6.2).
 *
 * Native-endian in the file; the byte order is taken from the magic. The checks are the
 * ones of the seed's tools/tracing/stackmap_dump.py, in its order: header size, magic,
 * version, then per entry the 16-byte header and the IP array must fit. Entries are not
 * otherwise validated (the seed's tool prints whatever they hold), and trailing bytes
 * after nr_stacks entries are ignored.
 */
#include <errno.h>

#include "proto.h"
#include "wire.h"

static uint32_t bin_get32(const uint8_t *p, bool be)
{
	return be ? smp_get32be(p) : smp_get32(p);
}

int smp_bin_open(struct smp_bin *ret, const uint8_t *buf, size_t len)
{
	struct smp_bin it = { .buf = buf, .len = len, .off = SMP_BIN_HDR_SIZE };

	if (len < SMP_BIN_HDR_SIZE)
		return -EBADMSG;
	if (smp_get32(buf) == SMP_BIN_MAGIC)
		it.big_endian = false;
	else if (smp_get32be(buf) == SMP_BIN_MAGIC)
		it.big_endian = true;
	else
		return -EBADMSG;
	it.version = bin_get32(buf + 4, it.big_endian);
	it.nr_stacks = bin_get32(buf + 8, it.big_endian);
	if (it.version != SMP_BIN_VERSION)
		return -EPROTONOSUPPORT;
	*ret = it;
	return 0;
}

int smp_bin_next(struct smp_bin *it, struct smp_bin_entry *ret)
{
	const uint8_t *p;
	uint32_t nr;

	if (it->index >= it->nr_stacks)
		return 0;
	if (it->len - it->off < SMP_BIN_ENTRY_SIZE)
		return -EBADMSG;
	p = it->buf + it->off;
	nr = bin_get32(p + 4, it->big_endian);
	if ((uint64_t)(it->len - it->off - SMP_BIN_ENTRY_SIZE) < (uint64_t)nr * 8)
		return -EBADMSG;
	ret->stack_id = bin_get32(p, it->big_endian);
	ret->nr = nr;
	ret->ref_count = bin_get32(p + 8, it->big_endian);
	ret->ips = p + SMP_BIN_ENTRY_SIZE;
	ret->big_endian = it->big_endian;
	it->off += SMP_BIN_ENTRY_SIZE + (size_t)nr * 8;
	it->index++;
	return 1;
}

uint64_t smp_bin_ip(const struct smp_bin_entry *e, uint32_t i)
{
	const uint8_t *p = e->ips + (size_t)i * 8;

	return e->big_endian ? smp_get64be(p) : smp_get64(p);
}
