// SPDX-License-Identifier: MIT
/*
 * log.c - see log.h.
 */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static int log_level = LOG_INFO;

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

void log_msg(int level, const char *fmt, ...)
{
	static const char *const names[] = {
		[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
		[LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
		[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
	};
	char line[1024];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One fprintf per line: lines from the agent never interleave mid-line. */
	fprintf(stderr, "stackmap-guestd: %s: %s\n",
		level >= 0 && level <= LOG_DEBUG ? names[level] : "?", line);
}
