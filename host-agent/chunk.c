// SPDX-License-Identifier: MIT
/* chunk.c - pack and zstd-compress pages (see chunk.h). */
#include "chunk.h"

#include <gio/gio.h>
#include <string.h>
#include <zstd.h>

void ha_chunk_add_page(GByteArray *packed, const uint8_t *data, uint32_t len)
{
	uint32_t le = GUINT32_TO_LE(len);

	g_byte_array_append(packed, (const guint8 *)&le, 4);
	g_byte_array_append(packed, data, len);
}

GBytes *ha_chunk_compress(const GByteArray *packed, int level, GError **error)
{
	size_t cap = ZSTD_compressBound(packed->len);
	g_autofree uint8_t *out = g_malloc(cap);
	size_t n = ZSTD_compress(out, cap, packed->data, packed->len, level);

	if (ZSTD_isError(n)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "zstd: %s",
			    ZSTD_getErrorName(n));
		return NULL;
	}
	return g_bytes_new_take(g_realloc(g_steal_pointer(&out), n ? n : 1), n);
}

struct _HaChunkZ {
	ZSTD_CCtx *cctx;
	int level;
	uint8_t *out;
	size_t cap;
};

HaChunkZ *ha_chunkz_new(int level)
{
	HaChunkZ *z = g_new0(HaChunkZ, 1);

	z->cctx = ZSTD_createCCtx();
	z->level = level;
	if (!z->cctx)
		g_error("zstd: out of memory");
	return z;
}

void ha_chunkz_free(HaChunkZ *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->cctx);
	g_free(z->out);
	g_free(z);
}

size_t ha_chunk_packed_size(const HaChunkSpan *spans, size_t n)
{
	size_t sz = 0;

	for (size_t i = 0; i < n; i++)
		sz += 4 + (size_t)spans[i].len;
	return sz;
}

static bool zstd_ok(size_t r, GError **error)
{
	if (!ZSTD_isError(r))
		return true;
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "zstd: %s", ZSTD_getErrorName(r));
	return false;
}

/* All of @len bytes into the frame (@out has room for the whole bound). */
static bool feed(ZSTD_CCtx *cctx, ZSTD_outBuffer *out, const void *src, size_t len,
		 GError **error)
{
	ZSTD_inBuffer in = { .src = src, .size = len };

	while (in.pos < in.size) {
		size_t r = ZSTD_compressStream2(cctx, out, &in, ZSTD_e_continue);

		if (!zstd_ok(r, error))
			return false;
		if (out->pos == out->size && in.pos < in.size) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
				    "zstd: output above its bound");
			return false;
		}
	}
	return true;
}

/* Compress @spans of @base as one frame with @cctx into *@out (grown to the bound). */
static bool compress_into(ZSTD_CCtx *cctx, int level, const uint8_t *base,
			  const HaChunkSpan *spans, size_t n, uint8_t **out_buf, size_t *cap,
			  size_t *ret_len, GError **error)
{
	size_t raw = ha_chunk_packed_size(spans, n), need = ZSTD_compressBound(raw);
	ZSTD_outBuffer out;

	if (need > *cap) {
		g_free(*out_buf);
		*cap = MAX(need, *cap * 2);
		*out_buf = g_malloc(*cap);
	}
	out = (ZSTD_outBuffer){ .dst = *out_buf, .size = *cap };
	/* the content size goes in the frame header: ha_chunk_decompress() needs it */
	if (!zstd_ok(ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only), error) ||
	    !zstd_ok(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level), error) ||
	    !zstd_ok(ZSTD_CCtx_setPledgedSrcSize(cctx, raw), error))
		return false;
	for (size_t i = 0; i < n; i++) {
		uint32_t le = GUINT32_TO_LE(spans[i].len);

		if (!feed(cctx, &out, &le, 4, error) ||
		    !feed(cctx, &out, base + spans[i].off, spans[i].len, error))
			return false;
	}
	for (;;) {
		ZSTD_inBuffer none = { 0 };
		size_t r = ZSTD_compressStream2(cctx, &out, &none, ZSTD_e_end);

		if (!zstd_ok(r, error))
			return false;
		if (r == 0)
			break;
		if (out.pos == out.size) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
				    "zstd: output above its bound");
			return false;
		}
	}
	*ret_len = out.pos;
	return true;
}

const void *ha_chunkz_compress(HaChunkZ *z, const uint8_t *base, const HaChunkSpan *spans,
			       size_t n, size_t *ret_len, GError **error)
{
	if (!compress_into(z->cctx, z->level, base, spans, n, &z->out, &z->cap, ret_len,
			   error))
		return NULL;
	return z->out;
}

/* ---- jobs ---------------------------------------------------------------------- */

enum { JOB_IDLE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct _HaChunkJob {
	gatomicrefcount ref;	/* the owner's, and one per pool entry */
	gint state;		/* JOB_*: QUEUED -> RUNNING by whoever takes it first */
	GMutex lock;		/* with @done: RUNNING -> DONE on a worker */
	GCond done;
	int level;
	const uint8_t *base;
	GArray *spans;		/* HaChunkSpan, a copy */
	uint8_t *out;
	size_t cap, len;
	GError *error;
};

/* The workers' zstd contexts, one per worker busy at a time (bounded by the pool). */
static GMutex spare_lock;
static GPtrArray *spare_cctx;

static ZSTD_CCtx *cctx_take(void)
{
	ZSTD_CCtx *cctx = NULL;

	g_mutex_lock(&spare_lock);
	if (spare_cctx && spare_cctx->len)
		cctx = g_ptr_array_steal_index_fast(spare_cctx, spare_cctx->len - 1);
	g_mutex_unlock(&spare_lock);
	if (!cctx && !(cctx = ZSTD_createCCtx()))
		g_error("zstd: out of memory");
	return cctx;
}

static void cctx_give(ZSTD_CCtx *cctx)
{
	g_mutex_lock(&spare_lock);
	if (!spare_cctx)
		spare_cctx = g_ptr_array_new();
	g_ptr_array_add(spare_cctx, cctx);
	g_mutex_unlock(&spare_lock);
}

static void job_unref(HaChunkJob *j)
{
	if (!g_atomic_ref_count_dec(&j->ref))
		return;
	g_array_unref(j->spans);
	g_free(j->out);
	g_clear_error(&j->error);
	g_mutex_clear(&j->lock);
	g_cond_clear(&j->done);
	g_free(j);
}

static void job_run(HaChunkJob *j, ZSTD_CCtx *cctx)
{
	g_clear_error(&j->error);
	j->len = 0;
	compress_into(cctx, j->level, j->base, (const HaChunkSpan *)(void *)j->spans->data,
		      j->spans->len, &j->out, &j->cap, &j->len, &j->error);
}

static void on_pool_job(gpointer data, gpointer user)
{
	HaChunkJob *j = data;

	(void)user;
	/* taken by its owner's wait meanwhile (or cancelled): nothing to do */
	if (g_atomic_int_compare_and_exchange(&j->state, JOB_QUEUED, JOB_RUNNING)) {
		ZSTD_CCtx *cctx = cctx_take();

		job_run(j, cctx);
		cctx_give(cctx);
		g_mutex_lock(&j->lock);
		g_atomic_int_set(&j->state, JOB_DONE);
		g_cond_broadcast(&j->done);
		g_mutex_unlock(&j->lock);
	}
	job_unref(j);
}

static GThreadPool *job_pool(void)
{
	static GThreadPool *pool;

	if (g_once_init_enter(&pool)) {
		GThreadPool *p = g_thread_pool_new(on_pool_job, NULL,
						   (gint)MAX(g_get_num_processors(), 1u), FALSE,
						   NULL);

		g_once_init_leave(&pool, p);
	}
	return pool;
}

HaChunkJob *ha_chunk_job_new(void)
{
	HaChunkJob *j = g_new0(HaChunkJob, 1);

	g_atomic_ref_count_init(&j->ref);
	g_mutex_init(&j->lock);
	g_cond_init(&j->done);
	j->spans = g_array_new(FALSE, FALSE, sizeof(HaChunkSpan));
	return j;
}

/* Cancel a job no worker has taken, or wait for the one that did. */
static void job_settle(HaChunkJob *j)
{
	if (g_atomic_int_compare_and_exchange(&j->state, JOB_QUEUED, JOB_IDLE))
		return;
	g_mutex_lock(&j->lock);
	while (g_atomic_int_get(&j->state) == JOB_RUNNING)
		g_cond_wait(&j->done, &j->lock);
	g_mutex_unlock(&j->lock);
}

void ha_chunk_job_cancel(HaChunkJob *j)
{
	job_settle(j);
}

void ha_chunk_job_free(HaChunkJob *j)
{
	if (!j)
		return;
	job_settle(j);
	job_unref(j);
}

void ha_chunk_job_start(HaChunkJob *j, int level, const uint8_t *base,
			const HaChunkSpan *spans, size_t n)
{
	job_settle(j);	/* a job waited for is DONE already: this returns at once */
	j->level = level;
	j->base = base;
	g_array_set_size(j->spans, 0);
	g_array_append_vals(j->spans, spans, (guint)n);
	g_atomic_int_set(&j->state, JOB_QUEUED);
	g_atomic_ref_count_inc(&j->ref);
	/* no thread to be had: the job stays queued and its wait compresses it */
	if (!g_thread_pool_push(job_pool(), j, NULL))
		job_unref(j);
}

const void *ha_chunk_job_wait(HaChunkJob *j, HaChunkZ *z, size_t *ret_len,
			      GError **error)
{
	if (g_atomic_int_compare_and_exchange(&j->state, JOB_QUEUED, JOB_RUNNING)) {
		job_run(j, z->cctx);
		g_atomic_int_set(&j->state, JOB_DONE);
	} else {
		job_settle(j);
	}
	if (g_atomic_int_get(&j->state) != JOB_DONE) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "chunk job never started");
		return NULL;
	}
	if (j->error) {
		g_propagate_error(error, g_error_copy(j->error));
		return NULL;
	}
	*ret_len = j->len;
	return j->out;
}

GBytes *ha_chunk_decompress(const void *data, size_t len, GError **error)
{
	unsigned long long sz = ZSTD_getFrameContentSize(data, len);
	g_autofree uint8_t *out = NULL;
	size_t n;

	if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN ||
	    sz > HA_CHUNK_RAW_MAX) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "stored chunk has no valid zstd size");
		return NULL;
	}
	out = g_malloc(sz ? sz : 1);
	n = ZSTD_decompress(out, sz, data, len);
	if (ZSTD_isError(n) || n != sz) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "zstd: %s",
			    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short chunk");
		return NULL;
	}
	return g_bytes_new_take(g_steal_pointer(&out), n);
}

bool ha_chunk_next_page(GBytes *raw, size_t *off, const uint8_t **ret_page,
			uint32_t *ret_len)
{
	size_t len;
	const uint8_t *p = g_bytes_get_data(raw, &len);
	uint32_t n;

	if (*off > len || len - *off < 4)
		return false;
	memcpy(&n, p + *off, 4);
	n = GUINT32_FROM_LE(n);
	if (len - *off - 4 < n)
		return false;
	*ret_page = p + *off + 4;
	*ret_len = n;
	*off += 4 + (size_t)n;
	return true;
}
