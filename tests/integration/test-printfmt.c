// SPDX-License-Identifier: MIT
/*
 * Unit tests: event fields print as the guest kernel prints them (printfmt.h), through
 * libtraceevent, on linux-6.1 format texts (their print fmt lines as 6.1 writes them
 * into tracefs; fields trimmed to those printed).
 */
#include <string.h>
#include <traceevent/event-parse.h>

#include "printfmt.h"
#include "tap.h"
#include "tep.h"

#define COMMON								\
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"	\
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"	\
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

static const char timer_start[] =
	"name: timer_start\nID: 100\nformat:\n" COMMON
	"\tfield:void * timer;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long expires;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long now;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int flags;\toffset:40;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"timer=%p function=%ps expires=%lu [timeout=%ld] cpu=%u idx=%u flags=%s\","
	" REC->timer, REC->function, REC->expires, (long)REC->expires - REC->now,"
	" REC->flags & 0x0003FFFF, REC->flags >> 22, __print_flags(REC->flags & (0x00040000 |"
	" 0x00080000 | 0x00100000 | 0x00200000), \"|\", { 0x00040000, \"M\" }, { 0x00080000,"
	" \"D\" }, { 0x00100000, \"P\" }, { 0x00200000, \"I\" })\n";

static const char hrtimer_start[] =
	"name: hrtimer_start\nID: 101\nformat:\n" COMMON
	"\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;\n"
	"\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:enum hrtimer_mode mode;\toffset:40;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"hrtimer=%p function=%ps expires=%llu softexpires=%llu mode=%s\","
	" REC->hrtimer, REC->function, (unsigned long long) REC->expires, (unsigned long long)"
	" REC->softexpires, __print_symbolic(REC->mode, { HRTIMER_MODE_ABS, \"ABS\" },"
	" { HRTIMER_MODE_REL, \"REL\" }, { HRTIMER_MODE_ABS_PINNED, \"ABS|PINNED\" },"
	" { HRTIMER_MODE_REL_PINNED, \"REL|PINNED\" })\n";

static const char sched_switch[] =
	"name: sched_switch\nID: 102\nformat:\n" COMMON
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\n"
	"print fmt: \"prev_pid=%d prev_state=%s%s\", REC->prev_pid, (REC->prev_state &"
	" ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 |"
	" 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state &"
	" ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 |"
	" 0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002,"
	" \"D\" }, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" },"
	" { 0x00000020, \"Z\" }, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\","
	" REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 |"
	" 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" : \"\"\n";

static const char kmalloc_like[] =
	"name: kmalloc\nID: 103\nformat:\n" COMMON
	"\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long gfp_flags;\toffset:16;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"call_site=%pS gfp_flags=%s\", (void *)REC->call_site,"
	" (REC->gfp_flags) ? __print_flags(REC->gfp_flags, \"|\", {(unsigned long)(((("
	" gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u))), \"GFP_KERNEL\"},"
	" {(unsigned long)(( gfp_t)0x20000u), \"__GFP_HARDWALL\"}) : \"none\"\n";

static const char page_alloc[] =
	"name: mm_page_free\nID: 104\nformat:\n" COMMON
	"\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int order;\toffset:16;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"page=%p pfn=0x%lx order=%d\", (((struct page *)vmemmap_base) +"
	" (REC->pfn)), REC->pfn, REC->order\n";

static bool enums(const char *name, int64_t *v, void *user)
{
	static const char *const modes[] = { "HRTIMER_MODE_ABS", "HRTIMER_MODE_REL",
					     "HRTIMER_MODE_ABS_PINNED",
					     "HRTIMER_MODE_REL_PINNED" };

	(*(int *)user)++;
	for (int64_t i = 0; i < 4; i++)
		if (!strcmp(name, modes[i])) {
			*v = i;
			return true;
		}
	return false;
}

static char *symbolize(uint64_t ip, char conv, void *user)
{
	(void)user;
	if (ip < 0xffffffff81000100ull || ip >= 0xffffffff81000140ull)
		return NULL;
	if (conv == 's')
		return g_strdup("tick_sched_timer [mymod]");
	return g_strdup_printf("tick_sched_timer+0x%llx/0x40 [mymod]",
			       (unsigned long long)(ip - 0xffffffff81000100ull));
}

static char *print(HaTep *t, uint16_t type, uint8_t *d, uint32_t size)
{
	HaEvent ev = { .type = type, .data = d, .size = size };
	char *s;

	memcpy(d, &type, 2);
	s = ha_tep_format_event(t, &ev);
	return s;
}

static void put64(uint8_t *d, uint64_t v)
{
	memcpy(d, &v, 8);
}

static void put32(uint8_t *d, uint32_t v)
{
	memcpy(d, &v, 4);
}

static HaTep *tep_with(bool with_enums, int *calls)
{
	HaTep *t = ha_tep_new(4096, false);
	const char *const texts[] = { timer_start, hrtimer_start, sched_switch, kmalloc_like,
				      page_alloc };
	const char *const names[] = { "timer/timer_start", "timer/hrtimer_start",
				      "sched/sched_switch", "kmem/kmalloc", "kmem/mm_page_free" };

	ha_tep_set_symbolizer(t, symbolize, NULL);
	if (with_enums)
		ha_tep_set_enum_resolver(t, enums, calls);
	for (int i = 0; i < 5; i++) {
		GError *e = NULL;

		CHECK(ha_tep_add_format(t, names[i], texts[i], strlen(texts[i]), &e),
		      "%s parses%s%s", names[i], e ? ": " : "", e ? e->message : "");
		g_clear_error(&e);
	}
	return t;
}

static void expect(HaTep *t, uint16_t type, uint8_t *d, uint32_t size, const char *want,
		   const char *what)
{
	g_autofree char *s = print(t, type, d, size);

	CHECK(!strcmp(s, want), "%s: '%s', want '%s'", what, s, want);
}

static void test_fields(void)
{
	int calls = 0;
	HaTep *t = tep_with(true, &calls);
	uint8_t d[48] = { 0 };

	/* timer_start: the flags mask is one constant; %p as %px; %ps from kallsyms */
	put64(d + 8, 0xffff888003c1e000ull);
	put64(d + 16, 0xffffffff81000100ull);
	put64(d + 24, 4294937296ull);
	put64(d + 32, 4294937290ull);
	put32(d + 40, 0x00280001);
	expect(t, 100, d, 48, "timer/timer_start: timer=ffff888003c1e000 function=tick_sched_timer"
	       " [mymod] expires=4294937296 [timeout=6] cpu=1 idx=0 flags=D|I",
	       "timer_start D|I");
	put64(d + 8, 0);
	put64(d + 16, 0xffffffff81000100ull);
	put32(d + 40, 0x00400000);
	expect(t, 100, d, 48, "timer/timer_start: timer=0000000000000000 function=tick_sched_timer"
	       " [mymod] expires=4294937296 [timeout=6] cpu=0 idx=1 flags=",
	       "timer_start no flags, NULL timer");
	put64(d + 16, 0x1234);
	put32(d + 40, 0x00200000);
	expect(t, 100, d, 48, "timer/timer_start: timer=0000000000000000 function=0x1234"
	       " expires=4294937296 [timeout=6] cpu=0 idx=0 flags=I",
	       "timer_start I, unknown function");
	/* hrtimer_start: enum names from the resolver */
	memset(d, 0, sizeof(d));
	put64(d + 16, 0xffffffff81000100ull);
	put32(d + 40, 1);
	expect(t, 101, d, 48, "timer/hrtimer_start: hrtimer=0000000000000000"
	       " function=tick_sched_timer [mymod] expires=0 softexpires=0 mode=REL",
	       "hrtimer_start REL");
	put32(d + 40, 0);
	expect(t, 101, d, 48, "timer/hrtimer_start: hrtimer=0000000000000000"
	       " function=tick_sched_timer [mymod] expires=0 softexpires=0 mode=ABS",
	       "hrtimer_start ABS");
	CHECK(ha_tep_raw_fields(t) == 0 && calls > 0, "no raw field with the enums (%u)",
	      ha_tep_raw_fields(t));
	/* sched_switch prev_state */
	memset(d, 0, sizeof(d));
	put32(d + 24, 42);
	put64(d + 32, 1);
	expect(t, 102, d, 40, "sched/sched_switch: prev_pid=42 prev_state=S", "prev_state S");
	put64(d + 32, 0);
	expect(t, 102, d, 40, "sched/sched_switch: prev_pid=42 prev_state=R", "prev_state R");
	put64(d + 32, 0x100);
	expect(t, 102, d, 40, "sched/sched_switch: prev_pid=42 prev_state=R+", "prev_state R+");
	put64(d + 32, 0x82);
	expect(t, 102, d, 40, "sched/sched_switch: prev_pid=42 prev_state=D|I", "prev_state D|I");
	/* %pS: name+0xoff/0xsize [module]; gfp flags with casts folded */
	memset(d, 0, sizeof(d));
	put64(d + 8, 0xffffffff81000110ull);
	put64(d + 16, 0xcc0);
	expect(t, 103, d, 24, "kmem/kmalloc: call_site=tick_sched_timer+0x10/0x40 [mymod]"
	       " gfp_flags=GFP_KERNEL", "kmalloc %pS, GFP_KERNEL");
	put64(d + 16, 0xcc0 | 0x20000);
	expect(t, 103, d, 24, "kmem/kmalloc: call_site=tick_sched_timer+0x10/0x40 [mymod]"
	       " gfp_flags=GFP_KERNEL|__GFP_HARDWALL", "kmalloc GFP_KERNEL|__GFP_HARDWALL");
	/* a value computed from a guest variable cannot be printed */
	memset(d, 0, sizeof(d));
	put64(d + 8, 0x453b);
	put32(d + 16, 0);
	expect(t, 104, d, 24, "kmem/mm_page_free: page=(unknown) pfn=0x453b order=0",
	       "mm_page_free page from vmemmap_base");
	ha_tep_free(t);

	/* without a resolver the enum field says it is raw */
	t = tep_with(false, NULL);
	memset(d, 0, sizeof(d));
	put32(d + 40, 1);
	expect(t, 101, d, 48, "timer/hrtimer_start: hrtimer=0000000000000000 function=0x0"
	       " expires=0 softexpires=0 mode=0x1(raw)", "hrtimer_start raw");
	CHECK(ha_tep_raw_fields(t) == 1, "one raw field (%u)", ha_tep_raw_fields(t));
	ha_tep_free(t);
}

/* Texts that are not what 6.1 writes come back unchanged, or rewritten harmlessly. */
static void test_hostile(void)
{
	static const char *const texts[] = {
		"", "print fmt: ", "print fmt: \"", "print fmt: \"%", "print fmt: \"%p\"",
		"print fmt: \"%d\", __print_symbolic(", "print fmt: \"%s\", __print_flags(X",
		"print fmt: \"%s\", ((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))",
		"print fmt: \"%d\", (1 << 99)", "print fmt: \"%d\", (1 / 0)", "print fmt: \"%d\", (\"a\")",
		"name: x\nprint fmt: \"%pS %d\", REC->a\n",
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(texts); i++) {
		unsigned int raw = 7;
		g_autofree char *o = ha_printfmt_fix(texts[i], strlen(texts[i]), NULL, NULL, &raw);

		CHECK(o != NULL, "hostile %u: %s", i, o);
	}
	{
		const char t[] = "print fmt: \"name=%s\", __get_str(name)";
		g_autofree char *o = ha_printfmt_fix(t, strlen(t), NULL, NULL, NULL);

		CHECK(!strcmp(o, t), "__get_str's field is no unknown name: %s", o);
	}
	{
		const char t[] = "print fmt: \"%d\", (1 << 99)";
		g_autofree char *o = ha_printfmt_fix(t, strlen(t), NULL, NULL, NULL);

		CHECK(!strcmp(o, t), "shift past 63 left alone: %s", o);
	}
	{
		const char t[] = "print fmt: \"%d %d\", (-1), f(2)";
		g_autofree char *o = ha_printfmt_fix(t, strlen(t), NULL, NULL, NULL);

		CHECK(!strcmp(o, t), "negative constants and call arguments left alone: %s", o);
	}
}

/* What plain libtraceevent (trace-cmd reading an exported trace.dat) prints for a
 * print fmt made portable: event @type of @text, data @d. */
static char *print_portable(const char *text, const char *sys, bool with_enums,
			    uint8_t *d, uint32_t size)
{
	int calls = 0;
	g_autofree char *fixed = ha_printfmt_portable(text, strlen(text),
						      with_enums ? enums : NULL, &calls);
	struct tep_handle *tep = tep_alloc();
	struct tep_record rec = { .data = d, .size = (int)size };
	struct tep_event *ev = NULL;
	struct trace_seq s;
	char *out;

	CHECK(!strstr(fixed, "__ha_"), "portable %s: no host function: %s", sys, fixed);
	tep_set_long_size(tep, 8);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	CHECK(tep_parse_format(tep, &ev, fixed, strlen(fixed), sys) == 0 && ev,
	      "portable %s parses", sys);
	memcpy(d, &ev->id, 2);
	trace_seq_init(&s);
	tep_print_event(tep, &s, &rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&s);
	out = g_strdup(s.buffer);
	trace_seq_destroy(&s);
	tep_free(tep);
	return out;
}

static void test_portable(void)
{
	uint8_t d[48] = { 0 };
	char *o;
	const char *fmt_ts = strstr(timer_start, "print fmt: \"");
	g_autofree char *ts = ha_printfmt_portable(timer_start, strlen(timer_start), NULL,
						   NULL);
	g_autofree char *want_fmt = g_strndup(fmt_ts, (gsize)(strchr(fmt_ts + 12, '"') - fmt_ts));

	/* the format string as the kernel wrote it (%p, %ps: libtraceevent's own) */
	CHECK(strstr(ts, want_fmt) != NULL, "portable: format string kept: %s", ts);
	put64(d + 8, 0xffff888003c1e000ull);
	put64(d + 24, 4294937296ull);
	put64(d + 32, 4294937290ull);
	put32(d + 40, 0x00280001);
	o = print_portable(timer_start, "timer", false, d, 48);
	CHECK(g_str_has_suffix(o, " cpu=1 idx=0 flags=D|I"), "portable timer_start D|I: %s", o);
	g_free(o);
	put32(d + 40, 0x00400000);
	o = print_portable(timer_start, "timer", false, d, 48);
	CHECK(g_str_has_suffix(o, " cpu=0 idx=1 flags="), "portable timer_start no flags: %s",
	      o);
	g_free(o);
	memset(d, 0, sizeof(d));
	put32(d + 40, 1);
	o = print_portable(hrtimer_start, "timer", true, d, 48);
	CHECK(g_str_has_suffix(o, " mode=REL"), "portable hrtimer_start REL: %s", o);
	g_free(o);
	/* without the values, libtraceevent's own reading (what trace-cmd prints for
	 * the format file as the kernel wrote it) */
	o = print_portable(hrtimer_start, "timer", false, d, 48);
	CHECK(g_str_has_suffix(o, " mode=0x1"), "portable hrtimer_start, no enums: %s", o);
	g_free(o);
}

int main(void)
{
	test_fields();
	test_hostile();
	test_portable();
	return tap_done();
}
