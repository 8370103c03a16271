/* SPDX-License-Identifier: MIT */
/* tap.h - minimal TAP output for the host-agent unit tests. */
#ifndef HA_TAP_H
#define HA_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

/* A description's first line follows "ok N - "; any further lines (a format text
 * quoted in the message) become "# " diagnostics, so the stream stays TAP. */
__attribute__((format(printf, 1, 2)))
static inline void tap_desc(const char *fmt, ...)
{
	char buf[4096];
	const char *p = buf, *nl;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	nl = strchr(p, '\n');
	printf("%.*s\n", nl ? (int)(nl - p) : (int)strlen(p), p);
	while (nl) {
		p = nl + 1;
		nl = strchr(p, '\n');
		if (!nl && !*p)
			break;
		printf("# %.*s\n", nl ? (int)(nl - p) : (int)strlen(p), p);
	}
}

#define CHECK(cond, ...) do {						\
	tap_n++;							\
	if (cond) {							\
		printf("ok %d - ", tap_n);				\
	} else {							\
		tap_failed++;						\
		printf("not ok %d - %s:%d: ", tap_n, __FILE__, __LINE__); \
	}								\
	tap_desc(__VA_ARGS__);						\
} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
