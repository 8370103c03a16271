// SPDX-License-Identifier: MIT
/*
 * pm-arena-scan.c - the frames of the guest agent's window, found in the bytes a dump
 * gave (see pm-arena.h). GLib and proto/ only: the fuzz target links it alone.
 */
#include <gio/gio.h>
#include <string.h>

#include "le.h"
#include "pm-arena.h"
#include "proto.h"

typedef struct {
	uint64_t seq;
	size_t off;
	uint32_t len;	/* whole frame */
} Found;

static gint found_cmp(gconstpointer a, gconstpointer b)
{
	const Found *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Whether a whole frame of version 1 starts at @p (@room bytes to the arena's end):
 * its length in *@ret_len. *@budget is taken down by the payload bytes checksummed.
 */
static bool frame_at(const uint8_t *p, size_t room, uint32_t *ret_len, uint64_t *budget,
		     bool *ret_bad)
{
	uint32_t plen;

	*ret_bad = false;
	if (room < SMP_HDR_SIZE || ha_le32(p) != SMP_MAGIC)
		return false;
	if (smp_crc32c(0, p, 28) != ha_le32(p + 28) || p[4] != SMP_VERSION_MAJOR) {
		*ret_bad = true;
		return false;
	}
	plen = ha_le32(p + 8);
	if (plen > SMP_MAX_PAYLOAD || plen > room - SMP_HDR_SIZE || plen > *budget) {
		*ret_bad = true;
		return false;
	}
	*budget -= plen;
	if (smp_frame_sum(p, plen) != ha_le32(p + 24)) {	/* CRC32C or XXH64 */
		*ret_bad = true;
		return false;
	}
	*ret_len = SMP_HDR_SIZE + plen;
	return true;
}

GBytes *ha_pm_arena_scan(const uint8_t *map, size_t len, HaPmArenaScan *ret,
			 GError **error)
{
	HaPmArenaScan st = { 0 };
	struct smp_arena_hdr h;
	struct smp_hello hello;
	g_autoptr(GArray) found = g_array_new(FALSE, FALSE, sizeof(Found));
	g_autoptr(GByteArray) out = NULL;
	const uint8_t *arena;
	uint64_t budget, prev = 0;
	uint32_t hlen;
	size_t alen, off = 0;
	bool bad;
	int r;

	r = smp_arena_hdr_decode(&h, map, len);
	if (r < 0 || (uint64_t)h.hdr_pages * h.page_size > len) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "no valid recovery header at the start of the agent's window");
		return NULL;
	}
	/* the HELLO: a whole frame of its own, of a stream (PROTOCOL.md 4.1) */
	budget = SMP_ARENA_HELLO_SLOT;
	if (!h.hello || !frame_at(h.hello, h.hello_len, &hlen, &budget, &bad) ||
	    hlen != h.hello_len || h.hello[6] != SMP_HELLO || ha_le64(h.hello + 16) != 0 ||
	    smp_hello_decode(&hello, h.hello + SMP_HDR_SIZE, hlen - SMP_HDR_SIZE) < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the agent's window holds no valid HELLO (%s)",
			    h.hello ? "its copy is damaged" : "none was set");
		return NULL;
	}
	st.stream_id = hello.stream_id;
	arena = map + (size_t)h.hdr_pages * h.page_size;
	alen = len - (size_t)h.hdr_pages * h.page_size;
	if (h.arena_len < alen)
		alen = (size_t)h.arena_len;
	st.arena_bytes = alen;
	st.pages = (uint32_t)(len / h.page_size);
	budget = (uint64_t)HA_PM_ARENA_CRC_BUDGET * alen + SMP_MAX_PAYLOAD;
	/*
	 * Every offset is a candidate frame start until a whole frame is found there;
	 * then the scan goes on after it (a frame inside a valid one would be payload).
	 */
	while (off + SMP_HDR_SIZE <= alen) {
		const uint8_t *p = memchr(arena + off, SMP_MAGIC & 0xff,
					  alen - off - SMP_HDR_SIZE + 1);
		uint32_t flen;

		if (!p)
			break;
		off = (size_t)(p - arena);
		if (!frame_at(p, alen - off, &flen, &budget, &bad)) {
			st.bad += bad;
			if (bad && budget < SMP_HDR_SIZE) {
				st.budget_hit = true;
				break;
			}
			off++;
			continue;
		}
		if (ha_le64(p + 16) == 0 || ha_le64(p + 16) > SMP_SEQ_MAX) {
			st.unsequenced++;
		} else {
			Found f = { .seq = ha_le64(p + 16), .off = off, .len = flen };

			g_array_append_val(found, f);
		}
		off += flen;
	}
	g_array_sort(found, found_cmp);
	out = g_byte_array_sized_new(hlen + (guint)MIN(alen, G_MAXUINT - hlen));
	g_byte_array_append(out, h.hello, hlen);
	for (guint i = 0; i < found->len; i++) {
		const Found *f = &g_array_index(found, Found, i);
		guint at = out->len;

		if (i && f->seq == prev) {
			st.same_seq++;
			continue;
		}
		prev = f->seq;
		g_byte_array_append(out, arena + f->off, f->len);
		/* as a reconnecting agent resends it: flagged RESENT, checksums again */
		smp_frame_seal(out->data + at, out->data[at + 6], out->data[at + 7] |
			       SMP_FLAG_RESENT, f->seq, f->len - SMP_HDR_SIZE);
		if (!st.frames++)
			st.seq_lo = f->seq;
		st.seq_hi = f->seq;
	}
	if (ret)
		*ret = st;
	return g_byte_array_free_to_bytes(g_steal_pointer(&out));
}
