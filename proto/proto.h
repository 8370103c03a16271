/* SPDX-License-Identifier: MIT */
/*
 * proto.h - the virtio-stackmap wire protocol (see PROTOCOL.md, which is normative).
 *
 * Overview
 * --------
 * The library has four independent parts, each with its own prefix:
 *
 *  - smp_crc32c*     CRC32C (Castagnoli); SSE4.2 when the CPU has it, tables otherwise.
 *  - smp_frame_*     frame encoding: a 32-byte header sealed in place in front of a
 *    smp_decoder_*   payload the caller already wrote; and the incremental decoder, an
 *                    opaque object owning one bounded buffer, fed arbitrary chunks of the
 *                    byte stream and returning whole checked frames, resynchronising on
 *                    garbage and corruption.
 *  - smp_<msg>_*     typed payloads: `encode` writes a struct into a caller buffer and
 *                    returns the payload size; `decode` validates a payload against the
 *                    size table and its type's rules and fills a struct whose pointers
 *                    point into the payload (no allocation, valid as long as the payload).
 *  - smp_delta_*     the kernel's stack_map_delta records (STACKS / EPOCH payloads) and
 *    smp_bin_*       the seed's stack_map_bin v1 export.
 *
 * Conventions: functions return 0 (or a size) on success and a negative errno on
 * failure; out-parameters are named ret_* and left untouched on failure; every decoder
 * takes (buf, len), reads only inside it and allocates nothing. Only smp_decoder_new()
 * allocates, once, a buffer bounded by its max_payload argument.
 *
 * No dependency beyond libc: the static guest agent links this library.
 */
#ifndef SMP_PROTO_H
#define SMP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SMP_MAGIC		0x50414d53u	/* "SMAP" */
#define SMP_VERSION_MAJOR	1
#define SMP_VERSION_MINOR	5
#define SMP_HDR_SIZE		32u
#define SMP_MAX_PAYLOAD		(256u * 1024u)

#define SMP_FLAG_RESENT		0x01u
/* 1.4: `crc` is XXH64 over the payload, seeded with the header's CRC32C (PROTOCOL.md
 * 2); a guest sets it only after a WELCOME of minor 4 or later. */
#define SMP_FLAG_XXH64		0x02u
/* The first minor version whose receivers verify SMP_FLAG_XXH64 frames. */
#define SMP_MINOR_XXH64		4
/* The first minor version whose hosts pace their ACKs as the HELLO asks (PROTOCOL.md
 * 4.1: ack_ms, ack_bytes). */
#define SMP_MINOR_ACK_PACING	5

enum smp_type {
	SMP_HELLO	= 1,
	SMP_FORMAT	= 2,
	SMP_KSYMS	= 3,
	SMP_MODULES	= 4,
	SMP_PAGE	= 5,
	SMP_STACKS	= 6,
	SMP_EPOCH	= 7,
	SMP_LOST	= 8,
	SMP_STATS	= 9,
	SMP_BYE		= 10,
	SMP_TIME_REPLY	= 11,	/* unsequenced (1.1) */
	SMP_CMDLINES	= 12,	/* 1.2 */
	SMP_ARENA	= 13,	/* unsequenced (1.3) */
	SMP_WELCOME	= 129,
	SMP_ACK		= 130,
	SMP_TIME	= 131,	/* 1.1 */
};

/* ---- CRC32C ---------------------------------------------------------------- */

/* Continue a CRC32C: pass 0 to start; the result is final (already inverted). */
uint32_t smp_crc32c(uint32_t crc, const void *buf, size_t len);
/* The table implementation, always available; for tests and benchmarks. */
uint32_t smp_crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* True when smp_crc32c() uses the CPU's crc32 instruction. */
bool smp_crc32c_hw(void);

/* ---- Frames ---------------------------------------------------------------- */

/*
 * The `crc` field of a frame whose header (bytes 0..23, flags included) is at @frame
 * and whose @payload_len bytes of payload follow it: CRC32C over both, or with
 * SMP_FLAG_XXH64 in the header's flags the low 32 bits of XXH64 over the payload
 * seeded with the header's CRC32C. What smp_frame_seal() writes and the decoder checks.
 */
uint32_t smp_frame_sum(const uint8_t *frame, uint32_t payload_len);

struct smp_frame {
	uint8_t major;
	uint8_t minor;
	uint8_t type;
	uint8_t flags;
	uint32_t len;
	uint64_t seq;
	const uint8_t *payload;	/* points into the decoder; valid until its next call */
};

/*
 * Seal a frame in place: the caller wrote @payload_len bytes of payload at
 * frame + SMP_HDR_SIZE; this fills in the header and both checksums.
 * Returns the frame's total size, or -EMSGSIZE when @payload_len > SMP_MAX_PAYLOAD.
 */
long smp_frame_seal(uint8_t *frame, uint8_t type, uint8_t flags, uint64_t seq,
		    uint32_t payload_len);

/* Copy @payload behind a header into @buf (capacity @cap) and seal it.
 * Returns the frame's size, -ENOSPC or -EMSGSIZE. */
long smp_frame_encode(uint8_t *buf, size_t cap, uint8_t type, uint8_t flags,
		      uint64_t seq, const void *payload, size_t len);

/* What the decoder skipped or refused, cumulative. */
struct smp_decoder_stats {
	uint64_t frames;		/* frames delivered */
	uint64_t bytes;			/* bytes of delivered frames */
	uint64_t garbage_bytes;		/* bytes skipped while looking for a frame */
	uint64_t garbage_runs;		/* number of -EPROTO reports */
	uint64_t header_errors;		/* bad hcrc */
	uint64_t payload_errors;	/* bad crc */
	uint64_t oversize;		/* length above the limit */
};

struct smp_decoder;

/*
 * Create a decoder accepting payloads of at most @max_payload bytes (0 means
 * SMP_MAX_PAYLOAD; larger values are clamped to it). Its one buffer holds
 * SMP_HDR_SIZE + max_payload bytes plus a read-ahead of the same size.
 * Returns NULL when out of memory. Free with smp_decoder_free().
 */
struct smp_decoder *smp_decoder_new(uint32_t max_payload);
void smp_decoder_free(struct smp_decoder *d);
/* Forget buffered input and a sticky version error (for a new connection). */
void smp_decoder_reset(struct smp_decoder *d);

/*
 * Copy up to @len bytes of input into the decoder. Returns how many it took: less than
 * @len when its buffer is full, in which case call smp_decoder_next() until it returns
 * 0, then feed the rest.
 */
size_t smp_decoder_feed(struct smp_decoder *d, const void *data, size_t len);

/* Zero-copy variant of feed: read(2) straight into *ret_space (up to the returned
 * size), then smp_decoder_commit() the number of bytes read. *ret_space is valid
 * only until the next other call on @d: smp_decoder_next() moves the buffer's
 * start (to 0 when it takes the last frame), so take the space right before the
 * read. */
size_t smp_decoder_space(struct smp_decoder *d, uint8_t **ret_space);
void smp_decoder_commit(struct smp_decoder *d, size_t n);

/*
 * Decode the next frame.
 *   1            a frame is in *ret_frame (its payload valid until the next call on @d)
 *   0            more input is needed
 *   -EPROTO      garbage was skipped (*ret_skipped bytes); call again
 *   -EBADMSG     a header or payload checksum failed; one byte skipped; call again
 *   -EMSGSIZE    a valid header announced a payload above the limit; header skipped
 *   -EPROTONOSUPPORT  a valid header of another major version (*ret_frame->major);
 *                sticky: the connection must be closed (smp_decoder_reset() to reuse)
 * @ret_skipped may be NULL.
 */
int smp_decoder_next(struct smp_decoder *d, struct smp_frame *ret_frame,
		     size_t *ret_skipped);

/* Bytes buffered but not yet decoded. */
size_t smp_decoder_pending(const struct smp_decoder *d);
const struct smp_decoder_stats *smp_decoder_stats(const struct smp_decoder *d);

/* A short English description of an error returned by this library. */
const char *smp_strerror(int err);
/* "HELLO", "PAGE", ... or NULL for an unknown type. */
const char *smp_type_name(uint8_t type);

/* ---- Sequence numbers (PROTOCOL.md section 2.2) --------------------------------- */

/*
 * A sequenced frame carries 1 <= seq <= SMP_SEQ_MAX, and a receiver expecting
 * `expected` accepts a jump ahead of at most SMP_SEQ_MAX_GAP frames: with these
 * bounds, seq + 1, a gap and the sum of a stream's gaps never wrap a u64 (nor an
 * int64 column).
 */
#define SMP_SEQ_MAX		((UINT64_C(1) << 48) - 1)
#define SMP_SEQ_MAX_GAP		(UINT64_C(1) << 40)

enum smp_seq_verdict {
	SMP_SEQ_NEXT = 0,	/* seq == expected: apply it */
	SMP_SEQ_GAP,		/* expected < seq <= expected + SMP_SEQ_MAX_GAP: loss */
	SMP_SEQ_DUP,		/* 1 <= seq < expected: a resend of something held */
	SMP_SEQ_BAD,		/* 0, above SMP_SEQ_MAX, or too far ahead: malformed */
};

/* True when @next is a valid next expected seq (1 .. SMP_SEQ_MAX + 1). */
static inline bool smp_seq_next_ok(uint64_t next)
{
	return next >= 1 && next <= SMP_SEQ_MAX + 1;
}

/* Classify @seq for a receiver expecting @expected, which must satisfy
 * smp_seq_next_ok() (otherwise every seq is SMP_SEQ_BAD). */
enum smp_seq_verdict smp_seq_classify(uint64_t expected, uint64_t seq);

/* ---- Payloads ---------------------------------------------------------------- */

/* Size bounds of a type's payload (PROTOCOL.md section 4). Returns -ENOENT for an
 * unknown type, -EBADMSG when @len is out of bounds, 0 when fine. */
int smp_msg_check_size(uint8_t type, size_t len);

#define SMP_HELLO_FIXED		64u
#define SMP_HELLO_STACKMAP	0x1u
#define SMP_HELLO_PAGES_BE	0x2u
#define SMP_HELLO_TIME		0x4u	/* the agent answers TIME (1.1) */
/* 1.5: HELLO's trailing ACK pacing, after its strings (PROTOCOL.md 4.1) */
#define SMP_HELLO_PACING_SIZE	8u
#define SMP_ACK_MS_MAX		1000u	/* a host holds an ACK back at most this long */

struct smp_hello {
	uint8_t boot_id[16];
	uint64_t stream_id;
	uint64_t text_addr;
	uint32_t nr_cpus;
	uint32_t page_size;
	uint32_t map_bits;
	uint32_t max_depth;
	uint64_t map_epoch;
	uint32_t flags;
	const char *release;		/* not NUL-terminated */
	uint8_t release_len;
	const uint8_t *build_id;
	uint8_t build_id_len;
	const char *trace_clock;	/* not NUL-terminated */
	uint8_t clock_len;
	/* 1.5, ACK pacing: the host may hold an ACK back up to ack_ms after the commit
	 * that made it due, unless the frames since the last ACK hold ack_bytes of payload
	 * or more. Both 0 (or a HELLO without them): an ACK after every commit. Encoded
	 * only when one is not 0, so that a HELLO without pacing is as in 1.4. */
	uint32_t ack_ms;
	uint32_t ack_bytes;
};
long smp_hello_encode(const struct smp_hello *m, uint8_t *buf, size_t cap);
int smp_hello_decode(struct smp_hello *ret, const uint8_t *buf, size_t len);

#define SMP_FORMAT_NAME_MAX	128u
struct smp_format {
	const char *name;	/* not NUL-terminated, validated charset */
	uint16_t name_len;
	const char *text;
	size_t text_len;
};
long smp_format_encode(const struct smp_format *m, uint8_t *buf, size_t cap);
int smp_format_decode(struct smp_format *ret, const uint8_t *buf, size_t len);

/* KSYMS, MODULES and CMDLINES */
#define SMP_TEXT_LAST		0x1u
#define SMP_TEXT_FIXED		16u
struct smp_text {
	uint32_t generation;
	uint32_t chunk;
	uint32_t flags;
	const char *text;
	size_t text_len;
};
long smp_text_encode(const struct smp_text *m, uint8_t *buf, size_t cap);
int smp_text_decode(struct smp_text *ret, const uint8_t *buf, size_t len);

#define SMP_PAGE_FIXED		8u
#define SMP_PAGE_HDR_MIN	16u
#define SMP_PAGE_SIZE_MAX	65536u
struct smp_page {
	uint32_t cpu;
	const uint8_t *data;	/* page header + committed bytes */
	size_t data_len;
};
/* Writes only the 8-byte fixed part when m->data is NULL (data already in place). */
long smp_page_encode(const struct smp_page *m, uint8_t *buf, size_t cap);
int smp_page_decode(struct smp_page *ret, const uint8_t *buf, size_t len);

#define SMP_LOST_FIXED		24u
#define SMP_LOST_CPU_SIZE	40u
#define SMP_MAX_CPUS		4096u
struct smp_lost_cpu {
	uint32_t cpu;
	uint64_t overrun;
	uint64_t commit_overrun;
	uint64_t dropped_events;
	uint64_t read_events;
};
struct smp_lost {
	uint32_t nr;
	uint64_t agent_dropped_frames;
	uint64_t agent_dropped_bytes;
	const uint8_t *cpus;	/* nr records; read them with smp_lost_cpu() */
};
long smp_lost_encode(const struct smp_lost *m, const struct smp_lost_cpu *cpus,
		     uint8_t *buf, size_t cap);
int smp_lost_decode(struct smp_lost *ret, const uint8_t *buf, size_t len);
/* Record @i (< m->nr) of a decoded LOST. */
void smp_lost_cpu(const struct smp_lost *m, uint32_t i, struct smp_lost_cpu *ret);

enum smp_stat_key {
	SMP_STAT_MAP_ENTRIES	= 1,
	SMP_STAT_MAP_CAPACITY	= 2,
	SMP_STAT_MAP_SUCCESSES	= 3,
	SMP_STAT_MAP_DROPS	= 4,
	SMP_STAT_MAP_EPOCH	= 5,
	SMP_STAT_AGENT_FRAMES	= 16,
	SMP_STAT_AGENT_BYTES	= 17,
	SMP_STAT_AGENT_RESENT	= 18,
	SMP_STAT_AGENT_CPU_NS	= 19,
	SMP_STAT_AGENT_WRITES	= 20,
	SMP_STAT_DURABLE_P50_US	= 21,
	SMP_STAT_DURABLE_P99_US	= 22,
	SMP_STAT_DURABLE_MAX_US	= 23,
	SMP_STAT_DURABLE_PAGES	= 24,
	SMP_STAT_RB_UNREAD	= 25,
};
#define SMP_STATS_MAX		256u
struct smp_stat {
	uint32_t key;
	uint64_t value;
};
long smp_stats_encode(const struct smp_stat *stats, uint32_t nr, uint8_t *buf,
		      size_t cap);
/* *ret_nr stats; read them with smp_stats_get(). */
int smp_stats_decode(uint32_t *ret_nr, const uint8_t *buf, size_t len);
void smp_stats_get(const uint8_t *buf, uint32_t i, struct smp_stat *ret);

enum smp_bye_reason {
	SMP_BYE_SHUTDOWN = 0,
	SMP_BYE_RESTART = 1,
};
long smp_bye_encode(uint32_t reason, uint8_t *buf, size_t cap);
int smp_bye_decode(uint32_t *ret_reason, const uint8_t *buf, size_t len);

struct smp_welcome {
	uint64_t resume_seq;
	uint32_t max_payload;
};
/* -EINVAL unless smp_seq_next_ok(resume_seq) and max_payload <= SMP_MAX_PAYLOAD. */
long smp_welcome_encode(const struct smp_welcome *m, uint8_t *buf, size_t cap);
int smp_welcome_decode(struct smp_welcome *ret, const uint8_t *buf, size_t len);

/* -EINVAL when @acked_seq > SMP_SEQ_MAX. */
long smp_ack_encode(uint64_t acked_seq, uint8_t *buf, size_t cap);
int smp_ack_decode(uint64_t *ret_acked_seq, const uint8_t *buf, size_t len);

/*
 * TIME and TIME_REPLY (PROTOCOL.md section 4.11): the host's clock probe. The guest
 * writes smp_time_marker() text into its trace_marker, so that its ring buffer stamps
 * the probe with the guest's own trace clock, then answers with TIME_REPLY. Both are
 * unsequenced and 16 bytes.
 */
#define SMP_TIME_SIZE		16u
#define SMP_TIME_MARKER		"stackmap-time "	/* + 16 lowercase hex digits */
#define SMP_TIME_MARKER_LEN	(sizeof(SMP_TIME_MARKER) - 1 + 16)

/* -EINVAL when @probe_id is 0. */
long smp_time_encode(uint64_t probe_id, uint8_t *buf, size_t cap);
int smp_time_decode(uint64_t *ret_probe_id, const uint8_t *buf, size_t len);

struct smp_time_reply {
	uint64_t probe_id;
	int32_t status;		/* 0: the marker was written; else -errno of the write */
};
long smp_time_reply_encode(const struct smp_time_reply *m, uint8_t *buf, size_t cap);
int smp_time_reply_decode(struct smp_time_reply *ret, const uint8_t *buf, size_t len);

/* Write the marker text for @probe_id (SMP_TIME_MARKER_LEN bytes, no terminator) into
 * @buf. Returns its length or -ENOSPC. */
long smp_time_marker(uint64_t probe_id, char *buf, size_t cap);
/* The probe id of a marker text as the kernel records it (a print event's buf): the
 * marker, an optional newline, then the end of @len or a NUL (what follows it, the
 * ring buffer's alignment padding, is ignored). -EBADMSG otherwise. */
int smp_time_marker_parse(const char *text, size_t len, uint64_t *ret_probe_id);

/* ---- ARENA (1.3) and the resend window's recovery header ----------------------- */

/*
 * ARENA (PROTOCOL.md section 4.12), unsequenced, guest to host: the guest-physical
 * address of every page of the agent's resend window (its recovery header page first,
 * then the frame arena), so that a host holding a dump of a panicked guest can read
 * the frames the agent had not delivered yet. A list of nr_pages addresses goes out in
 * one or more messages that carry consecutive slices [first, first + nr) of it under
 * one list_id; a new list (a page moved) has a new list_id.
 */
#define SMP_ARENA_FIXED		24u
#define SMP_ARENA_MAX_PAGES	(1u << 21)	/* 8 GiB of 4 KiB pages */
#define SMP_ARENA_MAX_PER_MSG	((SMP_MAX_PAYLOAD - SMP_ARENA_FIXED) / 8u)
#define SMP_ARENA_PAGE_MIN	4096u
#define SMP_ARENA_PAGE_MAX	65536u

struct smp_arena {
	uint32_t page_size;	/* the guest's page size, a power of two, 4096..65536 */
	uint32_t nr_pages;	/* pages of the whole list, 1..SMP_ARENA_MAX_PAGES */
	uint32_t first;		/* index in the list of this message's first address */
	uint32_t nr;		/* addresses in this message, 1..SMP_ARENA_MAX_PER_MSG */
	uint64_t list_id;	/* not 0; the same in every message of one list */
	const uint8_t *addrs;	/* decode: nr little-endian u64, read with smp_arena_addr() */
};
/* Encode @m with @addrs (m->nr of them; m->addrs is ignored). -EINVAL for a field out
 * of range or an address that is not page aligned, -ENOSPC. */
long smp_arena_encode(const struct smp_arena *m, const uint64_t *addrs, uint8_t *buf,
		      size_t cap);
/* -EBADMSG for a size other than SMP_ARENA_FIXED + 8 * nr, a field out of range, or an
 * address that is not a multiple of page_size. */
int smp_arena_decode(struct smp_arena *ret, const uint8_t *buf, size_t len);
uint64_t smp_arena_addr(const struct smp_arena *m, uint32_t i);

/*
 * The recovery header, the first page of the agent's window mapping (PROTOCOL.md
 * section 4.12): what a dump reader needs besides the frames. The frames start
 * hdr_pages pages after it, arena_len bytes of them. The HELLO of the current stream is
 * kept in one of two slots; the agent writes the other slot, then switches
 * hello_slot, so a dump taken at any instant holds one whole HELLO or none.
 *
 *   off  size
 *   0    8     magic SMP_ARENA_HDR_MAGIC ("SMARENA1")
 *   8    4     version, 1
 *   12   4     page_size
 *   16   4     hdr_pages (>= 1)
 *   20   4     hello_slot: 0 or 1, SMP_ARENA_NO_HELLO for none
 *   24   8     arena_len
 *   32   4     hello_len[0]
 *   36   4     hello_len[1]
 *   40   24    reserved (0)
 *   64   SMP_ARENA_HELLO_SLOT  slot 0: a sealed HELLO frame
 *   ..   SMP_ARENA_HELLO_SLOT  slot 1
 */
#define SMP_ARENA_HDR_MAGIC	UINT64_C(0x31414e4552414d53)
#define SMP_ARENA_HDR_VERSION	1u
#define SMP_ARENA_HDR_FIXED	64u
#define SMP_ARENA_HELLO_SLOT	1024u
#define SMP_ARENA_HDR_SIZE	(SMP_ARENA_HDR_FIXED + 2 * SMP_ARENA_HELLO_SLOT)
#define SMP_ARENA_NO_HELLO	0xffffffffu

struct smp_arena_hdr {
	uint32_t page_size;
	uint32_t hdr_pages;
	uint64_t arena_len;
	const uint8_t *hello;	/* decode: the current HELLO frame, NULL if none */
	uint32_t hello_len;
};
/* The fixed part of a new header (no HELLO) into @buf (>= SMP_ARENA_HDR_SIZE). */
void smp_arena_hdr_init(uint8_t *buf, uint32_t page_size, uint32_t hdr_pages,
			uint64_t arena_len);
/* Store a sealed HELLO frame (<= SMP_ARENA_HELLO_SLOT bytes) into the slot not in use,
 * then make it the current one. -EMSGSIZE when it does not fit. */
int smp_arena_hdr_set_hello(uint8_t *buf, const uint8_t *frame, size_t len);
/* No HELLO (a fresh stream is starting): the frames of the arena have none. */
void smp_arena_hdr_clear_hello(uint8_t *buf);
/*
 * Decode a header found in @len bytes (a dump's). -EBADMSG when the magic, version or
 * a size is wrong (page size a power of two 4096..65536, hdr_pages * page_size holding
 * the header). The HELLO is returned as it is found (hello_len bounded by the slot),
 * not checked: the caller decodes it as a frame.
 */
int smp_arena_hdr_decode(struct smp_arena_hdr *ret, const uint8_t *buf, size_t len);

/* ---- stack_id ---------------------------------------------------------------- */

#define SMP_ID_SLOT_BITS	20
#define SMP_ID_TAG_BITS		11
#define SMP_ID_SLOT_MASK	((1u << SMP_ID_SLOT_BITS) - 1)
#define SMP_ID_TAG_MASK		((1u << SMP_ID_TAG_BITS) - 1)

static inline uint32_t smp_id_slot(uint32_t id) { return id & SMP_ID_SLOT_MASK; }
static inline uint32_t smp_id_tag(uint32_t id)
{
	return (id >> SMP_ID_SLOT_BITS) & SMP_ID_TAG_MASK;
}
static inline uint32_t smp_epoch_tag(uint64_t epoch)
{
	return (uint32_t)(epoch & SMP_ID_TAG_MASK);
}
static inline uint32_t smp_id_make(uint64_t epoch, uint32_t slot)
{
	return (smp_epoch_tag(epoch) << SMP_ID_SLOT_BITS) | (slot & SMP_ID_SLOT_MASK);
}
/* Bit 31 set, or out of the 31-bit range: not a stack id. */
static inline bool smp_id_valid(uint32_t id) { return !(id & 0x80000000u); }

/* ---- Delta records (stack_map_delta, STACKS, EPOCH) ------------------------ */

#define SMP_DELTA_HDR_SIZE	16u
#define SMP_DELTA_MAX_DEPTH	64u
#define SMP_DELTA_EPOCH_SIZE	32u

enum smp_delta_kind {
	SMP_DELTA_STACK = 0,
	SMP_DELTA_EPOCH = 1,
};

struct smp_delta_rec {
	uint32_t kind;
	uint32_t stack_id;
	uint32_t nr;			/* stack depth (stack records) */
	uint32_t ref_count;
	const uint8_t *ips;		/* nr little-endian u64; read with smp_delta_ip() */
	uint64_t epoch;			/* epoch records */
	uint64_t timestamp;		/* epoch records */
};

/*
 * Parse the record at *off in (buf, len). Returns 1 and advances *off past it, 0 at the
 * end of the buffer, -EBADMSG for a truncated or invalid record (bad kind, depth 0 or
 * above SMP_DELTA_MAX_DEPTH, an epoch record of the wrong shape, bit 31 in stack_id, an
 * epoch record whose stack_id is not its epoch's id base).
 */
int smp_delta_next(const uint8_t *buf, size_t len, size_t *off,
		   struct smp_delta_rec *ret);
static inline uint64_t smp_delta_ip(const struct smp_delta_rec *r, uint32_t i)
{
	const uint8_t *p = r->ips + (size_t)i * 8;
	uint64_t v = 0;

	for (int b = 7; b >= 0; b--)
		v = (v << 8) | p[b];
	return v;
}
/* Encode records; the caller knows the sizes: 16 + 8 * nr. Return the size or -ENOSPC. */
long smp_delta_put_stack(uint8_t *buf, size_t cap, uint32_t stack_id, uint32_t ref_count,
			 const uint64_t *ips, uint32_t nr);
long smp_delta_put_epoch(uint8_t *buf, size_t cap, uint64_t epoch, uint64_t timestamp);

/* ---- stack_map_bin v1 (the seed's export) ---------------------------------- */

#define SMP_BIN_MAGIC		0x46534D42u	/* 'FSMB' */
#define SMP_BIN_VERSION		1u
#define SMP_BIN_HDR_SIZE	16u
#define SMP_BIN_ENTRY_SIZE	16u

struct smp_bin {
	const uint8_t *buf;
	size_t len;
	size_t off;
	bool big_endian;
	uint32_t version;
	uint32_t nr_stacks;
	uint32_t index;		/* entries returned so far */
};

struct smp_bin_entry {
	uint32_t stack_id;
	uint32_t nr;
	uint32_t ref_count;
	const uint8_t *ips;	/* nr u64 in the file's byte order: smp_bin_ip() */
	bool big_endian;
};

/* Check the header: -EBADMSG when shorter than the header or the magic is wrong in
 * both byte orders, -EPROTONOSUPPORT for a version other than 1. */
int smp_bin_open(struct smp_bin *ret, const uint8_t *buf, size_t len);
/* 1 and the next entry, 0 after nr_stacks entries, -EBADMSG when the entry header or
 * its IP array is truncated. */
int smp_bin_next(struct smp_bin *it, struct smp_bin_entry *ret);
uint64_t smp_bin_ip(const struct smp_bin_entry *e, uint32_t i);

#ifdef __cplusplus
}
#endif
#endif /* SMP_PROTO_H */
