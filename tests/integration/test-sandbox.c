// SPDX-License-Identifier: MIT
/* Unit tests: the sandboxed child (sandbox.h) and libtraceevent's crashes kept in it. */
#include <gio/gio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guest-formats.h"
#include "sandbox.h"
#include "tap.h"
#include "tep.h"

#define PS 4096u

static int ret_seven(void *arg)
{
	(void)arg;
	return 7;
}

static int do_write(void *arg)
{
	(void)arg;
	return write(2, "x\n", 2) == 2 ? 0 : 1;
}

static int do_spin(void *arg)
{
	volatile uint64_t *n = arg;

	for (;;)
		(*n)++;
	return 0;
}

static int poke_shared(void *arg)
{
	volatile int *p = arg;

	*p = 2;
	return 0;
}

static int grow(void *arg)
{
	size_t total = 0;

	(void)arg;
	/* brk and mmap'd memory: what a parser allocates */
	for (int i = 0; i < 64; i++) {
		char *b = g_malloc(i & 1 ? 64 : 1u << 20);

		memset(b, i, i & 1 ? 64 : 1u << 20);
		total += (size_t)b[0];
	}
	return total ? 0 : 1;
}

static void test_sandbox(void)
{
	GError *e = NULL;
	int code = -1;
	uint64_t spins = 0;
	int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			   -1, 0);

	CHECK(ha_sandbox_run(ret_seven, NULL, &code, &e) && code == 7,
	      "a child's return value is its exit status: %d", code);
	g_clear_error(&e);
	CHECK(ha_sandbox_run(grow, NULL, &code, &e) && code == 0,
	      "a child may allocate (brk, mmap): %s", e ? e->message : "ok");
	g_clear_error(&e);
	CHECK(!ha_sandbox_run(do_write, NULL, &code, &e) &&
	      g_error_matches(e, G_IO_ERROR, G_IO_ERROR_INVALID_DATA) &&
	      strstr(e->message, "forbidden system call"),
	      "a child writing to a file descriptor is killed: %s", e ? e->message : "ran");
	g_clear_error(&e);
	CHECK(shared != MAP_FAILED, "a shared mapping");
	*shared = 1;
	CHECK(!ha_sandbox_run(poke_shared, shared, &code, &e) && *shared == 1 &&
	      g_error_matches(e, G_IO_ERROR, G_IO_ERROR_INVALID_DATA),
	      "a child cannot write the parent's shared memory (%d): %s", *shared,
	      e ? e->message : "ran");
	g_clear_error(&e);
	munmap(shared, 4096);
	CHECK(!ha_sandbox_run(do_spin, &spins, &code, &e) && spins == 0 &&
	      strstr(e->message, "CPU time"),
	      "an endless child is killed after %u s of CPU time: %s", HA_SANDBOX_CPU_SECONDS,
	      e ? e->message : "ran");
	g_clear_error(&e);
}

/*
 * fuzz-format's first find: a print fmt argument indexed twice (REC->caller[1][2])
 * makes libtraceevent 1.7's tep_parse_format() dereference NULL. Every check of tep.c
 * passes it: before the sandbox it killed the daemon on one FORMAT frame.
 */
static const char crash_text[] =
	"name: ev\nID: 900\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n\n"
	"print fmt: \"%lx %lx\", REC->caller[0], REC->caller[1][2]\n";

static HaTep *new_tep(void)
{
	HaTep *t = ha_tep_new(PS, false);

	ha_tep_add_format(t, "header_page", gf_formats[0].text, strlen(gf_formats[0].text),
			  NULL);
	return t;
}

static void test_crashing_format(void)
{
	g_autoptr(HaTep) t = new_tep();
	g_autoptr(HaTep) t2 = NULL;
	const struct gf_format *km = &gf_formats[gf_nr_formats - 1];
	GError *e = NULL;
	unsigned int runs;
	bool ok;

	ok = ha_tep_add_format(t, "sys/ev", crash_text, strlen(crash_text), &e);
	CHECK(!ok && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_INVALID_DATA) &&
	      strstr(e->message, "parser died on it") && strstr(e->message, "signal 11"),
	      "a format that crashes libtraceevent is refused: %s", e ? e->message : "accepted");
	g_clear_error(&e);
	CHECK(ha_tep_knows(t, "sys/ev") && !ha_tep_accepted(t, "sys/ev"),
	      "its name is taken, not accepted (stored as refused, never parsed again)");
	CHECK(ha_tep_add_format(t, km->name, km->text, strlen(km->text), &e),
	      "the same parser takes the next format: %s", e ? e->message : "ok");
	g_clear_error(&e);
	CHECK(ha_tep_event_name(t, GF_ID_KMALLOC) &&
	      !strcmp(ha_tep_event_name(t, GF_ID_KMALLOC), km->name),
	      "and knows its event id");

	{
		/* its events are named as of a refused format, not as of an unknown type */
		uint8_t d[80] = { 0x84, 0x03 };	/* common_type 900 */
		HaEvent ev = { .type = 900, .data = d, .size = sizeof(d) };
		g_autofree char *txt = ha_tep_format_event(t, &ev);
		g_autoptr(HaTep) t3 = new_tep();
		g_autofree char *txt3 = NULL;

		CHECK(!strcmp(txt, "sys/ev: <event type 900 of a format the host refused:"
			      " fields not decoded>"), "an event of its id: %s", txt);
		/* a report's parser, from the text stored as refused: the same, no child */
		runs = ha_sandbox_runs();
		ha_tep_add_refused_text(t3, "sys/ev", crash_text, strlen(crash_text));
		txt3 = ha_tep_format_event(t3, &ev);
		CHECK(!strcmp(txt, txt3) && ha_sandbox_runs() == runs && ha_tep_knows(t3, "sys/ev"),
		      "from the stored refused text: %s", txt3);
		ev.type = 901;
		g_free(txt3);
		txt3 = ha_tep_format_event(t3, &ev);
		CHECK(!strcmp(txt3, "<unknown event type 901>"), "another id: %s", txt3);
	}
	{
		/* a refused text's ID line is a guest's: only a whole u16 names events */
		static const char *const bad[] = {
			"name: a\nID: 65536\n", "name: b\nID: 9x1\n", "name: c\nID: \n",
			"name: d\nID: 00000000000000000902\n", "name: e\nformat:\n",
		};
		g_autoptr(HaTep) t4 = new_tep();
		uint8_t d[8] = { 0 };
		HaEvent ev = { .data = d, .size = sizeof(d) };
		bool none = true;

		for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++)
			ha_tep_add_refused_text(t4, "sys/bad", bad[i], strlen(bad[i]));
		/* and a text cut right after its ID's digits (no newline) still counts */
		ha_tep_add_refused_text(t4, "sys/cut", "name: f\nID: 903", 15);
		for (int id = 0; id < 1000 && none; id++) {
			g_autofree char *x = NULL;

			ev.type = id;
			x = ha_tep_format_event(t4, &ev);
			none = id == 903 ? strstr(x, "sys/cut:") == x : !strncmp(x, "<unknown", 8);
		}
		CHECK(none, "malformed ID lines name no event, a cut one does");
	}
	/* the verdict is cached: another parser (another boot) pays no child for it */
	t2 = new_tep();
	runs = ha_sandbox_runs();
	ok = ha_tep_add_format(t2, "sys/ev", crash_text, strlen(crash_text), &e);
	CHECK(!ok && e && strstr(e->message, "the same text earlier") &&
	      ha_sandbox_runs() == runs,
	      "the same text again: refused from the cache, %u children run: %s",
	      ha_sandbox_runs() - runs, e ? e->message : "accepted");
	g_clear_error(&e);
	runs = ha_sandbox_runs();
	CHECK(ha_tep_add_format(t2, km->name, km->text, strlen(km->text), &e) &&
	      ha_sandbox_runs() == runs, "an accepted text again: accepted from the cache");
	g_clear_error(&e);
}

/* A guest that sends crashing texts one after another: at most HA_TEP_KILLED_MAX
 * children die per parser, then its new texts are refused unparsed. */
static void test_killed_max(void)
{
	g_autoptr(HaTep) t = new_tep();
	unsigned int runs = ha_sandbox_runs(), refused = 0;

	for (unsigned int i = 0; i < HA_TEP_KILLED_MAX + 8; i++) {
		g_autofree char *name = g_strdup_printf("sys/ev%u", i);
		g_autofree char *text = g_strdup_printf("name: ev%u\n%s", i,
							strchr(crash_text, '\n') + 1);
		GError *e = NULL;

		if (!ha_tep_add_format(t, name, text, strlen(text), &e))
			refused++;
		g_clear_error(&e);
	}
	CHECK(refused == HA_TEP_KILLED_MAX + 8 && ha_sandbox_runs() - runs == HA_TEP_KILLED_MAX,
	      "%u crashing texts: %u refused, %u children run (at most %u)",
	      HA_TEP_KILLED_MAX + 8, refused, ha_sandbox_runs() - runs, HA_TEP_KILLED_MAX);
}

/* A figure, not an assertion: what one child costs this process. */
static void figure(void)
{
	gint64 t0 = g_get_monotonic_time();
	int code;

	for (int i = 0; i < 100; i++)
		ha_sandbox_run(ret_seven, NULL, &code, NULL);
	printf("# 100 sandboxed children in %.1f ms\n",
	       (double)(g_get_monotonic_time() - t0) / 1000.0);
}

int main(void)
{
	test_sandbox();
	figure();
	test_crashing_format();
	test_killed_max();
	return tap_done();
}
