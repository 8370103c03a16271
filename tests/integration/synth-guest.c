// SPDX-License-Identifier: MIT
/*
 * synth-guest - a synthetic stackmap-guestd for the host-agent's tests and benchmark.
 *
 * It speaks PROTOCOL.md through proto/ exactly as the guest agent does: HELLO, then the
 * 6.1 FORMAT texts, KSYMS and MODULES snapshots, EPOCH and STACKS delta records, PAGE
 * frames holding real ring-buffer pages (ringpage.c), LOST, STATS and BYE; it keeps
 * unacknowledged frames in a bounded window and resends them from the host's
 * resume_seq after a reconnect (it can be the server, like QEMU with server=on, or the
 * client). The workload is deterministic from --seed: kmalloc events, each followed by
 * its stack event the way ftrace writes them (same pid, flags and preempt count; some
 * with an interrupt's event and stack nested in between, some nested events without a
 * stack), stack_ids from a map that is reset --epochs - 1 times (same slots, other
 * stacks in each epoch), and deep stacks as full ftrace/kernel_stack events.
 *
 * --expect FILE writes the ground truth: "outer;...;inner COUNT" per distinct stack,
 * computed from the generator's own tables, for comparison with `report folded`.
 * --hostile MODE sends a hostile stream instead (see usage).
 *
 * --answer-time answers the host's clock probes (PROTOCOL.md 4.11) as the guest agent
 * does, on a synthetic trace clock: CLOCK_MONOTONIC + --time-offset-ns, running
 * --time-drift-ppm fast. Each probe's marker is an ftrace/print event alone in a page
 * of an extra CPU (the last one, which carries nothing else, so that each CPU's pages
 * stay in time order); --time-log FILE writes "probe_id guest_ts host_mono" per marker,
 * the ground truth of the stored samples. The workload then waits --time-ms before its
 * tail (LOST, STATS, BYE), answering probes.
 */
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "guest-formats.h"
#include "proto.h"
#include "ringpage.h"

#define PAGE_SIZE	4096u
#define NR_FUNCS	300u
#define NR_MODFUNCS	20u
#define TEXT_BASE	UINT64_C(0xffffffff81000000)
#define MOD_BASE	UINT64_C(0xffffffffc0000000)
#define DEEP_DEPTH	70u
#define FLAG_HARDIRQ	0x08
#define FLAG_SOFTIRQ	0x10
#define FLAG_NMI	0x40

typedef struct {
	char *connect_path;
	char *listen_path;
	gint64 events;
	gint cpus;
	gint epochs;
	gint stacks;
	gint map_bits;
	gint64 seed;
	char *expect;
	char *expect_events;
	char *dump;
	char *hostile;
	gboolean no_bye;
	gint cut_stacks;
	gint late_stacks;
	gboolean no_stacks;
	gboolean same_stacks;
	gboolean no_formats;
	gint throttle_us;
	gint window_mb;
	gint ack_ms, ack_bytes;	/* the HELLO's ACK pacing (1.5) */
	gint64 gap_at;
	gboolean crc32c;		/* seal with CRC32C, as a 1.3 guest */
	gint missed;
	gint gap;
	gint unseen;
	gint unread;
	gint refused_every;
	gint reconnect_ms;
	char *expect_refused;
	char *print_text;
	char *boot_id;
	gint64 stream_id;
	gboolean quiet;
	gboolean answer_time;
	gint64 time_offset_ns;
	gint time_drift_ppm;
	gint time_ms;
	char *time_log;
	gboolean cmdlines;
} Opts;

typedef struct {
	uint64_t seq;
	uint32_t len;
	uint8_t *bytes;
} Frame;

typedef struct {
	Opts o;
	int fd;
	int listen_fd;
	FILE *dump;
	uint8_t boot_id[16];
	uint64_t stream_id;
	/* window */
	GQueue window;
	size_t window_bytes;
	size_t window_max;
	uint64_t next_seq;
	uint64_t acked;
	uint64_t acks;		/* ACK frames received */
	uint64_t dropped_frames;
	uint64_t dropped_bytes;
	struct smp_decoder *dec;
	/* generator */
	GQueue ready;			/* Frame*, generated, not yet in the window */
	struct ringpage *pages;
	uint8_t *page_bufs;
	uint64_t clock;
	GRand *rand;
	GByteArray *stacks_buf;		/* pending delta records */
	GHashTable *published;		/* "e:k" -> 1 */
	GHashTable *expected;		/* folded -> count */
	GArray *truth;			/* EvTruth, with --expect-events */
	GArray *refused_ts;		/* uint64_t, --refused-format's events */
	uint64_t gen_events;
	uint32_t cut_done;	/* --cut-stacks events made so far */
	uint64_t gen_calls;
	int epoch;
	bool gen_done;
	bool bye_queued;
	bool missed_done;
	uint64_t frames_sent;
	uint64_t bytes_sent;
	uint64_t resent;
	unsigned int connections;
	uint64_t ids_epoch;	/* stack_id events of the current epoch (map successes) */
	/* --answer-time */
	gint64 time_start_us;	/* when the workload began (for --time-ms) */
	bool time_waiting;	/* the workload is done, --time-ms not yet over */
	int64_t time_mono0;	/* CLOCK_MONOTONIC at start, the drift's origin */
	FILE *time_log;
	uint64_t time_answered;
} Guest;

/* ---- symbols and stacks --------------------------------------------------------- */

static uint64_t func_addr(unsigned int f)
{
	return f < NR_FUNCS ? TEXT_BASE + 0x100 + (uint64_t)f * 0x400 :
			      MOD_BASE + (uint64_t)(f - NR_FUNCS) * 0x200;
}

static void func_name(unsigned int f, char *buf, size_t len)
{
	if (f < NR_FUNCS)
		g_snprintf(buf, len, "synth_fn_%03u", f);
	else
		g_snprintf(buf, len, "synthmod_fn_%02u", f - NR_FUNCS);
}

static uint32_t mix(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu ^ c * 0xc2b2ae35u;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

static bool no_deep;	/* --no-deep: every stack fits the map */

static bool stack_is_deep(int k)
{
	return !no_deep && k % 64 == 63;	/* deeper than the map keeps: kernel_stack */
}

static unsigned int stack_depth(int e, int k)
{
	return stack_is_deep(k) ? DEEP_DEPTH : 3 + mix(e, k, 999) % 10;
}

/* Frame j (0 = innermost) of stack k in epoch e: a function and an ip inside it. */
static unsigned int stack_func(int e, int k, unsigned int j)
{
	return mix(e, k, j) % (NR_FUNCS + NR_MODFUNCS);
}

static uint64_t stack_ip(int e, int k, unsigned int j)
{
	unsigned int f = stack_func(e, k, j);

	return func_addr(f) + 0x10 + (mix(k, j, e) % 0x100);
}

static uint32_t stack_slot(int k, int map_bits)
{
	return (uint32_t)(((uint64_t)k * 7919u + 13u) % (2u << map_bits));
}

static char *folded_for(int e, int k)
{
	GString *s = g_string_new(NULL);
	unsigned int d = stack_depth(e, k);

	for (unsigned int j = d; j-- > 0;) {
		char n[64];

		func_name(stack_func(e, k, j), n, sizeof(n));
		if (s->len)
			g_string_append_c(s, ';');
		g_string_append(s, n);
	}
	return g_string_free(s, FALSE);
}

typedef struct {
	uint64_t ts;
	char *folded;
} EvTruth;

/* Ground truth: @key (taken over) is the stack of the traced event at @ev_ts. */
static void expect_add(Guest *g, char *key, uint64_t ev_ts)
{
	gpointer old = g_hash_table_lookup(g->expected, key);

	if (g->o.expect_events) {
		EvTruth t = { ev_ts, g_strdup(key) };

		g_array_append_val(g->truth, t);
	}
	g_hash_table_replace(g->expected, key, GSIZE_TO_POINTER(GPOINTER_TO_SIZE(old) + 1));
}

/* ---- frames ------------------------------------------------------------------- */

/*
 * --refused-format: a FORMAT the host must refuse. It passes every check of tep.c, but
 * a print fmt argument indexed twice (REC->caller[1][2]) makes libtraceevent 1.7's
 * tep_parse_format() dereference NULL (fuzz-format's first find, test-sandbox.c).
 * Its events are laid out as its fields say: size at 8, caller[8] at 16.
 */
#define REFUSED_NAME	"synth/crashy"
#define REFUSED_ID	900
static const char refused_text[] =
	"name: crashy\nID: 900\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n\n"
	"print fmt: \"%lx %lx\", REC->caller[0], REC->caller[1][2]\n";

static void push_frame(Guest *g, uint8_t type, uint64_t seq, const uint8_t *payload,
		       size_t len)
{
	Frame *f = g_new0(Frame, 1);
	long n;

	f->bytes = g_malloc(SMP_HDR_SIZE + len);
	/* the host this guest talks to checks XXH64 (protocol 1.4), as a real guest sees
	 * in its WELCOME */
	n = smp_frame_encode(f->bytes, SMP_HDR_SIZE + len, type,
			     g->o.crc32c ? 0 : SMP_FLAG_XXH64, seq, payload, len);
	g_assert(n > 0);
	f->len = (uint32_t)n;
	f->seq = seq;
	g_queue_push_tail(&g->ready, f);
}

static void push_seq(Guest *g, uint8_t type, const uint8_t *payload, size_t len)
{
	if (g->o.gap_at && g->next_seq == (uint64_t)g->o.gap_at) {
		/* As if the window had dropped these frames: a hole in the numbering. */
		g->next_seq += (uint64_t)g->o.gap;
		g->dropped_frames += (uint64_t)g->o.gap;
	}
	push_frame(g, type, g->next_seq++, payload, len);
}

static void frame_free(gpointer p)
{
	Frame *f = p;

	g_free(f->bytes);
	g_free(f);
}

/*
 * --cmdlines: the tasks' names as saved_cmdlines has them (CMDLINES, PROTOCOL.md 4.3).
 * Generation 0, with the metadata: pids 1000..1024 as "synth-PID". Generation 1, after
 * the workload: pids 1025..1049 (the tasks seen since), pid 1001 renamed "renamed"
 * (a reused pid: the later name wins), and three lines the host must refuse.
 */
static void push_cmdlines(Guest *g, uint32_t gen)
{
	g_autoptr(GString) t = g_string_new(NULL);
	uint8_t *buf = g_malloc(SMP_MAX_PAYLOAD);
	struct smp_text m = { .generation = gen, .flags = SMP_TEXT_LAST };
	long n;

	for (int pid = gen ? 1025 : 1000; pid < (gen ? 1050 : 1025); pid++)
		g_string_append_printf(t, "%d synth-%d\n", pid, pid);
	if (gen)
		g_string_append(t, "1001 renamed\nnot-a-pid x\n99999999 toolarge\n"
			       "7 a-comm-of-more-than-15-bytes\n");
	m.text = t->str;
	m.text_len = t->len;
	n = smp_text_encode(&m, buf, SMP_MAX_PAYLOAD);
	g_assert(n > 0);
	push_seq(g, SMP_CMDLINES, buf, (size_t)n);
	g_free(buf);
}

static void gen_preamble(Guest *g)
{
	g_autoptr(GString) ks = g_string_new(NULL);
	uint8_t *buf = g_malloc(SMP_MAX_PAYLOAD);
	long n;

	for (unsigned int i = 0; i < gf_nr_formats && !g->o.no_formats; i++) {
		struct smp_format m = {
			.name = gf_formats[i].name, .name_len = (uint16_t)strlen(gf_formats[i].name),
			.text = gf_formats[i].text, .text_len = strlen(gf_formats[i].text),
		};

		n = smp_format_encode(&m, buf, SMP_MAX_PAYLOAD);
		g_assert(n > 0);
		push_seq(g, SMP_FORMAT, buf, (size_t)n);
	}
	if (g->o.refused_every) {
		struct smp_format m = {
			.name = REFUSED_NAME, .name_len = sizeof(REFUSED_NAME) - 1,
			.text = refused_text, .text_len = sizeof(refused_text) - 1,
		};

		n = smp_format_encode(&m, buf, SMP_MAX_PAYLOAD);
		g_assert(n > 0);
		push_seq(g, SMP_FORMAT, buf, (size_t)n);
	}
	g_string_append_printf(ks, "%016" PRIx64 " T _text\n", TEXT_BASE);
	for (unsigned int f = 0; f < NR_FUNCS + NR_MODFUNCS; f++) {
		char name[64];

		func_name(f, name, sizeof(name));
		g_string_append_printf(ks, "%016" PRIx64 " %c %s%s\n", func_addr(f),
				       f < NR_FUNCS ? 'T' : 't', name,
				       f < NR_FUNCS ? "" : "\t[synthmod]");
	}
	/* Two chunks, split on a line boundary, the last flagged. */
	{
		const char *mid = strchr(ks->str + ks->len / 2, '\n') + 1;
		struct smp_text a = { .generation = 0, .chunk = 0, .text = ks->str,
				      .text_len = (size_t)(mid - ks->str) };
		struct smp_text b = { .generation = 0, .chunk = 1, .flags = SMP_TEXT_LAST,
				      .text = mid, .text_len = strlen(mid) };

		n = smp_text_encode(&a, buf, SMP_MAX_PAYLOAD);
		push_seq(g, SMP_KSYMS, buf, (size_t)n);
		n = smp_text_encode(&b, buf, SMP_MAX_PAYLOAD);
		push_seq(g, SMP_KSYMS, buf, (size_t)n);
	}
	{
		const char *mods = "synthmod 16384 0 - Live 0xffffffffc0000000\n";
		struct smp_text m = { .flags = SMP_TEXT_LAST, .text = mods,
				      .text_len = strlen(mods) };

		n = smp_text_encode(&m, buf, SMP_MAX_PAYLOAD);
		push_seq(g, SMP_MODULES, buf, (size_t)n);
	}
	if (g->o.cmdlines)
		push_cmdlines(g, 0);
	n = smp_delta_put_epoch(buf, SMP_MAX_PAYLOAD, 0, 0);
	push_seq(g, SMP_EPOCH, buf, (size_t)n);
	g_free(buf);
}

static void flush_stacks(Guest *g)
{
	if (!g->stacks_buf->len)
		return;
	push_seq(g, SMP_STACKS, g->stacks_buf->data, g->stacks_buf->len);
	g_byte_array_set_size(g->stacks_buf, 0);
}

static void flush_page(Guest *g, int cpu)
{
	struct ringpage *p = &g->pages[cpu];
	uint32_t n;
	uint8_t *buf;
	long hl;

	if (!p->nr_events)
		return;
	n = ringpage_finish(p);
	if (g->o.missed && !g->missed_done && g->next_seq > 20 && n + 8 <= PAGE_SIZE) {
		/* 6.1: RB_MISSED_EVENTS | RB_MISSED_STORED in commit (sign-extended on
		 * 64-bit), the count as a long after the data; the agent sends it too. */
		uint64_t commit = (uint64_t)(n - 16) | 0xffffffffc0000000ull;
		uint64_t count = (uint64_t)g->o.missed;

		memcpy(p->buf + 8, &commit, 8);
		memcpy(p->buf + n, &count, 8);
		n += 8;
		g->missed_done = true;
	}
	buf = g_malloc(SMP_PAGE_FIXED + n);
	hl = smp_page_encode(&(struct smp_page){ .cpu = (uint32_t)cpu, .data = p->buf,
				.data_len = n }, buf, SMP_PAGE_FIXED + n);
	g_assert(hl > 0);
	push_seq(g, SMP_PAGE, buf, (size_t)hl);
	g_free(buf);
	ringpage_reset(p, g->clock);
}

static void ring_add(Guest *g, int cpu, uint64_t ts, const void *data, uint32_t len)
{
	struct ringpage *p = &g->pages[cpu];

	if (!p->nr_events)
		ringpage_reset(p, ts);
	if (!ringpage_add(p, ts, data, len)) {
		flush_page(g, cpu);
		ringpage_reset(p, ts);
		g_assert(ringpage_add(p, ts, data, len));
	}
}

static void put_common(uint8_t *d, uint16_t type, uint8_t flags, uint8_t preempt, int32_t pid)
{
	memcpy(d, &type, 2);
	d[2] = flags;
	d[3] = preempt;
	memcpy(d + 4, &pid, 4);
}

static void emit_kmalloc(Guest *g, int cpu, uint64_t ts, uint8_t flags, uint8_t preempt,
			 int pid, uint64_t call_site)
{
	uint8_t d[52] = { 0 };
	uint64_t ptr = 0xffff888000000000ull + (g_rand_int(g->rand) & 0xffffff) * 64;
	uint64_t req = 8u << (g_rand_int(g->rand) % 8), alloc = req, gfp = 0xcc0;
	int32_t node = 0;

	put_common(d, GF_ID_KMALLOC, flags, preempt, pid);
	memcpy(d + 8, &call_site, 8);
	memcpy(d + 16, &ptr, 8);
	memcpy(d + 24, &req, 8);
	memcpy(d + 32, &alloc, 8);
	memcpy(d + 40, &gfp, 8);
	memcpy(d + 48, &node, 4);
	ring_add(g, cpu, ts, d, sizeof(d));
}

/* An event of --refused-format's type, in place of a kmalloc. */
static void emit_refused(Guest *g, int cpu, uint64_t ts, int pid, uint64_t call_site)
{
	uint8_t d[80] = { 0 };
	int32_t size = 1;

	put_common(d, REFUSED_ID, 0, 0, pid);
	memcpy(d + 8, &size, 4);
	memcpy(d + 16, &call_site, 8);
	ring_add(g, cpu, ts, d, sizeof(d));
	g_array_append_val(g->refused_ts, ts);
}

/* The epoch whose stacks the current epoch's ids carry: its own, or with
 * --same-stacks epoch 0's in every epoch (a map reset, then the same workload). */
static int frame_epoch(const Guest *g)
{
	return g->o.same_stacks ? 0 : g->epoch;
}

/* The stack event for stack k of the current epoch, and its ground truth. */
static void emit_stack(Guest *g, int cpu, uint64_t ts, uint8_t flags, uint8_t preempt,
		       int pid, int k, uint64_t ev_ts)
{
	int e = frame_epoch(g);

	if (g->o.no_stacks) {
		expect_add(g, g_strdup("[no stack]"), ev_ts);
		return;
	}
	expect_add(g, folded_for(e, k), ev_ts);
	if (stack_is_deep(k)) {
		unsigned int d = stack_depth(e, k);
		g_autofree uint8_t *buf = g_malloc0(16 + 8 * d);
		int32_t size = (int32_t)d;

		put_common(buf, GF_ID_KERNEL_STACK, flags, preempt, pid);
		memcpy(buf + 8, &size, 4);
		for (unsigned int j = 0; j < d; j++) {
			uint64_t ip = stack_ip(e, k, j);

			memcpy(buf + 16 + 8 * j, &ip, 8);
		}
		ring_add(g, cpu, ts, buf, 16 + 8 * d);
	} else {
		uint8_t d[12];
		uint32_t id = smp_id_make((uint64_t)g->epoch, stack_slot(k, g->o.map_bits));
		char key[32];

		put_common(d, GF_ID_STACK_ID, flags, preempt, pid);
		memcpy(d + 8, &id, 4);
		ring_add(g, cpu, ts, d, sizeof(d));
		g->ids_epoch++;
		g_snprintf(key, sizeof(key), "%d:%d", g->epoch, k);
		if (!g_hash_table_contains(g->published, key)) {
			uint64_t ips[64];
			unsigned int depth = stack_depth(e, k);
			size_t at = g->stacks_buf->len;

			g_hash_table_add(g->published, g_strdup(key));
			for (unsigned int j = 0; j < depth; j++)
				ips[j] = stack_ip(e, k, j);
			g_byte_array_set_size(g->stacks_buf, (guint)(at + 16 + 8 * depth));
			smp_delta_put_stack(g->stacks_buf->data + at, 16 + 8 * depth, id, 1, ips,
					    depth);
			if (g->stacks_buf->len > 16384)
				flush_stacks(g);
		}
	}
}

static int pick_stack(Guest *g)
{
	int a = g_rand_int_range(g->rand, 0, g->o.stacks);
	int b = g_rand_int_range(g->rand, 0, g->o.stacks);

	return MIN(a, b);	/* skewed: low ids are hot, like real stacks */
}

static void emit_print(Guest *g, int cpu, uint64_t ts, int pid, uint64_t ip);

/* One traced event (and what ftrace writes with it). */
static void gen_event(Guest *g)
{
	uint64_t i = g->gen_events++;
	int cpu = (int)(g_rand_int(g->rand) % (uint32_t)g->o.cpus);
	int pid = 1000 + (int)(i % 50);
	int k = pick_stack(g);
	uint64_t ts;

	g->clock += 200 + g_rand_int_range(g->rand, 0, 2000);
	if (i % 5000 == 4999)
		g->clock += 300000000;	/* an idle gap: a TIME_EXTEND in the page */
	ts = g->clock;
	if (g->o.print_text && i % 100 == 0)
		emit_print(g, cpu, ts, pid, stack_ip(frame_epoch(g), k, 0));
	if (g->o.cut_stacks && i + (uint64_t)g->o.cut_stacks >= (uint64_t)g->o.events) {
		/* A crash between these events' commits and their stack events: the
		 * host keeps them waiting for a stack that never comes. Only events of
		 * nested contexts can wait together on one CPU (pair.h): cut event j
		 * is on CPU j % cpus, in context j / cpus (task, then a softirq, a
		 * hardirq and an NMI, each interrupting the one before). */
		static const uint8_t ctx_flags[] = { 0, FLAG_SOFTIRQ,
						     FLAG_SOFTIRQ | FLAG_HARDIRQ,
						     FLAG_SOFTIRQ | FLAG_HARDIRQ | FLAG_NMI };
		uint32_t j = g->cut_done++, ctx = j / (uint32_t)g->o.cpus;

		cpu = (int)(j % (uint32_t)g->o.cpus);
		emit_kmalloc(g, cpu, ts, ctx_flags[ctx], (uint8_t)ctx, pid,
			     stack_ip(frame_epoch(g), k, 0));
		expect_add(g, g_strdup("[stack not received: the stream ended before it]"), ts);
		g->clock = ts + 40;
		return;
	}
	if (g->o.refused_every && (i + 1) % (uint64_t)g->o.refused_every == 0)
		emit_refused(g, cpu, ts, pid, stack_ip(frame_epoch(g), k, 0));
	else
		emit_kmalloc(g, cpu, ts, 0, 0, pid, stack_ip(frame_epoch(g), k, 0));
	if (i < (uint64_t)g->o.late_stacks) {
		/* traced before options/stacktrace was set: no stack event follows, and
		 * the next event of this CPU's task context says none will (pair.h) */
		expect_add(g, g_strdup("[no stack]"), ts);
		g->clock = ts + 40;
		return;
	}
	if (i % 97 == 5) {
		/* An interrupt between the event's commit and its stack reservation:
		 * its own event and stack come first (pair.h). */
		int k2 = pick_stack(g);

		emit_kmalloc(g, cpu, ts + 10, FLAG_HARDIRQ, 1, pid, stack_ip(frame_epoch(g), k2, 0));
		emit_stack(g, cpu, ts + 20, FLAG_HARDIRQ, 1, pid, k2, ts + 10);
		g->gen_events++;
	} else if (i % 193 == 7) {
		/* ... or an interrupt's event traced without a stack. */
		emit_kmalloc(g, cpu, ts + 10, FLAG_HARDIRQ, 1, pid, stack_ip(frame_epoch(g), k, 0));
		expect_add(g, g_strdup("[no stack]"), ts + 10);
		g->gen_events++;
	}
	emit_stack(g, cpu, ts + 30, 0, 0, pid, k, ts);
	g->clock = ts + 40;
}

static void gen_epoch(Guest *g)
{
	uint8_t rec[SMP_DELTA_EPOCH_SIZE];
	long n;

	/* The delta file returns the old epoch's unread entries before the new epoch. */
	flush_stacks(g);
	g->epoch++;
	g->ids_epoch = 0;
	g->clock += 1000;
	n = smp_delta_put_epoch(rec, sizeof(rec), (uint64_t)g->epoch, g->clock);
	push_seq(g, SMP_EPOCH, rec, (size_t)n);
	g->clock += 1000;
}

static void gen_tail(Guest *g)
{
	uint8_t buf[SMP_LOST_FIXED + 64 * SMP_LOST_CPU_SIZE];
	struct smp_lost_cpu cpus[64] = { 0 };
	struct smp_stat st[5] = {
		{ SMP_STAT_MAP_EPOCH, (uint64_t)g->epoch },
		{ SMP_STAT_AGENT_FRAMES, g->next_seq },
		{ SMP_STAT_MAP_CAPACITY, 1u << g->o.map_bits },
	};
	uint32_t nst = 3;
	struct smp_lost l = { .nr = (uint32_t)MIN(g->o.cpus, 64),
			      .agent_dropped_frames = g->dropped_frames,
			      .agent_dropped_bytes = g->dropped_bytes };
	long n;

	for (int c = 0; c < g->o.cpus; c++)
		flush_page(g, c);
	flush_stacks(g);
	for (uint32_t c = 0; c < l.nr; c++) {
		cpus[c].cpu = c;
		cpus[c].read_events = g->gen_events;
	}
	n = smp_lost_encode(&l, cpus, buf, sizeof(buf));
	g_assert(n > 0);
	push_seq(g, SMP_LOST, buf, (size_t)n);
	/* --unseen N: the map handed out N more ids than there are stack_id events (a
	 * ring-buffer reset); --unread N: N events left in the buffer after the drain */
	if (g->o.unseen >= 0)
		st[nst++] = (struct smp_stat){ SMP_STAT_MAP_SUCCESSES,
					       g->ids_epoch + (uint64_t)g->o.unseen };
	if (g->o.unread > 0)
		st[nst++] = (struct smp_stat){ SMP_STAT_RB_UNREAD, (uint64_t)g->o.unread };
	n = smp_stats_encode(st, nst, buf, sizeof(buf));
	push_seq(g, SMP_STATS, buf, (size_t)n);
	if (g->o.cmdlines)
		push_cmdlines(g, 1);
	if (!g->o.no_bye) {
		n = smp_bye_encode(SMP_BYE_SHUTDOWN, buf, sizeof(buf));
		push_seq(g, SMP_BYE, buf, (size_t)n);
	}
	g->gen_done = true;
}

/* Generate until some frames are ready or the workload is done. */
static void generate(Guest *g)
{
	/* Epochs are spread over the calls of gen_event() (each makes 1 or 2 events). */
	uint64_t per_epoch = MAX((uint64_t)g->o.events / (uint64_t)g->o.epochs, 1) * 100 / 102;

	while (g_queue_is_empty(&g->ready) && !g->gen_done) {
		if (g->gen_events >= (uint64_t)g->o.events) {
			g->time_waiting = g->o.answer_time && g_get_monotonic_time() <
					  g->time_start_us + (gint64)g->o.time_ms * 1000;
			if (!g->time_waiting)
				gen_tail(g);
			break;
		}
		if (g->epoch + 1 < g->o.epochs && g->gen_calls >= per_epoch * (uint64_t)(g->epoch + 1))
			gen_epoch(g);
		g->gen_calls++;
		gen_event(g);
	}
}

/* ---- clock probes (--answer-time) ---------------------------------------------- */

static bool write_all(Guest *g, const uint8_t *p, size_t len);

#define TRACE_PRINT_ID	GF_ID_PRINT

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The synthetic trace clock at host CLOCK_MONOTONIC @mono. */
static uint64_t guest_clock(Guest *g, int64_t mono)
{
	int64_t since = mono - g->time_mono0;

	return (uint64_t)(mono + g->o.time_offset_ns +
			  (int64_t)((double)since * g->o.time_drift_ppm / 1e6));
}

static void send_print_format(Guest *g)
{
	uint8_t buf[2048];
	struct smp_format m = { .name = gf_print.name, .name_len = (uint16_t)strlen(gf_print.name),
				.text = gf_print.text, .text_len = strlen(gf_print.text) };
	long n = smp_format_encode(&m, buf, sizeof(buf));

	g_assert(n > 0);
	push_seq(g, SMP_FORMAT, buf, (size_t)n);
}

/* --print: a write of the option's bytes (C escapes undone) to trace_marker. */
static void emit_print(Guest *g, int cpu, uint64_t ts, int pid, uint64_t ip)
{
	g_autofree char *text = g_strcompress(g->o.print_text);
	size_t n = MIN(strlen(text), 1024);
	g_autofree uint8_t *d = g_malloc0(16 + n + 2);

	put_common(d, TRACE_PRINT_ID, 0, 0, pid);
	memcpy(d + 8, &ip, 8);
	memcpy(d + 16, text, n);
	d[16 + n] = '\n';	/* as tracing_mark_write() ends it */
	ring_add(g, cpu, ts, d, (uint32_t)(16 + n + 2));
}

static void time_preamble(Guest *g)
{
	send_print_format(g);
	g->time_mono0 = mono_ns();
	/* the workload's events on the same clock, near the probes' times */
	g->clock = guest_clock(g, g->time_mono0);
}

/* A TIME from the host: the marker page (sent next, in sequence) and the reply (now). */
static bool answer_time(Guest *g, const struct smp_frame *f)
{
	uint8_t page[PAGE_SIZE] = { 0 }, d[64] = { 0 };
	uint8_t frame[SMP_HDR_SIZE + SMP_TIME_SIZE], payload[SMP_TIME_SIZE];
	uint8_t pbuf[SMP_PAGE_FIXED + PAGE_SIZE];
	struct smp_time_reply r = { 0 };
	struct ringpage rp;
	uint64_t ip = TEXT_BASE + 0x1234, ts;
	int64_t mono;
	uint32_t n;
	long k;

	if (smp_time_decode(&r.probe_id, f->payload, f->len) < 0)
		return true;
	mono = mono_ns();
	ts = guest_clock(g, mono);
	put_common(d, TRACE_PRINT_ID, 0, 0, 1);
	memcpy(d + 8, &ip, 8);
	k = smp_time_marker(r.probe_id, (char *)d + 16, sizeof(d) - 16);
	g_assert(k > 0);
	d[16 + k] = '\n';
	ringpage_init(&rp, page, PAGE_SIZE);
	ringpage_reset(&rp, ts);
	g_assert(ringpage_add(&rp, ts, d, (uint32_t)(16 + k + 2)));
	n = ringpage_finish(&rp);
	k = smp_page_encode(&(struct smp_page){ .cpu = (uint32_t)g->o.cpus, .data = page,
				.data_len = n }, pbuf, sizeof(pbuf));
	g_assert(k > 0);
	push_seq(g, SMP_PAGE, pbuf, (size_t)k);
	if (g->time_log)
		fprintf(g->time_log, "%" PRIu64 " %" PRIu64 " %" PRId64 "\n", r.probe_id, ts,
			mono);
	k = smp_time_reply_encode(&r, payload, sizeof(payload));
	k = smp_frame_encode(frame, sizeof(frame), SMP_TIME_REPLY, 0, 0, payload, (size_t)k);
	g->time_answered++;
	return write_all(g, frame, (size_t)k);
}

/* ---- transport ------------------------------------------------------------------ */

static uint8_t *hello_payload(Guest *g, size_t *len)
{
	static uint8_t buf[SMP_HELLO_FIXED + 3 * 255 + SMP_HELLO_PACING_SIZE];
	static const char release[] = "6.1.0-synthetic";
	static const uint8_t build_id[20] = { 0x5e, 0xed, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct smp_hello h = {
		.stream_id = g->stream_id, .text_addr = TEXT_BASE,
		.nr_cpus = (uint32_t)g->o.cpus + (g->o.answer_time ? 1 : 0),
		.page_size = PAGE_SIZE,
		.map_bits = (uint32_t)g->o.map_bits, .max_depth = 64, .map_epoch = 0,
		.flags = SMP_HELLO_STACKMAP | (g->o.answer_time ? SMP_HELLO_TIME : 0),
		.release = release,
		.release_len = sizeof(release) - 1, .build_id = build_id, .build_id_len = 20,
		.trace_clock = "local", .clock_len = 5,
		.ack_ms = (uint32_t)g->o.ack_ms, .ack_bytes = (uint32_t)g->o.ack_bytes,
	};
	long n;

	memcpy(h.boot_id, g->boot_id, 16);
	n = smp_hello_encode(&h, buf, sizeof(buf));
	g_assert(n > 0);
	*len = (size_t)n;
	return buf;
}

static bool write_all(Guest *g, const uint8_t *p, size_t len)
{
	if (g->dump)
		return fwrite(p, 1, len, g->dump) == len;
	while (len) {
		ssize_t n = send(g->fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		p += n;
		len -= (size_t)n;
		g->bytes_sent += (uint64_t)n;
	}
	return true;
}

static void drop_acked(Guest *g)
{
	Frame *f;

	while ((f = g_queue_peek_head(&g->window)) && f->seq <= g->acked) {
		g->window_bytes -= f->len;
		frame_free(g_queue_pop_head(&g->window));
	}
}

/*
 * Read what the host sent; @block waits for something, and with @ret_welcome for
 * the WELCOME, whose resume seq it stores there. Returns false on EOF/error.
 */
static bool read_host(Guest *g, bool block, uint64_t *ret_welcome)
{
	for (;;) {
		uint8_t *space;
		size_t room;
		ssize_t n;
		struct smp_frame f;
		int r;

		while ((r = smp_decoder_next(g->dec, &f, NULL)) != 0) {
			if (r != 1)
				continue;
			if (f.type == SMP_ACK) {
				uint64_t a;

				g->acks++;
				if (smp_ack_decode(&a, f.payload, f.len) == 0 && a > g->acked)
					g->acked = a;
				drop_acked(g);
				/* waiting for a WELCOME: an ACK of the last session ends no wait */
				if (!ret_welcome)
					block = false;
			} else if (f.type == SMP_TIME && g->o.answer_time) {
				if (!answer_time(g, &f))
					return false;
			} else if (f.type == SMP_WELCOME && ret_welcome) {
				struct smp_welcome w;

				if (smp_welcome_decode(&w, f.payload, f.len) == 0)
					*ret_welcome = w.resume_seq;
				return true;
			}
		}
		/* after the frames are taken: taking the last one empties the buffer */
		room = smp_decoder_space(g->dec, &space);
		n = recv(g->fd, space, room, block ? 0 : MSG_DONTWAIT);
		if (n > 0) {
			smp_decoder_commit(g->dec, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR) && !block)
			return true;
		if (n < 0 && errno == EINTR)
			continue;
		return false;
	}
}

static bool open_connection(Guest *g)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (g->o.listen_path) {
		if (g->listen_fd < 0) {
			g->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			g_strlcpy(sa.sun_path, g->o.listen_path, sizeof(sa.sun_path));
			unlink(g->o.listen_path);
			if (bind(g->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
			    listen(g->listen_fd, 1) < 0) {
				perror("synth-guest: listen");
				return false;
			}
		}
		g->fd = accept(g->listen_fd, NULL, NULL);
		return g->fd >= 0;
	}
	g_strlcpy(sa.sun_path, g->o.connect_path, sizeof(sa.sun_path));
	for (int i = 0; i < 600; i++) {
		g->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(g->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return true;
		close(g->fd);
		g->fd = -1;
		g_usleep(100000);	/* a test program: waiting for the daemon to appear */
	}
	return false;
}

/* One connection: HELLO, WELCOME, resend, stream. False when it broke. */
static bool session(Guest *g)
{
	size_t hlen;
	uint8_t *hello = hello_payload(g, &hlen);
	uint8_t hf[SMP_HDR_SIZE + SMP_HELLO_FIXED + 3 * 255];
	long n = smp_frame_encode(hf, sizeof(hf), SMP_HELLO, 0, 0, hello, hlen);
	uint64_t resume = 0;

	smp_decoder_reset(g->dec);
	if (!write_all(g, hf, (size_t)n) || !read_host(g, true, &resume) || resume == 0)
		return false;
	if (resume > g->acked + 1) {
		g->acked = resume - 1;	/* durable on the host */
		drop_acked(g);
	}
	for (GList *l = g->window.head; l; l = l->next) {
		Frame *f = l->data;

		if (f->seq < resume)
			continue;
		f->bytes[7] |= SMP_FLAG_RESENT;	/* flags are covered by the CRCs: reseal */
		smp_frame_seal(f->bytes, f->bytes[6], f->bytes[7], f->seq, f->len - SMP_HDR_SIZE);
		if (!write_all(g, f->bytes, f->len))
			return false;
		g->resent++;
	}
	for (;;) {
		Frame *f;

		generate(g);
		f = g_queue_pop_head(&g->ready);
		if (!f && g->time_waiting) {
			/* --time-ms: answer probes until the tail is due */
			struct pollfd pfd = { .fd = g->fd, .events = POLLIN };

			if (poll(&pfd, 1, 20) < 0 && errno != EINTR)
				return false;
			if (!read_host(g, false, NULL))
				return false;
			continue;
		}
		if (!f) {
			/* Everything sent: wait until all of it is acknowledged. */
			if (g_queue_is_empty(&g->window))
				return true;
			if (!read_host(g, true, NULL))
				return false;
			continue;
		}
		while (g->window_bytes + f->len > g->window_max && !g_queue_is_empty(&g->window))
			if (!read_host(g, true, NULL))
				break;
		while (g->window_bytes + f->len > g->window_max && !g_queue_is_empty(&g->window)) {
			Frame *old = g_queue_pop_head(&g->window);	/* drop the oldest */

			g->dropped_frames++;
			g->dropped_bytes += old->len - SMP_HDR_SIZE;
			g->window_bytes -= old->len;
			frame_free(old);
		}
		g_queue_push_tail(&g->window, f);
		g->window_bytes += f->len;
		g->frames_sent++;
		if (!write_all(g, f->bytes, f->len))
			return false;
		if (g->o.throttle_us)
			g_usleep((gulong)g->o.throttle_us);
		if (!read_host(g, false, NULL))
			return false;
	}
}

/* ---- hostile streams ------------------------------------------------------------ */

static bool hostile(Guest *g)
{
	const char *m = g->o.hostile;
	size_t hlen;
	uint8_t *hello = hello_payload(g, &hlen);
	g_autofree uint8_t *buf = g_malloc(SMP_HDR_SIZE + SMP_MAX_PAYLOAD);
	uint64_t resume = 0, seq;
	long n;

	if (!open_connection(g))
		return false;
	if (strcmp(m, "before-hello") == 0) {
		n = smp_frame_encode(buf, SMP_HDR_SIZE + 8, SMP_BYE, 0, 1, "\0\0\0\0\0\0\0\0", 8);
		write_all(g, buf, (size_t)n);
		return !read_host(g, true, NULL);	/* the host must hang up */
	}
	if (strcmp(m, "version") == 0) {
		uint32_t crc;

		smp_frame_encode(buf, SMP_HDR_SIZE + hlen, SMP_HELLO, 0, 0, hello, hlen);
		buf[4] = 2;	/* major 2: both checksums cover it, recompute them */
		crc = smp_crc32c(0, buf, 24);
		crc = smp_crc32c(crc, buf + SMP_HDR_SIZE, hlen);
		memcpy(buf + 24, &crc, 4);
		crc = smp_crc32c(0, buf, 28);
		memcpy(buf + 28, &crc, 4);
		write_all(g, buf, SMP_HDR_SIZE + hlen);
		return !read_host(g, true, NULL);
	}
	n = smp_frame_encode(buf, SMP_HDR_SIZE + hlen, SMP_HELLO, 0, 0, hello, hlen);
	if (!write_all(g, buf, (size_t)n) || !read_host(g, true, &resume))
		return false;
	seq = resume;
	if (strcmp(m, "hello-flood") == 0) {
		for (int i = 0; i < 100000; i++)
			if (!write_all(g, buf, (size_t)n))
				return true;	/* hung up on us: expected */
		return !read_host(g, true, NULL);
	}
	if (strcmp(m, "garbage") == 0) {
		for (int i = 0; i < 64; i++) {
			for (size_t j = 0; j < 65536; j++)
				buf[j] = (uint8_t)g_rand_int(g->rand);
			/* sprinkle magics so that the decoder tries headers */
			for (size_t j = 0; j + 4 < 65536; j += 997)
				memcpy(buf + j, "SMAP", 4);
			if (!write_all(g, buf, 65536))
				return true;
		}
		return !read_host(g, true, NULL);
	}
	if (strcmp(m, "lies") == 0) {
		/* Checksummed frames whose contents lie about sizes and counts. */
		for (int i = 0; i < 5000; i++) {
			uint8_t p[256] = { 0 };
			size_t len = 0;
			uint8_t type = SMP_PAGE;

			switch (i % 5) {
			case 0: {	/* PAGE whose commit claims more than was sent */
				uint64_t commit = 4000;

				memcpy(p + 8 + 8, &commit, 8);
				len = 8 + 64;
				break;
			}
			case 1: {	/* PAGE with an event of length word 0 (kbuffer loop) */
				uint64_t commit = 16;
				uint32_t w0 = 0, w1 = 0;

				memcpy(p + 16, &commit, 8);
				memcpy(p + 24, &w0, 4);
				memcpy(p + 28, &w1, 4);
				len = 8 + 16 + 16;
				break;
			}
			case 2: {	/* STACKS record claiming depth 64 with 1 ip */
				uint32_t h[4] = { 1, 64, 1, 0 };

				memcpy(p, h, 16);
				len = 24;
				type = SMP_STACKS;
				break;
			}
			case 3: {	/* LOST claiming 4096 CPUs in 64 bytes */
				uint32_t nr = 4096;

				memcpy(p, &nr, 4);
				len = 64;
				type = SMP_LOST;
				break;
			}
			default: {	/* PAGE for a CPU that does not exist */
				uint32_t cpu = 4095;

				memcpy(p, &cpu, 4);
				len = 8 + 16;
				type = SMP_PAGE;
				break;
			}
			}
			n = smp_frame_encode(buf, SMP_HDR_SIZE + len, type, 0, seq++, p, len);
			if (!write_all(g, buf, (size_t)n))
				return true;
		}
		return !read_host(g, true, NULL);
	}
	if (strcmp(m, "seq-wrap") == 0) {
		/* issue 21: seq 2^64-1 used to wrap the expected seq to 0, and the next
		 * WELCOME carried host stack memory. Here it must be malformed: the next
		 * HELLO resumes right after the last good frame. "Hung up" = it did. */
		uint64_t again = 0;

		n = smp_delta_put_epoch(buf + SMP_HDR_SIZE, 64, 0, 0);
		n = smp_frame_seal(buf, SMP_EPOCH, 0, seq, (uint32_t)n);
		if (!write_all(g, buf, (size_t)n))
			return false;
		n = smp_delta_put_epoch(buf + SMP_HDR_SIZE, 64, 1, 10);
		n = smp_frame_seal(buf, SMP_EPOCH, 0, UINT64_MAX, (uint32_t)n);
		if (!write_all(g, buf, (size_t)n))
			return false;
		n = smp_delta_put_epoch(buf + SMP_HDR_SIZE, 64, 2, 20);
		n = smp_frame_seal(buf, SMP_EPOCH, 0, seq + 2 + SMP_SEQ_MAX_GAP, (uint32_t)n);
		if (!write_all(g, buf, (size_t)n))
			return false;
		n = smp_frame_encode(buf, SMP_HDR_SIZE + hlen, SMP_HELLO, 0, 0, hello, hlen);
		if (!write_all(g, buf, (size_t)n) || !read_host(g, true, &again))
			return false;
		g_printerr("synth-guest: seq-wrap: resumed at %" PRIu64 " then %" PRIu64 "\n",
			   resume, again);
		return again == resume + 1;
	}
	if (strcmp(m, "geometry") == 0) {
		/* A later HELLO of the same boot and stream announcing big-endian pages:
		 * it used to be accepted silently. The host must hang up. */
		struct smp_hello h;

		smp_hello_decode(&h, hello, hlen);
		h.flags |= SMP_HELLO_PAGES_BE;
		n = smp_hello_encode(&h, buf + SMP_HDR_SIZE, SMP_MAX_PAYLOAD);
		n = smp_frame_seal(buf, SMP_HELLO, 0, 0, (uint32_t)n);
		if (!write_all(g, buf, (size_t)n))
			return true;
		return !read_host(g, true, NULL);
	}
	if (strcmp(m, "stack-conflict") == 0) {
		/* Stack id 5 of epoch 0 twice, with other frames the second time: the
		 * host counts it malformed, keeps the first, and goes on. "Hung up" here
		 * means: the BYE after them was acknowledged. */
		uint64_t ips_a[2] = { TEXT_BASE + 0x110, TEXT_BASE + 0x510 };
		uint64_t ips_b[2] = { TEXT_BASE + 0x910, TEXT_BASE + 0x510 };
		uint32_t id = smp_id_make(0, 5);

		n = smp_delta_put_epoch(buf + SMP_HDR_SIZE, 64, 0, 0);
		n = smp_frame_seal(buf, SMP_EPOCH, 0, seq++, (uint32_t)n);
		if (!write_all(g, buf, (size_t)n))
			return false;
		for (int i = 0; i < 2; i++) {
			n = smp_delta_put_stack(buf + SMP_HDR_SIZE, 64, id, 1, i ? ips_b : ips_a, 2);
			n = smp_frame_seal(buf, SMP_STACKS, 0, seq++, (uint32_t)n);
			if (!write_all(g, buf, (size_t)n))
				return false;
		}
		n = smp_bye_encode(SMP_BYE_SHUTDOWN, buf + SMP_HDR_SIZE, 8);
		n = smp_frame_seal(buf, SMP_BYE, 0, seq, (uint32_t)n);
		if (!write_all(g, buf, (size_t)n))
			return false;
		while (g->acked < seq)
			if (!read_host(g, true, NULL))
				return false;
		return true;
	}
	if (strcmp(m, "format-flood") == 0) {
		/*
		 * What a guest can make the host hold in event formats (issue 21): in
		 * three sessions (a HELLO again on this connection, then a new stream of
		 * the same boot), as many ~60 KiB formats of ~1200 fields as the host
		 * takes, each under a new event name, and as many texts cut inside a
		 * field declaration (those leaked in libtraceevent 1.7). The host refuses
		 * what is over its budget, counted as malformed. "Hung up": the host
		 * acknowledged everything or closed the connection.
		 */
		g_autoptr(GString) txt = g_string_new(NULL);
		struct smp_hello h;

		smp_hello_decode(&h, hello, hlen);
		for (unsigned int sess = 0; sess < 3; sess++) {
			if (sess == 0) {
				/* the real formats first: the pages below parse */
				for (unsigned int i = 0; i < gf_nr_formats; i++) {
					struct smp_format fm = {
						.name = gf_formats[i].name,
						.name_len = (uint16_t)strlen(gf_formats[i].name),
						.text = gf_formats[i].text,
						.text_len = strlen(gf_formats[i].text),
					};

					n = smp_format_encode(&fm, buf + SMP_HDR_SIZE,
							      SMP_MAX_PAYLOAD);
					n = smp_frame_seal(buf, SMP_FORMAT, 0, seq++, (uint32_t)n);
					if (!write_all(g, buf, (size_t)n))
						return true;
				}
			}
			if (sess) {
				h.stream_id += sess == 2;
				n = smp_hello_encode(&h, buf + SMP_HDR_SIZE, SMP_MAX_PAYLOAD);
				n = smp_frame_seal(buf, SMP_HELLO, 0, 0, (uint32_t)n);
				if (!write_all(g, buf, (size_t)n) || !read_host(g, true, &resume))
					return true;
				seq = resume;
			}
			for (unsigned int i = 0; i < 2 * 160; i++) {
				g_autofree char *name = g_strdup_printf("flood/e%u_%u", sess, i);
				struct smp_format fm = { .name = name, .name_len = (uint16_t)strlen(name) };

				g_string_printf(txt, "name: e%u_%u\nID: %u\nformat:\n", sess, i,
						2000 + sess * 1000 + i);
				for (unsigned int k = 0; txt->len < 60000; k++)
					g_string_append_printf(txt, "\tfield:int field_%u;\toffset:%u;"
							       "\tsize:4;\tsigned:1;\n", k, 8 + 4 * k);
				g_string_append(txt, "\nprint fmt: \"%d\", REC->field_0\n");
				fm.text = txt->str;
				fm.text_len = txt->len;
				if (i % 2)	/* cut inside the last field declaration */
					fm.text_len = (size_t)(strstr(txt->str, "\nprint fmt") - txt->str) - 20;
				n = smp_format_encode(&fm, buf + SMP_HDR_SIZE, SMP_MAX_PAYLOAD);
				n = smp_frame_seal(buf, SMP_FORMAT, 0, seq++, (uint32_t)n);
				if (!write_all(g, buf, (size_t)n))
					return true;
				if (!read_host(g, false, NULL))
					return true;
			}
		}
		/*
		 * Then what fills the full-stack cache (16 MiB of ips, the largest
		 * per-connection table): 300000 distinct one-frame kernel_stack events,
		 * each after an event it pairs with, in pages of 4 KiB.
		 */
		{
			struct ringpage rp;
			uint8_t ev[24] = { 0 }, km[52] = { 0 };
			uint64_t ts = 1000;

			ringpage_init(&rp, g->page_bufs, PAGE_SIZE);
			ringpage_reset(&rp, ts);
			put_common(km, GF_ID_KMALLOC, 0, 0, 77);
			put_common(ev, GF_ID_KERNEL_STACK, 0, 0, 77);
			memcpy(ev + 8, &(int32_t){ 1 }, 4);
			for (uint64_t k = 0; k < 300000; k++) {
				uint64_t ip = TEXT_BASE + 0x100 + k;

				memcpy(ev + 16, &ip, 8);
				if (!ringpage_add(&rp, ts, km, sizeof(km)) ||
				    !ringpage_add(&rp, ts + 1, ev, sizeof(ev))) {
					uint32_t len = ringpage_finish(&rp);

					n = smp_page_encode(&(struct smp_page){ .cpu = 0, .data = rp.buf,
							    .data_len = len }, buf + SMP_HDR_SIZE,
							    SMP_MAX_PAYLOAD);
					n = smp_frame_seal(buf, SMP_PAGE, 0, seq++, (uint32_t)n);
					if (!write_all(g, buf, (size_t)n) || !read_host(g, false, NULL))
						return true;
					ringpage_reset(&rp, ts);
					k--;
					continue;
				}
				ts += 10;
			}
		}
		while (g->acked < seq - 1)
			if (!read_host(g, true, NULL))
				return true;
		return true;
	}
	if (strcmp(m, "text-flood") == 0) {
		/*
		 * Texts under keys the guest chooses (issue 14): 250000 tiny MODULES
		 * snapshots, each a new generation, then 170 CMDLINES chunks of 200 KiB,
		 * then BYE. The host stores each kind up to its per-boot budget
		 * (ingest.h) and refuses the rest; everything is acknowledged.
		 */
		static char big[200 * 1024];
		struct smp_text t = { .flags = SMP_TEXT_LAST, .text = "m 1\n", .text_len = 4 };

		for (size_t i = 0; i + 6 <= sizeof(big); i += 6)
			memcpy(big + i, "1 abc\n", 6);
		for (uint32_t i = 0; i < 250000 + 170; i++) {
			bool cmd = i >= 250000;

			if (cmd) {
				t = (struct smp_text){ .generation = i - 250000,
						       .flags = SMP_TEXT_LAST, .text = big,
						       .text_len = sizeof(big) / 6 * 6 };
			} else {
				t.generation = i;
			}
			n = smp_text_encode(&t, buf + SMP_HDR_SIZE, SMP_MAX_PAYLOAD);
			n = smp_frame_seal(buf, cmd ? SMP_CMDLINES : SMP_MODULES, 0, seq++,
					   (uint32_t)n);
			if (!write_all(g, buf, (size_t)n))
				return false;
			if (i % 256 == 0)
				read_host(g, false, NULL);
		}
		n = smp_bye_encode(SMP_BYE_SHUTDOWN, buf + SMP_HDR_SIZE, 8);
		n = smp_frame_seal(buf, SMP_BYE, 0, seq, (uint32_t)n);
		if (!write_all(g, buf, (size_t)n))
			return false;
		while (g->acked < seq)
			if (!read_host(g, true, NULL))
				return false;
		return true;
	}
	if (strcmp(m, "tiny-stacks") == 0) {
		/* EPOCH, then an endless flood of depth-1 stacks in new epochs. */
		for (uint64_t e = 0;; e++) {
			size_t off = 0;

			n = smp_delta_put_epoch(buf + SMP_HDR_SIZE, 64, e, e * 1000);
			n = smp_frame_seal(buf, SMP_EPOCH, 0, seq++, (uint32_t)n);
			if (!write_all(g, buf, (size_t)n))
				return true;
			for (uint32_t slot = 0; slot < (2u << g->o.map_bits) &&
			     off + 24 <= SMP_MAX_PAYLOAD - 64; slot++) {
				uint64_t ip = 0xffffffff81000000ull + slot;

				off += (size_t)smp_delta_put_stack(buf + SMP_HDR_SIZE + off, 24,
							smp_id_make(e, slot), 1, &ip, 1);
			}
			n = smp_frame_seal(buf, SMP_STACKS, 0, seq++, (uint32_t)off);
			if (!write_all(g, buf, (size_t)n))
				return true;
			read_host(g, false, NULL);
		}
	}
	g_printerr("synth-guest: unknown hostile mode %s\n", m);
	return false;
}

/* ---- main --------------------------------------------------------------------- */

static int truth_cmp(gconstpointer a, gconstpointer b)
{
	const EvTruth *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int write_truth(Guest *g)
{
	FILE *f = fopen(g->o.expect_events, "w");

	if (!f) {
		perror(g->o.expect_events);
		return 1;
	}
	g_array_sort(g->truth, truth_cmp);
	for (guint i = 0; i < g->truth->len; i++) {
		EvTruth *t = &g_array_index(g->truth, EvTruth, i);

		fprintf(f, "%" PRIu64 " %s\n", t->ts, t->folded);
	}
	return fclose(f) == 0 ? 0 : 1;
}

static int write_expect(Guest *g)
{
	FILE *f = fopen(g->o.expect, "w");
	GHashTableIter it;
	gpointer k, v;

	if (!f) {
		perror(g->o.expect);
		return 1;
	}
	g_hash_table_iter_init(&it, g->expected);
	while (g_hash_table_iter_next(&it, &k, &v))
		fprintf(f, "%s %zu\n", (char *)k, GPOINTER_TO_SIZE(v));
	return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	Guest g = { .fd = -1, .listen_fd = -1, .next_seq = 1 };
	Opts *o = &g.o;
	g_autoptr(GError) e = NULL;
	GOptionEntry entries[] = {
		{ "connect", 0, 0, G_OPTION_ARG_FILENAME, &o->connect_path, "Connect to the host agent's --listen PATH", "PATH" },
		{ "listen", 0, 0, G_OPTION_ARG_FILENAME, &o->listen_path, "Be the server, like QEMU server=on", "PATH" },
		{ "dump", 0, 0, G_OPTION_ARG_FILENAME, &o->dump, "Write the frame stream to FILE instead", "FILE" },
		{ "events", 0, 0, G_OPTION_ARG_INT64, &o->events, "Traced events (default 100000)", "N" },
		{ "cpus", 0, 0, G_OPTION_ARG_INT, &o->cpus, "CPUs (default 2)", "N" },
		{ "epochs", 0, 0, G_OPTION_ARG_INT, &o->epochs, "Map epochs (resets + 1, default 1)", "N" },
		{ "stacks", 0, 0, G_OPTION_ARG_INT, &o->stacks, "Distinct stacks per epoch (default 200)", "N" },
		{ "map-bits", 0, 0, G_OPTION_ARG_INT, &o->map_bits, "ftrace_stackmap.bits (default 14)", "N" },
		{ "seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, "Workload seed", "N" },
		{ "boot-id", 0, 0, G_OPTION_ARG_STRING, &o->boot_id, "32 hex digits", "HEX" },
		{ "stream-id", 0, 0, G_OPTION_ARG_INT64, &o->stream_id, "Stream id", "N" },
		{ "expect", 0, 0, G_OPTION_ARG_FILENAME, &o->expect, "Write the ground truth (folded)", "FILE" },
		{ "expect-events", 0, 0, G_OPTION_ARG_FILENAME, &o->expect_events,
		  "Write every traced event's \"ts folded\" in time order", "FILE" },
		{ "no-bye", 0, 0, G_OPTION_ARG_NONE, &o->no_bye, "End without BYE (a crash)", NULL },
		{ "cut-stacks", 0, 0, G_OPTION_ARG_INT, &o->cut_stacks,
		  "The last N events (1-8, at most 4 per CPU) lose their stack events (with"
		  " --no-bye: a crash right after their commits, in nested contexts)", "N" },
		{ "late-stacks", 0, 0, G_OPTION_ARG_INT, &o->late_stacks,
		  "The first N events are traced without stacks (before options/stacktrace"
		  " was set)", "N" },
		{ "no-deep", 0, 0, G_OPTION_ARG_NONE, &no_deep,
		  "No stack deeper than the map keeps (no full kernel_stack events)", NULL },
		{ "same-stacks", 0, 0, G_OPTION_ARG_NONE, &o->same_stacks, "Every epoch's ids carry epoch 0's stacks", NULL },
		{ "no-stacks", 0, 0, G_OPTION_ARG_NONE, &o->no_stacks,
		  "Trace without stacktrace (for the benchmark's marginal cost)", NULL },
		{ "no-formats", 0, 0, G_OPTION_ARG_NONE, &o->no_formats,
		  "Send no FORMAT frames (the host cannot parse the pages)", NULL },
		{ "throttle-us", 0, 0, G_OPTION_ARG_INT, &o->throttle_us, "Pause after each frame", "US" },
		{ "gap-at", 0, 0, G_OPTION_ARG_INT64, &o->gap_at, "Skip --gap sequence numbers at this one", "SEQ" },
		{ "gap", 0, 0, G_OPTION_ARG_INT, &o->gap, "How many (default 0)", "N" },
		{ "crc32c", 0, 0, G_OPTION_ARG_NONE, &o->crc32c,
		  "Seal frames with CRC32C, as a guest of protocol 1.3 (default XXH64)", NULL },
		{ "missed", 0, 0, G_OPTION_ARG_INT, &o->missed,
		  "Flag one page as having lost N events before it (RB_MISSED_*)", "N" },
		{ "unseen", 0, 0, G_OPTION_ARG_INT, &o->unseen,
		  "STATS: map successes N above the last epoch's stack_id events (-1: none)", "N" },
		{ "unread", 0, 0, G_OPTION_ARG_INT, &o->unread,
		  "STATS: N events left unread in the ring buffer (RB_UNREAD)", "N" },
		{ "refused-format", 0, 0, G_OPTION_ARG_INT, &o->refused_every,
		  "Send a FORMAT the host must refuse (its parser crashes on it); every Nth"
		  " traced event is of that type", "N" },
		{ "expect-refused", 0, 0, G_OPTION_ARG_FILENAME, &o->expect_refused,
		  "Write the time stamps of --refused-format's events", "FILE" },
		{ "print", 0, 0, G_OPTION_ARG_STRING, &o->print_text,
		  "Before every 100th traced event, an ftrace/print event of TEXT (C escapes"
		  " such as \\377 undone: any bytes), as a write to trace_marker", "TEXT" },
		{ "reconnect-ms", 0, 0, G_OPTION_ARG_INT, &o->reconnect_ms,
		  "Pause before connecting again after a lost connection", "MS" },
		{ "window-mb", 0, 0, G_OPTION_ARG_INT, &o->window_mb, "Unacked window (default 256)", "MB" },
		{ "ack-ms", 0, 0, G_OPTION_ARG_INT, &o->ack_ms,
		  "Ask for ACK pacing: at most an ACK every MS (protocol 1.5)", "MS" },
		{ "ack-bytes", 0, 0, G_OPTION_ARG_INT, &o->ack_bytes,
		  "... unless this much payload waits for one (0: no such rule)", "N" },
		{ "hostile", 0, 0, G_OPTION_ARG_STRING, &o->hostile,
		  "before-hello|version|hello-flood|garbage|lies|tiny-stacks|seq-wrap|geometry|stack-conflict|format-flood|text-flood", "MODE" },
		{ "answer-time", 0, 0, G_OPTION_ARG_NONE, &o->answer_time,
		  "Answer the host's clock probes (an extra CPU carries the markers)", NULL },
		{ "time-offset-ns", 0, 0, G_OPTION_ARG_INT64, &o->time_offset_ns,
		  "The trace clock is CLOCK_MONOTONIC + this (default 1000 s)", "NS" },
		{ "time-drift-ppm", 0, 0, G_OPTION_ARG_INT, &o->time_drift_ppm,
		  "... and runs this fast (default 0)", "PPM" },
		{ "time-ms", 0, 0, G_OPTION_ARG_INT, &o->time_ms,
		  "Answer probes this long before the tail (default 0)", "MS" },
		{ "time-log", 0, 0, G_OPTION_ARG_FILENAME, &o->time_log,
		  "Write \"probe_id guest_ts host_mono\" per answered probe", "FILE" },
		{ "cmdlines", 0, 0, G_OPTION_ARG_NONE, &o->cmdlines,
		  "Send saved cmdlines (CMDLINES) naming the tasks, at the start and the end",
		  NULL },
		{ "quiet", 'q', 0, G_OPTION_ARG_NONE, &o->quiet, "No summary", NULL },
		G_OPTION_ENTRY_NULL,
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- synthetic virtio-stackmap guest");
	bool ok;

	o->events = 100000;
	o->cpus = 2;
	o->epochs = 1;
	o->stacks = 200;
	o->map_bits = 14;
	o->seed = 1;
	o->window_mb = 256;
	o->unseen = -1;
	o->time_offset_ns = 1000000000000;
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &e)) {
		g_printerr("synth-guest: %s\n", e->message);
		return 2;
	}
	if (!!o->connect_path + !!o->listen_path + !!o->dump != 1 || o->cpus < 1 ||
	    o->cpus > 64 || o->epochs < 1 || o->stacks < 1 || o->map_bits < 4 ||
	    o->map_bits > 19 || o->cut_stacks < 0 || o->refused_every < 0 || o->reconnect_ms < 0 || o->cut_stacks > 8 || o->cut_stacks > 4 * o->cpus || o->late_stacks < 0 || (uint32_t)o->stacks * 7919u < (uint32_t)o->stacks) {
		g_printerr("synth-guest: one of --connect/--listen/--dump; sane sizes\n");
		return 2;
	}
	g.rand = g_rand_new_with_seed((guint32)o->seed);
	for (int i = 0; i < 16; i++)
		g.boot_id[i] = (uint8_t)g_rand_int(g.rand);
	if (o->boot_id) {
		for (int i = 0; i < 16 && o->boot_id[2 * i] && o->boot_id[2 * i + 1]; i++)
			g.boot_id[i] = (uint8_t)(g_ascii_xdigit_value(o->boot_id[2 * i]) << 4 |
						 g_ascii_xdigit_value(o->boot_id[2 * i + 1]));
	}
	g.stream_id = o->stream_id ? (uint64_t)o->stream_id : ((uint64_t)g_rand_int(g.rand) << 32 | 1);
	g.window_max = (size_t)o->window_mb << 20;
	g.dec = smp_decoder_new(64);
	g.pages = g_new0(struct ringpage, o->cpus);
	g.page_bufs = g_malloc0((size_t)PAGE_SIZE * (size_t)o->cpus);
	for (int c = 0; c < o->cpus; c++)
		ringpage_init(&g.pages[c], g.page_bufs + (size_t)c * PAGE_SIZE, PAGE_SIZE);
	g.stacks_buf = g_byte_array_new();
	g.published = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g.expected = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g.truth = g_array_new(FALSE, FALSE, sizeof(EvTruth));
	g.refused_ts = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	g_queue_init(&g.window);
	g_queue_init(&g.ready);
	gen_preamble(&g);
	g.time_start_us = g_get_monotonic_time();
	if (o->answer_time)
		time_preamble(&g);
	else if (o->print_text)
		send_print_format(&g);
	if (o->time_log && !(g.time_log = fopen(o->time_log, "w"))) {
		perror("synth-guest: --time-log");
		return 2;
	}

	if (o->hostile) {
		ok = hostile(&g);
		g_printerr("synth-guest: hostile %s: %s\n", o->hostile,
			   ok ? "the host hung up" : "the host did not hang up");
		return ok ? 0 : 1;
	}
	if (o->dump) {
		size_t hlen;
		uint8_t *hello = hello_payload(&g, &hlen);
		uint8_t hf[SMP_HDR_SIZE + SMP_HELLO_FIXED + 3 * 255];
		long n = smp_frame_encode(hf, sizeof(hf), SMP_HELLO, 0, 0, hello, hlen);
		Frame *f;

		g.dump = fopen(o->dump, "w");
		if (!g.dump || !write_all(&g, hf, (size_t)n))
			return 1;
		for (;;) {
			generate(&g);
			if (!(f = g_queue_pop_head(&g.ready)))
				break;
			write_all(&g, f->bytes, f->len);
			g.bytes_sent += f->len;
			frame_free(f);
		}
		fclose(g.dump);
	} else {
		for (;;) {
			if (!open_connection(&g)) {
				g_printerr("synth-guest: no host\n");
				return 1;
			}
			g.connections++;
			ok = session(&g);
			if (o->no_bye && ok) {
				close(g.fd);	/* vanish without BYE, all data acknowledged */
				break;
			}
			if (ok) {
				/* Everything acked, BYE included: let the host see EOF. */
				shutdown(g.fd, SHUT_WR);
				close(g.fd);
				break;
			}
			close(g.fd);
			g.fd = -1;
			if (!o->quiet)
				g_printerr("synth-guest: connection lost at acked seq %" PRIu64
					   ", waiting for the host again\n", g.acked);
			if (o->reconnect_ms)	/* as the guest agent's --reconnect-ms */
				g_usleep((gulong)o->reconnect_ms * 1000);
		}
	}
	if (g.time_log && fclose(g.time_log))
		return 1;
	if (o->expect && write_expect(&g))
		return 1;
	if (o->expect_events && write_truth(&g))
		return 1;
	if (o->expect_refused) {
		FILE *f = fopen(o->expect_refused, "w");

		for (guint i = 0; f && i < g.refused_ts->len; i++)
			fprintf(f, "%" PRIu64 "\n", g_array_index(g.refused_ts, uint64_t, i));
		if (!f || fclose(f) != 0) {
			perror(o->expect_refused);
			return 1;
		}
	}
	if (!o->quiet)
		g_printerr("synth-guest: %" PRIu64 " events, %" PRIu64 " frames (%" PRIu64
			   " resent, %" PRIu64 " dropped), %" PRIu64 " bytes, %u connection(s),"
			   " acked %" PRIu64 ", %" PRIu64 " time probes answered, %" PRIu64
			   " ACKs\n", g.gen_events,
			   g.next_seq - 1, g.resent, g.dropped_frames, g.bytes_sent,
			   g.connections, g.acked, g.time_answered, g.acks);
	printf("events=%" PRIu64 " frames=%" PRIu64 " bytes=%" PRIu64 " epochs=%d\n",
	       g.gen_events, g.next_seq - 1, g.bytes_sent, g.epoch + 1);
	return 0;
}
