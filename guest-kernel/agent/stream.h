/* SPDX-License-Identifier: MIT */
/*
 * stream.h - building the sequenced frames the agent sends, straight into the window:
 * PAGE (a ring-buffer page cut after its committed bytes), STACKS and EPOCH (delta
 * records split into frames of whole records), KSYMS and MODULES (text chunked on line
 * boundaries), FORMAT, LOST, STATS, BYE; and the unsequenced HELLO frame.
 *
 * Every function is pure apart from appending to the window; each returns 0 (or a
 * count) on success and a negative errno on failure.
 */
#ifndef SMG_STREAM_H
#define SMG_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "window.h"

/* Flag bits of the page header's commit field (kernel/trace/ring_buffer.c). */
#define RB_MISSED_EVENTS (1u << 31)	/* events were overwritten before this page */
#define RB_MISSED_STORED (1u << 30)	/* their count is stored after the data */
#define RB_MISSED_FLAGS (RB_MISSED_EVENTS | RB_MISSED_STORED)
/* The read took everything committed on its CPU (guest-kernel patch 0017, only for a
 * trace_pipe_raw file that asked: ring.h). Never on the wire. */
#define RB_CAUGHT_UP (1u << 29)

/* The page header layout, as tracefs events/header_page describes it. */
struct page_layout {
	uint32_t page_size;	/* whole page: header + data */
	uint32_t commit_off;	/* offset of `commit` (8 on 64-bit) */
	uint32_t commit_size;	/* size of `commit` (sizeof(long)) */
	uint32_t data_off;	/* offset of `data` (16 on 64-bit) */
};

/* Fill @ret with the native layout for @page_size (the fallback without header_page). */
void page_layout_default(struct page_layout *ret, uint32_t page_size);

/*
 * How many bytes of the raw page @page (@len bytes read) go on the wire: the header, the
 * committed data and, when RB_MISSED_STORED is set, the missed-events count stored
 * right after the data. *ret_missed is set when RB_MISSED_EVENTS is set. Returns
 * -EBADMSG when the page is shorter than its header or its commit is out of range.
 * A page with nothing committed and no loss flag gives *ret_len = 0.
 */
/* Whether @page's commit word has RB_CAUGHT_UP, which is cleared in it. */
bool page_take_caught_up(const struct page_layout *pl, uint8_t *page);
int page_wire_len(const struct page_layout *pl, const uint8_t *page, size_t len,
		  size_t *ret_len, int *ret_missed);

/*
 * The trace-clock time of the first data event of the raw page @page (@len bytes
 * read): the header's time stamp plus the time extends ahead of that event, or the
 * absolute time stamp ahead of it. The header alone is not that time on a page read in
 * parts: 6.1's ring_buffer_read_page() copying from the page the writer is on puts the
 * reader's stamp in the copy's header (the time of the last event read before), and
 * when the writer was quiet in between, its next event follows a TIME_EXTEND of the
 * gap. A page without a data event gives the time after what it holds; a header
 * shorter than @pl's gives 0.
 */
uint64_t page_first_ts(const struct page_layout *pl, const uint8_t *page, size_t len);

/* Append a PAGE frame for @page. Returns 1 when a frame was added, 0 when the page
 * was empty, -errno. */
int stream_page(struct win *w, const struct page_layout *pl, uint32_t cpu,
		const uint8_t *page, size_t len, int *ret_missed);

/*
 * The same for a page read straight into the window: @frame is the frame reserved by
 * win_reserve() with room for SMP_PAGE_FIXED + @len payload bytes, the page at
 * frame + SMP_HDR_SIZE + SMP_PAGE_FIXED. Commits the frame cut to the page's wire
 * length (1), or cancels the reservation (0: empty page; -errno).
 */
int stream_page_reserved(struct win *w, const struct page_layout *pl, uint32_t cpu,
			 uint8_t *frame, size_t len, int *ret_missed);

/* Counters of stream_delta(). */
struct delta_counts {
	uint64_t stacks;	/* stack records */
	uint64_t epochs;	/* epoch records */
	uint64_t frames;	/* frames appended */
	uint64_t last_epoch;	/* epoch of the last epoch record, if epochs > 0 */
	uint64_t first_epoch;	/* epoch of the first epoch record, if epochs > 0 */
	uint64_t first_epoch_seq; /* the seq its EPOCH frame got, if epochs > 0 */
};

/* Payload cap of STACKS frames: one frame fits one 32 KiB port write. */
#define STREAM_STACKS_MAX (32u * 1024u - SMP_HDR_SIZE)

/*
 * Split the delta records in (@buf, @len) into STACKS frames (runs of whole stack
 * records, at most @max_payload bytes each) and one EPOCH frame per epoch record, in
 * order. Stops before a trailing partial record. Returns the bytes consumed (whole
 * records) or -EBADMSG at an invalid record (*ret_bad_off says where; the records
 * before it were appended).
 */
long stream_delta(struct win *w, const uint8_t *buf, size_t len, uint32_t max_payload,
		  struct delta_counts *counts, size_t *ret_bad_off);

/*
 * Append a KSYMS or MODULES snapshot (@type) of generation @gen: chunks of at most
 * @chunk_max text bytes, each ending on a line boundary (a line longer than a chunk is
 * cut), the last flagged SMP_TEXT_LAST. An empty text is one empty LAST chunk.
 * Returns the number of frames appended.
 */
int stream_text(struct win *w, uint8_t type, uint32_t gen, const char *text, size_t len,
		size_t chunk_max);

int stream_format(struct win *w, const char *name, const char *text, size_t len);
int stream_lost(struct win *w, const struct smp_lost_cpu *cpus, uint32_t nr,
		uint64_t dropped_frames, uint64_t dropped_bytes);
int stream_stats(struct win *w, const struct smp_stat *stats, uint32_t nr);
int stream_bye(struct win *w, uint32_t reason);

/* Encode a whole HELLO frame (seq 0) into @buf. Returns its size or -errno. */
long stream_hello(const struct smp_hello *h, uint8_t *buf, size_t cap);

/* Convert the whole native-order delta records at the start of @buf to little-endian
 * in place (nothing to do on little-endian machines). Returns the bytes of whole
 * records (converted), so a caller with a partial record converts it once complete. */
size_t delta_to_le(uint8_t *buf, size_t len);

#endif
