/* SPDX-License-Identifier: MIT */
/*
 * log.h - the agent's log: one line per message on stderr, prefixed with the program
 * name and a level, so the guest's console or journald shows it as is.
 */
#ifndef SMG_LOG_H
#define SMG_LOG_H

#include <syslog.h>

/* LOG_ERR .. LOG_DEBUG; messages above the level are not printed (default LOG_INFO). */
void log_set_level(int level);
int log_get_level(void);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...)	log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)	log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

/* Log a line at most once per call site (for conditions that repeat). */
#define log_once(level, ...) do {				\
	static int logged_;					\
	if (!logged_) {						\
		logged_ = 1;					\
		log_msg(level, __VA_ARGS__);			\
	}							\
} while (0)

#endif
