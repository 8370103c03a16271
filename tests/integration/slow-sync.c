// SPDX-License-Identifier: MIT
/*
 * slow-sync.so - a stalled disk for one file, for the integration tests (LD_PRELOAD).
 *
 * fsync() and fdatasync() of a file whose path contains $SLOWSYNC_MATCH block while the
 * file $SLOWSYNC_GATE exists, as on a disk that stopped answering: the data is written
 * (in the page cache), its sync does not return. While one is blocked the file
 * "$SLOWSYNC_GATE.held" exists, so that a test can wait for that state; removing the
 * gate lets every blocked sync go on. With $SLOWSYNC_DELAY_MS instead, each such sync
 * takes that many milliseconds more (a slow disk; host-bench --slow-sync), except the
 * first $SLOWSYNC_SKIP of them (say, those of opening the store). Other files sync as
 * usual.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int matches(int fd)
{
	const char *match = getenv("SLOWSYNC_MATCH");
	char link[64], path[PATH_MAX];
	ssize_t n;

	if (!match || !*match)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return 0;
	path[n] = 0;
	return strstr(path, match) != NULL;
}

/* Block while the gate exists (polled: a stalled disk has nobody to wake us). */
static void stall(int fd)
{
	const char *gate = getenv("SLOWSYNC_GATE");
	const char *delay = getenv("SLOWSYNC_DELAY_MS");
	char held[PATH_MAX];
	int marked = 0;

	if ((!gate && !delay) || !matches(fd))
		return;
	if (delay) {
		static int seen;	/* the matching syncs so far */
		const char *skip = getenv("SLOWSYNC_SKIP");
		long ms = atol(delay);

		if (__atomic_fetch_add(&seen, 1, __ATOMIC_RELAXED) < (skip ? atoi(skip) : 0))
			return;
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
		return;
	}
	snprintf(held, sizeof(held), "%s.held", gate);
	while (access(gate, F_OK) == 0) {
		struct timespec ts = { 0, 1000000 };

		if (!marked) {
			int m = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

			if (m >= 0)
				close(m);
			marked = 1;
		}
		nanosleep(&ts, NULL);
	}
	if (marked)
		unlink(held);
}

int fsync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	stall(fd);
	return real(fd);
}

int fdatasync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	stall(fd);
	return real(fd);
}
