// SPDX-License-Identifier: MIT
/*
 * export-tracedat.c - a stored boot as a trace-cmd trace.dat, version 7 with zstd or
 * version 6 (see export-tracedat.h).
 *
 * Why this writes the documented format itself rather than through libtracecmd's
 * output functions: Debian's libtracecmd exports them, but its header declares only
 * the reader, so using them means declaring private prototypes that may change in any
 * release; and they take their metadata from a tracefs directory (a live one, or one
 * faked on disk) and per-CPU data from files of raw pages, while ours come from the
 * store, page by page, and must be rewritten anyway (stack_id -> kernel_stack). Both
 * layouts are small and documented (trace-cmd.dat.v6(5), trace-cmd.dat.v7(5)).
 *
 * v7 (the default), in order: magic, "7\0", endian, long size, page size, "zstd\0" and
 * zstd's version, u64 offset of the options section; the same parts as v6 below, each
 * a section (u16 id, u16 flags, u32 description string, u64 size) named by an option
 * with its offset; the flyrecord section (flag compressed): per CPU, page aligned, u32
 * chunk count then (u32 compressed size, u32 size, zstd frame) per chunk of up to
 * ZCHUNK_PAGES pages; then the options section (the part offsets, TRACECLOCK, UNAME,
 * CPUCOUNT, BUFFER with each CPU's offset and compressed size, DONE 0) and the strings
 * section with the descriptions. libtracecmd reads sections from the options' offsets
 * and scans them from the header on for strings, so nothing lies between them.
 *
 * v6 layout written, in order (numbers little-endian, as the guest's pages):
 *   magic "\x17\x08\x44tracing", "6\0", endian 0, long size 8, page size u32
 *   "header_page\0" u64 + text, "header_event\0" u64 + text
 *   u32 count + (u64 + text) of the ftrace/ formats
 *   u32 systems + (name\0, u32 count, (u64 + text)...) of the other formats
 *   u32 + kallsyms text, u32 0 (no printk formats), u64 + saved cmdlines (cmdlines.h)
 *   u32 CPU slots, "options  \0", TRACECLOCK and UNAME options, u16 0
 *   "flyrecord\0", per CPU slot u64 offset + u64 size (filled in last), u64 + the
 *   trace_clock text, zeros to the next page boundary, then the pages, CPU by CPU.
 */
#include "export-tracedat.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "chunk.h"
#include "cmdlines.h"
#include "clocksync.h"
#include "proto.h"
#include "printfmt.h"
#include "report.h"
#include "store-export.h"
#include "store-report.h"
#include "wire.h"
#include "tep.h"

#define RB_MISSED_EVENTS	(1ull << 31)	/* 6.1 ring_buffer.c, in the commit word */
#define RB_MISSED_STORED	(1ull << 30)
#define RB_MAX_SMALL_DATA	112u		/* 28 * 4: longer data takes a length word */
#define RB_TIME_EXTEND		30u
#define RB_DELTA_BITS		27u

/* ---- format texts ----------------------------------------------------------------- */

/*
 * Offset and size of the field @name in a FORMAT text ("field:TYPE NAME[N];
 * offset:O; size:S;"). False when absent.
 */
static bool fmt_field(const char *text, const char *name, uint32_t *ret_off,
		      uint32_t *ret_size)
{
	size_t nlen = strlen(name);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *f = strstr(l, "field:");
		const char *semi, *end, *nl = strchr(l, '\n');
		const char *o, *z;

		if (!f || (nl && f > nl))
			continue;
		semi = strchr(f, ';');
		if (!semi || (nl && semi > nl))
			continue;
		end = semi;
		if (memchr(f, '[', (size_t)(semi - f)))
			end = memchr(f, '[', (size_t)(semi - f));
		if ((size_t)(end - f) < nlen + 1 || memcmp(end - nlen, name, nlen) ||
		    (end[-(long)nlen - 1] != ' ' && end[-(long)nlen - 1] != '\t' &&
		     end[-(long)nlen - 1] != '*'))
			continue;
		o = strstr(semi, "offset:");
		z = strstr(semi, "size:");
		if (!o || !z || (nl && (o > nl || z > nl)))
			return false;
		*ret_off = (uint32_t)strtoul(o + 7, NULL, 10);
		*ret_size = (uint32_t)strtoul(z + 5, NULL, 10);
		return true;
	}
	return false;
}

/* The "ID: N" of a FORMAT text, -1 when absent. */
static int fmt_id(const char *text)
{
	const char *p = strstr(text, "\nID:");

	if (!p && !strncmp(text, "ID:", 3))
		p = text - 1;
	return p ? (int)strtol(p + 4, NULL, 10) : -1;
}

typedef struct {
	char *name;		/* "header_page", "ftrace/kernel_stack", "kmem/kmalloc" ... */
	GBytes *text;
} Format;

static void format_clear(gpointer p)
{
	Format *f = p;

	g_free(f->name);
	g_bytes_unref(f->text);
}

static int format_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp(((const Format *)a)->name, ((const Format *)b)->name);
}

/* ---- output file ------------------------------------------------------------------- */

typedef struct {
	FILE *f;
	const char *path;
	bool failed;
	int err;
	int version;		/* 6 or 7 */
	GString *strings;	/* v7: the STRINGS section (section descriptions) */
	GByteArray *opts;	/* v7: the options, written after the data */
	GByteArray *host_opts;	/* TRACEID and TIME_SHIFT (id, size, data each), or empty */
} Out;

static void out_put(Out *o, const void *p, size_t n)
{
	if (o->failed || !n)
		return;
	if (fwrite(p, 1, n, o->f) != n) {
		o->failed = true;
		o->err = errno ? errno : EIO;
	}
}

static void out_u16(Out *o, uint16_t v)
{
	v = GUINT16_TO_LE(v);
	out_put(o, &v, 2);
}

static void out_u32(Out *o, uint32_t v)
{
	v = GUINT32_TO_LE(v);
	out_put(o, &v, 4);
}

static void out_u64(Out *o, uint64_t v)
{
	v = GUINT64_TO_LE(v);
	out_put(o, &v, 8);
}

static void out_str0(Out *o, const char *s)
{
	out_put(o, s, strlen(s) + 1);
}

static void out_text64(Out *o, GBytes *b)
{
	size_t n;
	const void *p = g_bytes_get_data(b, &n);

	out_u64(o, n);
	out_put(o, p, n);
}

static uint64_t out_tell(Out *o)
{
	off_t t = ftello(o->f);

	if (t < 0) {
		o->failed = true;
		o->err = errno;
		return 0;
	}
	return (uint64_t)t;
}

static void out_seek(Out *o, uint64_t at)
{
	if (!o->failed && fseeko(o->f, (off_t)at, SEEK_SET) < 0) {
		o->failed = true;
		o->err = errno;
	}
}

/* Zeros up to the next multiple of @align. */
static void out_align(Out *o, uint32_t align)
{
	static const uint8_t zero[256];
	uint64_t at = out_tell(o);

	while (at % align) {
		uint64_t n = MIN(align - at % align, sizeof(zero));

		out_put(o, zero, n);
		at += n;
	}
}

/* ---- v7 sections and options (trace-cmd.dat.v7(5)) --------------------------------------- */

enum {
	OPT_DONE = 0, OPT_BUFFER = 3, OPT_TRACECLOCK = 4, OPT_UNAME = 5, OPT_CPUCOUNT = 8,
	OPT_TRACEID = 11, OPT_TIME_SHIFT = 12,
	OPT_STRINGS = 15, OPT_HEADER_INFO = 16, OPT_FTRACE_EVENTS = 17, OPT_EVENT_FORMATS = 18,
	OPT_KALLSYMS = 19, OPT_PRINTK = 20, OPT_CMDLINES = 21,
};
#define SEC_COMPRESSED	1u	/* section flag: the data is compressed */

static void opt_add(Out *o, uint16_t id, const void *data, uint32_t size)
{
	uint16_t i = GUINT16_TO_LE(id);
	uint32_t n = GUINT32_TO_LE(size);

	g_byte_array_append(o->opts, (const guint8 *)&i, 2);
	g_byte_array_append(o->opts, (const guint8 *)&n, 4);
	g_byte_array_append(o->opts, data, size);
}

static void opt_u64(Out *o, uint16_t id, uint64_t v)
{
	v = GUINT64_TO_LE(v);
	opt_add(o, id, &v, 8);
}

/*
 * v7: start a section (id, flags, description's string id, size to come). Returns
 * where its size goes for sec_end(), 0 in a v6 file, which has no sections. With
 * @opt, an option of that id gives the section's offset.
 */
static uint64_t sec_begin(Out *o, uint16_t id, uint16_t flags, const char *desc, bool opt)
{
	uint64_t at;

	if (o->version < 7)
		return 0;
	if (opt)
		opt_u64(o, id, out_tell(o));
	out_u16(o, id);
	out_u16(o, flags);
	out_u32(o, (uint32_t)o->strings->len);
	g_string_append_len(o->strings, desc, (gssize)strlen(desc) + 1);
	at = out_tell(o);
	out_u64(o, 0);
	return at;
}

static void sec_end(Out *o, uint64_t at)
{
	uint64_t end;

	if (!at)
		return;
	end = out_tell(o);
	out_seek(o, at);
	out_u64(o, end - at - 8);
	out_seek(o, end);
}

/* ---- zstd chunks of a CPU's pages (v7's compressed trace data) ------------------------------ */

#define ZCHUNK_PAGES	64u	/* pages per compressed chunk */

typedef struct {
	ZSTD_CCtx *cctx;
	uint8_t *raw;		/* ZCHUNK_PAGES pages */
	size_t raw_len, raw_cap;
	uint8_t *z;
	size_t z_cap;
	uint32_t chunks;	/* of the CPU being written */
	uint64_t raw_bytes;	/* all CPUs, before compression */
} Zout;

static void zout_flush(Zout *z, Out *o)
{
	size_t n;

	if (!z->raw_len)
		return;
	n = ZSTD_compress2(z->cctx, z->z, z->z_cap, z->raw, z->raw_len);
	if (ZSTD_isError(n)) {
		if (!o->failed) {
			o->failed = true;
			o->err = ENOMEM;
		}
		return;
	}
	out_u32(o, (uint32_t)n);
	out_u32(o, (uint32_t)z->raw_len);
	out_put(o, z->z, n);
	z->raw_bytes += z->raw_len;
	z->raw_len = 0;
	z->chunks++;
}

static void zout_add(Zout *z, Out *o, const void *page, uint32_t psize)
{
	memcpy(z->raw + z->raw_len, page, psize);
	z->raw_len += psize;
	if (z->raw_len + psize > z->raw_cap)
		zout_flush(z, o);
}

/* ---- pages --------------------------------------------------------------------------- */

/* One CPU's output pages, in the guest's 6.1 layout: u64 timestamp, u64 commit (with
 * the RB_MISSED_* flags), events from @hdr on. */
typedef struct {
	Out *out;
	uint8_t *page;
	uint32_t psize;
	uint32_t hdr;		/* offset of the data (header_page's "data" field) */
	uint32_t used;		/* event bytes on the open page */
	bool open;
	uint64_t page_ts;
	uint64_t last_ts;
	long missed;		/* of the open page: >0 counted, -1 uncounted, 0 none */
	long pending;		/* lost before the next event written */
	uint64_t pages;
	HaExportStats *stats;
	Zout *z;		/* compress the pages (v7), or NULL */
} PageOut;

static void page_flush(PageOut *po)
{
	uint64_t commit = po->used;

	if (!po->open)
		return;
	if (po->missed > 0) {
		commit |= RB_MISSED_EVENTS | RB_MISSED_STORED;
		smp_put64(po->page + po->hdr + po->used, (uint64_t)po->missed);
	} else if (po->missed < 0) {
		commit |= RB_MISSED_EVENTS;
	}
	if (po->missed)
		po->stats->dropped_marks++;
	smp_put64(po->page, po->page_ts);
	smp_put64(po->page + 8, commit);
	if (po->z)
		zout_add(po->z, po->out, po->page, po->psize);
	else
		out_put(po->out, po->page, po->psize);
	memset(po->page, 0, po->psize);
	po->open = false;
	po->used = 0;
	po->missed = 0;
	po->pages++;
}

/* Events were lost before the next one written: it starts a page with the flag. */
static void page_lost(PageOut *po, long n)
{
	if (n < 0 || po->pending < 0)
		po->pending = -1;
	else
		po->pending += n;
}

/* Bytes on the page of an event with @size bytes of data (its header included). */
static uint32_t event_len(uint32_t size)
{
	uint32_t d = (size + 3u) & ~3u;

	return d <= RB_MAX_SMALL_DATA && d ? 4 + d : 8 + d;
}

/* Room for event data on an empty page. */
static uint32_t page_room(const PageOut *po)
{
	return po->psize - po->hdr - 8;	/* 8: a stored lost-events count */
}

/*
 * Append one event (@data, @size: common header first) at @ts. False when it cannot
 * fit even an empty page (the caller shortens it or skips it).
 */
static bool page_emit(PageOut *po, uint64_t ts, const void *data, uint32_t size)
{
	uint32_t need = event_len(size), ext = 0, room;
	uint64_t delta = 0;
	uint8_t *p;

	if (need > page_room(po))
		return false;
	if (po->pending) {
		page_flush(po);
		po->missed = po->pending;
		po->pending = 0;
	}
	if (po->open) {
		if (ts < po->last_ts)
			po->stats->out_of_order++;
		else
			delta = ts - po->last_ts;
		ext = delta >> RB_DELTA_BITS ? 8 : 0;
		room = po->psize - po->hdr - po->used - (po->missed > 0 ? 8 : 0);
		if (need + ext > room)
			page_flush(po);
	}
	if (!po->open) {
		po->open = true;
		po->page_ts = ts;
		po->used = 0;
		delta = 0;
		ext = 0;
	}
	p = po->page + po->hdr + po->used;
	if (ext) {
		smp_put32(p, RB_TIME_EXTEND | (uint32_t)(delta & ((1u << RB_DELTA_BITS) - 1)) << 5);
		smp_put32(p + 4, (uint32_t)(delta >> RB_DELTA_BITS));
		p += 8;
		po->used += 8;
		delta = 0;
	}
	{
		uint32_t d = (size + 3u) & ~3u;

		if (d <= RB_MAX_SMALL_DATA && d) {
			smp_put32(p, (d / 4) | (uint32_t)delta << 5);
			memcpy(p + 4, data, size);
		} else {
			smp_put32(p, (uint32_t)delta << 5);
			smp_put32(p + 4, d + 4);
			memcpy(p + 8, data, size);
		}
	}
	po->used += need;
	po->last_ts = MAX(po->last_ts, ts);
	po->stats->events++;
	return true;
}

/* ---- stacks ------------------------------------------------------------------------ */

typedef struct {
	int64_t epoch;
	uint64_t start;
} Epoch;

typedef struct {
	HaStore *store;
	int64_t boot;
	const HaExportOpts *o;
	HaExportStats *stats;
	HaTep *tep;
	GHashTable *epochs;	/* tag -> GArray of Epoch, oldest first */
	GHashTable *stacks;	/* epoch << 32 | id -> GBytes of LE u64 ips, or NULL: none */
	int kstack_id;		/* ftrace/kernel_stack's event id, -1 when unknown */
	HaMarkerFormat marker;	/* the clock probes' marker events: left out */
	uint32_t ks_size_off;	/* its `size` and `caller` fields */
	uint32_t ks_caller_off;
	uint8_t *ev;		/* the kernel_stack event being built (a page) */
	PageOut po;
	GPtrArray *gaps;	/* ha_report_gaps(): where the agent's frame gaps fell */
	/* per CPU while walking */
	GArray *cpu_gaps;	/* this CPU's (after_ts ascending), or NULL */
	guint gap_next;		/* the first of them not yet marked */
	bool first_of_page;
	bool last_kept;		/* the last non-stack event was written */
	GError *error;
} Exporter;

static void epochs_free(gpointer p)
{
	g_array_unref(p);
}

static void stack_free(gpointer p)
{
	if (p)
		g_bytes_unref(p);
}

static void on_epoch(int64_t epoch, int tag, uint64_t start_ts, void *user)
{
	Exporter *x = user;
	GArray *a = g_hash_table_lookup(x->epochs, GINT_TO_POINTER(tag));
	Epoch e = { epoch, start_ts };

	if (!a) {
		a = g_array_new(FALSE, FALSE, sizeof(Epoch));
		g_hash_table_insert(x->epochs, GINT_TO_POINTER(tag), a);
	}
	g_array_append_val(a, e);
}

static bool load_epochs(Exporter *x, GError **error)
{
	return ha_store_export_epochs(x->store, x->boot, on_epoch, x, error);
}

/* Stacks cached at most (then the cache starts again): bounds the memory of a boot
 * with many epochs; one epoch's map (2^19 ids at most) mostly fits. */
#define STACK_CACHE_MAX	65536u

/* The stack of @id at @ts: the newest epoch with its tag started by @ts (report.h).
 * Borrowed from the cache (valid until the next call); NULL when the store has none,
 * or on a store error (x->error set, the walk stops at the end of the page). */
static GBytes *lookup_stack(Exporter *x, uint32_t id, uint64_t ts)
{
	GArray *a = g_hash_table_lookup(x->epochs, GINT_TO_POINTER(smp_id_tag(id)));
	int64_t epoch = -1;
	uint64_t key;
	gpointer val;
	GBytes *b = NULL;

	for (guint i = a ? a->len : 0; i-- > 0;) {
		if (g_array_index(a, Epoch, i).start <= ts) {
			epoch = g_array_index(a, Epoch, i).epoch;
			break;
		}
	}
	if (epoch < 0)
		return NULL;
	key = (uint64_t)epoch << 32 | id;
	if (g_hash_table_lookup_extended(x->stacks, &key, NULL, &val))
		return val;
	if (g_hash_table_size(x->stacks) >= STACK_CACHE_MAX)
		g_hash_table_remove_all(x->stacks);
	if (x->error)
		return NULL;
	if (!ha_store_export_stack(x->store, x->boot, epoch, id, &b, &x->error))
		return NULL;
	g_hash_table_insert(x->stacks, g_memdup2(&key, sizeof(key)), b);
	return b;
}

/* Write the stack_id event @ev as the kernel_stack event of its stack. */
static bool emit_rehydrated(Exporter *x, const HaEvent *ev)
{
	GBytes *b = x->kstack_id >= 0 ? lookup_stack(x, ev->stack_id, ev->ts) : NULL;
	size_t bytes;
	const uint8_t *ips;
	uint32_t n, max, size;
	uint16_t type = GUINT16_TO_LE((uint16_t)x->kstack_id);

	if (!b || ev->size < 8) {
		x->stats->unresolved++;
		return page_emit(&x->po, ev->ts, ev->data, ev->size);
	}
	ips = g_bytes_get_data(b, &bytes);
	n = (uint32_t)(bytes / 8);
	max = (page_room(&x->po) - 8 - x->ks_caller_off) / 8;
	if (n > max) {
		n = max;
		x->stats->truncated++;
	}
	size = x->ks_caller_off + 8 * n;
	memset(x->ev, 0, x->ks_caller_off);
	memcpy(x->ev, ev->data, 8);		/* common_type, flags, preempt, pid */
	memcpy(x->ev, &type, 2);
	smp_put32(x->ev + x->ks_size_off, n);
	memcpy(x->ev + x->ks_caller_off, ips, 8 * (size_t)n);
	x->stats->rehydrated++;
	return page_emit(&x->po, ev->ts, x->ev, size);
}

static bool in_range(const HaExportOpts *o, uint64_t ts)
{
	return (o->since_ns < 0 || ts >= (uint64_t)o->since_ns) &&
	       (o->until_ns < 0 || ts <= (uint64_t)o->until_ns);
}

static void on_event(const HaEvent *ev, void *user)
{
	Exporter *x = user;
	uint64_t probe;
	bool keep;

	if (ev->kind == HA_EV_OTHER &&
	    ha_marker_event_id(&x->marker, ev->type, ev->data, ev->size, &probe))
		return;
	if (x->first_of_page) {
		long m = ha_tep_missed(x->tep);

		x->first_of_page = false;
		if (m)
			page_lost(&x->po, m);
	}
	/* frames the guest's agent dropped (a sequence gap) lie before this event: the
	 * count is unknown, and the frames may have held this CPU's pages */
	while (ev->kind == HA_EV_OTHER && x->cpu_gaps && x->gap_next < x->cpu_gaps->len &&
	       ev->ts > g_array_index(x->cpu_gaps, guint64, x->gap_next)) {
		page_lost(&x->po, -1);
		x->gap_next++;
		x->stats->gap_marks++;
	}
	/* a stack event goes with the event it follows (pair.h): kept when that one is */
	keep = ev->kind == HA_EV_OTHER ? in_range(x->o, ev->ts) : x->last_kept;
	if (ev->kind == HA_EV_OTHER)
		x->last_kept = keep;
	if (!keep) {
		if (x->o->since_ns >= 0 && ev->ts < (uint64_t)x->o->since_ns)
			x->po.pending = 0;	/* lost before the range: not in it */
		return;
	}
	if (ev->kind == HA_EV_STACK_ID && !x->o->stack_ids ? emit_rehydrated(x, ev)
				       : page_emit(&x->po, ev->ts, ev->data, ev->size))
		return;
	x->stats->truncated++;		/* larger than a page: cannot be written */
}

/* ---- progress ---------------------------------------------------------------------- */

typedef struct {
	gint64 start, last;
	bool shown, on;
} Progress;

static void progress_tick(Progress *p, uint64_t done, uint64_t total, uint64_t events)
{
	gint64 now = g_get_monotonic_time();

	if (!p->on || now - p->start < G_USEC_PER_SEC || now - p->last < G_USEC_PER_SEC / 5)
		return;
	p->last = now;
	p->shown = true;
	g_printerr("\rexport: %" PRIu64 "/%" PRIu64 " chunks, %" PRIu64 " events (%.0f%%)",
		   done, total, events, total ? 100.0 * (double)done / (double)total : 100.0);
}

/* ---- the file ---------------------------------------------------------------------- */

static bool enum_value(const char *name, int64_t *ret, void *dw)
{
	return ha_dwarf_enum(dw, name, ret);
}

typedef struct {
	Exporter *x;
	HaDwarf *dw;
	GArray *fs;
	GHashTable *seen;
} FormatLoad;

static void on_format(const char *name, const void *text, size_t len, void *user)
{
	FormatLoad *l = user;
	Format f;
	char *portable;

	/* the first text of a name is the one the page walker uses (tep.h) */
	if (!name || g_hash_table_contains(l->seen, name))
		return;
	f.name = g_strdup(name);
	portable = ha_printfmt_portable(text, len, l->dw ? enum_value : NULL, l->dw);
	f.text = g_bytes_new_take(portable, strlen(portable));
	g_array_append_val(l->fs, f);
	g_hash_table_add(l->seen, f.name);
	ha_tep_add_format(l->x->tep, f.name, text, len, NULL);
}

/*
 * The boot's formats. Each is written with its print fmt line made portable
 * (printfmt.h: constants folded, enum names --vmlinux knows replaced by their values),
 * so that libtraceevent readers print the fields as the guest kernel did.
 */
static GArray *load_formats(Exporter *x, GError **error)
{
	int64_t slide;
	g_autoptr(GArray) fs = g_array_new(FALSE, FALSE, sizeof(Format));
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	FormatLoad l = {
		.x = x, .fs = fs, .seen = seen,
		.dw = x->o->dwarf && ha_report_vmlinux_fits(x->store, x->boot, x->o->dwarf,
							    &slide) ? x->o->dwarf : NULL,
	};

	g_array_set_clear_func(fs, format_clear);
	if (!ha_store_export_texts(x->store, x->boot, "format", on_format, &l, error))
		return NULL;
	g_array_sort(fs, format_cmp);
	return g_steal_pointer(&fs);
}

/* A format text as a NUL-terminated string (g_free). */
static char *format_str(const Format *f)
{
	size_t n;
	const char *p = g_bytes_get_data(f->text, &n);

	return g_strndup(p, n);
}

static const Format *find_format(GArray *fs, const char *name)
{
	for (guint i = 0; i < fs->len; i++)
		if (!strcmp(g_array_index(fs, Format, i).name, name))
			return &g_array_index(fs, Format, i);
	return NULL;
}

/* The newest complete kallsyms snapshot (as ha_syms_load() picks it), or empty. */
static GBytes *load_kallsyms(Exporter *x, GError **error)
{
	g_autoptr(GString) t = g_string_new(NULL);
	bool complete;

	if (!ha_store_export_kallsyms(x->store, x->boot, t, &complete, error))
		return NULL;
	if (!complete) {
		g_printerr("host-agent export: the kallsyms snapshot misses chunks (lost"
			   " frames): the file carries none\n");
		g_string_truncate(t, 0);
	}
	return g_string_free_to_bytes(g_steal_pointer(&t));
}

/*
 * The boot's saved cmdlines: every CMDLINES text of every stream, in the order the
 * guest sent them (a later line for a pid wins), bounded by cmdlines.h.
 */
static void on_cmdlines(const char *name, const void *text, size_t len, void *user)
{
	ha_cmdlines_add(user, text, len);
}

static GBytes *load_cmdlines(Exporter *x, GError **error)
{
	g_autoptr(HaCmdlines) c = ha_cmdlines_new();

	if (!ha_store_export_texts(x->store, x->boot, "cmdlines", on_cmdlines, c, error))
		return NULL;
	x->stats->cmdlines = ha_cmdlines_size(c);
	if (ha_cmdlines_refused(c))
		g_printerr("host-agent export: %" PRIu64 " saved cmdlines lines of boot %" PRId64
			   " refused (malformed or beyond %u pids)\n", ha_cmdlines_refused(c),
			   x->boot, HA_CMDLINES_MAX);
	return ha_cmdlines_text(c);
}

/*
 * Everything before the trace data: v6's fixed sequence, or v7's compression header
 * and one section per part, each named by an option (written after the data).
 */
static void write_header(Out *out, GArray *fs, GBytes *ksyms, GBytes *cmdlines,
			 uint32_t psize, uint32_t slots, const char *clock, const char *release,
			 uint64_t *ret_options_at)
{
	static const uint8_t magic[] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };
	g_autoptr(GPtrArray) systems = g_ptr_array_new_with_free_func(g_free);
	const Format *hp = find_format(fs, "header_page");
	const Format *he = find_format(fs, "header_event");
	guint nftrace = 0;
	g_autofree char *clk = g_strdup_printf("[%s]\n", clock);
	g_autofree char *uname = g_strdup_printf("Linux guest %s", release ? release : "?");
	g_autoptr(GBytes) empty = g_bytes_new_static("", 0);
	size_t klen;
	const void *k = g_bytes_get_data(ksyms, &klen);
	uint64_t sec;

	out_put(out, magic, sizeof(magic));
	out_str0(out, out->version >= 7 ? "7" : "6");
	out_put(out, "\0\010", 2);	/* little endian, 8-byte long */
	out_u32(out, psize);
	if (out->version >= 7) {
		out_str0(out, "zstd");
		out_str0(out, ZSTD_versionString());
		*ret_options_at = out_tell(out);
		out_u64(out, 0);	/* the options section, filled in last */
	}
	sec = sec_begin(out, OPT_HEADER_INFO, 0, "headers", true);
	out_put(out, "header_page", 12);
	out_text64(out, hp ? hp->text : empty);
	out_put(out, "header_event", 13);
	out_text64(out, he ? he->text : empty);
	sec_end(out, sec);

	sec = sec_begin(out, OPT_FTRACE_EVENTS, 0, "ftrace events", true);
	for (guint i = 0; i < fs->len; i++)
		if (g_str_has_prefix(g_array_index(fs, Format, i).name, "ftrace/"))
			nftrace++;
	out_u32(out, nftrace);
	for (guint i = 0; i < fs->len; i++)
		if (g_str_has_prefix(g_array_index(fs, Format, i).name, "ftrace/"))
			out_text64(out, g_array_index(fs, Format, i).text);
	sec_end(out, sec);

	/* the other systems, in name order (fs is sorted) */
	sec = sec_begin(out, OPT_EVENT_FORMATS, 0, "events format", true);
	for (guint i = 0; i < fs->len; i++) {
		const char *n = g_array_index(fs, Format, i).name;
		const char *slash = strchr(n, '/');
		g_autofree char *sys = NULL;

		if (!slash || g_str_has_prefix(n, "ftrace/"))
			continue;
		sys = g_strndup(n, (gsize)(slash - n));
		if (!systems->len || strcmp(systems->pdata[systems->len - 1], sys))
			g_ptr_array_add(systems, g_steal_pointer(&sys));
	}
	out_u32(out, systems->len);
	for (guint s = 0; s < systems->len; s++) {
		const char *sys = systems->pdata[s];
		size_t sl = strlen(sys);
		uint32_t n = 0;

		for (guint i = 0; i < fs->len; i++) {
			const char *nm = g_array_index(fs, Format, i).name;

			n += !strncmp(nm, sys, sl) && nm[sl] == '/';
		}
		out_str0(out, sys);
		out_u32(out, n);
		for (guint i = 0; i < fs->len; i++) {
			const char *nm = g_array_index(fs, Format, i).name;

			if (!strncmp(nm, sys, sl) && nm[sl] == '/')
				out_text64(out, g_array_index(fs, Format, i).text);
		}
	}
	sec_end(out, sec);

	sec = sec_begin(out, OPT_KALLSYMS, 0, "kallsyms", true);
	out_u32(out, (uint32_t)klen);
	out_put(out, k, klen);
	sec_end(out, sec);
	sec = sec_begin(out, OPT_PRINTK, 0, "printk", true);
	out_u32(out, 0);		/* printk formats: not sent by the guest */
	sec_end(out, sec);
	sec = sec_begin(out, OPT_CMDLINES, 0, "command lines", true);
	out_text64(out, cmdlines);	/* saved cmdlines, "PID COMM" lines */
	sec_end(out, sec);

	if (out->version >= 7) {
		uint32_t n = GUINT32_TO_LE(slots);

		opt_add(out, OPT_TRACECLOCK, clk, (uint32_t)strlen(clk) + 1);
		opt_add(out, OPT_UNAME, uname, (uint32_t)strlen(uname) + 1);
		opt_add(out, OPT_CPUCOUNT, &n, 4);
		g_byte_array_append(out->opts, out->host_opts->data, out->host_opts->len);
		return;
	}
	out_u32(out, slots);
	out_put(out, "options  ", 10);
	out_u16(out, OPT_TRACECLOCK);
	out_u32(out, (uint32_t)strlen(clk) + 1);
	out_str0(out, clk);
	out_u16(out, OPT_UNAME);
	out_u32(out, (uint32_t)strlen(uname) + 1);
	out_str0(out, uname);
	out_put(out, out->host_opts->data, out->host_opts->len);
	out_u16(out, OPT_DONE);
	out_put(out, "flyrecord", 10);
}

/*
 * v7, after the data: the BUFFER option naming each CPU's data, the options section,
 * the strings section, and the header's pointer to the options.
 */
static void write_trailer_v7(Out *out, uint64_t options_at, uint64_t flyrecord,
			     const char *clock, uint32_t psize, uint32_t slots,
			     const uint64_t *table)
{
	g_autoptr(GByteArray) b = g_byte_array_new();
	uint64_t v, sec, opts;
	uint32_t u;

	v = GUINT64_TO_LE(flyrecord);
	g_byte_array_append(b, (const guint8 *)&v, 8);
	g_byte_array_append(b, (const guint8 *)"", 1);	/* the top instance */
	g_byte_array_append(b, (const guint8 *)clock, (guint)strlen(clock) + 1);
	u = GUINT32_TO_LE(psize);
	g_byte_array_append(b, (const guint8 *)&u, 4);
	u = GUINT32_TO_LE(slots);
	g_byte_array_append(b, (const guint8 *)&u, 4);
	for (uint32_t c = 0; c < slots; c++) {
		u = GUINT32_TO_LE(c);
		g_byte_array_append(b, (const guint8 *)&u, 4);
		v = GUINT64_TO_LE(table[2 * c]);
		g_byte_array_append(b, (const guint8 *)&v, 8);
		v = GUINT64_TO_LE(table[2 * c + 1]);
		g_byte_array_append(b, (const guint8 *)&v, 8);
	}
	opt_add(out, OPT_BUFFER, b->data, b->len);
	opt_u64(out, OPT_DONE, 0);	/* no next options section */

	opts = out_tell(out);
	sec = sec_begin(out, OPT_DONE, 0, "options", false);
	out_put(out, out->opts->data, out->opts->len);
	sec_end(out, sec);
	sec = sec_begin(out, OPT_STRINGS, 0, "strings", false);
	out_put(out, out->strings->str, out->strings->len);
	sec_end(out, sec);
	v = out_tell(out);
	out_seek(out, options_at);
	out_u64(out, opts);
	out_seek(out, v);
}

bool *ha_export_parse_cpus(const char *list, uint32_t nr_cpus, GError **error)
{
	g_autofree bool *sel = g_new0(bool, MAX(nr_cpus, 1));
	g_auto(GStrv) parts = g_strsplit(list, ",", -1);

	for (guint i = 0; parts[i]; i++) {
		g_auto(GStrv) r = g_strsplit(parts[i], "-", 2);
		guint64 a, b;

		if (!r[0] || !g_ascii_string_to_unsigned(r[0], 10, 0, G_MAXUINT32, &a, NULL) ||
		    (r[1] && !g_ascii_string_to_unsigned(r[1], 10, 0, G_MAXUINT32, &b, NULL))) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
				    "--cpus: '%s' is not a CPU number or range", parts[i]);
			return NULL;
		}
		if (!r[1])
			b = a;
		if (a > b || b >= nr_cpus) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
				    "--cpus: '%s' is not within the boot's CPUs 0-%u", parts[i],
				    nr_cpus ? nr_cpus - 1 : 0);
			return NULL;
		}
		for (guint64 c = a; c <= b; c++)
			sel[c] = true;
	}
	return g_steal_pointer(&sel);
}

/* The trace-clock range of the chunks to read (the options' -1: open). */
static int64_t range_lo(const HaExportOpts *o)
{
	return o->since_ns >= 0 ? o->since_ns : 0;
}

static int64_t range_hi(const HaExportOpts *o)
{
	return o->until_ns >= 0 ? o->until_ns : INT64_MAX;
}

/* Write every selected chunk of @cpu; returns false with x->error on a store error. */
static bool write_cpu(Exporter *x, uint32_t cpu, Progress *pr, uint64_t *done,
		      uint64_t total)
{
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int64_t));

	if (!ha_store_export_chunk_ids(x->store, x->boot, cpu, range_lo(x->o),
				       range_hi(x->o), ids, &x->error))
		return false;
	x->last_kept = false;
	x->cpu_gaps = cpu < x->gaps->len ? x->gaps->pdata[cpu] : NULL;
	x->gap_next = 0;
	for (guint i = 0; i < ids->len; i++) {
		g_autoptr(GBytes) data = NULL, raw = NULL;
		g_autoptr(GError) e = NULL;
		const uint8_t *page;
		uint32_t len;
		size_t off = 0, zlen;
		const void *z;
		int64_t chunk_cpu;

		if (!ha_store_chunk_data(x->store, g_array_index(ids, int64_t, i), &chunk_cpu,
					 &data, &x->error))
			return false;
		if (!data)
			continue;
		z = g_bytes_get_data(data, &zlen);
		x->stats->store_bytes += zlen;
		raw = ha_chunk_decompress(z, zlen, &e);
		if (!raw) {
			g_set_error(&x->error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "chunk %" PRId64 " of CPU %u unreadable: %s",
				    g_array_index(ids, int64_t, i), cpu, e->message);
			return false;
		}
		while (ha_chunk_next_page(raw, &off, &page, &len)) {
			x->first_of_page = true;
			if (ha_tep_walk_page(x->tep, page, len, on_event, x, NULL) < 0) {
				/* the ingest stored it, so it parsed then: a lost page here */
				page_lost(&x->po, -1);
				continue;
			}
			if (x->first_of_page && ha_tep_missed(x->tep))
				page_lost(&x->po, ha_tep_missed(x->tep));
		}
		if (x->error)		/* a stack the store could not read */
			return false;
		(*done)++;
		progress_tick(pr, *done, total, x->stats->events);
	}
	page_flush(&x->po);
	x->po.pending = 0;
	x->po.last_ts = 0;
	return true;
}

static void le_append(GByteArray *b, uint64_t v, guint size)
{
	uint8_t p[8];

	for (guint i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	g_byte_array_append(b, p, size);
}

/*
 * The TRACEID and TIME_SHIFT options (trace-cmd's trace-input.c reads them; v6 and v7
 * alike) for boot @boot to host clock @clock_name, each as u16 id, u32 size, data.
 * TIME_SHIFT: u64 peer trace id, u32 flags, u32 CPU count, then per CPU: u32 count,
 * count u64 times, count s64 offsets, count u64 scaling ratios; then per CPU count u64
 * scaling fraction bits.
 */
static bool time_shift(HaStore *s, int64_t boot, const HaStoreExportBoot *b,
		       const char *clock_name, uint64_t peer, GByteArray *opts,
		       HaExportStats *st, GError **error)
{
	g_autoptr(HaClockMap) m = NULL;
	g_autoptr(GByteArray) ts = g_byte_array_new();
	g_autoptr(GByteArray) one = g_byte_array_new();
	HaHostClock clock;
	uint64_t trace_id = 0;
	guint n;

	if (!ha_host_clock_parse(clock_name, &clock)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "--host-time %s: not realtime, mono, boot or tai", clock_name);
		return false;
	}
	m = ha_clockmap_load(s, boot, error);
	if (!m)
		return false;
	n = ha_clockmap_points(m);
	if (!n) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "boot %" PRId64 " has no host time: its guest agent never answered a"
			    " clock probe", boot);
		return false;
	}
	if (b->uuid_len >= 8)
		memcpy(&trace_id, b->uuid, 8);
	/* one CPU's samples: the same for every CPU (one clock for the guest) */
	le_append(one, n, 4);
	st->time_shift_unc_min = UINT64_MAX;
	for (guint i = 0; i < n; i++) {
		uint64_t g, u;
		int64_t off;

		ha_clockmap_point(m, i, &g, &off, &u);
		le_append(one, g, 8);
		st->time_shift_unc_min = MIN(st->time_shift_unc_min, u);
		st->time_shift_unc_max = MAX(st->time_shift_unc_max, u);
	}
	for (guint i = 0; i < n; i++) {
		uint64_t g, u;
		int64_t off, host;

		ha_clockmap_point(m, i, &g, &off, &u);
		ha_clockmap_to_host(m, g, clock, &host, &u);
		le_append(one, (uint64_t)(host - (int64_t)g), 8);
	}
	for (guint i = 0; i < n; i++)
		le_append(one, 1, 8);
	le_append(ts, peer, 8);		/* the host recording's trace id, 0: not given */
	le_append(ts, 1, 4);		/* TRACECMD_TSYNC_FLAG_INTERPOLATE */
	le_append(ts, b->nr_cpus, 4);
	for (uint32_t c = 0; c < b->nr_cpus; c++)
		g_byte_array_append(ts, one->data, one->len);
	for (uint32_t c = 0; c < b->nr_cpus; c++)
		for (guint i = 0; i < n; i++)
			le_append(ts, 0, 8);	/* fraction bits */
	if (ts->len > 64u << 20) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
			    "TIME_SHIFT of %u samples x %u CPUs is too large", n, b->nr_cpus);
		return false;
	}
	le_append(opts, OPT_TRACEID, 2);
	le_append(opts, 8, 4);
	le_append(opts, trace_id, 8);
	le_append(opts, OPT_TIME_SHIFT, 2);
	le_append(opts, ts->len, 4);
	g_byte_array_append(opts, ts->data, ts->len);
	st->time_shift_points = n;
	return true;
}

bool ha_export_tracedat(HaStore *s, const HaExportOpts *o, HaExportStats *ret_stats,
			GError **error)
{
	g_autoptr(GArray) boots = ha_report_select_boots(s, o->boot, error);
	g_autoptr(GArray) fs = NULL;
	g_autoptr(GBytes) ksyms = NULL, cmdlines = NULL;
	g_autoptr(GPtrArray) gaps = NULL;
	g_autoptr(GHashTable) epochs = g_hash_table_new_full(g_direct_hash, g_direct_equal,
							    NULL, epochs_free);
	g_autoptr(GHashTable) stacks = g_hash_table_new_full(g_int64_hash, g_int64_equal,
							    g_free, stack_free);
	g_autofree bool *sel = NULL;
	g_autofree char *part = NULL;
	g_auto(HaStoreExportBoot) hello = { 0 };
	g_autofree uint64_t *table = NULL;
	g_autofree uint8_t *pagebuf = NULL, *evbuf = NULL;
	HaExportStats stats = { 0 };
	Exporter x = { .store = s, .o = o, .stats = &stats, .epochs = epochs,
		       .stacks = stacks, .kstack_id = -1, .marker = { .type = -1 } };
	g_autoptr(GString) strings = g_string_new(NULL);
	g_autoptr(GByteArray) opts = g_byte_array_new();
	g_autoptr(GByteArray) host_opts = g_byte_array_new();
	Out out = { .version = o->version >= 7 ? 7 : 6, .strings = strings, .opts = opts,
		    .host_opts = host_opts };
	Zout z = { 0 };
	Progress pr = { .start = g_get_monotonic_time(), .on = o->progress && isatty(2) };
	uint32_t psize, flags, nr_cpus, hp_off, hp_size, slots;
	uint64_t table_at = 0, options_at = 0, flyrecord = 0, fly_sec = 0, total = 0, done = 0;
	const Format *f;
	const char *clock, *release;
	bool found, ok = false;

	if (!boots)
		return false;
	if (boots->len != 1) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "export writes one boot at a time");
		return false;
	}
	x.boot = g_array_index(boots, int64_t, 0);
	/* a boot that is not there has page size 0: refused as not exportable below */
	if (!ha_store_export_boot(s, x.boot, &found, &hello, error))
		return false;
	psize = hello.page_size;
	flags = hello.flags;
	nr_cpus = hello.nr_cpus;
	clock = hello.trace_clock;
	release = hello.release;
	if (flags & SMP_HELLO_PAGES_BE) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "boot %" PRId64 " has big-endian pages: export writes little-endian"
			    " only", x.boot);
		return false;
	}
	if (psize < 256 || psize > (1u << 20) || nr_cpus == 0 || nr_cpus > 4096) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "boot %" PRId64 ": page size %u, %u CPUs: not exportable", x.boot,
			    psize, nr_cpus);
		return false;
	}
	if (o->cpus) {
		sel = ha_export_parse_cpus(o->cpus, nr_cpus, error);
		if (!sel)
			return false;
	}
	x.tep = ha_tep_new(psize, false);
	fs = load_formats(&x, error);
	if (!fs)
		goto done;
	f = find_format(fs, "header_page");
	{
		g_autofree char *hp = f ? format_str(f) : NULL;
		uint32_t c_off, c_size;

		if (!hp || !fmt_field(hp, "data", &hp_off, &hp_size) ||
		    !fmt_field(hp, "commit", &c_off, &c_size) || c_off != 8 || c_size != 8 ||
		    hp_off != 16 || !ha_tep_ready(x.tep)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "boot %" PRId64 ": no usable header_page format (need the"
				    " 64-bit 6.1 layout: commit at 8, data at 16)", x.boot);
			goto done;
		}
	}
	f = find_format(fs, "ftrace/kernel_stack");
	if (f) {
		g_autofree char *ks = format_str(f);
		uint32_t sz;

		x.kstack_id = fmt_id(ks);
		if (!fmt_field(ks, "size", &x.ks_size_off, &sz) || sz != 4 ||
		    !fmt_field(ks, "caller", &x.ks_caller_off, &sz) ||
		    x.ks_caller_off < 8 || x.ks_caller_off > 64 || x.kstack_id < 0 ||
		    x.kstack_id > 0xffff)
			x.kstack_id = -1;
	}
	if (x.kstack_id < 0)
		g_printerr("host-agent export: boot %" PRId64 " has no usable ftrace/kernel_stack"
			   " format: stack_id events are kept as they are\n", x.boot);
	f = find_format(fs, "ftrace/print");
	if (f) {
		gsize n;
		const char *t = g_bytes_get_data(f->text, &n);

		if (!ha_marker_format_parse(t, n, &x.marker))
			x.marker.type = -1;
	}
	if (!load_epochs(&x, error))
		goto done;
	gaps = ha_report_gaps(s, x.boot, error);
	if (!gaps)
		goto done;
	x.gaps = gaps;
	ksyms = load_kallsyms(&x, error);
	if (!ksyms)
		goto done;
	cmdlines = load_cmdlines(&x, error);
	if (!cmdlines)
		goto done;
	if (o->host_time && !time_shift(s, x.boot, &hello, o->host_time, o->host_trace_id,
					host_opts, &stats, error))
		goto done;

	/* CPU slots: up to the highest CPU selected, the others empty */
	slots = nr_cpus;
	if (sel)
		while (slots > 1 && !sel[slots - 1])
			slots--;
	if (!ha_store_export_chunk_count(s, x.boot, range_lo(o), range_hi(o), &total, error))
		goto done;

	part = g_strconcat(o->output, ".part", NULL);
	out.path = part;
	out.f = fopen(part, "wb");
	if (!out.f) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s", part,
			    g_strerror(errno));
		goto done;
	}
	write_header(&out, fs, ksyms, cmdlines, psize, slots, clock ? clock : "local", release,
		     &options_at);
	table = g_new0(uint64_t, 2 * (gsize)slots);
	if (out.version < 7) {
		g_autofree char *clk = g_strdup_printf("[%s]\n", clock ? clock : "local");
		g_autoptr(GBytes) b = g_bytes_new(clk, strlen(clk));

		table_at = out_tell(&out);
		for (uint32_t c = 0; c < 2 * slots; c++)
			out_u64(&out, 0);
		out_text64(&out, b);	/* v6 with TRACECLOCK: the trace_clock file */
	} else {
		flyrecord = out_tell(&out);
		fly_sec = sec_begin(&out, OPT_BUFFER, SEC_COMPRESSED, "buffer flyrecord", false);
		z.cctx = ZSTD_createCCtx();
		z.raw_cap = (size_t)ZCHUNK_PAGES * psize;
		z.raw = g_malloc(z.raw_cap);
		z.z_cap = ZSTD_compressBound(z.raw_cap);
		z.z = g_malloc(z.z_cap);
		if (!z.cctx) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "no zstd context");
			goto done;
		}
	}
	pagebuf = g_malloc0(psize);
	evbuf = g_malloc0(psize);
	x.ev = evbuf;
	x.po = (PageOut){ .out = &out, .page = pagebuf, .psize = psize, .hdr = hp_off,
			  .stats = &stats, .z = z.cctx ? &z : NULL };
	for (uint32_t c = 0; c < slots && !out.failed; c++) {
		uint64_t start, before = x.po.pages;

		if (sel && !sel[c])
			continue;
		out_align(&out, psize);	/* each CPU's data starts on a page */
		start = out_tell(&out);
		if (x.po.z) {
			z.chunks = 0;
			out_u32(&out, 0);	/* the chunk count, filled in below */
		}
		if (!write_cpu(&x, c, &pr, &done, total)) {
			g_propagate_error(error, g_steal_pointer(&x.error));
			goto done;
		}
		table[2 * c] = start;
		if (x.po.z) {
			uint64_t end;

			zout_flush(&z, &out);
			end = out_tell(&out);
			out_seek(&out, start);
			out_u32(&out, z.chunks);
			out_seek(&out, end);
			table[2 * c + 1] = z.chunks ? end - start : 0;
		} else {
			table[2 * c + 1] = (x.po.pages - before) * psize;
		}
		if (!table[2 * c + 1])
			table[2 * c] = 0;
	}
	if (out.version >= 7) {
		sec_end(&out, fly_sec);
		write_trailer_v7(&out, options_at, flyrecord, clock ? clock : "local", psize,
				 slots, table);
	}
	stats.pages = x.po.pages;
	stats.file_bytes = out_tell(&out);
	stats.raw_page_bytes = x.po.z ? z.raw_bytes : x.po.pages * psize;
	if (out.version < 7) {
		out_seek(&out, table_at);
		for (uint32_t c = 0; c < 2 * slots; c++)
			out_u64(&out, table[c]);
	}
	if (fflush(out.f) != 0 || fsync(fileno(out.f)) != 0) {
		if (!out.failed)
			out.err = errno;
		out.failed = true;
	}
	if (fclose(out.f) != 0 && !out.failed) {
		out.failed = true;
		out.err = errno;
	}
	out.f = NULL;
	if (out.failed) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(out.err), "%s: %s", part,
			    g_strerror(out.err));
		goto done;
	}
	if (rename(part, o->output) < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s",
			    o->output, g_strerror(errno));
		goto done;
	}
	stats.nr_cpus = slots;
	if (ret_stats)
		*ret_stats = stats;
	ok = true;
done:
	if (pr.shown)
		g_printerr("\r\033[K");
	if (out.f)
		fclose(out.f);
	if (!ok && part)
		unlink(part);
	g_clear_error(&x.error);
	ha_tep_free(x.tep);
	ZSTD_freeCCtx(z.cctx);
	g_free(z.raw);
	g_free(z.z);
	return ok;
}
