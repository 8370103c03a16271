// SPDX-License-Identifier: MIT
/*
 * util.c - whole-file helpers, clocks and number parsing (see util.h).
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "util.h"

int read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 4096;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= max)
				return -EFBIG;
			cap = MIN(cap * 2, max);
			nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negerrno();
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret = buf;
	buf = NULL;
	if (ret_len)
		*ret_len = len;
	return 0;
}

int read_file_at(const char *root, const char *rel, size_t max, char **ret,
		 size_t *ret_len)
{
	char path[4096];
	int r = path_fmt(path, sizeof(path), "%s/%s", root, rel);

	return r < 0 ? r : read_file(path, max, ret, ret_len);
}

int write_file(const char *path, const char *s, int append)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(s);
	ssize_t n;

	fd = open(path, O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
	if (fd < 0)
		return negerrno();
	n = write(fd, s, len);
	if (n < 0)
		return negerrno();
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

int path_fmt(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= cap)
		return -ENAMETOOLONG;
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cpu_time_ns(void)
{
	struct rusage ru;

	/* getrusage, not CLOCK_PROCESS_CPUTIME_ID: small guests run without POSIX_TIMERS */
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

int parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*ret = v;
	return 0;
}
