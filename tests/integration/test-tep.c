// SPDX-License-Identifier: MIT
/* Unit tests: libtraceevent glue on 6.1-layout pages, hostile pages, pairing rule. */
#include <gio/gio.h>
#include <string.h>

#include "guest-formats.h"
#include "pair.h"
#include "ringpage.h"
#include "tap.h"
#include "tep.h"

#define PS 4096u

static HaTep *make_tep(void)
{
	HaTep *t = ha_tep_new(PS, false);

	for (unsigned int i = 0; i < gf_nr_formats; i++) {
		GError *e = NULL;
		bool ok = ha_tep_add_format(t, gf_formats[i].name, gf_formats[i].text,
					    strlen(gf_formats[i].text), &e);

		CHECK(ok, "format %s parses%s%s", gf_formats[i].name, e ? ": " : "",
		      e ? e->message : "");
		g_clear_error(&e);
	}
	return t;
}

static void common(uint8_t *d, uint16_t type, uint8_t flags, uint8_t preempt, int pid)
{
	memcpy(d, &type, 2);
	d[2] = flags;
	d[3] = preempt;
	memcpy(d + 4, &pid, 4);
}

typedef struct {
	HaEvent ev[16];
	uint64_t ips0[HA_KSTACK_MAX];
	int n;
} Seen;

static void collect(const HaEvent *ev, void *user)
{
	Seen *s = user;

	if (s->n < 16) {
		s->ev[s->n] = *ev;
		if (ev->kind == HA_EV_KSTACK)
			memcpy(s->ips0, ev->ips, ev->nr_ips * 8);
		s->n++;
	}
}

static void test_page(HaTep *t)
{
	uint8_t buf[PS], km[52] = { 0 }, sid[12], ks[16 + 70 * 8] = { 0 };
	struct ringpage p;
	Seen s = { 0 };
	GError *e = NULL;
	uint32_t id = (5u << 20) | 77u, len;
	int32_t depth = 70;
	long n;

	common(km, GF_ID_KMALLOC, 0, 0, 42);
	common(sid, GF_ID_STACK_ID, 0, 0, 42);
	memcpy(sid + 8, &id, 4);
	common(ks, GF_ID_KERNEL_STACK, 0, 0, 42);
	memcpy(ks + 8, &depth, 4);
	for (int i = 0; i < 70; i++) {
		uint64_t ip = 0xffffffff81000000ull + (uint64_t)i;

		memcpy(ks + 16 + 8 * i, &ip, 8);
	}
	ringpage_init(&p, buf, PS);
	ringpage_reset(&p, 1000);
	ringpage_add(&p, 1000, km, sizeof(km));
	ringpage_add(&p, 1030, sid, sizeof(sid));
	ringpage_add(&p, 1000 + (1ull << 30), km, sizeof(km));	/* needs a TIME_EXTEND */
	ringpage_add(&p, 1010 + (1ull << 30), ks, sizeof(ks));	/* type_len 0 */
	len = ringpage_finish(&p);
	n = ha_tep_walk_page(t, buf, len, collect, &s, &e);
	CHECK(n == 4 && s.n == 4, "four events walked (%ld)%s", n, e ? e->message : "");
	CHECK(s.ev[0].kind == HA_EV_OTHER && s.ev[0].ts == 1000 && s.ev[0].pid == 42,
	      "kmalloc at ts 1000, pid 42");
	CHECK(s.ev[1].kind == HA_EV_STACK_ID && s.ev[1].stack_id == id && s.ev[1].ts == 1030,
	      "stack_id 0x%x at 1030", s.ev[1].stack_id);
	CHECK(s.ev[2].ts == 1000 + (1ull << 30), "time extend applied (%llu)",
	      (unsigned long long)s.ev[2].ts);
	CHECK(s.ev[3].kind == HA_EV_KSTACK && s.ev[3].nr_ips == 70 &&
	      s.ips0[69] == 0xffffffff81000000ull + 69, "kernel_stack of 70 frames");
	{
		char *txt = ha_tep_format_event(t, &s.ev[0]);

		CHECK(txt && strstr(txt, "kmem/kmalloc") && strstr(txt, "bytes_req="),
		      "formatted: %s", txt);
		g_free(txt);
	}
	CHECK(strcmp(ha_tep_event_name(t, GF_ID_STACK_ID), "ftrace/stack_id") == 0,
	      "event name by id");
	g_clear_error(&e);
}

/* Each event of a walk, to compare the own walk with kbuffer's. */
typedef struct {
	GArray *a;		/* HaEvent, ips not kept */
} Walk;

static void keep(const HaEvent *ev, void *user)
{
	HaEvent c = *ev;

	c.ips = NULL;
	g_array_append_val(((Walk *)user)->a, c);
}

static bool same_walk(HaTep *t, const uint8_t *page, size_t len)
{
	Walk w0 = { g_array_new(FALSE, TRUE, sizeof(HaEvent)) };
	Walk w1 = { g_array_new(FALSE, TRUE, sizeof(HaEvent)) };
	long n0 = ha_tep_walk_page(t, page, len, keep, &w0, NULL), m0 = ha_tep_missed(t);
	long n1 = ha_tep_walk_page_kbuffer(t, page, len, keep, &w1, NULL);
	bool ok = n0 == n1 && w0.a->len == w1.a->len && (n0 < 0 || m0 == ha_tep_missed(t));

	for (guint i = 0; ok && i < w0.a->len; i++) {
		const HaEvent *a = &g_array_index(w0.a, HaEvent, i);
		const HaEvent *b = &g_array_index(w1.a, HaEvent, i);

		ok = a->ts == b->ts && a->data == b->data && a->size == b->size &&
		     a->kind == b->kind && a->type == b->type && a->pid == b->pid &&
		     a->nr_ips == b->nr_ips &&
		     (a->kind != HA_EV_STACK_ID || a->stack_id == b->stack_id);
	}
	g_array_unref(w0.a);
	g_array_unref(w1.a);
	return ok;
}

/* The walk by the bounds check's event list gives kbuffer's events: pages of random
 * events (type_len 0 and time extends among them), cut at every length, and with
 * random bytes in their event headers. */
static void test_walks_agree(HaTep *t)
{
	g_autoptr(GRand) r = g_rand_new_with_seed(7);
	uint8_t buf[PS], data[600];
	unsigned pages = 0, bad = 0, cuts = 0;

	for (int round = 0; round < 200; round++) {
		struct ringpage p;
		uint64_t ts = 1000;
		uint32_t len;

		ringpage_init(&p, buf, PS);
		ringpage_reset(&p, ts);
		for (;;) {
			uint32_t dl = 8 + 4 * (uint32_t)g_rand_int_range(r, 0, 140);
			uint16_t types[] = { GF_ID_KMALLOC, GF_ID_STACK_ID, GF_ID_KERNEL_STACK, 9 };

			for (uint32_t i = 0; i < dl; i++)
				data[i] = (uint8_t)g_rand_int(r);
			common(data, types[g_rand_int_range(r, 0, 4)], 0, 0, 42);
			ts += g_rand_int_range(r, 0, 8) ? 100 : (1ull << 28);
			if (!ringpage_add(&p, ts, data, dl))
				break;
		}
		len = ringpage_finish(&p);
		pages++;
		bad += !same_walk(t, buf, len);
		for (uint32_t cut = 0; cut < len; cut += 1 + (uint32_t)g_rand_int_range(r, 0, 200), cuts++)
			bad += !same_walk(t, buf, cut);
		for (int i = 0; i < 20; i++) {
			uint32_t at = 16 + (uint32_t)g_rand_int_range(r, 0, (gint32)len - 16);

			buf[at] = (uint8_t)g_rand_int(r);
			bad += !same_walk(t, buf, len);
		}
	}
	CHECK(!bad, "the own walk and kbuffer's agree (%u pages, %u cuts, altered; %u differ)",
	      pages, cuts, bad);
}

static void test_hostile_pages(HaTep *t)
{
	uint8_t buf[64] = { 0 };
	uint64_t commit;
	uint32_t w;
	GError *e = NULL;

	commit = 4000;	/* more than was sent */
	memcpy(buf + 8, &commit, 8);
	CHECK(ha_tep_walk_page(t, buf, 64, NULL, NULL, &e) < 0, "commit above data: %s",
	      e ? e->message : "accepted");
	g_clear_error(&e);

	commit = 16;	/* type_len 0 with a length word of 0: kbuffer would loop */
	memcpy(buf + 8, &commit, 8);
	w = 0;
	memcpy(buf + 16, &w, 4);
	memcpy(buf + 20, &w, 4);
	CHECK(ha_tep_walk_page(t, buf, 64, NULL, NULL, &e) < 0, "zero-length event: %s",
	      e ? e->message : "accepted");
	g_clear_error(&e);

	commit = 16;	/* a data event longer than the commit */
	memcpy(buf + 8, &commit, 8);
	w = 28;
	memcpy(buf + 16, &w, 4);
	CHECK(ha_tep_walk_page(t, buf, 64, NULL, NULL, &e) < 0, "event past commit: %s",
	      e ? e->message : "accepted");
	g_clear_error(&e);

	/*
	 * A tail pad of 6.1's rb_event_set_padding() keeps a stale length word, here one
	 * that kbuffer would add as a negative int and loop on: the page simply ends
	 * (returning at all is the check that kbuffer's walk does not loop).
	 */
	commit = 8;
	memcpy(buf + 8, &commit, 8);
	w = 29;
	memcpy(buf + 16, &w, 4);
	w = 0xffffffecu;
	memcpy(buf + 20, &w, 4);
	CHECK(ha_tep_walk_page(t, buf, 64, NULL, NULL, &e) == 0,
	      "stale padding length from 2^31 on ends the page: %s", e ? e->message : "ok");
	g_clear_error(&e);

	commit = 8;	/* padding with a huge length: the walk just ends */
	memcpy(buf + 8, &commit, 8);
	w = 29;
	memcpy(buf + 16, &w, 4);
	w = 0x7ffffff0u;
	memcpy(buf + 20, &w, 4);
	CHECK(ha_tep_walk_page(t, buf, 64, NULL, NULL, &e) == 0, "huge padding ends the page");
	g_clear_error(&e);

	{
		/* Found by fuzz-page: a padding header in the last 4 committed bytes has
		 * its length word past them; in an exact-size buffer (ASan build) that
		 * read must not happen. */
		uint8_t *exact = g_malloc(20);
		uint64_t c4 = 4;
		uint32_t pad = 29;

		memset(exact, 0, 20);
		memcpy(exact + 8, &c4, 8);
		memcpy(exact + 16, &pad, 4);
		CHECK(ha_tep_walk_page(t, exact, 20, NULL, NULL, &e) >= 0 || e,
		      "padding header at the end of the commit read inside bounds");
		g_clear_error(&e);
		g_free(exact);
	}

	CHECK(ha_tep_walk_page(t, buf, 8, NULL, NULL, &e) < 0, "page shorter than its header");
	g_clear_error(&e);
	CHECK(ha_tep_walk_page(t, buf, PS + 1, NULL, NULL, &e) < 0, "page above page size");
	g_clear_error(&e);
}

typedef struct {
	HaPaired got[8];
	char *texts[8];
	int n;
} Paired;

static void on_pair(const HaPaired *p, void *user)
{
	Paired *x = user;

	x->got[x->n] = *p;
	x->texts[x->n] = g_strdup(p->text);
	x->n++;
}

static HaEvent ev(HaEvKind k, uint64_t ts, uint8_t flags, uint32_t id)
{
	return (HaEvent){ .kind = k, .ts = ts, .pid = 1, .flags = flags, .stack_id = id };
}

static void test_pairing(void)
{
	Paired x = { 0 };
	HaPair *p = ha_pair_new(on_pair, &x);
	HaEvent a = ev(HA_EV_OTHER, 1, 0, 0), b = ev(HA_EV_OTHER, 2, 8, 0);
	HaEvent sb = ev(HA_EV_STACK_ID, 3, 8, 22), sa = ev(HA_EV_STACK_ID, 4, 0, 11);
	GBytes *saved;
	HaPair *q;

	/* A, irq{B, stack B}, stack A */
	ha_pair_feed(p, 0, &a, g_strdup("A"));
	ha_pair_feed(p, 0, &b, g_strdup("B"));
	ha_pair_feed(p, 0, &sb, NULL);
	ha_pair_feed(p, 0, &sa, NULL);
	CHECK(x.n == 2 && !strcmp(x.texts[0], "B") && x.got[0].stack_id == 22 &&
	      !strcmp(x.texts[1], "A") && x.got[1].stack_id == 11, "nested irq event and stack");
	/* A, irq{C without stack}, stack A */
	for (int i = 0; i < x.n; i++)
		g_clear_pointer(&x.texts[i], g_free);
	x.n = 0;
	ha_pair_feed(p, 1, &a, g_strdup("A"));
	ha_pair_feed(p, 1, &b, g_strdup("C"));
	ha_pair_feed(p, 1, &sa, NULL);
	CHECK(x.n == 2 && !strcmp(x.texts[0], "C") && x.got[0].stack == HA_STACK_NONE &&
	      !strcmp(x.texts[1], "A") && x.got[1].stack_id == 11, "stackless nested event");
	/* a stack with no event */
	ha_pair_feed(p, 1, &sa, NULL);
	CHECK(ha_pair_orphans(p) == 1, "orphan stack counted");
	/* state survives a restart: event on one page, its stack after the restart */
	for (int i = 0; i < x.n; i++)
		g_clear_pointer(&x.texts[i], g_free);
	x.n = 0;
	ha_pair_feed(p, 2, &a, NULL);
	saved = ha_pair_save(p);
	q = ha_pair_new(on_pair, &x);
	CHECK(ha_pair_load(q, g_bytes_get_data(saved, NULL), g_bytes_get_size(saved)),
	      "pairing state reloads");
	ha_pair_feed(q, 2, &sa, NULL);
	CHECK(x.n == 1 && x.got[0].stack_id == 11 && x.got[0].ts == 1, "paired across restart");
	CHECK(!ha_pair_load(q, "\x01\x00\x00\x00\xff\x00\x00\x00", 8), "bad blob refused");
	/* A, then events lost (its stack and a later event of the same task), then the
	 * later event's stack: it must not be given to A */
	for (int i = 0; i < x.n; i++)
		g_clear_pointer(&x.texts[i], g_free);
	x.n = 0;
	ha_pair_feed(q, 3, &a, g_strdup("A"));
	ha_pair_lost(q, 3);
	CHECK(x.n == 1 && x.got[0].stack == HA_STACK_LOST && !strcmp(x.texts[0], "A"),
	      "a loss finishes the waiting event as stack lost");
	ha_pair_feed(q, 3, &sa, NULL);
	CHECK(x.n == 1 && ha_pair_orphans(q) == 1, "the stack after the loss is an orphan");
	ha_pair_feed(q, 4, &a, g_strdup("A4"));
	ha_pair_feed(q, 5, &a, g_strdup("A5"));
	ha_pair_lost_all(q);
	CHECK(x.n == 3 && x.got[1].stack == HA_STACK_LOST && x.got[2].stack == HA_STACK_LOST,
	      "lost frames finish every CPU's waiting events");
	g_bytes_unref(saved);
	ha_pair_free(q);
	ha_pair_free(p);
	for (int i = 0; i < 8; i++)
		g_free(x.texts[i]);
}

/*
 * issue 21: libtraceevent 1.7 accepts a format text cut inside a field declaration
 * (and leaks its last token, once per new event name). Every cut of every format text,
 * at every byte (so at every token), with and without a newline put back, is refused
 * or else accepted whole; under ASan's leak check (host-tep-asan) nothing leaks.
 */
static void test_cut_formats(void)
{
	unsigned int refused = 0, whole_ok = 0, bad = 0, tried = 0;

	for (unsigned int i = 0; i < gf_nr_formats; i++) {
		const char *text = gf_formats[i].text, *name = gf_formats[i].name;
		size_t len = strlen(text);

		if (!strcmp(name, "header_event"))
			continue;	/* ignored by the parser: 6.1 has one layout */
		for (size_t k = 1; k <= len; k++) {
			for (int nl = 0; nl < 2; nl++) {
				g_autoptr(HaTep) t = ha_tep_new(PS, false);
				g_autofree char *cut = g_strndup(text, k);
				g_autofree char *withnl = g_strconcat(cut, "\n", NULL);
				const char *x = nl ? withnl : cut;
				GError *e = NULL;
				bool ok;

				if (nl && text[k - 1] == '\n')
					continue;
				if (strcmp(name, "header_page"))
					ha_tep_add_format(t, "header_page", gf_formats[0].text,
							  strlen(gf_formats[0].text), NULL);
				tried++;
				ok = ha_tep_add_format(t, name, x, strlen(x), &e);
				g_clear_error(&e);
				if (!ok)
					refused++;
				else if (k == len || !strcmp(x, text))
					whole_ok++;
				else if (nl && k >= (size_t)(strstr(text, "print fmt: ") - text) + 12)
					whole_ok++;	/* cut inside print fmt, newline back: whole lines */
				else {
					bad++;
					printf("# %s cut at %zu%s accepted\n", name, k, nl ? "+nl" : "");
				}
			}
		}
	}
	CHECK(bad == 0 && whole_ok >= 4 && refused > 1000,
	      "%u cut format texts: %u refused, %u whole ones accepted, %u accepted cut",
	      tried, refused, whole_ok, bad);

	{
		g_autoptr(HaTep) t = ha_tep_new(PS, false);
		const char *km = gf_formats[gf_nr_formats - 1].text;
		GError *e = NULL;

		CHECK(!ha_tep_add_format(t, "kmem/kmalloc2", km, strlen(km), &e) && e &&
		      strstr(e->message, "name is not"),
		      "a text naming another event refused: %s", e ? e->message : "accepted");
		g_clear_error(&e);
	}
}

/* The parser's budget (tep.h) holds whatever a guest sends: many formats, big ones. */
static void test_format_budget(void)
{
	g_autoptr(HaTep) t = ha_tep_new(PS, false);
	g_autoptr(GString) big = g_string_new("name: big\nID: 900\nformat:\n");
	unsigned int accepted = 0, refused = 0;
	GError *e = NULL;

	for (int f = 0; g_string_append_printf(big, "\tfield:int f%d;\toffset:%d;\tsize:4;"
					       "\tsigned:1;\n", f, 8 + 4 * f),
	     big->len <= HA_TEP_TEXT_MAX; f++)
		;
	g_string_append(big, "\nprint fmt: \"x\"\n");
	CHECK(!ha_tep_add_format(t, "sys/big", big->str, big->len, &e) && e &&
	      strstr(e->message, "above the limit"), "a text above %u bytes refused: %s",
	      HA_TEP_TEXT_MAX, e ? e->message : "accepted");
	g_clear_error(&e);
	for (unsigned int i = 0; i < 300; i++) {
		g_autofree char *name = g_strdup_printf("sys/e%u", i);
		g_autoptr(GString) txt = g_string_new(NULL);

		g_string_append_printf(txt, "name: e%u\nID: %u\nformat:\n", i, 1000 + i);
		for (int f = 0; txt->len < HA_TEP_TEXT_MAX - 200; f++)
			g_string_append_printf(txt, "\tfield:int f%d;\toffset:%d;\tsize:4;"
					       "\tsigned:1;\n", f, 8 + 4 * f);
		g_string_append(txt, "\nprint fmt: \"x\"\n");
		if (ha_tep_add_format(t, name, txt->str, txt->len, &e))
			accepted++;
		else if (e && e->code == G_IO_ERROR_NO_SPACE)
			refused++;
		g_clear_error(&e);
	}
	CHECK(accepted > 0 && refused > 0 && ha_tep_parsed_bytes(t) <= HA_TEP_BYTES_MAX,
	      "300 formats of ~64 KiB: %u accepted (%zu bytes), %u over the budget",
	      accepted, ha_tep_parsed_bytes(t), refused);
}

int main(void)
{
	HaTep *t = make_tep();

	CHECK(ha_tep_ready(t), "parser ready");
	test_page(t);
	test_hostile_pages(t);
	test_walks_agree(t);
	test_pairing();
	test_cut_formats();
	test_format_budget();
	ha_tep_free(t);
	return tap_done();
}
