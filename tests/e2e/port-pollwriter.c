// SPDX-License-Identifier: MIT
/*
 * port-pollwriter - the poll() + O_NONBLOCK writer of the e2e test
 * port-backpressure (runs in the guest; guest-kernel patch 0016).
 *
 * Usage: port-pollwriter DEVICE FILE CHUNK
 *
 * Writes FILE to DEVICE (a virtio-serial port, /dev/vportNpM) opened with
 * O_NONBLOCK, CHUNK bytes per write(), as stackmap-guestd writes its frames:
 * a write that fails with EAGAIN waits in poll(POLLOUT) with no timeout and is
 * tried again. Prints "wrote=BYTES eagain=N polls=N" and exits 0 once every
 * byte is written; exits 1 on any error. A wake-up the kernel loses leaves it
 * in poll() for good: the host's bounded wait for the bytes fails the test.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long eagain = 0, polls = 0;
	size_t size, done = 0, chunk;
	struct stat st;
	char *buf;
	int in, out;

	if (argc != 4) {
		fprintf(stderr, "usage: port-pollwriter DEVICE FILE CHUNK\n");
		return 1;
	}
	chunk = strtoul(argv[3], NULL, 0);
	in = open(argv[2], O_RDONLY);
	if (in < 0 || fstat(in, &st) < 0 || !chunk) {
		perror(argv[2]);
		return 1;
	}
	size = st.st_size;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 1;
	while (done < size) {
		ssize_t n = read(in, buf + done, size - done);

		if (n <= 0) {
			perror("read");
			return 1;
		}
		done += n;
	}
	close(in);

	out = open(argv[1], O_WRONLY | O_NONBLOCK);
	if (out < 0) {
		perror(argv[1]);
		return 1;
	}
	done = 0;
	while (done < size) {
		size_t len = size - done < chunk ? size - done : chunk;
		ssize_t n = write(out, buf + done, len);

		if (n > 0) {
			done += n;
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = out, .events = POLLOUT };

			eagain++;
			do {
				polls++;
				n = poll(&p, 1, -1);
			} while (n < 0 && errno == EINTR);
			if (n < 0) {
				perror("poll");
				return 1;
			}
			if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) {
				fprintf(stderr, "poll: revents 0x%x\n", p.revents);
				return 1;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		perror("write");
		return 1;
	}
	printf("wrote=%zu eagain=%lu polls=%lu\n", done, eagain, polls);
	return 0;
}
