// SPDX-License-Identifier: MIT
/* chunk.c - pack and zstd-compress pages (see chunk.h). */
#include "chunk.h"

#include <gio/gio.h>
#include <string.h>
#include <zstd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "le.h"

void ha_chunk_add_page(GByteArray *packed, const uint8_t *data, uint32_t len)
{
	uint32_t le = GUINT32_TO_LE(len);

	g_byte_array_append(packed, (const guint8 *)&le, 4);
	g_byte_array_append(packed, data, len);
}

GBytes *ha_chunk_compress_raw(const GByteArray *packed, int level, GError **error)
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

/*
 * The column format (chunk.h). A page is its u32 length, its header (16 bytes, or
 * fewer on a shorter page), the events the walk below takes, and its tail: the bytes
 * after them (padding, an event it does not take, the end of a cut page) as they are.
 * The walk takes, from byte 16 on and while the event lies inside the page, data
 * events of type_len 1-28 (the body: type_len * 4 bytes), of type_len 0 (the body:
 * the length word minus 4, rounded up to 4, at least 4), and time extends and
 * stamps (type_len 30, 31: one more word). Nothing else is read of the page.
 *
 * Its transform, one buffer zstd then compresses:
 *   u32 npages, nev, nx, ncls, tail_len, raw_len   (HA_CHUNK_COL_FIXED)
 *   ncls x (u32 body length L, u32 rows)           every class's L distinct
 *   npages x (u32 page length, u32 events taken)
 *   the page headers, in page order
 *   the event header words: byte 0 of each, then byte 1, 2, 3 (nev of each)
 *   nx extra words (type_len 0's length, type_len 30/31's second word)
 *   per class, its bodies in event order as L planes of rows bytes: byte 0 of each
 *     body, then byte 1, ... (the fields of one event type side by side)
 *   the pages' tails, in page order
 * A body goes to the class of its length.
 */
#define COL_FIXED	24u

/*
 * The encoder (col_encode()) goes over a chunk's pages twice. The walk (pass 1) keeps,
 * in the order it takes the events, their header words, their extra words and, for a
 * body, its offset, each class's offsets in blocks of COL_ROWS (opened as needed,
 * their classes in the order they opened). Then, the layout known, pass 2 writes the
 * header words' planes and a block of bodies at a time, transposed 8 columns by 16
 * rows with SSE2 (16-byte stores; a block's bodies were met together, so their lines
 * are read together). Pass 2 reads the pages again only for the bodies. Kept: 4 bytes
 * an event (its header word), 4 a body offset or extra word and one a block: about 8
 * an event, and an event is at least 8 bytes.
 */
#define COL_ROWS	16u

typedef struct {
	uint32_t nev;		/* events taken */
	uint32_t end;		/* where the tail starts */
} ColPage;

typedef struct {
	uint32_t len;		/* body length */
	uint32_t rows;
	uint32_t done;		/* rows written so far */
	uint8_t *dst;		/* its planes */
} ColClass;

struct _HaChunkZ {
	ZSTD_CCtx *cctx;
	int level;
	uint8_t *out;
	size_t cap;
	uint8_t *in;		/* one CPU's pages, transformed */
	size_t in_cap;
	uint32_t *hw;		/* the walk's header words */
	size_t hw_cap;
	uint32_t *xw;		/* its extra words */
	size_t xw_cap;
	uint32_t *slot;		/* its blocks: COL_ROWS body offsets of one class */
	size_t slot_cap;
	uint8_t *tag;		/* each block's class */
	size_t tag_cap;
	ColPage *pg;
	size_t pg_cap;
	ColClass cls[HA_CHUNK_CLASSES_MAX];
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
	g_free(z->in);
	g_free(z->hw);
	g_free(z->xw);
	g_free(z->slot);
	g_free(z->tag);
	g_free(z->pg);
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

/* Grow *@buf to hold @need bytes (its contents not kept). */
static void reserve(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	g_free(*buf);
	*cap = MAX(need, *cap * 2);
	*buf = g_malloc(*cap);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = GUINT32_TO_LE(v);
	memcpy(p, &v, 4);
}

/* The body length of the data event at @p (type_len @tl, @room bytes left in the
 * page from @p), or -1: not taken. Encoder and decoder alike. */
static int64_t col_body(uint32_t tl, uint32_t word1, size_t room)
{
	uint64_t len;

	if (tl >= 1 && tl <= 28)
		len = (uint64_t)tl * 4;
	else if (tl == 0 && word1 >= 8)
		len = ((uint64_t)word1 - 4 + 3) & ~UINT64_C(3);
	else
		return -1;
	return len + (tl ? 4 : 8) <= room ? (int64_t)len : -1;
}

#ifdef __SSE2__
/*
 * @rounds rounds of one interleave of the @n registers of the array @a: registers 2i
 * and 2i + 1 become the low and the high half of a[i]'s and a[i + n/2]'s bytes
 * interleaved. Repeated, it transposes bytes (the callers say how often and where each
 * byte lands). A macro: both callers compile to exactly the code of the loops it
 * replaced, where a function taking @a by pointer measured 0.96x of the daemon's
 * events per CPU-second.
 */
#define INTERLEAVE_ROUNDS(a, n, rounds)						\
	do {									\
		__m128i b_[n];							\
										\
		_Pragma("GCC unroll 4")						\
		for (int r_ = 0; r_ < (rounds); r_++) {				\
			_Pragma("GCC unroll 4")					\
			for (int i_ = 0; i_ < (n) / 2; i_++) {			\
				b_[2 * i_] = _mm_unpacklo_epi8((a)[i_], (a)[i_ + (n) / 2]); \
				b_[2 * i_ + 1] = _mm_unpackhi_epi8((a)[i_], (a)[i_ + (n) / 2]); \
			}							\
			memcpy((a), b_, sizeof(b_));				\
		}								\
	} while (0)
#endif

/* Byte k of the 16 bodies at @base + @off[i] + @col into plane k, for k < 8 (16 bytes at
 * @dst + k * @stride). */
static inline void transpose16x8(const uint8_t *base, const uint32_t *off, size_t col,
				 uint8_t *dst, size_t stride)
{
#ifdef __SSE2__
	__m128i a[8];

	/* rows i and i + 8 interleaved, then three rounds of the interleave, each
	 * of register i with i + 4, take byte k of row i to byte i of register k */
#pragma GCC unroll 8
	for (int i = 0; i < 8; i++)
		a[i] = _mm_unpacklo_epi8(_mm_loadl_epi64((const void *)(base + off[i] + col)),
					 _mm_loadl_epi64((const void *)(base + off[i + 8] + col)));
	INTERLEAVE_ROUNDS(a, 8, 3);
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		_mm_storeu_si128((void *)(dst + (size_t)k * stride), a[k]);
#else
	for (int k = 0; k < 8; k++)
		for (int i = 0; i < 16; i++)
			dst[(size_t)k * stride + i] = base[off[i] + col + k];
#endif
}

/* Byte b of each of the @n words @w into plane b (@n bytes at @dst + b * @n). */
static void col_bytes4(const uint32_t *w, size_t n, uint8_t *dst)
{
	size_t e = 0;

#ifdef __SSE2__
	for (; e + 16 <= n; e += 16) {
		__m128i a[4];

#pragma GCC unroll 4
		for (int i = 0; i < 4; i++)
			a[i] = _mm_loadu_si128((const void *)(w + e + 4 * i));
		/* four rounds of the interleave, of register i with i + 2, take byte b
		 * of word i to byte i of register b */
		INTERLEAVE_ROUNDS(a, 4, 4);
#pragma GCC unroll 4
		for (int k = 0; k < 4; k++)
			_mm_storeu_si128((void *)(dst + k * n + e), a[k]);
	}
#endif
	for (; e < n; e++)
		for (int b = 0; b < 4; b++)
			dst[b * n + e] = (uint8_t)(w[e] >> (8 * b));
}

/* The @nrows bodies at @base + @off[i] into class @k's planes, as its rows from @row on. */
static void col_rows(const ColClass *k, const uint8_t *base, const uint32_t *off,
		     uint32_t row, uint32_t nrows)
{
	uint8_t *dst = k->dst + row;
	size_t col = 0, len = k->len, rows = k->rows;

	if (nrows == COL_ROWS && len >= 8) {
		for (; col + 8 <= len; col += 8)
			transpose16x8(base, off, col, dst + col * rows, rows);
		/* the last 4 bytes with the 4 before them again (the same values) */
		if (col < len)
			transpose16x8(base, off, len - 8, dst + (len - 8) * rows, rows);
		col = len;
	}
	for (; col < len; col++)
		for (uint32_t i = 0; i < nrows; i++)
			dst[col * rows + i] = base[off[i] + col];
}

/* Grow *@buf of *@cap elements of @size to hold @need, keeping its contents. */
static void *grow(void *buf, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return buf;
	*cap = MAX(need, *cap * 2);
	return g_realloc_n(buf, *cap, size);
}

/* Transform @n pages of @base into z->in; returns its length. */
static size_t col_encode(HaChunkZ *z, const uint8_t *base, const HaChunkSpan *spans, size_t n)
{
	int8_t by_tl[32];	/* a data event's class by its type_len; -1: none yet */
	uint32_t ncls = 0, nev = 0, nx = 0, nblk = 0, lens[HA_CHUNK_CLASSES_MAX],
		 rows[HA_CHUNK_CLASSES_MAX] = { 0 }, next[HA_CHUNK_CLASSES_MAX];
	size_t tail = 0, heads = 0, raw = 0, total, off, need;
	uint8_t *o, *tp;
	uint32_t *hw = z->hw, *xw = z->xw, *slot = z->slot;
	uint8_t *tag = z->tag;

	memset(by_tl, -1, sizeof(by_tl));
	z->pg = grow(z->pg, &z->pg_cap, n, sizeof(ColPage));
	/* pass 1: what each page's walk takes */
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = base + spans[i].off;
		size_t len = spans[i].len, pos = 16;
		uint32_t first = nev, poff = spans[i].off;
		/* the next page's lines on their way while this one is walked, one an
		 * event (a page's worth asked at once stalled on the requests) */
		const uint8_t *ahead = base + (i + 1 < n ? spans[i + 1].off : 0);
		size_t ahead_len = i + 1 < n ? spans[i + 1].len : 0, ahead_at = 0;

		raw += 4 + len;
		heads += MIN(len, 16);
		/* room for the page: an event is at least 8 bytes, and a class opens
		 * a block with its first body and every COL_ROWS bodies after */
		hw = z->hw = grow(z->hw, &z->hw_cap, nev + len / 8, sizeof(uint32_t));
		need = nblk + len / 8 / COL_ROWS + HA_CHUNK_CLASSES_MAX + 1;
		tag = z->tag = grow(z->tag, &z->tag_cap, need, 1);
		slot = z->slot = grow(z->slot, &z->slot_cap, need * COL_ROWS, sizeof(uint32_t));
		while (len >= 16 && len - pos >= 4) {
			uint32_t h = ha_le32(p + pos), tl = h & 31;
			int cls = by_tl[tl];
			size_t body = (size_t)tl * 4, at = pos + 4;

			if (ahead_at < ahead_len) {
				__builtin_prefetch(ahead + ahead_at);
				ahead_at += 64;
			}

			if (cls < 0 || body + 4 > len - pos) {
				/* not a data event of a class seen before, whole in the page */
				uint32_t w1;
				int64_t b;

				if (len - pos < 8)
					break;
				w1 = ha_le32(p + pos + 4);
				if (tl == 0 || tl >= 30)
					xw = z->xw = grow(z->xw, &z->xw_cap, nx + 1, sizeof(uint32_t));
				if (tl >= 30) {
					hw[nev++] = h;
					xw[nx++] = w1;
					pos += 8;
					continue;
				}
				b = col_body(tl, w1, len - pos);
				if (b < 0)
					break;
				for (uint32_t k = 0; k < ncls; k++)
					if (lens[k] == (uint64_t)b)
						cls = (int)k;
				if (cls < 0) {
					if (ncls == HA_CHUNK_CLASSES_MAX)
						break;
					cls = (int)ncls++;
					lens[cls] = (uint32_t)b;
					next[cls] = 0;
				}
				if (tl)
					by_tl[tl] = (int8_t)cls;
				else
					xw[nx++] = w1;
				body = (size_t)b;
				at = pos + (tl ? 4 : 8);
			}
			hw[nev++] = h;
			/* the body's offset into its class's last block, or into a new
			 * one when that is full (without a branch: which event opens a
			 * block is hard to predict) */
			{
				uint32_t sl = next[cls], open = sl % COL_ROWS == 0;

				tag[nblk] = (uint8_t)cls;
				sl = open ? nblk * COL_ROWS : sl;
				nblk += open;
				slot[sl] = poff + (uint32_t)at;
				next[cls] = sl + 1;
			}
			rows[cls]++;
			pos = at + body;
		}
		for (; ahead_at < ahead_len; ahead_at += 64)
			__builtin_prefetch(ahead + ahead_at);
		if (len < 16)
			pos = len;
		z->pg[i] = (ColPage){ nev - first, (uint32_t)pos };
		tail += len - pos;
	}
	total = COL_FIXED + 8 * (size_t)ncls + 8 * n + heads + 4 * (size_t)nev + 4 * (size_t)nx +
		tail;
	for (uint32_t k = 0; k < ncls; k++)
		total += (size_t)lens[k] * rows[k];
	reserve(&z->in, &z->in_cap, total);
	o = z->in;
	put32(o, (uint32_t)n);
	put32(o + 4, nev);
	put32(o + 8, nx);
	put32(o + 12, ncls);
	put32(o + 16, (uint32_t)tail);
	put32(o + 20, (uint32_t)raw);
	off = COL_FIXED;
	for (uint32_t k = 0; k < ncls; k++, off += 8) {
		put32(o + off, lens[k]);
		put32(o + off + 4, rows[k]);
	}
	for (size_t i = 0; i < n; i++, off += 8) {
		put32(o + off, spans[i].len);
		put32(o + off + 4, z->pg[i].nev);
	}
	for (size_t i = 0; i < n; i++) {
		size_t h = MIN(spans[i].len, 16);

		memcpy(o + off, base + spans[i].off, h);
		off += h;
	}
	/* pass 2: the header words' planes, the extra words, the bodies' planes */
	col_bytes4(hw, nev, o + off);
	off += 4 * (size_t)nev;
	for (uint32_t x = 0; x < nx; x++, off += 4)
		put32(o + off, xw[x]);
	for (uint32_t k = 0; k < ncls; k++) {
		z->cls[k] = (ColClass){ .len = lens[k], .rows = rows[k], .dst = o + off };
		off += (size_t)lens[k] * rows[k];
	}
	/* a class's blocks are in the order of its rows, each but its last full */
	for (uint32_t b = 0; b < nblk; b++) {
		ColClass *k = &z->cls[tag[b]];
		uint32_t nr = MIN(k->rows - k->done, COL_ROWS);

		col_rows(k, base, slot + b * COL_ROWS, k->done, nr);
		k->done += nr;
	}
	tp = o + off;
	for (size_t i = 0; i < n; i++) {
		size_t t = spans[i].len - z->pg[i].end;

		memcpy(tp, base + spans[i].off + z->pg[i].end, t);
		tp += t;
	}
	g_assert(tp == o + total);
	return total;
}

static const uint8_t col_magic[4] = { 'S', 'M', 'C', '1' };

/*
 * The spans are transformed into one buffer and compressed in one call (zstd's
 * streaming API would copy them into its window anyway).
 */
const void *ha_chunkz_compress(HaChunkZ *z, const uint8_t *base, const HaChunkSpan *spans,
			       size_t n, size_t *ret_len, GError **error)
{
	size_t t = col_encode(z, base, spans, n), r;

	reserve(&z->out, &z->cap, 4 + ZSTD_compressBound(t));
	memcpy(z->out, col_magic, 4);
	/* ZSTD_compress2() writes the content size in the frame header:
	 * ha_chunk_decompress() needs it */
	if (!zstd_ok(ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_only), error) ||
	    !zstd_ok(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, z->level),
		     error))
		return NULL;
	r = ZSTD_compress2(z->cctx, z->out + 4, z->cap - 4, z->in, t);
	if (!zstd_ok(r, error))
		return NULL;
	*ret_len = 4 + r;
	return z->out;
}

GBytes *ha_chunk_compress(const GByteArray *packed, int level, GError **error)
{
	g_autoptr(GArray) spans = g_array_new(FALSE, FALSE, sizeof(HaChunkSpan));
	g_autoptr(HaChunkZ) z = NULL;
	size_t off = 0, len;
	const void *d;

	while (packed->len - off >= 4) {
		HaChunkSpan sp = { .off = (uint32_t)off + 4, .len = ha_le32(packed->data + off) };

		if (packed->len - off - 4 < sp.len)
			break;
		g_array_append_val(spans, sp);
		off += 4 + (size_t)sp.len;
	}
	if (off != packed->len || packed->len > HA_CHUNK_RAW_MAX)
		return ha_chunk_compress_raw(packed, level, error);
	z = ha_chunkz_new(level);
	d = ha_chunkz_compress(z, packed->data, (const HaChunkSpan *)(void *)spans->data,
			       spans->len, &len, error);
	return d ? g_bytes_new(d, len) : NULL;
}

static GBytes *bad(GError **error, const char *why)
{
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "stored chunk: %s", why);
	return NULL;
}

/* Inflate a zstd frame of at most @max bytes; NULL on any error. */
static uint8_t *zstd_inflate(const void *data, size_t len, size_t max, size_t *ret_len,
			     GError **error)
{
	unsigned long long sz = ZSTD_getFrameContentSize(data, len);
	g_autofree uint8_t *out = NULL;
	size_t n;

	if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN || sz > max) {
		bad(error, "no valid zstd size");
		return NULL;
	}
	out = g_malloc(sz ? sz : 1);
	n = ZSTD_decompress(out, sz, data, len);
	if (ZSTD_isError(n) || n != sz) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "zstd: %s",
			    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short chunk");
		return NULL;
	}
	*ret_len = n;
	return g_steal_pointer(&out);
}

/* A reader of the transform: @n bytes at *@off of @len, or NULL. */
static const uint8_t *take(const uint8_t *t, size_t len, size_t *off, uint64_t n)
{
	const uint8_t *p = t + *off;

	if (n > len - *off)
		return NULL;
	*off += (size_t)n;
	return p;
}

/* The inverse of col_encode(): every length checked against what is left. */
static GBytes *col_decode(const uint8_t *t, size_t tlen, GError **error)
{
	uint32_t npages, nev, nx, ncls, tail_len, raw_len;
	const uint8_t *cls_tab, *meta, *heads, *eplane, *xp, *tp;
	const uint8_t *planes[HA_CHUNK_CLASSES_MAX];
	uint32_t rows[HA_CHUNK_CLASSES_MAX], used[HA_CHUNK_CLASSES_MAX] = { 0 };
	uint32_t lens[HA_CHUNK_CLASSES_MAX];
	int8_t by_tl[29];
	g_autofree uint8_t *out = NULL;
	size_t off = 0, o = 0, hsum = 0, hoff = 0, e = 0, x = 0, toff = 0;

	if (tlen < COL_FIXED)
		return bad(error, "column header cut");
	npages = ha_le32(t);
	nev = ha_le32(t + 4);
	nx = ha_le32(t + 8);
	ncls = ha_le32(t + 12);
	tail_len = ha_le32(t + 16);
	raw_len = ha_le32(t + 20);
	off = COL_FIXED;
	if (ncls > HA_CHUNK_CLASSES_MAX || raw_len > HA_CHUNK_RAW_MAX || nx > nev)
		return bad(error, "column header out of range");
	memset(by_tl, -1, sizeof(by_tl));
	if (!(cls_tab = take(t, tlen, &off, 8 * (uint64_t)ncls)) ||
	    !(meta = take(t, tlen, &off, 8 * (uint64_t)npages)))
		return bad(error, "column tables cut");
	for (uint32_t i = 0; i < npages; i++)
		hsum += MIN(ha_le32(meta + 8 * (size_t)i), 16);
	if (!(heads = take(t, tlen, &off, hsum)) ||
	    !(eplane = take(t, tlen, &off, 4 * (uint64_t)nev)) ||
	    !(xp = take(t, tlen, &off, 4 * (uint64_t)nx)))
		return bad(error, "column streams cut");
	for (uint32_t k = 0; k < ncls; k++) {
		lens[k] = ha_le32(cls_tab + 8 * (size_t)k);
		rows[k] = ha_le32(cls_tab + 8 * (size_t)k + 4);
		if (lens[k] < 4 || lens[k] % 4)
			return bad(error, "column class of a bad length");
		for (uint32_t j = 0; j < k; j++)
			if (lens[j] == lens[k])
				return bad(error, "column class twice");
		if (lens[k] <= 112)
			by_tl[lens[k] / 4] = (int8_t)k;
		if (!(planes[k] = take(t, tlen, &off, (uint64_t)lens[k] * rows[k])))
			return bad(error, "column class cut");
	}
	if (!(tp = take(t, tlen, &off, tail_len)) || off != tlen)
		return bad(error, "column streams do not add up");
	out = g_malloc(MAX(raw_len, 1));
	for (uint32_t i = 0; i < npages; i++) {
		uint32_t len = ha_le32(meta + 8 * (size_t)i), taken = ha_le32(meta + 8 * (size_t)i + 4);
		size_t pos = MIN(len, 16), start, t_left;

		if (len > raw_len - o || raw_len - o - len < 4 || (len < 16 && taken))
			return bad(error, "column page beyond the chunk");
		put32(out + o, len);
		o += 4;
		start = o;
		memcpy(out + o, heads + hoff, pos);
		hoff += pos;
		for (uint32_t j = 0; j < taken; j++) {
			uint8_t *w = out + start + pos;
			uint32_t tl, word1 = 0;
			int64_t body;
			int cls = -1;

			if (e == nev || len - pos < 4)
				return bad(error, "column events beyond their page");
			for (int b = 0; b < 4; b++)
				w[b] = eplane[(size_t)b * nev + e];
			e++;
			tl = w[0] & 31;
			if (tl == 30 || tl == 31 || tl == 0) {
				if (x == nx || len - pos < 8)
					return bad(error, "column extra word beyond its page");
				memcpy(w + 4, xp + 4 * x++, 4);
				word1 = ha_le32(w + 4);
			}
			if (tl == 30 || tl == 31) {
				pos += 8;
				continue;
			}
			body = col_body(tl, word1, len - pos);
			if (body < 0)
				return bad(error, "column event beyond its page");
			if (tl) {
				cls = by_tl[tl];
			} else {
				for (uint32_t k = 0; k < ncls; k++)
					if (lens[k] == (uint64_t)body)
						cls = (int)k;
			}
			if (cls < 0 || used[cls] == rows[cls])
				return bad(error, "column event of no class");
			{
				uint8_t *d = w + (tl ? 4 : 8);
				const uint8_t *s = planes[cls] + used[cls];

				for (uint32_t b = 0; b < lens[cls]; b++)
					d[b] = s[(size_t)b * rows[cls]];
			}
			used[cls]++;
			pos += (size_t)body + (tl ? 4 : 8);
		}
		t_left = len - pos;
		if (t_left > tail_len - toff)
			return bad(error, "column tail cut");
		memcpy(out + start + pos, tp + toff, t_left);
		toff += t_left;
		o = start + len;
	}
	if (o != raw_len || e != nev || x != nx || toff != tail_len || hoff != hsum)
		return bad(error, "column streams left over");
	for (uint32_t k = 0; k < ncls; k++)
		if (used[k] != rows[k])
			return bad(error, "column rows left over");
	return g_bytes_new_take(g_steal_pointer(&out), raw_len);
}

GBytes *ha_chunk_decompress(const void *data, size_t len, GError **error)
{
	g_autofree uint8_t *t = NULL;
	size_t n;

	if (len >= 4 && !memcmp(data, col_magic, 4)) {
		/* the transform is at most the packed pages + 4 bytes per page and the
		 * class table; a page is at least 4 bytes packed */
		t = zstd_inflate((const uint8_t *)data + 4, len - 4,
				 (size_t)HA_CHUNK_RAW_MAX * 2 + COL_FIXED +
				 8 * HA_CHUNK_CLASSES_MAX, &n, error);
		return t ? col_decode(t, n, error) : NULL;
	}
	t = zstd_inflate(data, len, HA_CHUNK_RAW_MAX, &n, error);
	return t ? g_bytes_new_take(g_steal_pointer(&t), n) : NULL;
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
