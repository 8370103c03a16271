// SPDX-License-Identifier: MIT
/* kmsg.c - the printk ring buffer out of a guest's memory (see kmsg.h). */
#include "kmsg.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

#include "le.h"

/* kernel/printk/printk_ringbuffer.h: the state is the top two bits of state_var */
#define DESC_SV_BITS		64
#define DESC_FLAGS_SHIFT	(DESC_SV_BITS - 2)
#define DESC_ID_MASK		(~(3ull << DESC_FLAGS_SHIFT))
#define DESC_STATE(sv)		(3ull & ((sv) >> DESC_FLAGS_SHIFT))
#define DESC_COMMITTED		1
#define DESC_FINALIZED		2
#define DESC_REUSABLE		3
#define NO_LPOS			0x3ull
#define STRUCT_MAX		4096	/* no struct read here is larger */

/* Where things are, all from VMCOREINFO. */
typedef struct {
	uint64_t rb_desc_ring, rb_text_ring;
	uint64_t dr_count_bits, dr_descs, dr_infos, dr_head_id, dr_tail_id;
	uint64_t desc_size, d_state_var, d_text_lpos;
	uint64_t lpos_begin, lpos_next;
	uint64_t info_size, i_seq, i_ts_nsec, i_text_len, i_caller_id;
	uint64_t tr_size_bits, tr_data;
	uint64_t counter;	/* atomic_long_t.counter */
} Layout;

static bool layout_load(const HaVmci *vi, Layout *l, GError **error)
{
	static const struct {
		const char *name;
		size_t at;
		bool size;
	} f[] = {
#define O(n, m) { n, offsetof(Layout, m), false }
#define S(n, m) { n, offsetof(Layout, m), true }
		O("printk_ringbuffer.desc_ring", rb_desc_ring),
		O("printk_ringbuffer.text_data_ring", rb_text_ring),
		O("prb_desc_ring.count_bits", dr_count_bits),
		O("prb_desc_ring.descs", dr_descs),
		O("prb_desc_ring.infos", dr_infos),
		O("prb_desc_ring.head_id", dr_head_id),
		O("prb_desc_ring.tail_id", dr_tail_id),
		S("prb_desc", desc_size),
		O("prb_desc.state_var", d_state_var),
		O("prb_desc.text_blk_lpos", d_text_lpos),
		O("prb_data_blk_lpos.begin", lpos_begin),
		O("prb_data_blk_lpos.next", lpos_next),
		S("printk_info", info_size),
		O("printk_info.seq", i_seq),
		O("printk_info.ts_nsec", i_ts_nsec),
		O("printk_info.text_len", i_text_len),
		O("printk_info.caller_id", i_caller_id),
		O("prb_data_ring.size_bits", tr_size_bits),
		O("prb_data_ring.data", tr_data),
		O("atomic_long_t.counter", counter),
#undef O
#undef S
	};

	for (size_t i = 0; i < G_N_ELEMENTS(f); i++) {
		uint64_t *v = (uint64_t *)((char *)l + f[i].at);
		bool ok = f[i].size ? ha_vmci_size(vi, f[i].name, v)
				    : ha_vmci_offset(vi, f[i].name, v);

		if (!ok || *v > STRUCT_MAX) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
				    "VMCOREINFO: %s(%s) %s", f[i].size ? "SIZE" : "OFFSET",
				    f[i].name, ok ? "is implausibly large" : "is missing");
			return false;
		}
	}
	/* the fields read from each record must lie inside the record */
	if (l->desc_size < 8 || l->d_state_var + 8 > l->desc_size ||
	    l->d_text_lpos + MAX(l->lpos_begin, l->lpos_next) + 8 > l->desc_size ||
	    l->i_seq + 8 > l->info_size || l->i_ts_nsec + 8 > l->info_size ||
	    l->i_text_len + 2 > l->info_size || l->i_caller_id + 4 > l->info_size) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "VMCOREINFO: the printk record layout does not fit its sizes");
		return false;
	}
	return true;
}

static void record_clear(gpointer p)
{
	HaKmsgRecord *r = p;

	g_clear_pointer(&r->text, g_bytes_unref);
}

/*
 * The text block of @begin..@next in a data ring of 2^@bits bytes at @data: true with
 * its text's address and size (get_data() in printk_ringbuffer.c); false when the
 * positions are not a valid block. Data-less blocks give size 0.
 */
static bool data_block(uint64_t begin, uint64_t next, unsigned bits, uint64_t data,
		       uint64_t *addr, uint64_t *size)
{
	uint64_t ring = 1ull << bits;

	if ((begin & 1) && begin == next) {
		*addr = 0;
		*size = 0;
		return begin == NO_LPOS;
	}
	if ((begin >> bits) == (next >> bits) && begin < next) {
		*addr = data + (begin & (ring - 1));
		*size = next - begin;
	} else if (((begin + ring) >> bits) == (next >> bits)) {
		*addr = data;
		*size = next & (ring - 1);
	} else {
		return false;
	}
	if ((begin & 7) || (next & 7) || *size < 8 || *size > ring)
		return false;
	return true;
}

HaKmsg *ha_kmsg_recover(HaKvmem *m, const HaVmci *vi, GError **error)
{
	g_autoptr(HaKmsg) k = g_new0(HaKmsg, 1);
	uint8_t desc[STRUCT_MAX], info[STRUCT_MAX];
	uint64_t prb_sym, rb, dr, tr, descs, infos, data, head, tail, n, count;
	uint32_t count_bits, size_bits;
	Layout l;

	k->records = g_array_new(FALSE, TRUE, sizeof(HaKmsgRecord));
	g_array_set_clear_func(k->records, record_clear);
	if (!layout_load(vi, &l, error))
		return NULL;
	if (!ha_vmci_symbol(vi, "prb", &prb_sym)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "VMCOREINFO has no SYMBOL(prb) (a kernel before 5.10?)");
		return NULL;
	}
	if (!ha_kvmem_u64(m, prb_sym, &rb, error)) {
		g_prefix_error(error, "prb: ");
		return NULL;
	}
	dr = rb + l.rb_desc_ring;
	tr = rb + l.rb_text_ring;
	if (!ha_kvmem_u32(m, dr + l.dr_count_bits, &count_bits, error) ||
	    !ha_kvmem_u64(m, dr + l.dr_descs, &descs, error) ||
	    !ha_kvmem_u64(m, dr + l.dr_infos, &infos, error) ||
	    !ha_kvmem_u64(m, dr + l.dr_head_id + l.counter, &head, error) ||
	    !ha_kvmem_u64(m, dr + l.dr_tail_id + l.counter, &tail, error) ||
	    !ha_kvmem_u32(m, tr + l.tr_size_bits, &size_bits, error) ||
	    !ha_kvmem_u64(m, tr + l.tr_data, &data, error)) {
		g_prefix_error(error, "the printk ring buffer at 0x%" PRIx64 ": ", rb);
		return NULL;
	}
	if (count_bits == 0 || count_bits > HA_KMSG_MAX_DESC_BITS || size_bits < 3 ||
	    size_bits > HA_KMSG_MAX_DATA_BITS) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the printk ring buffer has 2^%u records of 2^%u text bytes"
			    " (at most 2^%d, 2^%d): corrupt", count_bits, size_bits,
			    HA_KMSG_MAX_DESC_BITS, HA_KMSG_MAX_DATA_BITS);
		return NULL;
	}
	count = 1ull << count_bits;
	k->desc_count = count;
	k->text_bytes = 1ull << size_bits;
	head &= DESC_ID_MASK;
	tail &= DESC_ID_MASK;
	n = ((head - tail) & DESC_ID_MASK) + 1;
	if (n > count) {	/* corrupt ids: only the newest ring's worth */
		k->skipped += n - count;
		tail = (head - count + 1) & DESC_ID_MASK;
		n = count;
	}
	for (uint64_t i = 0, id = tail; i < n; i++, id = (id + 1) & DESC_ID_MASK) {
		uint64_t idx = id & (count - 1), sv, begin, next, addr, size, tlen, got;
		HaKmsgRecord r = { 0 };
		g_autoptr(GError) e = NULL;
		uint8_t *text;

		if (!ha_kvmem_read(m, descs + idx * l.desc_size, desc, l.desc_size, &e) ||
		    !ha_kvmem_read(m, infos + idx * l.info_size, info, l.info_size, &e)) {
			k->skipped++;
			continue;
		}
		sv = ha_le64(desc + l.d_state_var + l.counter);
		/* reusable: a record the ring dropped (or prb_init()'s placeholder that
		 * tail_id starts at), not a loss; reserved: one being written, lost */
		if ((sv & DESC_ID_MASK) == id && DESC_STATE(sv) == DESC_REUSABLE)
			continue;
		if ((sv & DESC_ID_MASK) != id ||
		    (DESC_STATE(sv) != DESC_COMMITTED && DESC_STATE(sv) != DESC_FINALIZED)) {
			k->skipped++;
			continue;
		}
		begin = ha_le64(desc + l.d_text_lpos + l.lpos_begin);
		next = ha_le64(desc + l.d_text_lpos + l.lpos_next);
		if (!data_block(begin, next, size_bits, data, &addr, &size)) {
			k->skipped++;
			continue;
		}
		r.seq = ha_le64(info + l.i_seq);
		r.ts_nsec = ha_le64(info + l.i_ts_nsec);
		memcpy(&r.caller_id, info + l.i_caller_id, 4);
		r.caller_id = GUINT32_FROM_LE(r.caller_id);
		tlen = (uint64_t)info[l.i_text_len] | (uint64_t)info[l.i_text_len + 1] << 8;
		if (size == 0) {
			r.text = g_bytes_new(NULL, 0);
			g_array_append_val(k->records, r);
			continue;
		}
		got = MIN(tlen, size - 8);
		text = g_malloc(8 + got);
		if (!ha_kvmem_read(m, addr, text, 8 + got, &e) || ha_le64(text) != id) {
			g_free(text);	/* unreadable, or the block is another record's */
			k->skipped++;
			continue;
		}
		memmove(text, text + 8, got);
		r.text = g_bytes_new_take(text, got);
		g_array_append_val(k->records, r);
	}
	return g_steal_pointer(&k);
}

void ha_kmsg_free(HaKmsg *k)
{
	if (!k)
		return;
	if (k->records)
		g_array_unref(k->records);
	g_free(k);
}

void ha_kmsg_format(GString *out, uint64_t ts_nsec, const void *text, size_t len)
{
	const char *p = text, *end = p + len;

	do {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		g_string_append_printf(out, "[%5" PRIu64 ".%06" PRIu64 "] ",
				       ts_nsec / 1000000000u, ts_nsec % 1000000000u / 1000u);
		g_string_append_len(out, p, le - p);
		g_string_append_c(out, '\n');
		p = nl ? nl + 1 : end;
	} while (p < end);
}
