// SPDX-License-Identifier: MIT
/*
 * msg.c - typed payloads: the size table and one encode/decode pair per message type.
 *
 * Decoders check the payload against the table first, then their type's own rules, and
 * fill the caller's struct only when the whole payload is valid. Variable parts are
 * returned as pointers into the payload; nothing is allocated.
 *
 * Trailing bytes (PROTOCOL.md 4, "Trailing fields"): a later minor version may append
 * fields to a layout whose end is known without them - the fixed messages, HELLO after
 * its strings, LOST and STATS after their counted records. A decoder reads the layout
 * it knows and ignores whatever follows it, up to the payload's length (which the
 * framer bounds); a payload shorter than that layout is malformed. Layouts that run to
 * the end of the payload (text, page data, delta records) and EPOCH (one kernel delta
 * record, verbatim) take no trailing bytes.
 */
#include <errno.h>
#include <string.h>

#include "proto.h"
#include "wire.h"

struct msg_desc {
	const char *name;
	uint32_t min;
	uint32_t max;
};

/* min: the smallest payload of the layout; max: SMP_MAX_PAYLOAD where trailing bytes
 * are allowed, else the layout's largest. */
static const struct msg_desc msg_table[256] = {
	[SMP_HELLO]	= { "HELLO",   SMP_HELLO_FIXED, SMP_MAX_PAYLOAD },
	[SMP_FORMAT]	= { "FORMAT",  5, SMP_MAX_PAYLOAD },
	[SMP_KSYMS]	= { "KSYMS",   SMP_TEXT_FIXED, SMP_MAX_PAYLOAD },
	[SMP_MODULES]	= { "MODULES", SMP_TEXT_FIXED, SMP_MAX_PAYLOAD },
	[SMP_PAGE]	= { "PAGE",    SMP_PAGE_FIXED + SMP_PAGE_HDR_MIN,
			    SMP_PAGE_FIXED + SMP_PAGE_SIZE_MAX },
	[SMP_STACKS]	= { "STACKS",  SMP_DELTA_HDR_SIZE + 8, SMP_MAX_PAYLOAD },
	[SMP_EPOCH]	= { "EPOCH",   SMP_DELTA_EPOCH_SIZE, SMP_DELTA_EPOCH_SIZE },
	[SMP_LOST]	= { "LOST",    SMP_LOST_FIXED, SMP_MAX_PAYLOAD },
	[SMP_STATS]	= { "STATS",   8, SMP_MAX_PAYLOAD },
	[SMP_BYE]	= { "BYE",     8, SMP_MAX_PAYLOAD },
	[SMP_TIME_REPLY] = { "TIME_REPLY", SMP_TIME_SIZE, SMP_MAX_PAYLOAD },
	[SMP_CMDLINES]	= { "CMDLINES", SMP_TEXT_FIXED, SMP_MAX_PAYLOAD },
	[SMP_ARENA]	= { "ARENA",   SMP_ARENA_FIXED + 8, SMP_MAX_PAYLOAD },
	[SMP_WELCOME]	= { "WELCOME", 16, SMP_MAX_PAYLOAD },
	[SMP_ACK]	= { "ACK",     8, SMP_MAX_PAYLOAD },
	[SMP_TIME]	= { "TIME",    SMP_TIME_SIZE, SMP_MAX_PAYLOAD },
};

const char *smp_type_name(uint8_t type)
{
	return msg_table[type].name;
}

int smp_msg_check_size(uint8_t type, size_t len)
{
	const struct msg_desc *m = &msg_table[type];

	if (!m->name)
		return -ENOENT;
	if (len < m->min || len > m->max)
		return -EBADMSG;
	return 0;
}

static int check(uint8_t type, size_t len)
{
	int r = smp_msg_check_size(type, len);

	return r == -ENOENT ? -EINVAL : r;
}

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* ---- HELLO ---- */

long smp_hello_encode(const struct smp_hello *m, uint8_t *buf, size_t cap)
{
	size_t len = SMP_HELLO_FIXED + m->release_len + m->build_id_len + m->clock_len;
	bool pacing = m->ack_ms || m->ack_bytes;
	uint8_t *p;

	if (cap < len + (pacing ? SMP_HELLO_PACING_SIZE : 0))
		return -ENOSPC;
	memcpy(buf, m->boot_id, 16);
	smp_put64(buf + 16, m->stream_id);
	smp_put64(buf + 24, m->text_addr);
	smp_put32(buf + 32, m->nr_cpus);
	smp_put32(buf + 36, m->page_size);
	smp_put32(buf + 40, m->map_bits);
	smp_put32(buf + 44, m->max_depth);
	smp_put64(buf + 48, m->map_epoch);
	smp_put32(buf + 56, m->flags);
	buf[60] = m->release_len;
	buf[61] = m->build_id_len;
	buf[62] = m->clock_len;
	buf[63] = 0;
	p = buf + SMP_HELLO_FIXED;
	memcpy(p, m->release, m->release_len);
	p += m->release_len;
	if (m->build_id_len)
		memcpy(p, m->build_id, m->build_id_len);
	p += m->build_id_len;
	memcpy(p, m->trace_clock, m->clock_len);
	if (pacing) {
		smp_put32(buf + len, m->ack_ms);
		smp_put32(buf + len + 4, m->ack_bytes);
		len += SMP_HELLO_PACING_SIZE;
	}
	return (long)len;
}

int smp_hello_decode(struct smp_hello *ret, const uint8_t *buf, size_t len)
{
	struct smp_hello m;
	int r = check(SMP_HELLO, len);
	size_t end;

	if (r)
		return r;
	memcpy(m.boot_id, buf, 16);
	m.stream_id = smp_get64(buf + 16);
	m.text_addr = smp_get64(buf + 24);
	m.nr_cpus = smp_get32(buf + 32);
	m.page_size = smp_get32(buf + 36);
	m.map_bits = smp_get32(buf + 40);
	m.max_depth = smp_get32(buf + 44);
	m.map_epoch = smp_get64(buf + 48);
	m.flags = smp_get32(buf + 56);
	m.release_len = buf[60];
	m.build_id_len = buf[61];
	m.clock_len = buf[62];
	end = (size_t)SMP_HELLO_FIXED + m.release_len + m.build_id_len + m.clock_len;
	if (len < end)
		return -EBADMSG;	/* longer: a later minor's trailing fields */
	/* 1.5's pacing, when there; anything after it: a later minor's */
	m.ack_ms = 0;
	m.ack_bytes = 0;
	if (len - end >= SMP_HELLO_PACING_SIZE) {
		m.ack_ms = smp_get32(buf + end);
		m.ack_bytes = smp_get32(buf + end + 4);
	}
	if (m.stream_id == 0 || m.nr_cpus == 0 || m.nr_cpus > SMP_MAX_CPUS)
		return -EBADMSG;
	if (m.page_size < 4096 || m.page_size > SMP_PAGE_SIZE_MAX ||
	    (m.page_size & (m.page_size - 1)))
		return -EBADMSG;
	if (m.map_bits > 19 || m.max_depth > SMP_DELTA_MAX_DEPTH)
		return -EBADMSG;
	if (m.release_len == 0 || m.clock_len == 0)
		return -EBADMSG;
	m.release = (const char *)buf + SMP_HELLO_FIXED;
	m.build_id = buf + SMP_HELLO_FIXED + m.release_len;
	m.trace_clock = (const char *)m.build_id + m.build_id_len;
	if (!printable(m.release, m.release_len) || !printable(m.trace_clock, m.clock_len))
		return -EBADMSG;
	*ret = m;
	return 0;
}

/* ---- FORMAT ---- */

static bool format_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > SMP_FORMAT_NAME_MAX || s[0] == '/' || s[n - 1] == '/')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '/' && i + 1 < n && s[i + 1] == '/')
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '/'))
			return false;
	}
	return true;
}

long smp_format_encode(const struct smp_format *m, uint8_t *buf, size_t cap)
{
	size_t len = 4 + (size_t)m->name_len + m->text_len;

	if (!format_name_ok(m->name, m->name_len) || m->text_len == 0)
		return -EINVAL;
	if (len > SMP_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (cap < len)
		return -ENOSPC;
	smp_put16(buf, m->name_len);
	smp_put16(buf + 2, 0);
	memcpy(buf + 4, m->name, m->name_len);
	memcpy(buf + 4 + m->name_len, m->text, m->text_len);
	return (long)len;
}

int smp_format_decode(struct smp_format *ret, const uint8_t *buf, size_t len)
{
	struct smp_format m;
	int r = check(SMP_FORMAT, len);

	if (r)
		return r;
	m.name_len = smp_get16(buf);
	if (len < 4 + (size_t)m.name_len + 1)
		return -EBADMSG;
	m.name = (const char *)buf + 4;
	if (!format_name_ok(m.name, m.name_len))
		return -EBADMSG;
	m.text = m.name + m.name_len;
	m.text_len = len - 4 - m.name_len;
	*ret = m;
	return 0;
}

/* ---- KSYMS / MODULES ---- */

long smp_text_encode(const struct smp_text *m, uint8_t *buf, size_t cap)
{
	size_t len = SMP_TEXT_FIXED + m->text_len;

	if (len > SMP_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (cap < len)
		return -ENOSPC;
	smp_put32(buf, m->generation);
	smp_put32(buf + 4, m->chunk);
	smp_put32(buf + 8, m->flags);
	smp_put32(buf + 12, 0);
	if (m->text_len)
		memcpy(buf + SMP_TEXT_FIXED, m->text, m->text_len);
	return (long)len;
}

int smp_text_decode(struct smp_text *ret, const uint8_t *buf, size_t len)
{
	int r = check(SMP_KSYMS, len);

	if (r)
		return r;
	ret->generation = smp_get32(buf);
	ret->chunk = smp_get32(buf + 4);
	ret->flags = smp_get32(buf + 8);
	ret->text = (const char *)buf + SMP_TEXT_FIXED;
	ret->text_len = len - SMP_TEXT_FIXED;
	return 0;
}

/* ---- PAGE ---- */

long smp_page_encode(const struct smp_page *m, uint8_t *buf, size_t cap)
{
	size_t len = SMP_PAGE_FIXED + m->data_len;

	if (m->data_len < SMP_PAGE_HDR_MIN || m->data_len > SMP_PAGE_SIZE_MAX)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	smp_put32(buf, m->cpu);
	smp_put32(buf + 4, 0);
	if (m->data)
		memmove(buf + SMP_PAGE_FIXED, m->data, m->data_len);
	return (long)len;
}

int smp_page_decode(struct smp_page *ret, const uint8_t *buf, size_t len)
{
	int r = check(SMP_PAGE, len);

	if (r)
		return r;
	ret->cpu = smp_get32(buf);
	ret->data = buf + SMP_PAGE_FIXED;
	ret->data_len = len - SMP_PAGE_FIXED;
	return 0;
}

/* ---- LOST ---- */

long smp_lost_encode(const struct smp_lost *m, const struct smp_lost_cpu *cpus,
		     uint8_t *buf, size_t cap)
{
	size_t len = SMP_LOST_FIXED + (size_t)SMP_LOST_CPU_SIZE * m->nr;

	if (m->nr > SMP_MAX_CPUS)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	smp_put32(buf, m->nr);
	smp_put32(buf + 4, 0);
	smp_put64(buf + 8, m->agent_dropped_frames);
	smp_put64(buf + 16, m->agent_dropped_bytes);
	for (uint32_t i = 0; i < m->nr; i++) {
		uint8_t *p = buf + SMP_LOST_FIXED + (size_t)SMP_LOST_CPU_SIZE * i;

		smp_put32(p, cpus[i].cpu);
		smp_put32(p + 4, 0);
		smp_put64(p + 8, cpus[i].overrun);
		smp_put64(p + 16, cpus[i].commit_overrun);
		smp_put64(p + 24, cpus[i].dropped_events);
		smp_put64(p + 32, cpus[i].read_events);
	}
	return (long)len;
}

int smp_lost_decode(struct smp_lost *ret, const uint8_t *buf, size_t len)
{
	uint32_t nr;
	int r = check(SMP_LOST, len);

	if (r)
		return r;
	nr = smp_get32(buf);
	if (nr > SMP_MAX_CPUS || len < SMP_LOST_FIXED + (size_t)SMP_LOST_CPU_SIZE * nr)
		return -EBADMSG;	/* longer: a later minor's trailing fields */
	ret->nr = nr;
	ret->agent_dropped_frames = smp_get64(buf + 8);
	ret->agent_dropped_bytes = smp_get64(buf + 16);
	ret->cpus = buf + SMP_LOST_FIXED;
	return 0;
}

void smp_lost_cpu(const struct smp_lost *m, uint32_t i, struct smp_lost_cpu *ret)
{
	const uint8_t *p = m->cpus + (size_t)SMP_LOST_CPU_SIZE * i;

	ret->cpu = smp_get32(p);
	ret->overrun = smp_get64(p + 8);
	ret->commit_overrun = smp_get64(p + 16);
	ret->dropped_events = smp_get64(p + 24);
	ret->read_events = smp_get64(p + 32);
}

/* ---- STATS ---- */

long smp_stats_encode(const struct smp_stat *stats, uint32_t nr, uint8_t *buf,
		      size_t cap)
{
	size_t len = 8 + (size_t)16 * nr;

	if (nr > SMP_STATS_MAX)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	smp_put32(buf, nr);
	smp_put32(buf + 4, 0);
	for (uint32_t i = 0; i < nr; i++) {
		uint8_t *p = buf + 8 + (size_t)16 * i;

		smp_put32(p, stats[i].key);
		smp_put32(p + 4, 0);
		smp_put64(p + 8, stats[i].value);
	}
	return (long)len;
}

int smp_stats_decode(uint32_t *ret_nr, const uint8_t *buf, size_t len)
{
	uint32_t nr;
	int r = check(SMP_STATS, len);

	if (r)
		return r;
	nr = smp_get32(buf);
	if (nr > SMP_STATS_MAX || len < 8 + (size_t)16 * nr)
		return -EBADMSG;	/* longer: a later minor's trailing fields */
	*ret_nr = nr;
	return 0;
}

void smp_stats_get(const uint8_t *buf, uint32_t i, struct smp_stat *ret)
{
	const uint8_t *p = buf + 8 + (size_t)16 * i;

	ret->key = smp_get32(p);
	ret->value = smp_get64(p + 8);
}

/* ---- BYE, WELCOME, ACK ---- */

long smp_bye_encode(uint32_t reason, uint8_t *buf, size_t cap)
{
	if (cap < 8)
		return -ENOSPC;
	smp_put32(buf, reason);
	smp_put32(buf + 4, 0);
	return 8;
}

int smp_bye_decode(uint32_t *ret_reason, const uint8_t *buf, size_t len)
{
	int r = check(SMP_BYE, len);

	if (r)
		return r;
	*ret_reason = smp_get32(buf);
	return 0;
}

long smp_welcome_encode(const struct smp_welcome *m, uint8_t *buf, size_t cap)
{
	if (!smp_seq_next_ok(m->resume_seq) || m->max_payload > SMP_MAX_PAYLOAD)
		return -EINVAL;
	if (cap < 16)
		return -ENOSPC;
	smp_put64(buf, m->resume_seq);
	smp_put32(buf + 8, m->max_payload);
	smp_put32(buf + 12, 0);
	return 16;
}

int smp_welcome_decode(struct smp_welcome *ret, const uint8_t *buf, size_t len)
{
	struct smp_welcome m;
	int r = check(SMP_WELCOME, len);

	if (r)
		return r;
	m.resume_seq = smp_get64(buf);
	m.max_payload = smp_get32(buf + 8);
	if (m.resume_seq == 0 || m.max_payload > SMP_MAX_PAYLOAD)
		return -EBADMSG;
	*ret = m;
	return 0;
}

long smp_ack_encode(uint64_t acked_seq, uint8_t *buf, size_t cap)
{
	if (acked_seq > SMP_SEQ_MAX)
		return -EINVAL;
	if (cap < 8)
		return -ENOSPC;
	smp_put64(buf, acked_seq);
	return 8;
}

int smp_ack_decode(uint64_t *ret_acked_seq, const uint8_t *buf, size_t len)
{
	int r = check(SMP_ACK, len);

	if (r)
		return r;
	*ret_acked_seq = smp_get64(buf);
	return 0;
}

/* ---- TIME, TIME_REPLY ---- */

long smp_time_encode(uint64_t probe_id, uint8_t *buf, size_t cap)
{
	if (probe_id == 0)
		return -EINVAL;
	if (cap < SMP_TIME_SIZE)
		return -ENOSPC;
	smp_put64(buf, probe_id);
	smp_put64(buf + 8, 0);
	return SMP_TIME_SIZE;
}

int smp_time_decode(uint64_t *ret_probe_id, const uint8_t *buf, size_t len)
{
	uint64_t id;
	int r = check(SMP_TIME, len);

	if (r)
		return r;
	id = smp_get64(buf);
	if (id == 0)
		return -EBADMSG;
	*ret_probe_id = id;
	return 0;
}

long smp_time_reply_encode(const struct smp_time_reply *m, uint8_t *buf, size_t cap)
{
	if (m->probe_id == 0 || m->status > 0)
		return -EINVAL;
	if (cap < SMP_TIME_SIZE)
		return -ENOSPC;
	smp_put64(buf, m->probe_id);
	smp_put32(buf + 8, (uint32_t)m->status);
	smp_put32(buf + 12, 0);
	return SMP_TIME_SIZE;
}

int smp_time_reply_decode(struct smp_time_reply *ret, const uint8_t *buf, size_t len)
{
	struct smp_time_reply m;
	int r = check(SMP_TIME_REPLY, len);

	if (r)
		return r;
	m.probe_id = smp_get64(buf);
	m.status = (int32_t)smp_get32(buf + 8);
	if (m.probe_id == 0 || m.status > 0)
		return -EBADMSG;
	*ret = m;
	return 0;
}

long smp_time_marker(uint64_t probe_id, char *buf, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t plen = sizeof(SMP_TIME_MARKER) - 1;

	if (cap < SMP_TIME_MARKER_LEN)
		return -ENOSPC;
	memcpy(buf, SMP_TIME_MARKER, plen);
	for (int i = 0; i < 16; i++)
		buf[plen + (size_t)i] = hex[(probe_id >> (60 - 4 * i)) & 0xf];
	return (long)SMP_TIME_MARKER_LEN;
}

int smp_time_marker_parse(const char *text, size_t len, uint64_t *ret_probe_id)
{
	size_t plen = sizeof(SMP_TIME_MARKER) - 1;
	uint64_t id = 0;
	size_t i;

	if (len < SMP_TIME_MARKER_LEN || memcmp(text, SMP_TIME_MARKER, plen))
		return -EBADMSG;
	for (i = plen; i < SMP_TIME_MARKER_LEN; i++) {
		char c = text[i];

		if (c >= '0' && c <= '9')
			id = id << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			id = id << 4 | (uint64_t)(c - 'a' + 10);
		else
			return -EBADMSG;
	}
	/* the kernel's newline, then the end of the C string (or of the buffer) */
	if (i < len && text[i] == '\n')
		i++;
	if (i < len && text[i] != '\0')
		return -EBADMSG;
	if (id == 0)
		return -EBADMSG;
	*ret_probe_id = id;
	return 0;
}

/* ---- ARENA and the recovery header ---- */

static bool arena_page_size_ok(uint32_t ps)
{
	return ps >= SMP_ARENA_PAGE_MIN && ps <= SMP_ARENA_PAGE_MAX && !(ps & (ps - 1));
}

static bool arena_fields_ok(const struct smp_arena *m)
{
	return arena_page_size_ok(m->page_size) && m->nr_pages >= 1 &&
	       m->nr_pages <= SMP_ARENA_MAX_PAGES && m->nr >= 1 &&
	       m->nr <= SMP_ARENA_MAX_PER_MSG && m->first < m->nr_pages &&
	       m->nr <= m->nr_pages - m->first && m->list_id != 0;
}

long smp_arena_encode(const struct smp_arena *m, const uint64_t *addrs, uint8_t *buf,
		      size_t cap)
{
	size_t len;

	if (!arena_fields_ok(m))
		return -EINVAL;
	for (uint32_t i = 0; i < m->nr; i++)
		if (addrs[i] & (m->page_size - 1))
			return -EINVAL;
	len = SMP_ARENA_FIXED + (size_t)m->nr * 8;
	if (cap < len)
		return -ENOSPC;
	smp_put32(buf, m->page_size);
	smp_put32(buf + 4, m->nr_pages);
	smp_put32(buf + 8, m->first);
	smp_put32(buf + 12, m->nr);
	smp_put64(buf + 16, m->list_id);
	for (uint32_t i = 0; i < m->nr; i++)
		smp_put64(buf + SMP_ARENA_FIXED + (size_t)i * 8, addrs[i]);
	return (long)len;
}

int smp_arena_decode(struct smp_arena *ret, const uint8_t *buf, size_t len)
{
	struct smp_arena m;
	int r = check(SMP_ARENA, len);

	if (r)
		return r;
	m.page_size = smp_get32(buf);
	m.nr_pages = smp_get32(buf + 4);
	m.first = smp_get32(buf + 8);
	m.nr = smp_get32(buf + 12);
	m.list_id = smp_get64(buf + 16);
	m.addrs = buf + SMP_ARENA_FIXED;
	/* the addresses run to the end of the payload: no trailing fields */
	if (!arena_fields_ok(&m) || len != SMP_ARENA_FIXED + (size_t)m.nr * 8)
		return -EBADMSG;
	for (uint32_t i = 0; i < m.nr; i++)
		if (smp_arena_addr(&m, i) & (m.page_size - 1))
			return -EBADMSG;
	*ret = m;
	return 0;
}

uint64_t smp_arena_addr(const struct smp_arena *m, uint32_t i)
{
	return smp_get64(m->addrs + (size_t)i * 8);
}

#define ARENA_HDR_OFF_SLOT	20
#define ARENA_HDR_OFF_HLEN	32

_Static_assert(ARENA_HDR_OFF_HLEN + 8 <= SMP_ARENA_HDR_FIXED, "recovery header");
_Static_assert(SMP_HDR_SIZE + SMP_HELLO_FIXED + 3 * 255 <= SMP_ARENA_HELLO_SLOT,
	       "the largest HELLO fits a slot");
_Static_assert(SMP_ARENA_HDR_SIZE <= SMP_ARENA_PAGE_MIN, "the header fits a page");

void smp_arena_hdr_init(uint8_t *buf, uint32_t page_size, uint32_t hdr_pages,
			uint64_t arena_len)
{
	memset(buf, 0, SMP_ARENA_HDR_SIZE);
	smp_put64(buf, SMP_ARENA_HDR_MAGIC);
	smp_put32(buf + 8, SMP_ARENA_HDR_VERSION);
	smp_put32(buf + 12, page_size);
	smp_put32(buf + 16, hdr_pages);
	smp_put32(buf + ARENA_HDR_OFF_SLOT, SMP_ARENA_NO_HELLO);
	smp_put64(buf + 24, arena_len);
}

/*
 * The slot is written first and published by hello_slot after it; a dump reader sees
 * the agent's memory as its stores left it (a process stopped at any instruction), so
 * the compiler must not move the slot's stores after the switch.
 */
int smp_arena_hdr_set_hello(uint8_t *buf, const uint8_t *frame, size_t len)
{
	uint32_t cur = smp_get32(buf + ARENA_HDR_OFF_SLOT);
	uint32_t slot = cur == 0 ? 1 : 0;

	if (len > SMP_ARENA_HELLO_SLOT)
		return -EMSGSIZE;
	memcpy(buf + SMP_ARENA_HDR_FIXED + slot * SMP_ARENA_HELLO_SLOT, frame, len);
	smp_put32(buf + ARENA_HDR_OFF_HLEN + slot * 4, (uint32_t)len);
	__atomic_signal_fence(__ATOMIC_RELEASE);
	smp_put32(buf + ARENA_HDR_OFF_SLOT, slot);
	return 0;
}

void smp_arena_hdr_clear_hello(uint8_t *buf)
{
	smp_put32(buf + ARENA_HDR_OFF_SLOT, SMP_ARENA_NO_HELLO);
	__atomic_signal_fence(__ATOMIC_RELEASE);
}

int smp_arena_hdr_decode(struct smp_arena_hdr *ret, const uint8_t *buf, size_t len)
{
	struct smp_arena_hdr h = { 0 };
	uint32_t slot;

	if (len < SMP_ARENA_HDR_SIZE || smp_get64(buf) != SMP_ARENA_HDR_MAGIC ||
	    smp_get32(buf + 8) != SMP_ARENA_HDR_VERSION)
		return -EBADMSG;
	h.page_size = smp_get32(buf + 12);
	h.hdr_pages = smp_get32(buf + 16);
	h.arena_len = smp_get64(buf + 24);
	if (!arena_page_size_ok(h.page_size) || h.hdr_pages < 1 || h.hdr_pages > 16)
		return -EBADMSG;
	slot = smp_get32(buf + ARENA_HDR_OFF_SLOT);
	if (slot == 0 || slot == 1) {
		h.hello_len = smp_get32(buf + ARENA_HDR_OFF_HLEN + slot * 4);
		if (h.hello_len > SMP_ARENA_HELLO_SLOT)
			return -EBADMSG;
		h.hello = buf + SMP_ARENA_HDR_FIXED + slot * SMP_ARENA_HELLO_SLOT;
	} else if (slot != SMP_ARENA_NO_HELLO) {
		return -EBADMSG;
	}
	*ret = h;
	return 0;
}
