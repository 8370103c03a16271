// SPDX-License-Identifier: MIT
/* pm-map.c - the stack map's entries out of a crashed guest's memory (see pm-map.h). */
#include "pm-map.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

#include "le.h"
#include "proto.h"

/* struct ftrace_stackmap_dump_info (patch 0014, kernel/trace/trace_stackmap.c), v1 */
#define SM_DUMP_MAGIC		0x49444d53u
#define SM_DUMP_VERSION		1u
enum {
	SD_MAGIC, SD_VERSION, SD_SIZE, SD_MAX_DEPTH, SD_SLOT_BITS, SD_TR_STACKMAP,
	SD_SM_MAP_SIZE, SD_SM_MAX_ELTS, SD_SM_GEN, SD_SM_CUR, SD_SM_EPOCH, SD_SM_EPOCH_TS,
	SD_SM_DELTA_ACTIVE, SD_SM_DELTA_GEN, SD_SM_DELTA_NEXT, SD_SM_DELTA_BACKLOG,
	SD_GEN_SIZE, SD_GEN_ENTRIES, SD_GEN_ELTS, SD_GEN_NEXT_ELT, SD_GEN_ID_TAG,
	SD_ELT_SIZE, SD_ELT_NR, SD_ELT_SLOT, SD_ELT_IPS, SD_ENTRY_SIZE, SD_ENTRY_VAL,
	SD_CHUNK_LIST, SD_CHUNK_SIZE, SD_CHUNK_OFF, SD_CHUNK_DATA, SD_NR
};
#define SD_OFFSET_MAX		8192u
#define ELTS_PER_READ		64u
#define BACKLOG_STEP		(64u << 10)

typedef struct {
	HaKvmem *m;
	uint32_t d[SD_NR];
	uint32_t map_size, max_elts;
	GByteArray *recs;	/* delta records to add */
} Map;

void ha_pm_map_stats_clear(HaPmMapStats *st)
{
	g_clear_pointer(&st->why, g_free);
}

static void put_epoch(Map *mp, uint64_t epoch, uint64_t ts)
{
	guint at = mp->recs->len;

	g_byte_array_set_size(mp->recs, at + SMP_DELTA_EPOCH_SIZE);
	smp_delta_put_epoch(mp->recs->data + at, SMP_DELTA_EPOCH_SIZE, epoch, ts);
}

/*
 * The published elts of map @gen from pool index @from, as stack records. Counts
 * them in *@count. False with @error when the map cannot be read.
 */
static bool put_gen(Map *mp, uint64_t gen, uint32_t from, uint64_t *count,
		    GError **error)
{
	uint32_t d_es = mp->d[SD_ELT_SIZE], next, tag;
	uint64_t entries, elts, ips[SMP_DELTA_MAX_DEPTH];
	g_autofree uint8_t *buf = g_malloc((size_t)d_es * ELTS_PER_READ);

	if (!ha_kvmem_u64(mp->m, gen + mp->d[SD_GEN_ENTRIES], &entries, error) ||
	    !ha_kvmem_u64(mp->m, gen + mp->d[SD_GEN_ELTS], &elts, error) ||
	    !ha_kvmem_u32(mp->m, gen + mp->d[SD_GEN_NEXT_ELT], &next, error) ||
	    !ha_kvmem_u32(mp->m, gen + mp->d[SD_GEN_ID_TAG], &tag, error))
		return false;
	/* next_elt runs past the pool when inserts find it empty */
	next = MIN(next, mp->max_elts);
	if (tag & ~(SMP_ID_TAG_MASK << SMP_ID_SLOT_BITS)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "map %#" PRIx64 ": id tag %#x", gen, tag);
		return false;
	}
	for (uint32_t base = from; base < next; base += ELTS_PER_READ) {
		uint32_t n = MIN(ELTS_PER_READ, next - base);

		if (!ha_kvmem_read(mp->m, elts + (uint64_t)base * d_es, buf, (size_t)n * d_es,
				   error))
			return false;
		for (uint32_t i = 0; i < n; i++) {
			const uint8_t *e = buf + (size_t)i * d_es;
			uint32_t nr = ha_le32(e + mp->d[SD_ELT_NR]);
			uint32_t slot = ha_le32(e + mp->d[SD_ELT_SLOT]);
			uint64_t addr = elts + (uint64_t)(base + i) * d_es, val;
			guint at;

			/* published: filled (slot set) and its table entry points back */
			if (!slot || slot > mp->map_size)
				continue;
			if (!ha_kvmem_u64(mp->m, entries + (uint64_t)(slot - 1) *
					  mp->d[SD_ENTRY_SIZE] + mp->d[SD_ENTRY_VAL], &val, error))
				return false;
			if (val != addr || nr == 0 || nr > mp->d[SD_MAX_DEPTH])
				continue;
			for (uint32_t k = 0; k < nr; k++)
				ips[k] = ha_le64(e + mp->d[SD_ELT_IPS] + 8 * k);
			at = mp->recs->len;
			g_byte_array_set_size(mp->recs, at + SMP_DELTA_HDR_SIZE + 8 * nr);
			smp_delta_put_stack(mp->recs->data + at, SMP_DELTA_HDR_SIZE + 8 * nr,
					    tag | (slot - 1), 0, ips, nr);
			(*count)++;
		}
	}
	return true;
}

/*
 * The records queued for the reader, from each chunk's read offset. A chunk is
 * read in steps of BACKLOG_STEP bytes, so that what is allocated is what the dump
 * holds, whatever size the chunk claims; a chunk seen twice (a loop) ends the walk.
 * On failure, the whole chunks before the one that failed stay in mp->recs.
 */
static bool put_backlog(Map *mp, uint64_t head, GError **error)
{
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_int64_hash, g_int64_equal,
							   g_free, NULL);
	uint64_t node, total = 0;
	uint32_t chunks = 0;

	if (!ha_kvmem_u64(mp->m, head, &node, error))
		return false;
	while (node != head) {
		uint64_t chunk = node - mp->d[SD_CHUNK_LIST], size, off;
		guint at = mp->recs->len;

		if (++chunks > HA_PM_MAP_MAX_CHUNKS ||
		    !g_hash_table_add(seen, g_memdup2(&node, 8))) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "the reader's backlog loops at chunk %#" PRIx64
				    " or has over %u chunks", chunk, HA_PM_MAP_MAX_CHUNKS);
			return false;
		}
		if (!ha_kvmem_u64(mp->m, chunk + mp->d[SD_CHUNK_SIZE], &size, error) ||
		    !ha_kvmem_u64(mp->m, chunk + mp->d[SD_CHUNK_OFF], &off, error))
			return false;
		if (off > size || size > HA_PM_MAP_MAX_BACKLOG_BYTES - total) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "backlog chunk %#" PRIx64 ": %" PRIu64 " of %" PRIu64
				    " bytes read", chunk, off, size);
			return false;
		}
		total += size;
		for (uint64_t pos = off; pos < size;) {
			guint end = mp->recs->len;
			uint64_t n = MIN(size - pos, BACKLOG_STEP);

			g_byte_array_set_size(mp->recs, end + (guint)n);
			if (!ha_kvmem_read(mp->m, chunk + mp->d[SD_CHUNK_DATA] + pos,
					   mp->recs->data + end, n, error)) {
				g_byte_array_set_size(mp->recs, at);
				return false;
			}
			pos += n;
		}
		if (!ha_kvmem_u64(mp->m, node, &node, error))
			return false;
	}
	return true;
}

static bool load_layout(Map *mp, const HaVmci *vi, uint64_t *ret_smap, GError **error)
{
	uint64_t info, tr;
	uint8_t raw[SD_NR * 4];

	if (!ha_vmci_symbol(vi, "ftrace_stackmap_dump_info", &info) ||
	    !ha_vmci_symbol(vi, "global_trace", &tr)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "VMCOREINFO does not describe the stack map (a guest kernel"
			    " without patch 0014)");
		return false;
	}
	if (!ha_kvmem_read(mp->m, info, raw, sizeof(raw), error))
		return false;
	for (int i = 0; i < SD_NR; i++)
		mp->d[i] = ha_le32(raw + 4 * i);
	if (mp->d[SD_MAGIC] != SM_DUMP_MAGIC || mp->d[SD_VERSION] != SM_DUMP_VERSION ||
	    mp->d[SD_SIZE] < sizeof(raw)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "ftrace_stackmap_dump_info: magic %#x version %u size %u"
			    " (understood: %#x, %u, >= %zu)", mp->d[SD_MAGIC],
			    mp->d[SD_VERSION], mp->d[SD_SIZE], SM_DUMP_MAGIC,
			    SM_DUMP_VERSION, sizeof(raw));
		return false;
	}
	for (int i = SD_MAX_DEPTH; i < SD_NR; i++) {
		if (mp->d[i] > SD_OFFSET_MAX) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "ftrace_stackmap_dump_info: field %d is %u", i, mp->d[i]);
			return false;
		}
	}
	if (mp->d[SD_MAX_DEPTH] == 0 || mp->d[SD_MAX_DEPTH] > SMP_DELTA_MAX_DEPTH ||
	    mp->d[SD_SLOT_BITS] != SMP_ID_SLOT_BITS ||
	    mp->d[SD_ELT_IPS] + 8ull * mp->d[SD_MAX_DEPTH] > mp->d[SD_ELT_SIZE] ||
	    mp->d[SD_ELT_NR] + 4 > mp->d[SD_ELT_SIZE] ||
	    mp->d[SD_ELT_SLOT] + 4 > mp->d[SD_ELT_SIZE] ||
	    mp->d[SD_ENTRY_VAL] + 8 > mp->d[SD_ENTRY_SIZE]) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "ftrace_stackmap_dump_info: the elt layout does not fit");
		return false;
	}
	return ha_kvmem_u64(mp->m, tr + mp->d[SD_TR_STACKMAP], ret_smap, error);
}

bool ha_pm_map_recover(HaKvmem *m, const HaVmci *vi, HaPmFrames *frames,
		       HaPmMapStats *st, GError **error)
{
	g_autoptr(GByteArray) recs = g_byte_array_new();
	g_autoptr(GError) e = NULL;
	uint64_t smap, cur, gen0, delta_gen, epoch, epoch_ts;
	uint32_t delta_next, cur_tag;
	uint8_t active;
	Map mp = { .m = m, .recs = recs };

	if (!load_layout(&mp, vi, &smap, error))
		return false;
	if (!smap)
		return true;	/* no map: nothing to resolve through */
	st->present = true;
	gen0 = smap + mp.d[SD_SM_GEN];
	if (!ha_kvmem_u32(m, smap + mp.d[SD_SM_MAP_SIZE], &mp.map_size, error) ||
	    !ha_kvmem_u32(m, smap + mp.d[SD_SM_MAX_ELTS], &mp.max_elts, error) ||
	    !ha_kvmem_u64(m, smap + mp.d[SD_SM_CUR], &cur, error) ||
	    !ha_kvmem_u64(m, smap + mp.d[SD_SM_EPOCH], &epoch, error) ||
	    !ha_kvmem_u64(m, smap + mp.d[SD_SM_EPOCH_TS], &epoch_ts, error) ||
	    !ha_kvmem_read(m, smap + mp.d[SD_SM_DELTA_ACTIVE], &active, 1, error) ||
	    !ha_kvmem_u64(m, smap + mp.d[SD_SM_DELTA_GEN], &delta_gen, error) ||
	    !ha_kvmem_u32(m, smap + mp.d[SD_SM_DELTA_NEXT], &delta_next, error) ||
	    !ha_kvmem_u32(m, cur + mp.d[SD_GEN_ID_TAG], &cur_tag, error))
		return false;
	if (mp.max_elts == 0 || mp.max_elts > HA_PM_MAP_MAX_ELTS ||
	    mp.map_size != 2 * mp.max_elts ||
	    (cur != gen0 && cur != gen0 + mp.d[SD_GEN_SIZE]) || epoch > INT64_MAX ||
	    cur_tag != smp_epoch_tag(epoch) << SMP_ID_SLOT_BITS) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the stack map is implausible: %u elts, %u slots, epoch %" PRIu64
			    " tag %#x", mp.max_elts, mp.map_size, epoch, cur_tag);
		return false;
	}
	st->epoch = epoch;
	/*
	 * 1 and 2: what the reader had not read of ended epochs. Each part stops at
	 * what is corrupted in it; the whole records read before are kept.
	 */
	if (active && !put_backlog(&mp, smap + mp.d[SD_SM_DELTA_BACKLOG], &e)) {
		st->why = g_strdup_printf("the delta reader's backlog: %s", e->message);
		g_clear_error(&e);
	}
	if (active && delta_gen != cur) {
		if (delta_gen != gen0 && delta_gen != gen0 + mp.d[SD_GEN_SIZE])
			g_set_error(&e, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "the reader's map %#" PRIx64 " is neither map", delta_gen);
		else
			put_gen(&mp, delta_gen, delta_next, &st->unread_records, &e);
		if (e && !st->why)
			st->why = g_strdup_printf("the previous map: %s", e->message);
		g_clear_error(&e);
	}
	if (!ha_pm_frames_add_deltas(frames, recs->data, recs->len, &st->backlog_records,
				     &st->epochs, &e)) {
		if (!st->why)
			st->why = g_strdup_printf("the delta reader's backlog: %s", e->message);
		g_clear_error(&e);
	}
	/* 3: the epoch in effect and the whole current map */
	g_byte_array_set_size(recs, 0);
	put_epoch(&mp, epoch, epoch_ts);
	if (!put_gen(&mp, cur, 0, &st->live_records, &e)) {
		if (!st->why)
			st->why = g_strdup_printf("the current map: %s", e->message);
		g_clear_error(&e);
	}
	/* the backlog's count included the unread records of step 2: keep them apart */
	st->backlog_records -= MIN(st->backlog_records, st->unread_records);
	return ha_pm_frames_add_deltas(frames, recs->data, recs->len, NULL, &st->epochs,
				       error);
}
