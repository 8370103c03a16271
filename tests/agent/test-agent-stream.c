// SPDX-License-Identifier: MIT
/*
 * test-agent-stream.c - the real stackmap-guestd binary against a fake tracefs / procfs
 * / sysfs tree (ring buffers and stack_map_delta are FIFOs the test writes) and a
 * minimal host receiver built on proto/ listening on a unix socket (--port PATH).
 *
 * The receiver plays the host agent's part of PROTOCOL.md section 3: it keeps, per
 * stream, the next sequence number it expects ("durable"), answers HELLO with WELCOME,
 * applies frames in order, drops duplicates, counts gaps and ACKs. Checks:
 *   - the stream decodes cleanly (no garbage, no checksum errors, no malformed payload);
 *   - HELLO, FORMAT, KSYMS, MODULES carry what the fake tree holds;
 *   - every page and every delta record arrives exactly once, pages cut after their
 *     committed bytes, records in insertion order, epochs in between;
 *   - a host disconnect in the middle of a frame, with tracing going on meanwhile,
 *     loses nothing: the agent resends from the resume point (RESENT);
 *   - a module change sends new KSYMS and MODULES generations;
 *   - CMDLINES: saved_cmdlines whole at the start of each stream, then only the
 *     lines that changed, and the last change before BYE;
 *   - garbage and unknown types from the host give a log line and a new handshake;
 *     a WELCOME outside the window gives a log line and a fresh stream;
 *   - with a tiny window and the host away, the oldest frames are dropped and LOST
 *     reports exactly the gap the receiver sees;
 *   - the host away and only metadata dropped, but the room for the new snapshot
 *     taking the first EPOCH (--test-hold-drops 1): that EPOCH goes ahead too;
 *   - SIGTERM sends LOST, STATS and BYE, and the agent exits 0.
 *
 * Usage: test-agent-stream PATH-TO-stackmap-guestd
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "tap.h"

#define NR_CPUS 2
#define PAGE 4096
#define MAX_PAGES 4096
#define MAX_STACKS 4096
#define TIMEOUT_MS 20000

static char root[512];
static const char *agent_bin;

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void pathf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, cap, "%s/", root);

	va_start(ap, fmt);
	vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
	va_end(ap);
}

static void mkdirs(const char *rel)
{
	char path[1024];

	pathf(path, sizeof(path), "%s", rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	}
	mkdir(path, 0755);
}

static void put_file(const char *rel, const void *data, size_t len)
{
	char path[1024], tmp[1100];
	int fd;

	pathf(path, sizeof(path), "%s", rel);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
		perror(path);
		exit(1);
	}
	close(fd);
	rename(tmp, path);	/* the agent never reads a half-written file */
}

static void put_text(const char *rel, const char *text)
{
	put_file(rel, text, strlen(text));
}

/* Rewrite a file in place with text of the same length, as tracefs changes a file an
 * agent keeps open (per_cpu/cpuN/stats): never replaced, one write. */
static void put_text_in_place(const char *rel, const char *text)
{
	char path[1024];
	struct stat st;
	int fd;

	pathf(path, sizeof(path), "%s", rel);
	fd = open(path, O_WRONLY);
	if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size != strlen(text) ||
	    pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text)) {
		perror(path);
		exit(1);
	}
	close(fd);
}

static void put_fifo(const char *rel)
{
	char path[1024];

	pathf(path, sizeof(path), "%s", rel);
	if (mkfifo(path, 0600) < 0) {
		perror(path);
		exit(1);
	}
}

/* Open a FIFO's write end once the agent holds the read end. */
static int open_writer(const char *rel)
{
	char path[1024];
	uint64_t end = now_ms() + TIMEOUT_MS;

	pathf(path, sizeof(path), "%s", rel);
	while (now_ms() < end) {
		int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

		if (fd >= 0) {
			fcntl(fd, F_SETFL, 0);	/* blocking writes from here on */
			return fd;
		}
		sleep_ms(10);
	}
	fprintf(stderr, "# nobody opened %s for reading\n", path);
	return -1;
}

static void write_all(int fd, const void *buf, size_t len)
{
	if (write(fd, buf, len) != (ssize_t)len) {
		perror("write");
		exit(1);
	}
}

/* ---- the fake tree ------------------------------------------------------------ */

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

static char kallsyms[120000];
static size_t kallsyms_len;

static void make_tree(void)
{
	char rel[256];
	uint8_t notes[64] = { 0 };
	uint32_t nh[3] = { 4, 20, 3 };

	mkdirs("tracefs/events/ftrace/stack_id");
	mkdirs("tracefs/events/ftrace/kernel_stack");
	mkdirs("tracefs/events/ftrace/function");
	mkdirs("tracefs/events/kmem/kmalloc");
	mkdirs("tracefs/events/kmem/kfree");
	mkdirs("tracefs/events/kmem/kmem_cache_free");
	mkdirs("tracefs/options");
	mkdirs("proc/sys/kernel/random");
	mkdirs("sys/kernel");
	put_text("tracefs/trace_clock", "[local] global counter uptime perf mono\n");
	put_text("tracefs/events/header_page", header_page);
	put_text("tracefs/events/header_event",
		 "# compressed entry header\n\ttype_len    :    5 bits\n");
	put_text("tracefs/events/ftrace/stack_id/format",
		 "name: stack_id\nID: 17\nformat:\n\tfield:int stack_id;\toffset:8;\n");
	put_text("tracefs/events/ftrace/kernel_stack/format",
		 "name: kernel_stack\nID: 4\nformat:\n\tfield:int size;\toffset:8;\n");
	put_text("tracefs/events/ftrace/function/format", "name: function\nID: 1\n");
	put_text("tracefs/events/kmem/kmalloc/format", "name: kmalloc\nID: 300\n");
	put_text("tracefs/events/kmem/kfree/format", "name: kfree\nID: 301\n");
	put_text("tracefs/events/kmem/kmem_cache_free/format", "name: kmem_cache_free\nID: 302\n");
	put_text("tracefs/set_event", "kmem:kmalloc\n");
	put_text("tracefs/set_event_notrace_pid", "");
	put_text("tracefs/trace_marker", "");
	put_text("tracefs/saved_cmdlines", "42 bash\n1 init\n8 <...>\n");
	put_text("tracefs/options/stackmap", "1\n");
	put_text("tracefs/stack_map_stat", "entries:      0 / 16384\ntable_size:   32768\n"
		 "successes:    0\ndrops:        0\nsuccess_rate: 0%\n");
	for (int cpu = 0; cpu < NR_CPUS; cpu++) {
		snprintf(rel, sizeof(rel), "tracefs/per_cpu/cpu%d", cpu);
		mkdirs(rel);
		snprintf(rel, sizeof(rel), "tracefs/per_cpu/cpu%d/stats", cpu);
		put_text(rel, "entries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\n"
			 "oldest event ts: 0.000000\nnow ts: 1.000000\ndropped events: 0\n"
			 "read events: 0\n");
		snprintf(rel, sizeof(rel), "tracefs/per_cpu/cpu%d/trace_pipe_raw", cpu);
		put_fifo(rel);
	}
	put_fifo("tracefs/stack_map_delta");

	put_text("proc/sys/kernel/random/boot_id", "8f2a4c1e-0b5d-4e6f-9a7b-1c2d3e4f5a6b\n");
	put_text("proc/sys/kernel/osrelease", "6.1.0-stackmap-test\n");
	kallsyms_len = (size_t)snprintf(kallsyms, sizeof(kallsyms),
					"0000000000000000 A fixed_percpu_data\n"
					"ffffffff81000000 T _text\n");
	for (int i = 0; kallsyms_len < sizeof(kallsyms) - 64; i++)
		kallsyms_len += (size_t)snprintf(kallsyms + kallsyms_len,
						 sizeof(kallsyms) - kallsyms_len,
						 "ffffffff81%06x t function_%d\n", 0x1000 + i * 16, i);
	put_file("proc/kallsyms", kallsyms, kallsyms_len);
	put_text("proc/modules", "");

	memcpy(notes, nh, 12);
	memcpy(notes + 12, "GNU", 4);
	for (int i = 0; i < 20; i++)
		notes[16 + i] = (uint8_t)(0xb0 + i);
	put_file("sys/kernel/notes", notes, 36);
}

/* Page @id: timestamp = id, commit = its data size (plus loss flags on some), data
 * starting with the id, the unused rest 0xEE (which must never reach the wire). */
static uint32_t page_commit(uint32_t id)
{
	return 24 + (id * 37) % 4000;
}

static void make_page(uint8_t *page, uint32_t id)
{
	uint32_t commit = page_commit(id);
	uint64_t field = commit;

	memset(page, 0xee, PAGE);
	memcpy(page, &(uint64_t){ id }, 8);
	if (id % 7 == 3)	/* RB_MISSED_EVENTS as the kernel adds it (sign-extended) */
		field += (uint64_t)(int64_t)(int32_t)0x80000000u;
	memcpy(page + 8, &field, 8);
	memset(page + 16, (int)(id & 0x7f), commit);
	memcpy(page + 16, &(uint64_t){ id }, 8);
}

static uint64_t stack_ip(uint32_t id, uint32_t i)
{
	return 0xffffffff81000000ull + ((uint64_t)id << 12) + i * 8;
}

static size_t make_stack(uint8_t *buf, uint32_t id)
{
	uint64_t ips[64];
	uint32_t depth = 1 + id % 64;

	for (uint32_t i = 0; i < depth; i++)
		ips[i] = stack_ip(id, i);
	return (size_t)smp_delta_put_stack(buf, 1024, id, 1, ips, depth);
}

/* ---- the receiver ---------------------------------------------------------------- */

struct rx {
	int lfd, fd;
	struct smp_decoder *dec;
	char sock[600];

	/* stream state, "durable" */
	uint64_t stream_id;
	uint64_t expected;	/* next seq to apply */
	unsigned streams;	/* HELLOs with a new stream_id */
	unsigned hellos;
	unsigned connections;

	/* policy */
	bool ack;
	bool respond;		/* answer HELLO with WELCOME */
	uint64_t welcome_override;	/* non-zero: the next WELCOME says this */
	size_t close_after;	/* non-zero: drop the connection after this many bytes */
	size_t conn_bytes;

	/* what arrived, applied once */
	unsigned page_count[MAX_PAGES];
	unsigned stack_count[MAX_STACKS];
	uint64_t stack_order_errors;
	uint64_t stack_epoch_errors;	/* a stack record for another epoch, or before any */
	uint32_t last_stack_id;
	unsigned pages, stacks, epochs, formats, lost, stats, byes;
	unsigned after_bye;	/* frames applied after BYE */
	unsigned pages_unparsable;	/* PAGE before any header_page FORMAT */
	uint64_t epoch_list[16];
	unsigned page_errors, malformed, decode_errors, dups, resent_flags, unknown_rx;
	uint64_t gap_frames;
	/* ARENA (PROTOCOL.md 4.12): the window's pages, after each WELCOME */
	unsigned arenas;		/* lists received whole */
	unsigned arena_bad;		/* slices out of order, or an address not aligned */
	uint32_t arena_page_size, arena_nr_pages, arena_have;
	uint64_t arena_list_id;
	uint64_t arena_first_addr;
	bool arena_zero_addr;		/* an address 0 (a page frame number the agent
					 * could not see) */
	uint64_t lost_dropped_frames;
	uint64_t lost_read_events;
	uint64_t lost_overrun;		/* of the second CPU, in the last LOST */
	uint64_t agent_cpu_ns;
	uint64_t agent_writes;
	uint64_t bytes_rx;
	char format_names[2048];
	uint32_t ksyms_gen_done[8];	/* bytes of each complete KSYMS generation */
	size_t ksyms_bytes[8];
	bool ksyms_match[8];
	uint32_t modules_last_gen;
	bool modules_seen;
	char *ksyms_acc;
	size_t ksyms_acc_len;
	uint32_t ksyms_next_chunk;
	struct smp_hello hello;
	uint8_t hello_buf[1024];
	uint64_t first_seq_of_stream;
	uint8_t first_type_of_stream;
	unsigned time_replies;		/* TIME_REPLY frames (unsequenced) */
	unsigned cmdlines_frames;	/* CMDLINES frames applied */
	uint32_t cmdlines_gen;		/* of the last one */
	char cmdlines[1024];		/* its text */
	uint64_t time_reply_id;
	int32_t time_reply_status;
};

static void rx_send(struct rx *r, uint8_t type, const void *payload, size_t len)
{
	uint8_t buf[256];
	long n = smp_frame_encode(buf, sizeof(buf), type, 0, 0, payload, len);

	if (r->fd >= 0 && n > 0)
		(void)send(r->fd, buf, (size_t)n, MSG_NOSIGNAL);
}

static void rx_close(struct rx *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	smp_decoder_reset(r->dec);
}

static void apply_page(struct rx *r, const struct smp_frame *f)
{
	struct smp_page p;
	uint64_t id;
	uint32_t commit;

	if (smp_page_decode(&p, f->payload, f->len) < 0 || p.cpu >= NR_CPUS ||
	    p.data_len < 24) {
		r->malformed++;
		return;
	}
	memcpy(&id, p.data, 8);
	r->pages++;
	if (id >= MAX_PAGES) {
		r->page_errors++;
		return;
	}
	commit = page_commit((uint32_t)id);
	if (p.data_len != 16 + commit || memcmp(p.data + 16, &id, 8) != 0 ||
	    memchr(p.data + 24, 0xee, p.data_len - 24))
		r->page_errors++;
	r->page_count[id]++;
}

static void apply_stacks(struct rx *r, const struct smp_frame *f)
{
	struct smp_delta_rec rec;
	size_t off = 0;
	int k;

	while ((k = smp_delta_next(f->payload, f->len, &off, &rec)) == 1) {
		uint32_t slot = smp_id_slot(rec.stack_id);

		if (rec.kind != SMP_DELTA_STACK || slot >= MAX_STACKS) {
			r->malformed++;
			continue;
		}
		if (rec.nr != 1 + slot % 64 || smp_delta_ip(&rec, rec.nr - 1) !=
		    stack_ip(rec.stack_id, rec.nr - 1))
			r->page_errors++;
		/* the test's slots run on across epochs; the tag is the current epoch's */
		if (r->stacks && slot != smp_id_slot(r->last_stack_id) + 1)
			r->stack_order_errors++;
		/* as host-agent: refused before the stream's first EPOCH */
		if (!r->epochs || smp_id_tag(rec.stack_id) !=
		    smp_epoch_tag(r->epoch_list[(r->epochs - 1) % 16])) {
			r->stack_order_errors++;
			r->stack_epoch_errors++;
		}
		r->last_stack_id = rec.stack_id;
		r->stack_count[slot]++;
		r->stacks++;
	}
	if (k < 0)
		r->malformed++;
}

static void apply_text(struct rx *r, const struct smp_frame *f)
{
	struct smp_text t;

	if (smp_text_decode(&t, f->payload, f->len) < 0) {
		r->malformed++;
		return;
	}
	if (f->type == SMP_MODULES) {
		if (t.flags & SMP_TEXT_LAST) {
			r->modules_seen = true;
			r->modules_last_gen = t.generation;
		}
		return;
	}
	if (t.chunk == 0) {
		r->ksyms_acc_len = 0;
		r->ksyms_next_chunk = 0;
	}
	if (t.chunk != r->ksyms_next_chunk || t.generation >= 8) {
		r->malformed++;
		return;
	}
	r->ksyms_next_chunk++;
	r->ksyms_acc = realloc(r->ksyms_acc, r->ksyms_acc_len + t.text_len + 1);
	memcpy(r->ksyms_acc + r->ksyms_acc_len, t.text, t.text_len);
	r->ksyms_acc_len += t.text_len;
	if (t.flags & SMP_TEXT_LAST) {
		r->ksyms_bytes[t.generation] = r->ksyms_acc_len;
		r->ksyms_match[t.generation] = r->ksyms_acc_len == kallsyms_len &&
			memcmp(r->ksyms_acc, kallsyms, kallsyms_len) == 0;
	}
}

static void apply(struct rx *r, const struct smp_frame *f)
{
	struct smp_format fm;
	struct smp_lost lost;
	struct smp_lost_cpu c;
	struct smp_delta_rec rec;
	uint32_t nr, reason;
	size_t off = 0;

	if (r->byes)
		r->after_bye++;
	if (r->expected == 1) {
		r->first_seq_of_stream = f->seq;
		r->first_type_of_stream = f->type;
	}
	switch (f->type) {
	case SMP_PAGE:
		if (!strstr(r->format_names, "header_page "))
			r->pages_unparsable++;
		apply_page(r, f);
		break;
	case SMP_STACKS:
		apply_stacks(r, f);
		break;
	case SMP_EPOCH:
		if (smp_delta_next(f->payload, f->len, &off, &rec) != 1 ||
		    rec.kind != SMP_DELTA_EPOCH) {
			r->malformed++;
			break;
		}
		if (r->epochs < 16)
			r->epoch_list[r->epochs] = rec.epoch;
		r->epochs++;
		break;
	case SMP_FORMAT:
		if (smp_format_decode(&fm, f->payload, f->len) < 0) {
			r->malformed++;
			break;
		}
		r->formats++;
		if (strlen(r->format_names) + fm.name_len + 2 < sizeof(r->format_names)) {
			strncat(r->format_names, fm.name, fm.name_len);
			strcat(r->format_names, " ");
		}
		break;
	case SMP_KSYMS:
	case SMP_MODULES:
		apply_text(r, f);
		break;
	case SMP_CMDLINES: {
		struct smp_text t;

		if (smp_text_decode(&t, f->payload, f->len) < 0 ||
		    t.text_len >= sizeof(r->cmdlines) || !(t.flags & SMP_TEXT_LAST)) {
			r->malformed++;
			break;
		}
		memcpy(r->cmdlines, t.text, t.text_len);
		r->cmdlines[t.text_len] = '\0';
		r->cmdlines_gen = t.generation;
		r->cmdlines_frames++;
		break;
	}
	case SMP_LOST:
		if (smp_lost_decode(&lost, f->payload, f->len) < 0 || lost.nr != NR_CPUS) {
			r->malformed++;
			break;
		}
		r->lost++;
		r->lost_dropped_frames = lost.agent_dropped_frames;
		smp_lost_cpu(&lost, 1, &c);
		r->lost_read_events = c.read_events;
		r->lost_overrun = c.overrun;
		break;
	case SMP_STATS:
		if (smp_stats_decode(&nr, f->payload, f->len) < 0) {
			r->malformed++;
			break;
		}
		for (uint32_t i = 0; i < nr; i++) {
			struct smp_stat st;

			smp_stats_get(f->payload, i, &st);
			if (st.key == SMP_STAT_AGENT_CPU_NS)
				r->agent_cpu_ns = st.value;
			if (st.key == SMP_STAT_AGENT_WRITES)
				r->agent_writes = st.value;
		}
		r->stats++;
		break;
	case SMP_BYE:
		if (smp_bye_decode(&reason, f->payload, f->len) < 0 || reason != 0)
			r->malformed++;
		r->byes++;
		break;
	default:
		r->unknown_rx++;
	}
}

static void on_hello(struct rx *r, const struct smp_frame *f)
{
	uint8_t w[16];
	struct smp_welcome m;

	if (f->len > sizeof(r->hello_buf) ||
	    smp_hello_decode(&r->hello, f->payload, f->len) < 0) {
		r->malformed++;
		return;
	}
	memcpy(r->hello_buf, f->payload, f->len);
	smp_hello_decode(&r->hello, r->hello_buf, f->len);
	r->hellos++;
	if (r->hello.stream_id != r->stream_id) {
		r->stream_id = r->hello.stream_id;
		r->expected = 1;
		r->streams++;
	}
	if (!r->respond)
		return;
	m.resume_seq = r->welcome_override ? r->welcome_override : r->expected;
	m.max_payload = SMP_MAX_PAYLOAD;
	r->welcome_override = 0;
	smp_welcome_encode(&m, w, sizeof(w));
	rx_send(r, SMP_WELCOME, w, 16);
}

/* One ARENA slice: checked here byte by byte as well as by the decoder. */
static void rx_arena(struct rx *r, const struct smp_frame *f)
{
	struct smp_arena m;

	if (f->seq != 0 || smp_arena_decode(&m, f->payload, f->len) < 0) {
		r->malformed++;
		return;
	}
	if (m.first == 0) {
		r->arena_list_id = m.list_id;
		r->arena_page_size = m.page_size;
		r->arena_nr_pages = m.nr_pages;
		r->arena_have = 0;
		r->arena_first_addr = smp_arena_addr(&m, 0);
	}
	if (m.list_id != r->arena_list_id || m.first != r->arena_have) {
		r->arena_bad++;
		return;
	}
	for (uint32_t i = 0; i < m.nr; i++) {
		const uint8_t *p = f->payload + SMP_ARENA_FIXED + (size_t)i * 8;
		uint64_t a = 0;

		for (int b = 7; b >= 0; b--)
			a = a << 8 | p[b];
		if (a % (uint64_t)sysconf(_SC_PAGESIZE))
			r->arena_bad++;
		if (a == 0)
			r->arena_zero_addr = true;
	}
	r->arena_have += m.nr;
	if (r->arena_have == r->arena_nr_pages)
		r->arenas++;
}

static void rx_frame(struct rx *r, const struct smp_frame *f)
{
	struct smp_time_reply tr;

	if (f->type == SMP_HELLO) {
		on_hello(r, f);
		return;
	}
	if (f->type == SMP_TIME_REPLY && f->seq == 0) {
		if (smp_time_reply_decode(&tr, f->payload, f->len) < 0) {
			r->malformed++;
			return;
		}
		r->time_replies++;
		r->time_reply_id = tr.probe_id;
		r->time_reply_status = tr.status;
		return;
	}
	if (f->type == SMP_ARENA) {
		rx_arena(r, f);
		return;
	}
	if (smp_msg_check_size(f->type, f->len) == -EBADMSG) {
		r->malformed++;
		return;
	}
	if (f->flags & SMP_FLAG_RESENT)
		r->resent_flags++;
	if (f->seq < r->expected) {
		r->dups++;
		return;
	}
	if (f->seq > r->expected) {
		r->gap_frames += f->seq - r->expected;
		r->expected = f->seq;
	}
	apply(r, f);
	r->expected++;
}

/* Accept, read, decode, ACK for up to @ms, or until @until returns true. */
static bool rx_pump(struct rx *r, unsigned ms, bool (*until)(struct rx *))
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		struct pollfd p = { .fd = r->fd >= 0 ? r->fd : r->lfd, .events = POLLIN };
		uint64_t now = now_ms();
		uint8_t buf[65536];
		ssize_t n;
		size_t take;

		if (until && until(r))
			return true;
		if (now >= end)
			return false;
		if (poll(&p, 1, (int)(end - now)) <= 0)
			continue;
		if (r->fd < 0) {
			r->fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (r->fd >= 0) {
				r->connections++;
				r->conn_bytes = 0;
			}
			continue;
		}
		take = sizeof(buf);
		if (r->close_after && r->close_after - r->conn_bytes < take)
			take = r->close_after - r->conn_bytes;
		n = recv(r->fd, buf, take, 0);
		if (n <= 0) {
			rx_close(r);
			continue;
		}
		r->conn_bytes += (size_t)n;
		r->bytes_rx += (size_t)n;
		for (size_t off = 0; off < (size_t)n;) {
			struct smp_frame f;
			int k;

			off += smp_decoder_feed(r->dec, buf + off, (size_t)n - off);
			while ((k = smp_decoder_next(r->dec, &f, NULL)) != 0) {
				if (k < 0) {
					r->decode_errors++;
					continue;
				}
				rx_frame(r, &f);
			}
		}
		if (r->close_after && r->conn_bytes >= r->close_after) {
			/* the host goes away in the middle of whatever was in flight */
			r->close_after = 0;
			rx_close(r);
			continue;
		}
		if (r->ack && r->expected > 1) {
			uint8_t a[8];

			smp_ack_encode(r->expected - 1, a, sizeof(a));
			rx_send(r, SMP_ACK, a, 8);
		}
	}
}

static int rx_listen(struct rx *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->ack = r->respond = true;
	r->dec = smp_decoder_new(0);
	snprintf(r->sock, sizeof(r->sock), "%s/port.sock", root);
	if (strlen(r->sock) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, r->sock);
	r->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->lfd < 0 || bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(r->lfd, 4) < 0)
		return -1;
	return 0;
}

/* ---- the agent process ------------------------------------------------------ */

static pid_t start_agent(const char *sock, const char *extra1, const char *extra2,
			 const char *extra3)
{
	char tracefs[600], procfs[600], sysfs[600], log[600];
	pid_t pid;

	snprintf(tracefs, sizeof(tracefs), "%s/tracefs", root);
	snprintf(procfs, sizeof(procfs), "%s/proc", root);
	snprintf(sysfs, sizeof(sysfs), "%s/sys", root);
	snprintf(log, sizeof(log), "%s/agent.log", root);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 2);
		execl(agent_bin, agent_bin, "--port", sock, "--tracefs", tracefs,
		      "--procfs", procfs, "--sysfs", sysfs, "--flush-ms", "10",
		      "--reconnect-ms", "20", "--rescan-ms", "50", "--stats-ms", "200",
		      "--hello-ms", "2000", "--linger-ms", "5000", "-v",
		      extra1, extra2, extra3, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int wait_exit(pid_t pid, unsigned ms)
{
	uint64_t end = now_ms() + ms;
	int st;

	while (now_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static bool log_has(const char *needle)
{
	char path[600];
	char *text = NULL;
	size_t cap = 0;
	FILE *f;
	bool found = false;

	snprintf(path, sizeof(path), "%s/agent.log", root);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (getline(&text, &cap, f) > 0)
		if (strstr(text, needle))
			found = true;
	free(text);
	fclose(f);
	return found;
}

/* The number right after @needle in the agent's log (its first line with it), or 0. */
static uint64_t log_u64(const char *needle)
{
	char path[600];
	char *text = NULL, *p;
	size_t cap = 0;
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/agent.log", root);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (getline(&text, &cap, f) > 0) {
		p = strstr(text, needle);
		if (p) {
			v = strtoull(p + strlen(needle), NULL, 10);
			break;
		}
	}
	free(text);
	fclose(f);
	return v;
}

static unsigned log_count(const char *needle)
{
	char path[600];
	char *text = NULL;
	size_t cap = 0;
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/agent.log", root);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (getline(&text, &cap, f) > 0)
		if (strstr(text, needle))
			n++;
	free(text);
	fclose(f);
	return n;
}

/* ---- scenario state ------------------------------------------------------------ */

static int ring_fd[NR_CPUS], delta_fd;
static uint32_t pages_written, stacks_written;
static uint64_t epoch_now;

static void write_pages(unsigned n)
{
	uint8_t page[PAGE];

	for (unsigned i = 0; i < n; i++) {
		uint32_t id = pages_written++;

		make_page(page, id);
		write_all(ring_fd[id % NR_CPUS], page, PAGE);
	}
}

static void write_stacks(unsigned n, bool split_last)
{
	uint8_t buf[4096];
	size_t len = 0;

	for (unsigned i = 0; i < n; i++) {
		uint32_t id = smp_id_make(epoch_now, stacks_written++ % 1000000);
		size_t sz = make_stack(buf + len, id);

		if (len + sz > 3500 || (split_last && i == n - 1)) {
			/* flush whole records; a FIFO write <= PIPE_BUF is atomic */
			write_all(delta_fd, buf, len);
			memmove(buf, buf + len, sz);
			len = 0;
		}
		len += sz;
	}
	if (split_last && len > 20) {
		/* a record cut in two reads: the agent must wait for its rest */
		write_all(delta_fd, buf, 20);
		sleep_ms(80);
		write_all(delta_fd, buf + 20, len - 20);
	} else if (len) {
		write_all(delta_fd, buf, len);
	}
}

static void write_epoch(uint64_t epoch)
{
	uint8_t buf[32];

	smp_delta_put_epoch(buf, sizeof(buf), epoch, 1000000 * epoch);
	write_all(delta_fd, buf, 32);
	epoch_now = epoch;
}

static struct rx rx;
static uint32_t want_pages;
static uint32_t want_stacks;

static bool got_pages(struct rx *r)
{
	return r->pages >= want_pages;
}

static bool got_all(struct rx *r)
{
	return r->pages >= want_pages && r->stacks >= want_stacks;
}

static bool got_welcomed(struct rx *r)
{
	return r->hellos > 0 && r->fd >= 0 && r->formats > 0;
}

static bool got_bye(struct rx *r)
{
	return r->byes > 0;
}

static unsigned hellos_before;

static bool got_new_meta(struct rx *r)
{
	return strstr(r->format_names, "kmem/kfree ") && r->modules_last_gen == 1 &&
	       r->ksyms_bytes[1] == kallsyms_len && got_pages(r);
}

static bool got_cache_free_format(struct rx *r)
{
	return strstr(r->format_names, "kmem/kmem_cache_free ") != NULL;
}

static bool got_cut(struct rx *r)
{
	return r->close_after == 0;
}

static bool got_rehello(struct rx *r)
{
	return r->hellos > hellos_before && got_pages(r);
}

static bool got_fresh(struct rx *r)
{
	return r->streams == 2 && r->expected > 1;
}

static bool got_arena(struct rx *r)
{
	return r->arenas > 0;
}

/* VmLck of @pid, kB (0 when unknown). */
static unsigned long agent_locked_kb(pid_t pid)
{
	char path[64], line[256];
	unsigned long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static bool got_hello(struct rx *r)
{
	return r->hellos > 0;
}

static unsigned count_once(const unsigned *counts, uint32_t n, unsigned *ret_dup)
{
	unsigned once = 0, dup = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (counts[i] == 1)
			once++;
		else if (counts[i] > 1)
			dup++;
	}
	*ret_dup = dup;
	return once;
}

/* ---- scenarios ------------------------------------------------------------------ */

/* The fake tree is reused by the next scenario: counters reset, the last agent's log
 * printed as TAP comments and removed, the receiver listening again. */
static int scenario_begin(void)
{
	char path[600], cmd[700];

	pages_written = 0;
	stacks_written = 0;
	epoch_now = 0;
	snprintf(path, sizeof(path), "%s/agent.log", root);
	snprintf(cmd, sizeof(cmd), "sed 's/^/# agent: /' '%s'", path);
	if (system(cmd) != 0)
		printf("# (no agent log)\n");
	unlink(path);
	unlink(rx.sock);
	if (rx_listen(&rx) < 0) {
		ok(0, "receiver listens");
		return -1;
	}
	return 0;
}

/* The writers of the fake rings and delta file (the agent opens the readers). */
static void open_fakes(void)
{
	for (int cpu = 0; cpu < NR_CPUS; cpu++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "tracefs/per_cpu/cpu%d/trace_pipe_raw", cpu);
		ring_fd[cpu] = open_writer(rel);
	}
	delta_fd = open_writer("tracefs/stack_map_delta");
}

static void scenario_end(void)
{
	for (int cpu = 0; cpu < NR_CPUS; cpu++)
		close(ring_fd[cpu]);
	close(delta_fd);
	rx_close(&rx);
	close(rx.lfd);
	unlink(rx.sock);
	free(rx.ksyms_acc);
	smp_decoder_free(rx.dec);
}

static unsigned want_cmdlines;

static bool got_overrun(struct rx *r)
{
	return r->lost_overrun == 7;
}

static bool got_cmdlines(struct rx *r)
{
	return r->cmdlines_frames >= want_cmdlines;
}

static bool got_time_reply(struct rx *r)
{
	return r->time_replies > 0;
}

static void scenario_main(void)
{
	unsigned dup, stacks_before;
	uint64_t old_stream;
	pid_t pid;
	int st;

	if (rx_listen(&rx) < 0) {
		ok(0, "receiver listens");
		return;
	}
	pid = start_agent(rx.sock, NULL, NULL, NULL);
	open_fakes();
	ok(ring_fd[0] >= 0 && ring_fd[1] >= 0 && delta_fd >= 0,
	   "the agent opened both rings and stack_map_delta");

	/* 1. handshake and metadata */
	ok(rx_pump(&rx, TIMEOUT_MS, got_welcomed), "HELLO, WELCOME, metadata");
	ok(rx.hello.nr_cpus == NR_CPUS && rx.hello.page_size == PAGE &&
	   rx.hello.text_addr == 0xffffffff81000000ull && rx.hello.map_bits == 14 &&
	   rx.hello.max_depth == 64 && (rx.hello.flags & SMP_HELLO_STACKMAP),
	   "HELLO: 2 CPUs, 4096-byte pages, _text, map bits 14, depth 64, STACKMAP");
	ok(rx.hello.build_id_len == 20 && rx.hello.build_id[0] == 0xb0 &&
	   rx.hello.release_len == 19 && memcmp(rx.hello.release, "6.1.0-stackmap-test",
						19) == 0 &&
	   rx.hello.clock_len == 5 && memcmp(rx.hello.trace_clock, "local", 5) == 0 &&
	   rx.hello.boot_id[0] == 0x8f && rx.hello.boot_id[15] == 0x6b,
	   "HELLO: build-id, release, clock, boot_id from the fake tree");
	ok(rx.hello.ack_ms == 50 && rx.hello.ack_bytes == 16384u * 1024 / 8,
	   "HELLO: ACK pacing 50 ms (--ack-ms's default), an eighth of the 16 MiB window"
	   " (%u ms, %u bytes)", rx.hello.ack_ms, rx.hello.ack_bytes);

	/* 1b. ARENA: the window's pages, locked, page aligned, after WELCOME */
	ok(rx_pump(&rx, TIMEOUT_MS, got_arena), "ARENA after WELCOME (%u lists)", rx.arenas);
	{
		long ps = sysconf(_SC_PAGESIZE);
		/* --window-kb default 16384: one header page and the arena */
		uint32_t want = (uint32_t)(1 + (16384ul * 1024 + (unsigned long)ps - 1) /
					   (unsigned long)ps);

		ok(rx.arena_page_size == (uint32_t)ps && rx.arena_nr_pages == want,
		   "ARENA: %u pages of %u bytes (want %u of %ld)", rx.arena_nr_pages,
		   rx.arena_page_size, want, ps);
		ok(rx.arena_bad == 0 && !rx.arena_zero_addr,
		   "ARENA: every address page aligned and known, slices in order");
		/* AddressSanitizer's mlock() does nothing: its build locks no page */
		ok(agent_locked_kb(pid) >= (unsigned long)want * (unsigned long)ps / 1024 ||
		   strstr(agent_bin, "-asan"),
		   "the agent locked its window in memory (VmLck %lu kB%s)",
		   agent_locked_kb(pid), strstr(agent_bin, "-asan") ? ", not asked of the"
		   " ASan build" : "");
	}

	/* 2. pages and deltas flow */
	write_epoch(0);
	write_pages(200);
	write_stacks(300, true);
	want_pages = 200;
	want_stacks = 300;
	st = rx_pump(&rx, TIMEOUT_MS, got_all);
	ok(st, "200 pages and 300 stacks arrive (%u, %u)", rx.pages, rx.stacks);
	ok(strstr(rx.format_names, "header_page ") && strstr(rx.format_names, "header_event ") &&
	   strstr(rx.format_names, "ftrace/stack_id ") &&
	   strstr(rx.format_names, "ftrace/kernel_stack ") &&
	   strstr(rx.format_names, "ftrace/function ") &&
	   strstr(rx.format_names, "kmem/kmalloc ") && !strstr(rx.format_names, "kmem/kfree"),
	   "FORMAT: header_page, header_event, ftrace/*, the enabled kmem/kmalloc only "
	   "(%s)", rx.format_names);
	ok(rx.ksyms_match[0], "KSYMS generation 0 is /proc/kallsyms byte for byte (%zu)",
	   rx.ksyms_bytes[0]);
	ok(rx.modules_seen && rx.modules_last_gen == 0, "MODULES generation 0");
	ok(rx.first_seq_of_stream == 1 && rx.first_type_of_stream == SMP_FORMAT,
	   "the stream starts at seq 1 with FORMAT");
	ok(rx.cmdlines_frames == 1 && rx.cmdlines_gen == 0 &&
	   !strcmp(rx.cmdlines, "1 init\n42 bash\n"),
	   "CMDLINES generation 0: saved_cmdlines by pid, without the placeholder");

	/* 2b. a clock probe: the marker into trace_marker, then the reply */
	ok(rx.hello.flags & SMP_HELLO_TIME, "HELLO offers TIME (trace_marker is there)");
	{
		uint8_t p[SMP_TIME_SIZE];
		char path[600], text[128] = { 0 };
		FILE *f;

		smp_time_encode(0xabc0000000000def, p, sizeof(p));
		rx_send(&rx, SMP_TIME, p, sizeof(p));
		ok(rx_pump(&rx, TIMEOUT_MS, got_time_reply), "TIME is answered");
		ok(rx.time_reply_id == 0xabc0000000000def && rx.time_reply_status == 0,
		   "TIME_REPLY: the probe's id, marker written");
		snprintf(path, sizeof(path), "%s/tracefs/trace_marker", root);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(text, sizeof(text), f))
				text[0] = 0;
			fclose(f);
		}
		ok(!strcmp(text, "stackmap-time abc0000000000def"),
		   "the marker in trace_marker: '%s'", text);
	}

	/* 3. a newly enabled event and a module load */
	put_text("tracefs/set_event", "kmem:kmalloc\nkmem:kfree\n");
	put_text("proc/modules", "stackmap_test 16384 0 - Live 0xffffffffc0000000\n");
	want_pages += 10;
	write_pages(10);
	rx_pump(&rx, TIMEOUT_MS, got_new_meta);
	ok(strstr(rx.format_names, "kmem/kfree ") != NULL, "FORMAT of the newly enabled event");
	ok(rx.modules_last_gen == 1 && rx.ksyms_bytes[1] == kallsyms_len,
	   "module change: MODULES and KSYMS generation 1");
	/* a reused pid and a new task: those two lines only */
	put_text("tracefs/saved_cmdlines", "42 make\n1 init\n77 cc1\n");
	want_cmdlines = 2;
	ok(rx_pump(&rx, TIMEOUT_MS, got_cmdlines) && rx.cmdlines_gen == 1 &&
	   !strcmp(rx.cmdlines, "42 make\n77 cc1\n"),
	   "CMDLINES generation 1: the changed lines only");
	/*
	 * The module's use count and users change (a task opened a file it owns): its
	 * symbols are the same, so no new KSYMS. A rescan reads the enabled events, then
	 * the module list, then saved_cmdlines: once the newly enabled event's FORMAT
	 * arrives, a rescan has read the changed list (and queued any MODULES and KSYMS
	 * right behind that FORMAT); once a later CMDLINES arrives, they would be here.
	 */
	put_text("proc/modules", "stackmap_test 16384 2 other_mod, Live 0xffffffffc0000000\n");
	put_text("tracefs/set_event", "kmem:kmalloc\nkmem:kfree\nkmem:kmem_cache_free\n");
	ok(rx_pump(&rx, TIMEOUT_MS, got_cache_free_format),
	   "FORMAT of the event enabled with the module list's change");
	put_text("tracefs/saved_cmdlines", "42 make\n1 init\n77 cc1\n88 ld\n");
	want_cmdlines = rx.cmdlines_frames + 1;
	ok(rx_pump(&rx, TIMEOUT_MS, got_cmdlines) && !strcmp(rx.cmdlines, "88 ld\n"),
	   "CMDLINES of a rescan after the one that read the module list");
	ok(rx.modules_last_gen == 1 && !rx.ksyms_bytes[2],
	   "a module's use count and users changed: no new MODULES or KSYMS (generation %u)",
	   rx.modules_last_gen);
	put_text("tracefs/saved_cmdlines", "42 make\n1 init\n77 cc1\n");
	/* an overrun in per_cpu/cpu1/stats, which the agent keeps open: a LOST with it */
	put_text_in_place("tracefs/per_cpu/cpu1/stats", "entries: 0\noverrun: 7\n"
			  "commit overrun: 0\nbytes: 0\noldest event ts: 0.000000\n"
			  "now ts: 1.000000\ndropped events: 0\nread events: 0\n");
	ok(rx_pump(&rx, TIMEOUT_MS, got_overrun),
	   "LOST: the second CPU's overrun, read again from the stats file kept open");

	/* 4. the host goes away in the middle of a frame while tracing goes on */
	rx.ack = false;
	rx.close_after = 50000;
	write_pages(100);		/* ~200 KB of frames: the cut lands inside one */
	write_stacks(200, false);
	ok(rx_pump(&rx, TIMEOUT_MS, got_cut), "the receiver dropped the connection mid-stream");
	/* stay away: accept nothing for a while, tracing goes on */
	{
		int lfd = rx.lfd;

		rx.lfd = -1;
		write_epoch(1);		/* a map reset while the host is away */
		write_pages(150);
		write_stacks(150, false);
		sleep_ms(300);
		rx.lfd = lfd;
	}
	rx.ack = true;
	want_pages = pages_written;
	want_stacks = stacks_written;
	st = rx_pump(&rx, TIMEOUT_MS, got_all);
	ok(st, "after reconnecting everything arrives (%u/%u pages, %u/%u stacks)",
	   rx.pages, want_pages, rx.stacks, want_stacks);
	ok(rx.connections >= 2 && rx.streams == 1, "same stream across the reconnect");
	ok(rx.resent_flags > 0, "frames resent after the reconnect carry RESENT (%u)",
	   rx.resent_flags);
	is_int(rx.gap_frames, 0, "no gap: the window covered the outage");
	is_int(count_once(rx.page_count, pages_written, &dup), pages_written,
	       "every page applied exactly once");
	is_int(dup, 0, "no page applied twice");
	is_int(count_once(rx.stack_count, MAX_STACKS, &dup), stacks_written,
	       "every stack record applied exactly once");
	is_int(dup, 0, "no stack record applied twice");
	is_int(rx.stacks, stacks_written, "stack records: as many as written");
	is_int(rx.epochs, 2, "both epoch records (boot epoch and the reset)");
	ok(rx.epoch_list[0] == 0 && rx.epoch_list[1] == 1, "epochs 0 then 1, in order");
	is_int(rx.stack_order_errors, 0, "stack records in insertion order");
	is_int(rx.page_errors, 0, "pages cut after their committed bytes, loss flags masked");

	/* 5. garbage and an unknown type from the host */
	{
		static const uint8_t junk[] = "this is not a frame, SMA and SMAP garbage....";
		uint8_t big[64] = { 0 };

		(void)send(rx.fd, junk, sizeof(junk), MSG_NOSIGNAL);
		rx_send(&rx, 200, big, 10);
		hellos_before = rx.hellos;
		want_pages = pages_written + 20;
		write_pages(20);
		ok(rx_pump(&rx, TIMEOUT_MS, got_rehello),
		   "garbage: the agent restarts the handshake (HELLO again)");
		ok(log_has("bad input from the host"), "garbage: a clear log line");
		ok(log_has("unknown type 200"), "unknown type: a log line, then ignored");
		ok(got_pages(&rx) && rx.streams == 1, "the stream goes on after bad input");
	}

	/* 6. a WELCOME beyond what was sent: fresh stream */
	old_stream = rx.stream_id;
	stacks_before = rx.stacks;
	(void)stacks_before;
	rx.welcome_override = rx.expected + 100000;
	rx_close(&rx);			/* the next connection gets the bad WELCOME */
	rx_pump(&rx, TIMEOUT_MS, got_fresh);
	ok(log_has("starting a fresh stream"), "invalid WELCOME: a clear log line");
	ok(rx.streams == 2 && rx.stream_id != old_stream, "a new stream_id");
	ok(rx.first_seq_of_stream == 1 && rx.first_type_of_stream == SMP_FORMAT,
	   "the fresh stream starts at seq 1 with its metadata");
	want_pages = rx.pages + 10;
	write_pages(10);
	ok(rx_pump(&rx, TIMEOUT_MS, got_pages), "pages flow on the fresh stream");
	ok(rx.cmdlines_gen == 0 && !strcmp(rx.cmdlines, "1 init\n42 make\n77 cc1\n"),
	   "the fresh stream's CMDLINES: the whole table again");
	want_cmdlines = rx.cmdlines_frames + 1;

	/* 6b. a task named after the last rescan: sent with the final drain */
	put_text("tracefs/saved_cmdlines", "42 make\n1 init\n77 cc1\n99 late\n");

	/* 7. SIGTERM: LOST, STATS, BYE, exit 0 */
	kill(pid, SIGTERM);
	ok(rx_pump(&rx, TIMEOUT_MS, got_bye), "SIGTERM: BYE arrives");
	ok(rx.lost > 0 && rx.stats > 0, "LOST (%u) and STATS (%u) arrived", rx.lost, rx.stats);
	ok(got_cmdlines(&rx) && !strcmp(rx.cmdlines, "99 late\n"),
	   "the last change of saved_cmdlines arrives before BYE");
	rx_pump(&rx, 300, NULL);
	st = wait_exit(pid, TIMEOUT_MS);
	is_int(st, 0, "the agent exits 0 after BYE is ACKed");
	is_int(rx.after_bye, 0, "BYE is the stream's last frame");
	is_int(rx.decode_errors, 0, "the byte stream decoded without one error");
	is_int(rx.malformed, 0, "no malformed payload");
	is_int(rx.unknown_rx, 0, "no unknown frame type from the agent");
	ok(!log_has("AddressSanitizer") && !log_has("runtime error"), "no sanitizer report");
	is_int(log_count("bad input from the host"), 1, "one log line for the incident");
	scenario_end();
}

/* With a tiny window and the host away, the oldest frames go, and LOST says so. */
static void scenario_drop(void)
{
	pid_t pid;
	int st;

	if (scenario_begin() < 0)
		return;
	/* no WELCOME until we say so: the agent cannot send anything */
	rx.respond = false;
	pid = start_agent(rx.sock, "--window-kb", "512", "--exclude-self");
	open_fakes();
	rx_pump(&rx, TIMEOUT_MS, got_hello);
	write_pages(400);		/* 1.6 MB of pages into a 512 KiB window */
	rx_pump(&rx, 500, NULL);
	ok(rx.hellos >= 1 && rx.pages == 0, "HELLO came, nothing else without WELCOME");
	{
		char rel[700], want[32], *got = NULL;
		size_t cap = 0;
		FILE *f;

		snprintf(rel, sizeof(rel), "%s/tracefs/set_event_notrace_pid", root);
		snprintf(want, sizeof(want), "%d", (int)pid);
		f = fopen(rel, "r");
		ok(f && getline(&got, &cap, f) > 0 && strcmp(got, want) == 0,
		   "--exclude-self wrote the agent's pid to set_event_notrace_pid");
		if (f)
			fclose(f);
		free(got);
		ok(!log_has("tracing_on"), "and changed nothing else in tracefs");
	}
	rx.respond = true;
	rx_close(&rx);			/* reconnect: now WELCOME */
	want_pages = 1;
	rx_pump(&rx, TIMEOUT_MS, got_pages);
	kill(pid, SIGTERM);
	ok(rx_pump(&rx, TIMEOUT_MS, got_bye), "BYE after the drops");
	st = wait_exit(pid, TIMEOUT_MS);
	is_int(st, 0, "exit 0");
	ok(rx.gap_frames > 0, "the receiver saw a gap of %" PRIu64 " frames",
	   rx.gap_frames);
	is_int(rx.lost_dropped_frames, rx.gap_frames,
	       "LOST.agent_dropped_frames equals the gap the receiver saw");
	ok(rx.pages > 50 && rx.pages < 400, "the newest pages arrived (%u of 400)", rx.pages);
	{
		unsigned dup, newest = 0;

		is_int(count_once(rx.page_count, 400, &dup), rx.pages,
		       "every page that arrived arrived once");
		is_int(dup, 0, "no duplicates");
		for (uint32_t i = 380; i < 400; i++)
			newest += rx.page_count[i] == 1;
		is_int(newest, 20, "the newest pages are the ones kept");
	}
	ok(log_has("a new snapshot") && rx.ksyms_match[1] &&
	   strstr(rx.format_names, "header_page "),
	   "the dropped metadata was sent again as a new generation");
	is_int(rx.pages_unparsable, 0, "and ahead of the held pages (none came before "
	       "its header_page FORMAT)");
	is_int(rx.decode_errors + rx.malformed, 0, "clean stream");
	scenario_end();
}

/*
 * A host slower than the guest: connected, but it stops reading. The agent's writes
 * stall, the window overflows and frames it never sent are dropped, among them an
 * EPOCH frame whose stack records are still held: when the host reads again it must
 * see the gap (= LOST), then that epoch again ahead of the held frames, so no stack
 * record arrives under the wrong epoch.
 */
static void scenario_slow(void)
{
	unsigned epochs_before;
	pid_t pid;
	int st;

	if (scenario_begin() < 0)
		return;
	pid = start_agent(rx.sock, "--window-kb", "512", "--exclude-self");
	open_fakes();
	write_epoch(1);
	write_stacks(20, false);
	write_pages(20);
	want_pages = 20;
	want_stacks = 20;
	ok(rx_pump(&rx, TIMEOUT_MS, got_all), "streaming to a host that reads");
	epochs_before = rx.epochs;
	/* the host stops reading: 800 KB fill the socket and the window, then epoch 2 */
	write_pages(200);
	write_epoch(2);
	write_stacks(30, false);
	write_pages(600);
	write_stacks(30, false);	/* held: tagged for epoch 2, its EPOCH frame gone */
	sleep_ms(1000);
	want_stacks = 50;
	rx_pump(&rx, 3000, NULL);	/* the host reads again */
	kill(pid, SIGTERM);
	ok(rx_pump(&rx, TIMEOUT_MS, got_bye), "BYE after the stall");
	st = wait_exit(pid, TIMEOUT_MS);
	is_int(st, 0, "exit 0");
	ok(rx.gap_frames > 0, "the receiver saw a gap of %" PRIu64 " frames", rx.gap_frames);
	/* frames already written when dropped still arrive: the gap can only be smaller */
	ok(rx.lost_dropped_frames >= rx.gap_frames, "LOST.agent_dropped_frames (%" PRIu64
	   ") covers the gap the receiver saw", rx.lost_dropped_frames);
	ok(log_has("the epoch in effect ahead of"), "the agent sent the epoch in effect "
	   "again ahead of the held frames");
	ok(rx.epochs > epochs_before && rx.epoch_list[(rx.epochs - 1) % 16] == 2,
	   "epoch 2 arrived after the gap");
	is_int(rx.stack_epoch_errors, 0, "no stack record arrived under another epoch");
	ok(rx.stack_count[20 + 30 + 29] == 1, "the last stack record held arrived");
	ok(!log_has("KSYMS generation 1"), "no metadata was dropped: no new snapshot");
	is_int(rx.decode_errors + rx.malformed + rx.dups, 0, "clean stream, no duplicates");
	scenario_end();
}

static bool got_stacks(struct rx *r)
{
	return r->stacks >= want_stacks && got_pages(r);
}

static bool hold_ended(struct rx *r)
{
	(void)r;
	return log_has("test hook: the host has every frame held");
}

/*
 * The late host of issue 12, forced with --test-hold-drops 1: the host is away, the
 * window overflows and the agent holds at its first drop (a FORMAT frame): only
 * metadata is lost, but the room kept behind the new snapshot drops the oldest held
 * frames, the stream's first EPOCH and its STACKS among them. The STACKS frames
 * still held (and read at the gap) must come after that EPOCH again.
 */
static void scenario_late_meta(void)
{
	unsigned batches = 0;
	pid_t pid;
	int st;

	if (scenario_begin() < 0)
		return;
	rx.respond = false;		/* the host is away: no WELCOME */
	pid = start_agent(rx.sock, "--window-kb", "512", "--test-hold-drops=1");
	open_fakes();
	rx_pump(&rx, TIMEOUT_MS, got_hello);
	write_epoch(0);
	write_stacks(20, false);
	/* 4 KiB pages until the agent holds (the window is 128 of them) */
	while (!log_has("test hook: ") && batches++ < 100) {
		write_pages(8);
		rx_pump(&rx, 50, NULL);
	}
	ok(log_has("test hook: "), "the agent holds at its first drop");
	write_stacks(10, false);	/* read at the gap, held behind the kept frames */
	rx.respond = true;
	rx_close(&rx);			/* the host comes: WELCOME at 1 */
	want_pages = 1;
	want_stacks = 10;
	st = rx_pump(&rx, TIMEOUT_MS, got_stacks);
	ok(st, "held pages and the STACKS read at the gap arrive (%u pages, %u stacks)",
	   rx.pages, rx.stacks);
	{
		uint64_t window = log_u64("but the window starts at ");
		uint64_t epoch = log_u64("first EPOCH (epoch 0) is seq ");

		ok(window > 1 && epoch >= window, "only metadata was dropped: the window "
		   "started at %llu, the first EPOCH is seq %llu",
		   (unsigned long long)window, (unsigned long long)epoch);
	}
	/*
	 * The hold ends when the agent has read the host's ACK of its last frame held,
	 * which can come after the receiver has every frame: keep the receiver reading
	 * (and acking) until the agent says so.
	 */
	ok(rx_pump(&rx, TIMEOUT_MS, hold_ended), "the hold ends");
	write_pages(10);
	write_stacks(5, false);
	want_pages = rx.pages + 10;
	want_stacks = rx.stacks + 5;
	ok(rx_pump(&rx, TIMEOUT_MS, got_stacks), "streaming goes on after the hold");
	kill(pid, SIGTERM);
	ok(rx_pump(&rx, TIMEOUT_MS, got_bye), "BYE");
	st = wait_exit(pid, TIMEOUT_MS);
	is_int(st, 0, "exit 0");
	ok(log_has("of them to make room): sending a new snapshot and the epoch in effect"),
	   "the room made took the first EPOCH: it goes ahead with the snapshot");
	ok(rx.epochs >= 1 && rx.epoch_list[0] == 0, "epoch 0 reached the host");
	is_int(rx.stack_epoch_errors, 0, "no STACKS frame before the EPOCH it needs");
	is_int(rx.lost_dropped_frames, rx.gap_frames, "LOST.agent_dropped_frames equals the "
	       "gap the receiver saw (%llu)", (unsigned long long)rx.gap_frames);
	is_int(rx.pages_unparsable, 0, "no page before its header_page FORMAT");
	is_int(rx.decode_errors + rx.malformed + rx.dups, 0, "clean stream, no duplicates");
	scenario_end();
}

/*
 * The benchmark (--bench PAGES): full pages written to the FIFOs as fast as the agent
 * drains them (a FIFO blocks its writer, so nothing is lost), received and ACKed at
 * once. Prints pages/s, MB/s on the wire and the agent's CPU time per MB; asserts
 * nothing about time.
 */
static int bench(unsigned pages)
{
	uint8_t page[PAGE];
	uint64_t t0, t1;
	pid_t pid, writer;
	int st;

	if (rx_listen(&rx) < 0)
		return 1;
	pid = start_agent(rx.sock, "-q", NULL, NULL);
	for (int cpu = 0; cpu < NR_CPUS; cpu++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "tracefs/per_cpu/cpu%d/trace_pipe_raw", cpu);
		ring_fd[cpu] = open_writer(rel);
		/* a ring-buffer-sized FIFO (1 MiB, the unprivileged maximum) */
		fcntl(ring_fd[cpu], F_SETPIPE_SZ, 1 << 20);
	}
	delta_fd = open_writer("tracefs/stack_map_delta");
	rx_pump(&rx, TIMEOUT_MS, got_welcomed);
	rx_pump(&rx, 200, NULL);
	memset(page, 0x5a, sizeof(page));
	{
		uint64_t commit = PAGE - 16;

		memcpy(page + 8, &commit, 8);
	}
	t0 = now_ms();
	/* a writer process: blocking FIFO writes are paced by the agent's reads */
	writer = fork();
	if (writer == 0) {
		for (unsigned i = 0; i < pages; i++) {
			memcpy(page, &(uint64_t){ i }, 8);
			memcpy(page + 16, &(uint64_t){ i }, 8);
			write_all(ring_fd[i % NR_CPUS], page, PAGE);
		}
		_exit(0);
	}
	want_pages = pages;
	rx_pump(&rx, 600000, got_pages);
	t1 = now_ms();
	waitpid(writer, NULL, 0);
	kill(pid, SIGTERM);
	rx_pump(&rx, TIMEOUT_MS, got_bye);
	st = wait_exit(pid, TIMEOUT_MS);
	printf("bench: %u pages (%.1f MB on the wire) in %" PRIu64 " ms: %.0f pages/s, "
	       "%.1f MB/s; agent CPU %.0f ms (%.1f ms per MB), %" PRIu64 " writes, "
	       "exit %d, decode errors %u\n", pages, rx.bytes_rx / 1e6, t1 - t0,
	       pages * 1000.0 / (double)(t1 - t0 ? t1 - t0 : 1),
	       rx.bytes_rx / 1e3 / (double)(t1 - t0 ? t1 - t0 : 1), rx.agent_cpu_ns / 1e6,
	       rx.agent_cpu_ns / 1e6 / (rx.bytes_rx / 1e6), rx.agent_writes, st,
	       rx.decode_errors);
	return st == 0 && rx.decode_errors == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	char cmd[700];
	const char *tmp = getenv("TMPDIR");
	int bench_pages = 0;

	if (argc == 4 && strcmp(argv[2], "--bench") == 0)
		bench_pages = atoi(argv[3]);
	else if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-stackmap-guestd [--bench PAGES]\n", argv[0]);
		return 2;
	}
	agent_bin = argv[1];
	signal(SIGPIPE, SIG_IGN);
	snprintf(root, sizeof(root), "%s/smg-it-XXXXXX", tmp ? tmp : ".");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	make_tree();
	if (bench_pages > 0) {
		int r = bench((unsigned)bench_pages);

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			printf("# cleanup failed\n");
		return r;
	}
	scenario_main();
	scenario_drop();
	scenario_slow();
	scenario_late_meta();
	{
		/* the agent's log of the last scenario, as TAP comments, for the test log */
		snprintf(cmd, sizeof(cmd), "sed 's/^/# agent: /' '%s/agent.log'", root);
		if (system(cmd) != 0)
			printf("# (no agent log)\n");
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return tap_done();
}
