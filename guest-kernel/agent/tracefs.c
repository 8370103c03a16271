// SPDX-License-Identifier: MIT
/*
 * tracefs.c - reading and writing tracefs files (see tracefs.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "tracefs.h"
#include "util.h"

/* Find "field: <decl> <name>;" in a format text and read its offset and size. */
static int format_field(const char *text, const char *name, uint32_t *ret_off,
			uint32_t *ret_size)
{
	const char *p = text;
	size_t nl = strlen(name);

	while ((p = strstr(p, "field:")) != NULL) {
		const char *semi = strchr(p, ';');
		const char *q;
		unsigned off, size;

		if (!semi)
			break;
		/* the declaration ends with the field's name right before ';' */
		q = semi;
		while (q > p && (isalnum((unsigned char)q[-1]) || q[-1] == '_'))
			q--;
		if ((size_t)(semi - q) == nl && strncmp(q, name, nl) == 0) {
			const char *o = strstr(semi, "offset:");
			const char *s = strstr(semi, "size:");
			const char *eol = strchr(semi, '\n');

			if (!o || !s || (eol && (o > eol || s > eol)))
				return -EBADMSG;
			if (sscanf(o, "offset:%u", &off) != 1 || sscanf(s, "size:%u", &size) != 1)
				return -EBADMSG;
			*ret_off = off;
			*ret_size = size;
			return 0;
		}
		p = semi;
	}
	return -EBADMSG;
}

int tracefs_parse_header_page(const char *text, struct page_layout *ret)
{
	uint32_t ts_off, ts_size, c_off, c_size, d_off, d_size;

	if (format_field(text, "timestamp", &ts_off, &ts_size) < 0 ||
	    format_field(text, "commit", &c_off, &c_size) < 0 ||
	    format_field(text, "data", &d_off, &d_size) < 0)
		return -EBADMSG;
	if ((c_size != 4 && c_size != 8) || c_off + c_size > d_off || d_off > 64)
		return -EBADMSG;
	if ((uint64_t)d_off + d_size < 4096 || (uint64_t)d_off + d_size > SMP_PAGE_SIZE_MAX)
		return -EBADMSG;
	ret->commit_off = c_off;
	ret->commit_size = c_size;
	ret->data_off = d_off;
	ret->page_size = d_off + d_size;
	return 0;
}

int tracefs_parse_clock(const char *text, char *ret, size_t cap)
{
	const char *b = strchr(text, '['), *e;

	if (!b)
		return -EBADMSG;
	e = strchr(b, ']');
	if (!e || e == b + 1 || (size_t)(e - b - 1) >= cap || e - b - 1 > 255)
		return -EBADMSG;
	memcpy(ret, b + 1, (size_t)(e - b - 1));
	ret[e - b - 1] = '\0';
	return 0;
}

static int key_u64(const char *text, const char *key, uint64_t *ret)
{
	const char *p = text;
	size_t kl = strlen(key);

	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		unsigned long long v;

		if (strncmp(p, key, kl) != 0)
			continue;
		if (sscanf(p + kl, " %llu", &v) != 1)
			return -EBADMSG;
		*ret = v;
		return 0;
	}
	return -ENOENT;
}

int tracefs_parse_map_stat(const char *text, struct map_stat *ret)
{
	struct map_stat m = { .present = true, .max_depth = SMP_DELTA_MAX_DEPTH };
	unsigned long long entries, cap;
	const char *p = strstr(text, "entries:");
	uint64_t v;

	if (!p || sscanf(p, "entries: %llu / %llu", &entries, &cap) != 2)
		return -EBADMSG;
	if (cap == 0 || (cap & (cap - 1)) || cap > (1u << 19))
		return -EBADMSG;
	m.entries = entries;
	m.capacity = cap;
	while ((1ull << m.map_bits) < cap)
		m.map_bits++;
	(void)key_u64(text, "table_size:", &m.table_size);
	(void)key_u64(text, "successes:", &m.successes);
	(void)key_u64(text, "drops:", &m.drops);
	if (key_u64(text, "epoch:", &m.epoch) == 0)
		m.has_epoch = true;
	if (key_u64(text, "max_depth:", &v) == 0 && v > 0 && v <= SMP_DELTA_MAX_DEPTH)
		m.max_depth = (uint32_t)v;
	*ret = m;
	return 0;
}

int tracefs_read_map_stat(const char *root, struct map_stat *ret)
{
	_cleanup_free_ char *text = NULL;
	char path[4096];
	int r;

	r = path_fmt(path, sizeof(path), "%s/stack_map_stat", root);
	if (r < 0)
		return r;
	r = read_file(path, TRACEFS_FILE_MAX, &text, NULL);
	if (r == -ENOENT) {
		memset(ret, 0, sizeof(*ret));
		return 0;
	}
	if (r < 0)
		return r;
	return tracefs_parse_map_stat(text, ret);
}

int tracefs_parse_cpu_stats(const char *text, struct smp_lost_cpu *ret)
{
	struct smp_lost_cpu c = { .cpu = ret->cpu };

	if (key_u64(text, "overrun:", &c.overrun) < 0)
		return -EBADMSG;
	(void)key_u64(text, "commit overrun:", &c.commit_overrun);
	(void)key_u64(text, "dropped events:", &c.dropped_events);
	(void)key_u64(text, "read events:", &c.read_events);
	*ret = c;
	return 0;
}

int tracefs_read_cpu_stats(const char *root, uint32_t cpu, struct smp_lost_cpu *ret)
{
	_cleanup_free_ char *text = NULL;
	struct smp_lost_cpu c = { .cpu = cpu };
	char path[4096];
	int r;

	r = path_fmt(path, sizeof(path), "%s/per_cpu/cpu%" PRIu32 "/stats", root, cpu);
	if (r < 0)
		return r;
	r = read_file(path, TRACEFS_FILE_MAX, &text, NULL);
	if (r < 0)
		return r;
	r = tracefs_parse_cpu_stats(text, &c);
	if (r < 0)
		return r;
	*ret = c;
	return 0;
}

int tracefs_open_cpu_stats(const char *root, uint32_t cpu)
{
	char path[4096];
	int r, fd;

	r = path_fmt(path, sizeof(path), "%s/per_cpu/cpu%" PRIu32 "/stats", root, cpu);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? negerrno() : fd;
}

int tracefs_pread_cpu_stats(int fd, uint32_t cpu, struct smp_lost_cpu *ret)
{
	struct smp_lost_cpu c = { .cpu = cpu };
	char text[1024];	/* 8 lines of at most 40 bytes */
	ssize_t n;
	int r;

	do
		n = pread(fd, text, sizeof(text) - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negerrno();
	if ((size_t)n == sizeof(text) - 1)
		return -EFBIG;
	text[n] = '\0';
	r = tracefs_parse_cpu_stats(text, &c);
	if (r < 0)
		return r;
	*ret = c;
	return 0;
}

int tracefs_read_unread(const char *root, const uint32_t *cpus, uint32_t nr, uint64_t *ret)
{
	_cleanup_free_ char *on = NULL;
	char path[4096];
	uint64_t sum = 0;
	int r;

	r = path_fmt(path, sizeof(path), "%s/tracing_on", root);
	if (r < 0)
		return r;
	r = read_file(path, TRACEFS_FILE_MAX, &on, NULL);
	if (r < 0)
		return r;
	if (on[0] != '0')
		return -EBUSY;
	for (uint32_t i = 0; i < nr; i++) {
		_cleanup_free_ char *text = NULL;
		uint64_t v;

		r = path_fmt(path, sizeof(path), "%s/per_cpu/cpu%" PRIu32 "/stats", root,
			     cpus[i]);
		if (r < 0)
			return r;
		r = read_file(path, TRACEFS_FILE_MAX, &text, NULL);
		if (r < 0)
			return r;
		r = key_u64(text, "entries:", &v);
		if (r < 0)
			return r;
		sum += v;
	}
	*ret = sum;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int tracefs_list_cpus(const char *root, uint32_t **ret_cpus, uint32_t *ret_count,
		      uint32_t *ret_nr)
{
	_cleanup_free_ uint32_t *cpus = NULL;
	char path[4096];
	uint32_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r;

	r = path_fmt(path, sizeof(path), "%s/per_cpu", root);
	if (r < 0)
		return r;
	d = opendir(path);
	if (!d)
		return negerrno();
	while ((de = readdir(d)) != NULL) {
		uint64_t v;

		if (strncmp(de->d_name, "cpu", 3) != 0 || parse_u64(de->d_name + 3, &v) < 0 ||
		    v >= SMP_MAX_CPUS)
			continue;
		if (n == cap) {
			uint32_t *nc;

			cap = cap ? cap * 2 : 16;
			nc = realloc(cpus, cap * sizeof(*cpus));
			if (!nc) {
				closedir(d);
				return -ENOMEM;
			}
			cpus = nc;
		}
		cpus[n++] = (uint32_t)v;
	}
	closedir(d);
	if (n == 0)
		return -ENOENT;
	qsort(cpus, n, sizeof(*cpus), cmp_u32);
	*ret_nr = cpus[n - 1] + 1;
	*ret_count = n;
	*ret_cpus = cpus;
	cpus = NULL;
	return 0;
}

int tracefs_read_format(const char *root, const char *name, char **ret, size_t *ret_len)
{
	char path[4096];
	int r;

	if (strchr(name, '/'))
		r = path_fmt(path, sizeof(path), "%s/events/%s/format", root, name);
	else
		r = path_fmt(path, sizeof(path), "%s/events/%s", root, name);
	if (r < 0)
		return r;
	return read_file(path, TRACEFS_FILE_MAX, ret, ret_len);
}

/* Append "a/b\0" to a growing list. */
static int list_add(char **list, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = MAX(*cap * 2, *len + n + 1 + 256);
		char *p = realloc(*list, nc);

		if (!p)
			return -ENOMEM;
		*list = p;
		*cap = nc;
	}
	memcpy(*list + *len, s, n);
	(*list)[*len + n] = '\0';
	*len += n + 1;
	return 0;
}

int tracefs_enabled_events(const char *root, char **ret, size_t *ret_nr)
{
	_cleanup_free_ char *text = NULL, *list = NULL;
	size_t len = 0, cap = 0, nr = 0;
	char path[4096], *line, *save = NULL;
	int r;

	r = path_fmt(path, sizeof(path), "%s/set_event", root);
	if (r < 0)
		return r;
	r = read_file(path, TRACEFS_FILE_MAX, &text, NULL);
	if (r < 0)
		return r;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');

		if (!colon || colon == line || !colon[1] || strchr(colon + 1, ':'))
			continue;
		*colon = '/';
		r = list_add(&list, &len, &cap, line, strlen(line));
		if (r < 0)
			return r;
		nr++;
	}
	if (!list) {
		list = malloc(1);
		if (!list)
			return -ENOMEM;
	}
	*ret = list;
	list = NULL;
	*ret_nr = nr;
	return 0;
}

int tracefs_system_events(const char *root, const char *sys, char **ret, size_t *ret_nr)
{
	_cleanup_free_ char *list = NULL;
	size_t len = 0, cap = 0, nr = 0;
	char path[4096];
	struct dirent *de;
	DIR *d;
	int r;

	r = path_fmt(path, sizeof(path), "%s/events/%s", root, sys);
	if (r < 0)
		return r;
	d = opendir(path);
	if (!d)
		return negerrno();
	while ((de = readdir(d)) != NULL) {
		char name[512], fpath[4096];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (path_fmt(name, sizeof(name), "%s/%s", sys, de->d_name) < 0 ||
		    path_fmt(fpath, sizeof(fpath), "%s/%s/format", path, de->d_name) < 0)
			continue;
		if (stat(fpath, &st) < 0)
			continue;
		r = list_add(&list, &len, &cap, name, strlen(name));
		if (r < 0) {
			closedir(d);
			return r;
		}
		nr++;
	}
	closedir(d);
	if (!list) {
		list = malloc(1);
		if (!list)
			return -ENOMEM;
	}
	*ret = list;
	list = NULL;
	*ret_nr = nr;
	return 0;
}

int tracefs_option(const char *root, const char *name, bool *ret)
{
	_cleanup_free_ char *text = NULL;
	char path[4096];
	int r;

	r = path_fmt(path, sizeof(path), "%s/options/%s", root, name);
	if (r < 0)
		return r;
	r = read_file(path, 64, &text, NULL);
	if (r < 0)
		return r;
	*ret = text[0] == '1';
	return 0;
}

static int set_knob(const char *root, const char *rel, const char *val, int append)
{
	char path[4096];
	int r;

	r = path_fmt(path, sizeof(path), "%s/%s", root, rel);
	if (r < 0)
		return r;
	r = write_file(path, val, append);
	if (r < 0)
		log_error("cannot write '%s' to %s: %s", val, path, strerror(-r));
	else
		log_info("tracing setup: %s <- %s", rel, val);
	return r;
}

int tracefs_apply_setup(const char *root, const struct tracefs_setup *s)
{
	int ret = 0, r;

	if (s->buffer_kb) {
		char v[32];

		snprintf(v, sizeof(v), "%lu", s->buffer_kb);
		r = set_knob(root, "buffer_size_kb", v, 0);
		ret = ret ? ret : r;
	}
	if (s->stackmap) {
		r = set_knob(root, "options/stackmap", "1", 0);
		ret = ret ? ret : r;
	}
	if (s->stacktrace) {
		r = set_knob(root, "options/stacktrace", "1", 0);
		ret = ret ? ret : r;
	}
	if (s->events) {
		_cleanup_free_ char *copy = strdup(s->events);
		char *ev, *save = NULL;

		if (!copy)
			return -ENOMEM;
		for (ev = strtok_r(copy, ",", &save); ev; ev = strtok_r(NULL, ",", &save)) {
			r = set_knob(root, "set_event", ev, 1);
			ret = ret ? ret : r;
		}
	}
	if (s->exclude_self) {
		char v[32];

		/* the agent's own syscalls allocate: without this it traces itself */
		snprintf(v, sizeof(v), "%d", (int)getpid());
		r = set_knob(root, "set_event_notrace_pid", v, 1);
		ret = ret ? ret : r;
		r = set_knob(root, "set_ftrace_notrace_pid", v, 1);
		if (r == -ENOENT)
			r = 0;	/* no function tracer in this kernel */
		ret = ret ? ret : r;
	}
	if (s->tracer) {
		/* before the rings are opened: a reader of trace_pipe(_raw) pins the tracer */
		r = set_knob(root, "current_tracer", s->tracer, 0);
		ret = ret ? ret : r;
	}
	if (s->events || s->tracer || s->stacktrace || s->stackmap || s->buffer_kb) {
		r = set_knob(root, "tracing_on", "1", 0);
		ret = ret ? ret : r;
	}
	return ret;
}

static bool is_tracefs(const char *dir)
{
	char path[4096];
	struct stat st;

	return path_fmt(path, sizeof(path), "%s/trace_clock", dir) == 0 &&
	       stat(path, &st) == 0;
}

int tracefs_find(const char *override, char *ret, size_t cap)
{
	static const char *const dflt = "/sys/kernel/tracing";
	static const char *const debug = "/sys/kernel/debug/tracing";
	const char *found = NULL;
	struct stat st;

	if (override) {
		if (!is_tracefs(override))
			return -ENOENT;
		found = override;
	} else if (is_tracefs(dflt)) {
		found = dflt;
	} else if (stat(dflt, &st) == 0 && S_ISDIR(st.st_mode) &&
		   mount("tracefs", dflt, "tracefs", 0, NULL) == 0 && is_tracefs(dflt)) {
		log_info("mounted tracefs on %s", dflt);
		found = dflt;
	} else if (is_tracefs(debug)) {
		found = debug;
	}
	if (!found)
		return -ENOENT;
	if (strlen(found) >= cap)
		return -ENAMETOOLONG;
	strcpy(ret, found);
	return 0;
}
