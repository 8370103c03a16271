/* SPDX-License-Identifier: MIT */
/*
 * tap.h - the smallest TAP producer: ok()/is_int() record one test point each, and
 * tap_done() prints the plan and returns the exit status. Used by every unit test so
 * meson (protocol 'tap') counts individual checks.
 */
#ifndef SMP_TAP_H
#define SMP_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

static unsigned tap_n, tap_failed;

__attribute__((format(printf, 2, 3)))
static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	printf("%s %u - ", cond ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

#define is_int(got, want, ...) do {						\
	long long g_ = (long long)(got), w_ = (long long)(want);		\
	if (!ok(g_ == w_, __VA_ARGS__))						\
		printf("#   got %lld, want %lld (%s)\n", g_, w_, #got);		\
} while (0)

static inline int tap_done(void)
{
	printf("1..%u\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
