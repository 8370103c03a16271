// SPDX-License-Identifier: MIT
/*
 * rawreader - reads one CPU's per_cpu/cpuN/trace_pipe_raw while it writes
 * events to that CPU's buffer, and counts the pages that carry RB_CAUGHT_UP
 * (guest-kernel patch 0017), for tests/e2e's rb-read-page. Static: the
 * initramfs has busybox only.
 *
 *   rawreader TRACEFS CPU plain|ask ROUNDS
 *
 * Pinned to CPU, each round writes a few trace_marker events (so onto CPU's
 * buffer) and reads the file (O_NONBLOCK) a page at a time until EAGAIN.
 * "ask" first issues ioctl(TRACE_PIPE_RAW_IOC_CAUGHT_UP, 1) on the open file;
 * "plain" issues nothing, as a reader that predates the ioctl. Prints
 *
 *   RAWREAD mode=M ioctl=R pages=N caught_up=C bad=B after_flag=A
 *
 * R: the ioctl's result (0, or -errno; "-" for plain); C: pages with bit 29
 * of the commit field; B: pages whose commit field is beyond the page once
 * the two missed-events bits are cleared ("plain", as an older
 * stackmap-guestd does) and bit 29 too ("ask"); A: flagged pages after which the next read still gave data (it
 * should have failed with EAGAIN: nothing else writes to the buffer).
 * Exit status 0 when the file could be read, else 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The patched kernel's include/uapi/linux/trace_pipe_raw.h */
#define TRACE_PIPE_RAW_IOC_CAUGHT_UP _IO('R', 0x30)
#define RB_CAUGHT_UP (1ull << 29)
#define RB_MISSED_FLAGS (3ull << 30)

int main(int argc, char **argv)
{
	unsigned long pages = 0, caught = 0, bad = 0, after_flag = 0;
	long page_size = sysconf(_SC_PAGESIZE);
	int cpu, rounds, fd, mfd, ioctl_rc = 0, ask;
	char path[512], ioctl_str[16] = "-";
	cpu_set_t set;
	uint8_t *page;

	if (argc != 5) {
		fprintf(stderr, "usage: rawreader TRACEFS CPU plain|ask ROUNDS\n");
		return 2;
	}
	cpu = atoi(argv[2]);
	ask = strcmp(argv[3], "ask") == 0;
	rounds = atoi(argv[4]);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		perror("sched_setaffinity");
		return 1;
	}
	page = malloc(page_size);
	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", argv[1], cpu);
	fd = open(path, O_RDONLY | O_NONBLOCK);
	if (fd < 0 || !page) {
		perror(path);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/trace_marker", argv[1]);
	mfd = open(path, O_WRONLY);
	if (mfd < 0) {
		perror(path);
		return 1;
	}
	if (ask) {
		ioctl_rc = ioctl(fd, TRACE_PIPE_RAW_IOC_CAUGHT_UP, 1UL) ? -errno : 0;
		snprintf(ioctl_str, sizeof(ioctl_str), "%d", ioctl_rc);
	}
	for (int r = 0; r < rounds; r++) {
		int flagged = 0;

		/* 1 to 40 events: some rounds fill a page or more */
		for (int i = 0; i < 1 + (r * 7) % 40; i++) {
			char msg[64];
			int n = snprintf(msg, sizeof(msg), "rawreader %d %d", r, i);

			if (write(mfd, msg, n) != n) {
				perror("trace_marker");
				return 1;
			}
		}
		for (;;) {
			ssize_t n = read(fd, page, page_size);
			uint64_t commit;

			if (n < 0 && errno == EAGAIN)
				break;
			if (n < 0) {
				perror("read");
				return 1;
			}
			if (n != page_size) {
				fprintf(stderr, "short read %zd\n", n);
				return 1;
			}
			if (flagged)
				after_flag++;
			pages++;
			memcpy(&commit, page + 8, sizeof(commit));
			flagged = !!(commit & RB_CAUGHT_UP);
			caught += flagged;
			if ((commit & ~(RB_MISSED_FLAGS | (ask ? RB_CAUGHT_UP : 0))) >
			    (uint64_t)page_size - 16)
				bad++;
		}
	}
	printf("RAWREAD mode=%s ioctl=%s pages=%lu caught_up=%lu bad=%lu after_flag=%lu\n",
	       argv[3], ioctl_str, pages, caught, bad, after_flag);
	return 0;
}
