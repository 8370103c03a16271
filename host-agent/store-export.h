/* SPDX-License-Identifier: MIT */
/*
 * store-export.h - what `export` (export-tracedat.h) reads of a stored boot.
 *
 * Tables boots, epochs, stacks, texts and chunks (store.h), read only: the exporter
 * holds one read transaction around all of it (ha_store_read_begin()), so every call
 * sees the same boot even while the daemon goes on ingesting into it. Each call returns
 * false with @error on a store failure; "no such row" is a result, said as such.
 *
 * @boot is boots.id. Blobs handed to a callback are borrowed for the call only; the
 * callbacks must not call the store.
 */
#ifndef HA_STORE_EXPORT_H
#define HA_STORE_EXPORT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* What the boot's first HELLO said that the file's header needs. */
typedef struct {
	uint32_t page_size;
	uint32_t flags;		/* SMP_HELLO_* */
	uint32_t nr_cpus;
	char *trace_clock;	/* NULL: not stored */
	char *release;		/* NULL: not stored */
	uint8_t uuid[16];	/* the guest's boot_id, zeros past uuid_len */
	uint32_t uuid_len;
} HaStoreExportBoot;

void ha_store_export_boot_clear(HaStoreExportBoot *b);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(HaStoreExportBoot, ha_store_export_boot_clear)

/* @boot's row into @ret (cleared by the caller with ha_store_export_boot_clear());
 * *ret_found false, @ret all zeros, when there is none. */
bool ha_store_export_boot(HaStore *s, int64_t boot, bool *ret_found,
			  HaStoreExportBoot *ret, GError **error);

/* Each epoch of @boot, in epoch order: its number, tag and trace-clock start. */
typedef void (*HaStoreEpochFn)(int64_t epoch, int tag, uint64_t start_ts, void *user);
bool ha_store_export_epochs(HaStore *s, int64_t boot, HaStoreEpochFn fn, void *user,
			    GError **error);

/* The ips (little-endian u64s) of @stack_id in @epoch into *ret (g_bytes_unref()), or
 * NULL when the boot has no such stack. */
bool ha_store_export_stack(HaStore *s, int64_t boot, int64_t epoch, uint32_t stack_id,
			   GBytes **ret, GError **error);

/* Each text of @kind ('format', 'cmdlines', ...) of @boot in arrival order; @name may
 * be NULL, @text is never NULL (a stored empty text is "" with @len 0). */
typedef void (*HaStoreTextFn)(const char *name, const void *text, size_t len, void *user);
bool ha_store_export_texts(HaStore *s, int64_t boot, const char *kind, HaStoreTextFn fn,
			   void *user, GError **error);

/*
 * The newest kallsyms snapshot whose last chunk arrived (as resolve.c's symbols pick
 * it), its chunks concatenated in order into @out; *ret_complete false when a chunk
 * before the last is missing (lost frames). Nothing appended when the boot has none.
 */
bool ha_store_export_kallsyms(HaStore *s, int64_t boot, GString *out, bool *ret_complete,
			      GError **error);

/* How many of @boot's chunks with pages overlap the trace-clock range [@since,
 * @until]. */
bool ha_store_export_chunk_count(HaStore *s, int64_t boot, int64_t since, int64_t until,
				 uint64_t *ret, GError **error);
/* The ids (int64_t, appended to @ret) of those of them on @cpu, in the order the CPU's
 * ring buffer had their pages (first_seq, then id). */
bool ha_store_export_chunk_ids(HaStore *s, int64_t boot, uint32_t cpu, int64_t since,
			       int64_t until, GArray *ret, GError **error);
/* A chunk's data: ha_store_chunk_data() (store-report.h), NULL when it is gone
 * (merged since it was listed, outside a read transaction). */

#endif /* HA_STORE_EXPORT_H */
