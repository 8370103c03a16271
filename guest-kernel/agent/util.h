/* SPDX-License-Identifier: MIT */
/*
 * util.h - small helpers shared by the agent's modules: cleanup attributes in the
 * systemd style, -errno helpers, whole-file reads and writes, a monotonic clock.
 *
 * Every function returns 0 (or a size) on success and a negative errno on failure;
 * ret_* out-parameters are left untouched on failure.
 */
#ifndef SMG_UTIL_H
#define SMG_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;

		close(*fd);
		errno = saved;
	}
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* The current errno as a negative value, never 0. */
static inline int negerrno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* Hand an fd out of a _cleanup_close_ variable. */
static inline int take_fd(int *fd)
{
	int r = *fd;

	*fd = -1;
	return r;
}

/*
 * Read a whole file (of at most @max bytes) into a NUL-terminated buffer the caller
 * frees with free(). Works for procfs/sysfs/tracefs files whose size is 0 in stat().
 * -EFBIG when the file is longer than @max.
 */
int read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* read_file() of @rel under the directory @root. */
int read_file_at(const char *root, const char *rel, size_t max, char **ret,
		 size_t *ret_len);

/* Write @s to an existing file (sysfs/tracefs knobs); @append opens with O_APPEND. */
int write_file(const char *path, const char *s, int append);

/* snprintf into @buf, -ENAMETOOLONG when it does not fit. */
int path_fmt(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* CLOCK_MONOTONIC in nanoseconds and milliseconds. */
uint64_t now_ns(void);
static inline uint64_t now_ms(void)
{
	return now_ns() / 1000000u;
}

/* Process CPU time (user + system) in nanoseconds. */
uint64_t cpu_time_ns(void);

/* Parse an unsigned decimal that must fill the whole string; -EINVAL otherwise. */
int parse_u64(const char *s, uint64_t *ret);

#endif
