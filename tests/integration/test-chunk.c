// SPDX-License-Identifier: MIT
/*
 * Unit tests of chunk.c's formats: ring-buffer pages (ringpage.c: events of several
 * sizes, type_len 0 events, time extends, padding, more body lengths than a chunk
 * has classes), cut and odd pages and random bytes go through the column format and
 * come back byte for byte, and three sets of them transform to the very bytes the format
 * has always had (their SHA-256); a chunk of the format before it still inflates; a
 * column chunk whose transform is cut or altered is refused or inflates within its
 * bounds (the -asan build checks every read).
 */
#include <gio/gio.h>
#include <string.h>
#include <zstd.h>

#include "chunk.h"
#include "ringpage.h"
#include "tap.h"

/* Pages into one buffer; their spans. */
typedef struct {
	GByteArray *buf;
	GArray *spans;		/* HaChunkSpan */
} Pages;

static void pages_add(Pages *p, const uint8_t *data, uint32_t len)
{
	HaChunkSpan sp = { p->buf->len, len };

	g_byte_array_append(p->buf, data, len);
	g_array_append_val(p->spans, sp);
}

/* @n pages of events like a guest's: kmalloc-sized, stack_id-sized, big (type_len 0)
 * ones of random length, and time gaps that need a TIME_EXTEND. */
static void ring_pages(Pages *p, GRand *r, int n, int max_len)
{
	uint8_t page[4096], data[4096];
	struct ringpage rp;
	uint64_t ts = 1000;

	ringpage_init(&rp, page, sizeof(page));
	ringpage_reset(&rp, ts);
	for (int done = 0; done < n;) {
		uint32_t kind = g_rand_int_range(r, 0, 16), len;

		len = kind < 8 ? 52 : kind < 14 ? 16 : (uint32_t)g_rand_int_range(r, 4, max_len);
		for (uint32_t i = 0; i < len; i++)
			data[i] = kind < 8 && i < 16 ? (uint8_t)(i * 3) : (uint8_t)g_rand_int(r);
		ts += g_rand_int_range(r, 0, 16) == 0 ? (UINT64_C(1) << 28) : 300;
		if (!ringpage_add(&rp, ts, data, len)) {
			uint32_t sz = ringpage_finish(&rp);

			pages_add(p, page, sz);
			done++;
			ringpage_reset(&rp, ts);
			g_assert(ringpage_add(&rp, ts, data, len));
		}
	}
}

static bool round_trip(const Pages *p, const char *what)
{
	g_autoptr(HaChunkZ) z = ha_chunkz_new(2);
	g_autoptr(GByteArray) packed = g_byte_array_new();
	g_autoptr(GBytes) raw = NULL, raw2 = NULL, raw3 = NULL, c2 = NULL, c3 = NULL;
	g_autoptr(GError) e = NULL;
	const HaChunkSpan *sp = (const HaChunkSpan *)(void *)p->spans->data;
	size_t zlen = 0;
	const void *zd;
	bool ok;

	for (guint i = 0; i < p->spans->len; i++)
		ha_chunk_add_page(packed, p->buf->data + sp[i].off, sp[i].len);
	zd = ha_chunkz_compress(z, p->buf->data, sp, p->spans->len, &zlen, &e);
	raw = zd ? ha_chunk_decompress(zd, zlen, &e) : NULL;
	ok = raw && g_bytes_get_size(raw) == packed->len &&
	     (!packed->len || !memcmp(g_bytes_get_data(raw, NULL), packed->data, packed->len)) &&
	     !memcmp(zd, "SMC1", 4);
	CHECK(ok, "%s: %u pages, %u bytes packed, %zu stored, inflate to the same (%s)",
	      what, p->spans->len, packed->len, zlen, e ? e->message : "ok");
	/* the packed form (compaction's) and the format before the columns */
	c2 = ha_chunk_compress(packed, 1, &e);
	raw2 = c2 ? ha_chunk_decompress(g_bytes_get_data(c2, NULL), g_bytes_get_size(c2), &e)
		  : NULL;
	c3 = ha_chunk_compress_raw(packed, 1, &e);
	raw3 = c3 ? ha_chunk_decompress(g_bytes_get_data(c3, NULL), g_bytes_get_size(c3), &e)
		  : NULL;
	CHECK(raw2 && raw3 && g_bytes_equal(raw2, raw) && g_bytes_equal(raw3, raw),
	      "%s: ha_chunk_compress() and the raw format too (%s)", what,
	      e ? e->message : "ok");
	return ok;
}

static Pages pages_new(void)
{
	return (Pages){ g_byte_array_new(), g_array_new(FALSE, FALSE, sizeof(HaChunkSpan)) };
}

static void pages_free(Pages *p)
{
	g_byte_array_unref(p->buf);
	g_array_unref(p->spans);
}

/* "SMC1" and a zstd frame of @t: a column chunk of any transform. */
static GBytes *wrap(const uint8_t *t, size_t len)
{
	size_t cap = 4 + ZSTD_compressBound(len), n;
	uint8_t *out = g_malloc(cap);

	memcpy(out, "SMC1", 4);
	n = ZSTD_compress(out + 4, cap - 4, t, len, 1);
	g_assert(!ZSTD_isError(n));
	return g_bytes_new_take(out, 4 + n);
}

/* The transform of @p's chunk (what "SMC1"'s zstd frame holds). */
static GBytes *transform_of(const Pages *p)
{
	g_autoptr(HaChunkZ) z = ha_chunkz_new(1);
	size_t zlen;
	const uint8_t *zd = ha_chunkz_compress(z, p->buf->data,
					       (const HaChunkSpan *)(void *)p->spans->data,
					       p->spans->len, &zlen, NULL);
	unsigned long long sz = ZSTD_getFrameContentSize(zd + 4, zlen - 4);
	uint8_t *t = g_malloc(sz);

	g_assert(ZSTD_decompress(t, sz, zd + 4, zlen - 4) == sz);
	return g_bytes_new_take(t, sz);
}

/*
 * The transform's bytes of @p against their SHA-256 as the encoder wrote them when the
 * format was made: a faster encoder must write the same bytes (stored chunks decode
 * either way, but zstd's ratio and the readers of old stores are the format's).
 */
static void same_bytes(const Pages *p, const char *what, const char *sha256)
{
	g_autoptr(GBytes) t = transform_of(p);
	g_autofree char *sum = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, t);

	CHECK(!strcmp(sum, sha256), "%s: the transform's %zu bytes as ever (SHA-256 %s)",
	      what, g_bytes_get_size(t), sum);
}

int main(void)
{
	g_autoptr(GRand) r = g_rand_new_with_seed(14);
	Pages p = pages_new();

	ring_pages(&p, r, 64, 300);
	round_trip(&p, "ring pages");
	same_bytes(&p, "ring pages",
		   "ad35749de8abfae5e33b2f35438f58c741e5f5d47231f2ae8f98a10ec543fe9c");
	pages_free(&p);

	/* more body lengths than classes: the rest of a page stays as it is */
	p = pages_new();
	ring_pages(&p, r, 40, 2000);
	round_trip(&p, "ring pages, many body lengths");
	same_bytes(&p, "ring pages, many body lengths",
		   "611b3c8f7ee674b157509af0579b13e7fde49760ba3357272560b47f109ff65b");
	pages_free(&p);

	/* odd pages: empty, shorter than a header, header only, cut events, garbage,
	 * padding and an event that runs past its page */
	p = pages_new();
	{
		uint8_t page[4096], junk[4096];
		Pages q = pages_new();
		const uint8_t pad[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					29, 0, 0, 0, 8, 0, 0, 0, 1, 2, 3, 4 };
		const uint8_t past[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					 4, 0, 0, 0, 1, 2, 3, 4 };
		const uint8_t zero_len[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					     0, 0, 0, 0, 4, 0, 0, 0, 9, 9, 9, 9 };

		ring_pages(&q, r, 4, 200);
		for (guint i = 0; i < q.spans->len; i++) {
			HaChunkSpan s = g_array_index(q.spans, HaChunkSpan, i);

			memcpy(page, q.buf->data + s.off, s.len);
			for (uint32_t cut = 0; cut < s.len; cut += 1 + cut / 7)
				pages_add(&p, page, cut);
			pages_add(&p, page, s.len);
		}
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)g_rand_int(r);
		pages_add(&p, junk, sizeof(junk));
		pages_add(&p, pad, sizeof(pad));
		pages_add(&p, past, sizeof(past));
		pages_add(&p, zero_len, sizeof(zero_len));
		pages_add(&p, junk, 0);
		pages_free(&q);
	}
	round_trip(&p, "cut, odd and random pages");
	same_bytes(&p, "cut, odd and random pages",
		   "dd3856a7d4b82b0784ae03c939f6583ac7f9415faa0c89b0b15bad724efc9b60");

	/* the transform cut, or one byte of it changed: refused, or inflates to its
	 * raw length (the table's) without a read or write out of bounds */
	{
		g_autoptr(GBytes) t = transform_of(&p);
		const uint8_t *tb = g_bytes_get_data(t, NULL);
		size_t tlen = g_bytes_get_size(t);
		g_autofree uint8_t *m = g_memdup2(tb, tlen);
		unsigned refused = 0, tries = 0;

		for (size_t cut = 0; cut < tlen; cut += 1 + cut / 3) {
			g_autoptr(GBytes) c = wrap(tb, cut);

			refused += !ha_chunk_decompress(g_bytes_get_data(c, NULL),
							g_bytes_get_size(c), NULL);
			tries++;
		}
		CHECK(refused == tries, "a cut transform is refused (%u of %u)", refused, tries);
		refused = tries = 0;
		for (int i = 0; i < 3000; i++) {
			size_t at = i < 600 ? (size_t)i % MIN(tlen, 600)
					     : (size_t)g_rand_int_range(r, 0, (gint32)tlen);
			uint8_t old = m[at];
			g_autoptr(GBytes) c = NULL, out = NULL;

			m[at] = i & 1 ? (uint8_t)g_rand_int(r) : (uint8_t)(old ^ (1u << (i % 8)));
			c = wrap(m, tlen);
			out = ha_chunk_decompress(g_bytes_get_data(c, NULL), g_bytes_get_size(c),
						  NULL);
			refused += !out;
			tries++;
			m[at] = old;
		}
		CHECK(tries, "an altered transform: %u of %u refused, the rest in bounds",
		      refused, tries);
		{
			g_autoptr(GBytes) c = wrap(tb, tlen);
			g_autoptr(GBytes) out = ha_chunk_decompress(g_bytes_get_data(c, NULL),
								   g_bytes_get_size(c), NULL);

			CHECK(out != NULL, "the transform itself, wrapped again, inflates");
		}
	}
	pages_free(&p);

	{
		g_autoptr(GError) e = NULL;

		CHECK(!ha_chunk_decompress("SMC1", 4, &e), "an empty column chunk refused: %s",
		      e ? e->message : "?");
		g_clear_error(&e);
		CHECK(!ha_chunk_decompress("SMC1nonsense", 12, &e), "garbage refused: %s",
		      e ? e->message : "?");
	}
	/* no pages at all */
	p = pages_new();
	round_trip(&p, "no pages");
	pages_free(&p);
	return tap_done();
}
