// SPDX-License-Identifier: MIT
/*
 * metadata.c - the stream's metadata: FORMAT of every event format the pages need,
 * KSYMS and MODULES (a new generation of both when the module list changes), and
 * CMDLINES, the kernel's saved task names (whole, then what changed). Every call
 * queues into the window it is given: the agent's own, or the front window that
 * goes ahead of held frames after a gap (recover.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "sysinfo.h"
#include "util.h"

/* Text chunk size: a KSYMS/MODULES frame fits one 32 KiB port write. */
#define TEXT_CHUNK (32u * 1024u - SMP_HDR_SIZE - SMP_TEXT_FIXED)
#define KALLSYMS_MAX (128u * 1024u * 1024u)
/* saved_cmdlines at its largest (saved_cmdlines_size 32768, "PID COMM\n" each) */
#define CMDLINES_FILE_MAX (1024u * 1024u)

static bool list_has(const char *list, size_t len, const char *name)
{
	for (size_t off = 0; off < len; off += strlen(list + off) + 1)
		if (strcmp(list + off, name) == 0)
			return true;
	return false;
}

static size_t list_count(const char *list, size_t len)
{
	size_t n = 0;

	for (size_t off = 0; off < len; off += strlen(list + off) + 1)
		n++;
	return n;
}

static int list_push(struct agent *a, const char *name)
{
	size_t n = strlen(name) + 1;
	char *p = realloc(a->formats, a->formats_len + n);

	if (!p)
		return -ENOMEM;
	memcpy(p + a->formats_len, name, n);
	a->formats = p;
	a->formats_len += n;
	return 0;
}

/* Queue one format file into @w, once per stream unless @again. */
static int send_format(struct agent *a, struct win *w, const char *name, bool again)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	if (!again && list_has(a->formats, a->formats_len, name))
		return 0;
	r = tracefs_read_format(a->tracefs, name, &text, &len);
	if (r < 0) {
		log_debug("no format for %s: %s", name, strerror(-r));
		return r;
	}
	if (len == 0)
		return -ENODATA;
	r = stream_format(w, name, text, len);
	if (r < 0) {
		log_warning("cannot send the format of %s: %s", name, strerror(-r));
		return r;
	}
	if (!again)
		return list_push(a, name);
	return 0;
}

static void send_formats_of(struct agent *a, struct win *w, char *names, size_t nr)
{
	const char *p = names;

	for (size_t i = 0; i < nr; i++, p += strlen(p) + 1)
		(void)send_format(a, w, p, false);
}

/* Formats of newly enabled events (set_event). */
static void send_new_formats(struct agent *a, struct win *w)
{
	_cleanup_free_ char *names = NULL;
	size_t nr;

	if (tracefs_enabled_events(a->tracefs, &names, &nr) == 0)
		send_formats_of(a, w, names, nr);
}

static void send_ksyms(struct agent *a, struct win *w)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = read_file_at(a->o.procfs, "kallsyms", KALLSYMS_MAX, &text, &len);
	if (r < 0) {
		log_warning("cannot read kallsyms: %s (no KSYMS sent)", strerror(-r));
		return;
	}
	if (len > a->o.window_kb * 1024 / 2)
		log_once(LOG_WARNING, "kallsyms is %zu KiB, more than half of the %lu KiB "
			 "window: raise --window-kb, or KSYMS may be cut while the host is "
			 "away", len / 1024, a->o.window_kb);
	/* HELLO's _text comes from the same read: kallsyms is costly to generate */
	if (sysinfo_text_addr(text, &a->text_addr) < 0)
		log_once(LOG_WARNING, "no _text in kallsyms: HELLO carries text_addr 0");
	a->ksyms_len = len;
	r = stream_text(w, SMP_KSYMS, a->ksyms_gen, text, len, TEXT_CHUNK);
	if (r < 0)
		log_warning("cannot queue KSYMS: %s", strerror(-r));
}

static void send_modules(struct agent *a, struct win *w, char *text, size_t len)
{
	int r = stream_text(w, SMP_MODULES, a->modules_gen, text, len, TEXT_CHUNK);

	a->modules_len = len;
	if (r < 0)
		log_warning("cannot queue MODULES: %s", strerror(-r));
}

void agent_send_cmdlines(struct agent *a, struct win *w, bool full)
{
	_cleanup_free_ char *text = NULL, *lines = NULL;
	size_t len, n;
	int r;

	r = read_file_at(a->tracefs, "saved_cmdlines", CMDLINES_FILE_MAX, &text, &len);
	if (r < 0) {
		log_once(LOG_NOTICE, "cannot read %s/saved_cmdlines: %s (no CMDLINES sent: the "
			 "host's exports name tasks by pid only)", a->tracefs, strerror(-r));
		return;
	}
	r = cmdlines_diff(&a->cmdlines, text, len, full, &lines, &n);
	if (r < 0 || n == 0)
		return;
	r = stream_text(w, SMP_CMDLINES, a->cmdlines_gen++, lines, n, TEXT_CHUNK);
	if (r < 0) {
		log_warning("cannot queue CMDLINES: %s", strerror(-r));
		cmdlines_clear(&a->cmdlines);	/* the next one carries the whole table */
	}
}

int agent_send_metadata(struct agent *a, struct win *w, bool regen)
{
	_cleanup_free_ char *mods = NULL, *ftrace = NULL, *enabled = NULL;
	struct win_stats ws;
	size_t len = 0, nr;
	uint64_t lo;

	win_get_stats(w, &ws);
	lo = ws.next_seq;
	if (regen) {
		a->ksyms_gen++;
		a->modules_gen++;
		for (size_t off = 0; off < a->formats_len; off += strlen(a->formats + off) + 1)
			(void)send_format(a, w, a->formats + off, true);
	} else {
		(void)send_format(a, w, "header_page", false);
		(void)send_format(a, w, "header_event", false);
		(void)send_format(a, w, "ftrace/stack_id", false);
		(void)send_format(a, w, "ftrace/kernel_stack", false);
		/* the rest of ftrace's own events (function, print, ...), all small */
		if (tracefs_system_events(a->tracefs, "ftrace", &ftrace, &nr) == 0)
			send_formats_of(a, w, ftrace, nr);
	}
	if (tracefs_enabled_events(a->tracefs, &enabled, &nr) == 0)
		send_formats_of(a, w, enabled, nr);
	/*
	 * The module list first: it is what modules_rescan() compares with, so a
	 * module loaded while kallsyms is read shows up as a change there and gets
	 * its KSYMS. Read after kallsyms, it would already list that module while
	 * the KSYMS sent lacks its symbols, and no rescan would ever send them.
	 */
	if (read_file_at(a->o.procfs, "modules", KALLSYMS_MAX, &mods, &len) < 0) {
		mods = strdup("");
		if (!mods)
			return -ENOMEM;
		len = 0;
	}
	send_ksyms(a, w);
	send_modules(a, w, mods, len);
	free(a->modules);
	a->modules = mods;
	mods = NULL;
	agent_send_cmdlines(a, w, true);
	win_get_stats(w, &ws);
	log_info("metadata queued: %zu formats, KSYMS generation %" PRIu32 ", MODULES "
		 "generation %" PRIu32 " (%" PRIu64 " frames)",
		 list_count(a->formats, a->formats_len),
		 a->ksyms_gen, a->modules_gen, ws.next_seq - lo);
	return 0;
}

/*
 * The next line of /proc/modules from *@p, and its fields that say which symbols
 * kallsyms has: name, size, state and address (module_kallsyms_on_each_symbol()
 * changes with them). The use count and the users ("name size refs users state
 * addr") change whenever a task opens a file the module owns (a debugfs or device
 * node): a new KSYMS for those would send the whole kallsyms again and again.
 */
static bool module_line(const char **p, char key[4][96])
{
	const char *l = *p, *end;
	int f = 0;

	memset(key, 0, sizeof(char[4][96]));
	if (!*l)
		return false;
	end = strchrnul(l, '\n');
	*p = *end ? end + 1 : end;
	for (int i = 0; i < 6 && l < end; i++) {
		size_t n = strcspn(l, " \n");

		if (n > (size_t)(end - l))
			n = (size_t)(end - l);
		if (i != 2 && i != 3) {
			snprintf(key[f], sizeof(key[f]), "%.*s", (int)n, l);
			f++;
		}
		l += n;
		l += strspn(l, " ");
	}
	return true;
}

/* Would kallsyms list other module symbols with module list @b than with @a? */
static bool modules_differ(const char *a, const char *b)
{
	char ka[4][96], kb[4][96];
	bool ha, hb;

	for (;;) {
		ha = module_line(&a, ka);
		hb = module_line(&b, kb);
		if (ha != hb)
			return true;
		if (!ha)
			return false;
		if (memcmp(ka, kb, sizeof(ka)))
			return true;
	}
}

static void modules_rescan(struct agent *a, struct win *w)
{
	_cleanup_free_ char *mods = NULL;
	size_t len;

	if (read_file_at(a->o.procfs, "modules", KALLSYMS_MAX, &mods, &len) < 0)
		return;
	if (a->modules && !strcmp(a->modules, mods))
		return;
	if (a->modules && !modules_differ(a->modules, mods)) {
		/* the same symbols: compare the next reads with this one (strcmp() alone) */
		free(a->modules);
		a->modules = mods;
		mods = NULL;
		return;
	}
	a->ksyms_gen++;
	a->modules_gen++;
	log_info("module list changed: KSYMS and MODULES generation %" PRIu32,
		 a->modules_gen);
	send_ksyms(a, w);
	send_modules(a, w, mods, len);
	free(a->modules);
	a->modules = mods;
	mods = NULL;
}

void agent_rescan_metadata(struct agent *a, struct win *w)
{
	send_new_formats(a, w);
	modules_rescan(a, w);
	agent_send_cmdlines(a, w, false);
}
