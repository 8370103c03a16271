// SPDX-License-Identifier: MIT
/*
 * test-port.c - port discovery on a fake sysfs tree, and the parsers of what the agent
 * reads from tracefs, procfs and sysfs (header_page, trace_clock, stack_map_stat,
 * per-CPU stats, set_event, boot_id, the build-id note, _text), and when the page map
 * is read again: the page-move counters of /proc/vmstat.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port.h"
#include "sysinfo.h"
#include "tap.h"
#include "tracefs.h"

static char root[256];

static void put(const char *rel, const char *text)
{
	char path[512], cmd[600];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	if (system(cmd) != 0)
		abort();
	FILE *f = fopen(path, "w");

	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

static void test_discovery(void)
{
	char sysfs[300], ret[512];

	snprintf(sysfs, sizeof(sysfs), "%s/sys", root);
	is_int(port_find(sysfs, "/dev", "org.stackmap.0", ret, sizeof(ret)), -ENOENT,
	       "no class directory: -ENOENT");
	put("sys/class/virtio-ports/vport0p0/name", "\n");
	put("sys/class/virtio-ports/vport0p1/name", "org.qemu.guest_agent.0\n");
	put("sys/class/virtio-ports/vport1p1/name", "org.stackmap.0.extra\n");
	put("sys/class/virtio-ports/vport1p2/name", "org.stackmap.0\n");
	put("sys/class/virtio-ports/vport2p1/name", "org.stackmap.1\n");
	is_int(port_find(sysfs, "/dev", "org.stackmap.0", ret, sizeof(ret)), 0,
	       "org.stackmap.0 found");
	is_int(strcmp(ret, "/dev/vport1p2"), 0, "it is /dev/vport1p2 (got %s)", ret);
	is_int(port_find(sysfs, "/devx", "org.stackmap.1", ret, sizeof(ret)), 0,
	       "another name");
	is_int(strcmp(ret, "/devx/vport2p1"), 0, "under the given devdir (got %s)", ret);
	is_int(port_find(sysfs, "/dev", "org.stackmap", ret, sizeof(ret)), -ENOENT,
	       "prefixes do not match");
	is_int(port_find(sysfs, "/dev", "org.stackmap.9", ret, sizeof(ret)), -ENOENT,
	       "an absent name: -ENOENT");
}

static const char header_page_64[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

static void test_parsers(void)
{
	struct page_layout pl;
	struct map_stat ms;
	struct smp_lost_cpu c = { .cpu = 3 };
	uint8_t id[16], bid[64], notes[64];
	uint64_t addr;
	char clock[64];

	is_int(tracefs_parse_header_page(header_page_64, &pl), 0, "header_page parses");
	ok(pl.page_size == 4096 && pl.commit_off == 8 && pl.commit_size == 8 &&
	   pl.data_off == 16, "64-bit layout: page 4096, commit 8/8, data 16");
	is_int(tracefs_parse_header_page("\tfield: u64 timestamp;\toffset:0;\tsize:8;\n",
					 &pl), -EBADMSG, "incomplete header_page refused");

	is_int(tracefs_parse_clock("local [global] counter uptime perf mono\n", clock,
				   sizeof(clock)), 0, "trace_clock parses");
	is_int(strcmp(clock, "global"), 0, "the bracketed clock");
	is_int(tracefs_parse_clock("local global\n", clock, sizeof(clock)), -EBADMSG,
	       "no selection refused");

	is_int(tracefs_parse_map_stat("entries:      12 / 16384\ntable_size:   32768\n"
				      "successes:    100\ndrops:        3\n"
				      "success_rate: 97%\n", &ms), 0, "seed stack_map_stat");
	ok(ms.present && ms.entries == 12 && ms.capacity == 16384 && ms.map_bits == 14 &&
	   ms.successes == 100 && ms.drops == 3 && !ms.has_epoch && ms.max_depth == 64,
	   "entries, capacity, bits 14, counters, no epoch line");
	is_int(tracefs_parse_map_stat("entries: 1 / 1024\nepoch:        7\n", &ms), 0,
	       "with the epoch extension");
	ok(ms.has_epoch && ms.epoch == 7 && ms.map_bits == 10, "epoch 7, bits 10");
	is_int(tracefs_parse_map_stat("stackmap not initialized\n", &ms), -EBADMSG,
	       "uninitialised map refused");
	is_int(tracefs_parse_map_stat("entries: 1 / 1000\n", &ms), -EBADMSG,
	       "non-power-of-two capacity refused");

	is_int(tracefs_parse_cpu_stats("entries: 10\noverrun: 4\ncommit overrun: 1\n"
				       "bytes: 100\noldest event ts: 1.0\nnow ts: 2.0\n"
				       "dropped events: 2\nread events: 99\n", &c), 0,
	       "per-CPU stats parse");
	ok(c.cpu == 3 && c.overrun == 4 && c.commit_overrun == 1 && c.dropped_events == 2 &&
	   c.read_events == 99, "overrun 4, commit overrun 1, dropped 2, read 99");

	/* page moves: pgmigrate_success + thp_collapse_alloc, and when they say "read" */
	{
		struct sysinfo_moves m = { 0 };
		uint64_t v = 0;
		bool seq[8];

		is_int(sysinfo_parse_moves("nr_free_pages 100\npgmigrate_success 7\n"
					   "pgmigrate_fail 3\nthp_collapse_alloc 2\n"
					   "thp_collapse_alloc_failed 9\n", &v), 0, "vmstat parses");
		is_int(v, 9, "moves: pgmigrate_success + thp_collapse_alloc, not the failures");
		is_int(sysinfo_parse_moves("nr_free_pages 1\npgmigrate_success 5\n", &v), 0,
		       "without THP: pgmigrate_success alone");
		is_int(v, 5, "moves 5");
		is_int(sysinfo_parse_moves("nr_free_pages 1\npgmigrate_success_x 5\n"
					   "thp_collapse_alloc 1\n", &v), 0,
		       "without migration (CONFIG_MIGRATION off): collapses only");
		is_int(v, 1, "moves 1");
		is_int(sysinfo_parse_moves("nr_free_pages 1\n", &v), 0,
		       "neither migration nor THP: no moves");
		is_int(v, 0, "moves 0");
		is_int(sysinfo_parse_moves("pgmigrate_success 5\n", &v), -EBADMSG,
		       "not vmstat (no nr_free_pages): refused");
		is_int(sysinfo_parse_moves("nr_free_pages 1\npgmigrate_success x\n", &v),
		       -EBADMSG, "a value that is not a number refused");
		/* checks with sums 5 5 5 5 6 6 6 7, an unreadable one, 7 7 7 */
		seq[0] = sysinfo_moves_step(&m, 0, 5);
		seq[1] = sysinfo_moves_step(&m, 0, 5);
		seq[2] = sysinfo_moves_step(&m, 0, 5);
		seq[3] = sysinfo_moves_step(&m, 0, 5);
		ok(seq[0] && seq[1] && !seq[2] && !seq[3],
		   "the first two checks read the page map, then not while the sum stays");
		seq[4] = sysinfo_moves_step(&m, 0, 6);
		seq[5] = sysinfo_moves_step(&m, 0, 6);
		seq[6] = sysinfo_moves_step(&m, 0, 6);
		ok(seq[4] && seq[5] && !seq[6], "a move: read at that check and the next "
		   "(a collapse counted before its copy), then not");
		seq[7] = sysinfo_moves_step(&m, 0, 7);
		ok(seq[7] && sysinfo_moves_step(&m, -ENOENT, 0) &&
		   sysinfo_moves_step(&m, 0, 7) && sysinfo_moves_step(&m, 0, 7) &&
		   !sysinfo_moves_step(&m, 0, 7),
		   "a check that cannot read vmstat reads the page map, and the two after it");
	}

	is_int(sysinfo_parse_uuid("0123abcd-4567-89ef-0123-456789abcdef\n", id), 0,
	       "boot_id parses");
	ok(id[0] == 0x01 && id[3] == 0xcd && id[15] == 0xef, "binary UUID bytes");
	is_int(sysinfo_parse_uuid("0123-zz\n", id), -EBADMSG, "bad boot_id refused");

	/* two notes: a Xen one, then GNU build-id */
	{
		uint32_t hdr[3];
		size_t off = 0;

		memset(notes, 0, sizeof(notes));
		hdr[0] = 4; hdr[1] = 4; hdr[2] = 1;
		memcpy(notes + off, hdr, 12); off += 12;
		memcpy(notes + off, "Xen", 4); off += 4;
		off += 4;
		hdr[0] = 4; hdr[1] = 20; hdr[2] = 3;
		memcpy(notes + off, hdr, 12); off += 12;
		memcpy(notes + off, "GNU", 4); off += 4;
		for (int i = 0; i < 20; i++)
			notes[off + i] = (uint8_t)(0xa0 + i);
		off += 20;
		is_int(sysinfo_parse_build_id(notes, off, bid, sizeof(bid)), 20,
		       "20-byte build-id found after another note");
		ok(bid[0] == 0xa0 && bid[19] == 0xb3, "build-id bytes");
		is_int(sysinfo_parse_build_id(notes, off - 1, bid, sizeof(bid)), -EBADMSG,
		       "truncated note refused");
	}
	is_int(sysinfo_text_addr("0000000000000000 A fixed_percpu_data\n"
				 "ffffffff81000000 T _text_foo\n"
				 "ffffffffa0000000 t _text\t[mod]\n"
				 "ffffffff81200000 T _text\n"
				 "ffffffff81200010 T _stext\n", &addr), 0, "_text found");
	is_int(addr, 0xffffffff81200000ull, "the kernel's _text, not a module's or a prefix");
	is_int(sysinfo_text_addr("ffffffff81200010 T _stext\n", &addr), -ENOENT,
	       "no _text: -ENOENT");
}

static void test_set_event(void)
{
	char *names;
	size_t nr;

	put("t/set_event", "kmem:kmalloc\nsched:sched_switch\nbogus\n");
	{
		char t[300];

		snprintf(t, sizeof(t), "%s/t", root);
		is_int(tracefs_enabled_events(t, &names, &nr), 0, "set_event parses");
		is_int(nr, 2, "two events (a line without ':' ignored)");
		ok(strcmp(names, "kmem/kmalloc") == 0 &&
		   strcmp(names + strlen(names) + 1, "sched/sched_switch") == 0,
		   "as sys/event names");
		free(names);
	}
}

static char *slurp(const char *rel)
{
	char path[512], *buf = calloc(1, 4096);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "r");
	if (f) {
		if (fread(buf, 1, 4095, f) == 0)
			buf[0] = '\0';
		fclose(f);
	}
	return buf;
}

static void test_setup(void)
{
	struct tracefs_setup none = { 0 }, all = {
		.events = "kmem:kmalloc,sched:sched_switch", .stacktrace = true,
		.stackmap = true, .buffer_kb = 2048,
	};
	char t[300], *v;

	put("s/set_event", "");
	put("s/buffer_size_kb", "1408\n");
	put("s/tracing_on", "0\n");
	put("s/options/stacktrace", "0\n");
	put("s/options/stackmap", "0\n");
	snprintf(t, sizeof(t), "%s/s", root);
	is_int(tracefs_apply_setup(t, &none), 0, "an empty setup");
	v = slurp("s/tracing_on");
	ok(strcmp(v, "0\n") == 0, "an empty setup writes nothing");
	free(v);
	is_int(tracefs_apply_setup(t, &all), 0, "a full setup");
	v = slurp("s/set_event");
	ok(strcmp(v, "kmem:kmallocsched:sched_switch") == 0,
	   "each event appended to set_event (%s)", v);
	free(v);
	v = slurp("s/buffer_size_kb");
	ok(strcmp(v, "2048") == 0, "buffer_size_kb set");
	free(v);
	v = slurp("s/options/stacktrace");
	ok(strcmp(v, "1") == 0, "stacktrace on");
	free(v);
	v = slurp("s/options/stackmap");
	ok(strcmp(v, "1") == 0, "stackmap on");
	free(v);
	v = slurp("s/tracing_on");
	ok(strcmp(v, "1") == 0, "tracing_on");
	free(v);
	all.stackmap = false;
	put("s/options/stackmap", "0\n");
	snprintf(t, sizeof(t), "%s/none", root);
	ok(tracefs_apply_setup(t, &all) < 0, "a missing tracefs knob is an error");
}

int main(void)
{
	char cmd[300];

	/* $TMPDIR, else the working directory (meson runs tests in the build tree) */
	snprintf(root, sizeof(root), "%s/smg-port-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : ".");
	if (!mkdtemp(root))
		return 1;
	test_discovery();
	test_parsers();
	test_set_event();
	test_setup();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	return tap_done();
}
