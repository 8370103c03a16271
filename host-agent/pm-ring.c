// SPDX-License-Identifier: MIT
/* pm-ring.c - unread events out of a crashed guest's ring buffers (see pm-ring.h). */
#include "pm-ring.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

#include "le.h"
#include "proto.h"

/* struct ring_buffer_dump_info (patch 0014, kernel/trace/ring_buffer.c), version 1 */
#define RB_DUMP_MAGIC		0x49445252u
#define RB_DUMP_VERSION		1u
enum {
	RD_MAGIC, RD_VERSION, RD_SIZE, RD_LONG_SIZE, RD_FLAG_MASK, RD_PAGE_HEAD,
	RD_WRITE_MASK, RD_TB_CPUS, RD_TB_BUFFERS, RD_CPU_CPU, RD_CPU_NR_PAGES,
	RD_CPU_HEAD_PAGE, RD_CPU_TAIL_PAGE, RD_CPU_COMMIT_PAGE, RD_CPU_READER_PAGE,
	RD_BP_LIST, RD_BP_WRITE, RD_BP_READ, RD_BP_PAGE, RD_DP_TIME_STAMP, RD_DP_COMMIT,
	RD_DP_DATA, RD_NR
};
#define RD_OFFSET_MAX		4096u	/* no offset into these structs is larger */

/* ring-buffer event types (include/linux/ring_buffer.h) */
#define RB_TYPE_PADDING		29u
#define RB_TYPE_TIME_EXTEND	30u
#define RB_TYPE_TIME_STAMP	31u
#define RB_TS_MSB		(0xf8ull << 56)	/* rb_fix_abs_ts(): bits the event lacks */

void ha_pm_ring_stats_clear(HaPmRingStats *st)
{
	g_clear_pointer(&st->why, g_free);
}

bool ha_pm_ring_walk(const uint8_t *data, uint32_t commit, uint32_t upto, uint64_t ts,
		     uint64_t *ret_ts, uint64_t *ret_events)
{
	uint64_t events = 0;
	uint32_t off = 0;

	while (off < commit && off < upto) {
		uint32_t w, type, delta, len;

		if (commit - off < 4)
			return false;
		w = ha_le32(data + off);
		type = w & 0x1f;
		delta = w >> 5;
		switch (type) {
		case RB_TYPE_PADDING:
			if (!delta) {
				/* the rest of the page is padding */
				off = commit;
				continue;
			}
			/* a discarded event: its delta still counts (kbuffer does so) */
			if (commit - off < 8)
				return false;
			len = ha_le32(data + off + 4);
			if (len > commit - off - 4)
				return false;
			ts += delta;
			len += 4;
			break;
		case RB_TYPE_TIME_EXTEND:
		case RB_TYPE_TIME_STAMP:
			if (commit - off < 8)
				return false;
			if (type == RB_TYPE_TIME_EXTEND)
				ts += ((uint64_t)ha_le32(data + off + 4) << 27) | delta;
			else
				ts = ((((uint64_t)ha_le32(data + off + 4) << 27) | delta) &
				      ~RB_TS_MSB) | (ts & RB_TS_MSB);
			len = 8;
			break;
		default:
			if (type == 0) {
				if (commit - off < 8)
					return false;
				len = ha_le32(data + off + 4);
				if (len > commit - off - 4 || len < 4)
					return false;
				len += 4;
			} else {
				len = 4 + type * 4;
			}
			ts += delta;
			events++;
			break;
		}
		if (len > commit - off)
			return false;
		off += len;
	}
	if (off > upto && upto < commit)
		return false;	/* @upto is not an event boundary */
	*ret_ts = ts;
	*ret_events = events;
	return true;
}

typedef struct {
	HaKvmem *m;
	uint32_t d[RD_NR];
	uint32_t page_size;
	HaPmFrames *frames;
	HaPmRingStats *st;
	uint8_t *page;		/* page_size bytes: the data page read */
	uint8_t *payload;	/* 8 + page_size bytes: the PAGE frame's payload */
} Walk;

static bool rd_ptr(Walk *w, uint64_t addr, uint64_t *ret, GError **error)
{
	return ha_kvmem_u64(w->m, addr, ret, error);
}

/*
 * Emit one data page @bpage of @cpu, from event offset @from. Returns false with
 * @error when the page cannot be read or is not well-formed.
 */
static bool emit_page(Walk *w, uint32_t cpu, uint64_t bpage, uint32_t from,
		      GError **error)
{
	uint32_t data_off = w->d[RD_DP_DATA], data_max = w->page_size - data_off;
	uint64_t dpage, ts, ts_from, events, all;
	uint32_t commit;

	if (!rd_ptr(w, bpage + w->d[RD_BP_PAGE], &dpage, error) ||
	    !ha_kvmem_read(w->m, dpage, w->page, w->page_size, error))
		return false;
	ts = ha_le64(w->page + w->d[RD_DP_TIME_STAMP]);
	/* local_t commit: only the low 20 bits are an index (RB_WRITE_MASK) */
	commit = ha_le32(w->page + w->d[RD_DP_COMMIT]) & w->d[RD_WRITE_MASK];
	if (commit > data_max) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "page %#" PRIx64 " commits %u bytes of %u", bpage, commit, data_max);
		return false;
	}
	if (from >= commit)
		return true;
	if (!ha_pm_ring_walk(w->page + data_off, commit, from, ts, &ts_from, &events) ||
	    !ha_pm_ring_walk(w->page + data_off, commit, commit, ts, &ts, &all)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "page %#" PRIx64 " holds a malformed event", bpage);
		return false;
	}
	/* PAGE payload: cpu, reserved, then the page header and its committed bytes */
	memset(w->payload, 0, 8 + data_off);
	w->payload[0] = cpu & 0xff;
	w->payload[1] = (cpu >> 8) & 0xff;
	w->payload[2] = (cpu >> 16) & 0xff;
	w->payload[3] = (cpu >> 24) & 0xff;
	for (int b = 0; b < 8; b++) {
		w->payload[8 + w->d[RD_DP_TIME_STAMP] + b] = (uint8_t)(ts_from >> (8 * b));
		w->payload[8 + w->d[RD_DP_COMMIT] + b] =
			b < 4 ? (uint8_t)((commit - from) >> (8 * b)) : 0;
	}
	memcpy(w->payload + 8 + data_off, w->page + data_off + from, commit - from);
	if (!ha_pm_frames_add(w->frames, SMP_PAGE, w->payload, 8 + data_off + commit - from,
			      error))
		return false;
	w->st->pages++;
	w->st->events += all - events;
	w->st->bytes += commit - from;
	return true;
}

/* The unread pages of one CPU's ring buffer @cb. */
static bool walk_cpu(Walk *w, uint32_t cpu, uint64_t cb, GError **error)
{
	uint64_t reader, commit_page, head_hint, nr_pages, page, head = 0, next;
	uint32_t cpu_seen, read;
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_int64_hash, g_int64_equal,
							   g_free, NULL);
	uint64_t mask = w->d[RD_FLAG_MASK];
	g_autoptr(GError) reader_error = NULL;

	if (!ha_kvmem_u32(w->m, cb + w->d[RD_CPU_CPU], &cpu_seen, error) ||
	    !ha_kvmem_u64(w->m, cb + w->d[RD_CPU_NR_PAGES], &nr_pages, error) ||
	    !rd_ptr(w, cb + w->d[RD_CPU_READER_PAGE], &reader, error) ||
	    !rd_ptr(w, cb + w->d[RD_CPU_COMMIT_PAGE], &commit_page, error) ||
	    !rd_ptr(w, cb + w->d[RD_CPU_HEAD_PAGE], &head_hint, error))
		return false;
	if (cpu_seen != cpu || nr_pages == 0 || nr_pages > HA_PM_RING_MAX_PAGES) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "its buffer says cpu %u, %" PRIu64 " pages", cpu_seen, nr_pages);
		return false;
	}
	/*
	 * 1. the reader page, from the index the reader consumed it to. When it cannot
	 * be read, the pages after it still can: they are kept, and the CPU is reported
	 * failed for the reader page's events.
	 */
	if (!ha_kvmem_u32(w->m, reader + w->d[RD_BP_READ], &read, &reader_error) ||
	    !emit_page(w, cpu, reader, read, &reader_error))
		g_prefix_error(&reader_error, "the reader page: ");
	if (reader == commit_page)
		goto out;	/* the writer is on the reader page: nothing else unread */
	/*
	 * 2. the head page: the one the pointer flagged RB_PAGE_HEAD points to (the
	 * kernel's rb_set_head_page() looks for it the same way, from its hint). A
	 * writer that was moving the head when the guest stopped left the pointer
	 * flagged RB_PAGE_UPDATE instead (rb_head_page_replace()): the page it points
	 * to is still the head, the move had not happened.
	 */
	page = head_hint;
	for (uint64_t i = 0; i <= nr_pages; i++) {
		if (!rd_ptr(w, page + w->d[RD_BP_LIST], &next, error))
			return false;
		if (next & mask) {
			head = (next & ~mask) - w->d[RD_BP_LIST];
			break;
		}
		page = (next & ~mask) - w->d[RD_BP_LIST];
	}
	if (!head) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "no head page in %" PRIu64 " pages", nr_pages);
		return false;
	}
	/* 3. from the head page to the commit page, each whole */
	page = head;
	for (uint64_t i = 0;; i++) {
		if (i > nr_pages || !g_hash_table_add(seen, g_memdup2(&page, 8))) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "the commit page is not within %" PRIu64
				    " pages of the head", nr_pages);
			return false;
		}
		if (!emit_page(w, cpu, page, 0, error))
			return false;
		if (page == commit_page)
			break;
		if (!rd_ptr(w, page + w->d[RD_BP_LIST], &next, error))
			return false;
		page = (next & ~mask) - w->d[RD_BP_LIST];
	}
out:
	if (reader_error) {
		g_propagate_error(error, g_steal_pointer(&reader_error));
		return false;
	}
	return true;
}

bool ha_pm_ring_recover(HaKvmem *m, const HaVmci *vi, uint32_t nr_cpus,
			uint32_t page_size, HaPmFrames *frames, HaPmRingStats *st,
			GError **error)
{
	uint64_t info, tr, off_ab, off_buf, tb, buffers;
	uint8_t raw[RD_NR * 4];
	uint32_t cpus;
	g_autofree uint8_t *page = NULL, *payload = NULL;
	Walk w = { .m = m, .page_size = page_size, .frames = frames, .st = st };

	if (!ha_vmci_symbol(vi, "ring_buffer_dump_info", &info) ||
	    !ha_vmci_symbol(vi, "global_trace", &tr) ||
	    !ha_vmci_offset(vi, "trace_array.array_buffer", &off_ab) ||
	    !ha_vmci_offset(vi, "array_buffer.buffer", &off_buf)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "VMCOREINFO does not describe the ring buffer (a guest kernel"
			    " without patch 0014)");
		return false;
	}
	if (!ha_kvmem_read(m, info, raw, sizeof(raw), error))
		return false;
	for (int i = 0; i < RD_NR; i++)
		w.d[i] = ha_le32(raw + 4 * i);
	if (w.d[RD_MAGIC] != RB_DUMP_MAGIC || w.d[RD_VERSION] != RB_DUMP_VERSION ||
	    w.d[RD_SIZE] < sizeof(raw) || w.d[RD_LONG_SIZE] != 8) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "ring_buffer_dump_info: magic %#x version %u size %u long %u"
			    " (understood: %#x, %u, >= %zu, 8)", w.d[RD_MAGIC],
			    w.d[RD_VERSION], w.d[RD_SIZE], w.d[RD_LONG_SIZE], RB_DUMP_MAGIC,
			    RB_DUMP_VERSION, sizeof(raw));
		return false;
	}
	for (int i = RD_TB_CPUS; i < RD_NR; i++) {
		if (w.d[i] > RD_OFFSET_MAX) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "ring_buffer_dump_info: field %d is %u", i, w.d[i]);
			return false;
		}
	}
	if (w.d[RD_DP_DATA] < 16 || w.d[RD_DP_DATA] >= page_size ||
	    w.d[RD_DP_TIME_STAMP] + 8 > w.d[RD_DP_DATA] ||
	    w.d[RD_DP_COMMIT] + 8 > w.d[RD_DP_DATA] || !w.d[RD_PAGE_HEAD] ||
	    (w.d[RD_PAGE_HEAD] & ~w.d[RD_FLAG_MASK]) || w.d[RD_FLAG_MASK] > 7 ||
	    w.d[RD_WRITE_MASK] < page_size) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "ring_buffer_dump_info does not fit %u-byte pages", page_size);
		return false;
	}
	if (off_ab > RD_OFFSET_MAX * 16 || off_buf > RD_OFFSET_MAX ||
	    !ha_kvmem_u64(m, tr + off_ab + off_buf, &tb, error) ||
	    !ha_kvmem_u32(m, tb + w.d[RD_TB_CPUS], &cpus, error) ||
	    !ha_kvmem_u64(m, tb + w.d[RD_TB_BUFFERS], &buffers, error)) {
		if (error && !*error)
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "VMCOREINFO: the trace buffer's offsets are implausible");
		return false;
	}
	if (cpus == 0 || cpus > nr_cpus) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the trace buffer has %u CPUs, the boot %u", cpus, nr_cpus);
		return false;
	}
	page = g_malloc(page_size);
	payload = g_malloc(8 + page_size);
	w.page = page;
	w.payload = payload;
	for (uint32_t cpu = 0; cpu < cpus; cpu++) {
		g_autoptr(GError) e = NULL;
		uint64_t cb;

		if (!ha_kvmem_u64(m, buffers + 8ull * cpu, &cb, &e) ||
		    (cb && !walk_cpu(&w, cpu, cb, &e))) {
			st->cpus_failed++;
			/* one place names the CPU: most messages are kvmem.h's */
			if (!st->why)
				st->why = g_strdup_printf("cpu %u: %s", cpu, e->message);
			continue;
		}
		st->cpus += cb != 0;
	}
	return true;
}
